"""The writer: only changed bytes are written, stale files removed, nothing outside the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem.errors import BuildError
from gpumem.write import MARKER, write_site


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != MARKER}


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


def test_unchanged_files_keep_their_modification_time(tmp_path):
    out = tmp_path / "site"
    write_site(out, {"a.html": b"a", "b.html": b"b"})
    before = (out / "a.html").stat().st_mtime_ns
    write_site(out, {"a.html": b"a", "b.html": b"B"})
    assert (out / "a.html").stat().st_mtime_ns == before


def test_refuses_to_write_outside_the_folder(tmp_path):
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", {"../escape.html": b"x"})
    assert raised.value.lines == [f"../escape.html: refusing to write outside {(tmp_path / 'site').resolve()}"]
    assert not (tmp_path / "escape.html").exists()


def test_refuses_the_same_path_twice(tmp_path):
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", [("a.html", b"1"), ("a.html", b"2")])
    assert raised.value.lines == ["a.html: written twice in one build"]


def test_refuses_to_empty_a_folder_it_did_not_build(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path, {"index.html": b"x"})
    assert raised.value.lines == [f"{tmp_path}: not empty and not a gpumem site (no .gpumem-site); refusing to replace it"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "site").write_text("a file")
    with pytest.raises(BuildError) as raised:
        write_site(tmp_path / "site", {"index.html": b"x"})
    assert raised.value.lines == [f"{tmp_path / 'site'}: not a folder; refusing to replace it"]


def test_a_file_that_cannot_be_written_is_a_clean_error(tmp_path):
    out = tmp_path / "site"
    write_site(out, {"es/index.html": b"hola"})
    (out / "en").write_text("a file where a folder belongs")
    with pytest.raises(BuildError) as raised:
        write_site(out, {"es/index.html": b"hola", "en/index.html": b"hello"})
    assert raised.value.lines == [f"{out / 'en/index.html'}: cannot write: Not a directory"]
