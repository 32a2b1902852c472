"""Issue 21: configs that count to impossible models, refused with the field named by one rule
(catalog/config_fields.py) in hf_config.count, `gpumem models add`, `gpumem estimate --config`, the catalog's
measured configs and the calculator's script, which words each refusal the same way."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpumem.catalog.hf_config import count
from gpumem.catalog.inputs import load_catalog
from gpumem.catalog.validate import Invalid
from gpumem.commands.estimate import Request, draft_entry, estimate
from gpumem.errors import BuildError

from .javascript import Scripts, config_words
from .project import CATALOGS, REPO
from .test_calculator import preset_numbers, raw_state

CONFIGS = REPO / "tests/fixtures/hf_configs"
LIMITS = load_catalog(CATALOGS).rules.calculator_limits
ARCHITECTURES = (
    "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma2, gemma3, phi3, deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, "
    "glm_moe_dsa, gpt_oss, qwen3_next, qwen3_5, qwen3_5_moe, nemotron_h, llama4, minimax_m2, kimi_linear, minimax_m1, gemma4, glm4_moe"
)


def config(name: str, **changes: Any) -> dict[str, Any]:
    """A fixture config.json with some fields changed."""
    return {**json.loads((CONFIGS / f"{name}.json").read_text()), **changes}


def nested(name: str, **changes: Any) -> dict[str, Any]:
    """A fixture config.json that keeps its language model under text_config, with some of its fields changed."""
    whole = config(name)
    return {**whole, "text_config": {**whole["text_config"], **changes}}


PATTERN = config("nemotron-3-nano-30b-a3b-bf16")["hybrid_override_pattern"]


# Each defect of issue 21 and the exact refusal (the calculator adds a final full stop).
HOSTILE = {
    "dense layers beyond the layers": (
        config("deepseek-v3", first_k_dense_replace=1000),
        "first_k_dense_replace: 1,000 leaves no MoE layer of num_hidden_layers (61)",
    ),
    "every layer dense": (
        config("deepseek-v3", first_k_dense_replace=61),
        "first_k_dense_replace: 61 leaves no MoE layer of num_hidden_layers (61)",
    ),
    "1,000 layer types for 42 layers": (
        config("gemma-2-9b", layer_types=["sliding_attention"] * 1000),
        "layer_types: 1,000 entries for num_hidden_layers (42): expected one per layer",
    ),
    "a layer type gpumem does not know": (
        config("gemma-2-9b", layer_types=["sliding_attention"] * 41 + ["linear_attention"]),
        'layer_types: expected a list of "full_attention" and "sliding_attention", got a list of 42 items',
    ),
    "a hidden size of 10^4000": (
        config("llama-3.1-8b", hidden_size=10**4000),
        "hidden_size: expected at most 65,536, got a number of more than 15 digits",
    ),
    "a number too large for a float": (
        config("llama-3.1-8b", vocab_size=float("inf")),  # what json reads of 1e400 (and JSON.parse too)
        "vocab_size: expected at most 1,000,000, got a number of more than 15 digits",
    ),
    "a count written as text": (
        config("llama-3.1-8b", num_key_value_heads="3"),
        'num_key_value_heads: expected a positive integer, got "3"',
    ),
    "dense layers written as text": (
        config("deepseek-v3", first_k_dense_replace="3"),
        'first_k_dense_replace: expected a whole number of 0 or more, got "3"',
    ),
    "shared experts written as text": (
        config("deepseek-v3", n_shared_experts="1"),
        'n_shared_experts: expected a whole number of 0 or more, got "1"',
    ),
    "a boolean written as text": (
        config("llama-3.1-8b", tie_word_embeddings="false"),
        'tie_word_embeddings: expected true or false, got "false"',
    ),
    "10^30 layers": (
        config("llama-3.1-8b", num_hidden_layers=10**30),
        "num_hidden_layers: expected at most 1,000, got a number of more than 15 digits",
    ),
    "negative dense layers": (
        config("deepseek-v3", first_k_dense_replace=-5),
        "first_k_dense_replace: expected a whole number of 0 or more, got -5",
    ),
    "a fraction of a dense layer": (
        config("deepseek-v3", first_k_dense_replace=1.5),
        "first_k_dense_replace: expected a whole number of 0 or more, got 1.5",
    ),
    "a 15,000,000-character model_type": (
        config("llama-3.1-8b", model_type="x" * 15_000_000),
        f'model_type: "{"x" * 60}"… (15,000,000 characters) is not an architecture gpumem counts (expected one of {ARCHITECTURES})',
    ),
    "more experts per token than experts": (
        config("mixtral-8x7b", num_experts_per_tok=9),
        "num_experts_per_tok: 9 is more than the 8 experts",
    ),
    "fields in bounds whose product is not a model": (
        config("llama-3.1-8b", hidden_size=65536, num_hidden_layers=1000, intermediate_size=999_999),
        "parameters: 197,295.8 billion counted, expected at most 5,000 billion",  # 1,000 x 197.279 + 16.8 billion
    ),
    "a vision patch larger than its image": (
        config("gemma-3-27b", vision_config={**config("gemma-3-27b")["vision_config"], "patch_size": 1000}),
        "vision_config.patch_size: 1,000 is more than vision_config.image_size (896)",
    ),
    # The hybrids, chunked and sparse attention (catalog/hf_hybrid.py, hf_mla.mla).
    "a Gated DeltaNet hybrid with a sliding-window layer": (
        config("qwen3-next-80b-a3b-thinking", layer_types=["linear_attention"] * 47 + ["sliding_attention"]),
        'layer_types: expected a list of "linear_attention" and "full_attention", got a list of 48 items',
    ),
    "a Gated DeltaNet hybrid without a linear layer": (
        nested("qwen3.5-35b-a3b", layer_types=["full_attention"] * 40),
        "layer_types: no linear_attention layer; a model of full attention alone has another model_type",
    ),
    "value heads that key heads do not divide": (
        config("qwen3-next-80b-a3b-thinking", linear_num_value_heads=33),
        "linear_num_key_heads: 16 does not divide linear_num_value_heads (33)",
    ),
    "MLP-only layers that are not a list": (
        nested("qwen3.5-35b-a3b", mlp_only_layers=5),
        "mlp_only_layers: expected a list of layer indices",
    ),
    "Kimi Linear without its linear-attention block": (
        config("kimi-linear-48b-a3b-instruct", linear_attn_config=None),
        "linear_attn_config: expected an object (kda_layers, num_heads, head_dim)",
    ),
    "a KDA layer numbered from 0": (
        config(
            "kimi-linear-48b-a3b-instruct",
            linear_attn_config={**config("kimi-linear-48b-a3b-instruct")["linear_attn_config"], "kda_layers": [0, 1]},
        ),
        "linear_attn_config.kda_layers: expected distinct layer numbers from 1 to 27",
    ),
    "Kimi Linear with KDA in every layer": (
        config(
            "kimi-linear-48b-a3b-instruct",
            linear_attn_config={**config("kimi-linear-48b-a3b-instruct")["linear_attn_config"], "kda_layers": list(range(1, 28))},
        ),
        "linear_attn_config.kda_layers: expected both KDA layers and full-attention layers",
    ),
    "more experts per token than Kimi Linear has": (
        config("kimi-linear-48b-a3b-instruct", num_experts_per_token=300),
        "num_experts_per_token: 300 is more than the 256 experts",
    ),
    "a MiniMax layer list of two for 80": (
        config("minimax-m1", attn_type_list=[0, 1]),
        "attn_type_list: expected a list of 0 (lightning) and 1 (softmax attention), one per layer (80)",
    ),
    "MiniMax with lightning attention alone": (
        config("minimax-m1", attn_type_list=[0] * 80),
        "attn_type_list: expected both lightning (0) and softmax attention (1) layers",
    ),
    "a Nemotron-H layer gpumem does not know": (
        config("nemotron-3-nano-30b-a3b-bf16", hybrid_override_pattern="X" + PATTERN[1:]),
        "hybrid_override_pattern: expected a string of M, *, - and E, one per layer",
    ),
    "a Nemotron-H pattern of three layers for 52": (
        config("nemotron-3-nano-30b-a3b-bf16", hybrid_override_pattern="M*E"),
        "hybrid_override_pattern: 3 layers for num_hidden_layers (52): expected one per layer",
    ),
    "a Nemotron-H without attention": (
        config("nemotron-3-nano-30b-a3b-bf16", hybrid_override_pattern=PATTERN.replace("*", "M")),
        "hybrid_override_pattern: expected both Mamba-2 (M) and attention (*) layers",
    ),
    "a sparse-attention indexer without low-rank queries": (
        config("deepseek-v3.2", q_lora_rank=None),
        "q_lora_rank: expected a positive integer, got nothing (the indexer reads the low-rank queries)",
    ),
    "RoPE layers written as 2": (
        nested("llama-4-scout-17b-16e-instruct", no_rope_layers=[2] * 48),
        "no_rope_layers: expected a list of 0 and 1, one per layer (48)",
    ),
    "a Llama 4 vision patch larger than its image": (
        config(
            "llama-4-scout-17b-16e-instruct",
            vision_config={**config("llama-4-scout-17b-16e-instruct")["vision_config"], "patch_size": 1000},
        ),
        "vision_config.patch_size: 1,000 is more than vision_config.image_size (336)",
    ),
    "Gemma 4 with per-layer embeddings (E2B, E4B)": (
        nested("gemma-4-31b-it-nvfp4", hidden_size_per_layer_input=256),
        "hidden_size_per_layer_input: expected 0, got 256 (gpumem counts Gemma 4 without per-layer embeddings, shared key-value layers or attention biases)",
    ),
    "Gemma 4 with shared key-value layers": (
        nested("gemma-4-31b-it-nvfp4", num_kv_shared_layers=20),
        "num_kv_shared_layers: expected 0, got 20 (gpumem counts Gemma 4 without per-layer embeddings, shared key-value layers or attention biases)",
    ),
    "Gemma 4 with attention biases written as text": (
        nested("gemma-4-31b-it-nvfp4", attention_bias="false"),
        'attention_bias: expected false, got "false" (gpumem counts Gemma 4 without per-layer embeddings, shared key-value layers or attention biases)',
    ),
    "Gemma 4 full layers of 3 KV heads for 32 heads": (
        nested("gemma-4-31b-it-nvfp4", num_global_key_value_heads=3),
        "num_global_key_value_heads: 3 does not divide num_attention_heads (32)",
    ),
    "Gemma 4 choosing more experts than it has": (
        nested("gemma-4-26b-a4b", top_k_experts=200),
        "top_k_experts: 200 is more than the 128 experts",
    ),
    "a Gemma 4 vision tower with attention biases": (
        config("gemma-4-26b-a4b", vision_config={**config("gemma-4-26b-a4b")["vision_config"], "attention_bias": True}),
        "vision_config.attention_bias: expected false, got true (gpumem counts Gemma 4 without per-layer embeddings, shared key-value layers or attention biases)",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_an_impossible_config_is_refused_naming_the_field(name: str):
    hostile, message = HOSTILE[name]
    with pytest.raises(Invalid) as raised:
        count(hostile, LIMITS)
    assert str(raised.value) == message


def test_a_whole_number_written_with_a_decimal_point_is_the_integer_json_parse_reads():
    exact = count(config("llama-3.1-8b"), LIMITS)
    assert count(config("llama-3.1-8b", hidden_size=4096.0, num_hidden_layers=32.0), LIMITS) == exact


def written(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "hostile" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(HOSTILE[name][0]).replace("Infinity", "1e400"))  # 1e400 as a file would write it
    return path


@pytest.mark.parametrize("name", HOSTILE)
def test_models_add_and_estimate_refuse_it_with_the_file_named(tmp_path: Path, name: str):
    path = written(tmp_path, name)
    expected = [f"{path}: {HOSTILE[name][1]}"]
    with pytest.raises(BuildError) as drafted:
        draft_entry(path, CATALOGS, None, None, None)
    assert drafted.value.lines == expected
    with pytest.raises(BuildError) as estimated:
        estimate(CATALOGS, Request(config=path))
    assert estimated.value.lines == expected


@pytest.mark.parametrize("command", [("models", "add"), ("estimate", "--config")])
def test_on_the_command_line_it_is_one_line_and_exit_code_1(tmp_path: Path, command: tuple[str, str]):
    path = written(tmp_path, "a hidden size of 10^4000")
    done = subprocess.run(
        [sys.executable, "-m", "gpumem", *command, str(path), "--catalogs", str(CATALOGS)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"{path}: hidden_size: expected at most 65,536, got a number of more than 15 digits\n1 problem found; nothing was written.\n"
    )


def test_nan_is_not_json(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": NaN}')
    with pytest.raises(BuildError) as raised:
        estimate(CATALOGS, Request(config=path))
    assert raised.value.lines == [f"{path}: JSON syntax error: NaN is not a JSON number (JSON has no NaN or Infinity)"]


def test_the_catalog_refuses_a_measured_config_it_cannot_count(tmp_path: Path):
    catalogs = tmp_path / "catalogs"
    shutil.copytree(CATALOGS, catalogs)
    bad = catalogs / "measurements/configs/llama-3.1-8b.json"
    bad.write_text(json.dumps(HOSTILE["a boolean written as text"][0]))
    with pytest.raises(BuildError) as raised:
        load_catalog(catalogs)
    assert raised.value.lines == [f'{bad}: tie_word_embeddings: expected true or false, got "false"']


# The calculator's script: the same refusals, worded by the page's messages.

# The English page's number format (Intl.NumberFormat("en", {maximumFractionDigits: 1})), which QuickJS lacks.
ENGLISH_NUMBERS = r"""n => {
    const parts = String(Math.round(n * 10) / 10).split(".");
    return [parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",")].concat(parts.slice(1)).join(".");
}"""
REFUSAL = """([configs, show]) => {
    const page = JSON.parse(document.getElementById("calculator-data").textContent);
    const calc = window.gpumemCalculator;
    return configs.map(config => {
        const counted = window.gpumemConfig.countConfig(page, config);
        return counted.error ? calc.errorText(MESSAGES, counted.error, eval(show)) : null;
    });
}"""


# The refusals config.js words for the hybrids' counting and a link's state, until templates/_config_messages.html
# carries them (the page's own words win once it does): each is hf_hybrid.py's, or hf_config.py's, with a final full stop.


def messages(scripts: Scripts, site: Path) -> None:
    """The English page's #calculator-messages, with those config.js brings, as the page's script reads them once it
    loaded config.js, in the QuickJS context."""
    import re

    html = (site / "en/calculator/index.html").read_text()
    found = re.search(r'<script type="application/json" id="calculator-messages">(.*?)</script>', html, re.S)
    assert found is not None
    scripts.context.set("MESSAGES_TEXT", found.group(1))
    scripts.context.set("WORDS_TEXT", config_words(site, "en").read_text())
    scripts.context.eval("var MESSAGES = JSON.parse(MESSAGES_TEXT), WORDS = JSON.parse(WORDS_TEXT);")
    scripts.context.eval("Object.assign(MESSAGES.errors, WORDS.errors); MESSAGES.shown = WORDS.shown;")


def test_the_calculator_refuses_the_same_configs_in_the_same_words(scripts: Scripts, built_site: Path):
    messages(scripts, built_site)
    got = scripts.evaluate(REFUSAL, [[hostile for hostile, _ in HOSTILE.values()], ENGLISH_NUMBERS])
    assert got == [f"{message}." for _, message in HOSTILE.values()]


EXTRA = """([links, raw, show]) => {
    const page = JSON.parse(document.getElementById("calculator-data").textContent);
    const calc = window.gpumemCalculator;
    return links.map(link => {
        const checked = calc.validate(page, raw, window.gpumemConfig.extraOf(page, link));
        return checked.errors ? Object.keys(checked.errors).map(f => f + ": " + calc.errorText(MESSAGES, checked.errors[f], eval(show)))
            : [checked.state.arch.attention, checked.state.arch.state];
    });
}"""
SLIDING = {"kind": "sliding", "window": 4096, "slidingLayers": 16, "latent": 0}
PREFIX = "extra: The link's extra= cannot be used: "


STATE = {"kind": "gated-deltanet", "layers": 8, "conv": 24576, "recurrent": 524288}


def link(attention: dict | None = None, vision: Any = 0, experts: Any = None, **state: Any) -> str:
    """A link's extra=, with a state when given (STATE with those changes)."""
    return json.dumps(
        {"attention": attention or SLIDING, "vision": vision, "experts": experts, **({"state": {**STATE, **state}} if state else {})}
    )


@pytest.mark.parametrize(
    "given, expected",
    [
        (link(), [SLIDING, None]),
        (link(recurrentBytes=4), [SLIDING, {**STATE, "recurrentBytes": 4}]),
        (link(kind="rwkv"), 'state.kind: expected one of "gated-deltanet", "mamba2", "kda", "lightning", got "rwkv".'),
        (link(layers=32), "state.layers: 32 leaves no attention layer of the 32 layers."),
        (link(layers=20), "attention.slidingLayers: 16 is more than the 12 layers."),
        (link(recurrentBytes=3), "state.recurrentBytes: expected one of 0, 2, 4, got 3."),
        (link(conv=1e308), "state.conv: expected at most 51,539,607,552, got a number of more than 15 digits."),
        (link({**SLIDING, "kind": "chunked"}, recurrent=0), "state.recurrent: expected a positive integer, got 0."),
        (link({**SLIDING, "window": 1e308}), "attention.window: expected at most 20,000,000, got a number of more than 15 digits."),
        (link(vision=1e308), "vision: expected at most 5,000, got a number of more than 15 digits."),
        (link({**SLIDING, "latent": -1}), "attention.latent: expected a whole number of 0 or more, got -1."),
        (link({**SLIDING, "slidingLayers": 33}), "attention.slidingLayers: 33 is more than the 32 layers."),
        (link(experts={"shared": 1, "denseLayers": 40}), "experts.denseLayers: 40 leaves no MoE layer of the 32 layers."),
        (link(experts={"shared": 1, "denseLayers": 0, "projections": 4}), "experts.projections: expected one of 0, 2, 3, got 4."),
        (link()[:-1] + ', "blocks": 3}', "blocks: expected one of 1, 2, got 3."),
        (link({**SLIDING, "qkNormLayer": 1}), [{**SLIDING, "qkNormLayer": 1}, None]),
        (link({**SLIDING, "qkNormLayer": True}), "attention.qkNormLayer: expected one of 0, 1, got true."),
        (link({**SLIDING, "kind": "linear"}), 'attention.kind: expected one of "full", "sliding", "chunked", "mla", got "linear".'),
        ("[1, 2]", "expected an object of attention, state, vision and experts, got a list of 2 items."),
        ('{"attention": ', "This is not valid JSON."),
    ],
)
def test_a_link_whose_extra_cannot_be_honoured_is_named_not_replaced(scripts: Scripts, built_site: Path, given: str, expected: Any):
    messages(scripts, built_site)
    raw = raw_state("custom", "serve", "bf16", "bf16", 1, 8192, custom=preset_numbers("llama-3.1-8b"))  # 32 layers
    got = scripts.evaluate(EXTRA, [[given], raw, ENGLISH_NUMBERS])[0]
    assert got == (expected if isinstance(expected, list) else [PREFIX + expected])


def test_the_page_names_a_link_value_it_cannot_honour(page, site_url: str):
    """In Chromium: a crafted link's extra= is named next to the config box, and no figure is shown in its place."""
    from urllib.parse import urlencode

    from playwright.sync_api import expect

    from .test_calculator import URLS

    raw = raw_state("custom", "serve", "bf16", "bf16", 1, 8192, custom=preset_numbers("llama-3.1-8b"))
    page.goto(site_url + URLS["en"] + "?" + urlencode({**raw, "extra": link(vision=1e308)}))
    expect(page.locator("#calc-config-error")).to_have_text(
        PREFIX.removeprefix("extra: ") + "vision: expected at most 5,000, got a number of more than 15 digits."
    )
    expect(page.locator('[data-result="total-gb"]')).not_to_have_attribute("data-value", re.compile(".+"))
    assert "extra=" in page.url  # the link keeps the value it names
