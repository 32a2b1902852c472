"""Stage 1: read the catalog, content and snapshot files, keeping line numbers."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from .errors import Problems


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


def parse_yaml(text: str, path: str, problems: Problems) -> Any:
    """Parse YAML text; a syntax error becomes a problem with PyYAML's line and column."""
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        message = error.problem or error.context or "invalid YAML"
        if error.context and error.problem and error.context_mark:
            message += f" ({error.context} started on line {error.context_mark.line + 1})"
        problems.add_raw(f"{where}: YAML syntax error: {message}", path, mark.line + 1 if mark else 0)
    except yaml.YAMLError as error:
        problems.add_raw(f"{path}: YAML syntax error: {error}")
    return None


def read_yaml(path: Path, label: str, problems: Problems) -> Any:
    """Read and parse one YAML file; a missing file is a problem, not a traceback."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        problems.add_raw(f"{label}: cannot read: {error.strerror or error}")
        return None
    return parse_yaml(text, label, problems)


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


FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def read_content(path: Path, label: str, problems: Problems) -> ContentPage | None:
    """Read a Markdown page with a YAML front matter between `---` lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        problems.add_raw(f"{label}: cannot read: {error.strerror or error}")
        return None
    match = FRONT_MATTER.match(text)
    if not match:
        problems.add_raw(f"{label}:1: front matter: expected the file to open with '---' lines")
        return None
    meta = parse_yaml("\n" + match.group(1), label, problems)  # keep file line numbers
    if meta is None:
        return None
    if not isinstance(meta, LineDict):
        problems.add_raw(f"{label}:2: front matter: expected a mapping of fields")
        return None
    body_line = match.group(0).count("\n") + 1
    return ContentPage(label, meta, text[match.end() :], body_line)
