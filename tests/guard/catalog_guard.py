"""The guard that keeps tests off the production catalogs/ (issue 20): tests read tests/fixtures/catalogs.

An audit hook (PEP 578) sees every file opened and every folder listed, in the test process and,
through sitecustomize.py beside this module (tests/conftest.py puts this folder on PYTHONPATH), in
every Python subprocess a test starts. tests/conftest.py fails a test that touched the production
catalogs unless it is marked `shipped_data`. Hand-written: the hook is a dozen lines, and no
maintained pytest plugin watches reads of one folder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

# Reading a file and listing a folder (os.walk, Path.glob, shutil.copytree and glob.glob list through these).
EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
# Set for the subprocesses: the production folder to watch, and the file they append what they touched to.
FOLDER_VARIABLE = "GPUMEM_TEST_GUARD_CATALOGS"
LOG_VARIABLE = "GPUMEM_TEST_GUARD_LOG"


def touched(folder: str, event: str, args: tuple) -> str | None:
    """The resolved path an audited event reads when it lies in folder (a resolved path), else None."""
    if event not in EVENTS or not args or isinstance(args[0], int):
        return None
    try:
        path = os.path.realpath(os.path.join(os.getcwd(), os.fsdecode(args[0] if args[0] is not None else ".")))
    except (OSError, TypeError, ValueError):  # a path that cannot be resolved is none of the folder's files
        return None
    return path if path == folder or path.startswith(folder + os.sep) else None


def watch(folder: str, record: Callable[[str], None]) -> None:
    """Call record with each path inside folder that this process opens or lists, from now on."""
    folder = os.path.realpath(folder)

    def hook(event: str, args: tuple) -> None:
        path = touched(folder, event, args)
        if path is not None:
            record(path)

    sys.addaudithook(hook)


def watch_this_subprocess() -> None:
    """In a subprocess of a test: append each path it touches in the watched folder to the test's log."""
    folder, log = os.environ.get(FOLDER_VARIABLE), os.environ.get(LOG_VARIABLE)
    if not folder or not log:
        return
    handle = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(path: str) -> None:
        os.write(handle, os.fsencode(path) + b"\n")  # a raw write: open() here would call the hook again

    watch(folder, record)


class Guard:
    """Watches folder in this process and in every Python subprocess started after it is made."""

    def __init__(self, folder: str, log: str) -> None:
        self.folder, self.log = os.path.realpath(folder), log
        self.seen: list[str] = []
        watch(self.folder, self.seen.append)
        here = os.path.dirname(os.path.abspath(__file__))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH"))))
        os.environ[FOLDER_VARIABLE], os.environ[LOG_VARIABLE] = self.folder, log

    def take(self) -> list[str]:
        """What was touched since the last call, relative to the folder's parent (catalogs/models.yaml); then forgets it."""
        found = set(self.seen)
        self.seen.clear()
        if os.path.exists(self.log):
            with open(self.log, "r+b") as handle:
                found.update(os.fsdecode(line) for line in handle.read().splitlines())
                handle.truncate(0)
        parent = os.path.dirname(self.folder)
        return sorted(os.path.relpath(path, parent) for path in found)
