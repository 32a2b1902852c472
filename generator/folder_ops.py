"""The low-level operations of the writer (write.py) on the output folder and the names beside it:
where they are (Places), the test hook GPUMEM_WRITE_TEST (described in write.py's docstring), moves
and renames that follow no symbolic link, the copies of unchanged files, and the lock that keeps
a second build out."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import BuildError
from .marker import CLOEXEC, NOFOLLOW, NONBLOCK, Entry, create, error_reason, lstat

if sys.platform == "win32":  # pragma: no cover - the lock where fcntl does not exist
    import msvcrt
else:
    import fcntl

DIRECTORY = getattr(os, "O_DIRECTORY", 0)
FD_PATHS = os.rename in os.supports_dir_fd and os.open in os.supports_dir_fd

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


@dataclass(frozen=True)
class Places:
    """The output folder and the names gpumem keeps beside it."""

    label: str  # the folder as the user named it, for messages
    root: Path  # its real path

    @property
    def parent(self) -> Path:
        return self.root.parent

    def beside(self, suffix: str) -> Path:
        return self.parent / f".{self.root.name}.gpumem-{suffix}"

    @property
    def lock(self) -> Path:
        return self.beside("lock")

    @property
    def journal(self) -> Path:
        return self.beside("journal")

    @property
    def old(self) -> Path:
        return self.beside("old")

    @property
    def staging_pattern(self) -> re.Pattern[str]:
        return re.compile(re.escape(f".{self.root.name}.gpumem-new.") + r"\d+-[0-9a-f]{8}")

    def show(self, relative: str = "") -> str:
        """A path inside the output folder as messages show it."""
        return str(Path(self.label) / relative) if relative else self.label


# --- the test hook -------------------------------------------------------------------------------


def _directives() -> list[str]:
    return [part for part in os.environ.get("GPUMEM_WRITE_TEST", "").split(",") if part]


def checkpoint(step: str) -> None:
    """Test-only: kill or pause this process at a named step (see the module docstring)."""
    for directive in _directives():
        kind, _, rest = directive.partition(":")
        name, _, argument = rest.partition(":")
        if name != step:
            continue
        if kind == "kill":
            import signal

            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
        elif kind == "pause":
            time.sleep(float(argument or 1))
        elif kind == "wait":
            deadline = time.monotonic() + 60
            while not os.path.exists(argument) and time.monotonic() < deadline:
                time.sleep(0.01)


# --- paths and trees -----------------------------------------------------------------------------


def identity_of(path: Path) -> tuple[int, int] | None:
    found = lstat(path)
    return (found.st_dev, found.st_ino) if found else None


def _open_folder(tree: Path, folder: str) -> int:
    """A descriptor of tree/folder, reached without following a symbolic link below tree."""
    fd = os.open(tree, os.O_RDONLY | DIRECTORY | CLOEXEC)
    for part in filter(None, folder.split("/")):
        try:
            inner = os.open(part, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def _make_folders(tree: Path, folder: str) -> None:
    """Create tree/folder and the folders above it that are missing, following no symbolic link."""
    done = ""
    for part in filter(None, folder.split("/")):
        parent = _open_folder(tree, done) if FD_PATHS else -1
        try:
            if FD_PATHS:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=parent)
            else:  # pragma: no cover - systems without dir_fd
                with contextlib.suppress(FileExistsError):
                    os.mkdir(tree / done / part)
        finally:
            if parent >= 0:
                os.close(parent)
        done = f"{done}/{part}" if done else part


def move_entry(source: Path, destination: Path, relative: str) -> None:
    """Rename source/relative to destination/relative (creating the folders above it); never
    replaces an entry and follows no symbolic link on either side."""
    folder, _, name = relative.rpartition("/")
    _make_folders(destination, folder)
    if not FD_PATHS:  # pragma: no cover - systems without dir_fd
        if os.path.lexists(destination / relative):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(destination / relative))
        os.rename(source / relative, destination / relative)
        return
    here = _open_folder(source, folder)
    try:
        there = _open_folder(destination, folder)
        try:
            try:
                os.stat(name, dir_fd=there, follow_symlinks=False)
            except FileNotFoundError:
                os.rename(name, name, src_dir_fd=here, dst_dir_fd=there)
            else:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(destination / relative))
        finally:
            os.close(there)
    finally:
        os.close(here)


@functools.cache
def _libc_renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


def random_part() -> str:
    """8 random hex digits that make a temporary name this process's own."""
    return os.urandom(4).hex()


def remove_tree(path: Path, ignore_errors: bool = False) -> None:
    """shutil.rmtree, imported when a build first removes a tree (a no-change check never does)."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


def renameat2(source: Path, destination: Path, flags: int) -> bool:
    """renameat2 with flags; False when this system cannot (no such call, or the filesystem refuses
    the flag), an OSError for any other failure."""
    function = _libc_renameat2()
    if function is None or "no-exchange" in _directives():
        return False
    if function(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(destination), flags) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(source), None, str(destination))


# --- the lock ------------------------------------------------------------------------------------


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_folder(places: Places) -> int:
    """Lock the output folder for this process, or stop at once naming the build that holds it.

    A symbolic link planted at the lock file's name is removed (never followed) and replaced."""
    if os.path.islink(places.lock):
        os.unlink(places.lock)
    try:
        fd = os.open(places.lock, os.O_RDWR | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC, 0o666)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BuildError([f"{places.lock}: a symbolic link, not gpumem's lock file; refusing to follow it (delete it)"]) from None
        raise BuildError(
            [
                f"{places.label}: cannot create its lock file {places.lock}: {error_reason(error)}; gpumem builds the new site "
                "beside the output folder and swaps it in, so the folder that holds it must be writable"
            ]
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BuildError([f"{places.lock}: not a file; gpumem's lock file must be one (delete it)"])
    if not _try_lock(fd):
        holder = _holder(fd)
        os.close(fd)
        who = f"another gpumem build (pid {holder})" if holder else "another gpumem build"
        raise BuildError([f"{places.label}: {who} is writing this folder; try again when it ends"])
    mine = f"{os.getpid()}\n".encode()
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, mine)  # one write, then the length: the file never reads empty while it changes hands
    os.ftruncate(fd, len(mine))
    return fd


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote; it writes it just after taking the lock, so wait a moment."""
    for _ in range(50):
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode(errors="replace").strip()
        if text.isdigit():
            return text
        time.sleep(0.01)
    return ""


def unlock_folder(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)  # closing the descriptor releases the lock


# --- files into the staging tree and beside the folder -------------------------------------------


def reuse_file(source: Path, destination: Path, entry: Entry, content: bytes) -> bool:
    """Put an unchanged file into the staging tree as a hard link (it keeps its inode and time);
    where links are refused, a copy with the same time. False when the file changed meanwhile."""
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError as error:
        if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EACCES, errno.ENOSYS):
            raise
        create(destination, content)
        os.chmod(destination, stat.S_IMODE(entry.mode))
        os.utime(destination, ns=(entry.atime_ns, entry.mtime_ns))
        return True
    linked = os.lstat(destination)
    if (linked.st_dev, linked.st_ino) == (entry.dev, entry.ino):
        return True
    os.unlink(destination)
    return False


def copy_modes(staging: Path, found: dict[str, Entry], current: os.stat_result) -> None:
    """The new tree's folders get the permission bits of the folders they replace; its root also
    the owner (when this user may set it)."""
    for relative, entry in found.items():
        if entry.kind == "dir":
            mine = lstat(staging / relative)
            if mine is not None and stat.S_ISDIR(mine.st_mode) and (mine.st_dev, mine.st_ino) != (entry.dev, entry.ino):
                if stat.S_IMODE(mine.st_mode) != stat.S_IMODE(entry.mode):
                    os.chmod(staging / relative, stat.S_IMODE(entry.mode))
    mine = os.lstat(staging)
    if (mine.st_uid, mine.st_gid) != (current.st_uid, current.st_gid):
        with contextlib.suppress(PermissionError):
            os.chown(staging, current.st_uid, current.st_gid)
    os.chmod(staging, stat.S_IMODE(current.st_mode))


def write_atomically(path: Path, content: bytes) -> None:
    """Write a file beside the output folder under a name of its own, then rename it into place."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}-{random_part()}")
    create(temporary, content)
    try:
        os.rename(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
