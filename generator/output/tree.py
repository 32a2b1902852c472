"""A site's files on disk, for the writer (output/versions.py) and the preview: a folder read without
following links, what in it a list does not account for, files created without opening an existing
name, the preview's in-place writer, the earlier writer's marker, the lock, and the test hook."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from gpumem.errors import BuildError
from gpumem.options import WriteSummary

TEMPORARY = ".tmp-"  # a name a build renames into place; one a killed build left is removed
OLD_MARKER = ".gpumem-site"  # the earlier writer's list of what it wrote
FILE_MODE, FOLDER_MODE = 0o644, 0o755
BINARY = getattr(os, "O_BINARY", 0)
Stats = dict[str, os.stat_result]


def checkpoint(step: str) -> None:
    """Test-only, GPUMEM_WRITE_TEST: comma-separated `kill:STEP` (SIGKILL this process at a named
    step of the writer, output/versions.py) and `wait:STEP:PATH` (wait there, up to a minute, until PATH exists)."""
    for directive in os.environ.get("GPUMEM_WRITE_TEST", "").split(","):
        kind, _, rest = directive.partition(":")
        name, _, argument = rest.partition(":")
        if name == step and kind == "kill":
            import signal

            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
        deadline = time.monotonic() + 60
        while name == step and kind == "wait" and not os.path.exists(argument) and time.monotonic() < deadline:
            time.sleep(0.01)


def ancestors(paths: Iterable[str]) -> set[str]:
    """Every folder above the given relative paths: a/b/c -> a, a/b."""
    found: set[str] = set()
    for path in paths:
        folder = path.rpartition("/")[0]
        while folder and folder not in found:  # a folder already found has its own ancestors in too
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return found


def count_pages(files: Iterable[str]) -> int:
    return sum(1 for relative in files if relative.endswith(".html"))


def scan(tree: Path, descend: set[str] | None = None) -> Stats:
    """Every entry below tree, symbolic links not followed, looking into the sub-folders in
    `descend` only (None: into all)."""
    found: Stats = {}
    root = os.fspath(tree)
    pending = [""]
    while pending:
        folder = pending.pop()
        with os.scandir(os.path.join(root, folder) if folder else root) as entries:
            for item in entries:
                relative = f"{folder}/{item.name}" if folder else item.name
                found[relative] = info = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and (descend is None or relative in descend):
                    pending.append(relative)
    return found


def foreign(found: Stats, listed: Iterable[str]) -> list[str]:
    """The top-most entries that are neither a listed file nor a folder of listed files."""
    files = set(listed)
    folders = ancestors(files)
    parents = folders | {""}  # once: joined per entry, it cost entries x folders (5 s at 10,000 pages)
    return sorted(
        relative
        for relative, info in found.items()
        if relative.rpartition("/")[0] in parents
        and not (relative in files and stat.S_ISREG(info.st_mode))
        and not (relative in folders and stat.S_ISDIR(info.st_mode))
    )


def same_bytes(path: Path, content: bytes) -> bool:
    """Whether a regular file (not a link) holds exactly these bytes."""
    try:
        info = os.lstat(path)
        return stat.S_ISREG(info.st_mode) and info.st_size == len(content) and path.read_bytes() == content
    except OSError:
        return False


def write_file(path: Path, content: bytes) -> None:
    """A new file, 0644: never opens an existing name (whose inode another version may share)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | BINARY, FILE_MODE)
    with os.fdopen(fd, "wb") as stream:
        stream.write(content)
    os.chmod(path, FILE_MODE)


def make_folders(path: Path) -> None:
    """A folder and any missing folder above it, each made 0755 whatever the umask, since others (the
    web server) read the site through them; folders that exist keep their mode."""
    missing = [folder for folder in (path, *path.parents) if not os.path.isdir(folder)]
    path.mkdir(parents=True, exist_ok=True)
    for folder in missing:
        os.chmod(folder, FOLDER_MODE)


def remove(path: Path) -> None:
    """A file, a link or a whole folder of gpumem's."""
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


def checked_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files, refusing a path outside the site, one not plain, and one that is also a folder."""
    problems = [f"{name}: not a plain relative path inside the site; refusing to write it" for name in files if not plain(name)]
    problems += [f"{name}: written both as a file and as a folder in one build" for name in sorted(ancestors(files) & set(files))]
    if problems:
        raise BuildError(problems)
    return files


def plain(relative: str) -> bool:
    """Plain names joined by '/': not absolute, no empty, '.' or '..' part, no backslash."""
    return bool(relative) and "\\" not in relative and all(part not in ("", ".", "..") for part in relative.split("/"))


def try_lock(fd: int) -> bool:
    try:
        if sys.platform == "win32":  # pragma: no cover - no fcntl there
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def write_in_place(folder: Path, files: dict[str, bytes], previous: dict[str, bytes]) -> WriteSummary:
    """The preview's writer (commands/serve.py): its own temporary folder, which no one else writes, is
    updated where it stands: files whose bytes differ from what it wrote last (`previous`, kept in
    the preview's memory) are written beside themselves and renamed over, files gone are removed."""
    written = 0
    try:
        for relative, content in checked_files(files).items():
            if previous.get(relative) != content:
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                temporary = folder / f"{relative}.{TEMPORARY}{os.getpid()}"
                temporary.write_bytes(content)
                os.replace(temporary, folder / relative)
                written += 1
        gone = sorted(set(previous) - set(files))
        for relative in gone:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / relative)
        for emptied in sorted(ancestors(gone) - ancestors(files), key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(folder / emptied)  # only when empty
    except OSError as error:
        raise BuildError([f"{error.filename}: cannot write: {error.strerror}"], "the preview may be partly updated.") from None
    return WriteSummary(written, len(files) - written, len(gone), (), count_pages(files))


# --- the earlier writer's output folder ------------------------------------------------------------


def marked(tree: Path) -> set[str]:
    """What the earlier writer's marker in a real folder lists, the marker too; nothing without one."""
    try:
        listed = json.loads((tree / OLD_MARKER).read_bytes())["files"]
        return {name for name in listed if isinstance(name, str) and plain(name)} | {OLD_MARKER}
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, TypeError, KeyError):
        raise BuildError([f"{tree / OLD_MARKER}: not the marker of gpumem's earlier writer; cannot tell which files it wrote"]) from None


def clear_earlier_writer(link: Path) -> bool:
    """Remove the earlier writer's lock and previous tree beside the output path (the tree's own
    files only, by its marker); False when the tree holds something else, and stays."""
    old, lock = (link.parent / f".{link.name}.gpumem-{suffix}" for suffix in ("old", "lock"))
    with contextlib.suppress(OSError):
        os.unlink(lock)
    if not os.path.isdir(old) or os.path.islink(old):
        return True
    with contextlib.suppress(BuildError):
        listed = marked(old)
        for relative in sorted(listed, key=lambda name: name == OLD_MARKER):  # the marker last
            with contextlib.suppress(OSError):
                os.unlink(old / relative)
        for relative in sorted(ancestors(listed) | {""}, key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(old / relative)
    return not os.path.lexists(old)
