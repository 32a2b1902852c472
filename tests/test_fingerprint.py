"""The no-change check: a rebuild is skipped only when every input is the same, and --force skips it never."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpumem import build as pipeline
from gpumem.build import build, fingerprint, gather, project_options

from .conftest import NOW, SNAPSHOT, edit
from .project import CATALOGS, REPO


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A whole project folder, built once."""
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    for name in ("content", "templates", "translations"):
        shutil.copytree(REPO / name, tmp_path / name)
    build(project_options(tmp_path), now=NOW)
    return tmp_path


def rebuild(project: Path, **options) -> dict[str, bytes]:
    """Build again (without --force unless asked) and return the site's files."""
    build(project_options(project, **options), now=NOW)
    site = project / "site"
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "path, old, new, page, expected",
    [
        (
            "catalogs/models.yaml",
            'name: "Llama 3.1 8B"',
            'name: "Llama 3.1 8B Base"',
            "en/models/llama-3.1-8b/index.html",
            "Llama 3.1 8B Base",
        ),
        (
            "catalogs/gpus.yaml",
            'full_name: "GeForce RTX 4090"',
            'full_name: "GeForce RTX 4090 D"',
            "en/gpus/rtx-4090/index.html",
            "RTX 4090 D",
        ),
        ("catalogs/rules.yaml", "value: 0.15", "value: 0.14", "en/calculator/index.html", '"runtimeOverhead":0.14'),
        (f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 2.05,", "en/prices/index.html", "$2.05"),
        ("content/en/home.md", "Three questions", "Three hard questions", "en/index.html", "Three hard questions"),
        ("templates/home.html", "</article>", "<p>template edit</p></article>", "en/index.html", "template edit"),
        ("templates/static/style.css", "body", "/* style edit */ body", "assets/style.css", "style edit"),
        (
            "translations/es/LC_MESSAGES/messages.po",
            'msgstr "Ir al contenido"',
            'msgstr "Saltar al contenido"',
            "es/index.html",
            "Saltar al contenido",
        ),
    ],
)
def test_each_kind_of_input_changes_the_site(project, path, old, new, page, expected):
    assert expected not in (project / "site" / page).read_text()
    edit(project / path, old, new)
    assert expected in rebuild(project)[page].decode()


def test_a_file_moved_into_the_assets_is_published(project):
    """Digests of relative paths: the same bytes under another folder are another input."""
    (project / "templates/notes.txt").write_text("kept out of the site\n")
    assert "assets/notes.txt" not in rebuild(project)
    (project / "templates/notes.txt").rename(project / "templates/static/notes.txt")
    assert rebuild(project)["assets/notes.txt"] == b"kept out of the site\n"


def test_the_code_a_library_and_python_are_in_the_fingerprint(project, monkeypatch, tmp_path):
    inputs = gather(project_options(project), now=NOW)
    first = fingerprint(inputs)
    code = tmp_path / "code"
    shutil.copytree(pipeline.CODE, code, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(pipeline, "CODE", code)
    assert fingerprint(inputs) == first  # the same code elsewhere
    edit(code / "compute.py", '"""', '""" edited', 1)
    assert fingerprint(inputs) != first
    monkeypatch.undo()
    versions = pipeline.imported_distributions()
    assert any(v.startswith("Jinja2=") for v in versions) and any(v.startswith("MarkupSafe=") for v in versions)
    monkeypatch.setattr(pipeline, "imported_distributions", lambda: [*versions[:-1], versions[-1] + ".post1"])
    assert fingerprint(inputs) != first
    monkeypatch.undo()
    monkeypatch.setattr(pipeline.sys, "version", "3.99.0")
    assert fingerprint(inputs) != first


def test_force_renders_although_nothing_changed(project, monkeypatch):
    calls = []
    render_site = pipeline.render_site
    monkeypatch.setattr(pipeline, "render_site", lambda *args, **kwargs: calls.append(1) or render_site(*args, **kwargs))
    quiet = build(project_options(project), now=NOW)
    assert (calls, quiet.summary.written) == ([], 0)
    forced = build(project_options(project, force=True), now=NOW)
    assert (calls, forced.summary.written, forced.summary.unchanged) == ([1], 0, 317)
