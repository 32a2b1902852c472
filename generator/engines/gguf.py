"""A GGUF file's bytes, tensor by tensor, as llama.cpp's quantizer types each one.

`llama-quantize` does not give every weight the bits of its file type: it picks a ggml block type per tensor from
the file type asked (Q4_K_M...), the tensor's role, its layer and its row length (llama_tensor_get_type_impl and
tensor_type_fallback, src/llama-quant.cpp L389-L714 at the pinned commit 0c1e57098). Q4_K_M keeps the output head
in Q6_K and half the layers' value and down projections in Q6_K; Mixtral's eight experts lift its attention to Q8_0
and Q5_K; a row length that is no multiple of 256 falls back to a 32-weight block. So a model's file is the sum over
its tensors, which is what this module adds up. No library makes that choice outside llama.cpp's C++ (gguf-py reads
the types of a file that exists, as catalog/checkpoint.py does for a reader's own), hence the rules are written here,
one for one, for the file types rules.yaml lists (FILE_TYPES).

The tensors are those llama.cpp's converter writes for the architecture (src/models/llama.cpp, qwen2.cpp, phi3.cpp,
deepseek2.cpp, gemma4.cpp...: `tensors`); Gemma 4's full-attention layers take their own head size and KV heads, and
no attn_v where their keys are the values (`full_layer`). The parameters left once the matrices are counted are the norms, biases, sinks and
routers' biases the converter writes in F32, one-dimensional tensors no file type quantizes
(tensor_allows_quantization, L287-L383); in a hybrid they are mostly the state layers' projections (Gated DeltaNet's
attn_qkv and ssm_out, Mamba-2's ssm_in), whose shapes the catalog does not keep: those take the file type's default
type, as llama.cpp's category OTHER does, an approximation of a few per cent on those layers (the value-like rule that
Qwen3.5's attn_qkv also takes is left out).

Pure arithmetic on records, like the other engines, and remembered (functools.cache, emptied with deployment's by
deployment.forget): a build asks for each model's file in each format from every page that shows it.
engines/deployment.weights_bytes calls `file_bytes` for the formats of scope `tensors`, and the calculator mirrors it
(config.js, ggufBytes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpumem.records.catalog import Architecture

# ggml's block types: (weights per block, bytes per block), gguf-py's GGML_QUANT_SIZES
# (https://github.com/ggml-org/llama.cpp/blob/0c1e57098/gguf-py/gguf/constants.py#L5958-L5994, the static_asserts of
# ggml/src/ggml-common.h); tests/test_gguf.py checks them against the gguf package the project installs.
BLOCKS = {
    "F32": (1, 4),
    "F16": (1, 2),
    "Q8_0": (32, 34),
    "Q6_K": (256, 210),
    "Q5_K": (256, 176),
    "Q4_K": (256, 144),
    "Q3_K": (256, 110),
    "Q2_K": (256, 84),
    "Q5_1": (32, 24),
    "Q5_0": (32, 22),
    "Q4_0": (32, 18),
}
# llama_ftype_get_default_type (L881-L924): the type a file type gives a tensor no rule names.
FILE_TYPES = {"Q2_K": "Q2_K", "Q3_K_M": "Q3_K", "Q4_0": "Q4_0", "Q4_K_M": "Q4_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K", "Q8_0": "Q8_0"}
# tensor_type_fallback (L389-L443): the type of a tensor whose rows the chosen block does not divide; F16 if this
# one does not either.
FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
# Tensor roles: llama-quant.cpp's categories (L119-L154), and `float` for what no file type quantizes.
OUTPUT, EMBEDDING, VALUE, KEY, QUERY, ATTN_OUT, GATE, UP, DOWN, OTHER, FLOAT = (
    "output", "token_embd", "attn_v", "attn_k", "attn_q", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "other", "float",
)  # fmt: skip
# Families (models.yaml) and model types (config.json) llama.cpp converts with one query-key-value matrix
# (src/models/phi3.cpp: attn_qkv), which takes attn_v's rule: records.catalog.Attention.fused_qkv.
FUSED_QKV = ("phi3", "phi4")
# State kinds whose models the record does not lay out layer by layer: Nemotron-H's layers are each Mamba-2,
# attention or a (latent, ungated) MoE block. Their file is the embeddings and output head by rule, the rest at the
# file type's default type.
UNLAID = ("mamba2",)
SEVENTY_B_LAYERS = 80  # llama.cpp's LLM_TYPE_70B: 80 layers (llama.cpp's loader with grouped-query attention, qwen2.cpp's)


@dataclass(frozen=True)
class Tensor:
    """A matrix of the file: its role, its block's layer (-1 outside the blocks) and `rows` rows of `row` weights
    (GGUF's ne[0], the length a block type must divide)."""

    role: str
    layer: int
    row: int
    rows: int
    routed: bool = False  # a routed expert's gate, up or down projection (all experts of the layer in one tensor)


def tensors(arch: Architecture) -> list[Tensor]:
    """The matrices llama.cpp's converter writes, in the quantizer's order (by layer): embeddings and output head,
    each attention layer's projections (grouped-query, or MLA's attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b, attn_v_b
    and attn_output, src/models/deepseek2.cpp L106-L122; a hybrid's first, as only their order counts), each layer's
    MLP or experts (routers in F32), Gemma 4's both (`gemma4`: its experts' ffn_gate_up_exps is one tensor, of the
    same bytes as the two listed); for a state kind of UNLAID, the embeddings and output head alone."""
    h = arch.hidden
    found = [Tensor(EMBEDDING, -1, h, arch.vocab)]
    if not arch.tied_embeddings:
        found.append(Tensor(OUTPUT, -1, h, arch.vocab))
    if arch.state and arch.state.kind in UNLAID:
        return found
    e, beside = arch.experts, gemma4(arch)
    for layer in range(arch.layers):
        if layer < arch.attention_layers:
            found += _attention(arch, layer)
        dense = e is None or layer < e.dense_layers
        if dense or beside:
            found += [Tensor(GATE, layer, h, arch.intermediate), Tensor(UP, layer, h, arch.intermediate)]
            found.append(Tensor(DOWN, layer, arch.intermediate, h))
        if dense:
            continue
        width = e.intermediate * e.count
        found += [Tensor(FLOAT, layer, h, e.count), Tensor(GATE, layer, h, width, True), Tensor(UP, layer, h, width, True)]
        found.append(Tensor(DOWN, layer, e.intermediate, h * e.count, True))
        if e.shared:
            width = e.intermediate * e.shared
            found += [Tensor(GATE, layer, h, width), Tensor(UP, layer, h, width), Tensor(DOWN, layer, width, h)]
    return found


def _attention(arch: Architecture, layer: int) -> list[Tensor]:
    h, a, heads = arch.hidden, arch.attention, arch.heads
    if a.kind == "mla":
        nope, rope, rank = arch.head_dim - a.qk_rope_head_dim, a.qk_rope_head_dim, a.kv_lora_rank
        if a.q_lora_rank:
            query = [Tensor(OTHER, layer, h, a.q_lora_rank), Tensor(OTHER, layer, a.q_lora_rank, heads * arch.head_dim)]
        else:
            query = [Tensor(QUERY, layer, h, heads * arch.head_dim)]
        latent = [
            Tensor(OTHER, layer, h, rank + rope),
            Tensor(OTHER, layer, nope, rank * heads),
            Tensor(OTHER, layer, rank, a.v_head_dim * heads),
        ]
        return query + latent + [Tensor(ATTN_OUT, layer, heads * a.v_head_dim, h)]
    head_dim, kv_heads, shared_kv = arch.head_dim, arch.kv_heads, False
    if gemma4(arch) and full_layer(arch, layer):
        head_dim, kv_heads, shared_kv = a.global_head_dim, a.global_kv_heads or kv_heads, bool(a.global_kv_heads)
    q, kv = heads * head_dim, kv_heads * head_dim
    if a.fused_qkv:
        projections = [Tensor(VALUE, layer, h, q + 2 * kv)]
    else:
        projections = [Tensor(QUERY, layer, h, q), Tensor(KEY, layer, h, kv)] + [Tensor(VALUE, layer, h, kv)] * (not shared_kv)
    return projections + [Tensor(ATTN_OUT, layer, q, h)]


def gemma4(arch: Architecture) -> bool:
    """Gemma 4, the one architecture whose record has global_head_dim (catalog/hf_gemma4.py): every layer keeps its
    dense MLP (ffn_gate, ffn_up, ffn_down of `intermediate`), beside the router and experts where it has them
    (src/models/gemma4.cpp L103-L130 at 0c1e57098: "for expert layers, we use normal FFN as shared expert"), and its
    full-attention layers have their own shapes."""
    return bool(arch.attention.global_head_dim)


def full_layer(arch: Architecture, layer: int) -> bool:
    """Whether Gemma 4's layer `layer` is a full-attention layer: global_head_dim-wide heads, global_kv_heads KV heads
    whose keys are also the values (attention_k_eq_v: the converter writes no attn_v there, and gemma4.cpp L84 makes
    attn_v optional), else kv_heads with an attn_v of their own. The record keeps how many layers are full, not
    where: they are spread evenly with the last one full, which is Gemma 4's default layer_types (every sixth, as
    the published 31B's and 26B-A4B's), and where they sit matters only to the order of the value-like tensors when
    the full layers have an attn_v."""
    full = arch.layers - arch.attention.sliding_layers if arch.attention.windowed else arch.layers
    return (layer + 1) * full // arch.layers > layer * full // arch.layers


def more_bits(i: int, n: int) -> bool:
    """use_more_bits (L452-L454): the first and last eighth of the layers, and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def chosen(tensor: Tensor, file_type: str, arch: Architecture, value_index: int, values: int) -> str:
    """The type llama_tensor_get_type_impl (L446-L714) gives `tensor` in a file of `file_type`, then its fallback."""
    default = FILE_TYPES[file_type]
    role, kind = tensor.role, default
    experts = arch.experts.count if arch.experts else 0
    if role == FLOAT:
        return "F32"
    if role == OUTPUT or (role == EMBEDDING and arch.tied_embeddings):  # L490-L511
        kind = "Q8_0" if tensor.row % BLOCKS[default][0] or default == "Q8_0" else "Q6_K"
    elif role == VALUE:  # L567-L604
        if file_type == "Q2_K":
            kind = "Q4_K" if arch.heads // arch.kv_heads >= 4 else "Q3_K"
        elif file_type == "Q3_K_M":
            kind = "Q5_K" if value_index < 2 else "Q4_K"
        elif file_type in ("Q4_K_M", "Q5_K_M") and more_bits(value_index, values):
            kind = "Q6_K"
        if seventy_b(arch) and kind in ("Q3_K", "Q4_K"):
            kind = "Q5_K"
        if experts == 8:
            kind = "Q8_0"
    elif role == KEY and experts == 8:  # L605-L610
        kind = "Q8_0"
    elif role == DOWN:  # L624-L668: the layer's own index, of all the layers
        i, n = tensor.layer, arch.layers
        if file_type == "Q2_K":
            kind = "Q3_K"
        elif file_type == "Q3_K_M":
            kind = "Q5_K" if i < n // 16 else "Q4_K"
        elif file_type in ("Q4_K_M", "Q5_K_M") and more_bits(i, n):
            kind = "Q6_K"
    elif role == ATTN_OUT:  # L669-L688
        if experts == 8:
            kind = "Q5_K" if file_type in ("Q2_K", "Q3_K_M", "Q4_K_M") else kind
        else:
            kind = {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K"}.get(file_type, kind)
    if tensor.row % BLOCKS[kind][0]:
        kind = FALLBACK.get(kind, kind)
        if tensor.row % BLOCKS[kind][0]:
            kind = "F16"
    return kind


def seventy_b(arch: Architecture) -> bool:
    """llama.cpp's LLM_TYPE_70B, which lifts attn_v (L593-L598): llama's loader for 80 layers with grouped-query
    attention (src/models/llama.cpp L15-L28), qwen2's for 80 layers; every 80-layer model of the catalog is one."""
    return arch.layers == SEVENTY_B_LAYERS and arch.heads != arch.kv_heads and arch.experts is None


def typed(arch: Architecture, file_type: str) -> list[tuple[Tensor, str]]:
    """Every matrix with the type the quantizer gives it; attn_v's rule counts the value-like tensors in order."""
    found = tensors(arch)
    values = sum(1 for t in found if t.role == VALUE)
    out, index = [], 0
    for tensor in found:
        out.append((tensor, chosen(tensor, file_type, arch, index, values)))
        index += tensor.role == VALUE
    return out


def tensor_bytes(kind: str, tensor: Tensor) -> int:
    block, size = BLOCKS[kind]
    return tensor.rows * (tensor.row // block) * size


@functools.cache
def file_bytes(arch: Architecture, file_type: str, params: int) -> int:
    """The tensors' bytes of a `file_type` GGUF of a model of `params` parameters (what llama.cpp prints as its file
    size, without the header): the matrices as `typed`, and what they leave (norms and biases, a hybrid's state
    layers) in F32 or, for a hybrid, at the file type's default type for rows of the hidden size."""
    matrices = typed(arch, file_type)
    rest = max(0, params - sum(t.rows * t.row for t, _ in matrices))
    # a hybrid's: projections from the hidden size, mostly, so a hidden size no block divides takes the fallback
    block, size = BLOCKS[chosen(Tensor(OTHER, -1, arch.hidden, 0), file_type, arch, 0, 0) if arch.state else "F32"]
    return sum(tensor_bytes(kind, t) for t, kind in matrices) + rest * size // block


@functools.cache
def expert_bytes(arch: Architecture, file_type: str) -> int:
    """The routed experts' bytes in that file (what a step that touches no expert of a layer does not read)."""
    return sum(tensor_bytes(kind, t) for t, kind in typed(arch, file_type) if t.routed)
