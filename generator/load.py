"""Stage 1: read the catalog, content and snapshot files, keeping line numbers."""

from __future__ import annotations

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
    """The UTC moment a snapshot's file name stands for: 2026-10-31T16-52Z or 2026-10-31T16-52-30Z."""
    stamp = name.removesuffix(".yaml").removesuffix("Z")
    pattern = "%Y-%m-%dT%H-%M-%S" if stamp.count("-") == 4 else "%Y-%m-%dT%H-%M"
    return datetime.strptime(stamp, pattern).replace(tzinfo=UTC)


def snapshot_name(moment: datetime) -> str:
    """The file name of a snapshot taken at a UTC moment: 2026-10-31T16-52Z.yaml."""
    stamp = moment.strftime("%Y-%m-%dT%H-%M") + (moment.strftime("-%S") if moment.second else "")
    return f"{stamp}Z.yaml"


def snapshot_files(prices_dir: Path) -> list[Path]:
    """Snapshot files in a prices folder, oldest first (their names are UTC times)."""
    if not prices_dir.is_dir():
        return []
    return sorted(p for p in prices_dir.iterdir() if SNAPSHOT_NAME.match(p.name))


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
