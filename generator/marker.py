"""The output folder's files as gpumem knows them: its marker (`.gpumem-site`: every file a build
wrote, with its sha256, and what the build recorded of its inputs), each file read without following
a link or waiting on a pipe, and the checks that a file still holds what the marker says. The
writer (write.py, recovery.py) stages, swaps and recovers with these; the no-change check
(fingerprint.py) and the incremental build (build.py) only read.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BuildError

MARKER = ".gpumem-site"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class WriteSummary:
    written: int
    unchanged: int
    removed: int
    notes: tuple[str, ...] = ()  # what the writer did besides the build: recoveries, files it adopted
    pages: int = 0  # the HTML files of the site


def count_pages(files: Iterable[str]) -> int:
    return sum(1 for relative in files if relative.endswith(".html"))


@dataclass(frozen=True)
class Entry:
    """One entry found in a tree, as lstat saw it."""

    kind: str  # "file", "dir", "link" or "other"
    dev: int
    ino: int
    mode: int
    atime_ns: int
    mtime_ns: int


@dataclass(frozen=True)
class Manifest:
    fingerprint: str
    files: dict[str, str]  # relative path -> sha256
    facts: dict[str, object] = field(default_factory=dict)  # about the inputs, for the build's own no-change check


def file_digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def error_reason(error: OSError) -> str:
    return error.strerror or str(error)


def ancestors(paths: Iterable[str]) -> set[str]:
    """Every folder above the given relative paths: a/b/c -> a, a/b."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")
        found.update("/".join(parts[:index]) for index in range(1, len(parts)))
    return found


def plain(relative: str) -> bool:
    """A relative path of plain names: not absolute, no empty, '.' or '..' part, no backslash."""
    return bool(relative) and "\\" not in relative and all(part not in ("", ".", "..") for part in relative.split("/"))


def lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "other"


def scan(tree: Path, descend: set[str]) -> dict[str, Entry]:
    """Every entry of a tree, looking into the real sub-folders named in descend (relative paths)
    only; a symbolic link is reported as one, never followed."""
    found: dict[str, Entry] = {}
    pending = [""]
    while pending:
        folder = pending.pop()
        with os.scandir(tree / folder if folder else tree) as entries:
            for item in entries:
                relative = f"{folder}/{item.name}" if folder else item.name
                info = item.stat(follow_symlinks=False)
                kind = kind_of(info.st_mode)
                found[relative] = Entry(kind, info.st_dev, info.st_ino, info.st_mode, info.st_atime_ns, info.st_mtime_ns)
                if kind == "dir" and relative in descend:
                    pending.append(relative)
    return dict(sorted(found.items()))


def read_entry(path: Path, entry: Entry, size: int | None = None) -> bytes | None:
    """The bytes of the regular file found as `entry` (not something swapped in since), or None;
    with `size`, None as soon as the file is not that long."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC | BINARY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (entry.dev, entry.ino):
            return None
        if size is not None and info.st_size != size:
            return None
        return stream.read() if size is None else stream.read(size + 1)


def holds(path: Path, entry: Entry, content: bytes) -> bool:
    """Whether the regular file found as `entry` holds these bytes."""
    return read_entry(path, entry, len(content)) == content


def create(path: Path, content: bytes) -> None:
    """A new file: never follows a symbolic link, never opens an existing name."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC | BINARY, 0o666)
    with os.fdopen(fd, "wb") as stream:
        stream.write(content)


def read_manifest(tree: Path, shown: str) -> Manifest | None:
    """A tree's marker: None when it has none; a BuildError when it cannot be trusted, since then
    nobody can tell which files gpumem wrote."""
    path = tree / MARKER
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC | BINARY)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BuildError([f"{shown}: a symbolic link, not gpumem's marker; refusing to follow it (delete it, build again)"]) from None
        raise BuildError([f"{shown}: cannot read gpumem's marker: {error_reason(error)}"]) from None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BuildError([f"{shown}: not a file; gpumem's marker must be one"])
        raw = stream.read()
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise BuildError(
            [f"{shown}: not a gpumem marker (JSON listing the files gpumem wrote); refusing to guess which files are gpumem's"]
        )
    fingerprint = data.get("fingerprint") if isinstance(data, dict) else ""
    facts = data.get("inputs") if isinstance(data, dict) else None
    listed = {k: v for k, v in files.items() if plain(k) and k != MARKER}
    return Manifest(fingerprint if isinstance(fingerprint, str) else "", listed, facts if isinstance(facts, dict) else {})


def manifest_bytes(files: dict[str, bytes], fingerprint: str, facts: dict[str, object] | None = None) -> bytes:
    manifest: dict[str, object] = {
        "about": "Built by gpumem: it removes or replaces only the files listed here; anything else in this folder is left alone.",
        "fingerprint": fingerprint,
        "files": {relative: file_digest(content) for relative, content in sorted(files.items())},
    }
    if facts:
        manifest["inputs"] = facts

    return (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode()  # C encoder: 5 times as fast


def matches(path: Path, entry: Entry, digest: str) -> bool:
    """Whether the regular file found as entry still has this sha256."""
    content = read_entry(path, entry)
    return content is not None and file_digest(content) == digest


def checked_files(files: dict[str, bytes] | list[tuple[str, bytes]], root: Path) -> dict[str, bytes]:
    """The files as a dict, refusing a path given twice, one outside the folder, a path that is
    both a file and a folder, and the marker's name."""
    items = list(files.items()) if isinstance(files, dict) else list(files)
    targets: dict[str, bytes] = {}
    problems = []
    for relative, content in items:
        if relative in targets:
            problems.append(f"{relative}: written twice in one build")
        elif relative.startswith("/") or ".." in relative.split("/"):
            problems.append(f"{relative}: refusing to write outside {root}")
        elif not plain(relative):
            problems.append(f"{relative}: not a plain relative path; refusing to write it")
        elif relative == MARKER:
            problems.append(f"{relative}: the name of gpumem's own marker; refusing to write it")
        targets[relative] = content
    both = sorted(ancestors(targets) & set(targets))
    problems += [f"{relative}: written both as a file and as a folder in one build" for relative in both]
    if problems:
        raise BuildError(problems)
    return targets


@dataclass(frozen=True)
class Earlier:
    """What the last build left that this one may keep: its pages whose price-free key is this
    build's (bytes checked against the marker), each page's record, and the stamp's words it set in."""

    files: dict[str, bytes]
    records: dict[str, Any]
    stamps: dict[str, Any]
    figures: str = ""  # the key of the figures it was rendered from (memo.computed_key)
    words: str = ""  # the key of the stamp's words (fingerprint.words_key)


def earlier_pages(out_dir: Path, keys: dict[str, str]) -> Earlier:
    """What the last build recorded of its pages in the marker's facts (`pages`: each page's record,
    `stamps`: the stamp's words per language, `figures` and `words`: the keys of its figures and of
    those words), and the files it wrote for pages whose recorded key is this build's (see
    fingerprint.page_keys), read and checked against the marker's digests; a file missing or
    changed since is simply not among them, and is rendered again."""
    root = Path(os.path.realpath(out_dir))
    try:
        manifest = read_manifest(root, str(out_dir / MARKER))
    except BuildError:
        return Earlier({}, {}, {})
    records = manifest.facts.get("pages") if manifest is not None else None
    stamps = manifest.facts.get("stamps") if manifest is not None else None
    if manifest is None or not isinstance(records, dict) or not isinstance(stamps, dict):
        return Earlier({}, {}, {})
    kept = {}
    for relative, key in keys.items():
        digest, record = manifest.files.get(relative), records.get(relative)
        if digest is None or not isinstance(record, dict) or record.get("key") != key or not plain(relative):
            continue
        content = read_regular(root / relative)
        if content is not None and file_digest(content) == digest:
            kept[relative] = content
    figures, words = manifest.facts.get("figures"), manifest.facts.get("words")
    return Earlier(kept, records, stamps, figures if isinstance(figures, str) else "", words if isinstance(words, str) else "")


def read_regular(path: Path, follow_links: bool = False, limit: int = -1) -> bytes | None:
    """A regular file's bytes (at most `limit` of them); None for anything else: a device or a
    pipe (never waited on), a missing file, and a symbolic link unless `follow_links`."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow_links else NOFOLLOW) | NONBLOCK | CLOEXEC | BINARY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        return stream.read(limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
