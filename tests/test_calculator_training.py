"""The calculator's fine-tuning modes: training.js gives the bytes of engines/training.py, part by part, and the
configurations gpumem estimate lists (the published script in QuickJS; a smoke test in Chromium); in Debian's
Chromium, the CLI's refusals next to their fields, and links that keep every setting."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import build
from gpumem.commands.serve import served
from gpumem.engines import training
from gpumem.figures import calculator as compute_calculator
from gpumem.figures import shared

from .conftest import NOW, edit, options_for
from .javascript import Scripts, fetch_presets, load_training
from .project import CATALOGS, REPO
from .test_calculator import URLS, model_of

CATALOG = load_catalog(CATALOGS)
SHOP = shared.Shop(CATALOG)
RULES = CATALOG.rules.training
assert RULES is not None and RULES.defaults is not None
DENSE, MOE, MLA, VISION = "llama-3.1-8b", "mixtral-8x22b", "deepseek-v3", "gemma-3-27b"
# A custom model typed into the form (full attention, 8 experts of width 2,880 on every layer).
CUSTOM = {
    "params": "21.5",
    "layers": "24",
    "heads": "64",
    "kv_heads": "8",
    "head_dim": "64",
    "hidden": "2880",
    "vocab": "201088",
    "tied": "0",
    "intermediate": "2880",
    "experts": "8",
    "experts_active": "2",
    "expert_width": "2880",
}


def raw_state(model: str, mode: str, **changes: object) -> dict[str, str]:
    """A fine-tuning form state as the page holds it: the preset's numbers, gpumem estimate's defaults, the changes."""
    preset = CATALOG.model(DENSE if model == "custom" else model)
    fields = compute_calculator.state_fields(preset, mode, "bf16", "bf16", 1, 1, 8192, compute_calculator.training_fields(CATALOG, mode))
    if model == "custom":
        fields.update(model="custom", **CUSTOM)
    fields.update({name: str(value) for name, value in changes.items()})
    return fields


def cases() -> list[dict[str, str]]:
    """Every training input: each optimizer, precision, target preset, ZeRO stage, checkpointing and FlashAttention
    setting, several sequence lengths and micro-batches, the three methods on dense, MoE, MLA, vision and custom
    models, 1 to 8 GPUs (3, which no configuration list of the page holds, among them), and offload."""
    found = []
    for mode in training.METHODS:
        for optimizer in RULES.optimizers:
            found.append(raw_state(DENSE, mode, optimizer=optimizer))
        for precision in RULES.precisions:
            if mode != "qlora" or not RULES.precisions[precision].master:
                found.append(raw_state(MOE, mode, precision=precision, micro_batch=2))
        for model in (DENSE, MOE, MLA, VISION, "custom"):
            for checkpointing in training.CHECKPOINTING:
                for flash in ("on", "off"):
                    found.append(raw_state(model, mode, checkpointing=checkpointing, flash_attention=flash, seq=2048, micro_batch=2))
        for zero, gpus in ((0, 1), (0, 8), (1, 2), (2, 4), (3, 8), (3, 3), (3, 2)):
            found.append(raw_state(MLA, mode, zero=zero, gpus=gpus, micro_batch=4))
            found.append(raw_state("llama-3.1-70b", mode, zero=zero, gpus=gpus, optimizer="adafactor"))
        for seq, micro_batch in ((512, 16), (4096, 4), (32768, 1), (131072, 2)):
            found.append(raw_state(DENSE, mode, seq=seq, micro_batch=micro_batch))
        found.append(raw_state(DENSE, mode, offload="on"))
        if mode == "qlora":  # PEFT's k-bit preparation: embeddings, head (and a vision tower) cast to FP32
            for model in (DENSE, MOE, VISION, "custom"):
                found.append(raw_state(model, mode, fp32_unquantized="on", micro_batch=2, checkpointing="none"))
        found.append(raw_state("llama-3.1-405b", mode, offload="on", zero=3, gpus=8, optimizer="adamw_8bit"))
    for mode in ("lora", "qlora"):
        for model in (DENSE, MOE, MLA, VISION, "custom"):
            for targets in training.TARGETS:
                for rank in (1, 8, 64):
                    found.append(
                        raw_state(model, mode, lora_targets=targets, lora_rank=rank, optimizer="adafactor" if rank == 8 else "adamw")
                    )
    return found


CASES = cases()


def python_run(raw: dict[str, str]) -> compute_calculator.Tuning:
    return compute_calculator.tuning(CATALOG, model_of(raw), raw)


def javascript_runs(engine: Page | Scripts, states: list[dict[str, str]]) -> list[dict]:
    """training.js's run of each state, in Chromium's page (training.js loaded as a fine-tuning mode loads it) or in
    QuickJS."""
    if isinstance(engine, Page):
        load_training(engine)
    return engine.evaluate(
        """states => {
            const data = JSON.parse(document.getElementById("calculator-data").textContent);
            return states.map(raw => {
                const checked = window.gpumemCalculator.validate(data, raw);
                if (checked.errors) return {errors: checked.errors};
                const run = window.gpumemTraining.train(data, checked.state, checked.state.training);
                return {parts: [run.weights, run.gradients, run.optimizer, run.activations, run.dequantized, run.runtime, run.perGpu,
                                run.reserve, run.footprint],
                        trainable: run.trainable, fits: run.fits.map(f => [f.gpu, f.count, f.price, f.card, f.tight])};
            });
        }""",
        states,
    )


@pytest.fixture
def calculator(page: Page, site_url: str) -> Page:
    page.goto(site_url + URLS["en"])
    expect(page.locator('[data-result="total-gb"]')).to_have_attribute("data-value", re.compile(r"^\d"))
    return page


def test_the_cases_cover_every_training_input():
    assert len(CASES) >= 150
    for name, values in (
        ("mode", training.METHODS),
        ("optimizer", tuple(RULES.optimizers)),
        ("precision", tuple(RULES.precisions)),
        ("lora_targets", tuple(training.TARGETS)),
        ("zero", ("0", "1", "2", "3")),
        ("checkpointing", training.CHECKPOINTING),
        ("flash_attention", ("on", "off")),
        ("offload", ("on", "off")),
        ("fp32_unquantized", ("on", "off")),
        ("gpus", ("1", "2", "3", "4", "8")),
    ):
        assert {c[name] for c in CASES} == set(values), name
    assert {c["model"] for c in CASES} >= {DENSE, MOE, MLA, VISION, "custom"}
    assert CATALOG.model(MLA).arch.attention.kind == "mla" and CATALOG.model(MOE).is_moe and CATALOG.model(VISION).vision_params_b
    assert len({c["seq"] for c in CASES}) >= 4 and len({c["micro_batch"] for c in CASES}) >= 4


def assert_training_agrees(engine: Page | Scripts, cases: list[dict[str, str]]) -> int:
    """Exact: training.js runs engines/training.py's operations in the same order on the same doubles. Returns how many
    cases fit a configuration on offer."""
    results = javascript_runs(engine, cases)
    listed = 0
    for raw, result in zip(cases, results, strict=True):
        assert "errors" not in result, (raw, result)
        expected = python_run(raw)
        need = expected.need
        want = [
            need.weights_bytes_per_gpu,
            need.gradients_bytes_per_gpu,
            need.optimizer_bytes_per_gpu,
            need.activations_bytes_per_gpu,
            need.dequantized_bytes_per_gpu,
            need.runtime_bytes_per_gpu,
            need.total_bytes_per_gpu,
            need.reserve_bytes_per_gpu,
            need.footprint_bytes_per_gpu,
        ]
        assert result["parts"] == want, raw
        assert result["trainable"] == need.trainable_params, raw
        fits = [
            [h.configuration.gpu.id, h.configuration.count, h.configuration.price_per_hour, h.configuration.gpu.runtime_bytes, h.tight]
            for h in expected.fits
        ]
        assert result["fits"] == fits, raw
        listed += bool(fits)
    return listed


def test_python_and_javascript_give_the_same_bytes_and_configurations(scripts: Scripts):
    """Every case, in the published training.js under QuickJS."""
    assert 0 < assert_training_agrees(scripts, CASES) < len(CASES)  # some runs fit, some fit nothing on offer


def test_the_cases_hold_tight_and_comfortable_fits_and_qlora_copies():
    """The shared cases reach both verdicts of the training fit rule and QLoRA's dequantized copies."""
    runs = [python_run(case) for case in CASES]
    verdicts = [h.tight for run in runs for h in run.fits]
    assert True in verdicts and False in verdicts
    assert any(run.need.dequantized_bytes_per_gpu for run in runs) and not all(run.need.dequantized_bytes_per_gpu for run in runs)


def test_python_and_chromium_give_the_same_bytes_and_configurations(calculator: Page):
    """The smoke test in the real page, in Chromium's V8: every tenth case."""
    fetch_presets(calculator, [case["model"] for case in CASES[::10] if case["model"] != "custom"])
    assert_training_agrees(calculator, CASES[::10])


def test_the_configurations_are_gpumem_estimates(scripts: Scripts):
    """The same rule and order as `gpumem estimate --mode`: its JSON's configurations for the issue's example on 2 GPUs."""
    from gpumem.commands.estimate import Request
    from gpumem.commands.estimate_training import TrainingRequest, as_json, estimate

    raw = raw_state(DENSE, "lora", micro_batch=4, gpus=2, zero=3)
    result = estimate(CATALOGS, Request(model=DENSE, kv=None, gpus=2, requests=None), TrainingRequest(mode="lora", micro_batch=4, zero=3))
    cli = json.loads(as_json(result))
    (js,) = javascript_runs(scripts, [raw])
    assert [[c["gpu"], c["count"], c["price_per_hour"]] for c in cli["configurations"]] == [f[:3] for f in js["fits"]]
    assert round(js["parts"][6]) == cli["total_bytes_per_gpu"] and round(js["parts"][-1]) == cli["footprint_bytes_per_gpu"]
    assert [c["fit"] == "tight" for c in cli["configurations"]] == [f[4] for f in js["fits"]]
    assert len(cli["configurations"]) > 1


REFUSED = [
    ("qlora", {"precision": "mixed"}, "precision", "QLoRA keeps its base in 4 bits and trains adapters only"),
    ("lora", {"lora_rank": "4097"}, "lora_rank", "LoRA rank 4,097 is outside 1 to the hidden size (4,096)."),
    ("full", {"zero": "3"}, "zero", "ZeRO-3 on one GPU shards nothing: train on 2 GPUs or more, or without ZeRO."),
    ("qlora", {"optimizer": "paged_adamw", "offload": "on"}, "offload", "This optimizer already pages its states"),
]


@pytest.mark.parametrize(("mode", "changes", "field", "message"), REFUSED)
def test_a_combination_the_cli_refuses_is_a_message_next_to_its_field(calculator: Page, mode, changes, field, message):
    raw = raw_state(DENSE, mode, **changes)
    with pytest.raises(training.TrainingError):  # the engine refuses it too (gpumem estimate says why)
        python_run(raw)
    (result,) = javascript_runs(calculator, [raw])
    assert list(result["errors"]) == [field]
    query = compute_calculator.calculator_query(raw)
    calculator.goto(f"{calculator.url.split('?')[0]}?{query}")
    expect(calculator.locator(f"#calc-{field}-error")).to_contain_text(message)
    expect(calculator.locator(f'[name="{field}"]')).to_have_attribute("aria-invalid", "true")
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("Fix the marked fields to see the result.")
    expect(calculator.locator('[data-result="total-gb"]')).not_to_have_attribute("data-value", re.compile("."))


def test_the_cli_messages_say_the_same():
    """The page's messages (en) mean what training.check says."""
    model = CATALOG.model(DENSE)
    for mode, changes, _field, message in REFUSED:
        with pytest.raises(training.TrainingError) as error:
            python_run(raw_state(DENSE, mode, **changes))
        said = str(error.value)
        if "rank" in message:
            assert said == f"LoRA rank 4097 is outside 1 to the hidden size ({model.arch.hidden:,})"
        elif "ZeRO" in message:
            assert said == message[:-1]
        elif "QLoRA" in message:
            assert said.startswith(message)
        else:
            assert said == "paged_adamw already pages its states to CPU memory: do not also offload them"


@pytest.mark.parametrize("lang", ["fr", "de"])
def test_the_refusal_is_in_the_page_language(page: Page, site_url: str, lang: str):
    page.goto(f"{site_url}{URLS[lang]}?{compute_calculator.calculator_query(raw_state(DENSE, 'full', zero=2))}")
    text = page.locator("#calc-zero-error").inner_text()
    assert "ZeRO-2" in text and "shards nothing" not in text


def test_the_url_round_trips_every_training_setting(calculator: Page, site_url: str):
    raw = raw_state(MOE, "lora", seq=8192, micro_batch=3, checkpointing="none", flash_attention="off", optimizer="adamw_8bit")
    raw.update(precision="mixed_hf", lora_rank="32", lora_targets="attn_mlp", zero="2", gpus="4", offload="on")
    calculator.goto(f"{site_url}{URLS['en']}?{compute_calculator.calculator_query(raw)}")
    for name in compute_calculator.TRAINING_FIELDS:
        if name == "fp32_unquantized":  # QLoRA's only
            expect(calculator.locator(f'[name="{name}"]')).to_be_hidden()
            continue
        expect(calculator.locator(f'[name="{name}"]')).to_have_value(raw[name])
    fill(calculator, "micro_batch", "5")
    expect(calculator).to_have_url(re.compile(r"micro_batch=5"))
    state = {name: values[0] for name, values in parse_qs(urlparse(calculator.url).query).items()}
    assert state == {**{k: v for k, v in raw.items() if compute_calculator.applies(k, "lora")}, "micro_batch": "5"}
    assert "weights" not in state and "context" not in state  # serving's fields are left out of a fine-tuning link
    link = calculator.locator("#calc-link").input_value()
    calculator.goto(link)
    expect(calculator.locator('[name="micro_batch"]')).to_have_value("5")
    expect(calculator.locator('[name="lora_targets"]')).to_have_value("attn_mlp")
    want = python_run({**raw, "micro_batch": "5"}).need
    assert value(calculator, "per-gpu-gb") == compute_calculator.js_number(want.total_bytes_per_gpu / 1e9)
    calculator.select_option('[name="mode"]', "full")  # full fine-tuning has no LoRA fields, and its own precision
    expect(calculator.locator('[name="lora_rank"]')).to_be_hidden()
    expect(calculator.locator('[name="precision"]')).to_have_value(RULES.defaults.precision["full"])
    expect(calculator).not_to_have_url(re.compile(r"lora_rank="))
    calculator.select_option('[name="mode"]', "qlora")
    calculator.select_option('[name="fp32_unquantized"]', "on")
    expect(calculator).to_have_url(re.compile(r"fp32_unquantized=on"))
    calculator.goto(calculator.locator("#calc-link").input_value())
    expect(calculator.locator('[name="fp32_unquantized"]')).to_have_value("on")
    expect(calculator.locator('[name="precision"]')).to_have_value(RULES.defaults.precision["qlora"])
    calculator.select_option('[name="mode"]', "serve")
    expect(calculator.locator("#calc-training")).to_be_hidden()
    expect(calculator).not_to_have_url(re.compile(r"seq="))


def fill(page: Page, name: str, text: str) -> None:
    page.locator(f'[name="{name}"]').fill(text)


def value(page: Page, name: str) -> str | None:
    return page.locator(f'[data-result="{name}"]').get_attribute("data-value")


def test_the_issues_example_lora_on_llama_8b_at_4096_tokens_and_micro_batch_4(calculator: Page):
    """Issue 12: LoRA on Llama 3.1 8B, 4,096 tokens, micro-batch 4 on one 24 GB card: it does not fit (the logits
    alone take 4 x 4,096 x 128,256 x 14 bytes); the cheapest card that holds it is listed first."""
    calculator.select_option('[name="model"]', DENSE)
    calculator.select_option('[name="mode"]', "lora")
    fill(calculator, "seq", "4096")
    fill(calculator, "micro_batch", "4")
    run = python_run(raw_state(DENSE, "lora", micro_batch=4))
    assert run.need.total_bytes_per_gpu == 52_660_019_200
    assert run.need.activations_bytes_per_gpu == 35_995_516_928
    expect(calculator.locator('[data-result="total-gb"]')).to_have_attribute("data-value", "52.6600192")
    expect(calculator.locator('[data-result="total-gb"]')).to_have_text("52.7 GB")
    expect(calculator.locator('[data-result="activations-gb"]')).to_have_text("36 GB")
    first = run.fits[0].configuration
    assert (first.gpu.id, first.count, first.price_per_hour) == ("rtx-pro-6000-blackwell", 1, 1.9)
    card = f"{first.gpu.runtime_bytes / 1e9:.1f}\u00a0GB"
    expect(calculator.locator("#calc-options tr").first.locator("th, td")).to_have_text(
        ["1 × RTX PRO 6000 comfortable", "$1.90", card, "Rent on Arrakis"]
    )
    expect(calculator.locator("#calc-legend")).to_contain_text(
        "comfortable (with the allocator's 15% reserve, at least 10% of the card free)"
    )
    assert all(h.configuration.gpu.memory_gb > 24 for h in run.fits)
    assert {g.memory_gb for g in CATALOG.gpus} >= {24}


def test_the_training_engine_script_has_no_constants_of_its_own():
    code = re.sub(r"//.*", "", (REPO / "templates/static/training.js").read_text())
    # Not rules: 0 and 1, 2 (untied embeddings and lm_head, as deployment.embedding_params), ZeRO stages 1 to 3, 1e9.
    assert set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", code)) == {"0", "1", "2", "3", "1e9"}


def test_a_fine_tuning_default_opens_with_what_the_script_computes(inputs, browser, tmp_path):
    """With rules.yaml opening the calculator on LoRA, the built page (no script) shows what the script then shows."""
    edit(inputs / "catalogs/rules.yaml", "defaults: {model: llama-3.1-8b, mode: serve,", "defaults: {model: llama-3.1-8b, mode: lora,")
    build(options_for(inputs), now=NOW)
    parts = ["#calc-parts", "#calc-options", "#calc-counts", "#calc-note", ".calc-total", "#calc-summary"]
    bar = "bar => [bar.getAttribute('aria-label'), ...[...bar.children].map(s => s.className + ' ' + s.style.width)]"
    with served(inputs / "site") as origin:
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(origin + URLS["fr"])
        expect(page.locator("#calc-training")).to_be_visible()
        expect(page.locator('[name="weights"]')).to_be_hidden()
        expect(page.locator('[name="lora_rank"]')).to_be_visible()
        context.close()
        page = browser.new_page()
        page.goto(origin + URLS["fr"])  # the built result, its list shortened by the script
        built = [page.locator(selector).evaluate("e => e.outerHTML") for selector in parts]
        built_bar = page.locator("#calc-bar").evaluate(bar)
        page.locator('[name="seq"]').dispatch_event("input")
        expect(page).to_have_url(re.compile(r"mode=lora"))
        assert [page.locator(selector).evaluate("e => e.outerHTML") for selector in parts] == built
        assert page.locator("#calc-bar").evaluate(bar) == built_bar
        assert len(built_bar) == 6
        page.close()
