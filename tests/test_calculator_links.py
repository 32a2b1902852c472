"""The calculator keeps what the reader asked: a link's value it cannot honour is named back with what it uses
instead (its published script in QuickJS, every parameter), an architecture left empty is estimated from the
parameter count as engines/architecture.py estimates it, and the prompt and output stay within the context; then in
Chromium the issue's three cases as a reader reads them."""

from __future__ import annotations

import random
from urllib.parse import parse_qsl

import pytest
from playwright.sync_api import Page, expect

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import architecture
from gpumem.figures import calculator as compute_calculator
from gpumem.figures import shared
from gpumem.figures.verdicts import rule_format

from .javascript import Scripts
from .project import CATALOGS
from .test_rent_links import holds

CATALOG = load_catalog(CATALOGS)
SHOP = shared.Shop(CATALOG)
RULE = architecture.catalog_rule(CATALOG.models)
DEFAULTS = CATALOG.rules.calculator_defaults

READ_LINK = """(query) => {
    const data = JSON.parse(CALCULATOR_DATA);
    const link = window.gpumemCalculator.readLink(data, query);
    return {notices: link.notices, raw: link.raw};
}"""
# The state a query opens, checked as the form checks it: its errors, or the estimated fields and the serving figures.
OPEN = """(query) => {
    const data = JSON.parse(CALCULATOR_DATA);
    const calc = window.gpumemCalculator;
    const checked = calc.validate(data, calc.readLink(data, query).raw, null);
    if (checked.errors) return {errors: checked.errors};
    const s = checked.state, need = calc.serve(data, s);
    const rows = window.gpumemSpeed.rows(data, s, need.fits);
    return {estimated: s.estimated, total: need.total, prompt: s.prompt,
            cost: rows.map(row => [row.fit.gpu, row.fit.count, row.speed.outputCost])};
}"""
ESTIMATE = """(cases) => {
    const data = JSON.parse(CALCULATOR_DATA);
    return cases.map(c => window.gpumemCalculator.estimatedFields(data.estimate, c[0], c[1]));
}"""


def pairs(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def link(scripts: Scripts, query: str) -> dict:
    return scripts.evaluate(READ_LINK, pairs(query))


def notice(key: str, name: str, value: str, used: str, **more) -> dict:
    return {"key": key, "name": name, "value": value, "used": used, "more": more}


def test_the_page_carries_the_rule_fitted_over_the_catalog(scripts: Scripts):
    data = scripts.evaluate("() => JSON.parse(CALCULATOR_DATA)")
    assert data["estimate"] == {
        "layers": list(RULE.layers),
        "hidden": list(RULE.hidden),
        "headDim": 128,
        "kvHeads": 8,
        "vocab": 129664,
        "mlpRatio": 3.5,
        "models": 20,
    }
    assert data["digits"]["rule"] == 3
    assert data["oldWeights"] == {"int4": "awq"}


def test_the_estimate_is_the_python_engines_on_shared_cases(scripts: Scripts):
    rng = random.Random(20261202)
    cases: list[tuple[float, dict]] = [(p, {}) for p in (0.001, 0.5, 1, 3, 7, 7.5, 13, 34, 70, 123.4, 405, 1000, 5000)]
    names = list(architecture.ESTIMATED)
    for _ in range(200):
        given = {name: rng.choice([1, 7, 30, 40, 64, 128, 5120]) for name in rng.sample(names, rng.randint(0, 4))}
        cases.append((round(rng.uniform(0.01, 5000), rng.choice([0, 1, 3])), given))
    assert scripts.evaluate(ESTIMATE, cases) == [architecture.estimated_fields(RULE, p, given) for p, given in cases]


@pytest.mark.parametrize(
    ("query", "notices", "used"),
    [
        ("model=no-such-model", [notice("model", "model", "no-such-model", DEFAULTS["model"])], {"model": DEFAULTS["model"]}),
        ("model=Llama%2070B!", [notice("model", "model", "Llama 70B!", DEFAULTS["model"])], {"model": DEFAULTS["model"]}),
        ("model=no-such-model&params=7", [notice("modelCustom", "model", "no-such-model", "custom")], {"model": "custom"}),
        ("weights=int4", [notice("oldWeights", "weights", "int4", "awq")], {"weights": "awq"}),
        ("weights=int3", [notice("choice", "weights", "int3", "bf16")], {"weights": "bf16"}),
        ("model=gpt-oss-20b&weights=int3", [notice("choice", "weights", "int3", "mxfp4")], {"weights": "mxfp4"}),  # the release
        ("kv=int4", [notice("choice", "kv", "int4", "bf16")], {"kv": "bf16"}),
        ("mode=inference", [notice("choice", "mode", "inference", "serve")], {"mode": "serve"}),
        ("sort=fastest", [notice("choice", "sort", "fastest", "price")], {"sort": "price"}),
        ("tied=yes", [notice("choice", "tied", "yes", "0")], {"tied": "0", "model": DEFAULTS["model"]}),
        (
            "model=llama-3.1-8b&layers=40",
            [notice("presetChanged", "layers", "40", "40", model={"model": "llama-3.1-8b"}, preset=32)],
            {"model": "custom"},
        ),
        ("unit=B&size=7", [notice("unknown", "unit", "B", ""), notice("unknown", "size", "7", "")], {}),
        (
            "prompt=40000&context=32768",
            [notice("lengths", "prompt", "40000", "31768", prompt=40000, output=1000, context=32768)],
            {"prompt": "31768", "output": "1000", "context": "32768"},
        ),
        ("prompt=3000&output=2000&context=4096", [notice("lengths", "prompt", "3000", "2096", prompt=3000, output=2000, context=4096)], {}),
        ("output=4096&context=4096", [], {"prompt": "1000", "output": "4096"}),  # no prompt fits: the form refuses it
        ("context=99999999", [], {"context": "99999999"}),  # beyond the bound: kept, and refused by its field
        ("mode=full&prompt=40000&context=1024", [], {"prompt": "40000"}),  # serving's lengths: no notice while training
    ],
)
def test_a_link_value_the_page_cannot_honour_is_named_with_what_is_used(scripts: Scripts, query: str, notices: list, used: dict):
    got = link(scripts, query)
    assert got["notices"] == notices
    assert {name: got["raw"][name] for name in used} == used


TRAINING_CHOICES = {
    "checkpointing": "full",
    "flash_attention": "on",
    "optimizer": "adamw",
    "precision": "bf16",
    "lora_targets": "all",
    "zero": "0",
    "offload": "off",
    "fp32_unquantized": "off",
}


@pytest.mark.parametrize("name", list(TRAINING_CHOICES))
def test_a_training_choice_the_page_lacks_is_named_too(scripts: Scripts, name: str):
    got = link(scripts, f"mode=qlora&{name}=sometimes")
    assert got["notices"] == [notice("choice", name, "sometimes", TRAINING_CHOICES[name])]
    assert got["raw"][name] == TRAINING_CHOICES[name]


def test_every_parameter_the_calculator_reads_is_covered():
    covered = {"model", "weights", "kv", "mode", "sort", "tied", "prompt", "output", "context", "layers", *TRAINING_CHOICES}
    numbers = {"params", "heads", "kv_heads", "head_dim", "hidden", "vocab", "intermediate", "experts", "experts_active"}
    numbers |= {"expert_width", "gpus", "batch", "seq", "micro_batch", "lora_rank"}
    fields = {"model", *compute_calculator.ARCH_FIELDS, "mode", "weights", "kv", "gpus", "batch", "context", "prompt", "output"}
    assert covered | numbers == fields | {"sort", *compute_calculator.TRAINING_FIELDS}


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("params", "seven", ["number"]),
        ("layers", "-3", ["positive"]),
        ("heads", "0", ["positive"]),
        ("gpus", "2.5", ["whole"]),
        ("batch", "100000", ["max", 10000]),
        ("context", "99999999", ["max", 20000000]),
        ("experts", "x", ["number"]),
    ],
)
def test_a_number_the_link_gives_stays_in_its_field_which_refuses_it(scripts: Scripts, field: str, value: str, error: list):
    query = f"model=custom&params=7&{field}={value}" if field != "params" else f"model=custom&params={value}&layers=32"
    got = scripts.evaluate(OPEN, pairs(query))
    assert got["errors"] == {field: error}


def python_serving(model_params: float, context: int, lengths: tuple[int, int], weights: str = "bf16"):
    model = compute_calculator.custom_model(model_params, architecture.estimated_architecture(RULE, model_params))
    return compute_calculator.serving(CATALOG, SHOP, model, weights, "bf16", 1, context, 1, lengths)


@pytest.mark.parametrize("params", [0.5, 1, 7, 13, 70, 405])
def test_a_parameter_count_alone_gives_the_python_result(scripts: Scripts, params: float):
    got = scripts.evaluate(OPEN, pairs(f"params={params}&context=8192"))
    want = python_serving(params, 8192, (1000, 1000))
    assert got["estimated"] == architecture.estimated_fields(RULE, params)
    assert got["total"] == want.total_bytes / 1e9
    assert got["cost"] == [[f.configuration.gpu.id, f.configuration.count, s.usd_per_million_output_tokens] for f, s in want.rows]


def test_the_issues_seven_billion_parameters(scripts: Scripts):
    got = scripts.evaluate(OPEN, pairs("params=7&model=custom"))
    assert got["estimated"] == {
        "layers": 33, "heads": 32, "kv_heads": 8, "head_dim": 128, "hidden": 4096, "vocab": 129664, "intermediate": 14336,
    }  # fmt: skip
    assert round(got["total"], 3) == 17.985


def test_the_issues_int4_link_opens_awq_not_bf16(scripts: Scripts):
    got = scripts.evaluate(OPEN, pairs("model=llama-3.1-70b&weights=int4&context=32768"))
    model = CATALOG.model("llama-3.1-70b")
    want = compute_calculator.serving(CATALOG, SHOP, model, "awq", "bf16", 1, 32768, 1)
    assert got["total"] == want.total_bytes / 1e9
    assert round(got["total"], 1) == 53.4  # BF16 would show 154.3
    bf16 = compute_calculator.serving(CATALOG, SHOP, model, "bf16", "bf16", 1, 32768, 1)
    assert round(bf16.total_bytes / 1e9, 1) == 154.7  # the issue read 154.3, before vLLM's CUDA-graph estimate was counted


def test_the_cost_follows_the_prompt_and_output_the_form_holds(scripts: Scripts):
    """The issue's setting: 32,768 tokens of context; a link's 40,000-token prompt is cut to the 31,768 the output leaves."""
    short = scripts.evaluate(OPEN, pairs("params=7&context=32768&prompt=1000&output=1000"))
    long = scripts.evaluate(OPEN, pairs("params=7&context=32768&prompt=40000&output=1000"))
    assert long["prompt"] == 31768
    for got, lengths in ((short, (1000, 1000)), (long, (31768, 1000))):
        want = python_serving(7, 32768, lengths)
        assert got["cost"] == [[f.configuration.gpu.id, f.configuration.count, s.usd_per_million_output_tokens] for f, s in want.rows]
    assert (round(short["cost"][0][2], 2), round(long["cost"][0][2], 2)) == (0.98, 1.8)


def test_the_form_refuses_a_prompt_and_output_beyond_the_context(scripts: Scripts):
    raw = link(scripts, "context=32768")["raw"]
    refused = scripts.evaluate(
        "(raw) => window.gpumemCalculator.validate(JSON.parse(CALCULATOR_DATA), raw, null).errors", {**raw, "prompt": "40000"}
    )
    assert refused == {"prompt": ["lengths", {"prompt": 40000, "output": 1000, "context": 32768}]}  # worded: in Chromium below


# In Chromium: what a reader reads.


@pytest.fixture
def opened(page: Page, site_url: str):
    def at(query: str) -> Page:
        page.goto(f"{site_url}/en/calculator/?{query}")
        expect(page.locator("#calc-results")).not_to_have_attribute("aria-busy", "true")
        return page

    return at


def test_every_notice_in_the_pages_words(opened):
    page = opened("model=gpt-oss-120b&weights=int4&kv=int4&sort=fastest&prompt=40000&context=32768&unit=B")
    expect(page.locator("#calc-notices li")).to_have_text(
        [
            "The link's weights=int4 is an earlier calculator's: using AWQ 4-bit, the default 4-bit format.",
            "The link's kv=int4 is unknown: using BF16.",
            "The link's sort=fastest is unknown: using Price per hour.",
            "The link's prompt=40000 and output of 1,000 exceed its context of 32,768 tokens: using a prompt of 31,768.",
            "The link's unit= is unknown: left out.",
        ]
    )
    expect(page.locator('[name="prompt"]')).to_have_value("31768")
    expect(page.locator("#calc-lengths")).to_have_text("Speed and cost for prompts of 31,768 and outputs of 1,000 tokens.")


def test_an_unknown_model_is_named(opened):
    page = opened("model=llama-9-1000b")
    expect(page.locator("#calc-notices li")).to_have_text(["The link's model=llama-9-1000b is not a catalog model: using Llama 3.1 8B."])
    expect(page.locator('[name="model"]')).to_have_value(DEFAULTS["model"])


def test_a_preset_whose_parameters_the_link_changes_says_whose_the_rest_is(opened):
    page = opened("model=llama-3.1-8b&params=7")
    expect(page.locator("#calc-notices li")).to_have_text(["The link's params=7 is not Llama 3.1 8B's 8.03: using a custom model."])
    expect(page.locator("#calc-estimated")).to_have_text(
        "The other model fields are Llama 3.1 8B's: empty them to estimate them from the parameter count."
    )


def test_seven_billion_parameters_alone_say_they_are_estimated(opened):
    page = opened("params=7")
    expect(page.locator("#calc-estimated")).to_have_text(
        "Estimated from the parameter count: Layers 33, Attention heads 32, KV heads 8, Head dimension 128, Hidden size 4,096, "
        "Vocabulary 129,664, MLP width 14,336 (layers ≈ 16.71 × P^0.352, hidden size ≈ 1,965.487 × P^0.325 for P billion "
        "parameters, fitted over 20 catalog models)."
    )
    expect(page.locator('[data-result="total-gb"]')).to_have_text("18 GB")
    page.locator('[name="layers"]').fill("40")  # a field the reader gives is kept, the others still estimated
    expect(page.locator("#calc-estimated")).to_contain_text("Estimated from the parameter count: Attention heads 32,")


def test_the_form_says_why_it_refuses_the_lengths(opened):
    page = opened("context=32768")
    page.locator('[name="prompt"]').fill("40000")
    expect(page.locator("#calc-prompt-error")).to_have_text(
        "A prompt of 40,000 and an output of 1,000 tokens exceed the context of 32,768."
    )
    expect(page.locator('[data-result="total-gb"]')).to_have_text("Fix the marked fields to see the result.")


def test_typing_a_parameter_count_over_a_preset_says_whose_the_rest_is(opened):
    """The issue's reader who knows only "7 billion parameters": over the opening preset, the other fields are named
    as its own; emptied, they are estimated, and the result comes back."""
    page = opened("")
    page.locator('[name="params"]').fill("7")
    expect(page.locator("#calc-estimated")).to_have_text(
        "The other model fields are Llama 3.1 8B's: empty them to estimate them from the parameter count."
    )
    for name in architecture.ESTIMATED:
        page.locator(f'[name="{name}"]').fill("")
    expect(page.locator("#calc-estimated")).to_contain_text("Estimated from the parameter count: Layers 33,")
    expect(page.locator('[data-result="total-gb"]')).to_have_text("18 GB")


def test_the_script_s_rows_claim_the_form_s_workload_and_the_engines_agree(opened):
    """The rows the script draws carry the workload of the form as the built page's rows do (data-holds,
    verdicts.serving_claim), and each configuration they rent holds it by the engines; a custom model claims nothing."""
    page = opened("model=qwen2.5-7b&weights=awq&kv=bf16&context=4096&batch=4")
    rows = page.locator("#calc-options a.rent")
    claims = rows.evaluate_all("links => links.map(a => [a.dataset.holds, a.href])")
    assert len(claims) > 1 and {claim for claim, _ in claims} == {"serve:qwen2.5-7b:awq:bf16:4096:4"}
    rented = [parse_qsl(href.split("?", 1)[1]) for _, href in claims]
    assert all(holds(CATALOG, SHOP, "serve:qwen2.5-7b:awq:bf16:4096:4", dict(q)["gpu"], int(dict(q)["count"])) for q in rented)
    page = opened("params=7")
    expect(page.locator("#calc-options a.rent").first).to_be_attached()
    assert page.locator("#calc-options a.rent[data-holds]").count() == 0


def test_an_earlier_calculator_s_int4_opens_the_format_the_rule_of_thumb_s_4_bits_are_judged_in():
    """One mapping of "4-bit" to a storage format: rules.yaml calculator.old_weights for old links and
    verdicts.rule_format for the rule-of-thumb cells (the first 4-bit format of the model pages' formats)."""
    assert CATALOG.rules.calculator_old_weights == {"int4": rule_format(CATALOG, "int4").name} == {"int4": "awq"}


def test_the_launch_line_names_the_engine_and_its_pinned_version(opened):
    page = opened("model=qwen3-32b&weights=q4_k_m")
    expect(page.locator("#calc-launch-engine")).to_have_text("Launch command, llama.cpp 0c1e57098:")
    page = opened("model=qwen3-32b&weights=awq")
    expect(page.locator("#calc-launch-engine")).to_have_text("Launch command, vLLM 0.33.0:")
