"""The calculator in Debian's Chromium: same numbers as the Python engine, every mode, bad input, languages, keyboard."""

from __future__ import annotations

import json
import random
import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from gpumem import compute, compute_calculator, memory
from gpumem.build import load_catalog
from gpumem.records import Architecture, Attention
from gpumem.render import Formats

from .project import CATALOGS, REPO

CATALOG = load_catalog(CATALOGS)
SHOP = compute.Shop(CATALOG)
RULES = CATALOG.rules
URLS = {"es": "/es/calculadora/", "en": "/en/calculator/", "pt": "/pt/calculadora/", "fr": "/fr/calculateur/", "de": "/de/rechner/"}
PRESETS = ("llama-3.1-70b", "mixtral-8x22b", "gemma-2-9b", "gemma-3-27b", "gpt-oss-120b", "deepseek-v3", "qwen3-30b-a3b")


def raw_state(model: str, mode: str, weights: str, kv: str, batch: int, context: int, custom: tuple | None = None) -> dict:
    """A form state as strings, the way the page holds it."""
    if custom is None:
        m = CATALOG.model(model)
        custom = (m.params_b, m.arch.layers, m.arch.heads, m.arch.kv_heads, m.arch.head_dim)
    params, layers, heads, kv_heads, head_dim = custom
    values = dict(model=model, params=params, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    values.update(mode=mode, weights=weights, kv=kv, batch=batch, context=context)
    return {key: str(value) for key, value in values.items()}


def python_need(raw: dict) -> tuple[memory.Breakdown, tuple]:
    """The engine's figure and configurations for a form state."""
    if raw["model"] == "custom":
        arch = Architecture(int(raw["layers"]), int(raw["heads"]), int(raw["kv_heads"]), int(raw["head_dim"]), Attention())
    else:
        arch = CATALOG.model(raw["model"]).arch
    need = memory.memory_need(
        RULES, arch, float(raw["params"]), raw["mode"], raw["weights"], raw["kv"], int(raw["context"]), int(raw["batch"])
    )
    found = compute_calculator.calculator_choices(CATALOG, SHOP, arch, raw["mode"], raw["kv"], int(raw["context"]), need.total)
    return need, tuple((c.gpu.id, c.count, tight) for c, tight in found)


def generated_cases() -> list[dict]:
    """Every mode, precision and KV precision over presets (MoE, sliding window, MLA), custom models and extremes."""
    rng = random.Random(20261130)
    cases = []
    for mode in memory.MODES:
        for weights in RULES.precisions:
            for kv in RULES.kv_precisions:
                for model in (*PRESETS, "custom"):
                    batch, context = rng.choice([1, 2, 8, 64]), rng.choice([1, 100, 4096, 8192, 32768, 131072, 1_000_000])
                    custom = None
                    if model == "custom":
                        heads = rng.choice([8, 32, 40, 64, 96])
                        custom = (
                            round(rng.uniform(0.1, 900), 3),
                            rng.randint(1, 200),
                            heads,
                            rng.choice([1, heads]),
                            rng.choice([64, 128, 256]),
                        )
                    cases.append(raw_state(model, mode, weights, kv, batch, context, custom))
    limits = RULES.calculator_limits
    top = (
        limits["max_params_b"],
        int(limits["max_layers"]),
        int(limits["max_heads"]),
        int(limits["max_heads"]),
        int(limits["max_head_dim"]),
    )
    for mode in memory.MODES:
        cases.append(raw_state("custom", mode, "fp32", "bf16", int(limits["max_batch"]), int(limits["max_context"]), top))
        cases.append(raw_state("custom", mode, "int4", "int4", 1, 1, (0.001, 1, 1, 1, 1)))
        cases.append(raw_state("gemma-3-27b", mode, "bf16", "fp8", 3, 1024, None))
        cases.append(raw_state("gpt-oss-20b", mode, "fp8", "bf16", 5, 129, None))
    return cases


CASES = generated_cases()


@pytest.fixture
def calculator(page: Page, site_url: str) -> Page:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(site_url + URLS["en"])
    expect(page.locator('[data-result="total-gb"]')).to_have_attribute("data-value", re.compile(r"^\d"))
    page.requests = requests  # type: ignore[attr-defined]
    return page


def test_at_least_300_generated_cases_cover_every_mode_and_precision():
    assert len(CASES) >= 300
    assert {c["mode"] for c in CASES} == set(memory.MODES)
    assert {c["weights"] for c in CASES} == set(RULES.precisions)
    assert {c["kv"] for c in CASES} == set(RULES.kv_precisions)
    kinds = {CATALOG.model(c["model"]).arch.attention.kind for c in CASES if c["model"] != "custom"}
    assert kinds == {"full", "sliding", "mla"}
    assert any(CATALOG.model(c["model"]).is_moe for c in CASES if c["model"] != "custom")


def test_python_and_javascript_give_the_same_numbers(calculator: Page):
    results = calculator.evaluate(
        """cases => {
            const data = JSON.parse(document.getElementById("calculator-data").textContent);
            const c = window.gpumemCalculator;
            return cases.map(raw => {
                const checked = c.validate(data, raw);
                if (checked.errors) return {errors: checked.errors};
                const need = c.compute(data, checked.state);
                return {need, choices: c.choices(data, checked.state, need.total).map(o => [o.gpu, o.count, o.tight])};
            });
        }""",
        CASES,
    )
    assert len(results) == len(CASES)
    for raw, result in zip(CASES, results, strict=True):
        assert "errors" not in result, (raw, result)
        need, found = python_need(raw)
        for part in ("weights", "kv_cache", "gradients", "optimizer", "overhead", "total"):
            assert result["need"][part] == pytest.approx(getattr(need, part), rel=1e-9, abs=0), (raw, part)
        assert tuple(tuple(c) for c in result["choices"]) == found, raw


def fill(page: Page, name: str, value: str) -> None:
    page.locator(f'[name="{name}"]').fill(value)


def total(page: Page) -> float:
    return float(page.locator('[data-result="total-gb"]').get_attribute("data-value"))


def test_preset_fills_the_architecture_and_editing_switches_to_custom(calculator: Page):
    calculator.select_option('[name="model"]', "deepseek-v3")
    expect(calculator.locator('[name="params"]')).to_have_value("671.0264192")
    expect(calculator.locator('[name="heads"]')).to_have_value("128")
    need, _ = python_need(raw_state("deepseek-v3", "serve", "bf16", "bf16", 1, 8192))
    assert total(calculator) == pytest.approx(need.total, rel=1e-12)
    fill(calculator, "layers", "60")
    expect(calculator.locator('[name="model"]')).to_have_value("custom")


@pytest.mark.parametrize("mode", memory.MODES)
def test_each_mode(calculator: Page, mode: str):
    calculator.select_option('[name="model"]', "llama-3.1-70b")
    calculator.select_option('[name="mode"]', mode)
    need, found = python_need(raw_state("llama-3.1-70b", mode, "bf16", "bf16", 1, 8192))
    assert total(calculator) == pytest.approx(need.total, rel=1e-12)
    expect(calculator.locator("#calc-parts li")).to_have_count(
        sum(1 for p in ("weights", "kv_cache", "gradients", "optimizer", "overhead") if getattr(need, p))
    )
    expect(calculator.locator("#calc-options li")).to_have_count(len(found))
    first = CATALOG.gpu(found[0][0])
    expect(calculator.locator("#calc-options li").first).to_contain_text(f"{found[0][1]} × {first.name}")


def test_url_round_trip(calculator: Page, site_url: str):
    query = "model=custom&params=13&layers=40&heads=40&kv_heads=40&head_dim=128&mode=serve&weights=fp8&kv=fp8&batch=3&context=4096"
    calculator.goto(f"{site_url}/en/calculator/?{query}")
    expect(calculator.locator('[name="batch"]')).to_have_value("3")
    need, _ = python_need(raw_state("custom", "serve", "fp8", "fp8", 3, 4096, (13, 40, 40, 40, 128)))
    assert total(calculator) == pytest.approx(need.total, rel=1e-12)
    fill(calculator, "context", "8192")
    expect(calculator).to_have_url(re.compile(r"context=8192"))
    state = parse_qs(urlparse(calculator.url).query)
    assert state["context"] == ["8192"] and state["weights"] == ["fp8"] and state["model"] == ["custom"]
    link = calculator.locator("#calc-link").input_value()
    assert link == calculator.url
    calculator.goto(link)
    expect(calculator.locator('[name="context"]')).to_have_value("8192")
    need, _ = python_need(raw_state("custom", "serve", "fp8", "fp8", 3, 8192, (13, 40, 40, 40, 128)))
    assert total(calculator) == pytest.approx(need.total, rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("params", "", "Enter a value."),
        ("params", "0", "Enter a number above zero."),
        ("batch", "-4", "Enter a number above zero."),
        ("layers", "eighty", "Enter a number, such as 70 or 70.5."),
        ("params", "1e13", "Enter at most 5,000."),
        ("params", "10000", "Enter at most 5,000."),
        ("context", "10000001", "Enter at most 10,000,000."),
        ("context", "4096.5", "Enter a whole number."),
        ("kv_heads", "7", "KV heads must divide the 64 attention heads."),
        ("params", "1e400", "This number is too large."),
    ],
)
def test_bad_input_shows_a_message_next_to_the_field(calculator: Page, field: str, value: str, message: str):
    calculator.select_option('[name="model"]', "llama-3.1-70b")
    fill(calculator, field, value)
    expect(calculator.locator(f"#calc-{field}-error")).to_have_text(message)
    expect(calculator.locator(f'[name="{field}"]')).to_have_attribute("aria-invalid", "true")
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("Fix the marked fields to see the result.")
    fill(calculator, field, "4" if field != "params" else "70")
    expect(calculator.locator(f"#calc-{field}-error")).to_have_text("")


def test_bad_input_message_in_the_page_language(page: Page, site_url: str):
    page.goto(site_url + URLS["es"] + "?model=custom&params=cero&layers=80&heads=64&kv_heads=8&head_dim=128")
    expect(page.locator("#calc-params-error")).to_have_text("Introduce un número, como 70 o 70,5.")


@pytest.mark.parametrize("lang", list(URLS))
def test_numbers_are_formatted_like_the_babel_tables(page: Page, site_url: str, lang: str):
    f = Formats(lang, CATALOG.snapshot.currency)
    page.goto(site_url + URLS[lang] + "?model=llama-3.1-405b&mode=full")
    need, found = python_need(raw_state("llama-3.1-405b", "full", "bf16", "bf16", 1, 8192))
    expect(page.locator('[data-result="total-gb"]')).to_have_text(f.gb(need.total))
    formatted = page.evaluate(
        """values => values.map(v => new Intl.NumberFormat(document.documentElement.lang,
            {useGrouping: "always", maximumFractionDigits: 1, roundingMode: "halfEven"}).format(v))""",
        [0.05, 0.25, 1.05, 42.94967296, 1120, 1128.8, 6480, 123456.75, 10_000_000],
    )
    assert formatted == [f.number(v, 1) for v in [0.05, 0.25, 1.05, 42.94967296, 1120, 1128.8, 6480, 123456.75, 10_000_000]]
    prices = page.evaluate(
        """([values, currency]) => values.map(v => new Intl.NumberFormat(document.documentElement.lang,
            {style: "currency", currency, useGrouping: "always", roundingMode: "halfEven"}).format(v))""",
        [[0.19, 2.07, 27.52, 1234.5], CATALOG.snapshot.currency],
    )
    assert prices == [f.money(v) for v in [0.19, 2.07, 27.52, 1234.5]]


def test_keyboard_alone_drives_the_calculator(calculator: Page):
    calculator.locator('[name="model"]').focus()
    calculator.keyboard.press("End")  # the last preset
    last = CATALOG.models[-1]
    expect(calculator.locator('[name="model"]')).to_have_value(last.id)
    order = []
    for _ in range(11):
        calculator.keyboard.press("Tab")
        order.append(calculator.evaluate("document.activeElement.name || document.activeElement.id"))
    assert order == ["params", "layers", "heads", "kv_heads", "head_dim", "mode", "weights", "kv", "batch", "context", "calc-link"]
    calculator.locator('[name="batch"]').focus()
    calculator.keyboard.press("Control+a")
    calculator.keyboard.type("6")
    need, _ = python_need(raw_state(last.id, "serve", "bf16", "bf16", 6, 8192))
    assert total(calculator) == pytest.approx(need.total, rel=1e-12)
    calculator.locator('[name="mode"]').focus()
    calculator.keyboard.press("ArrowDown")
    expect(calculator.locator('[name="mode"]')).to_have_value("full")
    calculator.locator("#calc-copy").focus()
    calculator.keyboard.press("Enter")
    expect(calculator.locator("#calc-copied")).to_have_text("Link copied.")


def test_random_typing_never_shows_nan_infinity_or_undefined(calculator: Page):
    rng = random.Random(7)
    junk = ["", "0", "-1", "abc", "1e999", "NaN", "Infinity", "undefined", "1,5", ".", "9" * 30, " 12 ", "0.0000001", "1e-300", "٣"]
    choices = {
        "model": ["custom", *(m.id for m in CATALOG.models)],
        "mode": list(memory.MODES),
        "weights": list(RULES.precisions),
        "kv": list(RULES.kv_precisions),
    }
    for _ in range(200):
        field = rng.choice(["params", "layers", "heads", "kv_heads", "head_dim", "batch", "context", *choices])
        if field in choices:
            value = rng.choice(choices[field])
            calculator.select_option(f'[name="{field}"]', value)
        else:
            value = rng.choice(junk) if rng.random() < 0.5 else str(rng.choice([rng.randint(1, 5000), rng.uniform(0, 1e6)]))
            fill(calculator, field, value)
        text = calculator.locator("#calculator").inner_text()
        assert not re.search(r"NaN|Infinity|undefined|null", text), (field, value, text)
        assert calculator.locator('[data-result="total-gb"]').inner_text().strip() != ""


def test_light_fast_and_local(calculator: Page, built_site):
    script = (built_site / "assets/calculator.js").stat().st_size
    html = (built_site / "en/calculator/index.html").read_text()
    data = len(re.search(r'<script type="application/json" id="calculator-data">(.*?)</script>', html, re.S).group(1).encode())
    messages = len(re.search(r'<script type="application/json" id="calculator-messages">(.*?)</script>', html, re.S).group(1).encode())
    assert script + data + messages < 60_000
    per_run = calculator.evaluate(
        """() => {
            const input = document.querySelector('[name="context"]');
            const start = performance.now();
            for (let i = 0; i < 100; i++) {
                input.value = String(4096 + i);
                input.dispatchEvent(new Event("input", {bubbles: true}));
            }
            return (performance.now() - start) / 100;
        }"""
    )
    print(f"calculator recompute: {per_run:.3f} ms per run over 100 runs")
    assert per_run < 5
    origin = urlparse(calculator.url).netloc
    assert all(urlparse(url).netloc == origin for url in calculator.requests)  # type: ignore[attr-defined]


def test_constants_come_from_the_build_json_only():
    script = (REPO / "templates/static/calculator.js").read_text()
    code = re.sub(r"//.*", "", script)
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", code))
    # Not rules: 0 and 1, 2 (a key and a value; two decimals of a width), 100 (percent), 1e9 (bytes per GB).
    assert numbers == {"0", "1", "2", "100", "1e9"}


def test_the_page_carries_the_build_json(built_site):
    html = (built_site / "en/calculator/index.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="calculator-data">(.*?)</script>', html, re.S).group(1))
    assert data == json.loads(json.dumps(compute_calculator.calculator_data(CATALOG, SHOP)))
    assert data["runtimeOverhead"] == RULES.runtime_overhead
    assert len(data["models"]) == 28


@pytest.mark.parametrize("lang", list(URLS))
def test_the_page_opens_with_the_same_result_the_script_computes(page: Page, site_url: str, lang: str):
    """The build writes the opening state's result, so nothing moves when the script takes over."""
    page.goto(site_url + URLS[lang])
    parts = ["#calc-parts", "#calc-options", "#calc-counts", "#calc-note", ".calc-total"]
    served = [page.locator(selector).inner_html() for selector in parts]
    served_bar = page.locator("#calc-bar").evaluate("bar => [...bar.children].map(s => s.className + ' ' + s.style.width)")
    page.locator('[name="batch"]').dispatch_event("input")
    assert [page.locator(selector).inner_html() for selector in parts] == served
    assert page.locator("#calc-bar").evaluate("bar => [...bar.children].map(s => s.className + ' ' + s.style.width)") == served_bar
    default = RULES.calculator_defaults
    need, found = python_need(
        raw_state(default["model"], default["mode"], default["weights"], default["kv"], default["batch"], default["context"])
    )
    assert total(page) == need.total
    assert page.locator("#calc-options li").count() == len(found)
