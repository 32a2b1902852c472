"""What a build sets aside beside the output folder, and what a failed or killed build leaves there:
the trees swept of what gpumem did not write and emptied of what it did, a failed build undone before
its swap, the previous build's old tree, the journal, and the recovery that finishes or undoes a
killed build (steps 2, 4 and 5 of write.py's docstring)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import SITE_KEPT, BuildError
from .folder_ops import Places, checkpoint, identity_of, move_entry, remove_tree
from .marker import BINARY, CLOEXEC, MARKER, NOFOLLOW, NONBLOCK, Manifest, ancestors, error_reason, lstat, read_manifest, scan

if TYPE_CHECKING:
    from .write import OutputFolder


# --- the set-aside trees, by their markers -------------------------------------------------------


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
        move_entry(source, home, relative)
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


def sweep(tree: Path, home: Path | None, manifest: Manifest | None) -> tuple[list[str], list[str]]:
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
            checkpoint("discarding")
    if MARKER in found and found[MARKER].kind != "dir":  # last: a tree left by a build killed meanwhile keeps its marker
        os.unlink(tree / MARKER)
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        if folder in found and found[folder].kind == "dir":
            with contextlib.suppress(OSError):
                os.rmdir(tree / folder)
    with contextlib.suppress(OSError):
        os.rmdir(tree)
    return lstat(tree) is None


# --- a build that failed before its swap ---------------------------------------------------------


def roll_back(places: Places, staging: Path, problem: str) -> None:
    """Undo a build that failed before its swap, then raise its error, saying truthfully what is left."""
    try:
        manifest = read_manifest(staging, str(staging / MARKER))
        _, left = sweep(staging, places.root, manifest)
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


# --- the previous build's tree -------------------------------------------------------------------


def rescue_from_old(folder: OutputFolder) -> None:
    """Move into the site anything not gpumem's that was created in the tree the previous build
    set aside (by a shell still in the old folder, say); harmless if this build then fails."""
    old = folder.places.old
    if os.path.isdir(old) and not os.path.islink(old):
        moved, _ = sweep(old, folder.places.root, read_manifest(old, str(old / MARKER)))
        if moved:
            where = f"from {old.name}, where they were created during the last build"
            folder.note(f"{folder.places.label}: moved {', '.join(moved)} into it {where}")


def clear_old(folder: OutputFolder) -> None:
    """Remove the tree the previous build set aside: its own files; anything else moves into the site."""
    places = folder.places
    old = places.old
    found = lstat(old)
    if found is None:
        return
    if not stat.S_ISDIR(found.st_mode):
        os.unlink(old)
        return
    rescue_from_old(folder)
    manifest = read_manifest(old, str(old / MARKER))
    if not _discard(old, manifest):
        left = _foreign(old, manifest)
        raise BuildError(
            [
                f"{old}: the previous build's copy still holds {', '.join(left) or 'files'}, not written by gpumem, "
                f"that cannot be moved into {places.label} (the name is taken); move them yourself, then delete {old.name}"
            ]
        )


# --- the recovery of a killed build --------------------------------------------------------------


def recover(folder: OutputFolder) -> None:
    """Finish or undo what a killed build left beside the folder, and say what was done."""
    places = folder.places
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
        _resume(folder, journal)
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
            remove_tree(staging)  # no marker yet: nothing was moved in, everything is ours
        elif not _discard(staging, manifest):
            raise BuildError([f"{staging}: holds files gpumem did not write; move them yourself, then delete {name}"])
        folder.note(
            f"{places.label}: a build was killed while it prepared the new site; "
            f"removed its unfinished copy {name} (the site was untouched)"
        )


def _resume(folder: OutputFolder, journal: dict) -> None:
    """A journal means a build was killed between its first move and the end: finish or undo it."""
    places = folder.places
    staging = places.parent / journal["staging"]
    new = (journal["device"], journal["inode"])
    here, there = identity_of(places.root), identity_of(staging)
    if here == new:
        folder.finish(staging if there else None, "recovering")
        folder.note(f"{places.label}: a build was killed just after it swapped in the new site; finished it")
    elif here is None and there == new:
        os.rename(staging, places.root)
        folder.finish(None, "recovering")
        folder.note(f"{places.label}: a build was killed between its two renames, while the folder was missing; put the new site there")
    elif there == new:
        manifest = read_manifest(staging, str(staging / MARKER))
        if manifest is None:
            raise BuildError([f"{places.journal}: its staging folder {staging.name} has no marker; check {places.label}, then delete both"])
        moved, left = sweep(staging, places.root, manifest)
        if left or not _discard(staging, manifest):
            stuck = ", ".join(left) or "everything"
            raise BuildError(
                [f"{staging}: cannot put {stuck} back into {places.label}; move them, then delete it and {places.journal.name}"]
            )
        os.unlink(places.journal)
        back = f"; put back {', '.join(moved)}, not written by gpumem" if moved else ""
        folder.note(f"{places.label}: a build was killed before it swapped in the new site; kept the previous site{back}")
    else:
        raise BuildError([f"{places.journal}: describes a build whose folders are not there; check {places.label}, then delete it"])


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
