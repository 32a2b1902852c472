"""Layer 2 of the memory model: what vLLM or llama.cpp allocate on each GPU, in bytes.

Pure arithmetic on records (models, weight and KV formats, runtime constants from
rules.yaml); no files, no formatting. Layer 1, the rule of thumb the original guides
teach, stays in engines/memory.py.

The budget is vLLM's: on every GPU, weights + the runtime (non-torch memory and the
activation peak of the profiling run) + the KV cache must fit within
gpu_memory_utilization x the card's memory as CUDA reports it.

A build asks for the same deployment again and again (a model page's tables, its GPUs' pages, the
speed figures: 38,858 calls for 4,303 distinct arguments), so `deployment` and
`kv_cache_bytes_per_gpu` are remembered (functools.cache). Their arguments are frozen records,
values: the same arguments give the same answer for ever, so a cache at module level is correct;
`forget` empties it, which each build does first (figures.site_figures) so that a long-running
preview does not keep every catalog it has seen.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpumem.records.catalog import Architecture, Model
from gpumem.records.engines import DeploymentRules, KvFormat, WeightFormat

GIB = 2**30
LOGIT_BYTES = 4  # 32-bit logits


def embedding_params(arch: Architecture) -> int:
    """Token embeddings plus the output head (lm_head) unless it shares the embeddings' weights."""
    return arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2)


def expert_params(arch: Architecture, pad_to: int = 0) -> int:
    """Routed experts' weights (gate, up and down projections), with the width a kernel pads them to."""
    experts = arch.experts
    if experts is None:
        return 0
    width = experts.intermediate
    if pad_to:
        width = math.ceil(width / pad_to) * pad_to
    moe_layers = arch.layers - experts.dense_layers
    return moe_layers * experts.count * 3 * arch.hidden * width


def weights_bytes(model: Model, fmt: WeightFormat) -> float:
    """The whole model's weights as the format stores them.

    `all` formats (16/32-bit, GGUF at llama.cpp's average bits per weight) store every
    parameter alike; `linear` formats (FP8, INT8, AWQ, GPTQ, NF4) quantize the linear
    layers and keep embeddings, the output head and a vision tower at 16 bits; `experts`
    formats (MXFP4) quantize only the routed experts.
    """
    params = model.params_b * 1e9
    sixteen_bit = 2.0
    if fmt.scope == "all":
        return params * fmt.bits / 8
    if fmt.scope == "experts":
        quantized = expert_params(model.arch, fmt.pad_to)
        rest = params - expert_params(model.arch)
        return quantized * fmt.bits / 8 + rest * sixteen_bit
    kept = embedding_params(model.arch) + model.vision_params_b * 1e9
    return (params - kept) * fmt.bits / 8 + kept * sixteen_bit


def valid_tensor_parallel(arch: Architecture, gpus: int) -> bool:
    """vLLM's check: heads split evenly, and KV heads split evenly or are replicated whole."""
    return arch.heads % gpus == 0 and (arch.kv_heads % gpus == 0 or gpus % arch.kv_heads == 0)


def valid_gpu_counts(arch: Architecture, counts: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in counts if valid_tensor_parallel(arch, n))


def kv_heads_per_gpu(arch: Architecture, gpus: int) -> float:
    """KV heads each GPU holds: split, or one replicated head each when there are more GPUs than heads."""
    return max(1.0, arch.kv_heads / gpus)


def kv_elements_per_token_layer(arch: Architecture, gpus: int) -> float:
    """Cache elements one layer keeps per token on one GPU; MLA's latent is whole on every GPU."""
    if arch.attention.kind == "mla":
        return arch.attention.kv_lora_rank + arch.attention.qk_rope_head_dim
    return 2 * kv_heads_per_gpu(arch, gpus) * arch.head_dim


def layer_slots(arch: Architecture, runtime: str) -> tuple[int, int]:
    """Cache slots of full-attention and sliding-window layers.

    llama.cpp keeps one slot per layer. vLLM's hybrid allocator groups the layers of each
    attention type into groups of one size (the smaller count, or the larger when it is under
    1.5 times the smaller) and pads the last group of each type: Gemma 3 27B's 10 full and 52
    sliding layers take 10 + 60 slots (vllm/v1/core/kv_cache_utils.py).
    """
    if arch.attention.kind != "sliding":
        return arch.layers, 0
    sliding = arch.attention.sliding_layers
    full = arch.layers - sliding
    if runtime != "vllm" or not full:
        return full, sliding
    small, large = min(full, sliding), max(full, sliding)
    group = large if large < 1.5 * small else small
    return math.ceil(full / group) * group, math.ceil(sliding / group) * group


def gpu_cache_share(arch: Architecture, runtime: str, gpus: int) -> tuple[float, tuple[int, int]]:
    """What one GPU of `gpus` caches: the elements per token and layer, and the full and sliding layer slots.

    vLLM's tensor parallelism splits the KV heads and keeps every layer on every GPU. llama.cpp's default
    split mode, LLAMA_SPLIT_MODE_LAYER ("split layers and KV across GPUs", llama.h; common/common.h sets
    `split_mode = LLAMA_SPLIT_MODE_LAYER`, https://github.com/ggml-org/llama.cpp/blob/
    001d906a6d86e2490e394361e7cc6f478b100088/common/common.h), gives each GPU whole layers with all their
    KV heads: on equal cards the busiest holds the rounded-up share of each kind of layer.
    """
    full, sliding = layer_slots(arch, runtime)
    if runtime != "llama.cpp":
        return kv_elements_per_token_layer(arch, gpus), (full, sliding)
    return kv_elements_per_token_layer(arch, 1), (math.ceil(full / gpus), math.ceil(sliding / gpus))


def kv_bytes_per_token_per_gpu(arch: Architecture, kv: KvFormat, gpus: int, runtime: str = "vllm") -> float:
    """Cache bytes per token on one GPU while every layer grows (how vLLM counts its cache in tokens)."""
    elements, slots = gpu_cache_share(arch, runtime, gpus)
    return elements * kv.bytes * sum(slots)


@functools.cache
def kv_cache_bytes_per_gpu(arch: Architecture, kv: KvFormat, tokens: int, sequences: int, gpus: int, runtime: str = "vllm") -> float:
    """Cache of `sequences` requests of `tokens` tokens on one GPU; sliding-window layers hold their window."""
    elements, (full, sliding) = gpu_cache_share(arch, runtime, gpus)
    layer_tokens = full * tokens + sliding * min(tokens, arch.attention.window)
    return elements * kv.bytes * layer_tokens * sequences


@functools.cache
def longest_context(arch: Architecture, kv: KvFormat, free: float, limit: int, runtime: str = "vllm") -> int:
    """The longest context up to `limit` whose cache for one request on one GPU fits `free` bytes
    (at least 1): kv_cache_bytes_per_gpu's own arithmetic, its per-token factor worked out once."""
    full, sliding = layer_slots(arch, runtime)
    per_token = kv_elements_per_token_layer(arch, 1) * kv.bytes
    window = arch.attention.window
    low, high = 1, limit
    while low < high:
        middle = (low + high + 1) // 2
        if per_token * (full * middle + sliding * min(middle, window)) <= free:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Batch:
    """vLLM's scheduler limits for a card: tokens per step and request slots (its profiling run uses both)."""

    tokens: int
    sequences: int


def batch_defaults(rules: DeploymentRules, card_bytes: float, gpu_id: str) -> Batch:
    """vLLM's defaults for `vllm serve`: larger on cards of 70 GiB and more, except the A100s."""
    if card_bytes >= rules.large_card_gib * GIB and gpu_id not in rules.large_card_exceptions:
        return Batch(rules.large_batch_tokens, rules.large_batch_sequences)
    return Batch(rules.small_batch_tokens, rules.small_batch_sequences)


def runtime_bytes_per_gpu(rules: DeploymentRules, arch: Architecture, fmt: WeightFormat, gpus: int, batch: Batch) -> float:
    """Memory the runtime takes besides weights and KV cache on each GPU.

    vLLM: non-torch memory (CUDA context, and NCCL buffers when several GPUs talk) plus the
    activation peak of its profiling run, whose largest part is the sampler's logits for
    every request slot over the whole vocabulary. llama.cpp: its context and compute buffer.
    """
    non_torch = rules.non_torch_bytes + (rules.parallel_bytes if gpus > 1 else 0.0)
    if fmt.runtime == "llama.cpp":
        return non_torch + LOGIT_BYTES * rules.llamacpp_batch * arch.vocab
    activation = rules.activation_bytes + rules.sampler_bytes * batch.sequences * arch.vocab
    return non_torch + activation


@dataclass(frozen=True)
class Deployment:
    """One workload on n GPUs: the whole model's weights and every per-GPU part, in bytes."""

    gpus: int
    weights_bytes: float
    weights_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    kv_cache_bytes_per_gpu: float
    runtime_bytes_per_gpu: float

    @property
    def total_bytes_per_gpu(self) -> float:
        return self.weights_bytes_per_gpu + self.runtime_bytes_per_gpu + self.kv_cache_bytes_per_gpu


@functools.cache
def deployment(
    rules: DeploymentRules,
    model: Model,
    fmt: WeightFormat,
    kv: KvFormat,
    gpus: int,
    tokens: int,
    sequences: int,
    batch: Batch,
) -> Deployment:
    """Per-GPU memory of serving `sequences` requests of `tokens` tokens on `gpus` GPUs."""
    weights = weights_bytes(model, fmt)
    return Deployment(
        gpus=gpus,
        weights_bytes=weights,
        weights_bytes_per_gpu=weights / gpus,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu(model.arch, kv, gpus, fmt.runtime),
        kv_cache_bytes_per_gpu=kv_cache_bytes_per_gpu(model.arch, kv, tokens, sequences, gpus, fmt.runtime),
        runtime_bytes_per_gpu=runtime_bytes_per_gpu(rules, model.arch, fmt, gpus, batch),
    )


def budget_bytes(rules: DeploymentRules, card_bytes: float) -> float:
    """What vLLM lets itself use of one card: gpu_memory_utilization x the memory CUDA reports."""
    return rules.utilization * card_bytes


def fits(need: Deployment, rules: DeploymentRules, card_bytes: float) -> bool:
    return need.total_bytes_per_gpu <= budget_bytes(rules, card_bytes)


def forget() -> None:
    """Empty the remembered calls (see the module's docstring)."""
    for remembered in (deployment, kv_cache_bytes_per_gpu, longest_context):
        remembered.cache_clear()
