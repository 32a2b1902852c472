"""The writer (output/versions.py, output/tree.py): every build a whole new version behind one link, unchanged
files hard-linked, nothing it did not write removed or replaced, and a build killed at any step
leaves a whole site that the next build takes over."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from gpumem.errors import BuildError
from gpumem.output import versions
from gpumem.output.tree import write_in_place
from gpumem.output.versions import Output

SITE = {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello", "assets/style.css": b"body{}"}
NEW = {**SITE, "es/index.html": b"hola!", "en/guide/index.html": b"guide"}
KEPT = "1 problem found; the previous site is left as it was."
NOTHING = "1 problem found; nothing was written."


def publish(out: Path, files: dict[str, bytes], fingerprint: str = "", notes: list[str] | None = None) -> versions.WriteSummary:
    """One build's write: lock, publish, unlock."""
    with Output(out, notes.append if notes is not None else None) as output:
        return output.publish(files, fingerprint, {"about": "the inputs"})


def files_under(root: Path) -> dict[str, bytes]:
    """Every file below root (a link to a folder followed), by its relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def snapshot(root: Path) -> dict[str, object]:
    """Every entry below a real folder, links not followed: bytes, ("link", target) or "dir"."""
    found: dict[str, object] = {}
    for folder, folders, names in os.walk(root):
        for name in [*folders, *names]:
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            found[relative] = ("link", os.readlink(path)) if path.is_symlink() else "dir" if path.is_dir() else path.read_bytes()
    return dict(sorted(found.items()))


def hidden(out: Path) -> list[str]:
    return sorted(os.listdir(out.parent / f".{out.name}.gpumem"))


def old_layout(out: Path, files: dict[str, bytes], extra: dict[str, bytes] | None = None) -> None:
    """A folder as gpumem's earlier writer left it: the files, and its marker listing them with their sha256."""
    for relative, content in {**files, **(extra or {})}.items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_bytes(content)
    listed = {relative: hashlib.sha256(content).hexdigest() for relative, content in sorted(files.items())}
    about = "Built by gpumem: it removes or replaces only the files listed here; anything else in this folder is left alone."
    (out / ".gpumem-site").write_text(json.dumps({"about": about, "fingerprint": "f" * 64, "files": listed}))


def test_each_build_is_a_new_version_behind_one_link(tmp_path):
    out = tmp_path / "site"
    first = publish(out, {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello"})
    assert (first.written, first.unchanged, first.removed, first.pages) == (3, 0, 0, 3)
    assert os.readlink(out) == ".site.gpumem/v1"
    again = publish(out, {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello"})
    assert (again.written, again.unchanged, again.removed) == (0, 3, 0)
    changed = publish(out, {"index.html": b"home", "es/index.html": b"hola!"})
    assert (changed.written, changed.unchanged, changed.removed) == (1, 1, 1)
    assert os.readlink(out) == ".site.gpumem/v3"
    assert files_under(out) == {"index.html": b"home", "es/index.html": b"hola!"}
    assert files_under(tmp_path / ".site.gpumem/v2") == {"index.html": b"home", "es/index.html": b"hola", "en/index.html": b"hello"}
    assert sorted(os.listdir(tmp_path)) == [".site.gpumem", "site"]
    assert hidden(out) == ["lock", "v1", "v1.json", "v2", "v2.json", "v3", "v3.json"]


def test_unchanged_files_are_hard_links_to_the_live_version(tmp_path):
    out = tmp_path / "site"
    publish(out, {"a.html": b"a", "b.html": b"b"})
    before = os.stat(out / "a.html")
    publish(out, {"a.html": b"a", "b.html": b"B"})
    after = os.stat(out / "a.html")
    assert (after.st_ino, after.st_mtime_ns, after.st_nlink) == (before.st_ino, before.st_mtime_ns, 2)
    assert os.stat(out / "b.html").st_ino != os.stat(tmp_path / ".site.gpumem/v1/b.html").st_ino


def test_the_live_version_the_one_before_and_one_spare_stay_and_the_spare_is_reused(tmp_path):
    out = tmp_path / "site"
    sites = [{"index.html": f"home {n}".encode(), "es/index.html": b"hola"} for n in range(5)]
    for site in sites:
        publish(out, site)
    assert hidden(out) == ["lock", "v3", "v3.json", "v4", "v4.json", "v5", "v5.json"]
    assert [files_under(tmp_path / f".site.gpumem/v{n}") for n in (3, 4, 5)] == sites[2:]
    spare = os.stat(tmp_path / ".site.gpumem/v3/es")
    publish(out, {"index.html": b"home 5", "es/index.html": b"hola"})
    assert hidden(out) == ["lock", "v4", "v4.json", "v5", "v5.json", "v6", "v6.json"]
    assert os.stat(out / "es").st_ino == spare.st_ino  # v3's folders, reused
    assert os.stat(out / "es/index.html").st_ino == os.stat(tmp_path / ".site.gpumem/v5/es/index.html").st_ino


@pytest.mark.parametrize("umask", [0o077, 0o000])
def test_files_are_0644_and_folders_0755_whatever_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        publish(tmp_path / "site", SITE)
        publish(tmp_path / "site", NEW)
    finally:
        os.umask(previous)
    version = tmp_path / ".site.gpumem/v2"
    modes = {relative: stat.S_IMODE(os.lstat(version / relative).st_mode) for relative in ["", *snapshot(version)]}
    assert modes == {
        "": 0o755,
        "assets": 0o755,
        "assets/style.css": 0o644,
        "en": 0o755,
        "en/guide": 0o755,
        "en/guide/index.html": 0o644,
        "en/index.html": 0o644,
        "es": 0o755,
        "es/index.html": 0o644,
        "index.html": 0o644,
    }


def test_the_record_holds_each_file_the_fingerprint_and_the_facts_outside_the_site(tmp_path):
    out = tmp_path / "site"
    publish(out, {"b.html": b"bb", "a/index.html": b"a"}, "print")
    record = json.loads((tmp_path / ".site.gpumem/v1.json").read_text())
    found = {name: os.stat(out / name) for name in ("a/index.html", "b.html")}
    assert record == {
        "about": "gpumem's record of a version of the site: its files, and what it was built from",
        "fingerprint": "print",
        "inputs": {"about": "the inputs"},
        "files": {name: [info.st_size, info.st_mtime_ns] for name, info in found.items()},
    }
    assert sorted(files_under(out)) == ["a/index.html", "b.html"]


def test_the_no_change_check_reads_the_record_and_notices_an_edited_file(tmp_path):
    out = tmp_path / "site"
    publish(out, SITE, "print")
    summary = Output(out).published("print", lambda facts: facts == {"about": "the inputs"})
    assert summary == versions.WriteSummary(0, 4, 0, (), 3)
    assert Output(out).published("other", lambda facts: True) is None
    assert Output(out).published("print", lambda facts: False) is None
    (out / "es/index.html").write_bytes(b"HOLA")  # the same size, a new time
    assert Output(out).published("print", lambda facts: True) is None
    assert publish(out, SITE).written == 1


def test_refuses_paths_outside_the_site_and_a_path_both_file_and_folder(tmp_path):
    with pytest.raises(BuildError) as raised:
        publish(tmp_path / "site", {"../escape.html": b"x", "/etc/x": b"x", "a": b"1", "a/index.html": b"2", "b//c": b"4"})
    assert raised.value.lines == [
        "../escape.html: not a plain relative path inside the site; refusing to write it",
        "/etc/x: not a plain relative path inside the site; refusing to write it",
        "b//c: not a plain relative path inside the site; refusing to write it",
        "a: written both as a file and as a folder in one build",
    ]
    assert not (tmp_path / "escape.html").exists() and not (tmp_path / "site").exists()


def test_a_folder_gpumem_did_not_make_stops_the_build_naming_each_entry_and_where_it_belongs(tmp_path):
    out = tmp_path / "site"
    (out / ".git/objects").mkdir(parents=True)
    (out / ".git/HEAD").write_text("ref: refs/heads/gh-pages\n")
    (out / "CNAME").write_text("gpumem.example.org\n")
    (out / "drafts").mkdir()
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        publish(out, SITE)
    assert raised.value.lines == [
        f"{out}/.git: a Git repository inside the output folder, which every build replaces; move it out and publish with "
        "`gpumem gh-deploy` (it commits the site to the gh-pages branch)",
        f"{out}/CNAME: not written by gpumem; move it into host/, whose files every build copies into the site",
        f"{out}/drafts: not written by gpumem; move it into host/, whose files every build copies into the site",
    ]
    assert raised.value.message.endswith("\n3 problems found; nothing was written.")
    assert snapshot(out) == before


def test_an_empty_folder_becomes_the_link(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    assert publish(out, SITE).written == 4
    assert os.readlink(out) == ".site.gpumem/v1" and files_under(out) == SITE


def test_a_file_or_a_foreign_link_at_the_output_path_is_refused(tmp_path):
    (tmp_path / "site").write_text("a file")
    with pytest.raises(BuildError) as raised:
        publish(tmp_path / "site", SITE)
    assert raised.value.lines == [f"{tmp_path / 'site'}: not a folder; refusing to replace it"]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BuildError) as raised:
        publish(tmp_path / "link", SITE)
    assert raised.value.lines == [
        f"{tmp_path / 'link'}: a symbolic link to {tmp_path / 'elsewhere'}, not to a version gpumem built; remove it"
    ]
    assert os.listdir(tmp_path / "elsewhere") == [] and (tmp_path / "site").read_text() == "a file"


def test_a_file_added_to_the_live_site_stops_the_build_and_stays(tmp_path):
    out = tmp_path / "site"
    publish(out, SITE)
    (out / "en/notes.txt").write_text("mine")
    (out / "es/index.html").unlink()  # a file of gpumem's gone: rewritten, no harm
    with pytest.raises(BuildError) as raised:
        publish(out, NEW)
    assert raised.value.lines == [
        f"{out}/en/notes.txt: not written by gpumem; move it into host/, whose files every build copies into the site"
    ]
    assert raised.value.message.endswith("\n" + NOTHING)
    assert os.readlink(out) == ".site.gpumem/v1" and (out / "en/notes.txt").read_text() == "mine"
    (out / "en/notes.txt").unlink()
    summary = publish(out, NEW)
    assert (summary.written, summary.unchanged, summary.removed) == (2, 3, 0)


def test_a_build_on_the_earlier_writer_s_folder_turns_it_into_the_link(tmp_path):
    out = tmp_path / "site"
    old_layout(out, SITE)
    before = {relative: os.stat(out / relative).st_ino for relative in SITE}
    old_layout(tmp_path / ".site.gpumem-old", {**SITE, "index.html": b"older home"})  # its previous tree
    (tmp_path / ".site.gpumem-lock").write_text("")
    notes: list[str] = []
    summary = publish(out, NEW, notes=notes)
    assert (summary.written, summary.unchanged, summary.removed, notes) == (2, 3, 0, [])
    assert os.readlink(out) == ".site.gpumem/v1" and files_under(out) == NEW
    assert os.stat(out / "index.html").st_ino == before["index.html"]  # linked, not copied
    assert sorted(os.listdir(tmp_path)) == [".site.gpumem", "site"]
    assert hidden(out) == ["lock", "v1", "v1.json", "v2", "v2.json"]  # the earlier folder, recorded by its marker
    assert sorted(json.loads((tmp_path / ".site.gpumem/v2.json").read_text())["files"]) == sorted([*SITE, ".gpumem-site"])
    publish(out, SITE)  # which reuses it
    assert hidden(out) == ["lock", "v1", "v1.json", "v3", "v3.json"] and files_under(out) == SITE


def test_the_earlier_writer_s_folder_with_files_it_did_not_write_stops_the_build(tmp_path):
    out = tmp_path / "site"
    old_layout(out, SITE, {"CNAME": b"gpumem.example.org\n", "en/notes.txt": b"mine", ".nojekyll": b""})
    before = snapshot(out)
    with pytest.raises(BuildError) as raised:
        publish(out, NEW)
    assert raised.value.lines == [
        f"{out}/.nojekyll: not written by gpumem; move it into host/, whose files every build copies into the site",
        f"{out}/CNAME: not written by gpumem; move it into host/, whose files every build copies into the site",
        f"{out}/en/notes.txt: not written by gpumem; move it into host/, whose files every build copies into the site",
    ]
    assert snapshot(out) == before and not out.is_symlink()


def test_a_second_build_stops_at_once_naming_the_first(tmp_path):
    out = tmp_path / "site"
    publish(out, SITE)
    with Output(out):
        with pytest.raises(BuildError) as raised:
            publish(out, NEW)
    assert raised.value.lines == [f"{out}: another gpumem build (pid {os.getpid()}) is writing this folder; try again when it ends"]
    assert raised.value.message.endswith("\n" + NOTHING)
    assert files_under(out) == SITE
    assert publish(out, NEW).written == 2  # the lock went with its holder


def test_a_full_disk_at_the_lock_is_a_message_and_leaves_the_site(tmp_path, monkeypatch):
    """No space left to write the holder's pid (an injected ENOSPC, not a real full disk)."""
    out = tmp_path / "site"
    publish(out, SITE)

    def no_space(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched, pytest.raises(BuildError) as raised:
        patched.setattr(os, "write", no_space)
        publish(out, NEW)
    assert raised.value.lines == [f"{out}: cannot write the lock {tmp_path}/.site.gpumem/lock: No space left on device"]
    assert raised.value.message.endswith("\n" + NOTHING)
    assert files_under(out) == SITE
    assert publish(out, NEW).written == 2  # the lock was released


def test_a_write_that_fails_leaves_the_live_site_and_the_next_build_reuses_its_folder(tmp_path):
    out = tmp_path / "site"
    publish(out, SITE)
    long = "x" * 300
    with pytest.raises(BuildError) as raised:
        publish(out, {**NEW, f"es/{long}.html": b"x"})
    assert raised.value.lines == [f"{tmp_path}/.site.gpumem/v2/es/{long}.html: cannot write: File name too long"]
    assert raised.value.message.endswith("\n" + KEPT)
    assert files_under(out) == SITE
    notes: list[str] = []
    publish(out, NEW, notes=notes)
    assert notes == [f"{out}: reused .site.gpumem/v2, left unfinished by a build that was stopped"]
    assert hidden(out) == ["lock", "v1", "v1.json", "v3", "v3.json"] and files_under(out) == NEW


def test_a_spare_version_holding_a_file_gpumem_did_not_write_is_kept_and_named(tmp_path):
    out = tmp_path / "site"
    for site in (SITE, NEW, SITE):
        publish(out, site)
    (tmp_path / ".site.gpumem/v1/late.txt").write_text("saved by a shell that was inside the first version")
    notes: list[str] = []
    publish(out, NEW, notes=notes)
    assert notes == [f"{out}: kept .site.gpumem/v1: it holds late.txt, not written by gpumem; move them"]
    assert hidden(out) == ["lock", "v1", "v1.json", "v2", "v2.json", "v3", "v3.json", "v4", "v4.json"]
    assert (tmp_path / ".site.gpumem/v1/late.txt").exists()


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the writer catches it, so it leaves what a kill leaves."""


# Where a build dies: on which output (gpumem's versions, or the earlier writer's folder), at which
# step and at which time it gets there; what the output path shows then; and the version the next
# build says it reused, unfinished.
KILLS = [
    ("versions", "locked", 1, "old", None),
    ("versions", "writing", 1, "old", "v4"),
    ("versions", "writing", 4, "old", "v4"),
    ("versions", "recorded", 1, "old", None),
    ("versions", "flipped", 1, "new", None),
    ("earlier writer", "writing", 2, "old", "v1"),
    ("earlier writer", "recorded", 1, "old", None),
    ("earlier writer", "migrating", 1, None, "v2"),  # the one instant without a site: between two renames
    ("earlier writer", "flipped", 1, "new", None),
]


@pytest.mark.parametrize(("before", "step", "time", "shows", "reused"), KILLS, ids=[f"{k[0]}-{k[1]}-{k[2]}" for k in KILLS])
def test_a_build_killed_at_any_step_leaves_a_whole_site_and_the_next_one_recovers(tmp_path, monkeypatch, before, step, time, shows, reused):
    out = tmp_path / "site"
    if before == "earlier writer":
        old_layout(out, SITE)
    else:
        for site in (SITE, NEW, SITE):  # a live version, the one before and a spare to reuse
            publish(out, site)
    reached: list[str] = []

    def die(name: str) -> None:
        reached.append(name)
        if name == step and reached.count(name) == time:
            raise Killed

    monkeypatch.setattr(versions, "checkpoint", die)
    with pytest.raises(Killed):
        publish(out, NEW)
    shown = {name: content for name, content in files_under(out).items() if name != ".gpumem-site"}  # the earlier writer's marker
    assert shown == (SITE if shows == "old" else NEW if shows == "new" else {})
    assert os.path.lexists(out) == (shows is not None)
    monkeypatch.undo()
    notes: list[str] = []
    publish(out, NEW, notes=notes)
    assert notes == ([f"{out}: reused .site.gpumem/{reused}, left unfinished by a build that was stopped"] if reused else [])
    assert files_under(out) == NEW
    left = [name for name in hidden(out) if name.startswith("v") and not name.endswith(".json")]
    assert 1 <= len(left) <= 3 and all(f"{name}.json" in hidden(out) for name in left)
    for name in left:  # every version holds exactly what its record lists
        listed = json.loads((tmp_path / f".site.gpumem/{name}.json").read_text())["files"]
        assert sorted(files_under(tmp_path / ".site.gpumem" / name)) == sorted(listed)


def test_the_preview_writer_replaces_changed_files_where_they_stand(tmp_path):
    out = tmp_path / "preview"
    first = write_in_place(out, {"index.html": b"home", "es/index.html": b"hola", "en/a/index.html": b"a"}, {})
    assert (first.written, first.unchanged, first.removed) == (3, 0, 0)
    home = os.stat(out / "index.html").st_ino
    second = write_in_place(out, {"index.html": b"home", "es/index.html": b"hola!"}, files_under(out))
    assert (second.written, second.unchanged, second.removed) == (1, 1, 1)
    assert os.stat(out / "index.html").st_ino == home  # unchanged: not written again
    assert snapshot(out) == {"es": "dir", "es/index.html": b"hola!", "index.html": b"home"}  # en/a/ went with its page
