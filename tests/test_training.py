"""The training engine: trainable parameters, the parts per GPU, sharding, and refused combinations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import gather
from gpumem.engines.training import TARGETS, TrainingError, TrainingSetup, activations_bytes, lora_params, training
from gpumem.errors import BuildError

from .conftest import NOW, edit, line_of, options_for
from .project import CATALOGS

CATALOG = load_catalog(CATALOGS)
RULES, DEPLOYMENT = CATALOG.rules.training, CATALOG.rules.deployment
assert RULES is not None and DEPLOYMENT is not None
LLAMA = CATALOG.model("llama-3.1-8b")  # 8,030,261,248 parameters; 32 layers, hidden 4,096, 8 KV heads, vocabulary 128,256
PARAMS = 8_030_261_248
NON_TORCH = 268_435_456  # deployment.runtime.non_torch_gib: 0.25 GiB


def run(method: str, **settings) -> TrainingSetup:
    lora = {"lora_rank": 16, "lora_targets": TARGETS["attn_mlp"]} if method != "full" else {}
    return TrainingSetup(method, seq=settings.pop("seq", 4096), **{**lora, **settings})


def test_lora_counts_trainable_parameters_from_the_architecture():
    # PEFT prints these for Llama 3 8B: r=16 on q,k,v,o and on every linear layer of the blocks.
    assert lora_params(LLAMA.arch, 16, TARGETS["attn"]) == 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024)) == 13_631_488
    assert lora_params(LLAMA.arch, 16, TARGETS["attn_mlp"]) == 41_943_040
    mixtral = CATALOG.model("mixtral-8x7b")  # 8 experts of width 14,336 in each of 32 layers
    experts = 32 * 8 * 3 * 8 * (4096 + 14336)
    assert lora_params(mixtral.arch, 8, TARGETS["all"]) == lora_params(mixtral.arch, 8, TARGETS["attn"]) + experts == 120_061_952
    assert lora_params(mixtral.arch, 8, TARGETS["attn_mlp"]) == lora_params(mixtral.arch, 8, TARGETS["attn"])  # no dense MLP


def test_full_fine_tuning_both_conventions():
    zero = training(LLAMA, run("full", precision="mixed"), RULES, DEPLOYMENT)  # ZeRO: 2 + 2 + 12 bytes
    assert (zero.weights_bytes_per_gpu, zero.gradients_bytes_per_gpu, zero.optimizer_bytes_per_gpu) == (2 * PARAMS, 2 * PARAMS, 12 * PARAMS)
    hf = training(LLAMA, run("full", precision="mixed_hf"), RULES, DEPLOYMENT)  # Hugging Face: 6 + 4 + 8 bytes
    assert (hf.weights_bytes_per_gpu, hf.gradients_bytes_per_gpu, hf.optimizer_bytes_per_gpu) == (6 * PARAMS, 4 * PARAMS, 8 * PARAMS)
    pure = training(LLAMA, run("full", precision="bf16"), RULES, DEPLOYMENT)
    assert pure.optimizer_bytes_per_gpu == 4 * PARAMS
    assert zero.total_bytes_per_gpu == 16 * PARAMS + zero.activations_bytes_per_gpu + NON_TORCH


def test_optimizers():
    def optimizer(name: str, precision: str = "mixed") -> float:
        return training(LLAMA, run("full", optimizer=name, precision=precision), RULES, DEPLOYMENT).optimizer_bytes_per_gpu

    assert optimizer("adamw_8bit") == (4 + 2) * PARAMS  # master copy + two one-byte states
    assert optimizer("sgd") == (4 + 4) * PARAMS
    assert optimizer("paged_adamw") == optimizer("adamw")
    assert training(LLAMA, run("full", optimizer="paged_adamw"), RULES, DEPLOYMENT).paged_optimizer
    # Adafactor: a row and a column per matrix (q, k, v, o, gate, up, down; embeddings and head), every
    # vector whole (65 norms of 4,096), one 16-bit state each here
    rows_and_columns = 32 * (2 * 8192 + 2 * 5120 + 3 * (4096 + 14336)) + 2 * (128256 + 4096)
    assert optimizer("adafactor", "bf16") == 2 * (rows_and_columns + 65 * 4096) == 6_304_768


def test_activations_follow_korthikanti():
    tokens, hidden, layers = 4096, 4096, 32
    logits = tokens * 128256 * 14
    checkpointed = activations_bytes(LLAMA.arch, run("full"), RULES)
    assert checkpointed == layers * 2 * tokens * hidden + 34 * tokens * hidden + logits == 8_998_879_232
    kept = activations_bytes(LLAMA.arch, run("full", checkpointing="none", micro_batch=2), RULES)
    assert kept == layers * 34 * 2 * tokens * hidden + 2 * logits
    scores = activations_bytes(LLAMA.arch, run("full", checkpointing="none", flash_attention=False), RULES)
    assert scores - activations_bytes(LLAMA.arch, run("full", checkpointing="none"), RULES) == layers * 5 * 32 * tokens**2


def test_qlora_stores_the_base_in_nf4():
    need = training(LLAMA, run("qlora", precision="bf16"), RULES, DEPLOYMENT)
    base = (PARAMS - 2 * 128256 * 4096) * 4.127 / 8 + 2 * 128256 * 4096 * 2
    assert need.weights_bytes_per_gpu == pytest.approx(base + 2 * 41_943_040)
    assert need.gradients_bytes_per_gpu == 2 * 41_943_040
    assert need.optimizer_bytes_per_gpu == 4 * 41_943_040
    lora = training(LLAMA, run("lora", precision="bf16"), RULES, DEPLOYMENT)
    assert lora.weights_bytes_per_gpu == 2 * PARAMS + 2 * 41_943_040


def test_fp32_unquantized_widens_the_residual_stream():
    plain = activations_bytes(LLAMA.arch, run("qlora", checkpointing="none"), RULES)
    upcast = activations_bytes(LLAMA.arch, run("qlora", checkpointing="none", fp32_unquantized=True), RULES, wide=2.0)
    assert upcast - plain == 32 * 4 * 4096 * 4096  # both norms' inputs in every layer, 2 more bytes each


def test_sharding_divides_by_stage():
    def parts(zero: int, **settings) -> tuple[float, float, float]:
        need = training(LLAMA, run("full", zero=zero, gpus=4, **settings), RULES, DEPLOYMENT)
        return need.weights_bytes_per_gpu, need.gradients_bytes_per_gpu, need.optimizer_bytes_per_gpu

    assert parts(0) == (2 * PARAMS, 2 * PARAMS, 12 * PARAMS)
    assert parts(1) == (2 * PARAMS, 2 * PARAMS, 3 * PARAMS)
    assert parts(2) == (2 * PARAMS, PARAMS / 2, 3 * PARAMS)
    gathered = 2 * (2 * PARAMS / 32) * 3 / 4  # two layers' 16-bit weights, three quarters of them from other GPUs
    assert parts(3) == (PARAMS / 2 + gathered, PARAMS / 2, 3 * PARAMS) == (4_767_967_616, 4_015_130_624, 24_090_783_744)
    assert parts(3, offload_optimizer=True)[2] == 0
    need = training(LLAMA, run("full", zero=3, gpus=4), RULES, DEPLOYMENT)
    assert need.runtime_bytes_per_gpu == NON_TORCH + 1.85 * 2**30  # NCCL buffers with several GPUs (deployment.runtime.parallel_gib)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            run("qlora", precision="mixed"),
            "QLoRA keeps its base in 4 bits and trains adapters only: an FP32 master copy of the weights is full fine-tuning's setting (use bf16 precision)",
        ),
        (run("lora", lora_rank=4097), "LoRA rank 4097 is outside 1 to the hidden size (4,096)"),
        (run("full", zero=3), "ZeRO-3 on one GPU shards nothing: train on 2 GPUs or more, or without ZeRO"),
        (run("full", lora_rank=8), "full fine-tuning trains every weight: a LoRA rank or LoRA targets apply only to lora and qlora"),
        (run("lora", lora_targets=("q", "lm_head")), "LoRA targets must be among q, k, v, o, gate, up, down, experts, got q, lm_head"),
        (run("lora", lora_targets=TARGETS["all"]), "Llama 3.1 8B has no routed experts for LoRA to target"),
        (
            run("lora", optimizer="paged_adamw", offload_optimizer=True),
            "paged_adamw already pages its states to CPU memory: do not also offload them",
        ),
        (run("full", micro_batch=0), "micro_batch must be at least 1, got 0"),
        (run("full", optimizer="lion"), "unknown optimizer 'lion': expected one of adamw, adamw_8bit, paged_adamw, sgd, adafactor"),
    ],
)
def test_bad_combinations_are_refused(setup, message):
    with pytest.raises(TrainingError) as raised:
        training(LLAMA, setup, RULES, DEPLOYMENT)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


def test_same_inputs_same_bytes():
    setup = run("lora", zero=2, gpus=2, micro_batch=4)
    assert training(LLAMA, setup, RULES, DEPLOYMENT) == training(LLAMA, replace(setup), RULES, DEPLOYMENT)


def test_a_broken_training_block_is_reported_by_file_and_line(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    rules = inputs / "catalogs" / "rules.yaml"
    edit(rules, "    layer_bytes: 34\n", "    layer_bytes: -34\n")
    edit(rules, "    qlora: nf4\n", "    qlora: nf5\n")
    edit(rules, "adamw_8bit: {states: 2, state_bytes: 1,", "adamw_8bit: {states: 2, state_bytes: 1, pagd: true,")
    edit(rules, "    lora_targets: all\n", "    lora_targets: everything\n")
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    at = {text: line_of(rules, text) for text in ("pagd", "qlora: nf5", "layer_bytes: -34", "lora_targets: everything")}
    assert raised.value.lines == [
        f"catalogs/rules.yaml:{at['pagd']}: rules: training.optimizers.adamw_8bit.pagd: unknown field (did you mean 'paged'?)",
        f"catalogs/rules.yaml:{at['qlora: nf5']}: rules: training.base.qlora: expected a weight format of deployment.weight_formats "
        "(fp32, bf16, fp16, fp8, int8, awq, gptq, nf4, mxfp4, nvfp4, q8_0, q6_k, q5_k_m, q4_k_m, q4_0, q3_k_m, q2_k, gguf_mxfp4), got 'nf5'",
        f"catalogs/rules.yaml:{at['layer_bytes: -34']}: rules: training.activations.layer_bytes: expected a positive number, got -34",
        f"catalogs/rules.yaml:{at['lora_targets: everything']}: rules: training.defaults.lora_targets: "
        "unknown LoRA targets 'everything' (expected all, attn or attn_mlp)",
    ]


def test_qlora_holds_three_layers_of_dequantized_16_bit_weights():
    # Llama 3.1 8B's layer: 2 x 4,096^2 (q, o) + 2 x 4,096 x 1,024 (k, v) + 3 x 4,096 x 14,336 (gate, up, down) = 218,103,808 weights
    qlora = training(LLAMA, run("qlora", precision="bf16"), RULES, DEPLOYMENT)
    assert RULES.dequantized_layers == 3.0
    assert qlora.dequantized_bytes_per_gpu == 3 * 218_103_808 * 2 == 1_308_622_848
    lora = training(LLAMA, run("lora", precision="bf16"), RULES, DEPLOYMENT)
    assert lora.dequantized_bytes_per_gpu == 0.0  # a 16-bit base is read as it is
    sharded = training(LLAMA, run("qlora", precision="bf16", zero=3, gpus=4), RULES, DEPLOYMENT)
    assert sharded.dequantized_bytes_per_gpu == qlora.dequantized_bytes_per_gpu  # FSDP gathers whole layers


def test_the_footprint_adds_the_allocators_reserve_to_what_torch_allocates():
    need = training(LLAMA, run("lora", precision="bf16"), RULES, DEPLOYMENT)
    assert RULES.fit is not None and (RULES.fit.allocator_reserve, RULES.fit.comfortable_free) == (0.15, 0.1)
    assert need.allocated_bytes_per_gpu == need.total_bytes_per_gpu - NON_TORCH
    assert need.reserve_bytes_per_gpu == need.allocated_bytes_per_gpu * 0.15
    assert need.footprint_bytes_per_gpu == need.total_bytes_per_gpu + need.reserve_bytes_per_gpu
    paged = training(LLAMA, run("lora", precision="bf16", optimizer="paged_adamw"), RULES, DEPLOYMENT)
    # paged states live in unified memory, outside torch's allocator: no reserve on them
    assert paged.allocated_bytes_per_gpu == paged.total_bytes_per_gpu - NON_TORCH - paged.optimizer_bytes_per_gpu


def test_a_broken_training_fit_rule_is_reported_by_file_and_line(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    rules = inputs / "catalogs" / "rules.yaml"
    edit(rules, "  allocator_reserve: 0.15\n", "  allocator_reserve: 1.15\n")
    edit(rules, "    dequantized_layers: 3.0\n", "    dequantized_layers: three\n")
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    at = {text: line_of(rules, text) for text in ("allocator_reserve: 1.15", "dequantized_layers: three")}
    assert raised.value.lines == [
        f"catalogs/rules.yaml:{at['allocator_reserve: 1.15']}: rules: training_fit.allocator_reserve: "
        "expected a fraction between 0 and 1, got 1.15",
        f"catalogs/rules.yaml:{at['dequantized_layers: three']}: rules: training.quantized.dequantized_layers: "
        "expected a positive number, got 'three'",
    ]


def test_a_training_block_without_its_fit_rule_is_refused(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    rules = inputs / "catalogs" / "rules.yaml"
    text = rules.read_text()
    start = text.index("training_fit:\n")
    rules.write_text(text[:start] + text[text.index("\n\n", start) + 2 :])
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    # reported at the rules' first line, as every missing section is
    assert raised.value.lines == [f"catalogs/rules.yaml:{line_of(rules, 'precisions:')}: rules: training_fit: missing field"]
