"""Speed and cost per token in the calculator: speed.js against engines/speed.py on shared cases and the three orders (the
published script in QuickJS; a smoke test in Chromium), the prompt and output fields, and the page without its script."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from gpumem.engines import speed
from gpumem.figures import calculator as compute_calculator
from gpumem.pages.formats import Formats

from .javascript import Scripts, fetch_presets
from .project import REPO, published
from .test_calculator import CATALOG, DEPLOY, SHOP, URLS, fill, raw_state

SPEED = CATALOG.rules.speed
assert SPEED is not None
PRICES = {(c.gpu.id, c.count): c.price_per_hour for c in SHOP.configurations}
GPUS = {g.id: g for g in CATALOG.gpus}

# (model, weights, kv, GPU, count, concurrent requests, prompt, output): dense, MoE, MLA and sliding-window models;
# 16-bit, FP8, 4-bit and MXFP4 weights, GGUF on llama.cpp; 1, 2, 4 and 8 GPUs on PCIe cards (RTX 4090, L40S),
# bridged cards past their bridge (4 x RTX 3090 fall back to PCIe) and NVLink modules; loads from 1 to 64 requests;
# prompts in one pass and in several (llama.cpp's 512-token micro-batch, vLLM's 2,048 tokens on an A100).
CASES = (
    ("llama-3.1-8b", "bf16", "bf16", "rtx-4090", 1, 1, 1000, 1000),
    ("llama-3.1-8b", "q4_k_m", "q8_0", "rtx-3090", 2, 1, 512, 128),
    ("llama-3.1-8b", "q4_k_m", "bf16", "rtx-4090", 1, 2, 2000, 200),  # four 512-token passes of the prompt
    ("llama-3.1-8b", "fp8", "fp8", "l40s", 1, 32, 2000, 501),
    ("llama-3.1-70b", "fp8", "bf16", "h100-sxm", 2, 8, 2000, 500),
    ("llama-3.1-70b", "awq", "bf16", "rtx-4090", 4, 4, 1000, 1000),
    ("llama-3.1-70b", "gptq", "fp8", "rtx-3090", 4, 2, 1000, 300),
    ("llama-3.1-70b", "bf16", "bf16", "a100-80gb-sxm", 8, 64, 4000, 1000),
    ("qwen2.5-32b", "int8", "bf16", "l40s", 2, 16, 1500, 700),
    ("mixtral-8x7b", "bf16", "bf16", "a100-80gb-sxm", 2, 1, 1000, 1000),
    ("mixtral-8x7b", "awq", "bf16", "rtx-a6000", 2, 8, 1000, 1000),
    ("qwen3-30b-a3b", "fp8", "fp8", "l40s", 1, 16, 3000, 1001),
    ("gpt-oss-120b", "mxfp4", "bf16", "b200", 1, 1, 1000, 1000),
    ("gpt-oss-120b", "mxfp4", "bf16", "h100-sxm", 1, 32, 1000, 1000),
    ("gpt-oss-20b", "mxfp4", "bf16", "rtx-pro-6000-blackwell", 1, 4, 1000, 1000),
    ("deepseek-v3", "fp8", "bf16", "h200-sxm", 8, 16, 2000, 500),
    ("deepseek-v3", "fp8", "fp8", "b300", 8, 1, 1000, 1000),
    ("gemma-3-27b", "bf16", "bf16", "rtx-pro-6000-blackwell", 1, 8, 6000, 2000),
    ("gemma-3-27b", "q4_k_m", "q4_0", "rtx-4090", 1, 1, 512, 128),
    ("gemma-2-9b", "bf16", "bf16", "rtx-a6000", 2, 4, 3000, 1000),
    ("gemma-2-9b", "fp8", "fp8", "rtx-6000-ada", 1, 2, 2000, 2000),
)
FIGURES = (
    ("decode", "decode_tokens_per_s_per_request"),
    ("aggregate", "aggregate_tokens_per_s"),
    ("ttft", "ttft_s"),
    ("outputCost", "usd_per_million_output_tokens"),
    ("inputCost", "usd_per_million_input_tokens"),
)


def case_raw(model: str, weights: str, kv: str, gpus: int, batch: int, prompt: int, output: int, sort: str = "price") -> dict:
    raw = raw_state(model, "serve", weights, kv, batch, max(8192, prompt + output), None, gpus)
    return {**raw, "prompt": str(prompt), "output": str(output), "sort": sort}


def python_speed(model: str, weights: str, kv: str, gpu: str, gpus: int, batch: int, prompt: int, output: int) -> speed.Speed:
    fmt, cache = DEPLOY.weight_formats[weights], DEPLOY.kv_formats[kv]
    load = speed.Load(batch, prompt, output)
    return speed.served(SPEED, DEPLOY, CATALOG.model(model), fmt, cache, GPUS[gpu], gpus, load, PRICES[(gpu, gpus)])


@pytest.fixture
def calculator(page: Page, site_url: str) -> Page:
    """The English calculator with both scripts loaded."""
    page.goto(site_url + URLS["en"])
    page.wait_for_function("window.gpumemCalculator && window.gpumemSpeed")
    return page


JS_SPEED = """cases => {
    const data = JSON.parse(document.getElementById("calculator-data").textContent);
    return cases.map(([raw, gpu, count, price]) => {
        const checked = window.gpumemCalculator.validate(data, raw);
        if (checked.errors) return {errors: checked.errors};
        const v = window.gpumemSpeed.speed(data, checked.state, gpu, count, price);
        return {decode: v.decode, aggregate: v.aggregate, ttft: v.ttft, outputCost: v.outputCost, inputCost: v.inputCost};
    });
}"""


def test_the_cases_cover_every_kind_of_model_format_and_link():
    models = [CATALOG.model(case[0]) for case in CASES]
    assert {m.arch.attention.kind for m in models} == {"full", "sliding", "mla"}
    assert any(m.is_moe for m in models) and any(not m.is_moe for m in models)
    assert {case[1] for case in CASES} >= {"bf16", "fp8", "awq", "gptq", "mxfp4", "int8", "q4_k_m"}
    assert {case[4] for case in CASES} == {1, 2, 4, 8}
    links = {GPUS[case[3]].link.kind for case in CASES if case[4] > 1}
    assert links == {"pcie", "nvlink", "nvlink-bridge"}
    assert any(case[3] == "rtx-3090" and case[4] > GPUS["rtx-3090"].link.gpus for case in CASES)  # past the bridge
    assert any(case[7] % 2 for case in CASES)  # an odd output: the cache depth is rounded half to even


def assert_speed_agrees(evaluate: Callable[[str, Any], Any], cases: tuple[tuple, ...]) -> None:
    """Five figures per case, the same operations in the same order: equal to the last bit for dense models;
    to 1e-12 relative for a mixture of experts, whose touched experts take a power (one engine's Math.pow and
    C's pow may round apart)."""
    args = [[case_raw(m, w, k, n, b, p, o), g, n, PRICES[(g, n)]] for m, w, k, g, n, b, p, o in cases]
    results = evaluate(JS_SPEED, args)
    exact = 0
    for case, got in zip(cases, results, strict=True):
        assert "errors" not in got, (case, got)
        want = python_speed(*case)
        moe = CATALOG.model(case[0]).is_moe
        for js_name, py_name in FIGURES:
            value = getattr(want, py_name)
            assert got[js_name] == (pytest.approx(value, rel=1e-12, abs=0) if moe else value), (case, js_name)
            exact += got[js_name] == value
    print(f"speed figures equal to the last bit: {exact} of {len(cases) * len(FIGURES)}")


def test_python_and_javascript_give_the_same_speed_and_cost(scripts: Scripts):
    """Every case, in the published speed.js under QuickJS."""
    assert_speed_agrees(scripts.evaluate, CASES)


def test_python_and_chromium_give_the_same_speed_and_cost(calculator: Page):
    """The smoke test in the real page, in Chromium's V8: a dense, an MoE and an MLA case."""
    cases = tuple(case for case in CASES if case[0] in ("llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"))
    fetch_presets(calculator, [case[0] for case in cases])
    assert_speed_agrees(calculator.evaluate, cases)


ORDER_CASES = (
    ("llama-3.1-8b", "bf16", "bf16", 1, 1, 1000, 1000),
    ("llama-3.1-70b", "awq", "bf16", 2, 8, 2000, 500),
    ("mixtral-8x7b", "fp8", "fp8", 2, 16, 1000, 1000),
    ("gemma-3-27b", "q4_k_m", "q8_0", 1, 1, 1000, 1000),
    ("deepseek-v3", "fp8", "bf16", 8, 4, 2000, 500),
)


@pytest.mark.parametrize("sort", compute_calculator.SORTS)
def test_the_three_orders_match_python(scripts: Scripts, sort: str):
    raws = [case_raw(m, w, k, n, b, p, o, sort) for m, w, k, n, b, p, o in ORDER_CASES]
    got = scripts.evaluate(
        """raws => {
            const data = JSON.parse(document.getElementById("calculator-data").textContent);
            return raws.map(raw => {
                const s = window.gpumemCalculator.validate(data, raw).state;
                return window.gpumemSpeed.rows(data, s, window.gpumemCalculator.serve(data, s).fits).map(r => [r.fit.gpu, r.fit.count]);
            });
        }""",
        raws,
    )
    for (model, weights, kv, gpus, batch, prompt, output), order in zip(ORDER_CASES, got, strict=True):
        context = max(8192, prompt + output)
        found = compute_calculator.serving(CATALOG, SHOP, CATALOG.model(model), weights, kv, gpus, context, batch, (prompt, output), sort)
        want = [[fit.configuration.gpu.id, fit.configuration.count] for fit, _ in found.rows]
        assert len(want) > 3, model
        assert order == want, (model, sort)
        figures = {
            "speed": [-pace.aggregate_tokens_per_s for _, pace in found.rows],
            "cost": [pace.usd_per_million_output_tokens for _, pace in found.rows],
            "price": [fit.configuration.price_per_hour for fit, _ in found.rows],
        }[sort]
        assert figures == sorted(figures)


def test_a_link_with_prompt_output_and_sort_shows_the_cheapest_per_token_first(calculator: Page, site_url: str):
    query = "model=llama-3.1-70b&weights=awq&kv=bf16&gpus=2&batch=4&context=8192&prompt=2000&output=500&sort=cost"
    calculator.goto(f"{site_url}/en/calculator/?{query}")
    found = compute_calculator.serving(CATALOG, SHOP, CATALOG.model("llama-3.1-70b"), "awq", "bf16", 2, 8192, 4, (2000, 500), "cost")
    fit, pace = found.rows[0]
    assert (fit.configuration.gpu.id, fit.configuration.count, fit.configuration.price_per_hour) == ("rtx-3090", 4, 0.76)
    assert pace.usd_per_million_output_tokens == min(p.usd_per_million_output_tokens for p in found.speeds)
    assert round(pace.decode_tokens_per_s_per_request, 3) == 39.138 and round(pace.aggregate_tokens_per_s, 3) == 93.794
    # of the 11 GPUs that hold it, vLLM has measured runs on a100-80gb-sxm, b200, h100-sxm, h200-sxm, l40s, rtx-4090, rtx-6000-ada and rtx-pro-6000-blackwell
    assert sorted(found.unmeasured) == ["b300", "rtx-3090", "rtx-a6000"]
    first = calculator.locator("#calc-options tr").first
    expect(first.locator("th")).to_contain_text("4 × RTX 3090 ")
    # price per hour, tokens/s in all (* no vLLM run on an RTX 3090 was measured), US$ per million output tokens,
    # tokens/s per request, first token (s), input
    expect(first.locator("td")).to_have_text(["$0.76", "93.8*", "$2.251", "39.1", "2.16", "$0.226", "Rent on Arrakis"])
    expect(calculator.locator("#calc-best")).to_have_text("4 × RTX 3090, $0.76 per hour, 93.8 tokens/s")
    expect(calculator.get_by_role("columnheader", name="US$ per million tokens", exact=True)).to_have_attribute("aria-sort", "ascending")
    expect(calculator.locator('[name="sort"]')).to_have_value("cost")
    expect(calculator.locator('[name="prompt"]')).to_have_value("2000")
    expect(calculator.locator("#calc-order")).to_have_text("Cheapest per million output tokens first (concurrent requests: 4).")
    note = calculator.locator("#calc-sorting .note")
    expect(note).to_contain_text("Estimates; on measurements left out of the fit, vLLM is off by 12.6% for one request")
    expect(note).to_contain_text("*: no run of this engine on this GPU was measured.")
    expect(note.get_by_role("link", name="how speed is estimated")).to_have_attribute("href", "/en/methodology/#speed")
    calculator.get_by_role("button", name="Tokens per second", exact=True).click()
    expect(calculator).to_have_url(re.compile(r"sort=speed"))
    fastest = max(found.rows, key=lambda row: row[1].aggregate_tokens_per_s)[0].configuration
    expect(calculator.locator("#calc-options tr").first.locator("th")).to_contain_text(f"{fastest.count} × {fastest.gpu.name} ")
    expect(calculator.locator("#calc-order")).to_have_text("Most output tokens per second first (concurrent requests: 4).")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("prompt", "0", "Enter a number above zero."),
        ("output", "12.5", "Enter a whole number."),
        ("prompt", "20000001", "Enter at most 20,000,000."),
        ("output", "", "Enter a value."),
    ],
)
def test_bad_lengths_show_a_message(calculator: Page, field: str, value: str, message: str):
    fill(calculator, field, value)
    expect(calculator.locator(f"#calc-{field}-error")).to_have_text(message)
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("Fix the marked fields to see the result.")


def test_a_link_without_lengths_opens_on_the_default_load(calculator: Page, site_url: str):
    calculator.goto(f"{site_url}/en/calculator/?model=llama-3.1-8b&weights=bf16&kv=bf16&gpus=1&batch=1&context=1000")
    assert (speed.DEFAULT_PROMPT, speed.DEFAULT_OUTPUT) == (1000, 1000)
    expect(calculator.locator('[name="prompt"]')).to_have_value("1000")
    expect(calculator.locator('[name="output"]')).to_have_value("1000")
    expect(calculator.locator('[name="sort"]')).to_have_value("price")
    expect(calculator).to_have_url(re.compile(r"&prompt=1000&output=1000&sort=price$"))


@pytest.mark.parametrize("lang", ["fr", "de"])
def test_without_javascript_each_configuration_shows_its_speed(browser, site_url: str, lang: str):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_url + URLS[lang])
    default = compute_calculator.calculator_default(CATALOG, SHOP).serving
    assert default is not None and len(default.speeds) == len(default.fits)
    unit = Formats(lang, CATALOG.snapshot.currency)
    rows = page.locator("#calc-options tr")
    expect(rows).to_have_count(len(default.fits))
    fit, pace = default.rows[0]
    assert fit == default.fits[0]  # opens on the price order
    text = rows.first.inner_text()
    for figure in (
        unit.number(pace.decode_tokens_per_s_per_request, 1),
        unit.number(pace.aggregate_tokens_per_s, 1),
        unit.number(pace.ttft_s, compute_calculator.SPEED_DIGITS["seconds"]),
        unit.money(pace.usd_per_million_output_tokens, compute_calculator.SPEED_DIGITS["perMillion"]),
        unit.money(pace.usd_per_million_input_tokens, compute_calculator.SPEED_DIGITS["perMillion"]),
    ):
        assert figure in text, (figure, text)
    context.close()


def test_speed_constants_come_from_the_build_json_only():
    script = (REPO / "templates/static/speed.js").read_text()
    code = re.sub(r"//.*", "", script)
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", code))
    # Not rules: 0 and 1; 2 (FLOPs per multiply-add, half a prompt, the two all-reduces and directions of a link);
    # 4 (two products of scores and values, each two FLOPs); 0.5 (rounding half to even); 1e9 and 1e12 (giga, tera).
    assert numbers == {"0", "1", "2", "4", "0.5", "1e9", "1e12"}


def test_the_page_loads_the_speed_engine_before_the_calculator(built_site):
    html = (built_site / "fr/calculateur/index.html").read_text()
    src = {name: f'src="/{published(built_site, name).relative_to(built_site)}"' for name in ("speed.js", "calculator.js")}
    assert html.index(src["speed.js"]) < html.index(src["calculator.js"])  # training.js: test_calculator_training.py


def test_a_pasted_mla_config_shows_the_python_speed_and_keeps_it_in_its_link(calculator: Page):
    """A pasted DeepSeek V3 config.json: MLA attends over its latent rank, which the link carries too."""
    from gpumem.catalog.hf_config import count

    text = (REPO / "tests/fixtures/hf_configs/deepseek-v3.json").read_text()
    calculator.locator('[name="config"]').fill(text)
    counted = count(json.loads(text), CATALOG.rules.calculator_limits)
    model = compute_calculator.custom_model(counted.params / 1e9, counted.arch)
    found = compute_calculator.serving(CATALOG, SHOP, model, counted.release, "bf16", 1, 8192, 1)
    fit, pace = found.rows[0]
    unit, digits = Formats("en", CATALOG.snapshot.currency), compute_calculator.SPEED_DIGITS
    cells = [
        unit.money(fit.configuration.price_per_hour),
        unit.number(pace.aggregate_tokens_per_s, 1) + ("*" if fit.configuration.gpu.id in found.unmeasured else ""),
        unit.money(pace.usd_per_million_output_tokens, digits["perMillion"]),
        unit.number(pace.decode_tokens_per_s_per_request, 1),
        unit.number(pace.ttft_s, digits["seconds"]),
        unit.money(pace.usd_per_million_input_tokens, digits["perMillion"]),
        "Rent on Arrakis",
    ]
    first = calculator.locator("#calc-options tr").first
    expect(first.locator("th")).to_contain_text(f"{fit.configuration.count} × {fit.configuration.gpu.name} ")
    expect(first.locator("td")).to_have_text(cells)
    calculator.goto(calculator.locator("#calc-link").input_value())
    expect(calculator.locator("#calc-options tr").first.locator("td")).to_have_text(cells)
