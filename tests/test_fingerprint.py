"""The no-change check: a rebuild is skipped only when every input is the same, and --force skips it never."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpumem.commands import build as pipeline
from gpumem.commands.build import Session, build
from gpumem.errors import BuildError
from gpumem.options import project_options
from gpumem.output import fingerprint as digests
from gpumem.output.fingerprint import fingerprint, unchanged
from gpumem.pages import site as rendering

from .conftest import NOW, SNAPSHOT, edit, tree
from .golden.update import FIXTURE as GOLDEN
from .project import copy_project, published

# The libraries pyproject.toml declares, as the fingerprint names them (normalized distribution names).
DECLARED = [
    "babel",
    "click",
    "gguf",
    "ghp_import",
    "jinja2",
    "markdown",
    "markupsafe",
    "pagefind_bin",
    "pyyaml",
    "safetensors",
    "tdewolff_minify",
    "watchdog",
]


@pytest.fixture(scope="module")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A whole project folder, built once for the module; no test changes it. Its catalogs are the golden
    fixture's (3 models, 3 GPUs: 107 pages in the project's 5 languages), so each of the module's builds takes
    a fraction of the fixture site's time and meets every kind of input and page."""
    root = copy_project(tmp_path_factory.mktemp("built"), GOLDEN / "catalogs")
    build(project_options(root), now=NOW)
    return root


@pytest.fixture
def project(built_project: Path, tmp_path: Path) -> Path:
    """A whole project folder, built: a copy of built_project, its output link, versions, records and times
    as they are (what a no-change check compares), for the test to change and build again."""
    shutil.copytree(built_project, tmp_path, symlinks=True, dirs_exist_ok=True)
    return tmp_path


def rebuild(project: Path, **options) -> dict[str, bytes]:
    """Build again (without --force unless asked) and return the site's files."""
    build(project_options(project, **options), now=NOW)
    return tree(project / "site")


def rendered_pages(monkeypatch) -> list[str]:
    """The outputs of the pages the next builds render (the site's own files, the language choice, the 404 pages and the
    sitemap, are rendered apart, when their keys change)."""
    seen: list[str] = []
    render_pages = rendering.render_pages

    def spying(pages, render):  # noqa: ANN001, ANN202
        pages = tuple(pages)
        seen.extend(page.output for page in pages)
        return render_pages(pages, render)

    monkeypatch.setattr(rendering, "render_pages", spying)
    return seen


@pytest.mark.parametrize(
    "path, old, new, output, expected",  # not `page`, the Playwright fixture: the test would count as a browser test
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
        (
            "catalogs/rules.yaml",
            "comfortable_requests: 3",
            "comfortable_requests: 4",
            "en/calculator/index.html",
            '"comfortableRequests":4',
        ),
        (f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 1.99,", "price_per_gpu_hour: 1.95,", "en/prices/index.html", "$1.95"),
        ("content/en/home.md", "Three questions", "Three hard questions", "en/index.html", "Three hard questions"),
        ("templates/home.html", "</article>", "<p>template edit</p></article>", "en/index.html", "template edit"),
        (
            "translations/es/LC_MESSAGES/messages.po",
            'msgstr "Ir al contenido"',
            'msgstr "Saltar al contenido"',
            "es/index.html",
            "Saltar al contenido",
        ),
    ],
)
def test_each_kind_of_input_changes_the_site(project, path, old, new, output, expected):
    """... and the pages a rebuild keeps or renders again are byte for byte those of a clean build."""
    assert expected not in (project / "site" / output).read_text()
    edit(project / path, old, new)
    site = rebuild(project)
    assert expected in site[output].decode()
    build(project_options(project, out=project / "clean", force=True), now=NOW)
    assert site == tree(project / "clean")


@pytest.fixture
def preview(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Session, list[str]]:
    """The preview's folder, built once in a session (what `gpumem serve` keeps in its process),
    and what the next builds in it compute: the catalog read, the figures, the translations."""
    session = Session()
    build(project_options(project, out=project / "preview"), now=NOW, session=session)
    computing: list[str] = []
    for name in ("read_catalog", "site_figures", "compile_translations"):
        original = getattr(pipeline, name)
        monkeypatch.setattr(
            pipeline, name, lambda *args, _name=name, _original=original, **kw: computing.append(_name) or _original(*args, **kw)
        )
    return project / "preview", session, computing


def same_as_a_clean_build(project: Path, folder: Path) -> bool:
    build(project_options(project, out=project / "clean", force=True), now=NOW)
    return tree(folder) == tree(project / "clean")


EVERYTHING = ["read_catalog", *["compile_translations"] * 5, "site_figures"]  # what a build computes, in order


@pytest.mark.parametrize(
    "path, old, new, expected, written",
    [
        # a title or a description is in the search index: the page and 4 of its files (the entry, the language's
        # metadata and word index, the page's fragment) are written
        ("content/fr/prices.md", "\ntitle: ", "\ntitle: Les ", ["fr/prix/index.html"], 5),
        ("content/de/home.md", "\ntitle: ", "\ntitle: Die ", ["de/index.html"], 5),
        ("content/en/guide-vram.md", "\ndescription: ", "\ndescription: The ", ["en/guides/llm-vram/index.html"], 5),
        ("content/en/home.md", "Three questions", "Three plain questions", ["en/index.html"], 1),  # prose is not
    ],
)
def test_in_the_preview_one_content_edit_renders_its_page_alone_and_computes_nothing(
    project, preview, monkeypatch, path, old, new, expected, written
):
    folder, session, computing = preview
    rendered = rendered_pages(monkeypatch)
    edit(project / path, old, new)
    result = build(project_options(project, out=folder), now=NOW, session=session)
    assert (rendered, result.rendered, result.summary.written, computing) == (expected, 1, written, [])
    assert same_as_a_clean_build(project, folder)


def test_in_the_preview_a_translation_edit_renders_its_language_alone(project, preview, monkeypatch):
    folder, session, computing = preview
    rendered = rendered_pages(monkeypatch)
    edit(project / "translations/pt/LC_MESSAGES/messages.po", 'msgstr "Pular para o conteúdo"', 'msgstr "Ir para o conteúdo"')
    result = build(project_options(project, out=folder), now=NOW, session=session)
    assert len(rendered) == 20 and all(output.startswith("pt/") for output in rendered)
    assert result.rendered == 20 + 3  # and its 404 page, and the language choice and the 404 page at the top, which show every language
    assert computing == EVERYTHING  # the strings are compiled with the figures
    assert same_as_a_clean_build(project, folder)


def test_in_the_preview_nothing_changed_renders_nothing_and_a_price_renders_everything(project, preview, monkeypatch):
    folder, session, computing = preview
    rendered = rendered_pages(monkeypatch)
    quiet = build(project_options(project, out=folder), now=NOW, session=session)
    assert (rendered, quiet.rendered, quiet.summary.written, computing) == ([], 0, 0, [])
    edit(project / f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 2.05,")
    result = build(project_options(project, out=folder), now=NOW, session=session)
    assert (len(rendered), result.rendered, computing) == (100, 107, EVERYTHING)
    assert same_as_a_clean_build(project, folder)


def test_a_file_moved_into_the_assets_is_published(project):
    """Digests of relative paths: the same bytes under another folder are another input."""
    (project / "templates/notes.txt").write_text("kept out of the site\n")
    assert not [name for name in rebuild(project) if name.startswith("assets/notes.")]
    (project / "templates/notes.txt").rename(project / "templates/static/notes.txt")
    rebuild(project)
    assert published(project / "site", "notes.txt").read_bytes() == b"kept out of the site\n"


def test_a_stylesheet_edit_publishes_it_under_a_new_name_and_removes_the_old_one(project):
    site = project / "site"
    old = published(site, "style.css")
    edit(project / "templates/static/style.css", "a{color:var(--accent)}", "a{color:var(--accent);text-underline-offset:.2em}")
    files = rebuild(project)
    new = published(site, "style.css")
    assert new.name != old.name and not old.exists()
    assert b"a{color:var(--accent);text-underline-offset:.2em}" in new.read_bytes()
    assert f'<link rel="stylesheet" href="/assets/{new.name}">'.encode() in files["fr/prix/index.html"]
    assert [name for name, content in files.items() if old.name.encode() in content] == []
    build(project_options(project, out=project / "clean", force=True), now=NOW)
    assert files == tree(project / "clean")


def test_the_code_a_library_and_python_are_in_the_fingerprint(project, monkeypatch, tmp_path):
    options = project_options(project)
    first = fingerprint(options)
    code = tmp_path / "code"
    shutil.copytree(digests.CODE, code, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(digests, "CODE", code)
    assert fingerprint(options) == first  # the same code elsewhere
    edit(code / "figures" / "shared.py", '"""', '""" edited', 1)
    assert fingerprint(options) != first
    monkeypatch.undo()
    versions = digests.dependency_versions()
    assert versions[0] == f"python={sys.version}"
    assert [v.partition("=")[0] for v in versions[1:]] == DECLARED
    monkeypatch.setattr(digests, "dependency_versions", lambda: [*versions[:-1], versions[-1] + ".post1"])
    assert fingerprint(options) != first


def test_a_file_anywhere_in_the_catalogs_is_an_input(project):
    options = project_options(project)
    first = fingerprint(options)
    (project / "catalogs/prices/notes.txt").write_text("not a snapshot, but the build lists the folder\n")
    assert fingerprint(options) != first


def test_the_no_change_check_loads_no_template_engine(project):
    """`gpumem build` with nothing changed answers before importing Jinja, Babel, YAML or Markdown."""
    script = (
        "import sys\n"
        "from gpumem.cli.main import main\n"
        "try:\n"
        f"    main(['--project', {str(project)!r}, 'build'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('jinja2', 'babel', 'yaml', 'markdown', 'gpumem.commands.build') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    summary, modules = done.stdout.splitlines()
    assert summary.startswith("107 pages, 0 rendered; 0 files written, 250 unchanged, 0 removed in ") and modules == "[]"


def test_an_old_snapshot_warns_on_every_rebuild_and_strict_refuses_it(project):
    later = NOW + timedelta(days=9)
    result = build(project_options(project), now=later)
    warning = "warning: price snapshot 2026-10-31T16-52Z is 9 days old (older than stale_after_days = 7); import a newer one"
    assert (result.summary.written, result.warnings) == (0, (warning,))
    assert unchanged(project_options(project), now=later + timedelta(days=1)).warnings == (warning.replace("9 days", "10 days"),)
    with pytest.raises(BuildError) as refused:
        build(project_options(project, strict=True), now=later)
    assert refused.value.lines == [warning, "--strict: warnings are errors"]


def test_a_clock_set_back_checks_the_snapshots_again(project):
    """The record says from when no snapshot is in the future; before that, the whole check runs."""
    assert unchanged(project_options(project), now=NOW) is not None
    earlier = datetime(2026, 10, 31, 16, 40, tzinfo=UTC)  # 12 minutes before the snapshot, 5 of skew allowed
    assert unchanged(project_options(project), now=earlier) is None
    with pytest.raises(BuildError) as refused:
        build(project_options(project), now=earlier)
    assert refused.value.lines[0] == (
        f"{project}/catalogs/prices/{SNAPSHOT}:1: snapshot: taken_at: 2026-10-31T16:52:00Z is in the future: the clock says "
        "2026-10-31T16:40:00Z, and at most 5 minutes of clock skew are allowed (prices.clock in rules.yaml)"
    )


def test_an_output_file_edited_in_place_is_noticed_though_its_size_is_the_same(project):
    page = project / "site/en/index.html"
    text = page.read_text()
    page.write_text(text.replace("Three", "Tree ", 1))
    assert unchanged(project_options(project), now=NOW) is None
    assert rebuild(project)["en/index.html"].decode() == text


def test_force_renders_although_nothing_changed(project, monkeypatch):
    calls = []
    site_rendering = pipeline.site_rendering
    monkeypatch.setattr(pipeline, "site_rendering", lambda *args, **kwargs: calls.append(1) or site_rendering(*args, **kwargs))
    quiet = build(project_options(project), now=NOW)
    assert (calls, quiet.summary.written) == ([], 0)
    rendered = rendered_pages(monkeypatch)
    forced = build(project_options(project, force=True), now=NOW)
    assert (calls, forced.summary.written, forced.summary.unchanged, len(rendered)) == ([1], 0, 250, 100)


def test_the_library_versions_are_those_importlib_metadata_reads():
    """Read from the distributions' folder names (some 25 ms sooner), they are the same."""
    assert digests.dependency_versions() == digests._dependency_versions_slowly()
    assert [v.partition("=")[0] for v in digests.dependency_versions()[1:]] == DECLARED
