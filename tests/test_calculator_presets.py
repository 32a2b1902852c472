"""The calculator's presets at any catalog size: the page carries its own model's preset alone, every model's preset
is a file of the site fetched when a reader or a link names the model, and the table of presets lists the first
TABLE_MODELS models; the page then weighs the same with 28 models or 60 (a fixture catalog grown here)."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from gpumem.catalog.inputs import load_catalog
from gpumem.figures import calculator as compute_calculator
from gpumem.figures import calculator_data as compute_calculator_data
from gpumem.figures import shared
from gpumem.pages.assets import published_folder

from .conftest import NOW, options_for
from .javascript import preset_folder
from .project import CATALOGS, REPO

CATALOG = load_catalog(CATALOGS)
RULES = CATALOG.rules
KB = 1000
PAGES = {"es": "es/calculadora", "en": "en/calculator", "pt": "pt/calculadora", "fr": "fr/calculateur", "de": "de/rechner"}


def grown_catalog(root: Path, models: int) -> None:
    """The fixture catalogs under root with the models catalog grown to `models` entries: copies of the first ones,
    each under an id and a name of its own (as benchmarks/bench.py grows the catalog)."""
    path = root / "catalogs/models.yaml"
    head, _, body = path.read_text().partition("\nmodels:\n")
    entries = ["  - id: " + entry for entry in body.split("  - id: ")[1:]]
    copies = []
    for n in range(models - len(entries)):
        entry, copy = entries[n % len(entries)], n // len(entries) + 2
        entry = re.sub(r"^  - id: (\S+)$", rf"  - id: \1-copy{copy}", entry, count=1, flags=re.M)
        copies.append(re.sub(r'^    name: "([^"]+)"$', rf'    name: "\1 (copy {copy})"', entry, count=1, flags=re.M))
    path.write_text(head + "\nmodels:\n" + "".join(e if e.endswith("\n") else e + "\n" for e in entries + copies))


@pytest.fixture(scope="module")
def sixty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built with a catalog of 60 models."""
    from gpumem.commands.build import build

    root = tmp_path_factory.mktemp("sixty")
    shutil.copytree(CATALOGS, root / "catalogs")
    shutil.copytree(REPO / "content", root / "content")
    grown_catalog(root, 60)
    build(options_for(root), now=NOW)
    return root / "site"


def page_parts(site: Path, page: str) -> dict[str, bytes]:
    """A calculator page's HTML, the stylesheets and scripts it links, and its inline JSON (as benchmarks/bench.py)."""
    html = (site / page / "index.html").read_bytes()
    text = html.decode()
    css = b"".join((site / p).read_bytes() for p in re.findall(r'<link rel="stylesheet" href="/([^"]+)"', text))
    js = b"".join((site / p).read_bytes() for p in re.findall(r'<script src="/([^"]+)"', text))
    data = "".join(re.findall(r'<script type="application/(?:ld\+)?json"[^>]*>(.*?)</script>', text, re.S)).encode()
    return {"html": html, "css": css, "js": js, "data": data}


def test_every_preset_is_a_file_and_the_list_names_each_model(built_site: Path):
    folder = preset_folder(built_site)
    assert sorted(path.name for path in folder.iterdir()) == sorted(f"{m.id}.json" for m in CATALOG.models)
    for model in CATALOG.models:
        row = json.loads((folder / f"{model.id}.json").read_text())
        assert row == json.loads(
            json.dumps(
                compute_calculator_data.shortest_numbers(compute_calculator_data.model_row(model, CATALOG.rules.deployment.weight_formats))
            )
        )
    listed = json.loads((folder.parent / f"{folder.name}.json").read_text())
    assert listed == [[m.id, m.name] for m in CATALOG.models]
    presets = compute_calculator_data.preset_files(CATALOG)
    assert folder.name == Path(published_folder("presets", presets)[0]).name  # the digest of the list and every file
    html = (built_site / "en/calculator/index.html").read_text()
    assert f'data-presets="/assets/{folder.name}"' in html


def test_the_folder_name_changes_with_any_preset():
    presets = compute_calculator_data.preset_files(CATALOG)
    name = published_folder("presets", presets)[0]
    changed = dict(presets.files, **{"llama-3.1-8b.json": presets.files["llama-3.1-8b.json"].replace(b"32", b"33", 1)})
    assert published_folder("presets", compute_calculator_data.PresetFiles(presets.index, changed))[0] != name
    renamed = presets.index.replace(b"Llama 3.1 8B", b"Llama 3.1 8B (base)")
    assert published_folder("presets", compute_calculator_data.PresetFiles(renamed, presets.files))[0] != name
    files = published_folder("presets", presets)[1]
    assert (
        len(files) == 29
        and files[f"{name}.json"] == presets.index
        and files[f"{name}/gpt-oss-20b.json"] == presets.files["gpt-oss-20b.json"]
    )


def test_the_select_carries_the_opening_model_alone(built_site: Path):
    html = (built_site / "en/calculator/index.html").read_text()
    select = re.search(r'<select name="model">(.*?)</select>', html, re.S).group(1)
    assert select == '<option value="custom">Custom model<option value="llama-3.1-8b" selected>Llama 3.1 8B'


def test_sixty_models_make_sixty_preset_files_and_a_table_of_thirty(sixty: Path):
    folder = preset_folder(sixty)
    assert len(list(folder.iterdir())) == 60
    assert len(json.loads((folder.parent / f"{folder.name}.json").read_text())) == 60
    html = (sixty / "en/calculator/index.html").read_text()
    table = re.search(r"<table id=\"presets\".*?</table>", html, re.S).group(0)
    assert table.count('<th scope="row">') == compute_calculator.TABLE_MODELS == 16
    said = unescape(html)
    assert "This table lists the first 16 of the catalog's 60 models; every model is on the models page" in said
    assert "The table below precomputes the first 16 catalog models; each model's page has its own figures." in said
    copies = [m.name for m in load_catalog(sixty.parent / "catalogs").models[20:]]
    assert len(copies) == 40 and not [name for name in copies if name in html]  # the other models are in the files alone
    french = (sixty / "fr/calculateur/index.html").read_text()
    assert "Ce tableau présente les 16 premiers des 60 modèles du catalogue\u202f;" in french


def test_the_fixture_catalog_of_28_models_lists_20_and_says_so(built_site: Path):
    html = unescape((built_site / "en/calculator/index.html").read_text())
    assert re.search(r"<table id=\"presets\".*?</table>", html, re.S).group(0).count('<th scope="row">') == 16
    assert "This table lists the first 16 of the catalog's 28 models; every model is on the models page" in html


@pytest.mark.parametrize("lang", list(PAGES))
def test_the_page_keeps_its_budgets_at_sixty_models(sixty: Path, built_site: Path, lang: str):
    """With its scripts, styles and data: at most 100 KB, of which the scripts and data at most 60 KB (the budgets of
    docs/developer-guide/performance.md), and no heavier with 60 models than with 28 (both list 20) but for the
    counts the table's note and the text without JavaScript name."""
    grown, project = page_parts(sixty, PAGES[lang]), page_parts(built_site, PAGES[lang])
    assert sum(len(part) for part in grown.values() if part is not grown["data"]) <= 100 * KB
    assert len(grown["js"]) + len(grown["data"]) <= 60 * KB
    assert len(grown["data"]) == len(project["data"])  # the inline JSON carries one preset whatever the catalog
    after = grown["html"].index(b"</tbody>")
    note = re.compile(rb'\n<p class="note">[^\n]*?</a></p>').search(grown["html"], after).group(0)  # the first after the table
    table = re.compile(rb"<tbody>.*?</tbody>", re.S)
    rows = len(table.search(grown["html"]).group(0)) - len(table.search(project["html"]).group(0))  # the table's two copies
    noscript = re.compile(rb"<noscript>.*?</noscript>", re.S)
    words = len(noscript.search(grown["html"]).group(0)) - len(noscript.search(project["html"]).group(0))
    ours = re.compile(rb'\n<p class="note">[^\n]*?</a></p>').search(project["html"], project["html"].index(b"</tbody>")).group(0)
    assert rows == 0 and len(grown["html"]) - len(project["html"]) == len(note) - len(ours) + words


# In Chromium: a preset the page lacks is fetched, said to be loading meanwhile, and said to have failed when it did.


def pick(page: Page, model: str) -> None:
    """Choose a preset and wait for its file (the results are busy meanwhile)."""
    page.select_option('[name="model"]', model)
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")


@pytest.fixture
def opened(page: Page, site_url: str) -> Page:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{site_url}/en/calculator/")
    expect(page.locator('[name="model"] option')).to_have_count(len(CATALOG.models) + 1)  # the list came
    page.requests = requests  # type: ignore[attr-defined]
    return page


def python_total(model_id: str, context: int = 8192) -> float:
    model = CATALOG.model(model_id)
    d = RULES.calculator_defaults
    serving = compute_calculator.serving(CATALOG, shared.Shop(CATALOG), model, model.release, d["kv"], 1, context, d["batch"])
    return serving.total_bytes / 1e9


def total(page: Page) -> float:
    return float(page.locator('[data-result="total-gb"]').get_attribute("data-value"))


def test_a_picked_model_loads_its_preset_file_and_shows_its_figures(opened: Page):
    folder = opened.locator("#calculator").get_attribute("data-presets")
    pick(opened, "gemma-3-27b")
    expect(opened.locator('[name="layers"]')).to_have_value("62")
    assert total(opened) == pytest.approx(python_total("gemma-3-27b"), rel=1e-12)
    fetched = [url for url in opened.requests if "/assets/presets." in url]  # type: ignore[attr-defined]
    assert [url.split(opened.url.split("/en/")[0])[1] for url in fetched] == [f"{folder}.json", f"{folder}/gemma-3-27b.json"]
    pick(opened, "llama-3.1-8b")  # the page's own: nothing fetched
    pick(opened, "gemma-3-27b")  # fetched once
    assert len([url for url in opened.requests if "/assets/presets." in url]) == 2  # type: ignore[attr-defined]


def caught(page: Page, held: list[Route]) -> Route:
    """The one request a holding route (a handler that keeps it in `held`) caught."""
    for _ in range(200):  # the route's handler runs when Playwright next reads its events: let it read them
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    return held[0]


def test_while_a_preset_loads_the_page_says_so_then_shows_it(opened: Page):
    held: list[Route] = []
    opened.route("**/assets/presets.*/qwen2.5-14b.json", lambda route: held.append(route))
    opened.select_option('[name="model"]', "qwen2.5-14b")
    expect(opened.locator('[data-result="total-gb"]')).to_have_text("Loading the figures of Qwen2.5 14B (Instruct)…")
    expect(opened.locator("#calc-results")).to_have_attribute("aria-busy", "true")
    expect(opened.locator("#calc-options")).to_be_hidden()
    opened.select_option('[name="mode"]', "full")  # another field meanwhile: still loading, no other model's figures
    expect(opened.locator('[data-result="total-gb"]')).to_have_text("Loading the figures of Qwen2.5 14B (Instruct)…")
    caught(opened, held).continue_()
    expect(opened.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    expect(opened.locator('[name="layers"]')).to_have_value("48")
    expect(opened).to_have_url(re.compile(r"model=qwen2\.5-14b&params=14\.77"))


def test_a_preset_that_cannot_be_fetched_is_a_clear_message_not_another_model(opened: Page):
    opened.route("**/assets/presets.*/mixtral-8x7b.json", lambda route: route.abort())
    opened.select_option('[name="model"]', "mixtral-8x7b")
    failed = "The figures of Mixtral 8x7B v0.1 could not be loaded. Check the connection and choose the model again."
    expect(opened.locator('[data-result="total-gb"]')).to_have_text(failed)
    expect(opened.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    assert opened.locator('[data-result="total-gb"]').get_attribute("data-value") is None
    opened.select_option('[name="weights"]', "fp8")  # still no figures of another model
    expect(opened.locator('[data-result="total-gb"]')).to_have_text(failed)
    opened.unroute("**/assets/presets.*/mixtral-8x7b.json")
    pick(opened, "llama-3.1-8b")
    pick(opened, "mixtral-8x7b")  # chosen again: asked again
    expect(opened.locator('[name="experts"]')).to_have_value("8")
    assert total(opened) == pytest.approx(python_total("mixtral-8x7b"), rel=1e-12)


def test_a_link_to_a_fetched_model_opens_on_it(page: Page, site_url: str):
    page.goto(f"{site_url}/en/calculator/?model=deepseek-v3&context=4096")
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator('[name="model"]')).to_have_value("deepseek-v3")
    expect(page.locator('[name="heads"]')).to_have_value("128")
    assert total(page) == pytest.approx(python_total("deepseek-v3", 4096), rel=1e-12)
    expect(page.locator('[name="model"] option:checked')).to_have_text("DeepSeek-V3 (671B MoE)")


def test_a_link_to_no_catalog_model_opens_as_a_custom_one(page: Page, site_url: str):
    numbers = "params=13&layers=40&heads=40&kv_heads=40&head_dim=128&hidden=5120&vocab=32000&tied=0&intermediate=13824"
    page.goto(f"{site_url}/en/calculator/?model=no-such-model&{numbers}")
    expect(page.locator('[name="model"]')).to_have_value("custom")
    expect(page.locator('[name="layers"]')).to_have_value("40")
    expect(page.locator('[data-result="total-gb"]')).to_have_attribute("data-value", re.compile(r"^\d"))


def test_a_list_that_cannot_be_fetched_is_said_next_to_the_choice(page: Page, site_url: str):
    page.route(re.compile(r".*/assets/presets\.[0-9a-f]+\.json$"), lambda route: route.abort())
    page.goto(f"{site_url}/en/calculator/")
    message = "The list of models could not be loaded: reload the page to choose another model."
    expect(page.locator("#calc-model-error")).to_have_text(message)
    expect(page.locator('[name="model"] option')).to_have_count(2)
    page.locator('[name="context"]').fill("4096")
    page.locator('[name="context"]').dispatch_event("input")
    expect(page.locator("#calc-model-error")).to_have_text(message)  # kept through a new result
    assert total(page) == pytest.approx(python_total("llama-3.1-8b", 4096), rel=1e-12)
