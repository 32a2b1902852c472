"""The calculator: the same numbers as the Python engine (its published script in QuickJS, and a smoke test in
Debian's Chromium), then in Chromium every mode, bad input, languages, keyboard."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from gpumem.catalog.hf_config import count, model_from_config
from gpumem.catalog.inputs import load_catalog
from gpumem.engines import deployment, memory
from gpumem.engines.speed import DEFAULT_OUTPUT, DEFAULT_PROMPT
from gpumem.engines.support import Refusal
from gpumem.figures import calculator as compute_calculator
from gpumem.figures import calculator_data as compute_calculator_data
from gpumem.figures import shared
from gpumem.pages.formats import Formats
from gpumem.records.catalog import Architecture, Attention, Experts, Model, State

from .javascript import Scripts, fetch_presets, load_config
from .project import CATALOGS, REPO, published

CATALOG = load_catalog(CATALOGS)
SHOP = shared.Shop(CATALOG)
RULES = CATALOG.rules
LIMITS = RULES.calculator_limits
URLS = {"es": "/es/calculadora/", "en": "/en/calculator/", "pt": "/pt/calculadora/", "fr": "/fr/calculateur/", "de": "/de/rechner/"}
PRESETS = ("llama-3.1-70b", "mixtral-8x22b", "gemma-2-9b", "gemma-3-27b", "gpt-oss-120b", "deepseek-v3", "qwen3-30b-a3b")


DEPLOY = RULES.deployment
assert DEPLOY is not None


def preset_numbers(model_id: str) -> tuple:
    fields = compute_calculator.model_fields(CATALOG.model(model_id))
    return tuple(fields[name] for name in compute_calculator.ARCH_FIELDS)


def raw_state(model: str, mode: str, weights: str, kv: str, batch: int, context: int, custom: tuple | None = None, gpus: int = 1) -> dict:
    """A form state as strings, the way the page holds it (custom: the compute_calculator.ARCH_FIELDS' values)."""
    numbers = preset_numbers(model) if custom is None else custom
    values = dict(zip(compute_calculator.ARCH_FIELDS, numbers, strict=True))
    values.update(model=model, mode=mode, weights=weights, kv=kv, gpus=gpus, batch=batch, context=context)
    values.update(prompt=DEFAULT_PROMPT, output=DEFAULT_OUTPUT, sort="price")
    if context < DEFAULT_PROMPT + DEFAULT_OUTPUT:  # the form refuses a prompt and an output beyond the context
        values.update(prompt=context - context // 2, output=context // 2)
    return {key: str(value) for key, value in values.items()}


def model_of(raw: dict) -> Model:
    """The catalog model, or the custom one the fields describe (full attention), with what a pasted config.json's
    link says beyond them (raw["extra"], as the page writes it: attention, vision, experts and state)."""
    if raw["model"] != "custom":
        return CATALOG.model(raw["model"])
    extra = json.loads(raw.get("extra", "null")) or {"attention": {"kind": "full"}, "vision": 0, "experts": None, "state": None}
    a, moe, state = extra["attention"], extra["experts"] or {}, extra["state"]
    experts = int(raw["experts"])
    arch = Architecture(
        int(raw["layers"]),
        int(raw["heads"]),
        int(raw["kv_heads"]),
        int(raw["head_dim"]),
        Attention(
            a["kind"],
            a.get("window", 0),
            a.get("slidingLayers", 0),
            a.get("rank", 0),
            a.get("latent", 0) - a.get("rank", 0),
            a.get("indexBytes", 0),
            a.get("qLora", 0),
            a.get("vDim", 0),
            bool(a.get("fused", 0)),
        ),
        int(raw["hidden"]),
        int(raw["vocab"]),
        raw["tied"] == "1",
        int(raw["intermediate"]),
        Experts(
            experts,
            int(raw["experts_active"]),
            int(raw["expert_width"]),
            moe.get("shared", 0),
            moe.get("denseLayers", 0),
            moe.get("projections", 3),
            moe.get("width", 0),
        )
        if experts
        else None,
        State(state["kind"], state["layers"], state["conv"], state["recurrent"], state.get("recurrentBytes", 0), state.get("mlpLayers", 0))
        if state
        else None,
        extra.get("blocks", 2),
    )
    return compute_calculator.custom_model(float(raw["params"]), arch, extra["vision"])


def pasted_state(name: str, weights: str, kv: str, gpus: int, batch: int, context: int) -> dict:
    """A form state as a pasted config.json leaves it (tests/fixtures/hf_configs/<name>.json): its fields, and what they
    cannot say in extra=, as calculator.js's paste() writes them."""
    counted = count(json.loads((REPO / f"tests/fixtures/hf_configs/{name}.json").read_text()), LIMITS)
    arch, a = counted.arch, counted.arch.attention
    params = counted.params / 1e9 + counted.vision / 1e9
    fields = compute_calculator.model_fields(compute_calculator.custom_model(params, arch))
    raw = raw_state("custom", "serve", weights, kv, batch, context, tuple(fields[f] for f in compute_calculator.ARCH_FIELDS), gpus)
    attention = {"kind": a.kind, "window": a.window, "slidingLayers": a.sliding_layers, "latent": a.kv_lora_rank + a.qk_rope_head_dim}
    attention.update(
        {"rank": a.kv_lora_rank, "vDim": a.v_head_dim} if a.kind == "mla" else {},
        **({"indexBytes": a.index_bytes} if a.index_bytes else {}),
    )
    attention.update({"qLora": a.q_lora_rank} if a.q_lora_rank else {}, **({"fused": 1} if a.fused_qkv else {}))
    attention.update({"qkNormLayer": 1} if a.qk_norm else {})
    experts = arch.experts and {"shared": arch.experts.shared, "denseLayers": arch.experts.dense_layers}
    if arch.experts and arch.experts.projections != 3:
        experts["projections"] = arch.experts.projections
    if arch.experts and arch.experts.width:
        experts["width"] = arch.experts.width
    state = compute_calculator_data.state_data(arch.state)
    extra = {"attention": attention, "vision": counted.vision / 1e9, "experts": experts, "state": state}
    raw["extra"] = json.dumps({**extra, **({"blocks": 1} if arch.blocks_per_layer == 1 else {})})
    return raw


def python_serving(raw: dict) -> compute_calculator.Serving:
    return compute_calculator.serving(
        CATALOG, SHOP, model_of(raw), raw["weights"], raw["kv"], int(raw["gpus"]), int(raw["context"]), int(raw["batch"])
    )


def python_tuning(raw: dict) -> compute_calculator.Tuning:
    """The training engine's run and configurations for a fine-tuning form state, at gpumem estimate's defaults
    (test_calculator_training.py compares every training setting)."""
    fields = {**compute_calculator.training_fields(CATALOG, raw["mode"]), **raw}
    return compute_calculator.tuning(CATALOG, model_of(fields), fields)


def python_total(raw: dict) -> float:
    return python_serving(raw).total_bytes / 1e9 if raw["mode"] == "serve" else python_tuning(raw).total_bytes / 1e9


def usable_kv(weights: str) -> list[str]:
    runtime = DEPLOY.weight_formats[weights].runtime
    return [k for k, f in DEPLOY.kv_formats.items() if f.runtime == runtime or k in compute_calculator_data.KV_ANY_RUNTIME]


def gpu_choices(model: Model, weights: str) -> tuple[int, ...]:
    if DEPLOY.weight_formats[weights].runtime == "vllm":
        return deployment.valid_gpu_counts(model.arch, (1, 2, 3, 4, 8, 16))
    return (1, 2, 3, 8)


def custom_numbers(rng: random.Random) -> tuple:
    heads = rng.choice([8, 32, 40, 64, 96])
    experts = rng.choice([0, 0, 8, 64])
    return (
        round(rng.uniform(0.1, 900), 3),
        rng.randint(1, 200),
        heads,
        rng.choice([1, heads]),
        rng.choice([64, 128, 256]),
        rng.choice([2048, 4096, 8192]),
        rng.choice([32000, 128256, 262144]),
        rng.choice([0, 1]),
        rng.choice([8192, 14336]),
        experts,
        min(experts, rng.choice([1, 2, 8])),
        rng.choice([768, 2880]) if experts else 0,
    )


def generated_cases() -> list[dict]:
    """Serving over every weight format, usable KV format and GPU count on presets (MoE, sliding window, MLA) and
    custom models; the fine-tuning modes over presets and custom models; extremes."""
    rng = random.Random(20261130)
    cases = []
    for weights in DEPLOY.weight_formats:
        for kv in usable_kv(weights):
            for model in (*PRESETS, "custom"):
                batch, context = rng.choice([1, 2, 8, 64]), rng.choice([2, 100, 4096, 8192, 32768, 131072, 1_000_000])
                custom = custom_numbers(rng) if model == "custom" else None
                raw = raw_state(model, "serve", weights, kv, batch, context, custom)
                counts = gpu_choices(model_of(raw), weights) or (1,)
                raw["gpus"] = str(rng.choice(counts))
                if not gpu_choices(model_of(raw), weights):
                    continue
                cases.append(raw)
    limits = RULES.calculator_limits
    top = (
        limits["max_params_b"],
        int(limits["max_layers"]),
        int(limits["max_heads"]),
        int(limits["max_heads"]),
        int(limits["max_head_dim"]),
        65536,
        1_000_000,
        0,
        1_000_000,
        4096,
        4096,
        1_000_000,
    )
    tiny = (0.001, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0)
    for mode in ("serve",):
        cases.append(raw_state("custom", mode, "fp32", "bf16", int(limits["max_batch"]), int(limits["max_context"]), top))
        cases.append(raw_state("custom", mode, "q2_k", "q4_0", 1, 2, tiny))  # a prompt and an output of one token
        cases.append(raw_state("gemma-3-27b", mode, "bf16", "fp8", 3, 1024, None, 2))
        cases.append(raw_state("gpt-oss-20b", mode, "mxfp4", "bf16", 5, 129, None, 4))
        cases.append(raw_state("deepseek-v3", mode, "fp8", "fp8", 2, 163840, None, 8))
    # Pasted hybrids (Gated DeltaNet with a 16- and a 32-bit recurrent state, Mamba-2), chunked local attention and
    # DeepSeek sparse attention, on both engines, one GPU and several, short and long contexts.
    for name in PASTED:
        for weights, kv in (("bf16", "bf16"), ("fp8", "fp8"), ("q4_k_m", "q8_0"), ("q8_0", "bf16")):
            batch, context = rng.choice([1, 3, 64]), rng.choice([2, 100, 4095, 8193, 131072, 1_000_000])
            for gpus in set(gpu_choices(model_of(pasted_state(name, weights, kv, 1, 1, 2)), weights)) & {1, 2, 8}:
                cases.append(pasted_state(name, weights, kv, gpus, batch, context))
    return cases


PASTED = (
    "qwen3-next-80b-a3b-thinking",
    "qwen3.5-27b",
    "nemotron-3-nano-30b-a3b-bf16",
    "llama-4-scout-17b-16e-instruct",
    "deepseek-v3.2",
)


CASES = generated_cases()


@pytest.fixture
def calculator(page: Page, site_url: str) -> Page:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(site_url + URLS["en"])
    expect(page.locator('[data-result="total-gb"]')).to_have_attribute("data-value", re.compile(r"^\d"))
    expect(page.locator('[name="model"] option')).to_have_count(len(CATALOG.models) + 1)  # the preset list came
    page.requests = requests  # type: ignore[attr-defined]
    return page


def loaded(page: Page) -> Page:
    """The page once the preset it asked for came (its results are busy until then)."""
    expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
    return page


def pick(page: Page, model: str) -> None:
    """Choose a preset, and wait for its file."""
    page.select_option('[name="model"]', model)
    loaded(page)


def test_at_least_300_generated_cases_cover_every_mode_format_and_gpu_count():
    assert len(CASES) >= 300
    assert {c["mode"] for c in CASES} == {"serve"}  # the fine-tuning modes: test_calculator_training.py
    serving = [c for c in CASES if c["mode"] == "serve"]
    assert {c["weights"] for c in serving} == set(DEPLOY.weight_formats)
    assert {c["kv"] for c in serving} == set(DEPLOY.kv_formats)
    assert {c["gpus"] for c in serving} >= {"1", "2", "3", "4", "8"}
    kinds = {CATALOG.model(c["model"]).arch.attention.kind for c in serving if c["model"] != "custom"}
    assert kinds == {"full", "sliding", "mla"}
    assert any(CATALOG.model(c["model"]).is_moe for c in serving if c["model"] != "custom")
    assert any(c["experts"] != "0" for c in serving if c["model"] == "custom")
    archs = [model_of(c).arch for c in serving if "extra" in c]
    assert {a.state.kind for a in archs if a.state} == {"gated-deltanet", "mamba2"}
    assert {a.state.recurrent_bytes for a in archs if a.state} == {0, 4}
    assert {a.attention.kind for a in archs} == {"full", "chunked", "mla"} and any(a.attention.index_bytes for a in archs)


JS_SERVE = """cases => {
    const data = JSON.parse(document.getElementById("calculator-data").textContent);
    const c = window.gpumemCalculator;
    return cases.map(raw => {
        const checked = c.validate(data, raw, raw.extra ? window.gpumemConfig.extraOf(data, raw.extra) : null);
        if (checked.errors) return {errors: checked.errors};
        return {serve: c.serve(data, checked.state)};
    });
}"""


def assert_serving_agrees(evaluate: Callable[[str, Any], Any], cases: list[dict]) -> None:
    """calculator.js (through evaluate: QuickJS or Chromium) gives engines/deployment.py's bytes and fits on every case."""
    results = evaluate(JS_SERVE, cases)
    assert len(results) == len(cases)
    for raw, result in zip(cases, results, strict=True):
        assert "errors" not in result, (raw, result)
        expected = python_serving(raw)
        got, need = result["serve"], expected.need
        pairs = [
            ("weights", need.weights_bytes),
            ("weightsPerGpu", need.weights_bytes_per_gpu),
            ("kvPerToken", need.kv_bytes_per_token_per_gpu),
            ("kv", need.kv_cache_bytes_per_gpu),
            ("runtime", need.runtime_bytes_per_gpu),
            ("perGpu", need.total_bytes_per_gpu),
            ("total", expected.total_bytes / 1e9),
        ]
        for name, value in pairs:
            assert got[name] == pytest.approx(value, rel=1e-9, abs=0), (raw, name)
        assert tuple(got["validCounts"]) == expected.valid_counts, raw
        assert got["runtimeName"] == expected.runtime
        command = expected.command
        assert command is not None
        want_launch = {"engine": command.engine, "version": command.version, "argv": list(command.argv), "text": command.text}
        want_launch.update(missing=command.missing, download=command.download)
        assert got["launch"] == want_launch, raw
        fits = [(f["gpu"], f["count"], f["price"], not f["tight"]) for f in got["fits"]]
        want = [(f.configuration.gpu.id, f.configuration.count, f.configuration.price_per_hour, f.comfortable) for f in expected.fits]
        assert fits == want, raw
        for js, py in zip(got["fits"], expected.fits, strict=True):
            assert js["need"] == pytest.approx(py.need.total_bytes_per_gpu, rel=1e-9, abs=0), raw
            assert js["budget"] == pytest.approx(py.budget_bytes, rel=1e-9, abs=0), raw
            assert js["weights"] == (py.stand_in.name if py.stand_in else raw["weights"]), raw
        left = [(r["gpu"], r["engine"], r["kind"], r["format"], r["has"], r["needs"], r["why"]) for r in got["refused"]]
        assert left == [(r.gpu, r.engine, r.kind, r.format, r.has, r.needs, why(r)) for r in expected.refused], raw


def why(refusal: Refusal) -> str:
    """The sentence calculator.js words a refusal with: the format runs nowhere, from a capability, or not here."""
    if refusal.loaded and not refusal.needs and not refusal.targets:
        return "nowhere"
    return "other" if not refusal.loaded or not refusal.needs or refusal.has.startswith("gfx") else "needs"


def test_python_and_javascript_give_the_same_numbers(scripts: Scripts):
    """Every generated case, in the published calculator.js under QuickJS."""
    assert_serving_agrees(scripts.evaluate, CASES)


def test_python_and_chromium_give_the_same_numbers(calculator: Page):
    """The smoke test in the real page: every tenth case, in Chromium's V8, its presets fetched as the page fetches them."""
    fetch_presets(calculator, PRESETS)
    load_config(calculator)  # the pasted cases' extra=
    assert_serving_agrees(calculator.evaluate, CASES[::10])


def test_the_launch_cases_reach_both_engines_and_what_the_reader_supplies():
    """The shared cases cover vllm serve and llama-server, a named checkpoint and a placeholder: the agreement is not vacuous."""
    commands = [python_serving(raw).command for raw in CASES if raw["mode"] == "serve"]
    assert {c.engine for c in commands if c} == {"vllm", "llama.cpp"}
    assert any(c and c.missing for c in commands) and any(c and not c.missing for c in commands)


def test_some_serving_cases_fit_both_ways():
    """The generated cases reach both tags and none: the comparison above is not vacuous."""
    tags = {f.comfortable for raw in CASES if raw["mode"] == "serve" for f in python_serving(raw).fits}
    assert tags == {True, False}
    assert any(not python_serving(raw).fits for raw in CASES if raw["mode"] == "serve")


CONFIGS = sorted((REPO / "tests/fixtures/hf_configs").glob("*.json"))


def test_pasted_configs_count_like_python(scripts: Scripts):
    configs = [json.loads(path.read_text()) for path in CONFIGS]
    results = scripts.evaluate(
        """configs => {
            const data = JSON.parse(document.getElementById("calculator-data").textContent);
            return configs.map(config => window.gpumemConfig.countConfig(data, config));
        }""",
        configs,
    )
    assert len(CONFIGS) >= 12
    for path, config, got in zip(CONFIGS, configs, results, strict=True):
        counted = count(config, LIMITS)
        assert "error" not in got, (path.name, got)
        assert got["params"] == counted.params and got["vision"] == counted.vision, path.name
        assert got["active"] == counted.active, path.name
        assert got["release"] == counted.release and got["context"] == counted.context, path.name
        arch = counted.arch
        a = got["arch"]
        assert (a["layers"], a["heads"], a["kvHeads"], a["headDim"], a["hidden"], a["vocab"], a["tied"], a["intermediate"]) == (
            arch.layers,
            arch.heads,
            arch.kv_heads,
            arch.head_dim,
            arch.hidden,
            arch.vocab,
            arch.tied_embeddings,
            arch.intermediate,
        ), path.name
        att = arch.attention
        assert a["attention"] == {
            "kind": att.kind,
            "window": att.window,
            "slidingLayers": att.sliding_layers,
            "latent": att.kv_lora_rank + att.qk_rope_head_dim,
            **({"rank": att.kv_lora_rank, "vDim": att.v_head_dim} if att.kind == "mla" else {}),  # rank: the width MLA attends over
            **({"indexBytes": att.index_bytes} if att.index_bytes else {}),
            **({"qLora": att.q_lora_rank} if att.q_lora_rank else {}),
            **({"fused": 1} if att.fused_qkv else {}),
            **({"qkNormLayer": 1} if att.qk_norm else {}),
            **({"globalKvHeads": att.global_kv_heads} if att.global_kv_heads else {}),
            **({"globalHeadDim": att.global_head_dim} if att.global_head_dim else {}),
        }, path.name
        assert a["experts"] == compute_calculator_data.experts_data(arch.experts), path.name
        assert a["state"] == compute_calculator_data.state_data(arch.state), path.name
        assert a.get("blocksPerLayer", 2) == arch.blocks_per_layer, path.name


def test_pasting_a_config_fills_the_fields_and_gives_the_python_result(calculator: Page):
    path = REPO / "tests/fixtures/hf_configs/gemma-3-27b.json"
    calculator.locator('[name="config"]').fill(path.read_text())
    expect(calculator.locator('[name="model"]')).to_have_value("custom")
    counted = count(json.loads(path.read_text()), LIMITS)
    expect(calculator.locator('[name="layers"]')).to_have_value(str(counted.arch.layers))
    expect(calculator.locator('[name="vocab"]')).to_have_value(str(counted.arch.vocab))
    model = compute_calculator.custom_model(counted.params / 1e9 + counted.vision / 1e9, counted.arch, counted.vision / 1e9)
    expected = compute_calculator.serving(CATALOG, SHOP, model, counted.release, "bf16", 1, 8192, 1)
    assert total(calculator) == pytest.approx(expected.total_bytes / 1e9, rel=1e-12)
    expect(calculator.locator("#calc-config-error")).to_have_text("")
    # The link keeps what the fields cannot say (Gemma 3's sliding-window layers, its vision tower).
    extra = json.loads(parse_qs(urlparse(calculator.url).query)["extra"][0])
    attention = counted.arch.attention
    assert extra["attention"] == {"kind": "sliding", "window": attention.window, "slidingLayers": attention.sliding_layers, "latent": 0}
    assert extra["vision"] == counted.vision / 1e9
    calculator.goto(calculator.locator("#calc-link").input_value())
    expect(calculator.locator('[name="model"]')).to_have_value("custom")
    assert total(calculator) == pytest.approx(expected.total_bytes / 1e9, rel=1e-12)
    calculator.select_option('[name="model"]', "custom")  # choosing "custom" drops the pasted extras
    expect(calculator).not_to_have_url(re.compile(r"extra="))


@pytest.mark.parametrize("name", ["deepseek-v3", "qwen3-next-80b-a3b-thinking", "llama-4-scout-17b-16e-instruct"])
def test_a_pasted_moe_hybrid_or_chunked_config_survives_its_link(calculator: Page, name: str):
    """The experts, a hybrid's state and chunked attention (with Llama 4's vision tower) come back with the link's extra=."""
    path = REPO / f"tests/fixtures/hf_configs/{name}.json"
    calculator.locator('[name="config"]').fill(path.read_text())
    loaded(calculator)  # config.js, which counts it, comes when a reader first pastes
    counted = count(json.loads(path.read_text()), LIMITS)
    model = compute_calculator.custom_model(counted.params / 1e9 + counted.vision / 1e9, counted.arch, counted.vision / 1e9)
    expected = compute_calculator.serving(CATALOG, SHOP, model, counted.release, "bf16", 1, 8192, 1)
    assert total(calculator) == pytest.approx(expected.total_bytes / 1e9, rel=1e-12)
    calculator.goto(calculator.locator("#calc-link").input_value())
    assert total(calculator) == pytest.approx(expected.total_bytes / 1e9, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"model_type": "bert", "hidden_size": 768}', 'model_type: "bert" is not an architecture gpumem counts (expected one of llama,'),
        ('{"model_type": "llama", "hidden_size": 4096}', "num_hidden_layers: expected a positive integer, got nothing."),
        ('{"model_type": "llama", "hidden_size": 4096,', "This is not valid JSON."),
        ("[1, 2]", "Expected a JSON object (a config.json)."),
    ],
)
def test_a_config_gpumem_cannot_count_is_a_clear_message(calculator: Page, text: str, message: str):
    before = total(calculator)
    calculator.locator('[name="config"]').fill(text)
    expect(calculator.locator("#calc-config-error")).to_contain_text(message)
    expect(calculator.locator('[name="model"]')).to_have_value(RULES.calculator_defaults["model"])
    assert total(calculator) == before


def fill(page: Page, name: str, value: str) -> None:
    page.locator(f'[name="{name}"]').fill(value)


def total(page: Page) -> float:
    return float(page.locator('[data-result="total-gb"]').get_attribute("data-value"))


def test_preset_fills_the_architecture_and_opens_on_its_release_format(calculator: Page):
    pick(calculator, "deepseek-v3")
    expect(calculator.locator('[name="params"]')).to_have_value("671.0264192")
    expect(calculator.locator('[name="heads"]')).to_have_value("128")
    expect(calculator.locator('[name="experts"]')).to_have_value("256")
    expect(calculator.locator('[name="weights"]')).to_have_value(CATALOG.model("deepseek-v3").release)
    raw = raw_state("deepseek-v3", "serve", CATALOG.model("deepseek-v3").release, "bf16", 1, 8192)
    assert total(calculator) == pytest.approx(python_total(raw), rel=1e-12)
    fill(calculator, "layers", "60")
    expect(calculator.locator('[name="model"]')).to_have_value("custom")


@pytest.mark.parametrize("mode", memory.MODES)
def test_each_mode(calculator: Page, mode: str):
    pick(calculator, "llama-3.1-70b")
    calculator.select_option('[name="mode"]', mode)
    loaded(calculator)  # training.js, for a fine-tuning mode
    raw = raw_state("llama-3.1-70b", mode, "bf16", "bf16", 1, 8192)
    assert total(calculator) == pytest.approx(python_total(raw), rel=1e-12)
    if mode == "serve":
        serving = python_serving(raw)
        expect(calculator.locator("#calc-parts li")).to_have_count(3)
        expect(calculator.locator("#calc-summary")).to_be_visible()
        expect(calculator.locator("#calc-options tr")).to_have_count(max(1, len(serving.fits)))
        first = serving.fits[0]
        tag = "comfortable" if first.comfortable else "tight"
        item = calculator.locator("#calc-options tr").first
        expect(item.locator("th")).to_have_text(f"{first.configuration.count} × {first.configuration.gpu.name} {tag}")
        expect(item.locator(f"span.{tag}")).to_have_text(tag)
        rule = "also holds" if first.comfortable else "holds these requests, not"
        expect(calculator.locator("#calc-legend")).to_contain_text(f"{tag} ({rule} {RULES.comfortable_requests} more")
        return
    found = python_tuning(raw).fits
    expect(calculator.locator("#calc-summary")).to_be_visible()
    # weights, gradients, optimizer, activations, CUDA context; and QLoRA's dequantized 16-bit copies
    expect(calculator.locator("#calc-parts li")).to_have_count(6 if mode == "qlora" else 5)
    expect(calculator.locator("#calc-options tr")).to_have_count(max(1, len(found)))
    if found:
        first, tag = found[0].configuration, "tight" if found[0].tight else "comfortable"
        item = calculator.locator("#calc-options tr").first
        expect(item.locator("th")).to_have_text(f"{first.count} × {first.gpu.name} {tag}")
        expect(item.locator("td").nth(1)).to_have_text(Formats("en", CATALOG.snapshot.currency).gb(first.gpu.runtime_bytes / 1e9))
        expect(item.locator(f"span.{tag}")).to_have_text(tag)
        rule = "less than" if found[0].tight else "at least"
        expect(calculator.locator("#calc-legend")).to_contain_text(f"{tag} (with the allocator's 15% reserve, {rule} 10% of the card free)")


def result_value(page: Page, name: str) -> float:
    return float(page.locator(f'[data-result="{name}"]').get_attribute("data-value"))


def test_serving_results_carry_every_part(calculator: Page, site_url: str):
    calculator.goto(f"{site_url}/en/calculator/?model=llama-3.1-70b&weights=awq&kv=fp8&gpus=4&batch=6&context=32768")
    loaded(calculator)
    raw = raw_state("llama-3.1-70b", "serve", "awq", "fp8", 6, 32768, None, 4)
    need = python_serving(raw).need
    expect(calculator.locator('[name="gpus"]')).to_have_value("4")
    assert result_value(calculator, "weights-gb") == pytest.approx(need.weights_bytes / 1e9, rel=1e-12)
    assert result_value(calculator, "kv-gb") == pytest.approx(need.kv_cache_bytes_per_gpu / 1e9, rel=1e-12)
    runtime = need.runtime_bytes_per_gpu + need.graph_bytes_per_gpu  # the runtime's part holds vLLM's CUDA-graph estimate too
    assert result_value(calculator, "runtime-gb") == pytest.approx(runtime / 1e9, rel=1e-12)
    assert result_value(calculator, "per-gpu-gb") == pytest.approx(need.total_bytes_per_gpu / 1e9, rel=1e-12)
    assert total(calculator) == pytest.approx(need.total_bytes_per_gpu * 4 / 1e9, rel=1e-12)


def test_url_round_trip(calculator: Page, site_url: str):
    numbers = "params=13&layers=40&heads=40&kv_heads=40&head_dim=128&hidden=5120&vocab=32000&tied=0&intermediate=13824"
    query = f"model=custom&{numbers}&mode=serve&weights=fp8&kv=fp8&gpus=2&batch=3&context=4096"
    custom = (13, 40, 40, 40, 128, 5120, 32000, 0, 13824, 0, 0, 0)
    calculator.goto(f"{site_url}/en/calculator/?{query}")
    expect(calculator.locator('[name="batch"]')).to_have_value("3")
    assert total(calculator) == pytest.approx(python_total(raw_state("custom", "serve", "fp8", "fp8", 3, 4096, custom, 2)), rel=1e-12)
    fill(calculator, "context", "8192")
    expect(calculator).to_have_url(re.compile(r"context=8192"))
    calculator.select_option('[name="weights"]', "q4_k_m")
    calculator.select_option('[name="kv"]', "q8_0")
    fill(calculator, "gpus", "5")
    expect(calculator).to_have_url(re.compile(r"gpus=5"))
    state = parse_qs(urlparse(calculator.url).query)
    assert state["context"] == ["8192"] and state["weights"] == ["q4_k_m"] and state["model"] == ["custom"]
    assert state["kv"] == ["q8_0"] and state["gpus"] == ["5"]
    link = calculator.locator("#calc-link").input_value()
    assert link == calculator.url
    calculator.goto(link)
    expect(calculator.locator('[name="context"]')).to_have_value("8192")
    expect(calculator.locator('[name="gpus"]')).to_have_value("5")
    expect(calculator.locator('[name="kv"]')).to_have_value("q8_0")
    assert total(calculator) == pytest.approx(python_total(raw_state("custom", "serve", "q4_k_m", "q8_0", 3, 8192, custom, 5)), rel=1e-12)


def test_old_links_with_int4_open_on_the_default_4bit_format_and_say_so(calculator: Page, site_url: str):
    calculator.goto(f"{site_url}/en/calculator/?model=gpt-oss-120b&mode=serve&weights=int4&kv=int4&batch=2&context=4096")
    loaded(calculator)
    assert RULES.calculator_old_weights == {"int4": "awq"}
    expect(calculator.locator('[name="weights"]')).to_have_value("awq")
    expect(calculator.locator('[name="kv"]')).to_have_value(RULES.calculator_defaults["kv"])
    expect(calculator.locator("#calc-notices li")).to_have_text(
        [
            "The link's weights=int4 is an earlier calculator's: using AWQ 4-bit, the default 4-bit format.",
            "The link's kv=int4 is unknown: using BF16.",
        ]
    )
    raw = raw_state("gpt-oss-120b", "serve", "awq", RULES.calculator_defaults["kv"], 2, 4096)
    assert total(calculator) == pytest.approx(python_total(raw), rel=1e-12)
    calculator.select_option('[name="kv"]', "fp8")  # the reader's own choice settles the link's
    expect(calculator.locator("#calc-notices li")).to_have_count(1)


def test_a_gpu_count_vllm_rejects_lists_the_valid_counts(calculator: Page):
    pick(calculator, "llama-3.1-70b")
    fill(calculator, "gpus", "3")
    expect(calculator.locator("#calc-gpus-error")).to_have_text(
        "vLLM cannot split 64 attention heads and 8 KV heads over 3 GPUs; it accepts 1, 2, 4, 8."
    )
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("Fix the marked fields to see the result.")
    calculator.select_option('[name="weights"]', "q4_k_m")  # llama.cpp splits layers: any count
    expect(calculator.locator("#calc-gpus-error")).to_have_text("")
    raw = raw_state("llama-3.1-70b", "serve", "q4_k_m", "bf16", 1, 8192, None, 3)
    assert total(calculator) == pytest.approx(python_total(raw), rel=1e-12)
    expect(calculator.locator("#calc-counts")).to_have_text("llama.cpp splits the model by layers: it runs on any number of GPUs.")


def test_a_llamacpp_cache_with_vllm_weights_is_a_clear_message(calculator: Page):
    calculator.select_option('[name="kv"]', "q8_0")
    expect(calculator.locator("#calc-kv-error")).to_have_text(
        "GGUF Q8_0 is a llama.cpp cache format; BF16 weights run on vLLM (use FP32, BF16, FP8, NVFP4)."
    )
    calculator.select_option('[name="weights"]', "q8_0")
    expect(calculator.locator("#calc-kv-error")).to_have_text("")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("params", "", "Enter a value."),
        ("params", "0", "Enter a number above zero."),
        ("batch", "-4", "Enter a number above zero."),
        ("layers", "eighty", "Enter a number, such as 70 or 70.5."),
        ("params", "1e13", "Enter at most 5,000."),
        ("params", "10000", "Enter at most 5,000."),
        ("context", "20000001", "Enter at most 20,000,000."),
        ("context", "4096.5", "Enter a whole number."),
        ("kv_heads", "7", "KV heads must divide the 64 attention heads."),
        ("params", "1e400", "This number is too large."),
        ("gpus", "0", "Enter a number above zero."),
        ("hidden", "-1", "Enter a number above zero."),  # empty, it is estimated from the parameter count
        ("vocab", "2.5", "Enter a whole number."),
    ],
)
def test_bad_input_shows_a_message_next_to_the_field(calculator: Page, field: str, value: str, message: str):
    pick(calculator, "llama-3.1-70b")
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
    from gpumem.pages.formats import gettext_functions, load_translations

    unit = str(gettext_functions(load_translations(REPO / "translations", lang))["_"]("%(value)s GB")).replace("%(value)s", "").strip()
    assert unit == ("Go" if lang == "fr" else "GB")  # French writes gigaoctets
    f = Formats(lang, CATALOG.snapshot.currency, unit)
    page.goto(site_url + URLS[lang] + "?model=llama-3.1-405b&mode=full")
    need = python_tuning(raw_state("llama-3.1-405b", "full", "bf16", "bf16", 1, 8192))
    expect(page.locator('[data-result="total-gb"]')).to_have_text(f.gb(need.total_bytes / 1e9))
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
    loaded(calculator)  # its preset file came
    order = []
    fits = len(python_serving(raw_state(last.id, "serve", last.release, "bf16", 1, 8192)).fits)
    # After the fields: the results' heading (a link to itself, as every heading with an id), the three sorting
    # headings, the rent link of each configuration shown (five at most), the show-all button, the speed method's link.
    listed = ["rent"] * min(fits, 5) + (["calc-more"] if fits > 5 else [])
    speed = ["prompt", "output", "#calc-options-heading", "price", "speed", "cost", *listed, "calc-method"]
    expected = [
        "SUMMARY",  # the architecture's fold, open on a desk
        *compute_calculator.ARCH_FIELDS,
        "config",
        "mode",
        "weights",
        "kv",
        "gpus",
        "batch",
        "context",
        *speed,
        "calc-link",
    ]
    for _ in expected:
        calculator.keyboard.press("Tab")
        order.append(
            calculator.evaluate(
                "document.activeElement.name || document.activeElement.id || document.activeElement.className"
                " || document.activeElement.getAttribute('href') || document.activeElement.dataset.sort"
                " || document.activeElement.tagName"
            )
        )
    assert order == expected
    calculator.locator('[name="batch"]').focus()
    calculator.keyboard.press("Control+a")
    calculator.keyboard.type("6")
    assert total(calculator) == pytest.approx(python_total(raw_state(last.id, "serve", last.release, "bf16", 6, 8192)), rel=1e-12)
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
        "weights": list(DEPLOY.weight_formats),
        "kv": list(DEPLOY.kv_formats),
        "tied": ["0", "1"],
    }
    choices.update(optimizer=list(RULES.training.optimizers), precision=list(RULES.training.precisions), zero=["0", "1", "2", "3"])
    choices.update(
        lora_targets=["attn", "attn_mlp", "all"], checkpointing=["none", "full"], flash_attention=["on", "off"], offload=["on", "off"]
    )
    typed = [f for f in compute_calculator.ARCH_FIELDS if f != "tied"] + ["gpus", "batch", "context", "seq", "micro_batch", "lora_rank"]
    for _ in range(250):
        field = rng.choice([*typed, *choices])
        if calculator.locator(f'[name="{field}"]').is_disabled():  # a field the mode does not use
            continue
        if field in choices:
            value = rng.choice(choices[field])
            calculator.select_option(f'[name="{field}"]', value)
        else:
            value = rng.choice(junk) if rng.random() < 0.5 else str(rng.choice([rng.randint(1, 5000), rng.uniform(0, 1e6)]))
            fill(calculator, field, value)
        text = calculator.locator("#calculator").inner_text()
        assert not re.search(r"NaN|Infinity|undefined|null", text), (field, value, text)
        assert calculator.locator('[data-result="total-gb"]').inner_text().strip() != ""


def test_light_and_local(calculator: Page, built_site):
    """Its size is a hard budget; its recompute time is benchmarks/bench.py's (a test never times)."""
    script = sum(published(built_site, name).stat().st_size for name in ("calculator.js", "training.js", "speed.js"))  # all it loads
    html = (built_site / "en/calculator/index.html").read_text()
    data = len(re.search(r'<script type="application/json" id="calculator-data">(.*?)</script>', html, re.S).group(1).encode())
    messages = len(re.search(r'<script type="application/json" id="calculator-messages">(.*?)</script>', html, re.S).group(1).encode())
    assert script + data + messages < 60_000
    fill(calculator, "context", "4196")
    raw = raw_state(RULES.calculator_defaults["model"], "serve", *(RULES.calculator_defaults[k] for k in ("weights", "kv", "batch")), 4196)
    assert total(calculator) == pytest.approx(python_total(raw), rel=1e-12)
    origin = urlparse(calculator.url).netloc
    assert all(urlparse(url).netloc == origin for url in calculator.requests)  # type: ignore[attr-defined]


def numbers(model: Model) -> tuple:
    fields = compute_calculator.model_fields(model)
    return tuple(fields[name] for name in compute_calculator.ARCH_FIELDS)


def test_the_hybrid_presets_give_the_python_cache(scripts: Scripts):
    """Presets of each new kind, drafted from the fixture's published configs as models add drafts them (the fixture
    catalog has none), as their files would hold them: the state, the indexer key and Gemma 4's full layers' own KV
    heads reach the script, whose cache per GPU is deployment.py's on vLLM and llama.cpp."""
    names = (
        "qwen3-next-80b-a3b-thinking",
        "qwen3.5-27b",
        "nemotron-3-nano-30b-a3b-bf16",
        "llama-4-scout-17b-16e-instruct",
        "deepseek-v3.2",
        "gemma-4-31b-it-nvfp4",
        "gemma-4-26b-a4b",
    )
    configs = {name: json.loads((REPO / "tests/fixtures/hf_configs" / f"{name}.json").read_text()) for name in names}
    models = [model_from_config(config, LIMITS, name, name, "https://huggingface.co") for name, config in configs.items()]
    cases = [(m, w, kv, gpus) for m in models for w, kv in (("bf16", "fp8"), ("q4_k_m", "q8_0")) for gpus in (1, 2)]
    raws = [raw_state(m.id, "serve", w, kv, 3, 40_000, numbers(m), gpus) for m, w, kv, gpus in cases]
    got = scripts.evaluate(
        """([rows, raws]) => {
            const data = JSON.parse(document.getElementById("calculator-data").textContent), c = window.gpumemCalculator;
            rows.forEach(c.remember);
            return raws.map(raw => { const s = c.validate(data, raw).state; return [s.arch.state, s.arch.attention, c.serve(data, s).kv]; });
        }""",
        [[compute_calculator_data.model_row(m, DEPLOY.weight_formats) for m in models], raws],
    )
    for (model, weights, kv, gpus), (state, attention, cache) in zip(cases, got, strict=True):
        need = deployment.deployment(DEPLOY, model, DEPLOY.weight_formats[weights], DEPLOY.kv_formats[kv], gpus, 40_000, 3, LARGE)
        assert state == compute_calculator_data.state_data(model.arch.state), model.id
        assert attention.get("indexBytes", 0) == model.arch.attention.index_bytes, model.id
        assert attention.get("globalHeadDim", 0) == model.arch.attention.global_head_dim, model.id
        assert cache == pytest.approx(need.kv_cache_bytes_per_gpu, rel=1e-12, abs=0), (model.id, weights, gpus)
    assert {m.arch.attention.kind for m in models} == {"full", "chunked", "mla", "sliding"} and {
        m.arch.state.kind for m in models if m.arch.state
    } == {
        "gated-deltanet",
        "mamba2",
    }


LARGE = deployment.Batch(DEPLOY.large_batch_tokens, DEPLOY.large_batch_sequences)


def test_constants_come_from_the_build_json_only():
    script = (REPO / "templates/static/calculator.js").read_text()
    code = re.sub(r"//.*", "", script)
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", code))
    # Not rules: 0 and 1, 2 (a key and a value; two decimals of a width), 100 (percent), 1e9 (bytes per GB).
    assert numbers == {"0", "1", "2", "100", "1e9"}


def test_the_page_carries_the_build_json(built_site):
    html = (built_site / "en/calculator/index.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="calculator-data">(.*?)</script>', html, re.S).group(1))
    assert data == json.loads(json.dumps(compute_calculator_data.calculator_data(CATALOG, SHOP)))
    assert data["comfortableRequests"] == RULES.comfortable_requests
    assert "fullParts" not in data  # the old rule of thumb: the training engine has its own block
    assert data["models"] == [
        compute_calculator_data.model_row(CATALOG.model(RULES.calculator_defaults["model"]), DEPLOY.weight_formats)
    ]  # the others: files


@pytest.mark.parametrize("lang", list(URLS))
def test_the_page_opens_with_the_same_result_the_script_computes(page: Page, site_url: str, lang: str):
    """The build writes the opening state's result, so nothing moves when the script takes over."""
    page.goto(site_url + URLS[lang])
    parts = ["#calc-parts", "#calc-options", "#calc-counts", "#calc-note", ".calc-total", "#calc-summary"]
    served = [page.locator(selector).inner_html() for selector in parts]
    served_bar = page.locator("#calc-bar").evaluate("bar => [...bar.children].map(s => s.className + ' ' + s.style.width)")
    page.locator('[name="batch"]').dispatch_event("input")
    assert [page.locator(selector).inner_html() for selector in parts] == served
    assert page.locator("#calc-bar").evaluate("bar => [...bar.children].map(s => s.className + ' ' + s.style.width)") == served_bar
    default = RULES.calculator_defaults
    raw = raw_state(default["model"], default["mode"], default["weights"], default["kv"], default["batch"], default["context"])
    assert total(page) == python_total(raw)
    assert page.locator("#calc-options tr").count() == max(1, len(python_serving(raw).fits))
    for name in ("weights-gb", "kv-gb", "runtime-gb", "per-gpu-gb", "total-gb"):
        assert page.locator(f'[data-result="{name}"]').get_attribute("data-value")


def test_the_five_cheapest_configurations_then_show_all(calculator: Page, site_url: str):
    """Qwen2.5 32B at 32k tokens for 8 users: cheapest first, five shown, each with its rent link, the rest a click away."""
    calculator.goto(f"{site_url}/en/calculator/?model=qwen2.5-32b&weights=bf16&kv=bf16&gpus=4&batch=8&context=32768")
    fits = python_serving(raw_state("qwen2.5-32b", "serve", "bf16", "bf16", 8, 32768, None, 4)).fits
    assert len(fits) > 5
    prices = [fit.configuration.price_per_hour for fit in fits]
    assert prices == sorted(prices)
    items = calculator.locator("#calc-options tr")
    expect(items).to_have_count(len(fits))
    expect(calculator.locator("#calc-options tr:visible")).to_have_count(5)
    first = fits[0].configuration
    expect(items.first.locator("th")).to_contain_text(f"{first.count} × {first.gpu.name}")
    expect(items.first.locator("td").first).to_have_text(f"${first.price_per_hour:.2f}")
    rent = items.first.get_by_role("link", name="Rent on Arrakis")
    expect(rent).to_have_attribute("href", f"https://arrakis.example.org/rent?gpu={first.gpu.id}&count={first.count}")
    more = calculator.get_by_role("button", name=f"Show all {len(fits)} configurations")
    more.click()
    expect(calculator.locator("#calc-options tr:visible")).to_have_count(len(fits))
    expect(more).to_be_hidden()
    last = fits[-1].configuration
    expect(items.last.get_by_role("link", name="Rent on Arrakis")).to_have_attribute(
        "href", f"https://arrakis.example.org/rent?gpu={last.gpu.id}&count={last.count}"
    )
    fill(calculator, "context", "32769")  # a new result is shortened again
    expect(calculator.locator("#calc-options tr:visible")).to_have_count(5)
    expect(calculator.get_by_role("button", name=re.compile(r"^Show all \d+ configurations$"))).to_be_visible()


def test_without_javascript_every_configuration_is_listed(browser, site_url: str):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_url + URLS["fr"])
    default = RULES.calculator_defaults
    raw = raw_state(default["model"], default["mode"], default["weights"], default["kv"], default["batch"], default["context"])
    fits = python_serving(raw).fits
    expect(page.locator("#calc-options tr:visible")).to_have_count(len(fits))
    expect(page.locator("#calc-more")).to_be_hidden()
    cheapest = fits[0].configuration
    expect(page.locator("#calc-options tr").first.get_by_role("link", name="Louer sur Arrakis")).to_have_attribute(
        "href", f"https://arrakis.example.org/rent?gpu={cheapest.gpu.id}&count={cheapest.count}"
    )
    context.close()


def test_fine_tuning_configurations_go_cheapest_first(calculator: Page, site_url: str):
    calculator.goto(f"{site_url}/en/calculator/?model=llama-3.1-70b&mode=qlora")
    found = [h.configuration for h in python_tuning(raw_state("llama-3.1-70b", "qlora", "bf16", "bf16", 1, 8192)).fits]
    prices = [c.price_per_hour for c in found]
    assert prices == sorted(prices) and len(found) > 5
    expect(calculator.locator("#calc-options tr").first.locator("th")).to_contain_text(f"{found[0].count} × {found[0].gpu.name}")
    expect(calculator.locator("#calc-options tr:visible")).to_have_count(5)
