"""What a build computes before rendering is kept for the next one (memo.py): a content or template
edit neither reads the catalogs again nor computes the figures, and the site is byte for byte a
clean build's."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gpumem import build as pipeline
from gpumem import memo
from gpumem.build import build, project_options
from gpumem.render import Renderer

from .conftest import NOW, SNAPSHOT, edit, tree
from .project import copy_project

EVERYTHING = ["read_catalog", *["compile_translations"] * 5, "site_figures"]  # what a build computes, in order


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A whole project folder with a cache of its own, built once."""
    monkeypatch.setenv("GPUMEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(memo, "_held", [])
    copy_project(tmp_path)
    build(project_options(tmp_path), now=NOW)
    return tmp_path


@pytest.fixture
def computing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the next builds compute: the catalog read, the figures, the translations compiled."""
    calls: list[str] = []
    for name in ("read_catalog", "site_figures", "compile_translations"):
        original = getattr(pipeline, name)
        monkeypatch.setattr(
            pipeline, name, lambda *args, _name=name, _original=original, **kw: calls.append(_name) or _original(*args, **kw)
        )
    return calls


def same_as_a_clean_build(project: Path) -> bool:
    build(project_options(project, out=project / "clean", force=True), now=NOW)
    return tree(project / "site") == tree(project / "clean")


@pytest.mark.parametrize("in_process", [True, False])
def test_a_content_edit_computes_nothing_again(project, computing, monkeypatch, in_process):
    if not in_process:  # a new command: from the cache folder
        monkeypatch.setattr(memo, "_held", [])
    edit(project / "content/en/home.md", "Three questions", "Three hard questions")
    result = build(project_options(project), now=NOW)
    assert (computing, result.summary.written) == ([], 1)
    assert same_as_a_clean_build(project)


def test_a_template_edit_computes_nothing_again(project, computing):
    edit(project / "templates/home.html", "</article>", "<p>template edit</p></article>")
    build(project_options(project), now=NOW)
    assert computing == []
    assert same_as_a_clean_build(project)


@pytest.mark.parametrize(
    "path, old, new",
    [
        (f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 2.05,"),
        ("catalogs/rules.yaml", "value: 0.15", "value: 0.14"),
        ("translations/pt/LC_MESSAGES/messages.po", 'msgstr "Pular para o conteúdo"', 'msgstr "Ir para o conteúdo"'),
        ("content/site.yaml", "stale_after_days: 7", "stale_after_days: 8"),
    ],
)
def test_an_edit_of_what_it_reads_computes_everything_again(project, computing, path, old, new):
    edit(project / path, old, new)
    build(project_options(project), now=NOW)
    assert computing == EVERYTHING
    assert same_as_a_clean_build(project)


def test_another_day_or_an_earlier_clock_computes_again(project, computing):
    """Price checks are dated, and only a later clock is sure to find no snapshot in the future."""
    edit(project / "content/en/home.md", "Three questions", "Three hard questions")
    build(project_options(project), now=NOW - timedelta(hours=1))
    assert computing == EVERYTHING
    computing.clear()
    edit(project / "content/en/home.md", "Three hard questions", "Three very hard questions")
    build(project_options(project), now=NOW + timedelta(days=1))
    assert computing == EVERYTHING


def test_a_broken_cache_file_is_computed_again(project, computing, monkeypatch):
    monkeypatch.setattr(memo, "_held", [])
    folder = next((project / "cache").iterdir())
    (folder / memo.FILE).write_bytes(b"not a pickle")
    edit(project / "content/en/home.md", "Three questions", "Three hard questions")
    build(project_options(project), now=NOW)
    assert computing == EVERYTHING
    assert same_as_a_clean_build(project)


def test_force_computes_everything(project, computing):
    build(project_options(project, force=True), now=NOW)
    assert computing == EVERYTHING


def test_a_content_edit_renders_its_page_alone(project, monkeypatch):
    """The site's own files (language choice, 404 pages, sitemap, robots.txt) have keys too; the
    snapshot's stamp (templates/_stamp.html, once per language, for every page to take) is the last
    build's words until what they are rendered from changes (fingerprint.words_key)."""
    templates: list[str] = []
    render = Renderer.render
    monkeypatch.setattr(Renderer, "render", lambda self, name, context: templates.append(name) or render(self, name, context))
    edit(project / "content/de/home.md", "\ntitle: ", "\ntitle: Die ")
    build(project_options(project), now=NOW)
    assert templates == ["home.html"]
    assert same_as_a_clean_build(project)
    templates.clear()
    edit(project / "templates/_stamp.html", "<date>{{ f.date(snapshot.taken_at) }}</date>", "<date>{{ f.date(snapshot.taken_at) }}!</date>")
    build(project_options(project), now=NOW)
    assert templates[:5] == ["_stamp.html"] * 5
    assert same_as_a_clean_build(project)
    assert "Oct 31, 2026!" in (project / "site/en/index.html").read_text()
    edit(project / "translations/de/LC_MESSAGES/messages.po", 'msgstr "Zum Inhalt springen"', 'msgstr "Zum Inhalt"')
    templates.clear()
    build(project_options(project), now=NOW)
    assert sorted(set(templates) - {"home.html", "guide.html", "model.html", "gpu.html"}) == [
        "404.html",
        "_stamp.html",
        "calculator.html",
        "gpus.html",
        "guide-api.html",
        "guide-finetune.html",
        "guide-inference.html",
        "index.html",
        "methodology.html",
        "models.html",
        "not-found.html",
        "prices.html",
        "robots.txt",
        "sitemap.xml",
    ]
    assert templates.count("not-found.html") == 1  # the German 404 page alone


def test_what_was_computed_while_an_input_was_saved_is_not_kept(project, monkeypatch):
    monkeypatch.setattr(memo, "_held", [])
    (next((project / "cache").iterdir()) / memo.FILE).unlink()
    figures = pipeline.site_figures
    rules = project / "catalogs/rules.yaml"

    def saving(catalog):  # noqa: ANN001, ANN202
        edit(rules, "value: 0.15", "value: 0.14")  # saved after the build read it
        return figures(catalog)

    monkeypatch.setattr(pipeline, "site_figures", saving)
    build(project_options(project, force=True), now=NOW)
    assert memo._held == [] and not (next((project / "cache").iterdir()) / memo.FILE).exists()
