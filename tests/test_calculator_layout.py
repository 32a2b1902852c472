"""The calculator laid out as a tool (issue 25, part 4), in Chromium at 390 × 844 and 1280 × 900: on a phone the
total and the first configuration right under the model and workload fields, the architecture folded, the brief kept
in view; on a desk the result beside the inputs; the configurations a table sorted by its headings as Python orders
them."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from gpumem.catalog.inputs import load_catalog
from gpumem.figures import calculator as compute_calculator
from gpumem.figures import shared
from gpumem.figures.calculator_data import SHOWN_CONFIGURATIONS
from gpumem.pages.formats import Formats

from .project import CATALOGS

CATALOG = load_catalog(CATALOGS)
SHOP = shared.Shop(CATALOG)
URLS = {"es": "/es/calculadora/", "en": "/en/calculator/", "pt": "/pt/calculadora/", "fr": "/fr/calculateur/", "de": "/de/rechner/"}
PHONE, DESK = {"width": 390, "height": 844}, {"width": 1280, "height": 900}
LINK = "?model=llama-3.1-70b&weights=awq&kv=bf16&gpus=2&batch=4&context=8192"


def opened(browser: Browser, size: dict, address: str) -> Page:
    page = browser.new_page(viewport=size)
    page.goto(address)
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator('[name="model"] option')).to_have_count(len(CATALOG.models) + 1)  # the preset list came
    return page


def box(page: Page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return found


def shown_order(page: Page) -> list[str]:
    """Each row's configuration as its heading cell names it ("4 × RTX 3090"), hidden rows included."""
    return page.locator("#calc-options tr").evaluate_all("rows => rows.map(r => r.cells[0].firstChild.textContent.trim())")


def python_order(sort: str) -> list[str]:
    found = compute_calculator.serving(CATALOG, SHOP, CATALOG.model("llama-3.1-70b"), "awq", "bf16", 2, 8192, 4, sort=sort)
    return [f"{fit.configuration.count} × {fit.configuration.gpu.name}" for fit, _ in found.rows]


@pytest.mark.parametrize("lang", list(URLS))
def test_on_a_phone_the_total_and_the_first_configuration_come_right_after_the_fields(browser: Browser, site_url: str, lang: str):
    page = opened(browser, PHONE, site_url + URLS[lang] + LINK)
    expect(page.locator("#calc-arch")).not_to_have_attribute("open", "")  # folded
    expect(page.locator('[name="params"]')).to_be_hidden()
    workload = box(page, "#calc-form fieldset:nth-of-type(2)")
    first = box(page, "#calc-options tr")
    total = box(page, ".calc-total")
    # within half a screen under the workload's last field, the total first
    assert workload["y"] + workload["height"] <= total["y"] < first["y"]
    assert first["y"] + first["height"] <= workload["y"] + workload["height"] + PHONE["height"] / 2, (workload, first)
    if lang == "en":  # and it starts on the first screen
        assert first["y"] < PHONE["height"], first
    # the deciding columns are on the screen: the configuration, its price per hour, tokens/s and US$ per million
    for column in range(1, 5):
        cell = box(page, f"#calc-options tr:first-child > :nth-child({column})")
        assert cell["x"] + cell["width"] <= PHONE["width"], (column, cell)
    page.close()


def test_on_a_phone_the_brief_stays_in_view_over_the_architecture_fields(browser: Browser, site_url: str):
    page = opened(browser, PHONE, site_url + URLS["en"] + LINK)
    page.locator("#calc-arch > summary").click()
    expect(page.locator('[name="params"]')).to_be_visible()
    page.locator('[name="params"]').evaluate("field => field.scrollIntoView({block: 'start'})")
    page.locator('[name="params"]').fill("70")  # a custom model of Llama 3.1 70B's shape and 70 billion parameters
    expect(page.locator('[name="model"]')).to_have_value("custom")
    brief = box(page, "#calc-brief")
    assert 0 <= brief["y"] and brief["y"] + brief["height"] <= PHONE["height"], brief
    assert box(page, '[name="params"]')["y"] + box(page, '[name="params"]')["height"] < brief["y"]  # not hiding the field
    model = compute_calculator.custom_model(70, CATALOG.model("llama-3.1-70b").arch)
    fit, pace = compute_calculator.serving(CATALOG, SHOP, model, "awq", "bf16", 2, 8192, 4).rows[0]
    unit = Formats("en", CATALOG.snapshot.currency)
    c = fit.configuration
    speed = unit.number(pace.aggregate_tokens_per_s, 1)
    expect(page.locator("#calc-best")).to_have_text(f"{c.count} × {c.gpu.name}, {unit.money(c.price_per_hour)} per hour, {speed} tokens/s")
    page.close()


def test_the_fold_opens_for_a_custom_model_and_for_an_error_in_it(browser: Browser, site_url: str):
    page = opened(browser, PHONE, site_url + URLS["en"] + LINK)
    page.select_option('[name="model"]', "custom")
    expect(page.locator("#calc-arch")).to_have_attribute("open", "")
    page.close()
    page = opened(browser, PHONE, site_url + URLS["en"] + "?model=custom&params=8&layers=0")
    expect(page.locator("#calc-arch")).to_have_attribute("open", "")
    expect(page.locator("#calc-layers-error")).to_have_text("Enter a number above zero.")
    page.close()


def test_on_a_desk_the_result_is_beside_the_inputs(browser: Browser, site_url: str):
    page = opened(browser, DESK, site_url + URLS["en"] + LINK)
    inputs, result, brief = box(page, "#calc-form"), box(page, "#calc-results"), box(page, "#calc-brief")
    assert brief["x"] >= inputs["x"] + inputs["width"] and result["x"] >= inputs["x"] + inputs["width"]
    assert brief["y"] == pytest.approx(inputs["y"], abs=8)  # side by side from the top
    first = box(page, "#calc-options tr")
    assert first["y"] + first["height"] < DESK["height"]  # the first configuration on the first screen
    assert box(page, "#calculator")["width"] > box(page, "article h1")["width"]  # wider than the text column
    assert page.locator(".calc-table").evaluate("box => box.scrollWidth <= box.clientWidth")  # every column in view
    page.select_option('[name="mode"]', "lora")  # the longest form: its last field scrolled to, the result beside it
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    page.locator('[name="offload"]').scroll_into_view_if_needed()
    page.locator('[name="offload"]').evaluate("field => field.scrollIntoView({block: 'end'})")
    expect(page.locator("#calc-brief")).to_be_in_viewport()
    expect(page.locator("#calc-options tr").first).to_be_in_viewport()
    page.close()


@pytest.mark.parametrize("size", [PHONE, DESK])
def test_no_option_of_the_preset_choice_is_clipped(browser: Browser, site_url: str, size: dict):
    """The issue's 'Custom model' clipped in its select at 1280 px: every option's text fits the select's box."""
    page = opened(browser, size, site_url + URLS["de"])
    over = page.locator('[name="model"]').evaluate(
        """select => {
            const style = getComputedStyle(select), context = document.createElement("canvas").getContext("2d");
            context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
            const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24;
            return [...select.options].map(o => o.text).filter(text => context.measureText(text).width > room);
        }"""
    )
    assert over == []
    page.close()


@pytest.mark.parametrize(
    ("heading", "sort", "direction"),
    [
        ("Tokens per second", "speed", "descending"),
        ("US$ per million tokens", "cost", "ascending"),
        ("Price per hour", "price", "ascending"),
    ],
)
def test_each_sorting_heading_orders_the_rows_as_python(browser: Browser, site_url: str, heading: str, sort: str, direction: str):
    page = opened(browser, DESK, site_url + URLS["en"] + LINK)
    assert shown_order(page) == python_order("price")
    expect(page.get_by_role("columnheader", name="Price per hour")).to_have_attribute("aria-sort", "ascending")
    page.get_by_role("button", name=heading, exact=True).click()
    expect(page.get_by_role("columnheader", name=heading, exact=True)).to_have_attribute("aria-sort", direction)
    assert shown_order(page) == python_order(sort)
    shown = min(SHOWN_CONFIGURATIONS, len(python_order(sort)))  # the others hidden until "Show all"
    expect(page.locator("#calc-options").get_by_role("rowheader")).to_have_count(shown)
    assert page.url.endswith(f"&sort={sort}")  # the link keeps the order
    others = [name for name in ("Price per hour", "Tokens per second", "US$ per million tokens") if name != heading]
    for name in others:
        assert page.get_by_role("columnheader", name=name, exact=True).get_attribute("aria-sort") is None
    expect(page.get_by_role("button", name=heading, exact=True)).to_be_focused()  # the headings stay: the focus too
    page.goto(page.url)  # and the link opens on it
    expect(page.get_by_role("columnheader", name=heading, exact=True)).to_have_attribute("aria-sort", direction)
    assert shown_order(page) == python_order(sort)
    page.close()


def test_the_page_s_own_rows_sort_before_any_input(browser: Browser, site_url: str):
    """The opening result is the build's: its headings get their buttons as the script starts."""
    page = opened(browser, PHONE, site_url + URLS["fr"])
    expect(page.locator("#calculator thead button")).to_have_count(3)
    page.get_by_role("button", name="Tokens par seconde", exact=True).click()
    expect(page.get_by_role("columnheader", name="Tokens par seconde", exact=True)).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#calc-order")).to_have_text(
        "D’abord celle qui génère le plus de tokens par seconde (requêtes simultanées\u202f: 1)."
    )
    assert page.url.endswith("&sort=speed")
    page.close()


def test_without_javascript_the_table_opens_on_the_price_order(browser: Browser, site_url: str):
    context = browser.new_context(java_script_enabled=False, viewport=PHONE)
    page = context.new_page()
    page.goto(site_url + URLS["pt"])
    expect(page.get_by_role("columnheader", name="Preço por hora")).to_have_attribute("aria-sort", "ascending")
    expect(page.locator("#calculator thead th")).to_have_text(
        [
            "GPUs",
            "Preço por hora",
            "Tokens por segundo",
            "US$ por milhão de tokens",
            "Por requisição (tokens/s)",
            "Primeiro token (s)",
            "Entrada (US$ por milhão de tokens)",
            "Alugar",
        ]
    )
    expect(page.locator("#calc-arch")).not_to_have_attribute("open", "")
    default = compute_calculator.calculator_default(CATALOG, SHOP).serving
    assert default is not None
    # each row's first cell heads it (a th without scope, a row header by the table algorithm)
    expect(page.locator("#calc-options").get_by_role("rowheader")).to_have_count(len(default.fits))
    first, pace = default.rows[0]
    unit, c = Formats("pt", CATALOG.snapshot.currency), first.configuration
    speed = unit.number(pace.aggregate_tokens_per_s, 1)
    expect(page.locator("#calc-best")).to_have_text(f"{c.count} × {c.gpu.name}, {unit.money(c.price_per_hour)}/h, {speed} tokens/s")
    context.close()
