"""Gemma 4 (model_type gemma4, transformers' models/gemma4): sliding-window layers and full-attention layers with
their own KV heads and head size, an optional MoE beside every layer's dense MLP, and its vision tower.

Counted as transformers 5.25.0 creates the tensors (Gemma4TextAttention, Gemma4TextDecoderLayer, Gemma4TextRouter,
Gemma4TextExperts, Gemma4VisionModel, Gemma4MultimodalEmbedder) and checked against every parameter it creates for
the published configs in tests/test_gemma4.py. A full-attention layer has global_head_dim-wide heads (default 512)
and, where attention_k_eq_v is set, num_global_key_value_heads KV heads (else num_key_value_heads) and no v_proj: its
values are its keys' projection (Gemma4TextConfig.__post_init__'s per_layer_config, which vLLM 0.33.0 reads too). The
record keeps global_head_dim for every Gemma 4 and global_kv_heads only where attention_k_eq_v is set, so that a GGUF
leaves those layers' attn_v out (engines/gguf.py).
Per-layer embeddings (hidden_size_per_layer_input, which transformers defaults to 256), shared KV layers
(num_kv_shared_layers) and attention biases, which Gemma 4 E2B and E4B and no published larger model use, are refused.
"""

from __future__ import annotations

from typing import Any

from gpumem.catalog.config_fields import Fields, layer_types, shown, switch
from gpumem.catalog.hf_hybrid import Counted, Layers
from gpumem.catalog.validate import Invalid
from gpumem.records.catalog import Attention, Experts

GEMMA4 = ("gemma4",)
HEAD_DIM = 256  # Gemma4TextConfig's default head_dim
GLOBAL_HEAD_DIM = 512  # and global_head_dim
SLIDING_WINDOW = 512  # and sliding_window
PER_LAYER_INPUT = 256  # and hidden_size_per_layer_input
PATTERN = 6  # its default layer_types: five sliding layers, then one full
REFUSED = "gpumem counts Gemma 4 without per-layer embeddings, shared key-value layers or attention biases"


def refuse(f: Fields, name: str, expected: Any, default: Any) -> None:
    """A feature the count leaves out, refused unless the config gives its neutral value (`default` when left out)."""
    value = f.get(name, default)
    if value != expected or isinstance(value, bool) != isinstance(expected, bool):
        raise Invalid(f"{name}: expected {shown(expected)}, got {shown(value)} ({REFUSED})")


def kinds(f: Fields, layers: int) -> list[str]:
    """Each layer's attention: the config's layer_types, else five sliding layers then a full one; the last layer is
    always full (Gemma4TextConfig.__post_init__ forces it)."""
    types = layer_types(f.config, layers) or [
        "full_attention" if (index + 1) % PATTERN == 0 else "sliding_attention" for index in range(layers)
    ]
    return [*types[:-1], "full_attention"]


def count_gemma4(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """Gemma 4's layers (hf_hybrid.Counted): attention with q, k and v norms, four norms around attention and MLP, a
    dense MLP, and with enable_moe_block a router and routed experts beside it with three more norms."""
    refuse(f, "hidden_size_per_layer_input", 0, PER_LAYER_INPUT)
    refuse(f, "num_kv_shared_layers", 0, 0)
    refuse(f, "attention_bias", False, False)
    head_dim, global_dim = f.count("head_dim", HEAD_DIM), f.count("global_head_dim", GLOBAL_HEAD_DIM)
    k_eq_v = switch(f.config, "attention_k_eq_v", False)
    global_kv = f.count("num_global_key_value_heads", kv_heads) if k_eq_v and f.get("num_global_key_value_heads") is not None else kv_heads
    if heads % global_kv:
        raise Invalid(f"num_global_key_value_heads: {global_kv:,} does not divide num_attention_heads ({heads:,})")
    sliding = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * head_dim
    full = 2 * hidden * heads * global_dim + (1 if k_eq_v else 2) * hidden * global_kv * global_dim + 2 * global_dim
    dense = 3 * hidden * f.count("intermediate_size")
    experts = None
    if switch(f.config, "enable_moe_block", False):
        count, active = f.count("num_experts"), f.count("top_k_experts")
        if active > count:
            raise Invalid(f"top_k_experts: {active:,} is more than the {count:,} experts")
        width = f.count("moe_intermediate_size")
        router = hidden * count + hidden + count + 3 * hidden  # proj, scale, per_expert_scale; and the three norms
        experts = Experts(count, active, width)
    types = kinds(f, layers)
    counted = Layers()
    for item in types:
        counted.add((full if item == "full_attention" else sliding) + dense + 4 * hidden)
        if experts:
            counted.add(router + count * 3 * hidden * width, router + active * 3 * hidden * width)
    local = types.count("sliding_attention")
    window = f.count("sliding_window", SLIDING_WINDOW)
    if f.get("use_bidirectional_attention") == "all":  # its window's bounds halved (Gemma4TextConfig.__post_init__)
        window = window // 2 + 1
    # the full layers' head size always (it marks Gemma 4's layout, engines/gguf.gemma4), their KV heads where
    # attention_k_eq_v gives them their own and makes their keys the values (no v_proj, which the GGUF leaves out)
    dims = {"global_head_dim": global_dim, **({"global_kv_heads": global_kv} if k_eq_v else {})}
    attention = Attention("sliding", window=window, sliding_layers=local, **dims) if local else Attention(**dims)
    return counted, attention, None, experts, head_dim


def gemma4_vision(vision: Any, text_hidden: int, limits: Any) -> int:
    """Gemma 4's vision tower (Gemma4VisionModel) and its embedder into the text model (Gemma4MultimodalEmbedder): a
    patch projection without bias, a two-axis table of learned positions, pre- and post-norm layers of attention
    with q and k norms and a gated MLP, all without biases (0 without one)."""
    if not isinstance(vision, dict):
        return 0
    f = Fields(vision, limits, "vision_config.")
    width, mlp, depth = f.count("hidden_size"), f.count("intermediate_size"), f.count("num_hidden_layers")
    patch, positions, head_dim = f.count("patch_size"), f.count("position_embedding_size"), f.count("head_dim")
    if switch(vision, "attention_bias", False):
        raise Invalid(f"vision_config.attention_bias: expected false, got true ({REFUSED})")
    embedding = 3 * patch * patch * width + 2 * positions * width
    layer = 4 * width * width + 2 * head_dim + 3 * width * mlp + 4 * width
    return embedding + depth * layer + width * text_hidden
