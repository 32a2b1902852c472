"""The memory engine: pure arithmetic on parameters, precisions and architectures.

Every figure is in decimal GB (1 GB = 10**9 bytes); parameters are in billions, so
billions of parameters x bytes per parameter is GB directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpumem.records.catalog import Architecture, Rules, State

BYTES_PER_GB = 1e9


def weights_gb(params_b: float, bytes_per_param: float) -> float:
    """Memory of the weights alone; MoE models pass their total parameters."""
    return params_b * bytes_per_param


def rule_of_thumb_gb(params_b: float, bytes_per_param: float, margin: float) -> float:
    """Serving by the rule of thumb: weights plus a margin for cache and activations."""
    return weights_gb(params_b, bytes_per_param) * (1 + margin)


# vLLM keeps a state layer's convolution and recurrent state in the model's dtype, 16 bits, unless the config
# fixes the recurrent one (State.recurrent_bytes): MambaStateDtypeCalculator._mamba_state_dtype,
# https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/mamba/mamba_utils.py#L97-L110
STATE_BYTES = 2


def full_layer_kv(arch: Architecture) -> tuple[int, int]:
    """The KV heads and head size of the full-attention layers: Gemma 4's own (num_global_key_value_heads,
    global_head_dim) beside its sliding layers', else the model's."""
    return arch.attention.global_kv_heads or arch.kv_heads, arch.attention.global_head_dim or arch.head_dim


def kv_elements_per_token_layer(arch: Architecture, full: bool = False) -> int:
    """Elements one layer caches per token: K and V per KV head (a full-attention layer's, when `full`, with
    Gemma 4's own dimensions), or MLA's latent. vLLM 0.33.0 keeps Gemma 4's K and V apart even where
    attention_k_eq_v projects them with one matrix (its V is K's projection without RoPE, normed apart;
    Gemma4Attention.forward, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/gemma4.py#L521-L553)."""
    if arch.attention.kind == "mla":
        return arch.attention.kv_lora_rank + arch.attention.qk_rope_head_dim
    kv_heads, head_dim = full_layer_kv(arch) if full else (arch.kv_heads, arch.head_dim)
    return 2 * kv_heads * head_dim


def kv_bytes_per_token_layer(arch: Architecture, kv_bytes: float, full: bool = False) -> float:
    """Bytes one attention layer caches per token: its keys and values, and DSA's indexer key (stored apart, in 8 bits)."""
    return kv_elements_per_token_layer(arch, full) * kv_bytes + arch.attention.index_bytes


def cached_layer_tokens(arch: Architecture, tokens: int) -> tuple[int, int]:
    """Layer-tokens held for one sequence by the full-attention layers and by the sliding-window or chunked
    layers, which keep at most their window."""
    layers = arch.attention_layers
    if arch.attention.windowed:
        local = arch.attention.sliding_layers
        return (layers - local) * tokens, local * min(tokens, arch.attention.window)
    return layers * tokens, 0


def state_layer_bytes(state: State) -> int:
    """One state layer's state for one sequence, as vLLM keeps it: the model's 16-bit dtype, the recurrent part in the
    config's own dtype when it fixes one."""
    return state.conv * STATE_BYTES + state.recurrent * (state.recurrent_bytes or STATE_BYTES)


def state_bytes(arch: Architecture, gpus: int = 1) -> float:
    """One sequence's fixed state over a hybrid's state layers (0 without any), split over `gpus`."""
    return arch.state.layers * state_layer_bytes(arch.state) / gpus if arch.state else 0.0


def layers_cache_bytes(arch: Architecture, kv_bytes: float, tokens: int) -> float:
    """Keys and values the attention layers hold for one sequence of `tokens` tokens, each kind of layer at its size."""
    full, local = cached_layer_tokens(arch, tokens)
    return kv_bytes_per_token_layer(arch, kv_bytes, full=True) * full + kv_bytes_per_token_layer(arch, kv_bytes) * local


def kv_cache_bytes(arch: Architecture, kv_bytes: float, tokens: int, sequences: int = 1) -> float:
    """Key-value cache of `sequences` concurrent requests of `tokens` tokens each, with each one's fixed state."""
    return (layers_cache_bytes(arch, kv_bytes, tokens) + state_bytes(arch)) * sequences


def kv_cache_gb(arch: Architecture, kv_bytes: float, tokens: int, sequences: int = 1) -> float:
    return kv_cache_bytes(arch, kv_bytes, tokens, sequences) / BYTES_PER_GB


def kv_bytes_per_token(arch: Architecture, kv_bytes: float) -> float:
    """Cache bytes per token of context while every attention layer still grows (before any window fills)."""
    return layers_cache_bytes(arch, kv_bytes, 1)


def full_fine_tuning_gb(params_b: float, bytes_per_param: float) -> float:
    """Full fine-tuning with mixed-precision Adam, before activations."""
    return params_b * bytes_per_param


def lora_gb(params_b: float, base_bytes: float, margin: float) -> float:
    """LoRA: the frozen base at its precision plus a margin for adapters and their states."""
    return weights_gb(params_b, base_bytes) * (1 + margin)


def qlora_gb(params_b: float, bytes_per_param: float) -> float:
    """QLoRA: a frozen 4-bit base, adapters and paged optimizer states, before activations."""
    return params_b * bytes_per_param


def serving_gb(rules: Rules, params_b: float, precision: str) -> float:
    """The guide tables' serving figure: rule of thumb at a named precision."""
    return rule_of_thumb_gb(params_b, rules.precisions[precision], rules.serving_margin)


def fine_tuning_gb(rules: Rules, params_b: float, method: str) -> float:
    """The guide tables' fine-tuning figure for a named method (qlora, lora, full, full_hf)."""
    if method == "qlora":
        return qlora_gb(params_b, rules.qlora_bytes)
    if method == "lora":
        return lora_gb(params_b, rules.precisions[rules.lora_base_precision], rules.lora_margin)
    if method == "full_hf":
        return full_fine_tuning_gb(params_b, rules.full_hf_bytes)
    if method == "full":
        return full_fine_tuning_gb(params_b, rules.full_bytes)
    raise ValueError(f"unknown fine-tuning method {method!r}")


MODES = ("serve", "full", "lora", "qlora")


@dataclass(frozen=True)
class Breakdown:
    """A memory need and its parts, in GB (a part a mode does not have is 0)."""

    weights: float
    kv_cache: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    overhead: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.gradients + self.optimizer + self.overhead


def memory_need(
    rules: Rules, arch: Architecture, params_b: float, mode: str, precision: str, kv_precision: str, tokens: int, sequences: int
) -> Breakdown:
    """The calculator's figure for one mode: serving, full fine-tuning, LoRA or QLoRA.

    Serving counts weights, the KV cache of `sequences` requests of `tokens` tokens and the
    runtime overhead on both: (weights + KV cache) x (1 + overhead). Fine-tuning modes keep no KV cache and exclude activations;
    their weights use the precision the method fixes, not `precision`.
    """
    if mode == "serve":
        weights = weights_gb(params_b, rules.precisions[precision])
        cache = kv_cache_gb(arch, rules.kv_precisions[kv_precision], tokens, sequences)
        return Breakdown(weights, cache, overhead=(weights + cache) * rules.runtime_overhead)
    if mode == "full":
        parts = rules.full_parts
        return Breakdown(params_b * parts["weights"], gradients=params_b * parts["gradients"], optimizer=params_b * parts["optimizer"])
    if mode == "lora":
        weights = weights_gb(params_b, rules.precisions[rules.lora_base_precision])
        return Breakdown(weights, optimizer=weights * rules.lora_margin)
    if mode == "qlora":
        weights = weights_gb(params_b, rules.precisions[rules.qlora_base_precision])
        return Breakdown(weights, optimizer=qlora_gb(params_b, rules.qlora_bytes) - weights)
    raise ValueError(f"unknown mode {mode!r}")


def serving_breakdown(
    rules: Rules, arch: Architecture, params_b: float, precision: str, kv_precision: str, tokens: int, sequences: int
) -> Breakdown:
    """Serving a model at a context and concurrency: weights, cache and runtime overhead."""
    return memory_need(rules, arch, params_b, "serve", precision, kv_precision, tokens, sequences)


def max_context_tokens(arch: Architecture, kv_bytes: float, budget_bytes: float, limit: int) -> int:
    """The longest context (up to `limit`) whose cache for one request fits the budget; 0 if none."""
    if budget_bytes < kv_cache_bytes(arch, kv_bytes, 1):
        return 0
    low, high = 1, limit
    while low < high:
        middle = (low + high + 1) // 2
        if kv_cache_bytes(arch, kv_bytes, middle) <= budget_bytes:
            low = middle
        else:
            high = middle - 1
    return low


def requests_that_fit(arch: Architecture, kv_bytes: float, budget_bytes: float, tokens: int) -> int:
    """How many requests of `tokens` tokens each the cache budget holds at once."""
    per_request = kv_cache_bytes(arch, kv_bytes, tokens)
    return max(0, int(budget_bytes // per_request))
