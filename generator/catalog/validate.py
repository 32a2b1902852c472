"""Stage 2: turn parsed YAML into typed records, reporting every problem at once. This module holds
the field checks and the Entry that every catalog's reader (the read_*.py modules) reads with."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpumem.catalog.load import LineDict, parse_yaml, read_text
from gpumem.errors import Problems


class Invalid(Exception):
    """A value that does not fit its field; the text says what was expected."""


def describe(value: Any) -> str:
    return "nothing" if value is None else repr(value)


# Past these a number is a typo, not a model or a GPU, and would overflow the arithmetic.
LARGEST_NUMBER = 1e12
# Names, labels and ids are short; prose (notes, answers) is longer but still bounded, so one
# runaway value cannot turn into a gigabyte of pages.
TEXT_CHARACTERS = 300
CITATION_CHARACTERS = 2_000
PROSE_CHARACTERS = 20_000
CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Invalid(f"expected a positive integer, got {describe(value)}")
    return value


def _real(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise Invalid(f"expected a positive number, got {describe(value)}")
    return value


def _within(number: Any, limit: float, value: Any) -> Any:
    if not number <= limit:
        shown = (
            f"{value:.3g}"
            if isinstance(value, float)
            else describe(value)
            if len(str(value)) <= 20
            else f"a {len(str(value))}-digit number"
        )
        raise Invalid(f"expected at most {limit:,g}, got {shown}")
    return number


def positive_int(value: Any) -> int:
    return _within(_whole(value), LARGEST_NUMBER, value)


def positive_number(value: Any) -> float:
    return float(_within(_real(value), LARGEST_NUMBER, value))


def at_most(kind: Callable[[Any], Any], limit: float) -> Callable[[Any], Any]:
    """A positive integer or number no larger than a limit that no real entry comes near."""
    base: Callable[[Any], Any] = _whole if kind is positive_int else _real

    def check(value: Any) -> Any:
        return kind(_within(base(value), limit, value))

    check.expectation = _EXPECTATIONS.get(kind, "")  # type: ignore[attr-defined]
    return check


def fraction(value: Any) -> float:
    number = positive_number(value)
    if number >= 1:
        raise Invalid(f"expected a fraction between 0 and 1, got {describe(value)}")
    return number


def _line(value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {describe(value)}")
    if len(value) > limit:
        raise Invalid(f"expected at most {limit:,} characters, got {len(value):,}")
    if CONTROL.search(value):
        raise Invalid(f"expected one line of text without control characters, got {describe(value)}")
    return value.strip()


def text(value: Any) -> str:
    """One line of text: a name, a label, an id of the outside world."""
    return _line(value, TEXT_CHARACTERS)


def citation(value: Any) -> str:
    """Where a figure comes from: one line, which may be long (several sources joined)."""
    return _line(value, CITATION_CHARACTERS)


def prose(value: Any) -> str:
    """Text that may run over several lines: notes, a question's answer."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {describe(value)}")
    if len(value) > PROSE_CHARACTERS:
        raise Invalid(f"expected at most {PROSE_CHARACTERS:,} characters, got {len(value):,}")
    return value.strip()


SLUG = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def slug(value: Any) -> str:
    if not isinstance(value, str) or not SLUG.fullmatch(value):
        shown = describe(value) if not isinstance(value, str) or len(value) <= 80 else f"{value[:60]!r}… ({len(value):,} characters)"
        raise Invalid(f"expected an id of at most 64 lowercase letters, digits, '.', '-' or '_', got {shown}")
    return value


def url(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 2_000 or not re.fullmatch(r"https?://\S+", value):
        raise Invalid(f"expected a URL starting with https://, got {describe(value)}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {describe(value)}")
    return value


def text_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise Invalid(f"expected a list of names, got {describe(value)}")
    return tuple(text(item) for item in value)


def utc_time(value: Any) -> datetime:
    """A time with its zone (YAML may already have parsed it); naive YAML times are UTC."""
    expected = "expected a UTC time like 2026-10-31T16:52:00Z"
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise Invalid(f"{expected}, got {describe(value)}") from None
    else:
        raise Invalid(f"{expected}, got {describe(value)}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-23:59 is past the last representable UTC moment
        raise Invalid(f"{expected}, got {describe(value)} (out of range once converted to UTC)") from None


def one_of(names: Iterable[str], what: str) -> Callable[[Any], str]:
    choices = sorted(names)

    def check(value: Any) -> str:
        if value not in choices:
            listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
            raise Invalid(f"unknown {what} {describe(value)} (expected {listed})")
        return value

    return check


def number_list(kind: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    """A non-empty list of positive numbers of one kind, sorted and without repeats."""

    def check(value: Any) -> tuple:
        if not isinstance(value, list) or not value:
            raise Invalid(f"expected a list of numbers, got {describe(value)}")
        return tuple(sorted({kind(item) for item in value}))

    return check


def known_id(ids: set[str] | None, what: str, where: str) -> Callable[[Any], str]:
    """An id that another catalog file must declare."""

    def check(value: Any) -> str:
        ident = slug(value)
        if ids is not None and ident not in ids:
            raise Invalid(f"unknown {what} {describe(ident)} (not in {where})")
        return ident

    return check


class Entry:
    """Reads the fields of one YAML mapping and reports each problem with its line."""

    def __init__(self, problems: Problems, path: str, data: LineDict, ident: str, prefix: str = "") -> None:
        self.problems, self.path, self.data, self.ident, self.prefix = problems, path, data, ident, prefix
        self.failed = False
        for key, line in data.duplicate_keys:
            self.report(line, key, "given twice in the same entry")

    def report(self, line: int, name: Any, message: str) -> None:
        self.failed = True
        self.problems.add(self.path, line, self.ident, f"{self.prefix}{name}", message)

    def get(self, name: str, kind: Callable[[Any], Any], *, required: bool = True, default: Any = None) -> Any:
        if name not in self.data:
            if required:
                expected = _expectation(kind)
                self.report(self.data.line, name, f"missing field{expected}")
            return default
        try:
            return kind(self.data[name])
        except Invalid as error:
            self.report(self.data.line_of(name), name, str(error))
            return default

    def section(self, name: str, *, required: bool = True) -> Entry | None:
        """A nested mapping, read with the same id and a dotted field name."""
        value = self.data.get(name)
        if isinstance(value, LineDict):
            child = Entry(self.problems, self.path, value, self.ident, f"{self.prefix}{name}.")
            return child
        if name in self.data:
            self.report(self.data.line_of(name), name, f"expected a mapping of fields, got {describe(value)}")
        elif required:
            self.report(self.data.line, name, "missing field")
        self.failed = True
        return None

    def check_keys(self, known: Iterable[str]) -> None:
        known = list(known)
        for key in self.data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (expected one of: {', '.join(known)})"
                self.report(self.data.line_of(key), key, f"unknown field{hint}")


_EXPECTATIONS: dict[Callable[[Any], Any], str] = {
    positive_int: " (expected a positive integer)",
    positive_number: " (expected a positive number)",
    fraction: " (expected a fraction between 0 and 1)",
    text: " (expected text)",
    prose: " (expected text)",
    citation: " (expected text)",
    slug: " (expected an id)",
    url: " (expected a URL)",
    boolean: " (expected true or false)",
    text_list: " (expected a list of names)",
    utc_time: " (expected a UTC time like 2026-10-31T16:52:00Z)",
}


def read_list_file(path: Path, label: str, problems: Problems, key: str, noun: str) -> tuple[Entry, LineDict, Any] | None:
    """A catalog file holding one list under `key` (price checks, API prices): its file entry, its
    mapping and what stands under `key`; None when the file is missing, unreadable or not a mapping."""
    if not path.exists():
        return None
    found = read_text(path, label, problems)
    data = parse_yaml(found, label, problems) if found is not None else None
    if data is None:
        return None
    if not isinstance(data, LineDict):
        problems.add_raw(f"{label}:1: {noun}: expected a mapping with a '{key}' list", label, 1)
        return None
    top = Entry(problems, label, data, "file")
    top.check_keys((key,))
    return top, data, data.get(key)


def _expectation(kind: Callable[[Any], Any]) -> str:
    return getattr(kind, "expectation", None) or _EXPECTATIONS.get(kind, "")


def entries(data: Any, key: str, path: str, problems: Problems) -> list[tuple[LineDict, str]]:
    """The mappings listed under a file's top-level key, each with the id it reports under."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: {key}: expected a mapping with a '{key}' list")
        return []
    for extra in data:
        if extra != key:
            problems.add(path, data.line_of(extra), "file", str(extra), f"unknown field (expected only '{key}')")
    items = data.get(key)
    if not isinstance(items, list) or not items:
        problems.add(path, data.line_of(key), "file", key, f"expected a non-empty list, got {describe(items)}")
        return []
    found = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            problems.add(path, data.line_of(key), f"entry {index}", key, f"expected a mapping of fields, got {describe(item)}")
            continue
        given = item.get("id")
        ident = given if isinstance(given, str) and given.isprintable() and 0 < len(given) <= 64 else f"entry {index}"
        found.append((item, ident))
    return found


def unique(entry: Entry, name: str, value: Any, seen: dict[Any, int]) -> None:
    """Report a value that an earlier entry of the same file already used."""
    if value is None:
        return
    if value in seen:
        entry.report(entry.data.line_of(name), name, f"duplicate {name} {describe(value)} (first on line {seen[value]})")
    else:
        seen[value] = entry.data.line_of(name)
