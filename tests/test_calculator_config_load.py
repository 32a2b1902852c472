"""config.js, the counting of a pasted config.json and the check of a link's extra=, loaded on demand with what it reads
beyond the page (assets/config-data.<digest>.json, the counting data, and <lang>.json, the messages only it shows): a
link that carries extra= loads them, the page saying so meanwhile, and saying when it could not (never a figure
without the link's extra=)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from gpumem.catalog.hf_config import count
from gpumem.figures import calculator as compute_calculator
from gpumem.pages.formats import Formats

from .javascript import config_words, counting_file
from .project import REPO, published
from .test_calculator import CATALOG, SHOP, URLS
from .test_calculator_presets import caught

CONFIG = "**/assets/config.*.js"
WORDS = "**/assets/config-data.*/*.json"
FAILED = {
    "en": "The config.json reader could not be loaded: check the connection and open the link again.",
    "fr": "Le lecteur de config.json n’a pas pu être chargé\u202f: vérifiez la connexion et ouvrez de nouveau le lien.",
}
PASTED = REPO / "tests/fixtures/hf_configs/deepseek-v3.json"  # MLA and shared experts: what only extra= says


def test_the_page_names_config_js_and_its_files_and_carries_neither(built_site: Path):
    root_of = {"config": published(built_site, "config.js"), "config-data": counting_file(built_site).with_suffix("")}
    for lang, url in URLS.items():
        html = (built_site / url.strip("/") / "index.html").read_text()
        root = re.search(r'<section id="calculator"[^>]*>', html).group(0)
        found = dict(re.findall(r'data-(config(?:-data|-words)?)="/([^"]+)"', root))
        assert found == {
            "config": root_of["config"].relative_to(built_site).as_posix(),
            "config-data": root_of["config-data"].relative_to(built_site).as_posix(),
            "config-words": config_words(built_site, lang).relative_to(built_site).as_posix(),
        }
        data = json.loads(re.search(r'id="calculator-data">(.*?)</script>', html, re.S).group(1))
        assert data["counting"] == {"gatedMatrices": 3}  # the engines' one; config.js's come with it
        messages = json.loads(re.search(r'id="calculator-messages">(.*?)</script>', html, re.S).group(1))
        words = json.loads(config_words(built_site, lang).read_text())
        assert sorted(words) == ["errors", "shown"] and "shown" not in messages
        assert not set(words["errors"]) & set(messages["errors"])
    english = json.loads(config_words(built_site, "en").read_text())
    assert english["errors"]["object"] == "Expected a JSON object (a config.json)."
    assert english["shown"]["list"] == "a list of %(count)s items"


def pasted_link(page: Page, site_url: str, lang: str) -> str:
    """The link the page writes for the pasted config.json (custom fields and extra=)."""
    page.goto(site_url + URLS[lang])
    page.locator('[name="config"]').fill(PASTED.read_text())
    expect(page.locator('[name="model"]')).to_have_value("custom")
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    link = page.locator("#calc-link").input_value()
    assert "extra=" in link
    return link


def loads(requests: list[str]) -> list[str]:
    """What the page asked for of config.js and its files, by kind."""
    kinds = (
        ("config.js", r"/assets/config\.\w+\.js$"),
        ("data", r"/assets/config-data\.\w+\.json$"),
        ("words", r"/config-data\.\w+/\w+\.json$"),
    )
    return sorted(kind for url in requests for kind, pattern in kinds if re.search(pattern, url))


def test_a_link_with_extra_loads_the_reader_says_so_then_shows_the_python_figures(page: Page, site_url: str):
    link = pasted_link(page, site_url, "en")
    counted = count(json.loads(PASTED.read_text()), CATALOG.rules.calculator_limits)
    model = compute_calculator.custom_model(counted.params / 1e9, counted.arch)
    found = compute_calculator.serving(CATALOG, SHOP, model, counted.release, "bf16", 1, 8192, 1)
    fit, pace = found.rows[0]
    unit = Formats("en", CATALOG.snapshot.currency)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    held: list[Route] = []
    page.route(CONFIG, lambda route: held.append(route))
    page.goto(link, wait_until="domcontentloaded")  # the held script holds the page's load event
    total = page.locator('[data-result="total-gb"]')
    expect(total).to_have_text("Loading the config.json reader for the link's extra=…")
    expect(page.locator("#calc-results")).to_have_attribute("aria-busy", "true")
    expect(page.locator("#calc-options")).to_be_hidden()
    caught(page, held).continue_()
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    expect(total).to_have_attribute("data-value", compute_calculator.js_number(found.total_bytes / 1e9))
    first = page.locator("#calc-options tr").first
    expect(first.locator("th")).to_contain_text(f"{fit.configuration.count} × {fit.configuration.gpu.name} ")
    expect(first.locator("td").nth(3)).to_have_text(unit.number(pace.decode_tokens_per_s_per_request, 1))  # tokens/s per request
    expect(page).to_have_url(link)  # the link's extra= kept as it came
    assert loads(requests) == ["config.js", "data", "words"]


@pytest.mark.parametrize("lang", list(FAILED))
@pytest.mark.parametrize("missing", [CONFIG, WORDS])
def test_a_reader_that_cannot_be_loaded_for_a_link_is_a_clear_message(page: Page, site_url: str, lang: str, missing: str):
    link = pasted_link(page, site_url, lang)
    page.route(missing, lambda route: route.abort())
    page.goto(link)
    total = page.locator('[data-result="total-gb"]')
    expect(total).to_have_text(FAILED[lang])
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    assert total.get_attribute("data-value") is None  # no figure without the link's extra=
    expect(page.locator("#calc-summary")).to_be_hidden()
    page.locator('[name="batch"]').fill("2")  # another field meanwhile: still the message, no figures
    expect(total).to_have_text(FAILED[lang])
    assert total.get_attribute("data-value") is None
    assert page.url == link  # the link stays as it came, to open again
