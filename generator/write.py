"""Stage 5, the only code that touches the output folder.

How a build replaces the site (say the output folder is `site/`, in a parent folder `P/`):

1. **Lock.** `P/.site.gpumem-lock` is locked with `fcntl.flock` for the whole build; a second build
   into the same folder stops at once and names the first one's pid. The operating system drops
   the lock when its holder dies, however it dies. The lock file stays (deleting it would race).
2. **Recover.** Whatever a killed build left beside the folder is finished or undone first, and
   said (see below).
3. **Stage.** The complete new site is built in a fresh folder beside the old one,
   `P/.site.gpumem-new.<pid>-<random>`: unchanged files are hard links to the current ones (so they
   keep their modification time), changed and new files are written with `O_CREAT | O_EXCL |
   O_NOFOLLOW`, so no write can follow a symbolic link or land on a name someone planted; the
   marker `.gpumem-site` (every file gpumem wrote, with its sha256) is written last.
4. **Carry over what is not ours.** gpumem owns exactly the files its previous marker lists.
   Anything else in the folder (`.git/`, `CNAME`, dotfiles, a file someone added) is moved, by
   rename, into the new tree just before the swap; a journal `P/.site.gpumem-journal` (written
   atomically before the first move) records the staging folder and what moves.
5. **Swap.** `renameat2(RENAME_EXCHANGE)` swaps the two folders in one atomic step; where that
   call does not exist (not Linux, old kernels, some filesystems) two renames are used instead.
   The previous tree is kept as `P/.site.gpumem-old` until the next build (an upload reading it is
   not disturbed); that build removes from it only the files its marker lists, and moves anything
   else (something created there late) into the live site.

What is guaranteed:
- Only files a previous build wrote are ever removed or replaced; a file the new build wants
  to write where a file it never wrote stands is adopted if it holds the same bytes, otherwise the
  build stops naming it, leaving the folder untouched.
- Readers of `site/` see the complete previous site until the swap, then the complete new one.
  The one window: between the moves of step 4 and the swap (a few renames), the entries that are
  not ours are already in the new tree, so a reader of `site/` can miss them for that instant.
  With the two-rename fallback, `site/` is also missing for the instant between the renames.
- A build that fails leaves the previous site as it was (its message says so); a build killed at
  any point leaves the complete previous or the complete new site (with the windows above for what
  is not ours), and the next build finishes or undoes it and says which.
- Nothing is written outside `site/` and the names above beside it; no symbolic link is followed
  inside `site/` (a link where a page goes is replaced by the page; a link where a folder is needed
  is an error).
- The output folder keeps its permission bits and owner (as far as the user may set them). It does
  get a new inode on every build: a shell or a bind mount holding `site/` itself keeps the old tree.

Not guaranteed: durability across a power cut (nothing is fsynced), nor against someone racing
the build to swap folders in `site/` for symbolic links while it runs. An output folder that is a
mount point cannot be swapped: the build stops and says so (build into a folder inside it instead).

A test-only hook, `GPUMEM_WRITE_TEST`, is a comma-separated list of `kill:STEP` (SIGKILL this
process at a named step), `pause:STEP:SECONDS`, `wait:STEP:PATH` (wait there, up to a minute, until
PATH exists) and `no-exchange` (use the two-rename fallback). Steps: locked (the lock just taken),
staged (every page in the staging folder, not the marker), journal (written, nothing moved yet),
moving (after each move), swapped, fallback (between the two renames), finished (journal not yet
removed), recovering (the same, when finishing a killed build's swap).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .errors import NOTHING_WRITTEN, SITE_KEPT, BuildError
from .marker import (
    BINARY,
    CLOEXEC,
    MARKER,
    NOFOLLOW,
    NONBLOCK,
    Entry,
    Manifest,
    WriteSummary,
    ancestors,
    checked_files,
    count_pages,
    create,
    error_reason,
    holds,
    lstat,
    manifest_bytes,
    matches,
    read_manifest,
    read_regular,
    scan,
)

if sys.platform == "win32":  # pragma: no cover - the lock where fcntl does not exist
    import msvcrt
else:
    import fcntl

# Files a static host reads from the site's root: a folder holding only these and dotfiles may be
# built into although it has no marker yet (a fresh gh-pages worktree, for example).
HOST_FILES = frozenset({"CNAME", "_headers", "_redirects"})

DIRECTORY = getattr(os, "O_DIRECTORY", 0)
FD_PATHS = os.rename in os.supports_dir_fd and os.open in os.supports_dir_fd

MOUNT_POINT = (
    "cannot swap in the new site: the folder is a mount point (or on another filesystem than its parent), "
    "and gpumem builds the new site beside it and swaps it in; build into a folder inside it"
)

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

    def new_staging(self) -> Path:
        return self.beside(f"new.{os.getpid()}-{random_part()}")

    def show(self, relative: str = "") -> str:
        """A path inside the output folder as messages show it."""
        return str(Path(self.label) / relative) if relative else self.label


class Failed(Exception):
    """A file of the staging tree could not be made."""

    def __init__(self, relative: str, error: OSError) -> None:
        super().__init__(relative)
        self.relative = relative
        self.error = error


# --- the test hook -------------------------------------------------------------------------------


def _directives() -> list[str]:
    return [part for part in os.environ.get("GPUMEM_WRITE_TEST", "").split(",") if part]


def _checkpoint(step: str) -> None:
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


def _identity(path: Path) -> tuple[int, int] | None:
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


def _move(source: Path, destination: Path, relative: str) -> None:
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


def _remove_tree(path: Path, ignore_errors: bool = False) -> None:
    """shutil.rmtree, imported when a build first removes a tree (a no-change check never does)."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


def _renameat2(source: Path, destination: Path, flags: int) -> bool:
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


# --- markers -------------------------------------------------------------------------------------


def _foreign(tree: Path, manifest: Manifest | None) -> list[str]:
    """The top-most entries of a tree that its marker does not claim (folders whole)."""
    ours = {*(manifest.files if manifest else ()), MARKER}
    folders = ancestors(ours)
    found = scan(tree, folders)
    return [
        relative
        for relative, entry in found.items()
        if not (relative in ours and entry.kind != "dir") and not (entry.kind == "dir" and relative in folders)
    ]


def _rescue(source: Path, home: Path, relative: str) -> tuple[list[str], list[str]]:
    """Move source/relative into home, merging into a real folder that is already there;
    (what moved, what could not)."""
    try:
        _move(source, home, relative)
        return [relative], []
    except FileExistsError:
        here, there = lstat(source / relative), lstat(home / relative)
        if here and there and not stat.S_ISDIR(here.st_mode) and (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
            os.unlink(source / relative)  # a second link to the very file the site holds (one gpumem adopted)
            return [], []
        if not (here and there and stat.S_ISDIR(here.st_mode) and stat.S_ISDIR(there.st_mode)):
            return [], [relative]
    except OSError:
        return [], [relative]
    moved: list[str] = []
    left: list[str] = []
    for name in sorted(os.listdir(source / relative)):
        more, stuck = _rescue(source, home, f"{relative}/{name}")
        moved += more
        left += stuck
    with contextlib.suppress(OSError):
        os.rmdir(source / relative)
    return moved, left


def _sweep(tree: Path, home: Path | None, manifest: Manifest | None) -> tuple[list[str], list[str]]:
    """Move every entry of a set-aside tree that gpumem did not write into home, the live site."""
    moved: list[str] = []
    left: list[str] = []
    for relative in _foreign(tree, manifest):
        if home is None or not os.path.isdir(home):
            left.append(relative)
            continue
        more, stuck = _rescue(tree, home, relative)
        moved += more
        left += stuck
    return moved, left


def _discard(tree: Path, manifest: Manifest | None) -> bool:
    """Remove from a set-aside tree the files its marker lists, the marker, and the folders that
    leaves empty; True when the tree is gone."""
    ours = {*(manifest.files if manifest else ()), MARKER}
    folders = ancestors(ours)
    found = scan(tree, folders)
    for folder in ["", *(f for f in folders if f in found and found[f].kind == "dir")]:
        mode = os.lstat(tree / folder).st_mode if folder else os.lstat(tree).st_mode
        if mode & 0o700 != 0o700:  # a read-only folder of ours: make it ours to empty
            os.chmod(tree / folder, stat.S_IMODE(mode) | 0o700)
    for relative, entry in found.items():
        if relative in ours and relative != MARKER and entry.kind != "dir":
            os.unlink(tree / relative)
            _checkpoint("discarding")
    if MARKER in found and found[MARKER].kind != "dir":  # last: a tree left by a build killed meanwhile keeps its marker
        os.unlink(tree / MARKER)
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        if folder in found and found[folder].kind == "dir":
            with contextlib.suppress(OSError):
                os.rmdir(tree / folder)
    with contextlib.suppress(OSError):
        os.rmdir(tree)
    return lstat(tree) is None


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


def _lock(places: Places) -> int:
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


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)  # closing the descriptor releases the lock


# --- the output folder ---------------------------------------------------------------------------


class OutputFolder:
    """The output folder, locked and recovered for the length of a `with` block.

    Inside it, `up_to_date` checks and `write` replaces the site; `notes` says what recovery did.
    `report`, when given, is also called with each note as it happens.
    """

    def __init__(self, out_dir: Path, report: Callable[[str], None] | None = None) -> None:
        self.places = Places(str(out_dir), Path(os.path.realpath(out_dir)))
        self.report = report
        self.notes: list[str] = []
        self._fd: int | None = None

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self.report:
            self.report(text)

    def __enter__(self) -> OutputFolder:
        places = self.places
        if os.path.lexists(places.root) and not os.path.isdir(places.root):
            raise BuildError([f"{places.label}: not a folder; refusing to replace it"])
        if places.parent == places.root:
            raise BuildError([f"{places.label}: the root of the filesystem; gpumem builds into a folder it can swap"])
        try:
            places.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BuildError([f"{places.parent}: cannot create: {error_reason(error)}"]) from None
        self._fd = _lock(places)
        try:
            _checkpoint("locked")
            self._recover()
        except BaseException:
            _unlock(self._fd)
            self._fd = None
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self._fd is not None:
            _unlock(self._fd)
            self._fd = None

    def summary(self, written: int, unchanged: int, removed: int, pages: int = 0) -> WriteSummary:
        return WriteSummary(written, unchanged, removed, tuple(self.notes), pages)

    # --- checking ---

    def up_to_date(self, fingerprint: str, accept: Callable[[dict[str, object]], bool] | None = None) -> WriteSummary | None:
        """The summary of a rebuild that would change nothing, or None when the folder needs a build.

        The folder is up to date when its marker records this fingerprint of the inputs and every
        file it lists is there, a regular file with the bytes it recorded; and, given `accept`, when
        it accepts the facts the marker records about the inputs. Nothing is touched.
        """
        root = self.places.root
        if not os.path.isdir(root):
            return None
        try:
            manifest = read_manifest(root, self.places.show(MARKER))
        except BuildError:
            return None  # the build that follows says why
        if manifest is None or manifest.fingerprint != fingerprint:
            return None
        if accept is not None and not accept(manifest.facts):
            return None
        try:
            found = scan(root, ancestors(manifest.files))
        except OSError:
            return None
        for relative, digest in manifest.files.items():
            entry = found.get(relative)
            if entry is None or entry.kind != "file" or not matches(root / relative, entry, digest):
                return None
        return self.summary(0, len(manifest.files), 0, count_pages(manifest.files))

    # --- writing ---

    def write(
        self, files: dict[str, bytes] | list[tuple[str, bytes]], fingerprint: str = "", facts: dict[str, object] | None = None
    ) -> WriteSummary:
        """Replace the site with these files (see the module docstring); rewrite only files whose
        bytes changed, remove only files the previous build wrote and this one does not. The marker
        records the inputs' fingerprint and the facts about them the no-change check needs."""
        places = self.places
        targets = checked_files(files, places.root)
        root = places.root
        current = lstat(root)
        if current is not None and os.path.ismount(root):
            raise BuildError([f"{places.label}: {MOUNT_POINT}"])
        if current is not None:
            self._rescue_from_old()
        previous = read_manifest(root, places.show(MARKER)) if current else None
        ours = set(previous.files) if previous else set()
        target_folders, our_folders = ancestors(targets), ancestors(ours)
        try:
            found = scan(root, target_folders | our_folders) if current else {}
        except OSError as error:
            raise BuildError([f"{error.filename or places.label}: cannot read: {error_reason(error)}"]) from None
        if current is not None and previous is None:
            visible = [r for r in found if "/" not in r and not r.startswith(".") and r not in HOST_FILES]
            if visible:
                raise BuildError([f"{places.label}: not empty and not a gpumem site (no {MARKER}); refusing to build into it"])
        moves, adopted = self._plan(found, targets, ours, target_folders, our_folders)
        removed = sum(1 for r in ours - set(targets) if r in found and found[r].kind != "dir")
        staging = places.new_staging()
        kept = SITE_KEPT if current else NOTHING_WRITTEN
        try:
            os.mkdir(staging)
        except OSError as error:
            raise BuildError([f"{places.label}: cannot create {staging.name} beside it: {error_reason(error)}"]) from None
        try:
            written = self._stage(staging, targets, found, ours | adopted, fingerprint, facts)
        except Failed as failure:
            _remove_tree(staging, ignore_errors=True)
            raise BuildError([f"{places.show(failure.relative)}: cannot write: {error_reason(failure.error)}"], kept) from None
        if current is None:
            self._first(staging)
        else:
            self._replace(staging, moves, found, current)
        for relative in sorted(adopted):
            self.note(f"{places.show(relative)}: was not written by gpumem but holds the bytes the build writes there; adopted it")
        return self.summary(written, len(targets) - written, removed, count_pages(targets))

    def _plan(
        self, found: dict[str, Entry], targets: dict[str, bytes], ours: set[str], target_folders: set[str], our_folders: set[str]
    ) -> tuple[list[str], set[str]]:
        """What is not ours and moves into the new tree, and what is not ours but already holds the
        bytes the build writes there (adopted); a BuildError naming every entry that is in the way."""
        places = self.places
        moves: list[str] = []
        adopted: set[str] = set()
        problems: list[str] = []
        for relative, entry in found.items():
            if relative == MARKER:
                continue
            shown = places.show(relative)
            if entry.kind == "dir":
                if relative in targets:
                    problems.append(f"{shown}: a folder gpumem did not make stands where the build writes a file; refusing to replace it")
                elif relative not in target_folders and relative not in our_folders:
                    moves.append(relative)
            elif relative in target_folders:
                if entry.kind == "link":
                    problems.append(f"{shown}: a symbolic link where the build needs a folder; refusing to follow it (remove it)")
                elif relative not in ours:
                    problems.append(f"{shown}: a file gpumem did not write stands where the build needs a folder; refusing to replace it")
            elif relative in ours:
                continue  # ours: linked if unchanged, else rewritten, or dropped
            elif relative in targets:
                if entry.kind == "file" and holds(places.root / relative, entry, targets[relative]):
                    adopted.add(relative)
                else:
                    problems.append(
                        f"{shown}: not written by gpumem (not in {MARKER}) and not what the build writes there; "
                        "refusing to replace it (move it away or delete it)"
                    )
            else:
                moves.append(relative)
        if problems:
            raise BuildError(problems)
        return moves, adopted

    def _stage(
        self,
        staging: Path,
        targets: dict[str, bytes],
        found: dict[str, Entry],
        reusable: set[str],
        fingerprint: str,
        facts: dict[str, object] | None,
    ) -> int:
        """Fill the staging folder: unchanged files linked, the others written, the marker last;
        the number of files written."""
        root = self.places.root
        for folder in sorted(ancestors(targets)):
            try:
                os.mkdir(staging / folder)
            except OSError as error:
                raise Failed(folder, error) from None

        def place(item: tuple[str, bytes]) -> bool:
            relative, content = item
            try:
                entry = found.get(relative)
                if entry is not None and entry.kind == "file" and relative in reusable:
                    if holds(root / relative, entry, content) and _reuse(root / relative, staging / relative, entry, content):
                        return False
                create(staging / relative, content)
                return True
            except OSError as error:
                raise Failed(relative, error) from None

        # Creating files is slow on some disks (about 1 ms each here); a few threads overlap the waits.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=4) as pool:
            written = sum(pool.map(place, targets.items()))
        _checkpoint("staged")
        try:
            create(staging / MARKER, manifest_bytes(targets, fingerprint, facts))
        except OSError as error:
            raise Failed(MARKER, error) from None
        return written

    def _first(self, staging: Path) -> None:
        """The first build: the staging folder becomes the output folder."""
        root = self.places.root
        try:
            if not _renameat2(staging, root, RENAME_NOREPLACE):
                if os.path.lexists(root):
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(root))
                os.rename(staging, root)
        except OSError as error:
            _remove_tree(staging, ignore_errors=True)
            raise BuildError([f"{self.places.label}: cannot put the new site in place: {error_reason(error)}"]) from None

    def _replace(self, staging: Path, moves: list[str], found: dict[str, Entry], current: os.stat_result) -> None:
        """Journal, move in what is not ours, swap, and keep the previous tree as the old one."""
        places = self.places
        try:
            self._clear_old()  # only now: a build that fails before this point leaves everything as it was
        except BaseException:
            _remove_tree(staging, ignore_errors=True)
            raise
        identity = os.lstat(staging)
        journal = {"staging": staging.name, "device": identity.st_dev, "inode": identity.st_ino, "moved": moves}
        try:
            _write_atomically(places.journal, json.dumps(journal, indent=1).encode())
        except OSError as error:
            _remove_tree(staging, ignore_errors=True)
            raise BuildError([f"{places.journal}: cannot write: {error_reason(error)}"], SITE_KEPT) from None
        _checkpoint("journal")
        step = ""
        try:
            for relative in moves:
                step = relative
                _move(places.root, staging, relative)
                _checkpoint("moving")
            step = ""
            _copy_modes(staging, found, current)
            exchanged = self._swap(staging)
        except OSError as error:
            if step:
                problem = f"{places.show(step)}: cannot move it into the new site: {error_reason(error)}"
            elif error.errno in (errno.EBUSY, errno.EXDEV):
                problem = f"{places.label}: {MOUNT_POINT}"
            else:
                problem = f"{places.label}: cannot swap in the new site: {error_reason(error)}"
            self._roll_back(staging, problem)
        self._finish(staging if exchanged else None)

    def _swap(self, staging: Path) -> bool:
        """Put the staging tree in the output folder's place; True when swapped in one step (the
        previous tree is then at the staging name), False after two renames (it is the old tree)."""
        root, old = self.places.root, self.places.old
        if _renameat2(staging, root, RENAME_EXCHANGE):
            _checkpoint("swapped")
            return True
        os.rename(root, old)
        _checkpoint("fallback")
        try:
            os.rename(staging, root)
        except OSError:
            with contextlib.suppress(OSError):
                os.rename(old, root)
            raise
        return False

    def _roll_back(self, staging: Path, problem: str) -> None:
        """Undo a build that failed before its swap, then raise its error, saying truthfully what is left."""
        places = self.places
        try:
            manifest = read_manifest(staging, str(staging / MARKER))
            _, left = _sweep(staging, places.root, manifest)
            if left or not _discard(staging, manifest):
                raise OSError(errno.ENOTEMPTY, "not everything could be moved back")
            os.unlink(places.journal)
        except (OSError, BuildError):
            if not os.path.isdir(places.root):
                outcome = f"{places.label} is missing; the next build puts the new site in place."
            else:
                outcome = f"some files not written by gpumem are still in {staging.name}; the next build puts them back."
            raise BuildError([problem], outcome) from None
        raise BuildError([problem], SITE_KEPT)

    def _finish(self, old_at: Path | None, step: str = "finished") -> None:
        """After the swap: the previous tree goes to the old tree's name, anything not ours that
        reached it late moves into the new site, and the journal goes."""
        places = self.places
        try:
            if old_at is not None:
                if os.path.lexists(places.old):
                    self._clear_old()
                os.rename(old_at, places.old)
            moved, left = _sweep(places.old, places.root, read_manifest(places.old, str(places.old / MARKER)))
            _checkpoint(step)
            os.unlink(places.journal)
        except (OSError, BuildError) as error:
            reason = error_reason(error) if isinstance(error, OSError) else error.lines[0]
            self.note(f"{places.label}: the new site is in place, but tidying up after it failed ({reason}); the next build finishes it")
            return
        if moved:
            self.note(f"{places.label}: moved {', '.join(moved)} into the new site; created in the previous one during the build")
        if left:
            self.note(
                f"{places.label}: {', '.join(left)} stayed in {places.old.name}; "
                f"not written by gpumem, and the name is taken in the new site"
            )

    def _rescue_from_old(self) -> None:
        """Move into the site anything not gpumem's that was created in the tree the previous build
        set aside (by a shell still in the old folder, say); harmless if this build then fails."""
        old = self.places.old
        if os.path.isdir(old) and not os.path.islink(old):
            moved, _ = _sweep(old, self.places.root, read_manifest(old, str(old / MARKER)))
            if moved:
                where = f"from {old.name}, where they were created during the last build"
                self.note(f"{self.places.label}: moved {', '.join(moved)} into it {where}")

    def _clear_old(self) -> None:
        """Remove the tree the previous build set aside: its own files; anything else moves into the site."""
        places = self.places
        old = places.old
        found = lstat(old)
        if found is None:
            return
        if not stat.S_ISDIR(found.st_mode):
            os.unlink(old)
            return
        self._rescue_from_old()
        manifest = read_manifest(old, str(old / MARKER))
        if not _discard(old, manifest):
            left = _foreign(old, manifest)
            raise BuildError(
                [
                    f"{old}: the previous build's copy still holds {', '.join(left) or 'files'}, not written by gpumem, "
                    f"that cannot be moved into {places.label} (the name is taken); move them yourself, then delete {old.name}"
                ]
            )

    # --- recovery ---

    def _recover(self) -> None:
        """Finish or undo what a killed build left beside the folder, and say what was done."""
        places = self.places
        journal_temporary = re.compile(re.escape(places.journal.name) + r"\.\d+-[0-9a-f]{8}")
        stagings = []
        with os.scandir(places.parent) as entries:
            for item in entries:
                if journal_temporary.fullmatch(item.name) and not item.is_dir(follow_symlinks=False):
                    os.unlink(item.path)
                elif places.staging_pattern.fullmatch(item.name):
                    stagings.append(item.name)
        journal = _read_journal(places)
        if journal is not None:
            self._resume(journal)
            stagings = [name for name in stagings if name != journal["staging"]]
        for name in sorted(stagings):
            staging = places.parent / name
            kind = lstat(staging)
            if kind is None:
                continue
            if not stat.S_ISDIR(kind.st_mode):
                os.unlink(staging)  # not a folder gpumem made (a planted link, say): removed, never followed
                continue
            manifest = read_manifest(staging, str(staging / MARKER))
            if manifest is None:
                _remove_tree(staging)  # no marker yet: nothing was moved in, everything is ours
            elif not _discard(staging, manifest):
                raise BuildError([f"{staging}: holds files gpumem did not write; move them yourself, then delete {name}"])
            self.note(
                f"{places.label}: a build was killed while it prepared the new site; "
                f"removed its unfinished copy {name} (the site was untouched)"
            )

    def _resume(self, journal: dict) -> None:
        """A journal means a build was killed between its first move and the end: finish or undo it."""
        places = self.places
        staging = places.parent / journal["staging"]
        new = (journal["device"], journal["inode"])
        here, there = _identity(places.root), _identity(staging)
        if here == new:
            self._finish(staging if there else None, "recovering")
            self.note(f"{places.label}: a build was killed just after it swapped in the new site; finished it")
        elif here is None and there == new:
            os.rename(staging, places.root)
            self._finish(None, "recovering")
            self.note(f"{places.label}: a build was killed between its two renames, while the folder was missing; put the new site there")
        elif there == new:
            manifest = read_manifest(staging, str(staging / MARKER))
            if manifest is None:
                raise BuildError(
                    [f"{places.journal}: its staging folder {staging.name} has no marker; check {places.label}, then delete both"]
                )
            moved, left = _sweep(staging, places.root, manifest)
            if left or not _discard(staging, manifest):
                stuck = ", ".join(left) or "everything"
                raise BuildError(
                    [f"{staging}: cannot put {stuck} back into {places.label}; move them, then delete it and {places.journal.name}"]
                )
            os.unlink(places.journal)
            back = f"; put back {', '.join(moved)}, not written by gpumem" if moved else ""
            self.note(f"{places.label}: a build was killed before it swapped in the new site; kept the previous site{back}")
        else:
            raise BuildError([f"{places.journal}: describes a build whose folders are not there; check {places.label}, then delete it"])


def _reuse(source: Path, destination: Path, entry: Entry, content: bytes) -> bool:
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


def _copy_modes(staging: Path, found: dict[str, Entry], current: os.stat_result) -> None:
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


def _write_atomically(path: Path, content: bytes) -> None:
    """Write a file beside the output folder under a name of its own, then rename it into place."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}-{random_part()}")
    create(temporary, content)
    try:
        os.rename(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _read_journal(places: Places) -> dict | None:
    """The journal a killed build left; None when there is none (a symbolic link planted at its
    name is not gpumem's journal: it is removed, never followed)."""
    path = places.journal
    if os.path.islink(path):
        os.unlink(path)
        return None
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC | BINARY)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise BuildError([f"{path}: cannot read gpumem's journal: {error_reason(error)}; check {places.label}, then delete it"]) from None
    with os.fdopen(fd, "rb") as stream:
        raw = stream.read() if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    try:
        journal = json.loads(raw)
        ok = (
            isinstance(journal, dict)
            and isinstance(journal.get("staging"), str)
            and places.staging_pattern.fullmatch(journal["staging"])
            and isinstance(journal.get("device"), int)
            and isinstance(journal.get("inode"), int)
        )
    except ValueError:
        ok = False
    if not ok:
        raise BuildError([f"{path}: not a gpumem journal; check {places.label} by hand, then delete it"])
    return journal  # type: ignore[no-any-return]


def already_built(out_dir: Path, fingerprint: str, accept: Callable[[dict[str, object]], bool] | None = None) -> WriteSummary | None:
    """OutputFolder.up_to_date without taking the lock (it only reads, so a build writing meanwhile
    is never stopped by it): None as well when a killed build left anything beside the folder,
    which only a locked build recovers. A swap under way makes some file differ from the marker,
    so a half-swapped folder is never taken for a built one."""
    folder = OutputFolder(out_dir)
    places = folder.places
    journal = places.journal.name
    try:
        names = os.listdir(places.parent)
    except OSError:
        return None
    if any(name.startswith(journal) or places.staging_pattern.fullmatch(name) for name in names):
        return None
    return folder.up_to_date(fingerprint, accept)


def up_to_date(out_dir: Path, fingerprint: str) -> WriteSummary | None:
    """The summary of a rebuild that would change nothing, or None (see OutputFolder.up_to_date)."""
    with OutputFolder(out_dir) as folder:
        return folder.up_to_date(fingerprint)


def write_in_place(out_dir: Path, files: dict[str, bytes], fingerprint: str = "", facts: dict[str, object] | None = None) -> WriteSummary:
    """The preview's writer (serve.py): a temporary folder of its own, which no one else writes or
    uploads, so each changed file is replaced where it stands (written beside it, then renamed over
    it) instead of a whole new tree being staged and swapped in; files the last build wrote and this
    one does not go, with the folders they leave empty; the marker comes last."""
    root = Path(os.path.realpath(out_dir))
    targets = checked_files(files, root)
    previous = read_manifest(root, str(out_dir / MARKER)) if root.is_dir() else None
    recorded = previous.files if previous else {}
    written = 0
    try:
        for relative, content in targets.items():
            path = root / relative
            if relative in recorded and read_regular(path) == content:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, content)
            written += 1
        gone = sorted(set(recorded) - set(targets))
        for relative in gone:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / relative)
        for folder in sorted(ancestors(gone) - ancestors(targets), key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(root / folder)  # only when empty
        _write_atomically(root / MARKER, manifest_bytes(targets, fingerprint, facts))
    except OSError as error:
        raise BuildError(
            [f"{error.filename or out_dir}: cannot write: {error_reason(error)}"], "the preview may be partly updated."
        ) from None
    return WriteSummary(written, len(targets) - written, len(gone), (), count_pages(targets))


def write_site(out_dir: Path, files: dict[str, bytes] | list[tuple[str, bytes]], fingerprint: str = "") -> WriteSummary:
    """Replace the site in out_dir with these files, recording the inputs' fingerprint and each
    file's digest in its marker (see the module docstring and OutputFolder.write)."""
    checked_files(files, Path(os.path.realpath(out_dir)))
    with OutputFolder(out_dir) as folder:
        return folder.write(files, fingerprint)
