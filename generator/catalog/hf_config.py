"""A Hugging Face config.json read as a catalog model: its architecture and its parameters, counted.

Pure: takes the parsed JSON (a dict) and returns a Model or raises Invalid naming the field.
The count follows the tensors transformers creates for each architecture the catalog uses
(checked against every catalog model's exact parameters in tests/test_hf_config.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpumem.catalog import hf_gemma4, hf_hybrid
from gpumem.catalog.config_fields import Fields, layer_types, shown, switch
from gpumem.catalog.hf_mla import mla
from gpumem.catalog.validate import Invalid
from gpumem.engines import gguf
from gpumem.records.catalog import NON_EXPERTS, Architecture, Attention, Experts, Model

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
    "deepseek_v32",
    "kimi_k2",
    "glm_moe_dsa",
    "gpt_oss",
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_moe",
    "nemotron_h",
    "llama4",
    "minimax_m2",
    "kimi_linear",
    "minimax_m1",
    "gemma4",
    "glm4_moe",
)
# The model types counted layer by layer (hf_hybrid, hf_gemma4), and their own vision towers.
COUNTERS = {**hf_hybrid.COUNTERS, **dict.fromkeys(hf_gemma4.GEMMA4, hf_gemma4.count_gemma4)}
TOWERS = {**hf_hybrid.TOWERS, **dict.fromkeys(hf_gemma4.GEMMA4, hf_gemma4.gemma4_vision)}
MLA = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm_moe_dsa")
QKV_BIAS = ("qwen2",)
QK_NORM = ("qwen3", "qwen3_moe", "gemma3")
# GLM-4.5/4.6/4.7: grouped-query attention with DeepSeek-V3's MoE fields (n_routed_experts, first_k_dense_replace...).
# vLLM 0.33.0's glm4_moe.py: q, k and v biases when attention_bias (L346, L262-L269), q and k norms of head_dim when
# use_qk_norm (L350, L296-L298), the rotary fraction only in the rope (L280); each MoE layer's gate, its float32
# score-correction bias, shared experts of moe_intermediate_size x n_shared_experts (L141-L176); layers from
# first_k_dense_replace on are MoE, the others dense of intermediate_size (L353-L369).
DEEPSEEK_MOE = (*MLA, "glm4_moe")
FOUR_NORMS = ("gemma2", "gemma3")


@dataclass(frozen=True)
class Counted:
    """A config's model: total and active parameters, and the architecture the engines use."""

    params: int
    active: int | None
    arch: Architecture
    context: int
    release: str
    vision: int = 0  # parameters of a vision tower, counted apart from `params`
    mtp: int = 0  # parameters of multi-token prediction layers the checkpoint holds, loaded only to speculate


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs (Gemma 3) keep the language model under text_config."""
    inner = config.get("text_config")
    if isinstance(inner, dict):
        outer = {key: config.get(key) for key in ("model_type", "quantization_config", "vision_config")}
        return {**inner, **outer}
    return config


def count(config: dict[str, Any], limits: Mapping[str, float]) -> Counted:
    """Parameters and architecture of a config of one of ARCHITECTURES, within rules.yaml's calculator `limits`."""
    if not isinstance(config, dict):
        raise Invalid("expected a JSON object (a config.json)")
    kind = config.get("model_type")
    if kind not in ARCHITECTURES:
        listed = ", ".join(ARCHITECTURES)
        raise Invalid(f"model_type: {shown(kind)} is not an architecture gpumem counts (expected one of {listed})")
    config = text_config(config)
    f = Fields(config, limits)
    hidden, layers, vocab = f.count("hidden_size"), f.count("num_hidden_layers"), f.count("vocab_size")
    heads = f.count("num_attention_heads")
    kv_heads = f.count("num_key_value_heads", heads)
    if heads % kv_heads:
        raise Invalid(f"num_key_value_heads: {kv_heads:,} does not divide num_attention_heads ({heads:,})")
    tied = switch(config, "tie_word_embeddings", kind in FOUR_NORMS)
    embeddings = vocab * hidden * (1 if tied else 2)
    state, mtp, blocks = None, 0, 2
    if kind in COUNTERS:
        layered, attention, state, experts, head_dim = COUNTERS[kind](f, kind, hidden, layers, heads, kv_heads)
        blocks = layered.blocks_per_layer
        params = embeddings + layered.params + hidden
        active = embeddings + layered.active + hidden if experts else None
        intermediate = f.count("intermediate_size", experts.intermediate if experts else None)
    else:
        if kind in MLA:
            attention_params, attention, head_dim = mla(f, kind, hidden, heads)
        else:
            head_dim = f.count("head_dim", hidden // heads)
            attention_params = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
            if kind in QKV_BIAS or (kind == "glm4_moe" and switch(config, "attention_bias", False)):
                attention_params += heads * head_dim + 2 * kv_heads * head_dim
            if kind == "gpt_oss":
                attention_params += heads * head_dim + 2 * kv_heads * head_dim + hidden + heads  # biases and sinks
            if kind in QK_NORM or (kind == "glm4_moe" and switch(config, "use_qk_norm", False)):
                attention_params += 2 * head_dim
            norm = ""
            if kind == "minimax_m2":  # its q and k norms span every head (qk_norm_type per_layer), all-reduced under TP
                attention_params += (heads + kv_heads) * head_dim
                norm = "per_layer"
            attention = _window(f, kind, layers)
            attention = dataclasses.replace(attention, fused_qkv=kind in gguf.FUSED_QKV, qk_norm=norm)
        norms = (4 if kind in FOUR_NORMS else 2) * hidden
        mlp, active_mlp, experts, intermediate = _mlp(f, kind, hidden, layers)
        params = embeddings + layers * (attention_params + norms) + mlp + hidden
        active = embeddings + layers * (attention_params + norms) + active_mlp + hidden if experts else None
        if kind in DEEPSEEK_MOE and experts is not None:
            moe_mlp = mlp - experts.dense_layers * 3 * hidden * intermediate
            mtp = _deepseek_mtp(f, attention_params + norms, experts, moe_mlp, vocab if kind in MLA else 0, hidden)
    arch = Architecture(layers, heads, kv_heads, head_dim, attention, hidden, vocab, tied, intermediate, experts, state, blocks)
    context = f.count("max_position_embeddings", f.count("model_max_length", 4096))  # Kimi Linear gives the second only
    vision = TOWERS.get(kind, _vision)(config.get("vision_config"), hidden, limits)
    _within_params(params + vision, limits)
    return Counted(params, active, arch, context, _release(config), vision, mtp)


def _deepseek_mtp(f: Fields, attention: int, experts: Experts, moe_mlp: int, vocab: int, hidden: int) -> int:
    """DeepSeek's multi-token prediction layers (num_nextn_predict_layers), stored in the checkpoint after the
    model's own: each one MoE decoder layer, its input projection of the embedding and the hidden state (eh_proj,
    2 x hidden to hidden) with their norms, a head norm, and its own copy of the embedding and output head (vocab
    0: none, as GLM-4.6's, whose MTP layer vLLM 0.33.0 gives the model's own embed_tokens and lm_head,
    glm4_moe_mtp.py L274-L278; GLM-4.5's checkpoint still stores both, which llama.cpp made optional for GLM 4.6,
    https://github.com/ggml-org/llama.cpp/pull/16359, and a config cannot tell the two apart, so GLM-4.5's MTP layer
    is counted 2 x vocab x hidden short). vLLM loads them only to speculate (--speculative-config), so they are
    counted apart from the weights."""
    count = f.optional("num_nextn_predict_layers")
    moe_layer = moe_mlp // (f.count("num_hidden_layers") - experts.dense_layers)
    return count * (attention + moe_layer + 2 * hidden * hidden + 3 * hidden + 2 * vocab * hidden)


def _within_params(params: int, limits: Mapping[str, float]) -> None:
    """The count itself within the calculator's largest model: each field may be in bounds and their product not."""
    limit = int(limits["max_params_b"])
    if params > limit * 1e9:
        raise Invalid(f"parameters: {billions_text(params)} billion counted, expected at most {limit:,} billion")


def billions_text(params: int) -> str:
    """Billions of parameters with one decimal, no ".0" (as the calculator's number format writes them)."""
    return f"{params / 1e9:,.1f}".removesuffix(".0")


def _vision(vision: Any, text_hidden: int, limits: Mapping[str, float]) -> int:
    """Gemma 3's SigLIP vision tower and its projector into the text model's width (0 without one)."""
    if not isinstance(vision, dict):
        return 0
    f = Fields(vision, limits, "vision_config.")
    width, mlp, depth = f.count("hidden_size"), f.count("intermediate_size"), f.count("num_hidden_layers")
    patch, image = f.count("patch_size"), f.count("image_size")
    if patch > image:
        raise Invalid(f"vision_config.patch_size: {patch:,} is more than vision_config.image_size ({image:,})")
    patches = 3 * patch * patch * width + width + (image // patch) ** 2 * width
    layer = 4 * (width * width + width) + 2 * width * mlp + mlp + width + 4 * width  # attention, MLP, two layer norms
    projector = width * text_hidden + width
    return patches + depth * layer + 2 * width + projector


def _window(f: Fields, kind: str, layers: int) -> Attention:
    """Sliding-window layers: Gemma 2 and gpt-oss alternate, Gemma 3 keeps one global layer in six."""
    window = f.get("sliding_window")
    types = layer_types(f.config, layers)
    if types is not None and window:
        sliding = sum(1 for item in types if item == "sliding_attention")
    elif kind in ("gemma2", "gpt_oss") and window:
        sliding = layers // 2 + (layers % 2 if kind == "gpt_oss" else 0)
    elif kind == "gemma3" and window:
        pattern = f.count("sliding_window_pattern", 6)
        sliding = layers - layers // pattern
    else:
        return Attention()
    return Attention("sliding", window=f.count("sliding_window"), sliding_layers=sliding) if sliding else Attention()


def _mlp(f: Fields, kind: str, hidden: int, layers: int) -> tuple[int, int, Experts | None, int]:
    """All layers' MLP parameters, those one token uses, the experts block and the dense width."""
    if kind in ("mixtral", "qwen3_moe", "gpt_oss", "minimax_m2"):
        count_ = f.count("num_experts" if kind == "qwen3_moe" else "num_local_experts")
        active = _active(f, count_, 2 if kind == "mixtral" else None)
        width = f.count("moe_intermediate_size" if kind == "qwen3_moe" else "intermediate_size")
        expert = 3 * hidden * width + (2 * width + hidden if kind == "gpt_oss" else 0)  # gpt-oss experts have biases
        router = hidden * count_ + (count_ if kind in ("gpt_oss", "minimax_m2") else 0)  # a bias (MiniMax: score correction)
        experts = Experts(count_, active, width)
        dense = f.count("intermediate_size", width)
        return layers * (count_ * expert + router), layers * (active * expert + router), experts, dense
    dense = f.count("intermediate_size")
    if kind not in DEEPSEEK_MOE:
        return layers * 3 * hidden * dense, layers * 3 * hidden * dense, None, dense
    routed = f.count("n_routed_experts")
    active = _active(f, routed, None)
    width, shared = f.count("moe_intermediate_size"), f.optional("n_shared_experts")
    first_dense = f.optional("first_k_dense_replace")
    if first_dense >= layers:
        raise Invalid(f"first_k_dense_replace: {first_dense:,} leaves no MoE layer of num_hidden_layers ({layers:,})")
    moe_layers = layers - first_dense
    expert = 3 * hidden * width
    router = hidden * routed + (routed if kind != "deepseek_v2" else 0)  # V3 and its successors add a score-correction bias
    total = first_dense * 3 * hidden * dense + moe_layers * ((routed + shared) * expert + router)
    used = first_dense * 3 * hidden * dense + moe_layers * ((active + shared) * expert + router)
    return total, used, Experts(routed, active, width, shared, first_dense), dense


def _active(f: Fields, experts: int, default: int | None) -> int:
    """Experts each token uses: at most the experts there are."""
    active = f.count("num_experts_per_tok", default)
    if active > experts:
        raise Invalid(f"num_experts_per_tok: {active:,} is more than the {experts:,} experts")
    return active


def _release(config: dict[str, Any]) -> str:
    """The checkpoint's own storage: its quantization method, else 16 bits."""
    quantization = config.get("quantization_config")
    if isinstance(quantization, dict):
        method = str(quantization.get("quant_method", "")).lower()
        if method == "modelopt":  # NVIDIA's ModelOpt names its algorithm apart
            return {"NVFP4": "nvfp4", "FP8": "fp8"}.get(str(quantization.get("quant_algo")), "bf16")
        return {"fp8": "fp8", "mxfp4": "mxfp4", "awq": "awq", "gptq": "gptq", "bitsandbytes": "nf4"}.get(method, "bf16")
    return "fp16" if config.get("torch_dtype") == "float16" else "bf16"


def kept_parts(config: dict[str, Any]) -> tuple[str, ...]:
    """What a quantized release keeps at 16 bits beyond its format's own (records.catalog.KEPT_PARTS), read from its
    quantization config's list of modules left unquantized (ModelOpt and compressed-tensors: `ignore`, ModelOpt's
    own file: `exclude_modules`; FP8: `modules_to_not_convert`): non_experts when it names the shared experts and the
    attention layers (full or linear: NVIDIA's NVFP4 Qwen3.5 quantizes the routed experts alone), else attention when
    it names attention layers, router when it names MoE gates."""
    quantization = config.get("quantization_config")
    if not isinstance(quantization, dict):
        return ()
    names = quantization.get("ignore") or quantization.get("exclude_modules") or quantization.get("modules_to_not_convert") or []
    if not isinstance(names, list):
        return ()
    text = [str(name) for name in names]
    if any("shared_expert" in name for name in text) and any("self_attn" in name or "linear_attn" in name for name in text):
        return (NON_EXPERTS,)
    found = []
    if any("self_attn" in name for name in text):
        found.append("attention")
    if any(name.endswith((".gate", ".router")) for name in text):
        found.append("router")
    return tuple(found)


def model_from_config(config: dict[str, Any], limits: Mapping[str, float], model_id: str, name: str, source: str) -> Model:
    """A catalog Model drafted from a config.json (size label from the parameters, no licence: a config.json has none)."""
    counted = count(config, limits)
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
        mtp_params_b=counted.mtp / 1e9,
    )
