"""DeepSeek's multi-head latent attention in a Hugging Face config.json, as transformers' DeepseekV3Attention counts
it (models/deepseek_v3): low-rank queries (or direct ones), a compressed key-value latent and its up-projections;
DeepSeek's sparse variant adds a lightning indexer (DeepseekV32Indexer). hf_config counts the DeepSeek-style models
with it, hf_hybrid Kimi Linear's full-attention layers."""

from __future__ import annotations

from gpumem.catalog.config_fields import Fields
from gpumem.catalog.validate import Invalid
from gpumem.records.catalog import Attention

SPARSE_MLA = ("deepseek_v32", "glm_moe_dsa")  # DeepSeek sparse attention: MLA with a lightning indexer
INDEX_QUANT_BLOCK = 128  # the indexer's keys are cached in 8 bits with one 4-byte scale per 128 (see deployment.kv_bytes_per_token_layer)


def mla(f: Fields, kind: str, hidden: int, heads: int) -> tuple[int, Attention, int]:
    """DeepSeek's multi-head latent attention: low-rank queries, a compressed key-value latent; its sparse
    variant adds a lightning indexer (transformers' DeepseekV32Indexer: wq_b, wk, k_norm, weights_proj)
    whose key per token is cached beside the latent."""
    kv_rank = f.count("kv_lora_rank")
    rope, nope, value = f.count("qk_rope_head_dim"), f.count("qk_nope_head_dim"), f.count("v_head_dim")
    q_rank = 0
    if f.get("q_lora_rank") is None:  # DeepSeek-V2-Lite projects queries directly
        queries = hidden * heads * (nope + rope)
    else:
        q_rank = f.count("q_lora_rank")
        queries = hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    params = queries + hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + value) + heads * value * hidden
    if kind not in SPARSE_MLA:
        return params, Attention("mla", kv_lora_rank=kv_rank, qk_rope_head_dim=rope, q_lora_rank=q_rank, v_head_dim=value), nope + rope
    index_heads, index_dim = f.count("index_n_heads"), f.count("index_head_dim")
    if f.get("q_lora_rank") is None:
        raise Invalid("q_lora_rank: expected a positive integer, got nothing (the indexer reads the low-rank queries)")
    params += f.count("q_lora_rank") * index_heads * index_dim + hidden * index_dim + 2 * index_dim + hidden * index_heads
    index_bytes = index_dim + index_dim // INDEX_QUANT_BLOCK * 4
    attention = Attention("mla", kv_lora_rank=kv_rank, qk_rope_head_dim=rope, index_bytes=index_bytes, q_lora_rank=q_rank, v_head_dim=value)
    return params, attention, nope + rope
