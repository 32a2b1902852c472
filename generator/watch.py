"""Noticing that a source changed: the operating system's notifications (Linux inotify) where
available, a modification-time scan elsewhere.

`Sources.wait` blocks until something under the watched folders changed (then returns True) or the
stop event is set (False). Watching starts when the object is made, so a save made while the first
build runs is not missed.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
from collections.abc import Iterable
from pathlib import Path

# inotify(7): a file written, created, deleted or moved, in a folder or of the folder itself.
_CHANGES = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800  # MODIFY ATTRIB CLOSE_WRITE MOVED_* CREATE DELETE*
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
QUIET = 0.03  # seconds without a new event before a burst of saves counts as one change
POLL = 0.25  # seconds between scans where there are no notifications


def source_stamp(folders: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """Every source file's path, modification time and size, to notice any change by scanning."""
    found = []
    for folder in folders:
        files = [folder] if folder.is_file() else sorted(folder.rglob("*")) if folder.is_dir() else []
        for path in files:
            if path.is_file():
                stat = path.stat()
                found.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def _inotify() -> ctypes.CDLL | None:
    """The C library when it has inotify (Linux), else None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - raises AttributeError where there is no inotify
    except (OSError, AttributeError):
        return None
    return libc


class Sources:
    """The folders (or single files) a build reads, watched for changes."""

    def __init__(self, paths: Iterable[Path], notifications: bool = True) -> None:
        self.paths = [Path(p) for p in paths]
        self.libc = _inotify() if notifications else None
        self.fd = -1
        self.names: dict[int, set[bytes | None]] = {}  # per watched folder: None (every entry) or names
        if self.libc is not None:
            self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if self.fd < 0:
                self.libc = None
        if self.libc is None:
            self.stamp = source_stamp(self.paths)
        else:
            self._add_watches()

    @property
    def kind(self) -> str:
        return "inotify" if self.libc is not None else "scanning"

    def _add_watches(self) -> None:
        """Watch every folder under the paths; a single file through its folder, for its name only."""
        assert self.libc is not None
        for path in self.paths:
            if path.is_file():
                self._add(path.parent, os.fsencode(path.name))
            elif path.is_dir():
                for folder in [path, *(p for p in path.rglob("*") if p.is_dir())]:
                    self._add(folder, None)

    def _add(self, folder: Path, name: bytes | None) -> None:
        """Watch a folder (adding one twice gives the same descriptor); name: only that entry counts."""
        assert self.libc is not None
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), _CHANGES)
        if wd >= 0:
            self.names.setdefault(wd, set()).add(name)

    def _drain(self) -> bool:
        """Read the pending events; True when any was a change to a watched entry."""
        changed = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return changed
            offset = 0
            while offset < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                offset += _EVENT.size + size
                names = self.names.get(wd, {None})
                changed = changed or bool(mask & _CHANGES) and (None in names or name in names)

    def wait(self, stop: threading.Event) -> bool:
        """Block until a source changed (True) or stop is set (False)."""
        if self.libc is None:
            return self._scan(stop)
        while not stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready and self._drain():
                while select.select([self.fd], [], [], QUIET)[0]:  # one burst of saves, one change
                    self._drain()
                self._add_watches()  # folders created since
                return True
        return False

    def _scan(self, stop: threading.Event) -> bool:
        while not stop.wait(POLL):
            current = source_stamp(self.paths)
            if current != self.stamp:
                self.stamp = current
                return True
        return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
