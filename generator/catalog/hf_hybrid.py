"""The hybrid architectures of a Hugging Face config.json: layers of linear attention or Mamba-2 beside layers of
full attention, each counted as transformers creates its tensors and each state layer's state as vLLM sizes it.

Qwen3-Next and Qwen3.5 (Gated DeltaNet, transformers' models/qwen3_next and models/qwen3_5(_moe)) and Nemotron-H
(Mamba-2, models/nemotron_h). The state of one layer per sequence is vLLM's MambaStateShapeCalculator:
Gated DeltaNet keeps a convolution state of (kernel - 1) x (2 x key heads x key dim + value heads x value dim)
and a recurrent state of value heads x value dim x key dim; Mamba-2 a convolution state of (kernel - 1) x
(heads x head dim + 2 x groups x state size) and a recurrent state of heads x head dim x state size
(https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/mamba/mamba_utils.py#L186-L293).
Checked against every parameter transformers 5.25.0 creates for the published configs in tests/test_hf_hybrid.py.
"""

from __future__ import annotations

from typing import Any

from gpumem.catalog.config_fields import Fields, layer_types
from gpumem.catalog.hf_mla import mla
from gpumem.catalog.validate import Invalid
from gpumem.records.catalog import Attention, Experts, State

QWEN_HYBRIDS = ("qwen3_next", "qwen3_5", "qwen3_5_moe")
NEMOTRON_HYBRIDS = ("nemotron_h",)
# Qwen3.5's recurrent state dtype (mamba_ssm_dtype), which vLLM 0.33.0 takes for its state cache
# (Qwen3_5ForConditionalGenerationConfig, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/config.py#L953-L977).
STATE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}
# Nemotron-H's recurrent state dtype: the config's mamba_ssm_cache_dtype, float32 where it names none
# (NemotronHForCausalLMConfig, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/config.py#L812-L839).
NEMOTRON_STATE_DTYPE = "float32"


class Layers:
    """A hybrid's parameters as they are counted: all of them, those one token uses, and its architecture's parts."""

    def __init__(self) -> None:
        self.params = 0
        self.active = 0
        self.blocks_per_layer = 2  # Architecture.blocks_per_layer: 1 where each layer is one mixer (Nemotron-H)

    def add(self, params: int, active: int | None = None) -> None:
        self.params += params
        self.active += params if active is None else active


def qwen_layer_kinds(f: Fields, layers: int) -> list[str]:
    """Which layers are Gated DeltaNet ("linear_attention") and which full attention: the config's layer_types,
    else one full-attention layer in every full_attention_interval (Qwen3NextConfig's default pattern)."""
    kinds = layer_types(f.config, layers, ("linear_attention", "full_attention"))
    if kinds is not None:
        return kinds
    interval = f.count("full_attention_interval", 4)
    return ["full_attention" if (index + 1) % interval == 0 else "linear_attention" for index in range(layers)]


def gated_deltanet(f: Fields, hidden: int) -> tuple[int, int, int]:
    """One Gated DeltaNet layer's parameters, and its convolution and recurrent state per sequence (elements)."""
    key_heads, value_heads = f.count("linear_num_key_heads"), f.count("linear_num_value_heads")
    key_dim, value_dim = f.count("linear_key_head_dim"), f.count("linear_value_head_dim")
    kernel = f.count("linear_conv_kernel_dim", 4)
    if value_heads % key_heads:
        raise Invalid(f"linear_num_key_heads: {key_heads:,} does not divide linear_num_value_heads ({value_heads:,})")
    keys, values = key_heads * key_dim, value_heads * value_dim
    conv = 2 * keys + values
    projections = hidden * (2 * keys + 2 * values) + hidden * 2 * value_heads  # q, k, v and the gate z; b and a
    params = projections + conv * kernel + 2 * value_heads + value_dim + values * hidden  # conv, dt_bias and A_log, norm, out
    return params, (kernel - 1) * conv, value_heads * value_dim * key_dim


# What each counting here returns: its layers' parameters, its attention, its state, its experts and head size.
Counted = tuple[Layers, Attention, "State | None", "Experts | None", int]


def count_qwen(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """Qwen3-Next and Qwen3.5: gated full attention (queries with an output gate, q and k norms) in one layer of
    four, Gated DeltaNet in the others, an MoE with a gated shared expert (or a dense MLP)."""
    head_dim = f.count("head_dim", hidden // heads)
    gate = 2 if kind == "qwen3_next" or f.get("attn_output_gate", True) else 1
    attention = hidden * heads * head_dim * gate + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden + 2 * head_dim
    linear, conv, recurrent = gated_deltanet(f, hidden)
    kinds = qwen_layer_kinds(f, layers)
    state_layers = kinds.count("linear_attention")
    if not state_layers:
        raise Invalid("layer_types: no linear_attention layer; a model of full attention alone has another model_type")
    counted = Layers()
    for item in kinds:
        counted.add((attention if item == "full_attention" else linear) + 2 * hidden)
    experts = None
    # Qwen3.5's MoE configs give no intermediate_size: every layer is MoE there, and the width counts for none
    dense = (
        f.count("intermediate_size", 1) if kind == "qwen3_5_moe" and f.get("intermediate_size") is None else f.count("intermediate_size")
    )
    if kind == "qwen3_5":
        counted.add(layers * 3 * hidden * dense)
    else:
        count, active = f.count("num_experts"), f.count("num_experts_per_tok")
        if active > count:
            raise Invalid(f"num_experts_per_tok: {active:,} is more than the {count:,} experts")
        width, shared = f.count("moe_intermediate_size"), f.count("shared_expert_intermediate_size")
        expert, fixed = 3 * hidden * width, hidden * count + 3 * hidden * shared + hidden  # router, shared expert and its gate
        only = f.get("mlp_only_layers") or []
        if not isinstance(only, list):
            raise Invalid("mlp_only_layers: expected a list of layer indices")
        step = f.count("decoder_sparse_step", 1)
        moe = [index for index in range(layers) if index not in only and (index + 1) % step == 0]
        for _ in moe:
            counted.add(count * expert + fixed, active * expert + fixed)
        counted.add((layers - len(moe)) * 3 * hidden * dense)
        experts = Experts(count, active, width, 1 if shared else 0, layers - len(moe))
    ssm = f.get("mamba_ssm_dtype")
    state = State("gated-deltanet", state_layers, conv, recurrent, STATE_DTYPES.get(ssm, 0) if isinstance(ssm, str) else 0)
    return counted, Attention(), state, experts, head_dim


def nemotron_pattern(f: Fields, layers: int) -> str:
    """Nemotron-H's layer pattern: M a Mamba-2 layer, * attention, - an MLP, E an MoE, one character a layer."""
    pattern = f.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or set(pattern) - set("M*-E"):
        raise Invalid("hybrid_override_pattern: expected a string of M, *, - and E, one per layer")
    if len(pattern) != layers:
        raise Invalid(f"hybrid_override_pattern: {len(pattern):,} layers for num_hidden_layers ({layers:,}): expected one per layer")
    if "M" not in pattern or "*" not in pattern:
        raise Invalid("hybrid_override_pattern: expected both Mamba-2 (M) and attention (*) layers")
    return pattern


def count_nemotron(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """Nemotron-H: every layer one block (a norm and one mixer): Mamba-2, attention, a squared-ReLU MLP or an
    MoE of squared-ReLU experts with a shared expert; attention layers cache keys and values."""
    head_dim = f.count("head_dim", hidden // heads)
    pattern = nemotron_pattern(f, layers)
    mamba_heads, mamba_dim = f.count("mamba_num_heads"), f.count("mamba_head_dim")
    groups, state_size, kernel = f.count("n_groups"), f.count("ssm_state_size"), f.count("conv_kernel", 4)
    inner = mamba_heads * mamba_dim
    conv = inner + 2 * groups * state_size
    conv_bias = conv if f.get("use_conv_bias", True) else 0
    mamba = hidden * (inner + conv + mamba_heads) + conv * kernel + conv_bias + 3 * mamba_heads + inner + inner * hidden
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    counted = Layers()
    counted.blocks_per_layer = 1  # each layer one norm and one mixer
    experts = None
    if "E" in pattern:
        count, active = f.count("n_routed_experts"), f.count("num_experts_per_tok")
        if active > count:
            raise Invalid(f"num_experts_per_tok: {active:,} is more than the {count:,} experts")
        width, shared = f.count("moe_intermediate_size"), f.count("moe_shared_expert_intermediate_size")
        latent = f.count("moe_latent_size") if f.get("moe_latent_size") is not None else hidden  # experts in a latent width
        expert, fixed = 2 * latent * width, hidden * count + 2 * hidden * shared + (2 * hidden * latent if latent != hidden else 0)
        # the layers without routed experts; ungated experts (an up and a down projection) in the latent width
        experts = Experts(count, active, width, 1, layers - pattern.count("E"), 2, latent if latent != hidden else 0)
    for item in pattern:
        if item == "E":
            counted.add(count * expert + fixed + hidden, active * expert + fixed + hidden)
        else:
            mixer = {"M": mamba, "*": attention, "-": 2 * hidden * f.count("intermediate_size")}[item]
            counted.add(mixer + hidden)
    ssm = f.get("mamba_ssm_cache_dtype", NEMOTRON_STATE_DTYPE)  # as Qwen's mamba_ssm_dtype: another name is the model's
    recurrent, dtype = mamba_heads * mamba_dim * state_size, STATE_DTYPES.get(ssm, 0) if isinstance(ssm, str) else 0
    mlp_only = pattern.count("-") + pattern.count("E")  # blocks with neither attention nor a state
    state = State("mamba2", pattern.count("M"), (kernel - 1) * conv, recurrent, dtype, mlp_only)
    return counted, Attention(), state, experts, head_dim


def qwen_vision(vision: Any, text_hidden: int, limits: Any) -> int:
    """Qwen3.5's vision tower (transformers' Qwen3_5MoeVisionModel): a 3-D patch embedding, learned positions,
    pre-norm blocks of attention and a GELU MLP, and a merger of 2 x 2 patches into the text model's width
    (0 without one)."""
    if not isinstance(vision, dict):
        return 0
    f = Fields(vision, limits, "vision_config.")
    width, mlp, depth = f.count("hidden_size"), f.count("intermediate_size"), f.count("depth")
    patch, frames, channels = f.count("patch_size"), f.count("temporal_patch_size", 2), f.count("in_channels", 3)
    merged = width * f.count("spatial_merge_size", 2) ** 2
    out = f.count("out_hidden_size", text_hidden)
    embedding = channels * frames * patch * patch * width + width + f.count("num_position_embeddings") * width
    block = 4 * width + (3 * width * width + 3 * width) + (width * width + width) + (width * mlp + mlp) + (mlp * width + width)
    merger = 2 * width + merged * merged + merged + merged * out + out
    return embedding + depth * block + merger


LLAMA4 = ("llama4",)
NOPE_INTERVAL = 4  # Llama4TextConfig's no_rope_layer_interval: every fourth layer is global and uses no RoPE


def count_llama4(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """Llama 4: chunked local attention (RoPE layers attend within their chunk of attention_chunk_size tokens)
    beside global layers without RoPE (no_rope_layers, 0 for a global layer, else every fourth); an MoE of
    routed experts with a shared expert in every interleave_moe_layer_step-th layer, a dense MLP of
    intermediate_size_mlp in the others (transformers' Llama4TextConfig and Llama4TextDecoderLayer)."""
    head_dim = f.count("head_dim", hidden // heads)
    rope = f.get("no_rope_layers") or [int((index + 1) % NOPE_INTERVAL != 0) for index in range(layers)]
    if not isinstance(rope, list) or len(rope) != layers or any(item not in (0, 1) for item in rope):
        raise Invalid(f"no_rope_layers: expected a list of 0 and 1, one per layer ({layers:,})")
    chunk = f.count("attention_chunk_size")
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * hidden  # and the two norms
    count, active = f.count("num_local_experts"), f.count("num_experts_per_tok", 1)
    if active > count:
        raise Invalid(f"num_experts_per_tok: {active:,} is more than the {count:,} experts")
    width, step = f.count("intermediate_size"), f.count("interleave_moe_layer_step", 1)
    dense = f.count("intermediate_size_mlp", width)
    expert, fixed = 3 * hidden * width, hidden * count + 3 * hidden * width  # the router and the shared expert
    moe = set(range(step - 1, layers, step))
    counted = Layers()
    for index in range(layers):
        counted.add(attention)
        if index in moe:
            counted.add(count * expert + fixed, active * expert + fixed)
        else:
            counted.add(3 * hidden * dense)
    local = sum(rope)
    chunked = Attention("chunked", window=chunk, sliding_layers=local) if local else Attention()
    return counted, chunked, None, Experts(count, active, width, 1, layers - len(moe)), head_dim


def llama4_vision(vision: Any, text_hidden: int, limits: Any) -> int:
    """Llama 4's vision tower (transformers' Llama4VisionModel and its projector): an unfolded patch embedding,
    a class token and learned positions, pre-norm encoder layers with biased attention and a GELU MLP, a
    pixel-shuffle adapter and the projection into the text model's width (0 without one)."""
    if not isinstance(vision, dict):
        return 0
    f = Fields(vision, limits, "vision_config.")
    width, mlp, depth = f.count("hidden_size"), f.count("intermediate_size"), f.count("num_hidden_layers")
    patch, image, channels = f.count("patch_size"), f.count("image_size"), f.count("num_channels", 3)
    project_in, project_out = f.count("projector_input_dim"), f.count("projector_output_dim")
    output = f.count("vision_output_dim")
    if patch > image:
        raise Invalid(f"vision_config.patch_size: {patch:,} is more than vision_config.image_size ({image:,})")
    patches = (image // patch) ** 2 + 1
    embedding = channels * patch * patch * width + width + patches * width + 4 * width
    layer = 4 * (width * width + width) + (width * mlp + mlp) + (mlp * width + width) + 4 * width
    adapter = mlp * project_in + project_out * project_out
    return embedding + depth * layer + adapter + output * text_hidden


KDA_RECURRENT_BYTES = 4  # vLLM keeps KDA's recurrent state in FP32 unless told otherwise (kda_state_dtype, "auto")


def count_kimi(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """Kimi Linear: Kimi Delta Attention in the layers linear_attn_config.kda_layers names (counted from 1), MLA
    without RoPE in the others, an MoE with a shared expert after first_k_dense_replace dense layers (the Hub's
    modeling_kimi.py: KimiDeltaAttention's q, k and v projections, their short convolutions, A_log, dt_bias, the
    low-rank decay and output gates, beta, the gated norm and o_proj). Its state per sequence is vLLM's
    kda_state_shape: a convolution of (kernel - 1) x 3 x heads x head dim, a recurrent heads x head dim x head dim
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/mamba/mamba_utils.py#L133-L149
    and #L296-L319)."""
    linear = f.get("linear_attn_config")
    if not isinstance(linear, dict):
        raise Invalid("linear_attn_config: expected an object (kda_layers, num_heads, head_dim)")
    g = Fields(linear, f.limits, "linear_attn_config.")
    kda = g.get("kda_layers")
    if not isinstance(kda, list) or any(type(item) is not int or not 1 <= item <= layers for item in kda) or len(set(kda)) != len(kda):
        raise Invalid(f"linear_attn_config.kda_layers: expected distinct layer numbers from 1 to {layers:,}")
    if not kda or len(kda) == layers:
        raise Invalid("linear_attn_config.kda_layers: expected both KDA layers and full-attention layers")
    state_heads, dim, kernel = g.count("num_heads"), g.count("head_dim"), g.count("short_conv_kernel_size", 4)
    width = state_heads * dim
    delta = 3 * hidden * width + 3 * width * kernel + state_heads + 2 * (hidden * dim + dim * width) + width
    delta += hidden * state_heads + dim + width * hidden  # beta, the gated norm, o_proj
    attention, mla_attention, head_dim = mla(f, kind, hidden, heads)
    counted = Layers()
    counted.add(len(kda) * delta + (layers - len(kda)) * attention + layers * 2 * hidden)
    count, active = f.count("num_experts"), f.count("num_experts_per_token")
    if active > count:
        raise Invalid(f"num_experts_per_token: {active:,} is more than the {count:,} experts")
    expert_width, dense = f.count("moe_intermediate_size"), min(f.optional("first_k_dense_replace"), layers)
    shared = f.optional("num_shared_experts")
    expert, fixed = 3 * hidden * expert_width, hidden * count + count + 3 * hidden * expert_width * shared  # router, its bias
    counted.add(dense * 3 * hidden * f.count("intermediate_size"))
    for _ in range(layers - dense):
        counted.add(count * expert + fixed, active * expert + fixed)
    state = State("kda", len(kda), (kernel - 1) * 3 * width, state_heads * dim * dim, KDA_RECURRENT_BYTES)
    return counted, mla_attention, state, Experts(count, active, expert_width, 1 if shared else 0, dense), head_dim


def count_minimax_m1(f: Fields, kind: str, hidden: int, layers: int, heads: int, kv_heads: int) -> Counted:
    """MiniMax-M1 (and MiniMax-Text-01): lightning attention where attn_type_list is 0, softmax attention with
    grouped keys and values where it is 1, an MoE of num_local_experts in every layer (MiniMax's
    modeling_minimax_m1.py: a fused qkv projection, an output gate, out_proj and a norm; the decay slopes are no
    weights). Its state is vLLM's linear_attention_state_shape: heads x head dim x head dim per layer, no
    convolution, in the model's dtype (mamba_utils.py#L52-L61 and #L154-L161 at v0.33.0)."""
    types = f.get("attn_type_list")
    if not isinstance(types, list) or any(item not in (0, 1) or type(item) is not int for item in types) or len(types) != layers:
        raise Invalid(f"attn_type_list: expected a list of 0 (lightning) and 1 (softmax attention), one per layer ({layers:,})")
    if 0 not in types or 1 not in types:
        raise Invalid("attn_type_list: expected both lightning (0) and softmax attention (1) layers")
    head_dim = f.count("head_dim", hidden // heads)
    width = heads * head_dim
    lightning = 3 * hidden * width + width * hidden + hidden * width + width  # qkv, output gate, out_proj, norm
    softmax = 2 * hidden * width + 2 * hidden * kv_heads * head_dim
    count, active = f.count("num_local_experts"), f.count("num_experts_per_tok")
    if active > count:
        raise Invalid(f"num_experts_per_tok: {active:,} is more than the {count:,} experts")
    expert_width = f.count("intermediate_size")
    expert, fixed = 3 * hidden * expert_width, hidden * count
    counted = Layers()
    for item in types:
        counted.add((softmax if item else lightning) + 2 * hidden)
        counted.add(count * expert + fixed, active * expert + fixed)
    state = State("lightning", types.count(0), 0, heads * head_dim * head_dim)
    return counted, Attention(), state, Experts(count, active, expert_width), head_dim


# The model types counted here, and their vision towers (hf_config counts the others).
COUNTERS = {
    **dict.fromkeys(QWEN_HYBRIDS, count_qwen),
    **dict.fromkeys(NEMOTRON_HYBRIDS, count_nemotron),
    **dict.fromkeys(LLAMA4, count_llama4),
    "kimi_linear": count_kimi,
    "minimax_m1": count_minimax_m1,
}
TOWERS = {"qwen3_5": qwen_vision, "qwen3_5_moe": qwen_vision, "llama4": llama4_vision}
