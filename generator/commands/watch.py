"""Noticing that a source changed, through watchdog (as MkDocs' `serve` does): the operating
system's notifications (inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows),
or a scan of the files every POLL seconds where notifications are not wanted.

`Sources.wait` blocks until something under the watched folders changed (then returns True) or the
stop event is set (False). Watching starts when the object is made, so a save made while the first
build runs is not missed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from gpumem.catalog.files import linked_folders

QUIET = 0.03  # seconds without a new event before a burst of saves counts as one change
POLL = 0.25  # seconds between scans where there are no notifications
# A file or folder written, created, deleted or moved; not a file opened or read, as every build does.
CHANGES = [
    FileModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirModifiedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


def watched(paths: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """The folders whose trees are watched and the single files, for the paths a build reads (each a
    folder, or a file): every path as given and resolved (an event names either), and every folder
    below them reached through a symbolic link (catalog/files.py, as the build lists its inputs),
    resolved, since notifications do not follow links (watchdog asks inotify not to)."""
    folders: list[Path] = []
    files: list[Path] = []
    for path in paths:
        resolved = Path(os.path.realpath(path))
        if resolved.is_file():
            files += [path, resolved]
        else:
            folders += [path, resolved, *linked_folders(path)]
    return list(dict.fromkeys(folders)), list(dict.fromkeys(files))


class _Noticed(FileSystemEventHandler):
    """Sets `changed` when an event touches a watched folder's tree or a watched single file."""

    def __init__(self, folders: list[str], files: set[str], changed: threading.Event) -> None:
        self.folders, self.files, self.changed = folders, files, changed

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [os.fsdecode(event.src_path), os.fsdecode(event.dest_path)] if event.dest_path else [os.fsdecode(event.src_path)]
        if any(self.watched(path) for path in paths):
            self.changed.set()

    def watched(self, path: str) -> bool:
        return path in self.files or any(path == folder or path.startswith(folder + os.sep) for folder in self.folders)


class Sources:
    """The folders (or single files) a build reads, watched for changes, through symbolic links."""

    def __init__(self, paths: Iterable[Path], notifications: bool = True) -> None:
        self.paths = [Path(p).absolute() for p in paths]
        self.changed = threading.Event()
        self.observer: BaseObserver = Observer() if notifications else PollingObserver(timeout=POLL)
        self.handler = _Noticed([], set(), self.changed)
        self.scheduled: set[tuple[Path, bool]] = set()
        self._schedule()
        self.observer.start()

    @property
    def kind(self) -> str:
        """How changes are noticed: "inotify" (or the name of another system's notifications), or "scanning"."""
        if isinstance(self.observer, PollingObserver):
            return "scanning"
        return type(self.observer).__name__.removesuffix("Observer").lower()

    def _schedule(self) -> None:
        """Watch every folder (its whole tree) and, for a single file, its folder; a path that does not
        exist yet is watched once it does (after the next change), and so is a linked folder made since."""
        folders, files = watched(self.paths)
        self.handler.folders, self.handler.files = [str(folder) for folder in folders], {str(file) for file in files}
        resolved = [
            *((Path(os.path.realpath(folder)), True) for folder in folders),
            *((Path(os.path.realpath(file)).parent, False) for file in files),
        ]
        for target, recursive in resolved:  # a watch on a link would watch the link
            if (target, recursive) in self.scheduled or not target.is_dir():
                continue
            self.observer.schedule(self.handler, str(target), recursive=recursive, event_filter=CHANGES)
            self.scheduled.add((target, recursive))

    def wait(self, stop: threading.Event) -> bool:
        """Block until a source changed (True) or stop is set (False)."""
        while not stop.is_set():
            if self.changed.wait(0.1):
                self.changed.clear()
                while self.changed.wait(QUIET):  # one burst of saves, one change
                    self.changed.clear()
                self._schedule()
                return True
        return False

    def close(self) -> None:
        self.observer.stop()
        self.observer.join()
