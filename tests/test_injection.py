"""Any string a catalog holds is text on the page: in HTML, in attributes and in inline JSON.

Hostile names are built into the fixture site and every page that shows them is opened in
Chromium: no script of theirs runs, no element of theirs appears, and the strings read back intact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from gpumem.commands.build import build
from gpumem.commands.serve import served

from .conftest import NOW, SNAPSHOT, edit, options_for

# Each tries another way out: closing the script element, leaving an attribute, an element
# with a handler, a comment, the line separators JavaScript parsers once choked on.
HOSTILE = {
    "model name": "</script><script>window.pwned='model name'</script>",
    "family": '"><img src=x onerror="window.pwned=\'family\'">',
    "licence": "<svg/onload=window.pwned='licence'>",
    "notes": "a\u2028b\u2029c <!--<script>window.pwned='notes'</script>",
    "gpu name": "<img src=x onerror=window.pwned='gpu'>",
    "gpu full name": "</SCRIPT ><script>window.pwned='gpu full name'</script>",
    "country": "'><script>window.pwned='country'</script>",
    "marketplace": "</script><script>window.pwned='marketplace'</script>\"'&",
}
# A rent template may hold anything but spaces: it must stay one attribute, and one JSON string.
HOSTILE_RENT = "https://x.example/rent?gpu={gpu}&count={count}&\"><script>window.pwned='rent'</script>"


def yaml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted string


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import shutil

    from .project import CATALOGS, REPO

    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(CATALOGS, root / "catalogs")
    shutil.copytree(REPO / "content", root / "content")
    models, gpus = root / "catalogs/models.yaml", root / "catalogs/gpus.yaml"
    edit(models, 'name: "Llama 3.1 8B"', f"name: {yaml_string(HOSTILE['model name'])}")
    edit(models, "family: llama3", f"family: {yaml_string(HOSTILE['family'])}")
    edit(models, 'license: {name: "Llama 3.1 Community License"', f"license: {{name: {yaml_string(HOSTILE['licence'])}")
    edit(models, 'notes: "GQA full attention;', f"notes: {yaml_string(HOSTILE['notes'])[:-1]} GQA full attention;")
    edit(gpus, 'name: "RTX 4090"', f"name: {yaml_string(HOSTILE['gpu name'])}")
    edit(gpus, 'full_name: "GeForce RTX 4090"', f"full_name: {yaml_string(HOSTILE['gpu full name'])}")
    edit(root / "catalogs/prices" / SNAPSHOT, 'country: "US"', f"country: {yaml_string(HOSTILE['country'])}")
    edit(root / "content/site.yaml", "  name: Arrakis", f"  name: {yaml_string(HOSTILE['marketplace'])}")
    edit(
        root / "content/site.yaml",
        'rent_url: "https://arrakis.example.org/rent?gpu={gpu}&count={count}"',
        f"rent_url: {yaml_string(HOSTILE_RENT)}",
    )
    build(options_for(root), now=NOW)
    with served(root / "site") as origin:
        yield origin


PAGES = [
    "",
    "en/",
    "fr/guides/memoire-gpu/",
    "de/ratgeber/inferenz-dimensionieren/",
    "en/models/llama-3.1-8b/",
    "en/gpus/rtx-4090/",
    "en/guides/gpu-memory/",
    "en/prices/",
    "en/calculator/?model=llama-3.1-8b",
    "es/calculadora/?model=llama-3.1-8b",
]


@pytest.mark.parametrize("path", PAGES)
def test_no_hostile_string_runs_or_becomes_markup(page: Page, hostile_site: str, path: str):
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{hostile_site}/{path}")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("() => window.pwned") is None
    assert dialogs == []
    assert [url for url in requests if url.endswith("/x")] == []
    assert page.locator("img[src=x], svg[onload], script:not([src]):not([type])").count() == 0


def test_hostile_names_read_back_intact(page: Page, hostile_site: str):
    page.goto(f"{hostile_site}/en/models/llama-3.1-8b/")
    assert HOSTILE["model name"] in page.locator("h1").inner_text()
    page.goto(f"{hostile_site}/en/calculator/?model=llama-3.1-8b")
    data = page.evaluate("() => JSON.parse(document.getElementById('calculator-data').textContent)")
    name = data["gpuFields"].index("name")  # the GPUs are rows; the models' names are in the form alone
    assert HOSTILE["gpu name"] in [row[name] for row in data["gpus"].values()]
    assert page.locator('[name="model"] option[value="llama-3.1-8b"]').inner_text() == HOSTILE["model name"]
    page.select_option('[name="model"]', "llama-3.1-8b")  # the script writes the results again
    assert page.evaluate("() => window.pwned") is None


def test_the_json_escapes_what_could_end_a_script(hostile_site: str):
    from urllib.request import urlopen

    html = urlopen(f"{hostile_site}/en/calculator/").read().decode()
    data = html.split('<script type="application/json" id="calculator-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data and "&" not in data
    assert "\u2028" not in data and "\u2029" not in data
    assert "\\u003cimg src=x onerror=window.pwned='gpu'\\u003e" in data
    html = urlopen(f"{hostile_site}/en/models/llama-3.1-8b/").read().decode()
    linked = html.split('<script type="application/ld+json">', 1)[1].split("</script>", 1)[0]
    assert "<" not in linked and ">" not in linked and "&" not in linked
    assert "\\u003c/script\\u003e\\u003cscript\\u003ewindow.pwned='model name'\\u003c/script\\u003e" in linked


def test_script_json_escapes_each_character():
    from gpumem.pages.render import script_json

    assert str(script_json({"a": "<>&\u2028\u2029"})) == '{"a": "\\u003c\\u003e\\u0026\\u2028\\u2029"}'
    assert str(script_json('"</script>"')) == '"\\u003c/script\\u003e"'


def test_the_hostile_marketplace_reads_back_intact(page: Page, hostile_site: str):
    page.goto(f"{hostile_site}/en/models/llama-3.1-8b/")
    assert page.locator("p.snapshot").inner_text().startswith(f"Prices from the {HOSTILE['marketplace']} snapshot of ")
    rent = page.locator("a.rent").first
    assert rent.inner_text() == f"Rent on {HOSTILE['marketplace']}"
    assert rent.get_attribute("href") == HOSTILE_RENT.format(gpu="rtx-3090", count=1)
    page.goto(f"{hostile_site}/en/calculator/?model=llama-3.1-8b")
    assert page.locator("#calc-options a.rent").first.get_attribute("href") == HOSTILE_RENT.format(gpu="rtx-3090", count=1)
    assert page.evaluate("() => window.pwned") is None
