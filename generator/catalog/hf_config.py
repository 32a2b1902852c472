"""A Hugging Face config.json read as a catalog model: its architecture and its parameters, counted.

Pure: takes the parsed JSON (a dict) and returns a Model or raises Invalid naming the field.
The count follows the tensors transformers creates for each architecture the catalog uses
(checked against every catalog model's exact parameters in tests/test_hf_config.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpumem.catalog.validate import Invalid
from gpumem.records.catalog import Architecture, Attention, Experts, Model

ARCHITECTURES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "gemma3",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
)
QKV_BIAS = ("qwen2",)
QK_NORM = ("qwen3", "qwen3_moe", "gemma3")
FOUR_NORMS = ("gemma2", "gemma3")


def _number(config: dict[str, Any], name: str, default: int | None = None) -> int:
    """A positive whole number of the config; a missing or wrong one is an error naming the field."""
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        shown = "nothing" if value is None else repr(value)
        raise Invalid(f"{name}: expected a positive integer, got {shown}")
    return value


@dataclass(frozen=True)
class Counted:
    """A config's model: total and active parameters, and the architecture the engines use."""

    params: int
    active: int | None
    arch: Architecture
    context: int
    release: str
    vision: int = 0  # parameters of a vision tower, counted apart from `params`


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs (Gemma 3) keep the language model under text_config."""
    inner = config.get("text_config")
    if isinstance(inner, dict):
        outer = {key: config.get(key) for key in ("model_type", "quantization_config", "vision_config")}
        return {**inner, **outer}
    return config


def count(config: dict[str, Any]) -> Counted:
    """Parameters and architecture of a config of one of ARCHITECTURES."""
    if not isinstance(config, dict):
        raise Invalid("expected a JSON object (a config.json)")
    kind = config.get("model_type")
    if kind not in ARCHITECTURES:
        listed = ", ".join(ARCHITECTURES)
        raise Invalid(f"model_type: {kind!r} is not an architecture gpumem counts (expected one of {listed})")
    config = text_config(config)
    hidden, layers, vocab = _number(config, "hidden_size"), _number(config, "num_hidden_layers"), _number(config, "vocab_size")
    heads = _number(config, "num_attention_heads")
    kv_heads = _number(config, "num_key_value_heads", heads)
    if heads % kv_heads:
        raise Invalid(f"num_key_value_heads: {kv_heads} does not divide num_attention_heads ({heads})")
    tied = bool(config.get("tie_word_embeddings", kind in FOUR_NORMS))
    if kind.startswith("deepseek"):
        attention_params, attention, head_dim = _mla(config, hidden, heads)
    else:
        head_dim = _number(config, "head_dim", hidden // heads)
        attention_params = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
        if kind in QKV_BIAS:
            attention_params += heads * head_dim + 2 * kv_heads * head_dim
        if kind == "gpt_oss":
            attention_params += heads * head_dim + 2 * kv_heads * head_dim + hidden + heads  # biases and sinks
        if kind in QK_NORM:
            attention_params += 2 * head_dim
        attention = _window(config, kind, layers)
    norms = (4 if kind in FOUR_NORMS else 2) * hidden
    mlp, active_mlp, experts, intermediate = _mlp(config, kind, hidden, layers)
    embeddings = vocab * hidden * (1 if tied else 2)
    params = embeddings + layers * (attention_params + norms) + mlp + hidden
    active = embeddings + layers * (attention_params + norms) + active_mlp + hidden if experts else None
    arch = Architecture(layers, heads, kv_heads, head_dim, attention, hidden, vocab, tied, intermediate, experts)
    context = _number(config, "max_position_embeddings", 4096)
    return Counted(params, active, arch, context, _release(config), _vision(config.get("vision_config"), hidden))


def _vision(vision: Any, text_hidden: int) -> int:
    """Gemma 3's SigLIP vision tower and its projector into the text model's width (0 without one)."""
    if not isinstance(vision, dict):
        return 0
    width, mlp, depth = _number(vision, "hidden_size"), _number(vision, "intermediate_size"), _number(vision, "num_hidden_layers")
    patch, image = _number(vision, "patch_size"), _number(vision, "image_size")
    patches = 3 * patch * patch * width + width + (image // patch) ** 2 * width
    layer = 4 * (width * width + width) + 2 * width * mlp + mlp + width + 4 * width  # attention, MLP, two layer norms
    projector = width * text_hidden + width
    return patches + depth * layer + 2 * width + projector


def _mla(config: dict[str, Any], hidden: int, heads: int) -> tuple[int, Attention, int]:
    """DeepSeek's multi-head latent attention: low-rank queries, a compressed key-value latent."""
    kv_rank = _number(config, "kv_lora_rank")
    rope, nope, value = _number(config, "qk_rope_head_dim"), _number(config, "qk_nope_head_dim"), _number(config, "v_head_dim")
    if config.get("q_lora_rank") is None:  # DeepSeek-V2-Lite projects queries directly
        queries = hidden * heads * (nope + rope)
    else:
        q_rank = _number(config, "q_lora_rank")
        queries = hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    params = queries + hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + value) + heads * value * hidden
    return params, Attention("mla", kv_lora_rank=kv_rank, qk_rope_head_dim=rope), nope + rope


def _window(config: dict[str, Any], kind: str, layers: int) -> Attention:
    """Sliding-window layers: Gemma 2 and gpt-oss alternate, Gemma 3 keeps one global layer in six."""
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if isinstance(types, list) and window:
        sliding = sum(1 for item in types if item == "sliding_attention")
    elif kind in ("gemma2", "gpt_oss") and window:
        sliding = layers // 2 + (layers % 2 if kind == "gpt_oss" else 0)
    elif kind == "gemma3" and window:
        pattern = _number(config, "sliding_window_pattern", 6)
        sliding = layers - layers // pattern
    else:
        return Attention()
    return Attention("sliding", window=_number(config, "sliding_window"), sliding_layers=sliding) if sliding else Attention()


def _mlp(config: dict[str, Any], kind: str, hidden: int, layers: int) -> tuple[int, int, Experts | None, int]:
    """All layers' MLP parameters, those one token uses, the experts block and the dense width."""
    if kind in ("mixtral", "qwen3_moe", "gpt_oss"):
        count_ = _number(config, "num_local_experts" if kind in ("mixtral", "gpt_oss") else "num_experts")
        active = _number(config, "num_experts_per_tok", 2 if kind == "mixtral" else None)
        width = _number(config, "moe_intermediate_size" if kind == "qwen3_moe" else "intermediate_size")
        expert = 3 * hidden * width + (2 * width + hidden if kind == "gpt_oss" else 0)  # gpt-oss experts have biases
        router = hidden * count_ + (count_ if kind == "gpt_oss" else 0)
        experts = Experts(count_, active, width)
        dense = _number(config, "intermediate_size", width)
        return layers * (count_ * expert + router), layers * (active * expert + router), experts, dense
    dense = _number(config, "intermediate_size")
    if not kind.startswith("deepseek"):
        return layers * 3 * hidden * dense, layers * 3 * hidden * dense, None, dense
    routed, active = _number(config, "n_routed_experts"), _number(config, "num_experts_per_tok")
    width, shared = _number(config, "moe_intermediate_size"), config.get("n_shared_experts") or 0
    first_dense = config.get("first_k_dense_replace") or 0
    moe_layers = layers - first_dense
    expert = 3 * hidden * width
    router = hidden * routed + (routed if kind == "deepseek_v3" else 0)  # V3 adds a score-correction bias
    total = first_dense * 3 * hidden * dense + moe_layers * ((routed + shared) * expert + router)
    used = first_dense * 3 * hidden * dense + moe_layers * ((active + shared) * expert + router)
    return total, used, Experts(routed, active, width, shared, first_dense), dense


def _release(config: dict[str, Any]) -> str:
    """The checkpoint's own storage: its quantization method, else 16 bits."""
    quantization = config.get("quantization_config")
    if isinstance(quantization, dict):
        method = str(quantization.get("quant_method", "")).lower()
        return {"fp8": "fp8", "mxfp4": "mxfp4", "awq": "awq", "gptq": "gptq", "bitsandbytes": "nf4"}.get(method, "bf16")
    return "fp16" if config.get("torch_dtype") == "float16" else "bf16"


def model_from_config(config: dict[str, Any], model_id: str, name: str, source: str) -> Model:
    """A catalog Model drafted from a config.json (size label from the parameters, no licence: a config.json has none)."""
    counted = count(config)
    billions = counted.params / 1e9
    return Model(
        id=model_id,
        name=name,
        family=str(config.get("model_type")),
        size_label=f"{round(billions)}B",
        params_b=billions + counted.vision / 1e9,
        active_params_b=counted.active / 1e9 if counted.active else None,
        native_context=counted.context,
        arch=counted.arch,
        license=None,
        source=source,
        release=counted.release,
        vision_params_b=counted.vision / 1e9,
    )
