"""The calculator's engines without a browser: the scripts a build published (minified, as a reader's browser gets
them) run in QuickJS, an embedded JavaScript engine, so the fast tier compares them with the Python engines.

At load time the scripts touch only `window` (they publish gpumemTraining, gpumemSpeed, gpumemCalculator and gpumemConfig on it)
and `document.getElementById("calculator")`, which is null here, so calculator.js starts no form. The stub below
gives them that, and the page's #calculator-data, so a test's JavaScript reads the build's JSON as it does in
Chromium: the same snippets run in both (see evaluate). QuickJS has no fetch: every preset file the build published
is handed to the script as a fetch would (gpumemCalculator.remember), and so is the counting data config.js reads
(gpumemConfig.know). Hand-written: it is a dozen lines over the
quickjs package.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import quickjs

from .project import published

# In the page's order (templates/calculator.html), then the scripts calculator.js loads on demand: training.js (a
# fine-tuning mode) and config.js (a paste), which read window.gpumemCalculator as they load.
SCRIPTS = ("speed.js", "calculator.js", "training.js", "config.js")
STUB = """
var window = globalThis;
var document = {getElementById: function (id) { return id === "calculator-data" ? {textContent: CALCULATOR_DATA} : null; }};
"""


def fetch_presets(page: Any, ids: Any) -> None:
    """In Chromium (a Playwright page), the preset files of these models fetched as the page fetches them, so the
    scripts' engines know them as QuickJS does (Scripts)."""
    page.evaluate("ids => Promise.all(ids.map(id => window.gpumemCalculator.loadPreset(id)))", sorted(set(ids)))


def load_training(page: Any) -> None:
    """In Chromium, training.js loaded from the address the page names (data-training), as the page loads it when a
    reader picks a fine-tuning mode, so a test can call the engine as it does in QuickJS."""
    page.add_script_tag(url=page.locator("#calculator").get_attribute("data-training"))


def load_config(page: Any) -> None:
    """In Chromium, config.js and the counting data it reads, from the addresses the page names (data-config,
    data-config-data), as the page loads them when a reader pastes or a link carries extra=."""
    page.add_script_tag(url=page.locator("#calculator").get_attribute("data-config"))
    page.evaluate("""() => fetch(document.getElementById("calculator").getAttribute("data-config-data") + ".json")
        .then(response => response.json()).then(counting => window.gpumemConfig.know(counting))""")


def calculator_data(site: Path) -> str:
    """The English calculator page's #calculator-data, the text the browser gives the scripts."""
    page = (site / "en/calculator/index.html").read_text()
    found = re.search(r'<script type="application/json" id="calculator-data">(.*?)</script>', page, re.S)
    assert found is not None
    return found.group(1)  # a script element's text is not HTML-decoded


def counting_file(site: Path) -> Path:
    """What config.js reads beyond the page's data, as a build published it: assets/config-data.<digest>.json."""
    found = sorted((site / "assets").glob("config-data.*.json"))
    assert len(found) == 1, found
    return found[0]


def config_words(site: Path, lang: str) -> Path:
    """The messages only config.js shows, in one language, as a build published them: assets/config-data.<digest>/<lang>.json."""
    return counting_file(site).with_suffix("") / f"{lang}.json"


def preset_folder(site: Path) -> Path:
    """The folder of preset files a build published: assets/presets.<digest>/."""
    found = [path for path in (site / "assets").glob("presets.*") if path.is_dir()]
    assert len(found) == 1, found
    return found[0]


class Scripts:
    """The published calculator scripts loaded in one QuickJS context."""

    def __init__(self, site: Path) -> None:
        self.context = quickjs.Context()
        self.context.set("CALCULATOR_DATA", calculator_data(site))
        self.context.eval(STUB)
        for name in SCRIPTS:
            self.context.eval(published(site, name).read_text())
        for path in sorted(preset_folder(site).iterdir()):
            self.context.eval(f"window.gpumemCalculator.remember({path.read_text()})")
        self.context.eval(f"window.gpumemConfig.know({counting_file(site).read_text()})")  # fetched with config.js

    def evaluate(self, function: str, argument: Any = None) -> Any:
        """Call a JavaScript function's source with argument, as Playwright's page.evaluate does; the result
        comes back through JSON (numbers to the last bit: JSON.stringify writes the shortest exact form)."""
        text = self.context.eval(f"JSON.stringify(({function})({json.dumps(argument)}))")
        return None if text is None else json.loads(text)
