"""The writer: only changed bytes are written, only gpumem's own files removed, nothing outside the
folder, no symbolic link followed, and a failed or interrupted write leaves a whole site."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from gpumem import write, write_preview
from gpumem.errors import BuildError
from gpumem.write import MARKER, MOUNT_POINT, OutputFolder, up_to_date, write_site

SITE = {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello", "assets/style.css": b"body{}"}
NEW = {**SITE, "es/index.html": b"hola!", "en/guide/index.html": b"guide"}
KEPT = "1 problem found; the previous site is left as it was."
NOTHING = "1 problem found; nothing was written."


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != MARKER}


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under root, symbolic links not followed: bytes for a file, ("link", target) for
    a link, "dir" for a folder."""
    found: dict[str, object] = {}
    for folder, folders, names in os.walk(root):
        for name in [*folders, *names]:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = "dir"
            else:
                found[relative] = path.read_bytes()
    return dict(sorted(found.items()))


def beside(out: Path) -> list[str]:
    """What the folder's parent holds, the folder included."""
    return sorted(os.listdir(out.parent))


def with_foreign(out: Path) -> None:
    """What a gh-pages worktree holds besides the site."""
    (out / ".git/objects/ab").mkdir(parents=True)
    (out / ".git/HEAD").write_text("ref: refs/heads/gh-pages\n")
    (out / ".git/objects/ab/cdef").write_bytes(b"\x78\x01blob")
    (out / "CNAME").write_text("gpumem.example.org\n")
    (out / ".nojekyll").write_text("")


@pytest.fixture
def fixed_names(monkeypatch):
    """The staging folder's random part made predictable: .site.gpumem-new.<pid>-deadbeef."""
    monkeypatch.setattr(write, "random_part", lambda: "deadbeef")
    return f".site.gpumem-new.{os.getpid()}-deadbeef"


def test_first_write_then_nothing_then_one_change_and_one_removal(tmp_path):
    out = tmp_path / "site"
    first = write_site(out, {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello"})
    assert (first.written, first.unchanged, first.removed) == (3, 0, 0)
    again = write_site(out, {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello"})
    assert (again.written, again.unchanged, again.removed) == (0, 3, 0)
    changed = write_site(out, {"index.html": b"home", "es/index.html": b"hola!"})
    assert (changed.written, changed.unchanged, changed.removed) == (1, 1, 1)
    assert files_under(out) == {"index.html": b"home", "es/index.html": b"hola!"}
    assert not (out / "en").exists()
    assert beside(out) == [".site.gpumem-lock", ".site.gpumem-old", "site"]


def test_unchanged_files_keep_their_modification_time(tmp_path):
    out = tmp_path / "site"
    write_site(out, {"a.html": b"a", "b.html": b"b"})
    before = (out / "a.html").stat().st_mtime_ns
    write_site(out, {"a.html": b"a", "b.html": b"B"})
    assert (out / "a.html").stat().st_mtime_ns == before


def test_the_marker_lists_every_file_with_its_digest(tmp_path):
    out = tmp_path / "site"
    write_site(out, {"b.html": b"b", "a/index.html": b"a"}, "print")
    marker = json.loads((out / MARKER).read_text())
    assert marker["fingerprint"] == "print"
    assert marker["files"] == {
        "a/index.html": "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
        "b.html": "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d",
    }


def test_refuses_to_write_outside_the_folder(tmp_path):
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", {"../escape.html": b"x"})
    assert raised.value.lines == [f"../escape.html: refusing to write outside {(tmp_path / 'site').resolve()}"]
    assert not (tmp_path / "escape.html").exists()


def test_refuses_the_same_path_twice(tmp_path):
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", [("a.html", b"1"), ("a.html", b"2")])
    assert raised.value.lines == ["a.html: written twice in one build"]


def test_refuses_a_path_that_is_both_a_file_and_a_folder_and_the_marker_name(tmp_path):
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", {"a": b"1", "a/index.html": b"2", ".gpumem-site": b"3", "b//c": b"4"})
    assert raised.value.lines == [
        ".gpumem-site: the name of gpumem's own marker; refusing to write it",
        "b//c: not a plain relative path; refusing to write it",
        "a: written both as a file and as a folder in one build",
    ]
    assert not (tmp_path / "site").exists()


def test_refuses_to_build_into_a_folder_it_did_not_build(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path, {"index.html": b"x"})
    assert raised.value.lines == [f"{tmp_path}: not empty and not a gpumem site (no .gpumem-site); refusing to build into it"]
    assert snapshot(tmp_path) == {"notes.txt": b"mine"}


def test_a_folder_holding_only_dotfiles_and_host_files_is_built_into(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    with_foreign(out)
    before = snapshot(out)
    summary = write_site(out, {"index.html": b"home", "es/index.html": b"hola"})
    assert (summary.written, summary.unchanged, summary.removed) == (2, 0, 0)
    assert snapshot(out) == {
        **before,
        ".gpumem-site": (out / MARKER).read_bytes(),
        "es": "dir",
        "es/index.html": b"hola",
        "index.html": b"home",
    }


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "site").write_text("a file")
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", {"index.html": b"x"})
    assert raised.value.lines == [f"{tmp_path / 'site'}: not a folder; refusing to replace it"]


def test_only_files_gpumem_wrote_are_removed(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    (out / "en/notes.txt").write_text("a note beside a page of ours")
    (out / "notes.txt").write_text("mine")
    (out / "drafts").mkdir()
    foreign = {
        k: v for k, v in snapshot(out).items() if k.startswith((".git", ".nojekyll", "CNAME", "drafts", "notes.txt", "en/notes.txt"))
    }
    summary = write_site(out, {"index.html": b"home", "es/index.html": b"hola"})
    assert (summary.written, summary.unchanged, summary.removed) == (0, 2, 2)  # en/index.html and assets/style.css
    assert snapshot(out) == {
        **foreign,
        MARKER: (out / MARKER).read_bytes(),
        "en": "dir",  # kept: it still holds a file gpumem did not write
        "es": "dir",
        "es/index.html": b"hola",
        "index.html": b"home",
    }


def test_a_foreign_file_where_the_build_writes_stops_it_and_touches_nothing(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    (out / "en/guide").mkdir()
    (out / "en/guide/index.html").write_text("my own guide")
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [
        f"{out}/en/guide/index.html: not written by gpumem (not in .gpumem-site) and not what the build writes there; "
        "refusing to replace it (move it away or delete it)"
    ]
    assert str(raised.value.message).endswith("\n" + NOTHING)
    assert snapshot(out) == before
    assert beside(out) == [".site.gpumem-lock", "site"]


def test_foreign_things_in_the_way_of_a_folder_or_a_file_are_named(tmp_path):
    out = tmp_path / "site"
    write_site(out, {"es/index.html": b"hola"})
    (out / "en").write_text("a file where a folder belongs")
    (out / "about.html").mkdir()
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        write_site(out, {"es/index.html": b"hola", "en/index.html": b"hello", "about.html": b"about"})
    assert raised.value.lines == [
        f"{out}/about.html: a folder gpumem did not make stands where the build writes a file; refusing to replace it",
        f"{out}/en: a file gpumem did not write stands where the build needs a folder; refusing to replace it",
    ]
    assert snapshot(out) == before


def test_a_foreign_file_with_the_same_bytes_is_adopted(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    (out / "en/guide").mkdir()
    (out / "en/guide/index.html").write_bytes(b"guide")
    summary = write_site(out, NEW)
    assert (summary.written, summary.unchanged, summary.removed) == (1, 4, 0)
    assert summary.notes == (
        f"{out}/en/guide/index.html: was not written by gpumem but holds the bytes the build writes there; adopted it",
    )
    assert "en/guide/index.html" in json.loads((out / MARKER).read_text())["files"]
    dropped = write_site(out, SITE)
    assert (dropped.written, dropped.unchanged, dropped.removed) == (1, 3, 1)
    assert not (out / "en/guide").exists()


def test_a_symbolic_link_at_a_page_is_replaced_never_followed(tmp_path):
    out = tmp_path / "site"
    outside = tmp_path / "outside.html"
    outside.write_bytes(b"hola!")  # even the very bytes the build writes there
    write_site(out, SITE)
    (out / "es/index.html").unlink()
    (out / "es/index.html").symlink_to(outside)
    summary = write_site(out, NEW)
    assert (summary.written, summary.unchanged, summary.removed) == (2, 3, 0)
    assert outside.read_bytes() == b"hola!"
    assert not (out / "es/index.html").is_symlink()
    assert files_under(out) == NEW


def test_symbolic_links_at_temporary_and_reserved_names_are_never_followed(tmp_path, fixed_names):
    out = tmp_path / "site"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious")
    write_site(out, SITE)
    write_site(out, SITE)  # now with the tree it sets aside, .site.gpumem-old
    links = {
        out / "index.html.tmp": outside / "victim.txt",  # the old writer's temporary name
        out / "es/index.html.tmp": outside / "victim.txt",
        tmp_path / fixed_names: outside,  # this very build's staging folder
        tmp_path / ".site.gpumem-journal": outside / "victim.txt",
        tmp_path / ".site.gpumem-journal.1-0badcafe": outside / "victim.txt",
        tmp_path / ".site.gpumem-lock": outside / "victim.txt",
    }
    for link, target in links.items():
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    (tmp_path / ".site.gpumem-old").rename(tmp_path / "old-tree")
    (tmp_path / ".site.gpumem-old").symlink_to(outside)
    summary = write_site(out, NEW)
    assert (summary.written, summary.unchanged, summary.removed) == (2, 3, 0)
    assert snapshot(outside) == {"victim.txt": b"precious"}
    assert files_under(out) == {**NEW, "index.html.tmp": b"precious", "es/index.html.tmp": b"precious"}  # the links themselves kept
    assert os.readlink(out / "index.html.tmp") == str(outside / "victim.txt")
    assert stat.S_ISREG(os.lstat(tmp_path / ".site.gpumem-lock").st_mode)
    assert stat.S_ISDIR(os.lstat(tmp_path / ".site.gpumem-old").st_mode)
    assert beside(out) == [".site.gpumem-lock", ".site.gpumem-old", "old-tree", "outside", "site"]


def test_a_symbolic_link_at_the_marker_is_never_followed(tmp_path):
    out = tmp_path / "site"
    outside = tmp_path / "outside.json"
    outside.write_text('{"files": {"../outside.json": "0"}}')
    write_site(out, SITE)
    (out / MARKER).unlink()
    (out / MARKER).symlink_to(outside)
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [
        f"{out}/.gpumem-site: a symbolic link, not gpumem's marker; refusing to follow it (delete it, build again)"
    ]
    assert outside.read_text() == '{"files": {"../outside.json": "0"}}'
    assert snapshot(out) == before
    assert up_to_date(out, "") is None


def test_a_symbolic_link_where_a_folder_goes_is_an_error_and_one_elsewhere_is_kept(tmp_path):
    out = tmp_path / "site"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "index.html").write_text("outside")
    write_site(out, SITE)
    (out / "docs").symlink_to(outside)  # not in the build's way: kept, never looked into
    write_site(out, NEW)
    assert os.readlink(out / "docs") == str(outside)
    for relative in ("es/index.html", "es"):
        (out / relative).unlink() if relative.endswith(".html") else (out / relative).rmdir()
    (out / "es").symlink_to(outside)
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}/es: a symbolic link where the build needs a folder; refusing to follow it (remove it)"]
    assert snapshot(outside) == {"index.html": b"outside"}
    assert snapshot(out) == before


def test_up_to_date_never_follows_a_link_nor_removes_anything(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE, "print")
    (out / "stray.html").write_text("not ours")
    summary = up_to_date(out, "print")
    assert summary is not None and (summary.written, summary.unchanged, summary.removed) == (0, 4, 0)
    assert (out / "stray.html").read_text() == "not ours"
    assert up_to_date(out, "other") is None
    (tmp_path / "same.html").write_bytes(b"hola")
    (out / "es/index.html").unlink()
    (out / "es/index.html").symlink_to(tmp_path / "same.html")
    assert up_to_date(out, "print") is None


def test_a_name_too_long_fails_truthfully_and_leaves_the_previous_site(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    write_site(out, {**SITE, "index.html": b"home 2"})
    with_foreign(out)
    before, old = snapshot(out), snapshot(tmp_path / ".site.gpumem-old")
    long = "x" * 300
    with pytest.raises(BuildError) as raised:
        write_site(out, {**NEW, f"es/{long}.html": b"x"})
    assert raised.value.lines == [f"{out}/es/{long}.html: cannot write: File name too long"]
    assert raised.value.message.endswith("\n" + KEPT)
    assert snapshot(out) == before
    assert beside(out) == [".site.gpumem-lock", ".site.gpumem-old", "site"]
    assert snapshot(tmp_path / ".site.gpumem-old") == old  # the last build's copy is kept until one succeeds


@pytest.mark.parametrize(("read_only", "first_refused"), [("es", "es/notes.txt"), ("", ".git")], ids=["sub-folder", "output folder"])
def test_a_move_refused_by_a_read_only_folder_puts_everything_back(tmp_path, monkeypatch, read_only, first_refused):
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    (out / "es/notes.txt").write_text("a note in a folder that turned read-only")
    before = snapshot(out)
    move = write.move_entry

    def refused(source: Path, destination: Path, relative: str) -> None:
        # Tests run as root, whom permission bits do not stop: this is what rename(2) says to
        # anyone else for an entry of a folder without write permission.
        if source == out and relative.rpartition("/")[0] == read_only:
            raise PermissionError(errno.EACCES, "Permission denied", str(source / relative))
        move(source, destination, relative)

    monkeypatch.setattr(write, "move_entry", refused)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}/{first_refused}: cannot move it into the new site: Permission denied"]
    assert raised.value.message.endswith("\n" + KEPT)
    assert snapshot(out) == before  # .git, .nojekyll and CNAME had moved: they are back
    assert beside(out) == [".site.gpumem-lock", "site"]


def test_a_folder_that_cannot_be_made_beside_the_site_is_said(tmp_path, monkeypatch, fixed_names):
    out = tmp_path / "site"
    write_site(out, SITE)
    before = snapshot(out)
    mkdir = os.mkdir

    def read_only_parent(path, *args, **kwargs):
        if str(path).startswith(str(tmp_path / ".site.gpumem-new.")):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only_parent)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}: cannot create {fixed_names} beside it: Read-only file system"]
    assert raised.value.message.endswith("\n" + NOTHING)
    assert snapshot(out) == before


def test_a_lock_file_that_cannot_be_made_names_the_reason(tmp_path, monkeypatch):
    opened = os.open

    def read_only_parent(path, *args, **kwargs):
        if str(path) == str(tmp_path / ".site.gpumem-lock"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_parent)
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", SITE)
    assert raised.value.lines == [
        f"{tmp_path / 'site'}: cannot create its lock file {tmp_path / '.site.gpumem-lock'}: Permission denied; "
        "gpumem builds the new site beside the output folder and swaps it in, so the folder that holds it must be writable"
    ]


def test_a_mount_point_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    out = tmp_path / "site"
    write_site(out, SITE)
    before = snapshot(out)
    ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: str(path) == str(out) or ismount(path))
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}: {MOUNT_POINT}"]
    assert snapshot(out) == before


def test_a_swap_refused_as_busy_puts_everything_back(tmp_path, monkeypatch):
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    before = snapshot(out)
    renameat2 = write.renameat2

    def busy(source: Path, destination: Path, flags: int) -> bool:
        if flags == write.RENAME_EXCHANGE:  # what a mount point answers
            raise OSError(errno.EBUSY, "Device or resource busy", str(source))
        return renameat2(source, destination, flags)

    monkeypatch.setattr(write, "renameat2", busy)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}: {MOUNT_POINT}"]
    assert raised.value.message.endswith("\n" + KEPT)
    assert snapshot(out) == before
    assert beside(out) == [".site.gpumem-lock", "site"]


def test_without_an_atomic_exchange_two_renames_do_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMEM_WRITE_TEST", "no-exchange")
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    foreign = {k: v for k, v in snapshot(out).items() if k.startswith((".git", ".nojekyll", "CNAME"))}
    summary = write_site(out, NEW)
    assert (summary.written, summary.unchanged, summary.removed) == (2, 3, 0)
    assert files_under(out) == {**NEW, **{k: v for k, v in foreign.items() if isinstance(v, bytes)}}
    assert beside(out) == [".site.gpumem-lock", ".site.gpumem-old", "site"]


def test_a_failed_second_rename_puts_the_previous_site_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMEM_WRITE_TEST", "no-exchange")
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    before = snapshot(out)
    rename = os.rename

    def refused(source, destination, *args, **kwargs):
        if str(destination) == str(out) and ".gpumem-new." in str(source):
            raise OSError(errno.EIO, "Input/output error", str(source))
        return rename(source, destination, *args, **kwargs)

    monkeypatch.setattr(os, "rename", refused)
    with pytest.raises(BuildError) as raised:
        write_site(out, NEW)
    assert raised.value.lines == [f"{out}: cannot swap in the new site: Input/output error"]
    assert raised.value.message.endswith("\n" + KEPT)
    assert snapshot(out) == before
    assert beside(out) == [".site.gpumem-lock", "site"]


def test_the_folders_keep_their_permissions(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    os.chmod(out, 0o750)
    os.chmod(out / "es", 0o700)
    write_site(out, NEW)
    assert (stat.S_IMODE(os.stat(out).st_mode), stat.S_IMODE(os.stat(out / "es").st_mode)) == (0o750, 0o700)
    os.chmod(out, 0o555)  # a read-only output folder holding only gpumem's files is rebuilt, and stays read-only
    summary = write_site(out, SITE)
    assert (summary.written, summary.unchanged, summary.removed) == (1, 3, 1)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o555


def test_the_previous_tree_is_kept_until_the_next_build(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    write_site(out, NEW)
    assert files_under(tmp_path / ".site.gpumem-old") == SITE
    assert (tmp_path / ".site.gpumem-old/index.html").stat().st_ino == (out / "index.html").stat().st_ino  # unchanged: one file
    write_site(out, SITE)
    assert files_under(tmp_path / ".site.gpumem-old") == NEW


def test_something_created_in_the_previous_tree_is_moved_into_the_site(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    write_site(out, NEW)
    (tmp_path / ".site.gpumem-old/es/late.txt").write_text("saved in the old folder by a shell that was in it")
    summary = write_site(out, SITE)
    assert summary.notes == (f"{out}: moved es/late.txt into it from .site.gpumem-old, where they were created during the last build",)
    assert (out / "es/late.txt").read_text() == "saved in the old folder by a shell that was in it"


def test_a_second_writer_stops_at_once_naming_the_first(tmp_path):
    out = tmp_path / "site"
    write_site(out, SITE)
    before = snapshot(out)
    with OutputFolder(out):
        with pytest.raises(BuildError) as raised:
            write_site(out, NEW)
    assert raised.value.lines == [f"{out}: another gpumem build (pid {os.getpid()}) is writing this folder; try again when it ends"]
    assert raised.value.message.endswith("\n" + NOTHING)
    assert snapshot(out) == before
    assert write_site(out, NEW).written == 2  # the lock went with its holder


class Killed(BaseException):
    """Stands for SIGKILL: no handler of the writer catches it, so it leaves what a kill leaves."""


# The step a build dies at; what the folder shows then; what the next build says it did.
KILLS = [
    ("locked", "old", None),
    (
        "staged",
        "old",
        "{out}: a build was killed while it prepared the new site; removed its unfinished copy {staging} (the site was untouched)",
    ),
    ("journal", "old", "{out}: a build was killed before it swapped in the new site; kept the previous site"),
    (
        "moving",
        "old",
        "{out}: a build was killed before it swapped in the new site; kept the previous site; put back .git, not written by gpumem",
    ),
    ("swapped", "new", "{out}: a build was killed just after it swapped in the new site; finished it"),
    ("finished", "new", "{out}: a build was killed just after it swapped in the new site; finished it"),
    ("fallback", None, "{out}: a build was killed between its two renames, while the folder was missing; put the new site there"),
]


def tree_of(files: dict[str, bytes], fingerprint: str = "") -> dict[str, object]:
    """The snapshot of a folder holding exactly what a build of these files writes."""
    tree: dict[str, object] = {folder: "dir" for folder in write.ancestors(files)}
    tree.update(files)
    tree[MARKER] = write.manifest_bytes(files, fingerprint)
    return dict(sorted(tree.items()))


@pytest.mark.parametrize(("step", "shows", "said"), KILLS, ids=[kill[0] for kill in KILLS])
def test_a_write_killed_at_any_step_leaves_a_whole_site_and_the_next_one_recovers(tmp_path, monkeypatch, fixed_names, step, shows, said):
    out = tmp_path / "site"
    write_site(out, SITE)
    with_foreign(out)
    foreign = {k: v for k, v in snapshot(out).items() if k not in tree_of(SITE)}
    assert sorted(foreign) == [".git", ".git/HEAD", ".git/objects", ".git/objects/ab", ".git/objects/ab/cdef", ".nojekyll", "CNAME"]

    def die(name: str) -> None:
        if name == step:
            raise Killed

    if step == "fallback":
        monkeypatch.setenv("GPUMEM_WRITE_TEST", "no-exchange")
    monkeypatch.setattr(write, "checkpoint", die)
    with pytest.raises(Killed):
        write_site(out, NEW)
    if shows is None:
        assert not out.exists()  # the instant between the two renames
    else:
        left = snapshot(out)
        assert {k: v for k, v in left.items() if k not in foreign} == tree_of(SITE if shows == "old" else NEW)
        away = {k: v for k, v in foreign.items() if k not in left}
        assert sorted(away) == (
            [".git", ".git/HEAD", ".git/objects", ".git/objects/ab", ".git/objects/ab/cdef"] if step == "moving" else []
        )
        assert all(snapshot(tmp_path / fixed_names).get(k) == v for k, v in away.items())  # in the journaled staging folder
        assert {k: v for k, v in left.items() if k in foreign} == {k: v for k, v in foreign.items() if k not in away}
    monkeypatch.setattr(write, "checkpoint", lambda name: None)
    monkeypatch.delenv("GPUMEM_WRITE_TEST", raising=False)
    summary = write_site(out, NEW)
    assert summary.notes == ((said.format(out=out, staging=fixed_names),) if said else ())
    assert (summary.written, summary.unchanged, summary.removed) == ((2, 3, 0) if shows == "old" else (0, 5, 0))
    assert snapshot(out) == {**tree_of(NEW), **foreign}
    assert beside(out) == [".site.gpumem-lock", ".site.gpumem-old", "site"]


def test_the_preview_writer_replaces_files_where_they_stand(tmp_path):
    """write_in_place (the preview's own folder): changed files only, stale ones and the folders they
    leave empty removed, and a marker a later check reads as the folder's."""
    out = tmp_path / "site"
    out.mkdir()
    first = write_preview.write_in_place(out, {"index.html": b"home", "es/index.html": b"hola", "en/a/index.html": b"a"}, "one")
    assert (first.written, first.unchanged, first.removed) == (3, 0, 0)
    home = (out / "index.html").stat().st_ino
    second = write_preview.write_in_place(out, {"index.html": b"home", "es/index.html": b"hola!"}, "two")
    assert (second.written, second.unchanged, second.removed) == (1, 1, 1)
    assert (out / "index.html").stat().st_ino == home  # unchanged: not written again
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [".gpumem-site", "es", "es/index.html", "index.html"]
    assert (out / "es/index.html").read_bytes() == b"hola!"
    assert up_to_date(out, "two") == write.WriteSummary(0, 2, 0, (), 2)
    (out / "index.html").write_bytes(b"changed by hand")
    third = write_preview.write_in_place(out, {"index.html": b"home", "es/index.html": b"hola!"}, "two")
    assert (third.written, (out / "index.html").read_bytes()) == (1, b"home")
