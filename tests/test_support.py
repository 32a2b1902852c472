"""Which formats run where: every fixture GPU x weight and KV format x engine, and the issue's cases.

The fixture GPUs carry the production GPUs' compute capabilities (tests/fixtures/catalogs/gpus.yaml)
and the fixture rules the production support table, so the verdicts below are the site's.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from functools import cache

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import sizing, support
from gpumem.records.catalog import Catalog, Gpu

from .conftest import NOW, edit, line_of
from .project import CATALOGS, REPO
from .test_validate import problems, root  # noqa: F401 - root is a fixture

# The fixture GPUs in file order, with the capability each carries.
GPUS = (
    ("rtx-3090", "8.6"), ("rtx-4090", "8.9"), ("rtx-5090", "12.0"), ("rtx-a6000", "8.6"), ("rtx-6000-ada", "8.9"),
    ("rtx-pro-6000-blackwell", "12.0"), ("l4", "8.9"), ("l40s", "8.9"), ("a10", "8.6"), ("a100-40gb", "8.0"),
    ("a100-80gb-sxm", "8.0"), ("a100-80gb-pcie", "8.0"), ("h100-sxm", "9.0"), ("h100-pcie", "9.0"), ("h100-nvl", "9.0"),
    ("h200-sxm", "9.0"), ("h200-nvl", "9.0"), ("b200", "10.0"), ("b300", "10.3"), ("gb200", "10.0"), ("gb300", "10.3"),
    ("gh200-96gb", "9.0"), ("gh200-144gb", "9.0"), ("mi300x", "gfx942"), ("mi325x", "gfx942"), ("mi355x", "gfx950"),
)  # fmt: skip
# One letter per GPU above: R runs, F runs through the engine's slower path, N refused (the card is below
# the lowest capability, or not among the AMD targets), X the engine does not load the format.
ALL = "R" * 26
NONE = "X" * 26
AMPERE_FALLBACK = "FRRFRRRRFFFFRRRRRRRRRRRRRR"  # below 8.9: the 8.0 and 8.6 cards
BELOW_HOPPER_FALLBACK = "FFRFFRFFFFFFRRRRRRRRRRRRRR"  # below 9.0: the 8.0, 8.6 and 8.9 cards
AMPERE_REFUSED = "NRRNRRRRNNNNRRRRRRRRRRRRRR"
BELOW_BLACKWELL_FALLBACK = "FFRFFRFFFFFFFFFFFRRRRFFNNN"  # below 10.0 through FP4 Marlin; no AMD card
NVIDIA_ONLY = "R" * 23 + "N" * 3
GGUF = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k", "gguf_mxfp4")
SAFETENSORS = ("fp32", "bf16", "fp16", "fp8", "int8", "awq", "gptq", "nf4", "mxfp4", "nvfp4")
WEIGHTS = {
    "vllm": {
        "fp32": ALL, "bf16": ALL, "fp16": ALL, "fp8": AMPERE_FALLBACK, "int8": ALL, "awq": ALL, "gptq": ALL,
        "nf4": "N" * 26, "mxfp4": BELOW_HOPPER_FALLBACK, "nvfp4": BELOW_BLACKWELL_FALLBACK, **dict.fromkeys(GGUF, NONE),
    },
    "llama.cpp": {**dict.fromkeys(SAFETENSORS, NONE), **dict.fromkeys(GGUF, ALL)},
}  # fmt: skip
KV = {
    "vllm": {"fp32": ALL, "bf16": ALL, "fp8": AMPERE_REFUSED, "nvfp4": NVIDIA_ONLY, "q8_0": NONE, "q4_0": NONE},
    "llama.cpp": {"fp32": ALL, "bf16": ALL, "fp8": NONE, "nvfp4": NONE, "q8_0": ALL, "q4_0": ALL},
}


@cache
def catalog() -> Catalog:
    return load_catalog(CATALOGS, now=NOW)


def verdict(engine: str, kind: str, name: str, gpu: Gpu) -> str:
    rules = catalog().rules
    assert rules.support is not None and rules.deployment is not None
    table = rules.deployment.weight_formats if kind == "weights" else rules.deployment.kv_formats
    why = support.refusal(rules.support, engine, kind, table[name], gpu)
    if why is not None:
        return "N" if why.loaded else "X"
    return "F" if kind == "weights" and support.fallback(rules.support, engine, table[name], gpu) else "R"  # type: ignore[arg-type]


def test_the_fixture_gpus_carry_their_capabilities():
    assert tuple((gpu.id, gpu.compute_capability) for gpu in catalog().gpus) == GPUS


@pytest.mark.shipped_data
def test_the_production_gpus_carry_the_fixture_capabilities():
    """The table above holds for the site: the production GPUs the fixture has carry the fixture's capabilities
    (a GPU added to the production catalog later turns nothing red; validation requires its capability)."""
    production = {gpu.id: gpu.compute_capability for gpu in load_catalog(REPO / "catalogs").gpus}
    shared = {gpu: capability for gpu, capability in GPUS if gpu in production}
    assert len(shared) == len(GPUS) == 26 and all(production[gpu] == capability for gpu, capability in shared.items())


@pytest.mark.parametrize(("kind", "expected"), (("weights", WEIGHTS), ("kv", KV)))
def test_every_gpu_format_and_engine_has_its_verdict(kind, expected):
    rules = catalog().rules
    assert rules.deployment is not None
    formats = rules.deployment.weight_formats if kind == "weights" else rules.deployment.kv_formats
    assert {engine: set(row) for engine, row in expected.items()} == {engine: set(formats) for engine in ("vllm", "llama.cpp")}
    found = {
        engine: {name: "".join(verdict(engine, kind, name, gpu) for gpu in catalog().gpus) for name in row}
        for engine, row in expected.items()
    }
    assert found == expected


def formats():
    rules = catalog().rules
    assert rules.deployment is not None and rules.support is not None
    return rules.support, rules.deployment.weight_formats, rules.deployment.kv_formats


def test_gpt_oss_mxfp4_on_an_rtx_3090_runs_on_vllm_through_marlin():
    """The pinned vLLM runs MXFP4 from 8.0 (vllm#22422's refusal below 10.0 is an older version's)."""
    table, weights, kv = formats()
    served = support.serving(table, weights, weights["mxfp4"], kv["bf16"], catalog().gpu("rtx-3090"))
    assert served == support.Serving(weights["mxfp4"], None, True)
    assert support.fallback(table, "vllm", weights["mxfp4"], catalog().gpu("rtx-3090")) == "Marlin"
    assert support.fallback(table, "vllm", weights["mxfp4"], catalog().gpu("a100-80gb-sxm")) == "Marlin"
    assert support.fallback(table, "vllm", weights["mxfp4"], catalog().gpu("h100-sxm")) == ""


def test_below_the_lowest_capability_llama_cpp_runs_the_gguf_mxfp4_instead():
    table, weights, kv = formats()
    turing = dataclasses.replace(catalog().gpu("rtx-3090"), id="t4", name="T4", compute_capability="7.5")
    served = support.serving(table, weights, weights["mxfp4"], kv["bf16"], turing)
    assert served.weights == weights["gguf_mxfp4"] and served.runs and served.stands_in
    assert served.refusal is not None
    assert (served.refusal.engine, served.refusal.kind, served.refusal.has, served.refusal.needs) == ("vllm", "weights", "7.5", "8.0")
    # With an FP8 cache llama.cpp has no stand-in: refused, naming vLLM's weights first.
    refused = support.serving(table, weights, weights["mxfp4"], kv["fp8"], turing)
    assert (refused.runs, refused.weights.name, refused.refusal.format if refused.refusal else None) == (False, "mxfp4", "mxfp4")


def test_the_sizing_leaves_out_a_card_its_engine_cannot_run_and_sizes_the_stand_in():
    table, weights, kv = formats()
    model = catalog().model("gpt-oss-20b")
    turing = dataclasses.replace(catalog().gpu("rtx-3090"), id="t4", name="T4", compute_capability="7.5")
    configurations = (
        sizing.Configuration(turing, 1, 0.2, 1),
        sizing.Configuration(catalog().gpu("rtx-3090"), 1, 0.3, 1),
    )
    rules = catalog().rules.deployment
    assert rules is not None
    fits = sizing.deployment_fits(rules, model, weights["mxfp4"], kv["bf16"], 8192, 1, configurations, 3, table)
    assert [(f.configuration.gpu.id, f.stand_in.name if f.stand_in else "", f.via) for f in fits] == [
        ("t4", "gguf_mxfp4", ""),
        ("rtx-3090", "", "Marlin"),
    ]
    fp8 = sizing.deployment_fits(rules, model, weights["mxfp4"], kv["fp8"], 8192, 1, configurations, 3, table)
    assert fp8 == ()
    assert sizing.deployment_fits(rules, model, weights["mxfp4"], kv["fp8"], 8192, 1, configurations, 3) != ()


def test_fp8_weights_on_an_a100_run_through_marlin_and_an_fp8_cache_is_refused():
    table, weights, kv = formats()
    a100 = catalog().gpu("a100-80gb-sxm")
    assert support.serving(table, weights, weights["fp8"], kv["bf16"], a100).runs
    assert support.fallback(table, "vllm", weights["fp8"], a100) == "Marlin"
    why = support.runs(table, "vllm", weights["fp8"], kv["fp8"], catalog().gpu("rtx-3090"))
    assert why is not None
    assert (why.engine_label, why.version, why.kind, why.format_label, why.gpu_name, why.has, why.needs) == (
        "vLLM",
        "0.33.0",
        "kv",
        "FP8",
        "RTX 3090",
        "8.6",
        "8.9",
    )


def estimate(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gpumem", "--project", str(REPO), "estimate", "--catalogs", str(CATALOGS), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


V = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm"
FP8_KV_3090 = f"vLLM 0.33.0 stores an FP8 KV cache from compute capability 8.9; the RTX 3090 has 8.6 ({V}/v1/attention/backends/triton_attn.py#L514-L524)"


def test_estimate_refuses_fp8_kv_on_an_rtx_3090_with_the_reason():
    done = estimate("--model", "gpt-oss-20b", "--kv", "fp8", "--speed", "--gpu", "rtx-3090")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"--gpu: {FP8_KV_3090}\n1 problem found; nothing was written.\n"


def test_estimate_leaves_out_the_cards_that_cannot_run_the_cache_and_says_why():
    done = estimate("--model", "llama-3.1-8b", "--kv", "fp8")
    assert done.returncode == 0, done.stderr
    tail = done.stdout.split("Left out, as the engine cannot run these formats there:\n")[1]
    assert tail.splitlines() == [
        f"  A100 80GB: {FP8_KV_3090.replace('RTX 3090 has 8.6', 'A100 80GB has 8.0')}",
        f"  RTX 3090: {FP8_KV_3090}",
        f"  RTX A6000: {FP8_KV_3090.replace('RTX 3090', 'RTX A6000')}",
    ]
    data = json.loads(estimate("--model", "llama-3.1-8b", "--kv", "fp8", "--json").stdout)
    assert [entry["gpu"] for entry in data["refused"]] == ["a100-80gb-sxm", "rtx-3090", "rtx-a6000"]
    assert not {"rtx-3090", "rtx-a6000", "a100-80gb-sxm"} & {c["gpu"] for c in data["configurations"]}


def test_estimate_names_the_slower_path_and_refuses_a_format_no_gpu_runs():
    done = estimate("--model", "gpt-oss-20b", "--json")
    rows = {(c["gpu"], c["count"]): c.get("via", "") for c in json.loads(done.stdout)["configurations"]}
    assert rows[("rtx-3090", 1)] == "Marlin"
    assert rows[("h100-sxm", 1)] == ""
    refused = estimate("--model", "llama-3.1-8b", "--weights", "nf4")
    assert refused.returncode == 1
    assert refused.stderr == (
        "--weights: vLLM 0.33.0 runs NF4 (bitsandbytes) weights on no GPU "
        f"({V}/model_executor/layers/quantization/__init__.py#L15-L49)\n1 problem found; nothing was written.\n"
    )


GPUS_FILE = "catalogs/gpus.yaml"
RULES_FILE = "catalogs/rules.yaml"


def test_a_gpu_without_a_compute_capability_or_with_a_malformed_one_is_refused(root):  # noqa: F811
    edit(root / GPUS_FILE, '    compute_capability: "8.6"\n', "", count=1)
    edit(root / GPUS_FILE, '    compute_capability: "8.9"\n', "    compute_capability: 8.9\n", count=1)
    edit(root / GPUS_FILE, '    compute_capability: "gfx942"\n', '    compute_capability: "9.4"\n', count=1)
    first = line_of(root / GPUS_FILE, "  - id: rtx-3090")
    second = line_of(root / GPUS_FILE, "compute_capability: 8.9")
    third = line_of(root / GPUS_FILE, 'compute_capability: "9.4"')
    assert problems(root) == [
        f"catalogs/gpus.yaml:{first}: rtx-3090: compute_capability: missing field",
        f'catalogs/gpus.yaml:{second}: rtx-4090: compute_capability: expected a compute capability in quotes like "8.6", got 8.9',
        f"catalogs/gpus.yaml:{third}: mi300x: compute_capability: expected an AMD gfx target like \"gfx942\", got '9.4'",
    ]


def test_the_support_table_refuses_unknown_formats_engines_and_capabilities(root):  # noqa: F811
    edit(root / RULES_FILE, '      gptq: {nvidia: "6.0"', '      gptq5: {nvidia: "6.0"')
    edit(root / RULES_FILE, '      awq: {nvidia: "7.5"', '      awq: {nvidia: "7,5"')
    edit(
        root / RULES_FILE,
        '      q4_0: {nvidia: "6.1", amd: [gfx942, gfx950], source: "llama.cpp\'s cache',
        '      q4_0: {nvidia: "6.1", amd: [mi300x], source: "llama.cpp\'s cache',
    )
    edit(root / RULES_FILE, "  kv:\n    vllm:\n", '  kv:\n    tensorrt:\n      bf16: {nvidia: "8.0", amd: [], source: x}\n    vllm:\n')
    edit(root / RULES_FILE, "    mxfp4: gguf_mxfp4\n", "    mxfp4: q4_k\n")
    path = root / RULES_FILE
    gptq, awq = line_of(path, "gptq5: {"), line_of(path, 'awq: {nvidia: "7,5"')
    q4, engine, equivalent = line_of(path, "amd: [mi300x]"), line_of(path, "    tensorrt:"), line_of(path, "mxfp4: q4_k")
    assert problems(root) == [
        f"catalogs/rules.yaml:{awq}: rules: support.weights.vllm.awq.nvidia: expected a compute capability in quotes like \"8.9\" or none, got '7,5'",
        f"catalogs/rules.yaml:{gptq}: rules: support.weights.vllm.gptq5: unknown format 'gptq5' (not in deployment.weight_formats)",
        f"catalogs/rules.yaml:{engine}: rules: support.kv.tensorrt: unknown field (expected one of: vllm, llama.cpp)",
        f"catalogs/rules.yaml:{q4}: rules: support.kv.llama.cpp.q4_0.amd: expected an AMD gfx target like \"gfx942\", got 'mi300x'",
        f"catalogs/rules.yaml:{equivalent}: rules: support.equivalents.mxfp4: expected a llama.cpp weight format of deployment.weight_formats, got 'q4_k'",
    ]


def test_a_gpu_page_cell_names_llama_cpp_where_its_format_stands_in():
    from gpumem.figures.subjects import GpuFit

    from .test_render_rows import rows

    fit = GpuFit("mxfp4", 13.5, 0.7, True, 32768, 5, 8192, stand_in="GGUF MXFP4")
    assert rows().gpu_fit(fit) == (
        '<td><span class="need">13.5\xa0GB</span>\n<span>up to 32,768 tokens</span>\n'
        '<span>5 requests of 8,192 tokens at once</span>\n<span class="comfortable">comfortable</span>\n'
        '<span class="engine">on llama.cpp with GGUF MXFP4 weights</span></td>'
    )


def test_the_support_table_needs_the_engine_versions_it_was_read_at(root):  # noqa: F811
    # The table is read at the versions the engines block pins: without the block, each engine it lists is named.
    path = root / RULES_FILE
    text = path.read_text()
    start = text.index("\nengines:\n") + 1
    path.write_text(text[:start] + text[text.index("\n# Layer 2", start) + 1 :])
    support = path.read_text().splitlines().index("support:") + 1
    assert problems(root) == [
        f"catalogs/rules.yaml:{support}: rules: support: {engine}: no version pinned for it in the engines block"
        for engine in ("llama.cpp", "vllm")
    ]
