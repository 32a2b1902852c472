"""Stage 5, the only code that touches the output path: every build publishes a whole new version of
the site behind one symbolic link.

Say the output path is `P/site`. Everything gpumem keeps is in its hidden folder beside it,
`P/.site.gpumem/` (0755 whatever the umask, as are the folders above it that a build makes: the
web server reads the site through them):

- `lock`, locked (fcntl.flock; msvcrt on Windows) while a build runs: a second build into the same
  output stops at once, naming the first one's pid. The system drops the lock when its holder dies.
- `v<N>/`, version N of the site: its files 0644 and folders 0755 whatever the umask, a file whose
  bytes are the live version's being a hard link to it (it keeps its inode and modification time).
- `v<N>.json`, the record of version N, written once the version is whole: each file with its size
  and modification time, the digest of the inputs it was built from and the facts the no-change
  check needs (output/fingerprint.py). A version folder without a record is unfinished.
- `P/site` itself is a symbolic link to `.site.gpumem/v<N>`. A build points a temporary link at its
  new version and renames it over `P/site` (os.replace: one atomic step), so whoever opens a path
  below `P/site` reads the whole old site or the whole new one, never a mix of the two.

Which versions stay: the live one, the one before it (a reader who resolved the link before the
last flip, a shell inside it, goes on reading a whole site) and one more. That third one is not
removed but reused by the next build as the folder of its new version: its files are relinked or
rewritten where they changed, and its 340 folders stay. Removing a version's folders costs 0.5-1 s
on a disk mounted with `discard` (measured: 2 ms per rmdir here), reusing it a few milliseconds.
A reader still inside a version two flips old sees it change. A build never writes into an
existing file (a hard link shares its bytes with the live version): it unlinks and creates.

What a kill at any moment leaves: `P/site` pointing at a whole recorded version, and at most an
unfinished version (or a recorded one never published), which the next build reuses or removes,
and says so. gpumem removes only its own names in its own folder, from a recorded version only the
files its record lists (one holding anything else is kept and named), and nothing in the live
site: a file there that no build wrote (added by hand, the `.git` of a gh-pages worktree) stops
the build, naming it and where it belongs (the pass-through folder, output/hosting.py; `gpumem gh-deploy`
for a repository).

The earlier writer left `P/site` a real folder with a marker, `.gpumem-site`, listing the files it
wrote. The first build on it checks that it holds nothing else (or stops, naming what it holds),
moves it into the hidden folder as an unfinished version and renames the link into its place: the
one instant `P/site` is missing. The earlier writer's `.site.gpumem-old` and `.site.gpumem-lock`
beside it are removed (the former by its own marker).

Not guaranteed: durability across a power cut (nothing is fsynced); an upload that walks `P/site`
file by file across a flip (rsync) can mix two versions: upload the resolved version
(`os.path.realpath`), as `gpumem gh-deploy` does. A file edited in place through `P/site` changes
in every version that shares its inode. Hand-written: the generators we know clean and rewrite their
output folder, and no library publishes versions behind a link.

The test hook's steps (tree.checkpoint): locked, writing (after each file), recorded, migrating
(between the earlier writer's folder moved aside and the link renamed into its place), flipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from gpumem.errors import NOTHING_WRITTEN, SITE_KEPT, BuildError
from gpumem.options import WriteSummary
from gpumem.output.tree import (
    BINARY,
    FILE_MODE,
    FOLDER_MODE,
    OLD_MARKER,
    TEMPORARY,
    ancestors,
    checked_files,
    checkpoint,
    clear_earlier_writer,
    count_pages,
    foreign,
    make_folders,
    marked,
    remove,
    same_bytes,
    scan,
    try_lock,
    write_file,
)

VERSION = re.compile(r"v([0-9]{1,9})")
RECORD = re.compile(r"v([0-9]{1,9})\.json")
Record = tuple[str, dict[str, object], dict[str, tuple[int, int]]]  # fingerprint, facts, files' sizes and times


def read_record(path: Path) -> Record | None:
    """A version's record: the inputs' fingerprint, the facts about them and each file's size and
    modification time; None when there is none or it is not one."""
    try:
        data = json.loads(path.read_bytes())
        files = {name: (size, mtime) for name, (size, mtime) in data["files"].items() if isinstance(size, int) and isinstance(mtime, int)}
        return str(data["fingerprint"]), dict(data["inputs"]), files
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


class Output:
    """The output path; locked for the length of a `with` block, in which `publish` writes."""

    def __init__(self, out: Path, report: Callable[[str], None] | None = None, host: str = "host") -> None:
        absolute = Path(os.path.abspath(out))
        if not absolute.name:
            raise BuildError([f"{out}: the root of the filesystem; build into a folder below it"])
        self.label, self.host, self.report = str(out), host, report
        self.link = Path(os.path.realpath(absolute.parent)) / absolute.name
        self.hidden = self.link.parent / f".{self.link.name}.gpumem"
        self.notes: list[str] = []
        self._fd: int | None = None

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self.report:
            self.report(text)

    def live(self) -> str | None:
        """The version the output path links to, or None when it is no link of gpumem's."""
        try:
            folder, name = os.path.split(os.readlink(self.link))
        except OSError:
            return None
        return name if folder == self.hidden.name and VERSION.fullmatch(name) else None

    def published(self, fingerprint: str, accept: Callable[[dict[str, object]], bool]) -> WriteSummary | None:
        """The summary of a build that would change nothing: the live version was built from inputs
        of this fingerprint, whose facts `accept` takes, and each file is as recorded. Reads only."""
        version = self.live()
        record = read_record(self.hidden / f"{version}.json") if version else None
        if record is None or record[0] != fingerprint or not accept(record[1]):
            return None
        try:
            found = scan(self.hidden / str(version), ancestors(record[2]))
        except OSError:
            return None
        if foreign(found, record[2]) or any(
            name not in found or (found[name].st_size, found[name].st_mtime_ns) != sizes for name, sizes in record[2].items()
        ):
            return None
        return WriteSummary(0, len(record[2]), 0, (), count_pages(record[2]))

    def __enter__(self) -> Output:
        try:
            make_folders(self.hidden)
            if stat.S_IMODE(os.stat(self.hidden).st_mode) != FOLDER_MODE:  # made by an earlier build under a umask
                os.chmod(self.hidden, FOLDER_MODE)
            fd = os.open(self.hidden / "lock", os.O_RDWR | os.O_CREAT | BINARY, FILE_MODE)
        except OSError as error:
            raise BuildError(
                [f"{self.label}: cannot create {self.hidden}, where gpumem keeps the site's versions: {error.strerror}"]
            ) from None
        if not try_lock(fd):
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() if hasattr(os, "pread") else ""
            os.close(fd)
            who = f"another gpumem build (pid {holder})" if holder.isdigit() else "another gpumem build"
            raise BuildError([f"{self.label}: {who} is writing this folder; try again when it ends"])
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as error:  # a full disk (ENOSPC), say: the lock is released with the file
            os.close(fd)
            raise BuildError([f"{self.label}: cannot write the lock {self.hidden / 'lock'}: {error.strerror}"]) from None
        self._fd = fd
        try:
            checkpoint("locked")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exception: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # which releases the lock
            self._fd = None

    def publish(self, files: dict[str, bytes], fingerprint: str = "", facts: dict[str, object] | None = None) -> WriteSummary:
        """Write these files as a new version, record it and flip the link to it (see the module
        docstring); the summary counts the files against the live version."""
        assert self._fd is not None, "publish inside `with Output(...)`"
        targets = checked_files(files)
        live, listed = self._live_files()
        try:
            version, folder = self._folder_for_new_version()
            unchanged = self._fill(folder, targets, live)
            self._record(version, targets, fingerprint, facts or {})
        except OSError as error:
            raise BuildError([f"{error.filename}: cannot write: {error.strerror}"], SITE_KEPT if live else NOTHING_WRITTEN) from None
        checkpoint("recorded")
        self._flip(version, legacy=live == self.link)
        checkpoint("flipped")
        removed = len(listed - set(targets) - {OLD_MARKER})
        return WriteSummary(len(targets) - unchanged, unchanged, removed, tuple(self.notes), count_pages(targets))

    def _live_files(self) -> tuple[Path | None, set[str]]:
        """The live site's folder and the files gpumem wrote there; a BuildError naming anything else in it."""
        version = self.live()
        if version is not None and os.path.isdir(self.hidden / version):
            record = read_record(self.hidden / f"{version}.json")
            if record is None:
                raise BuildError([f"{self.hidden}/{version}.json: missing or unreadable, so which files gpumem wrote is unknown"])
            tree, listed = self.hidden / version, set(record[2])
        elif version is not None or not os.path.lexists(self.link):
            return None, set()  # nothing there, or a link to a version removed by hand
        elif os.path.islink(self.link):
            raise BuildError([f"{self.label}: a symbolic link to {os.readlink(self.link)}, not to a version gpumem built; remove it"])
        elif not os.path.isdir(self.link):
            raise BuildError([f"{self.label}: not a folder; refusing to replace it"])
        else:
            tree, listed = self.link, marked(self.link)  # the earlier writer's folder
        stray = foreign(scan(tree, ancestors(listed)), listed)
        if stray:
            raise BuildError([self._misplaced(relative) for relative in stray])
        return tree, listed

    def _misplaced(self, relative: str) -> str:
        shown = Path(self.label) / relative
        if relative == ".git":
            return (
                f"{shown}: a Git repository inside the output folder, which every build replaces; move it out "
                "and publish with `gpumem gh-deploy` (it commits the site to the gh-pages branch)"
            )
        return f"{shown}: not written by gpumem; move it into {self.host}/, whose files every build copies into the site"

    def _folder_for_new_version(self) -> tuple[str, Path]:
        """The next version's name and folder: an unfinished version (a killed build's) or the oldest
        recorded one but the live version and the one before it, renamed; else a new folder.
        Temporary names, records whose version is gone and further spare versions are removed."""
        names = os.listdir(self.hidden)
        numbers = {int(match[1]): name for name in names if (match := VERSION.fullmatch(name)) and os.path.isdir(self.hidden / name)}
        recorded = {number for number, name in numbers.items() if f"{name}.json" in names}
        live = int(name[1:]) if (name := self.live()) and int(name[1:]) in numbers else None
        keep = {live, max((n for n in recorded if live is not None and n < live), default=None)}
        for name in names:
            if name.startswith(TEMPORARY) or ((match := RECORD.fullmatch(name)) and int(match[1]) not in numbers):
                with contextlib.suppress(OSError):
                    os.unlink(self.hidden / name)
        reuse = None
        for number in sorted(set(numbers) - keep, key=lambda n: (n in recorded, n)):  # the unfinished first
            if number in recorded and not self._holds_only_its_files(numbers[number]):
                continue
            if reuse is not None:
                remove(self.hidden / numbers[number])
                continue
            reuse = number
            if number not in recorded:
                self.note(f"{self.label}: reused {self.hidden.name}/{numbers[number]}, left unfinished by a build that was stopped")
        version = f"v{max(numbers, default=0) + 1}"
        folder = self.hidden / version
        if reuse is None:
            os.mkdir(folder)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.hidden / f"{numbers[reuse]}.json")  # first: from here on it is unfinished
            os.rename(self.hidden / numbers[reuse], folder)
        os.chmod(folder, FOLDER_MODE)
        return version, folder

    def _holds_only_its_files(self, version: str) -> bool:
        """Whether a recorded version holds only what its record lists; if not it is kept, and named."""
        record = read_record(self.hidden / f"{version}.json")
        listed = record[2] if record else {}
        stray = foreign(scan(self.hidden / version, ancestors(listed)), listed)
        if stray:
            self.note(f"{self.label}: kept {self.hidden.name}/{version}: it holds {', '.join(stray)}, not written by gpumem; move them")
        return not stray

    def _fill(self, folder: Path, targets: dict[str, bytes], live: Path | None) -> int:
        """Make a folder of gpumem's hold exactly these files, each unchanged since the live version
        a hard link to it; the number of those. What the folder held stays only where it is the
        very file (or folder) wanted; anything else is unlinked, never written into."""
        found = scan(folder)
        folders = ancestors(targets)
        gone: set[str] = set()
        for relative, info in sorted(found.items()):  # a folder before what it holds
            wanted = stat.S_ISDIR(info.st_mode) if relative in folders else relative in targets and stat.S_ISREG(info.st_mode)
            mode = FOLDER_MODE if relative in folders else FILE_MODE
            if relative.rpartition("/")[0] in gone:
                gone.add(relative)
            elif not wanted:
                gone.add(relative)
                remove(folder / relative)
            elif stat.S_IMODE(info.st_mode) != mode:
                os.chmod(folder / relative, mode)
        for relative in sorted((folders - set(found)) | (folders & gone)):
            os.mkdir(folder / relative)
            os.chmod(folder / relative, FOLDER_MODE)
        unchanged = 0
        for relative, content in targets.items():
            path, had = folder / relative, None if relative in gone else found.get(relative)
            source = live / relative if live is not None and same_bytes(live / relative, content) else None
            if source is not None:
                unchanged += 1
                original = os.lstat(source)
                if had is None or (had.st_dev, had.st_ino) != (original.st_dev, original.st_ino):
                    self._link(source, path, content, had is not None)
            elif had is None or not same_bytes(path, content):
                if had is not None:
                    os.unlink(path)
                write_file(path, content)
            checkpoint("writing")
        return unchanged

    def _link(self, source: Path, path: Path, content: bytes, replace: bool) -> None:
        """A hard link to the live version's file; a copy where the file system has none."""
        if replace:
            os.unlink(path)
        try:
            os.link(source, path)  # a regular file: same_bytes looked
        except OSError:
            write_file(path, content)

    def _record(self, version: str, names: Iterable[str], fingerprint: str, facts: dict[str, object]) -> None:
        """The version's record, renamed into place once it is whole."""
        files = {}
        for relative in names:
            info = os.lstat(self.hidden / version / relative)
            if stat.S_IMODE(info.st_mode) != FILE_MODE:  # a file of the earlier writer's, linked
                os.chmod(self.hidden / version / relative, FILE_MODE)
            files[relative] = [info.st_size, info.st_mtime_ns]
        about = "gpumem's record of a version of the site: its files, and what it was built from"
        record = {"about": about, "fingerprint": fingerprint, "inputs": facts, "files": files}
        temporary = self.hidden / f"{TEMPORARY}{os.getpid()}-record"
        write_file(temporary, (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode())
        os.replace(temporary, self.hidden / f"{version}.json")

    def _flip(self, version: str, legacy: bool) -> None:
        """Point the output path at the version: a new link renamed over it. The earlier writer's
        real folder is moved aside first, recorded by its marker for the next build to reuse."""
        temporary = self.hidden / f"{TEMPORARY}{os.getpid()}-link"
        moved = self.hidden / f"v{int(version[1:]) + 1}"
        try:
            os.symlink(os.path.join(self.hidden.name, version), temporary, target_is_directory=True)
            if legacy:
                os.rename(self.link, moved)
                checkpoint("migrating")
            os.replace(temporary, self.link)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if legacy and not os.path.lexists(self.link):
                os.rename(moved, self.link)
            raise BuildError([f"{self.label}: cannot put the new site in place: {error.strerror}"], SITE_KEPT) from None
        if legacy:
            with contextlib.suppress(OSError, BuildError):
                self._record(moved.name, {name for name in marked(moved) if os.path.lexists(moved / name)}, "", {})
            if not clear_earlier_writer(self.link):
                self.note(
                    f"{self.label}: kept .{self.link.name}.gpumem-old, the earlier writer's copy: it holds files gpumem did not write"
                )
