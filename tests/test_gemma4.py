"""Gemma 4: sliding-window layers beside full-attention layers with their own KV heads and head size.

The configs are the Hugging Face files as ai-dynamo/aiconfigurator vendors them at
095f58a51c4ca8e61b66ec108d86f223f8d559ce, copied unchanged:
aic-core/src/aiconfigurator_core/model_configs/google--gemma-4-26B-A4B_config.json (google/gemma-4-26B-A4B) and
nvidia--Gemma-4-31B-IT-NVFP4_config.json (nvidia/Gemma-4-31B-IT-NVFP4, NVIDIA's NVFP4 release of google/gemma-4-31B-it,
whose text and vision configs it keeps). Each is counted to the parameters transformers 5.25.0 creates for it (a
Gemma4ForConditionalGeneration built on the meta device from the config, summed over named_parameters: the language
model apart from the vision tower and its embedder, embed_vision).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import pytest

from gpumem.catalog.hf_config import count
from gpumem.catalog.validate import Invalid
from gpumem.engines import deployment as engine
from gpumem.engines import memory
from gpumem.records.catalog import Attention, Experts

from .project import CATALOGS
from .test_estimate import filled, gpumem
from .test_hybrid import CONFIGS, KV, LIMITS


def config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


DENSE = count(config("gemma-4-31b-it-nvfp4"), LIMITS)
MOE = count(config("gemma-4-26b-a4b"), LIMITS)


def test_published_configs_count_what_transformers_creates():
    # language model; vision tower (569,548,080 in both) and its embedder into the text width
    assert (DENSE.params, DENSE.vision, DENSE.active) == (30_697_345_280, 569_548_080 + 6_193_152, None)
    assert (MOE.params, MOE.vision) == (25_233_141_760, 569_548_080 + 3_244_032)
    # one token: the embeddings, every layer's attention, dense MLP, norms and router, and 8 of the 128 experts
    assert MOE.active == MOE.params - 30 * 120 * 3 * 2816 * 704 == 3_822_530_560
    assert (DENSE.release, MOE.release, DENSE.context) == ("nvfp4", "bf16", 262_144)


def test_the_full_layers_keep_their_own_kv_heads_and_head_size():
    assert DENSE.arch.attention == Attention("sliding", window=1024, sliding_layers=50, global_kv_heads=4, global_head_dim=512)
    assert (DENSE.arch.layers, DENSE.arch.kv_heads, DENSE.arch.head_dim) == (60, 16, 256)
    assert MOE.arch.attention == Attention("sliding", window=1024, sliding_layers=25, global_kv_heads=2, global_head_dim=512)
    assert MOE.arch.experts == Experts(128, 8, 704)
    assert MOE.arch.intermediate == 2112  # the dense MLP beside the experts


def test_without_k_eq_v_the_full_layers_have_a_value_projection_and_the_sliding_kv_heads():
    variant = config("gemma-4-31b-it-nvfp4")
    text = variant["text_config"]
    text.update(attention_k_eq_v=False, num_hidden_layers=8, use_bidirectional_attention=None)
    del text["layer_types"]  # five sliding then one full, and the last layer full: 6 sliding, 2 full
    found = count(variant, LIMITS)
    assert found.params == 5_505_206_528  # transformers 5.25.0, the same config
    assert found.arch.attention == Attention("sliding", window=1024, sliding_layers=6, global_head_dim=512)  # no KV heads of their own


def test_the_cache_holds_each_kind_of_layer_at_its_own_size():
    kv16 = KV["bf16"].bytes
    full, local = 2 * 4 * 512 * 2, 2 * 16 * 256 * 2  # bytes per token and layer
    assert memory.kv_bytes_per_token(DENSE.arch, kv16) == 10 * full + 50 * local == 901_120
    assert memory.kv_cache_bytes(DENSE.arch, kv16, 32_768) == 10 * full * 32_768 + 50 * local * 1024 == 3_523_215_360
    assert [engine.kv_bytes_per_token_per_gpu(DENSE.arch, KV["bf16"], n) for n in (1, 2, 4, 8)] == [901_120, 450_560, 225_280, 122_880]
    # on 8 GPUs each keeps one of the 4 full-layer KV heads (replicated) and 2 of the 16 sliding ones
    assert engine.kv_heads_per_gpu(DENSE.arch, 8, full=True) == 1.0
    assert engine.kv_heads_per_gpu(DENSE.arch, 8) == 2.0


def test_tensor_parallelism_splits_each_kind_s_kv_heads_or_replicates_them():
    assert engine.valid_gpu_counts(MOE.arch, (1, 2, 3, 4, 8, 16)) == (1, 2, 4, 8, 16)
    odd = dataclasses.replace(MOE.arch, attention=dataclasses.replace(MOE.arch.attention, global_kv_heads=3))
    assert engine.valid_tensor_parallel(odd, 2) is False  # 3 full-layer KV heads neither split over 2 nor replicate


def test_vllm_fills_one_page_size_with_a_larger_block_for_the_smaller_kind():
    # 16 tokens of a sliding layer (16 KV heads of 256) fill 262,144 bytes; a full layer's 16 tokens half that,
    # so its block grows to 32 tokens; on 8 GPUs both keep 2,048 bytes per token and 16-token blocks
    assert engine.page_blocks(DENSE.arch, KV["bf16"], 1) == (32, 16, 262_144)
    assert engine.page_blocks(DENSE.arch, KV["bf16"], 8) == (16, 16, 32_768)
    free, length, batch = 40e9, 32_768, 8192
    blocks = free // (10 * 262_144)  # groups of 10 layers: one full group, five sliding groups
    per_request = math.ceil(length / 32) + 5 * math.ceil((1023 + batch) / 16)
    assert engine.concurrency(DENSE.arch, KV["bf16"], free, 1, length, batch) == blocks / per_request == 15_258 / 3904


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"hidden_size_per_layer_input": 256},
            "hidden_size_per_layer_input: expected 0, got 256 (gpumem counts Gemma 4 without per-layer embeddings, "
            "shared key-value layers or attention biases)",
        ),
        (
            {"num_kv_shared_layers": 20},
            "num_kv_shared_layers: expected 0, got 20 (gpumem counts Gemma 4 without per-layer embeddings, "
            "shared key-value layers or attention biases)",
        ),
        (
            {"attention_bias": True},
            "attention_bias: expected false, got true (gpumem counts Gemma 4 without per-layer embeddings, "
            "shared key-value layers or attention biases)",
        ),
        ({"num_global_key_value_heads": 3}, "num_global_key_value_heads: 3 does not divide num_attention_heads (32)"),
        (
            {"num_experts": 4, "top_k_experts": 8, "moe_intermediate_size": 8, "enable_moe_block": True},
            "top_k_experts: 8 is more than the 4 experts",
        ),
    ],
)
def test_what_gemma4_counting_leaves_out_is_refused_naming_the_field(change, message):
    variant = copy.deepcopy(config("gemma-4-31b-it-nvfp4"))
    variant["text_config"].update(change)
    with pytest.raises(Invalid) as error:
        count(variant, LIMITS)
    assert str(error.value) == message


def test_per_layer_embeddings_left_out_of_the_config_are_transformers_default_and_refused():
    variant = config("gemma-4-31b-it-nvfp4")
    del variant["text_config"]["hidden_size_per_layer_input"]
    with pytest.raises(Invalid, match=r"^hidden_size_per_layer_input: expected 0, got 256 "):
        count(variant, LIMITS)


def test_models_add_drafts_the_full_layers_own_kv_heads_and_the_catalog_keeps_them(tmp_path):
    import shutil

    done = gpumem("models", "add", str(CONFIGS / "gemma-4-26b-a4b.json"), "--catalogs", str(CATALOGS), "--id", "gemma-4-copy")
    assert done.returncode == 0, done.stderr
    attention = '    attention: {kind: "sliding", window: 1024, sliding_layers: 25, global_kv_heads: 2, global_head_dim: 512}'
    assert attention in done.stdout.splitlines()
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    models = tmp_path / "catalogs/models.yaml"
    models.write_text(models.read_text().rstrip("\n") + "\n" + filled(done.stdout))
    checked = gpumem("estimate", "--catalogs", str(tmp_path / "catalogs"), "--model", "gemma-4-copy", "--json", "--context", "32768")
    assert json.loads(checked.stdout)["kv_bytes_per_token_per_gpu"] == 5 * 2 * 2 * 512 * 2 + 25 * 2 * 8 * 256 * 2
