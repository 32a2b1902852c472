"""Which files a build reads: every entry below an input folder, symbolic links followed as the
loaders follow them (they open paths, and the system resolves any link on the way).

One listing for every stage, so that what the loaders read is what the no-change check hashes
(output/fingerprint.py), what the preview's page keys are made of and what its watcher watches
(commands/watch.py), and what the pass-through folder copies (output/hosting.py). Path.rglob does
not descend into a linked folder (Python 3.11), so a `catalogs/prices` linked to a data folder
kept between releases was read by the build but hidden from the no-change check. Hand-written:
os.walk(followlinks=True) loops forever on a link to a folder above it, where this stops.

Imports nothing but the standard library: the no-change check runs it before the pipeline loads.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Literal, NamedTuple


class Found(NamedTuple):
    """One entry below an input folder: its '/'-joined path there, its path as reached (through any
    link, not resolved), what it is, and whether it is itself a symbolic link."""

    relative: str
    path: Path
    kind: Literal["file", "folder", "loop"]  # "loop": a linked folder above itself, listed and not entered
    linked: bool


def input_tree(root: Path, skipped: Collection[str] = ()) -> list[Found]:
    """Every entry below root, by relative path, links followed; folders named in `skipped` are left
    out, and folders that cannot be read are listed but not entered. Anything that is not a folder (a
    regular file, a pipe, a link to nothing) is a "file": its reader says what is wrong with it."""
    try:
        top = os.stat(root)
    except OSError:
        return []
    if not stat.S_ISDIR(top.st_mode):
        return []
    found: list[Found] = []
    pending: list[tuple[Path, str, frozenset[tuple[int, int]]]] = [(root, "", frozenset({(top.st_dev, top.st_ino)}))]
    while pending:
        folder, relative, above = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            name = f"{relative}/{entry.name}" if relative else entry.name
            path = folder / entry.name
            try:
                info = entry.stat()  # follows a link
            except OSError:
                info = None
            linked = entry.is_symlink()
            if info is None or not stat.S_ISDIR(info.st_mode):
                found.append(Found(name, path, "file", linked))
                continue
            if entry.name in skipped:
                continue
            here = (info.st_dev, info.st_ino)
            found.append(Found(name, path, "loop" if here in above else "folder", linked))
            if here not in above:
                pending.append((path, name, above | {here}))
    return sorted(found)


def linked_folders(root: Path) -> list[Path]:
    """The folders below root reached through a symbolic link, resolved: where a watcher that does
    not follow links (inotify) has to look besides root."""
    return [Path(os.path.realpath(item.path)) for item in input_tree(root) if item.kind == "folder" and item.linked]


def label(path: Path) -> str:
    """A path as errors show it: relative to the working folder when it is below it, as written
    (through a linked folder: catalogs/prices/…) or else once links are resolved."""
    cwd = Path.cwd()
    for shown in (Path(os.path.normpath(os.path.abspath(path))), path.resolve()):
        with contextlib.suppress(ValueError):
            return str(shown.relative_to(cwd))
    return str(path)
