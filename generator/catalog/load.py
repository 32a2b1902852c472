"""Stage 1: read the catalog, content and snapshot files, keeping line numbers."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from gpumem.errors import BuildError, Problems
from gpumem.options import MAX_FILE_BYTES


class LineDict(dict):
    """A YAML mapping that remembers where it and each of its keys stand."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.key_lines: dict[Any, int] = {}
        self.duplicate_keys: list[tuple[Any, int]] = []

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class _LineLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    pass


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode):  # noqa: ANN202 - generator
    """Build a LineDict: the mapping, its line, each key's line and any key given twice."""
    data = LineDict()
    data.line = node.start_mark.line + 1
    yield data
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in data:
            data.duplicate_keys.append((key, line))
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = line


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _construct_timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A date or time; one shaped like a date but impossible (2026-13-01) stays text, for its field to report.

    PyYAML would raise a bare ValueError, with no line, out of the whole file.
    """
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_LineLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def parse_yaml(text: str, path: str, problems: Problems) -> Any:
    """Parse YAML text; a syntax error becomes a problem with PyYAML's line and column."""
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        message = error.problem or error.context or "invalid YAML"
        if error.context and error.problem and error.context_mark:
            message += f" ({error.context} started on line {error.context_mark.line + 1})"
        problems.add_raw(f"{where}: YAML syntax error: {message}", path, mark.line + 1 if mark else 0)
        return None
    except (yaml.YAMLError, RecursionError) as error:
        problems.add_raw(f"{path}: YAML syntax error: {error or type(error).__name__}")
        return None
    shared = _first_shared(data)
    if shared is not None:
        problems.add_raw(f"{path}:{shared}: YAML aliases (*name) are not accepted: write each value out", path, shared)
        return None
    return data


def _first_shared(data: Any) -> int | None:
    """The line of a mapping or list that appears twice (a YAML alias), or None.

    Aliases let a few lines stand for billions of values; refusing them keeps every file's
    size a true measure of its work. The walk stops at the first repeat, so it is linear.
    """
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, line = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if id(value) in seen:
            return line
        seen.add(id(value))
        if isinstance(value, LineDict):
            children = [(item, value.line_of(key)) for key, item in value.items()]
        else:
            children = [(item, line) for item in (value.values() if isinstance(value, dict) else value)]
        stack += reversed(children)  # in file order, so the first alias is the one reported
    return None


def readable_size(size: int) -> bool:
    """Whether a build reads an input of this many bytes: the one rule, for every file a build reads
    and for the snapshot `gpumem prices import` writes (which a build would refuse otherwise)."""
    return size <= MAX_FILE_BYTES


def read_text(path: Path, label: str, problems: Problems) -> str | None:
    """A regular file's UTF-8 text; anything else (missing, a device, too large, not UTF-8) is a problem."""
    try:
        if not path.is_file():
            problems.add_raw(f"{label}: {'not a regular file' if path.exists() else 'cannot read: No such file or directory'}")
            return None
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        problems.add_raw(f"{label}: cannot read: {error.strerror or error}")
        return None
    if not readable_size(len(data)):
        problems.add_raw(f"{label}: larger than {MAX_FILE_BYTES:,} bytes; not read")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        problems.add_raw(f"{label}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start:,})", label, line)
        return None


def read_yaml(path: Path, label: str, problems: Problems) -> Any:
    """Read and parse one YAML file; a missing, unreadable or empty file is a problem, not a traceback."""
    text = read_text(path, label, problems)
    if text is None:
        return None
    found = len(problems.found)
    data = parse_yaml(text, label, problems)
    if data is None and len(problems.found) == found:
        problems.add_raw(f"{label}:1: empty file (expected YAML fields)", label, 1)
    return data


@functools.lru_cache(maxsize=16)
def parsed_messages(text: str, locale: str) -> Catalog:
    """A .po file's text read by Babel, remembered: a build checks each language's file, then compiles
    the same text (formats.compile_translations), and reading it costs 10 ms a language. A catalog so
    shared is only read (checked, written out as .mo), never changed."""
    return read_po(io.StringIO(text), locale=locale)


def check_translations(path: Path, label: str, lang: str, problems: Problems) -> None:
    """A .po file that reads, and whose translations keep their message's %(name)s placeholders."""
    text = read_text(path, label, problems)
    if text is None:
        return
    try:
        catalog = parsed_messages(text, lang.replace("-", "_"))
    except Exception as error:  # noqa: BLE001 - Babel raises several kinds for a broken file
        problems.add_raw(f"{label}: cannot read: {error}")
        return
    for message, errors in catalog.check():
        ident = message.id[0] if isinstance(message.id, tuple) else message.id
        line = message.lineno or 0
        for wrong in errors:
            problems.add_raw(f"{label}:{line}: msgstr: {wrong} (msgid {ident!r:.80})", label, line)


SNAPSHOT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}(-\d{2})?Z\.yaml$")


def snapshot_time(name: str) -> datetime:
    """The UTC moment a snapshot's file name stands for: 2026-10-31T16-52Z or 2026-10-31T16-52-30Z.

    Raises ValueError for a name that has the pattern's digits but is no time (2026-13-45T99-00Z).
    """
    stamp = name.removesuffix(".yaml").removesuffix("Z")
    pattern = "%Y-%m-%dT%H-%M-%S" if stamp.count("-") == 4 else "%Y-%m-%dT%H-%M"
    return datetime.strptime(stamp, pattern).replace(tzinfo=UTC)


def snapshot_name(moment: datetime) -> str:
    """The file name of a snapshot taken at a UTC moment: 2026-10-31T16-52Z.yaml (seconds only when not 0)."""
    m = moment.astimezone(UTC)
    stamp = f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}-{m.minute:02d}" + (f"-{m.second:02d}" if m.second else "")
    return f"{stamp}Z.yaml"


def snapshot_files(prices_dir: Path) -> list[Path]:
    """Files of a prices folder named like snapshots, by name (read_catalog orders them by taken_at)."""
    if not prices_dir.is_dir():
        return []
    return sorted(p for p in prices_dir.iterdir() if SNAPSHOT_NAME.match(p.name))


TAKEN_AT_LINE = re.compile(rb"^taken_at[ \t]*:")
# The line as gpumem prices import writes it, read without YAML: the common case made fast.
PLAIN_TAKEN_AT = re.compile(rb"^taken_at: (\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z\r?\n?$")


def read_taken_at(path: Path) -> tuple[Any, int] | None:
    """A snapshot's taken_at as YAML reads it, and its line, from the top-level `taken_at:` line alone.

    The rest of the file is neither decoded nor parsed, so a folder of hundreds of snapshots is
    ordered in milliseconds. A line YAML cannot read gives its text after the colon; a file with no
    such line gives None (read it whole to know why). OSError and UnicodeDecodeError go to the caller.
    """
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not TAKEN_AT_LINE.match(raw):
                continue
            if plain := PLAIN_TAKEN_AT.match(raw):
                year, month, day, hour, minute, second = (int(part) for part in plain.groups())
                with contextlib.suppress(ValueError):  # not a date (2026-02-30): YAML below says so
                    return datetime(year, month, day, hour, minute, second, tzinfo=UTC), number
            line = raw.decode("utf-8")
            try:
                value = yaml.load(line, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)  # noqa: S506
            except (yaml.YAMLError, ValueError, OverflowError, RecursionError):
                value = None
            if not isinstance(value, dict) or "taken_at" not in value:
                return line.split(":", 1)[1].strip(), number
            return value["taken_at"], number
    return None


@dataclass(frozen=True)
class ContentPage:
    """One Markdown file of content/<lang>/: its front matter and body."""

    path: str
    meta: LineDict
    body: str
    body_line: int


FRONT_MATTER = re.compile(r"\A---\n(?:(.*?)\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)


def read_content(path: Path, label: str, problems: Problems) -> ContentPage | None:
    """Read a Markdown page with a YAML front matter between `---` lines."""
    text = read_text(path, label, problems)
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    match = FRONT_MATTER.match(text)
    if not match:
        problems.add_raw(f"{label}:1: front matter: expected the file to open with '---' lines")
        return None
    found = len(problems.found)
    meta = parse_yaml("\n" + (match.group(1) or ""), label, problems)  # keep file line numbers
    if meta is None:
        if len(problems.found) == found:
            problems.add_raw(f"{label}:2: front matter: empty (expected title and description)", label, 2)
        return None
    if not isinstance(meta, LineDict):
        problems.add_raw(f"{label}:2: front matter: expected a mapping of fields")
        return None
    body_line = match.group(0).count("\n") + 1
    return ContentPage(label, meta, text[match.end() :], body_line)


class NotJson(ValueError):
    """NaN or Infinity, which Python's json module reads and JSON (and the browser's JSON.parse) does not."""


def _not_json(name: str) -> Any:
    raise NotJson(name)


def parse_json(text: str, label: str, shape: str) -> Any:
    """JSON text, or one problem line naming the file: a syntax error with its line and column,
    nesting too deep to read, or a number too long to convert. `shape` says what was expected."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise BuildError([f"{label}:{error.lineno}:{error.colno}: JSON syntax error: {error.msg}"]) from None
    except NotJson as error:
        raise BuildError([f"{label}: JSON syntax error: {error} is not a JSON number (JSON has no NaN or Infinity)"]) from None
    except RecursionError:
        raise BuildError([f"{label}: JSON nested too deeply to read ({shape})"]) from None
    except ValueError as error:  # a number of more than 4,300 digits
        raise BuildError([f"{label}: JSON value out of range: {str(error).split(';')[0]}"]) from None


def read_measurements(folder: Path, problems: Problems) -> tuple[tuple[dict[str, Any], ...], dict[str, dict[str, Any]]]:
    """catalogs/measurements/: serving.yaml's points and every config.json they name (none if absent)."""
    path = folder / "serving.yaml"
    if not path.is_file():
        return (), {}
    data = read_yaml(path, str(path), problems)
    points = data.get("points") if isinstance(data, dict) else None
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        problems.add_raw(f"{path}:1: points: expected a list of measured points")
        return (), {}
    configs = {}
    for config in sorted((folder / "configs").glob("*.json")):
        text = read_text(config, str(config), problems)
        if text is None:
            continue
        try:
            configs[config.stem] = parse_json(text, str(config), "a config.json is one object of numbers")
        except BuildError as error:
            problems.add_raw(error.lines[0])
    return tuple(points), configs
