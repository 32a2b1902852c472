"""The speed engine (generator/engines/speed.py): exact numbers from the roofline's own terms."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpumem.catalog.hf_config import model_from_config
from gpumem.engines.deployment import kv_cache_bytes_per_gpu, weights_bytes
from gpumem.engines.speed import (
    Load,
    allreduce_s,
    allreduces,
    attention_flops_per_token,
    blocks,
    compute_precision,
    link_bytes_per_s,
    link_path,
    matmul_flops_per_token,
    prefill_chunk,
    prefill_step,
    speed,
    touched_expert_fraction,
)

from . import test_validate
from .conftest import edit, line_of
from .measurements.speed_table import catalog
from .project import REPO
from .test_validate import problems

RULES = Path("catalogs/rules.yaml")
root = test_validate.root  # the copied inputs as the working folder


@pytest.fixture(scope="module")
def found():
    return catalog()


def formats(found, weights: str, kv: str):
    deployment = found.rules.deployment
    return deployment.weight_formats[weights], deployment.kv_formats[kv]


def test_one_request_reads_the_weights_and_its_cache_each_step(found):
    """Llama 3.1 8B in BF16 on one H100 SXM, 1,000 tokens in and out: decode is bytes over vLLM's share of
    3.35 TB/s (bandwidth_hbm) plus its time per layer for each of the 32 layers; cost is the hourly price over the
    tokens of an hour."""
    model, gpu, rules = found.model("llama-3.1-8b"), found.gpu("h100-sxm"), found.rules.speed
    vllm = rules.efficiency["vllm"]
    assert (vllm.bandwidth_hbm, vllm.layer_overhead_s) == (0.76, 71e-6)
    fmt, kv = formats(found, "bf16", "bf16")
    result = speed(rules, model, fmt, kv, gpu, 1, Load(1, 1000, 1000), price_per_hour=2.07)
    read = weights_bytes(model, fmt) + kv_cache_bytes_per_gpu(model.arch, kv, 1500, 1, 1)
    assert read == 16_060_522_496 + 196_608_000
    assert result.step.memory_s == pytest.approx(read / (3.35e12 * 0.76), rel=1e-12)
    assert result.step.overhead_s == pytest.approx(32 * 71e-6, rel=1e-12)
    assert result.decode_tokens_per_s_per_request == pytest.approx(115.509, abs=1e-3)
    prefill = result.ttft_s - result.step.seconds
    assert result.aggregate_tokens_per_s == pytest.approx(1000 / (prefill + 1000 * result.step.seconds), rel=1e-12)
    assert result.usd_per_million_output_tokens == pytest.approx(2.07 / (result.aggregate_tokens_per_s * 3600) * 1e6, rel=1e-12)
    assert round(result.usd_per_million_output_tokens, 4) == 4.9895
    assert speed(rules, model, fmt, kv, gpu, 1, Load(1, 1000, 1000)).usd_per_million_output_tokens is None


def test_a_mixture_of_experts_adds_its_own_time_per_layer(found):
    """Qwen3 30B-A3B's 48 layers each route a token to experts, which runs more kernels than a dense MLP: its fixed
    time per step is 48 x (vLLM's time per layer + its MoE layers' own); Llama 3.1 8B's is 32 x the time per layer."""
    rules, gpu = found.rules.speed, found.gpu("h100-sxm")
    vllm = rules.efficiency["vllm"]
    assert (vllm.layer_overhead_s, vllm.layer_overhead_moe_s) == (71e-6, 33e-6)
    fmt, kv = formats(found, "bf16", "bf16")
    moe = speed(rules, found.model("qwen3-30b-a3b"), fmt, kv, gpu, 1, Load(1, 0, 100)).step.overhead_s
    dense = speed(rules, found.model("llama-3.1-8b"), fmt, kv, gpu, 1, Load(1, 0, 100)).step.overhead_s
    assert moe == pytest.approx(48 * (vllm.layer_overhead_s + vllm.layer_overhead_moe_s), rel=1e-12)
    assert dense == pytest.approx(32 * vllm.layer_overhead_s, rel=1e-12)


def test_a_batch_touches_more_experts_than_one_token(found):
    """Mixtral picks 2 of 8 experts per token: one token reads a quarter of them, four tokens 1 - 0.75^4."""
    arch = found.model("mixtral-8x7b").arch
    assert touched_expert_fraction(arch, 1) == 0.25
    assert touched_expert_fraction(arch, 4) == 0.68359375
    assert touched_expert_fraction(found.model("llama-3.1-8b").arch, 4) == 1.0


def test_a_bridge_joins_two_cards_and_pcie_takes_the_rest(found):
    """RTX A6000: its NVLink bridge gives 112.5 GB/s both ways for two cards; four talk over PCIe 4.0."""
    rules, gpu = found.rules.speed, found.gpu("rtx-a6000")
    assert link_bytes_per_s(rules, gpu, 2) == 56.25e9
    assert link_bytes_per_s(rules, gpu, 4) == 32e9
    assert link_bytes_per_s(rules, found.gpu("h100-sxm"), 8) == 450e9


def test_two_pcie_cards_with_peer_access_take_the_engines_own_all_reduce(found):
    """vLLM runs its own all-reduce on two PCIe cards that reach each other's memory (RTX PRO 6000: the link's fixed
    cost) and leaves it to NCCL on more cards, without peer access (RTX 5090) or where it is not known (RTX 6000
    Ada); a bridge's two cards are on the link. Llama 3.1 70B decodes one token with 160 all-reduces: on two RTX PRO
    6000 each costs the link's 15 µs, not PCIe's 20 µs."""
    pro, rtx5090, ada, a6000 = (found.gpu(name) for name in ("rtx-pro-6000-blackwell", "rtx-5090", "rtx-6000-ada", "rtx-a6000"))
    assert [link_path(pro, 2), link_path(pro, 4), link_path(rtx5090, 2), link_path(ada, 2)] == ["link", "pcie", "pcie", "pcie"]
    assert [link_path(a6000, 2), link_path(a6000, 4)] == ["link", "pcie"]
    rules, model = found.rules.speed, found.model("llama-3.1-70b")
    vllm = rules.efficiency["vllm"]
    assert (vllm.allreduce_link_s, vllm.allreduce_pcie_s) == (15e-6, 20e-6)
    unknown = replace(pro, link=replace(pro.link, p2p=None))
    own, nccl = allreduce_s(rules, model, pro, 2, 1, "vllm"), allreduce_s(rules, model, unknown, 2, 1, "vllm")
    assert nccl - own == pytest.approx(160 * 5e-6, rel=1e-9)


def test_minimax_m2_all_reduces_its_q_and_k_norms_in_every_layer(found):
    """MiniMax M2.7 norms the whole of q and of k (its config's qk_norm_type per_layer): under tensor parallelism
    each of its 62 layers all-reduces those sums of squares once beside its two residual blocks, 186 all-reduces a
    step, the 62 more costing only the link's fixed cost; Llama 3.1 70B makes one per block."""
    config = json.loads((REPO / "tests/fixtures/hf_configs/minimax-m2.7.json").read_text())
    model = model_from_config(config, found.rules.calculator_limits, "m", "M", "https://huggingface.co")
    assert model.arch.attention.qk_norm == "per_layer"
    assert (allreduces(model.arch), blocks(model.arch)) == (186, 124)
    llama = found.model("llama-3.1-70b").arch
    assert (allreduces(llama), blocks(llama)) == (160, 160)
    rules, gpu = found.rules.speed, found.gpu("h100-sxm")
    plain = replace(model, arch=replace(model.arch, attention=replace(model.arch.attention, qk_norm="")))
    more = allreduce_s(rules, model, gpu, 4, 1, "vllm") - allreduce_s(rules, plain, gpu, 4, 1, "vllm")
    assert more == pytest.approx(62 * rules.efficiency["vllm"].allreduce_link_s, rel=1e-9)
    assert allreduce_s(rules, model, gpu, 1, 1, "vllm") == 0.0


def test_llama_cpp_gpus_take_turns_and_vllm_splits_each_layer(found):
    """llama.cpp's layer split runs one GPU at a time: four cards decode as fast as one; vLLM's tensor
    parallelism reads a quarter of the weights on each and pays the all-reduces."""
    model, gpu, rules = found.model("llama-3.1-70b"), found.gpu("h100-sxm"), found.rules.speed
    gguf, fp16 = formats(found, "q4_k_m", "bf16")
    one = speed(rules, model, gguf, fp16, gpu, 1, Load(1, 0, 512)).decode_tokens_per_s_per_request
    four = speed(rules, model, gguf, fp16, gpu, 4, Load(1, 0, 512)).decode_tokens_per_s_per_request
    assert four == one
    bf16, kv = formats(found, "bf16", "bf16")
    split = speed(rules, model, bf16, kv, gpu, 4, Load(1, 0, 512))
    whole = speed(rules, model, bf16, kv, gpu, 1, Load(1, 0, 512))
    assert split.step.link_s > 0 and whole.step.link_s == 0
    assert split.step.memory_s < whole.step.memory_s / 3


def test_a_long_prompt_is_prefilled_in_chunks_each_reading_the_weights(found):
    """vLLM chunks a prompt to max_num_batched_tokens, 2,048 on an A100 and 8,192 on an H100; llama.cpp to its
    512-token micro-batch. A 5,000-token prompt on one A100 takes 3 passes: 3 weight reads and 3 x 80 layers of fixed
    time where one pass had 1; the FLOPs are the same. On 2 cards each pass also pays its all-reduces' fixed cost."""
    deployment, rules = found.rules.deployment, found.rules.speed
    a100, h100 = found.gpu("a100-80gb-sxm"), found.gpu("h100-sxm")
    assert [prefill_chunk(deployment, "vllm", a100), prefill_chunk(deployment, "vllm", h100)] == [2048, 8192]
    assert [prefill_chunk(deployment, "llama.cpp", a100), prefill_chunk(deployment, "sglang", h100)] == [512, 0]
    model, (fmt, _) = found.model("llama-3.1-70b"), formats(found, "bf16", "bf16")
    whole = prefill_step(rules, model, fmt, a100, 1, 5000, "vllm")
    chunked = prefill_step(rules, model, fmt, a100, 1, 5000, "vllm", 2048)
    assert chunked.compute_s == whole.compute_s
    assert chunked.memory_s == pytest.approx(3 * whole.memory_s, rel=1e-12)
    vllm = rules.efficiency["vllm"]
    assert chunked.overhead_s == pytest.approx(3 * 80 * vllm.layer_overhead_s, rel=1e-12)
    pair = prefill_step(rules, model, fmt, a100, 2, 5000, "vllm", 2048).link_s
    assert pair - prefill_step(rules, model, fmt, a100, 2, 5000, "vllm").link_s == pytest.approx(
        2 * 2 * 80 * vllm.allreduce_link_s, rel=1e-12
    )


def test_each_format_runs_at_the_fastest_tensor_rate_the_gpu_has(found):
    rules = found.rules.speed
    fp8, mxfp4, awq = (found.rules.deployment.weight_formats[name] for name in ("fp8", "mxfp4", "awq"))
    assert compute_precision(rules, fp8, found.gpu("h100-sxm")) == "fp8"
    assert compute_precision(rules, fp8, found.gpu("a100-80gb-sxm")) == "bf16"
    assert compute_precision(rules, mxfp4, found.gpu("b200")) == "fp4"
    assert compute_precision(rules, mxfp4, found.gpu("h100-sxm")) == "bf16"
    assert compute_precision(rules, awq, found.gpu("b200")) == "bf16"


def test_a_windowed_layer_attends_over_its_window_only(found):
    """gpt-oss-20b: 12 of its 24 layers attend over a 128-token window, the other 12 over the whole context; Llama
    3.1 8B's 32 layers all attend over it (64 or 32 heads of 64 or 128, two FLOPs for the scores, two for the sum)."""
    gpt_oss, llama = found.model("gpt-oss-20b").arch, found.model("llama-3.1-8b").arch
    assert attention_flops_per_token(gpt_oss, 4096) == 4 * 64 * 64 * (12 * 4096 + 12 * 128)
    assert attention_flops_per_token(gpt_oss, 100) == 4 * 64 * 64 * 24 * 100
    assert attention_flops_per_token(llama, 4096) == 4 * 32 * 128 * 32 * 4096


def test_llama_cpp_multiplies_gguf_types_in_int8_tiles_and_f16_with_fp16_accumulation(found):
    """MMQ: every GGUF type at the int8 rate (660.6 TOPS on an RTX 4090), at its quantized prefill factor; F16 weights
    in cuBLAS with FP16 accumulation on llama.cpp (330.3 TFLOPS on an RTX 4090, 142 on an RTX 3090), where vLLM's
    FP16 GEMMs stay at the FP32-accumulate rate (165.2); a card without a separate FP16 rate keeps its BF16 one."""
    rules, weight_formats = found.rules.speed, found.rules.deployment.weight_formats
    q4, fp16 = weight_formats["q4_k_m"], weight_formats["fp16"]
    rtx4090 = found.gpu("rtx-4090")
    assert compute_precision(rules, q4, rtx4090) == "int8"
    assert [compute_precision(rules, fp16, rtx4090, "llama.cpp"), compute_precision(rules, fp16, rtx4090, "vllm")] == ["fp16", "bf16"]
    assert compute_precision(rules, fp16, found.gpu("a100-80gb-sxm"), "llama.cpp") == "bf16"
    model, llama = found.model("llama-3.1-8b"), rules.efficiency["llama.cpp"]
    quantized = prefill_step(rules, model, q4, rtx4090, 1, 512, "llama.cpp", 512)
    assert quantized.compute_s == pytest.approx(
        512 * (matmul_flops_per_token(model) + attention_flops_per_token(model.arch, 256)) / (660.6e12 * llama.prefill_quantized), rel=1e-12
    )
    dense = prefill_step(rules, model, fp16, found.gpu("rtx-3090"), 1, 512, "llama.cpp", 512)
    assert dense.compute_s == pytest.approx(
        512 * (matmul_flops_per_token(model) + attention_flops_per_token(model.arch, 256)) / (142e12 * llama.prefill), rel=1e-12
    )


def test_the_speed_block_is_checked_field_by_field(root):
    edit(root / RULES, "    llama.cpp: {bandwidth_gddr: 0.93,", "    llamacpp: {bandwidth_gddr: 0.93,")
    edit(root / RULES, "    mxfp4: [fp4]\n", "    mxfp4: [fp6]\n")
    runtime, rates = line_of(root / RULES, "    llamacpp: {"), line_of(root / RULES, "mxfp4: [fp6]")
    table = line_of(root / RULES, "    vllm: {bandwidth_gddr")  # a mapping reports at its first key
    assert problems(root) == [
        f"catalogs/rules.yaml:{table}: rules: speed.efficiency.llama.cpp: missing field",
        f"catalogs/rules.yaml:{runtime}: rules: speed.efficiency.llamacpp: unknown field (did you mean 'llama.cpp'?)",
        f"catalogs/rules.yaml:{rates}: rules: speed.compute_precision.mxfp4: expected a list of tensor rates (bf16, fp16, fp8, fp4, int8), got ['fp6']",
    ]


def test_an_engine_s_own_tensor_rates_are_checked_by_engine_and_format(root):
    edit(root / RULES, "      llama.cpp: {fp16: [fp16]}\n", "      llamacpp: {fp16: [fp16]}\n      vllm: {f16: [fp16]}\n")
    engine, fmt = line_of(root / RULES, "      llamacpp: {fp16"), line_of(root / RULES, "      vllm: {f16")
    assert problems(root) == [
        f"catalogs/rules.yaml:{engine}: rules: speed.compute_precision.by_engine.llamacpp: unknown field (did you mean 'llama.cpp'?)",
        f"catalogs/rules.yaml:{fmt}: rules: speed.compute_precision.by_engine.vllm.f16: unknown field (did you mean 'fp16'?)",
    ]
