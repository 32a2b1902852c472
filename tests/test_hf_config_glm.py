"""GLM-4.5/4.6/4.7 (model_type glm4_moe): grouped-query attention with optional q/k/v biases and q/k norms, and
DeepSeek-V3's MoE fields, counted as vLLM 0.33.0's glm4_moe.py creates its tensors.

tests/fixtures/hf_configs/glm-4.6.json holds zai-org/GLM-4.6's architecture fields
(https://huggingface.co/zai-org/GLM-4.6/blob/main/config.json). The code corpus stores no copy of that repository,
of its config.json or of its model.safetensors.index.json, so the file is a transcription, not a byte-for-byte
copy: every architecture field has the value a stored test of SQLite Cloud's GLM converter writes for the 92-layer
GLM-4.x (FULL_CFG), and nvidia/GLM-4.7-NVFP4's config, as another stored test transcribes it at 47fa7dc8, gives the
same values and those FULL_CFG leaves out (attention_dropout, initializer_range, pad_token_id, use_cache, the
bfloat16 dtype). With no published total_size to check against, the count is derived by hand (h = 5,120, 96 heads and 8 KV heads of 128, vocabulary
151,552, 92 layers of which the first 3 dense of 12,288, then 160 routed experts top-8 and one shared of 1,536):

    attention  q, k, v, o:  5,120 x 12,288 x 2 + 5,120 x 1,024 x 2          = 136,314,880
               biases:      12,288 + 2 x 1,024                              =      14,336
               q/k norms:   2 x 128                                         =         256
               two norms:   2 x 5,120                                       =      10,240  -> 136,339,712 a layer
    dense MLP  3 x 5,120 x 12,288, in 3 layers                              = 566,231,040
    MoE layer  (160 + 1) x 3 x 5,120 x 1,536 + 5,120 x 160 + 160 (bias)     = 3,799,285,920, in 89 layers
    total      2 x 151,552 x 5,120 + 92 x 136,339,712 + 566,231,040
               + 89 x 3,799,285,920 + 5,120 (final norm)                    = 352,797,829,024
    active     the same with 8 + 1 experts a MoE layer (213,156,000)        = 33,632,266,144
    MTP layer  136,339,712 + 3,799,285,920 + 2 x 5,120 x 5,120 (eh_proj)
               + 3 x 5,120 (enorm, hnorm, shared_head.norm)                 = 3,988,069,792

GLM-4.6's MTP layer has no embedding or head of its own: llama.cpp had to make blk.92.nextn.embed_tokens and
nextn.shared_head_head optional for GLM 4.6 (https://github.com/ggml-org/llama.cpp/pull/16359), and vLLM 0.33.0's
glm4_moe_mtp.py loads the model's lm_head and embed_tokens into it (L274-L278). Main model and MTP layer together:
356,785,898,816, the "355B" GLM-4.6 is published as.
"""

from __future__ import annotations

import json

import pytest

from gpumem.catalog.hf_config import count
from gpumem.catalog.inputs import load_catalog
from gpumem.catalog.validate import Invalid
from gpumem.records.catalog import Attention, Experts

from .project import CATALOGS, REPO

LIMITS = load_catalog(CATALOGS).rules.calculator_limits
GLM46 = json.loads((REPO / "tests/fixtures/hf_configs/glm-4.6.json").read_text())


def test_glm_4_6_counts_its_published_parameters():
    found = count(GLM46, LIMITS)
    assert (found.params, found.active, found.mtp) == (352_797_829_024, 33_632_266_144, 3_988_069_792)
    assert found.params + found.mtp == 356_785_898_816
    assert (found.arch.layers, found.arch.heads, found.arch.kv_heads, found.arch.head_dim) == (92, 96, 8, 128)
    assert found.arch.experts == Experts(160, 8, 1536, shared=1, dense_layers=3)
    assert (found.arch.attention, found.arch.intermediate, found.context) == (Attention(), 12288, 202752)


def test_biases_and_qk_norms_follow_their_switches():
    full = count(GLM46, LIMITS).params
    assert count({**GLM46, "attention_bias": False}, LIMITS).params == full - 92 * (12288 + 2 * 1024)
    assert count({**GLM46, "use_qk_norm": False}, LIMITS).params == full - 92 * 2 * 128
    # the rotary fraction only changes the rope, not a tensor
    assert count({**GLM46, "partial_rotary_factor": 1.0}, LIMITS).params == full


def test_a_glm_switch_that_is_not_a_boolean_is_named():
    with pytest.raises(Invalid, match=r'^attention_bias: expected true or false, got "yes"$'):
        count({**GLM46, "attention_bias": "yes"}, LIMITS)
