"""Quality gates on the built site: valid HTML, accessibility, no console error, readable on a phone."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Page

from gpumem.pages.routes import page_url

from .project import REPO, published

VNU = REPO / "node_modules/vnu-jar/build/dist/vnu.jar"
AXE = REPO / "node_modules/axe-core/axe.min.js"
SITE = yaml.safe_load((REPO / "content/site.yaml").read_text())
MODELS = ("gemma-3-27b", "deepseek-v3", "mixtral-8x7b", "gpt-oss-120b", "llama-2-7b")
GPUS = ("l40s", "mi300x", "rtx-4090", "b300", "h200-sxm")


def kind_pages() -> list[str]:
    """One page of each kind in each language (a different model and GPU per language), and the
    model and GPU index pages (their kinds' routes without a subject)."""
    found = []
    for index, language in enumerate(SITE["languages"]):
        lang = language["code"]
        for key, routes in SITE["routes"].items():
            subject = {"model": MODELS[index], "gpu": GPUS[index]}.get(key, "")
            found.append("/" + page_url(lang, routes[lang], subject))
            if subject:
                found.append("/" + page_url(lang, routes[lang]))
    return found


PAGES = [*kind_pages(), "/", "/404.html", "/fr/404.html"]


def test_every_page_kind_is_listed_for_every_language(built_site):
    for path in PAGES:
        target = built_site / path.lstrip("/")
        assert (target / "index.html" if path.endswith("/") else target).is_file(), path


def test_nu_html_validator_finds_no_error(built_site):
    assert shutil.which("java"), "java is needed for the Nu HTML validator"
    result = subprocess.run(
        ["java", "-jar", str(VNU), "--errors-only", "--skip-non-html", str(built_site)], capture_output=True, text=True, timeout=300
    )
    assert result.stderr == ""
    assert result.returncode == 0


def test_the_validator_reports_an_error(tmp_path):
    (tmp_path / "bad.html").write_text('<!doctype html><html lang="en"><head><title>x</title></head><body><p><div></p></body></html>')
    result = subprocess.run(["java", "-jar", str(VNU), "--errors-only", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "No “p” element in scope but a “p” end tag seen." in result.stderr


def open_page(page: Page, url: str) -> list[str]:
    """Open a page, returning every console error, uncaught exception and request to another host."""
    errors: list[str] = []
    origin = url.split("/", 3)[2]
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: errors.append(f"request to {request.url}") if request.url.split("/", 3)[2] != origin else None)
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    page.wait_for_load_state("load")
    return errors


def axe_violations(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run()).violations")
    return [f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes: {v['nodes'][0]['target']})" for v in found]


@pytest.mark.parametrize("path", PAGES)
def test_axe_finds_no_violation_and_the_console_no_error(page: Page, site_url: str, path: str):
    errors = open_page(page, site_url + path)
    assert axe_violations(page) == []
    assert errors == []


@pytest.mark.parametrize("path", ["/es/guias/memoria-gpu/", "/de/modelle/llama-2-7b/", "/fr/gpu/b300/"])
def test_axe_finds_no_violation_in_dark_mode(page: Page, site_url: str, path: str):
    page.emulate_media(color_scheme="dark")
    open_page(page, site_url + path)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 20, 24)"
    assert axe_violations(page) == []


@pytest.mark.parametrize("path", PAGES)
def test_no_horizontal_scroll_on_a_360_px_phone(page: Page, site_url: str, path: str):
    page.set_viewport_size({"width": 360, "height": 740})
    open_page(page, site_url + path)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


def test_wide_tables_scroll_inside_their_own_box_on_a_phone(page: Page, site_url: str):
    page.set_viewport_size({"width": 360, "height": 740})
    open_page(page, site_url + "/en/models/llama-3.1-70b/")
    box = page.locator(".table-wrap").nth(1)
    assert box.evaluate("element => element.scrollWidth > element.clientWidth")
    assert box.evaluate("element => getComputedStyle(element).overflowX") == "auto"


def test_print_style_hides_navigation(page: Page, site_url: str):
    open_page(page, site_url + "/en/guides/gpu-memory/")
    page.emulate_media(media="print")
    assert page.locator(".top nav").first.evaluate("element => getComputedStyle(element).display") == "none"
    assert page.locator("main").evaluate("element => getComputedStyle(element).maxWidth") == "none"


def test_charts_have_a_text_alternative(page: Page, site_url: str):
    open_page(page, site_url + "/es/guias/vram-llm/")
    chart = page.get_by_role("img", name="Caché KV a 16 bits según la longitud del contexto, una petición")
    assert chart.count() == 1
    assert page.locator("figure figcaption").first.inner_text() != ""


def page_weight(site: Path, page: Path) -> int:
    """A page's bytes with the stylesheets and scripts it loads from the site."""
    html = page.read_text()
    loaded = re.findall(r'<link rel="stylesheet" href="/([^"]+)"', html) + re.findall(r'<script src="/([^"]+)"', html)
    return len(html.encode()) + sum((site / path).stat().st_size for path in loaded)


CALCULATOR_ROUTES = (["calculadora"], ["calculator"], ["calculateur"], ["rechner"])


def test_page_weight_budgets(built_site: Path):
    weights = {str(p.relative_to(built_site)): page_weight(built_site, p) for p in built_site.rglob("*.html")}
    calculators = {path: w for path, w in weights.items() if path.split("/")[1:2] in CALCULATOR_ROUTES}
    # The reference pages, the methodology (every format, GPU and measured check) and below it the sources of
    # rules.yaml: 100 kB each, as the calculator.
    references = {
        path: w for path, w in weights.items() if path.split("/")[1:2] in (["metodologia"], ["methodology"], ["methodologie"], ["methodik"])
    }
    others = {path: w for path, w in weights.items() if path not in calculators and path not in references}
    assert len(calculators) == 5 and len(references) == 10 and len(others) == 332
    heaviest = max(others, key=others.get)
    print(f"heaviest page: {heaviest} {others[heaviest]} bytes with its CSS and JavaScript; calculator {max(calculators.values())} bytes")
    assert others[heaviest] <= 40_000, heaviest
    assert max(references.values()) <= 100_000


def test_the_calculator_page_weighs_at_most_100_kb(built_site: Path):
    pages = [p for p in built_site.rglob("*.html") if str(p.relative_to(built_site)).split("/")[1:2] in CALCULATOR_ROUTES]
    assert len(pages) == 5
    assert max(page_weight(built_site, p) for p in pages) <= 100_000


def test_no_page_loads_anything_from_another_host(built_site: Path):
    loading = re.compile(r'<(?:link|script|img|iframe|source|video|audio|object|embed)\b[^>]*\b(?:src|href|data)="(https?:)?//', re.I)
    offenders = []
    for page in built_site.rglob("*.html"):
        html = page.read_text()
        for match in re.finditer(r"<link\b[^>]*>", html):
            tag = match.group(0)
            if 'rel="canonical"' in tag or 'rel="alternate"' in tag:
                continue  # links to the page's own addresses, not requests
            if re.search(r'href="(https?:)?//', tag):
                offenders.append(f"{page}: {tag}")
        offenders += [f"{page}: {m.group(0)}" for m in loading.finditer(html) if not m.group(0).startswith("<link")]
    assert offenders == []
    assert "url(" not in published(built_site, "style.css").read_text()
