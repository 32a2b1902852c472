"""A new price snapshot renders only the pages whose figures it changes (incremental.py): a page
keeps its bytes when every snapshot figure it read is as before, and gets the snapshot's new date
and counts set in without being rendered; the site is byte for byte a clean build's."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from markupsafe import Markup

from gpumem.build import build, gather, project_options
from gpumem.figures import site_figures
from gpumem.incremental import StampWords, Values, WatchedMapping, finalize, substitutable, unstamp, watched

from .conftest import NOW, SNAPSHOT, edit, tree
from .project import CATALOGS, REPO, copy_project
from .test_fingerprint import rendered_pages

CALCULATORS = [
    "de/rechner/index.html",
    "en/calculator/index.html",
    "es/calculadora/index.html",
    "fr/calculateur/index.html",
    "pt/calculadora/index.html",
]
VRAM_GUIDES = [
    "de/ratgeber/llm-vram/index.html",
    "en/guides/llm-vram/index.html",
    "es/guias/vram-llm/index.html",
    "fr/guides/vram-llm/index.html",
    "pt/guias/vram-llm/index.html",
]
PRICES = ["de/preise/index.html", "en/prices/index.html", "es/precios/index.html", "fr/prix/index.html", "pt/precos/index.html"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A whole project folder, built once."""
    copy_project(tmp_path)
    build(project_options(tmp_path), now=NOW)
    return tmp_path


def clean(project: Path) -> dict[str, bytes]:
    build(project_options(project, out=project / "clean", force=True), now=NOW)
    return tree(project / "clean")


def newer_snapshot(project: Path, old: str = "", new: str = "") -> None:
    """The fixture snapshot again three hours later, with `old` (found once) written as `new`."""
    text = (project / f"catalogs/prices/{SNAPSHOT}").read_text()
    assert not old or text.count(old) == 1
    text = text.replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-10-31T20:00:00Z").replace(old, new)
    (project / "catalogs/prices/2026-10-31T20-00Z.yaml").write_text(text)


def test_a_newer_snapshot_with_the_same_offers_renders_only_the_pages_that_date_it(project, monkeypatch):
    """Every other page gets the new time set into its snapshot line without being rendered. The
    prices pages list the earlier snapshots, which now include the first one, and they and the VRAM
    guides set other providers' prices beside "the lowest price here on" the snapshot's date."""
    rendered = rendered_pages(monkeypatch)
    newer_snapshot(project)
    result = build(project_options(project), now=NOW)
    assert sorted(rendered) == sorted(PRICES + VRAM_GUIDES)
    assert (result.summary.written, result.summary.unchanged) == (315, 33)
    site = tree(project / "site")
    assert site["en/models/llama-3.1-8b/index.html"].decode().count(" snapshot of Oct 31, 2026, 20:00 UTC: ") == 2  # the head and foot
    assert site == clean(project)


def test_a_price_no_page_shows_renders_no_page(project, monkeypatch):
    """The dearest of the three 8-GPU B300 machines: no page names it, not even the calculator,
    which lists each GPU count's lowest price."""
    rendered = rendered_pages(monkeypatch)
    before = tree(project / "site")
    edit(project / f"catalogs/prices/{SNAPSHOT}", "gpus: 8, price_per_gpu_hour: 5.77,", "gpus: 8, price_per_gpu_hour: 5.70,")
    result = build(project_options(project), now=NOW)
    assert rendered == []
    assert result.summary.written == 0  # the marker aside, which records the inputs
    assert tree(project / "site") == {**before, ".gpumem-site": tree(project / "site")[".gpumem-site"]}
    assert tree(project / "site") == clean(project)


def test_a_price_only_the_calculator_shows_renders_only_the_calculators(project, monkeypatch):
    """The only 4-GPU B300 machine: the calculator offers 4 × B300 at its price; no other page
    names a 4-GPU B300 configuration."""
    rendered = rendered_pages(monkeypatch)
    edit(project / f"catalogs/prices/{SNAPSHOT}", "gpus: 4, price_per_gpu_hour: 5.54,", "gpus: 4, price_per_gpu_hour: 5.53,")
    result = build(project_options(project), now=NOW)
    assert sorted(rendered) == CALCULATORS
    assert result.summary.written == 5
    assert tree(project / "site") == clean(project)


def as_rendered(site: Path) -> dict[str, bytes]:
    """Each page as its template wrote it, the stamp's words taken out again where the marker says."""
    facts = json.loads((site / ".gpumem-site").read_text())["inputs"]
    pages = {}
    for output, record in facts["pages"].items():
        lang = output.split("/")[0] if "/" in output else "es"  # the site's own files: its first language's
        pages[output] = unstamp((site / output).read_bytes(), record["stamps"], facts["stamps"][lang])
    return pages


def test_a_gpus_lowest_price_renders_the_pages_that_show_it(project, monkeypatch):
    """The B300's lowest price is on its own pages, the GPU index, the prices pages, the calculators,
    the guides and every model page (its speed table has a B300 row); every page whose template
    writes other bytes is among those rendered, and every other page is only re-stamped."""
    rendered = rendered_pages(monkeypatch)
    before = as_rendered(project / "site")
    newer_snapshot(project, "price_per_gpu_hour: 4.60,", "price_per_gpu_hour: 4.40,")
    build(project_options(project), now=NOW)
    after = as_rendered(project / "site")
    changed = sorted(page for page in after if after[page] != before[page])
    assert len(rendered) == 210 and len(changed) == 180
    assert set(changed) <= set(rendered)
    assert [page for page in changed if "/b300/" in page] == [
        f"{lang}/{gpus}/b300/index.html" for lang, gpus in (("de", "gpus"), ("en", "gpus"), ("es", "gpus"), ("fr", "gpu"), ("pt", "gpus"))
    ]
    showing = [page for page in after if page.startswith("en/") and b"$4.40" in after[page]]
    assert len(showing) == 32 and set(showing) <= set(rendered)
    assert tree(project / "site") == clean(project)


def test_force_renders_every_page(project, monkeypatch):
    rendered = rendered_pages(monkeypatch)
    build(project_options(project, force=True), now=NOW)
    assert len(rendered) == 330


def test_what_a_page_reads_is_noted_entry_by_entry():
    log: set[tuple[str, ...]] = set()
    figures = {"models": {"a": 1, "b": 2}}
    mapping = WatchedMapping(("figures", "models"), figures["models"], log)
    assert mapping["a"] == 1 and "b" in mapping and mapping.get("c") is None
    assert log == {("figures", "models", "a"), ("figures", "models", "b"), ("figures", "models", "c")}
    assert sorted(mapping) == ["a", "b"]
    assert ("figures", "models") in log


def test_a_stand_in_reads_as_its_object_and_notes_each_attribute():
    gathered = gather(project_options(REPO, catalogs=CATALOGS), now=NOW)
    log: set[tuple[str, ...]] = set()
    stand_ins = watched({"snapshot": gathered.catalog.snapshot, "catalog": gathered.catalog}, log)
    assert stand_ins["snapshot"].currency == "USD"
    assert stand_ins["catalog"].rules is gathered.catalog.rules
    assert type(stand_ins["snapshot"]).__name__ == "Snapshot"  # a template's error names the class it reads
    with pytest.raises(AttributeError):
        stand_ins["snapshot"].no_such_field  # noqa: B018
    assert log == {("snapshot", "currency"), ("catalog", "rules")}


def test_a_build_s_own_figures_and_the_memo_s_copy_digest_alike():
    """Pickled as one graph (memo.py), equal parts that were one object come back as one; the
    digests read no object identity, so the kept pages of either build are the same."""
    catalog = gather(project_options(REPO, catalogs=CATALOGS), now=NOW).catalog
    figures = site_figures(catalog)
    copy_catalog, copy_figures = pickle.loads(pickle.dumps((catalog, figures)))
    paths = [("catalog", "rules"), ("figures", "models", "llama-3.1-70b"), ("figures", "gpus", "b300"), ("shop", "markets")]
    fresh = Values({"catalog": catalog, "figures": figures, "shop": figures.shop})
    copied = Values({"catalog": copy_catalog, "figures": copy_figures, "shop": copy_figures.shop})
    assert fresh.digest(paths) == copied.digest(paths)
    assert fresh.digest(paths) != fresh.digest(paths[:3])


def test_the_stamp_is_set_in_and_taken_out_where_it_was():
    words = {
        "line": Markup("Prices of 1 Nov"),
        "date": Markup("1 Nov"),
        "time": Markup("09:00"),
        "gpus": Markup("5 GPUs"),
        "machines": Markup("2 machines"),
        "gpu_models": Markup("1 GPU model"),
    }
    assert substitutable(words)
    page = "<p>\ue000date\ue001 and \ue000date\ue001</p><footer>\ue000line\ue001</footer>".encode()
    final, places = finalize(page, words)
    assert final == b"<p>1 Nov and 1 Nov</p><footer>Prices of 1 Nov</footer>"
    assert places == [(3, "date"), (13, "date"), (30, "line")]
    assert unstamp(final, [list(place) for place in places], {k: str(v) for k, v in words.items()}) == page
    assert unstamp(final, [[4, "date"]], {"date": "1 Nov"}) is None  # not those words there: rendered again
    assert unstamp(final, None, {}) is None


def test_words_that_escape_are_never_placeholders():
    """A piece that reads otherwise as HTML and as text (JSON-LD takes answers as text) is written
    into the page, which then depends on the snapshot's date and counts."""
    words = {piece: Markup("x") for piece in ("line", "date", "time", "gpus", "machines", "gpu_models")}
    assert substitutable(words)
    assert not substitutable({**words, "gpus": Markup("5 GPUs &amp; more")})
    log: set[tuple[str, ...]] = set()
    assert StampWords(words, False, log).date == "x"
    assert log == {("snapshot", "taken_at"), ("snapshot", "offers")}
    assert StampWords(words, True, set()).date == "\ue000date\ue001"


def test_a_gpu_gone_from_the_snapshot_renders_the_pages_that_offered_it(project, monkeypatch):
    """Every B300 machine gone: its pages say it is not on offer and name the nearest GPU that is."""
    rendered = rendered_pages(monkeypatch)
    text = (project / f"catalogs/prices/{SNAPSHOT}").read_text()
    kept = [line for line in text.splitlines(keepends=True) if "gpu: b300," not in line]
    assert len(text.splitlines()) - len(kept) == 5
    (project / f"catalogs/prices/{SNAPSHOT}").write_text("".join(kept))
    build(project_options(project), now=NOW)
    site = tree(project / "site")
    assert "Not on offer in the snapshot of Oct 31, 2026" in site["en/gpus/b300/index.html"].decode()
    assert {
        f"{lang}/{gpus}/b300/index.html" for lang, gpus in (("de", "gpus"), ("en", "gpus"), ("es", "gpus"), ("fr", "gpu"), ("pt", "gpus"))
    } <= set(rendered)
    assert len(rendered) == 210  # every page that showed a B300 figure, as when its price changed
    assert site == clean(project)
