"""Inputs are read alike by every stage (catalog/files.py): what the loaders read through a symbolic
link, the no-change check, the preview's page keys and its watcher see too."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem.catalog.files import Found, input_tree, linked_folders
from gpumem.commands.build import Session, build, check
from gpumem.commands.watch import Sources
from gpumem.errors import BuildError
from gpumem.options import project_options

from .conftest import NOW, SNAPSHOT, edit, tree
from .golden.update import FIXTURE as GOLDEN
from .project import copy_project
from .test_serve import Server, changed_within, fetch

PRICE, CHEAPER = "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 2.05,"  # an offer of the fixture snapshot, on the prices page
GERMAN = "de/index.html"
# The golden fixture's catalogs (3 models, 3 GPUs: 107 pages in the 5 languages) for the linked project: an offer of its
# snapshot, on the prices page.
GOLDEN_PRICE, GOLDEN_CHEAPER = "price_per_gpu_hour: 1.99,", "price_per_gpu_hour: 1.95,"


def test_the_listing_follows_links_and_lists_a_link_to_a_folder_above_without_entering_it(tmp_path):
    (tmp_path / "data/sub").mkdir(parents=True)
    (tmp_path / "data/sub/a.yaml").write_text("a")
    (tmp_path / "root").mkdir()
    (tmp_path / "root/b.md").write_text("b")
    (tmp_path / "root/linked").symlink_to(tmp_path / "data")
    (tmp_path / "root/up").symlink_to(tmp_path / "root")
    (tmp_path / "root/nowhere").symlink_to(tmp_path / "missing")
    (tmp_path / "root/__pycache__").mkdir()
    root = tmp_path / "root"
    assert input_tree(root, skipped=("__pycache__",)) == [
        Found("b.md", root / "b.md", "file", False),
        Found("linked", root / "linked", "folder", True),
        Found("linked/sub", root / "linked/sub", "folder", False),
        Found("linked/sub/a.yaml", root / "linked/sub/a.yaml", "file", False),
        Found("nowhere", root / "nowhere", "file", True),  # its reader reports it
        Found("up", root / "up", "loop", True),
    ]
    assert linked_folders(root) == [tmp_path / "data"]


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A project whose catalogs/prices and content/de are links to folders kept elsewhere (a data
    folder linked into each release), built once; its catalogs are the golden fixture's."""
    project = copy_project(tmp_path / "release", GOLDEN / "catalogs")
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ("catalogs/prices", "content/de"):
        (project / name).rename(kept / Path(name).name)
        (project / name).symlink_to(kept / Path(name).name, target_is_directory=True)
    build(project_options(project), now=NOW)
    return project


def test_a_build_publishes_each_change_below_a_linked_folder(linked):
    edit(linked / "catalogs/prices" / SNAPSHOT, GOLDEN_PRICE, GOLDEN_CHEAPER)
    result = build(project_options(linked), now=NOW)
    assert "$1.95" in (linked / "site/en/prices/index.html").read_text()
    assert (result.rendered, result.summary.written) == (107, 50)  # prices are not in the search index
    edit(linked / "content/de/home.md", "\ntitle: ", "\ntitle: Die ")
    result = build(project_options(linked), now=NOW)
    assert (result.rendered, result.summary.written) == (107, 5)  # the page, and 4 files of the search index: its title changed
    assert "<title>Die " in (linked / "site" / GERMAN).read_text()
    build(project_options(linked, out=linked / "clean", force=True), now=NOW)
    assert tree(linked / "site") == tree(linked / "clean")


def test_the_preview_renders_each_change_below_a_linked_folder(linked):
    session, out = Session(), linked / "preview"
    build(project_options(linked, out=out), now=NOW, session=session)
    edit(linked / "content/de/home.md", "\ntitle: ", "\ntitle: Die ")
    result = build(project_options(linked, out=out), now=NOW, session=session)
    assert (result.rendered, result.summary.written) == (1, 5)  # the page, and 4 files of the search index: its title changed
    assert "<title>Die " in (out / GERMAN).read_text()
    edit(linked / "catalogs/prices" / SNAPSHOT, GOLDEN_PRICE, GOLDEN_CHEAPER)
    result = build(project_options(linked, out=out), now=NOW, session=session)
    assert result.rendered == 107
    assert "$1.95" in (out / "en/prices/index.html").read_text()


@pytest.mark.parametrize("notifications", [True, False])
def test_the_watcher_notices_a_save_below_a_linked_folder_and_a_link_made_since(tmp_path, notifications):
    kept, content = tmp_path / "kept", tmp_path / "content"
    (kept / "de").mkdir(parents=True)
    (kept / "de/home.md").write_text("eins")
    (kept / "fr").mkdir()
    content.mkdir()
    (content / "de").symlink_to(kept / "de")
    sources = Sources([content], notifications=notifications)
    try:
        assert changed_within(sources, 0.6) is False
        (kept / "de/home.md").write_text("zwei")
        assert changed_within(sources, 5) is True
        (content / "fr").symlink_to(kept / "fr")
        assert changed_within(sources, 5) is True
        (kept / "fr/home.md").write_text("un")  # in a folder linked since watching began
        assert changed_within(sources, 5) is True
    finally:
        sources.close()


def test_a_folder_named_like_a_snapshot_is_refused_by_build_and_check_alike(linked, monkeypatch):
    (linked / "catalogs/prices/2026-10-31T18-00Z.yaml").mkdir()
    expected = ["catalogs/prices/2026-10-31T18-00Z.yaml: a folder named like a snapshot (a snapshot is a file); rename or remove it"]
    monkeypatch.chdir(linked)
    for run in (lambda: build(project_options(linked), now=NOW), lambda: check(project_options(linked), now=NOW)):
        with pytest.raises(BuildError) as raised:
            run()
        assert raised.value.lines == expected


@pytest.mark.slow  # a gpumem serve process, as in test_serve.py
def test_gpumem_serve_rebuilds_on_a_save_below_linked_folders_and_serves_it(inputs, tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ("catalogs/prices", "content/de"):
        (inputs / name).rename(kept / Path(name).name)
        (inputs / name).symlink_to(kept / Path(name).name, target_is_directory=True)
    server = Server(inputs)
    try:
        base = server.line().split(" on ")[1].split(" ")[0]  # listening before the first build
        assert server.line() == "watching the sources (inotify); open pages reload after each build\n"
        assert server.line().startswith("rebuilt: 755 written, 0 removed in ")
        edit(kept / "de/home.md", "\ntitle: ", "\ntitle: Die ")
        # the page and 4 files of the search index, 3 of them under new names
        assert server.line().startswith("rebuilt: 5 written, 3 removed in ")
        assert "<title>Die " in fetch(base + "de/")
        edit(kept / "prices" / SNAPSHOT, PRICE, CHEAPER)
        assert server.line().startswith("rebuilt: 155 written, 0 removed in ")
        assert "$2.05" in fetch(base + "en/prices/")
    finally:
        server.stop()
