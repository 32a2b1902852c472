"""The model and GPU index pages: one table each, the figures of the pages their rows link to,
in the navigation of every page, sortable and filterable in a browser and complete without JavaScript."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from gpumem.catalog.inputs import load_catalog
from gpumem.figures.index import gpus_index, models_index
from gpumem.figures.shared import Shop
from gpumem.figures.subjects import model_page

from .project import CATALOGS, published

INDEXES = {
    "es": ("modelos", "gpus"),
    "en": ("models", "gpus"),
    "pt": ("modelos", "gpus"),
    "fr": ("modeles", "gpu"),
    "de": ("modelle", "gpus"),
}


def rows(site: Path, page: str) -> dict[str, list[str]]:
    """A page's index table: each body row's cells as text (tags dropped, spaces collapsed), by its first cell."""
    html = (site / page / "index.html").read_text()
    body = html[html.index("<tbody>") : html.index("</tbody>")]
    found = {}
    for row in re.findall(r"<tr\b.*?</tr>", body, re.S):
        cells = [
            re.sub(r"[ \n]+", " ", re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        found[cells[0]] = cells[1:]
    return found


def row_html(site: Path, page: str, name: str) -> str:
    html = (site / page / "index.html").read_text()
    return re.search(rf"<tr\b[^>]*>(?:(?!</tr>).)*>{re.escape(name)}</a></th>.*?</tr>", html, re.S).group(0)


def test_models_index_rows_in_spanish(built_site):
    found = rows(built_site, "es/modelos")
    assert len(found) == len(load_catalog(CATALOGS).models) == 28
    assert found["Qwen2.5 32B (Instruct)"] == [
        "qwen2.5",
        "32B",
        "BF16",
        "32.768",
        "70,9\xa0GB",
        "4 × RTX 3090 holgado",
        "0,76\xa0US$ Alquilar en Arrakis",
    ]
    # Llama 2 7B reads 4,096 tokens: its figure is for one request of 4,096, not the page's 8,192.
    assert found["Llama 2 7B"] == ["llama2", "7B", "BF16", "4.096", "17,1\xa0GB", "1 × RTX 3090 holgado", "0,19\xa0US$ Alquilar en Arrakis"]
    assert found["DeepSeek-V3 (671B MoE)"] == [
        "deepseek-v3",
        "671B",
        "FP8",
        "163.840",
        "676,3\xa0GB",
        "8 × RTX PRO 6000 holgado",
        "15,20\xa0US$ Alquilar en Arrakis",
    ]
    assert list(found)[:3] == ["Llama 3.2 1B", "Llama 3.2 3B", "Phi-3 mini 4K Instruct"]  # smallest first


def test_a_model_row_links_its_page_and_its_gpu_page_and_holds_raw_numbers_to_sort(built_site):
    row = row_html(built_site, "en/models", "Llama 2 7B")
    assert '<th scope="row"><a href="/en/models/llama-2-7b/">Llama 2 7B</a></th>' in row
    assert '<a href="/en/gpus/rtx-3090/">1 × RTX 3090</a>' in row
    assert '<td data-value="6.738415616">7B</td>' in row
    assert '<td data-value="4096">4,096</td>' in row
    assert '<td data-value="17.1353">17.1\xa0GB</td>' in row  # rows.need_data: four decimals sort as well
    assert (
        '<td data-value="0.19">$0.19 <a class="rent" data-holds="serve:llama-2-7b:bf16:bf16:4096:1" '
        'href="https://arrakis.example.org/rent?gpu=rtx-3090&amp;count=1">Rent on Arrakis</a></td>' in row
    )
    assert row.startswith("<tr><th")  # the filter reads the name and the family from the cells, no copy of them


def test_the_models_caption_and_note_state_the_workload(built_site):
    html = (built_site / "en/models/index.html").read_text()
    assert (
        "Memory to serve each model in its release format, one request of 8,192 tokens or of its native context when shorter, "
        "and the cheapest configuration on offer <small>Scroll →</small></caption>"
    ) in html
    assert "Comfortable: the configuration also holds 3 more requests of the same length. Tight: it holds this one, not 3 more." in html


def test_gpus_index_rows_in_english_and_french(built_site):
    found = rows(built_site, "en/gpus")
    assert len(found) == len(load_catalog(CATALOGS).gpus) == 26
    assert found["L40S"] == ["NVIDIA", "48\xa0GB", "on offer", "$0.44", "$0.0092"]
    assert found["H200"] == ["NVIDIA", "141\xa0GB", "on offer", "$3.44", "$0.0244"]
    assert found["MI300X"] == ["AMD", "192\xa0GB", "not on offer", "—", "—"]
    assert list(found)[:3] == ["A10", "L4", "RTX 3090"]  # least memory first, then by name
    assert rows(built_site, "fr/gpu")["L40S"] == ["NVIDIA", "48\xa0Go", "proposé", "0,44\xa0$US", "0,0092\xa0$US"]
    row = row_html(built_site, "en/gpus", "L40S")
    assert '<td data-value="48.0">48\xa0GB</td>' in row
    assert '<td data-value="0.009166666666666667">$0.0092</td>' in row


def test_the_index_figures_are_the_model_pages_own():
    catalog = load_catalog(CATALOGS)
    shop = Shop(catalog)
    pages = {m.id: model_page(catalog, shop, m) for m in catalog.models}
    index = models_index(catalog, shop)
    assert index.context == 8192
    for row in index.rows:
        release = pages[row.model.id].formats[0]
        assert (row.fmt.name, row.need_gb, row.fit, row.context) == (
            row.model.release,
            release.need_gb,
            release.cheapest,
            pages[row.model.id].context,
        )
    assert [row.model.params_b for row in index.rows] == sorted(m.params_b for m in catalog.models)
    gpus = {row.gpu.id: row for row in gpus_index(catalog.gpus, shop.markets).rows}
    assert gpus["l40s"].price_per_gb_hour == 0.44 / 48
    assert gpus["mi300x"].market is None and gpus["mi300x"].price_per_gb_hour is None


def test_every_page_has_both_indexes_in_its_navigation(built_site):
    pages = sorted(built_site.glob("*/**/index.html"))
    assert len(pages) == 340
    for path in pages:
        lang = path.relative_to(built_site).parts[0]
        models, gpus = INDEXES[lang]
        nav = re.search(r'<nav aria-label="[^"]+">(.*?)</nav>', path.read_text(), re.S).group(1)
        assert f'<a href="/{lang}/{models}/"' in nav and f'<a href="/{lang}/{gpus}/"' in nav, path
    nav = (built_site / "de/modelle/index.html").read_text()
    assert '<a href="/de/modelle/" aria-current="page">Modelle</a>\n<a href="/de/gpus/">GPUs</a>' in nav


def test_index_pages_are_in_the_sitemap_with_their_translations(built_site):
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9", "x": "http://www.w3.org/1999/xhtml"}
    root = ET.parse(built_site / "sitemap.xml").getroot()
    entries = {url.find("s:loc", ns).text: url for url in root.findall("s:url", ns)}
    alternates = {link.get("hreflang"): link.get("href") for link in entries["https://gpumem.example.org/fr/gpu/"].findall("x:link", ns)}
    assert alternates == {
        "es": "https://gpumem.example.org/es/gpus/",
        "en": "https://gpumem.example.org/en/gpus/",
        "pt": "https://gpumem.example.org/pt/gpus/",
        "fr": "https://gpumem.example.org/fr/gpu/",
        "de": "https://gpumem.example.org/de/gpus/",
        "x-default": "https://gpumem.example.org/es/gpus/",
    }
    switcher = (built_site / "pt/modelos/index.html").read_text()
    assert '<a href="/fr/modeles/" lang="fr" hreflang="fr">Français</a>' in switcher


def test_the_script_loads_only_on_the_index_pages_and_the_filter_waits_for_it(built_site):
    script = f"/assets/{published(built_site, 'tables.js').name}"
    loading = [str(p.relative_to(built_site).parent) for p in sorted(built_site.rglob("*.html")) if script in p.read_text()]
    assert loading == [f"{lang}/{name}" for lang in sorted(INDEXES) for name in sorted(INDEXES[lang])]
    html = (built_site / "es/modelos/index.html").read_text()
    assert f'<script src="{script}" defer></script>' in html
    assert '<p class="filter" hidden><label for="models-table-filter">Filtrar por nombre o familia</label>' in html


def names(page: Page) -> list[str]:
    return page.locator("#models-table tbody tr:visible th").all_inner_texts()


def test_a_reader_sorts_models_by_price_and_filters_qwen(page: Page, site_url: str):
    page.goto(f"{site_url}/en/models/")
    heading = page.get_by_role("columnheader", name="Price per hour")
    heading.get_by_role("button").click()
    expect(heading).to_have_attribute("aria-sort", "ascending")
    expect(page.get_by_role("columnheader", name="Size")).not_to_have_attribute("aria-sort", re.compile("."))
    prices = page.locator("#models-table tbody td:last-child").evaluate_all("cells => cells.map(c => Number(c.dataset.value))")
    assert prices == sorted(prices) and prices[0] == 0.19 and prices[-1] == 18.4
    heading.get_by_role("button").click()
    expect(heading).to_have_attribute("aria-sort", "descending")
    assert names(page)[:3] == ["Llama 3.1 405B", "DeepSeek-V3 (671B MoE)", "Mixtral 8x22B v0.1"]
    page.get_by_label("Filter by name or family").fill("qwen")
    assert names(page) == [
        "Qwen2.5 72B (Instruct)",
        "Qwen3 30B-A3B (MoE)",
        "Qwen3 32B",
        "Qwen2.5 32B (Instruct)",
        "Qwen2.5 14B (Instruct)",
        "Qwen2.5 7B (Instruct)",
        "Qwen3 8B",
    ]
    heading.get_by_role("button").click()
    assert names(page) == [
        "Qwen2.5 7B (Instruct)",
        "Qwen3 8B",
        "Qwen2.5 14B (Instruct)",
        "Qwen3 30B-A3B (MoE)",
        "Qwen3 32B",
        "Qwen2.5 32B (Instruct)",
        "Qwen2.5 72B (Instruct)",
    ]
    page.get_by_role("link", name="Qwen2.5 32B (Instruct)").click()
    expect(page).to_have_url(f"{site_url}/en/models/qwen2.5-32b/")


def test_gpus_sort_by_price_with_the_ones_not_on_offer_last(page: Page, site_url: str):
    page.goto(f"{site_url}/es/gpus/")
    button = page.get_by_role("columnheader", name="Precio por GB-hora").get_by_role("button")
    button.click()
    gpus = page.locator("#gpus-table tbody th")
    expect(gpus.first).to_have_text("RTX 3090")
    expect(gpus.nth(10)).to_have_text("B200")  # the eleventh and last on offer
    expect(gpus.last).to_have_text("MI355X")
    button.click()
    expect(gpus.first).to_have_text("B200")
    expect(gpus.nth(10)).to_have_text("RTX 3090")
    search = page.get_by_label("Filtrar por nombre o fabricante")
    search.fill("amd")
    expect(page.locator("#gpus-table tbody tr:visible th")).to_have_text(["MI300X", "MI325X", "MI355X"])
    none = page.get_by_text("Ninguna fila coincide con este filtro.")
    expect(none).to_be_hidden()
    search.fill("intel")
    expect(page.locator("#gpus-table tbody tr:visible")).to_have_count(0)
    expect(none).to_be_visible()
    search.fill("")
    expect(page.locator("#gpus-table tbody tr:visible")).to_have_count(26)
    expect(none).to_be_hidden()


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/en/models/", "/fr/gpu/"])
def test_without_javascript_the_table_is_whole_and_the_filter_hidden(browser: Browser, site_url: str, path: str):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_url + path)
    expect(page.locator("p.filter")).to_be_hidden()
    assert page.locator("table.sortable tbody tr:visible").count() in (28, 26)
    assert page.locator("table.sortable th button").count() == 0
    context.close()
