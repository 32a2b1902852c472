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

The steps are spread over three modules: folder_ops.py (the places beside the folder, the lock, the
test hook, moves and renames), recovery.py (step 2, and the sweeps of steps 4 and 5) and this one
(OutputFolder: staging and the swap). The preview writes in place instead (write_preview.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .errors import NOTHING_WRITTEN, SITE_KEPT, BuildError
from .folder_ops import (
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    Places,
    checkpoint,
    copy_modes,
    lock_folder,
    move_entry,
    random_part,
    remove_tree,
    renameat2,
    reuse_file,
    unlock_folder,
    write_atomically,
)
from .marker import (
    MARKER,
    Entry,
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
    scan,
)
from .recovery import clear_old, recover, rescue_from_old, roll_back, sweep

# Files a static host reads from the site's root: a folder holding only these and dotfiles may be
# built into although it has no marker yet (a fresh gh-pages worktree, for example).
HOST_FILES = frozenset({"CNAME", "_headers", "_redirects"})

MOUNT_POINT = (
    "cannot swap in the new site: the folder is a mount point (or on another filesystem than its parent), "
    "and gpumem builds the new site beside it and swaps it in; build into a folder inside it"
)


class Failed(Exception):
    """A file of the staging tree could not be made."""

    def __init__(self, relative: str, error: OSError) -> None:
        super().__init__(relative)
        self.relative = relative
        self.error = error


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
        self._fd = lock_folder(places)
        try:
            checkpoint("locked")
            recover(self)
        except BaseException:
            unlock_folder(self._fd)
            self._fd = None
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self._fd is not None:
            unlock_folder(self._fd)
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
            rescue_from_old(self)
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
        staging = places.beside(f"new.{os.getpid()}-{random_part()}")
        kept = SITE_KEPT if current else NOTHING_WRITTEN
        try:
            os.mkdir(staging)
        except OSError as error:
            raise BuildError([f"{places.label}: cannot create {staging.name} beside it: {error_reason(error)}"]) from None
        try:
            written = self._stage(staging, targets, found, ours | adopted, fingerprint, facts)
        except Failed as failure:
            remove_tree(staging, ignore_errors=True)
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
                    if holds(root / relative, entry, content) and reuse_file(root / relative, staging / relative, entry, content):
                        return False
                create(staging / relative, content)
                return True
            except OSError as error:
                raise Failed(relative, error) from None

        # Creating files is slow on some disks (about 1 ms each here); a few threads overlap the waits.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=4) as pool:
            written = sum(pool.map(place, targets.items()))
        checkpoint("staged")
        try:
            create(staging / MARKER, manifest_bytes(targets, fingerprint, facts))
        except OSError as error:
            raise Failed(MARKER, error) from None
        return written

    def _first(self, staging: Path) -> None:
        """The first build: the staging folder becomes the output folder."""
        root = self.places.root
        try:
            if not renameat2(staging, root, RENAME_NOREPLACE):
                if os.path.lexists(root):
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(root))
                os.rename(staging, root)
        except OSError as error:
            remove_tree(staging, ignore_errors=True)
            raise BuildError([f"{self.places.label}: cannot put the new site in place: {error_reason(error)}"]) from None

    def _replace(self, staging: Path, moves: list[str], found: dict[str, Entry], current: os.stat_result) -> None:
        """Journal, move in what is not ours, swap, and keep the previous tree as the old one."""
        places = self.places
        try:
            clear_old(self)  # only now: a build that fails before this point leaves everything as it was
        except BaseException:
            remove_tree(staging, ignore_errors=True)
            raise
        identity = os.lstat(staging)
        journal = {"staging": staging.name, "device": identity.st_dev, "inode": identity.st_ino, "moved": moves}
        try:
            write_atomically(places.journal, json.dumps(journal, indent=1).encode())
        except OSError as error:
            remove_tree(staging, ignore_errors=True)
            raise BuildError([f"{places.journal}: cannot write: {error_reason(error)}"], SITE_KEPT) from None
        checkpoint("journal")
        step = ""
        try:
            for relative in moves:
                step = relative
                move_entry(places.root, staging, relative)
                checkpoint("moving")
            step = ""
            copy_modes(staging, found, current)
            exchanged = self._swap(staging)
        except OSError as error:
            if step:
                problem = f"{places.show(step)}: cannot move it into the new site: {error_reason(error)}"
            elif error.errno in (errno.EBUSY, errno.EXDEV):
                problem = f"{places.label}: {MOUNT_POINT}"
            else:
                problem = f"{places.label}: cannot swap in the new site: {error_reason(error)}"
            roll_back(self.places, staging, problem)
        self.finish(staging if exchanged else None)

    def _swap(self, staging: Path) -> bool:
        """Put the staging tree in the output folder's place; True when swapped in one step (the
        previous tree is then at the staging name), False after two renames (it is the old tree)."""
        root, old = self.places.root, self.places.old
        if renameat2(staging, root, RENAME_EXCHANGE):
            checkpoint("swapped")
            return True
        os.rename(root, old)
        checkpoint("fallback")
        try:
            os.rename(staging, root)
        except OSError:
            with contextlib.suppress(OSError):
                os.rename(old, root)
            raise
        return False

    def finish(self, old_at: Path | None, step: str = "finished") -> None:
        """After the swap: the previous tree goes to the old tree's name, anything not ours that
        reached it late moves into the new site, and the journal goes."""
        places = self.places
        try:
            if old_at is not None:
                if os.path.lexists(places.old):
                    clear_old(self)
                os.rename(old_at, places.old)
            moved, left = sweep(places.old, places.root, read_manifest(places.old, str(places.old / MARKER)))
            checkpoint(step)
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


def write_site(out_dir: Path, files: dict[str, bytes] | list[tuple[str, bytes]], fingerprint: str = "") -> WriteSummary:
    """Replace the site in out_dir with these files, recording the inputs' fingerprint and each
    file's digest in its marker (see the module docstring and OutputFolder.write)."""
    checked_files(files, Path(os.path.realpath(out_dir)))
    with OutputFolder(out_dir) as folder:
        return folder.write(files, fingerprint)
