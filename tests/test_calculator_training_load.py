"""training.js, the fine-tuning engine, loaded on demand: the calculator page links the serving scripts alone and names
training.js in data-training; calculator.js loads it once, when a reader or a link picks a fine-tuning mode, says so
meanwhile, and says when it could not (never another mode's figures), asking again when the mode is chosen again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from gpumem.figures import calculator as compute_calculator

from .project import published
from .test_calculator import URLS
from .test_calculator_presets import caught
from .test_calculator_training import DENSE, python_run, raw_state

TRAINING = "**/assets/training.*.js"
FAILED = {
    "en": "The fine-tuning engine could not be loaded. Check the connection and choose the mode again.",
    "fr": "Le moteur d’affinage n’a pas pu être chargé. Vérifiez la connexion et choisissez de nouveau le mode.",
}


def test_the_page_links_the_serving_scripts_alone_and_names_the_training_engine(built_site: Path):
    site = {
        name: "/" + published(built_site, name).relative_to(built_site).as_posix() for name in ("speed.js", "calculator.js", "training.js")
    }
    for url in URLS.values():
        html = (built_site / url.strip("/") / "index.html").read_text()
        assert re.findall(r'<script src="([^"]+)"', html) == [site["speed.js"], site["calculator.js"]]
        root = re.search(r'<section id="calculator"[^>]*>', html).group(0)
        assert re.findall(r'data-training="([^"]+)"', root) == [site["training.js"]]
        assert html.count(site["training.js"]) == 1  # nowhere else


def opened(page: Page, origin: str) -> Page:
    """The calculator page at `origin` (a page address and its query), its result shown, its requests recorded."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(origin)
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    page.requests = requests  # type: ignore[attr-defined]
    return page


def loads(page: Page) -> int:
    """How many times the page asked for training.js."""
    return len([url for url in page.requests if "/assets/training." in url])  # type: ignore[attr-defined]


def per_gpu(mode: str, **changes: object) -> str:
    """Python's bytes per GPU of a fine-tuning run on the page's opening model, as the page writes them."""
    return compute_calculator.js_number(python_run(raw_state(DENSE, mode, **changes)).need.total_bytes_per_gpu / 1e9)


def test_choosing_lora_loads_the_engine_once_says_so_meanwhile_and_shows_its_figures(page: Page, site_url: str):
    calculator = opened(page, site_url + URLS["en"])
    expect(calculator.locator('[data-result="total-gb"]')).to_have_attribute("data-value", re.compile(r"^\d"))
    assert loads(calculator) == 0  # serving needs no training.js
    held: list[Route] = []
    calculator.route(TRAINING, lambda route: held.append(route))
    calculator.select_option('[name="mode"]', "lora")
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("Loading the fine-tuning engine…")
    expect(calculator.locator("#calc-results")).to_have_attribute("aria-busy", "true")
    expect(calculator.locator("#calc-options")).to_be_hidden()
    caught(calculator, held).continue_()
    expect(calculator.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    expect(calculator.locator('[data-result="per-gpu-gb"]')).to_have_attribute("data-value", per_gpu("lora"))
    expect(calculator.locator("#calc-options")).to_be_visible()
    expect(calculator).to_have_url(re.compile(r"mode=lora"))
    calculator.select_option('[name="mode"]', "full")
    expect(calculator.locator('[data-result="per-gpu-gb"]')).to_have_attribute("data-value", per_gpu("full"))
    calculator.select_option('[name="mode"]', "qlora")
    expect(calculator.locator('[data-result="per-gpu-gb"]')).to_have_attribute("data-value", per_gpu("qlora"))
    assert loads(calculator) == 1


def test_a_link_in_qlora_loads_the_engine_and_shows_its_figures(page: Page, site_url: str):
    calculator = opened(page, f"{site_url}{URLS['en']}?model={DENSE}&mode=qlora&seq=2048")
    expect(calculator.locator('[data-result="per-gpu-gb"]')).to_have_attribute("data-value", per_gpu("qlora", seq=2048))
    expect(calculator.locator("#calc-parts li")).to_have_count(6)  # with QLoRA's dequantized copies
    expect(calculator.locator('[name="mode"]')).to_have_value("qlora")
    assert loads(calculator) == 1


@pytest.mark.parametrize("lang", list(FAILED))
def test_an_engine_that_cannot_be_loaded_is_a_clear_message_and_asked_again(page: Page, site_url: str, lang: str):
    calculator = opened(page, site_url + URLS[lang])
    calculator.route(TRAINING, lambda route: route.abort())
    calculator.select_option('[name="mode"]', "lora")
    total = calculator.locator('[data-result="total-gb"]')
    expect(total).to_have_text(FAILED[lang])
    expect(calculator.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    assert total.get_attribute("data-value") is None
    expect(calculator.locator("#calc-options")).to_be_hidden()  # no serving figures under a fine-tuning mode
    expect(calculator.locator("#calc-summary")).to_be_hidden()
    calculator.locator('[name="seq"]').fill("2048")  # another field meanwhile: still the message, no figures
    expect(total).to_have_text(FAILED[lang])
    assert total.get_attribute("data-value") is None
    assert loads(calculator) == 1  # not asked again until the mode is chosen again
    calculator.unroute(TRAINING)
    calculator.select_option('[name="mode"]', "qlora")  # chosen again: asked again
    expect(calculator.locator('[data-result="per-gpu-gb"]')).to_have_attribute("data-value", per_gpu("qlora", seq=2048))
    expect(calculator.locator("#calc-options")).to_be_visible()
    assert loads(calculator) == 2
