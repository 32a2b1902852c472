"""Issue 23's architectures: hybrids of state layers and attention, chunked local attention, DeepSeek sparse attention.

Each published config.json of tests/fixtures/hf_configs is counted to the parameter transformers 5.25.0 creates for
it (a model built on the meta device, AutoModelForCausalLM.from_config, summed over named_parameters; its vision
tower with AutoModelForImageTextToText), plus the score-correction bias of each MoE layer's router that DeepSeek-style
checkpoints store and transformers keeps as a buffer (256 per layer for DeepSeek V3.2 and GLM-5, 384 for Kimi K2).

The configs are the Hugging Face files (https://huggingface.co/<repo>/blob/main/config.json) as two repositories
vendor them, copied unchanged: ai-dynamo/aiconfigurator at 095f58a51c4ca8e61b66ec108d86f223f8d559ce,
aic-core/src/aiconfigurator_core/model_configs/<owner>--<name>_config.json (Qwen/Qwen3.5-27B, Qwen/Qwen3.5-35B-A3B,
deepseek-ai/DeepSeek-V3.2, zai-org/GLM-5, moonshotai/Kimi-K2-Instruct, nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16),
and at 1b7cfb10a6fa06880ad7911db5ddb949882ff76a, src/aiconfigurator/model_configs/ (Qwen/Qwen3-Next-80B-A3B-Thinking);
inference-sim/inference-sim at 59649ee4320aa98bbc5607a84df1f09f1e80eedf,
model_configs/llama-4-scout-17b-16e-instruct/config.json (meta-llama/Llama-4-Scout-17B-16E-Instruct); MiniMaxAI/MiniMax-M2.7
and nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 from aiconfigurator at 095f58a5 too, the latter's one bare Infinity
(time_step_limit, which no count reads and JSON does not allow) written as 1e308.
"""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from gpumem.catalog.hf_config import count, kept_parts, model_from_config, text_config
from gpumem.catalog.inputs import load_catalog
from gpumem.catalog.validate import Invalid
from gpumem.engines import deployment as engine
from gpumem.engines import memory, speed
from gpumem.records.catalog import Architecture, Attention, Experts, Repo, State

from .project import CATALOGS, REPO
from .test_estimate import estimate, gpumem

CONFIGS = REPO / "tests/fixtures/hf_configs"
CATALOG = load_catalog(CATALOGS)
LIMITS = CATALOG.rules.calculator_limits
RULES = CATALOG.rules.deployment
assert RULES is not None
KV = RULES.kv_formats


def counted(name: str):
    return count(json.loads((CONFIGS / f"{name}.json").read_text()), LIMITS)


@pytest.mark.parametrize(
    "name, params, vision, active",
    [
        ("qwen3-next-80b-a3b-thinking", 79_674_391_296, 0, 3_874_929_408),
        ("qwen3.5-27b", 26_895_998_464, 460_730_096, None),
        ("qwen3.5-35b-a3b", 34_660_610_688, 446_571_248, 3_454_988_928),
        ("nemotron-3-nano-30b-a3b-bf16", 31_577_937_344, 0, 3_580_073_408),
        ("llama-4-scout-17b-16e-instruct", 107_769_861_120, 871_932_416, 17_172_894_720),
        ("deepseek-v3.2", 671_877_929_216 + 58 * 256, 0, 38_403_822_336),
        ("glm-5", 743_911_199_232 + 75 * 256, 0, 41_784_728_832),
        ("kimi-k2-instruct", 1_026_408_209_408 + 60 * 384, 0, 32_861_500_928),
        ("minimax-m2.7", 228_689_748_992 + 62 * 256, 0, 11_030_553_088),
        ("nemotron-3-super-120b-a12b-fp8", 120_668_687_360, 0, 12_770_216_960),
    ],
)
def test_published_configs_count_what_transformers_creates(name, params, vision, active):
    found = counted(name)
    assert (found.params, found.vision, found.active) == (params, vision, active)


def test_each_hybrid_s_state_layers_and_their_state():
    assert counted("qwen3-next-80b-a3b-thinking").arch.state == State("gated-deltanet", 36, 3 * 8192, 32 * 128 * 128)
    assert counted("qwen3.5-35b-a3b").arch.state == State("gated-deltanet", 30, 3 * 8192, 32 * 128 * 128, recurrent_bytes=4)
    assert counted("qwen3.5-27b").arch.state == State("gated-deltanet", 48, 3 * 10240, 48 * 128 * 128, recurrent_bytes=4)
    # Mamba-2: conv over heads x head dim + 2 x groups x state size, recurrent heads x head dim x state size
    # in FP32 (its config's mamba_ssm_cache_dtype); 23 of its blocks are MoE alone, neither attention nor a state
    assert counted("nemotron-3-nano-30b-a3b-bf16").arch.state == State("mamba2", 23, 3 * (64 * 64 + 2 * 8 * 128), 64 * 64 * 128, 4, 23)
    nemotron = counted("nemotron-3-nano-30b-a3b-bf16").arch
    assert (nemotron.attention_layers, nemotron.experts.count, nemotron.experts.active) == (6, 128, 6)  # the six * of its pattern


def test_chunked_and_sparse_attention_are_read_from_the_config():
    assert counted("llama-4-scout-17b-16e-instruct").arch.attention == Attention("chunked", window=8192, sliding_layers=36)
    assert counted("deepseek-v3.2").arch.attention == Attention(
        "mla", kv_lora_rank=512, qk_rope_head_dim=64, index_bytes=132, q_lora_rank=1536, v_head_dim=128
    )
    assert counted("kimi-k2-instruct").arch.attention.index_bytes == 0
    assert counted("glm-5").arch.attention.index_bytes == 132


QWEN35 = Architecture(40, 16, 2, 256, state=State("gated-deltanet", 30, 24576, 524288, recurrent_bytes=4))


def test_vllm_pages_a_hybrid_s_state_in_attention_blocks():
    # one state layer: 24,576 x 2 B + 524,288 x 4 B = 2,146,304 B; an attention layer's token 2 x 2 x 256 x 2 = 2,048 B
    assert engine.state_bytes_per_gpu(QWEN35, 1, "vllm") == 2_146_304
    paging = engine.state_paging(RULES, QWEN35)
    assert paging == engine.Paging(3, 64)
    assert engine.block_tokens(QWEN35, KV["bf16"], 1, paging) == 1088  # 64 x ceil(2,146,304 / (64 x 2,048))
    assert engine.block_tokens(QWEN35, KV["bf16"], 1, engine.Paging(2, 16)) == 1056  # 16 x 66
    assert engine.layer_slots(QWEN35, "vllm") == (10, 0, 30)
    # 30 state layers x 3 pages of 1,088 x 2,048 B, whatever the context
    assert engine.state_cache_bytes_per_gpu(QWEN35, KV["bf16"], 1, 1, "vllm", paging) == 30 * 3 * 1088 * 2048
    # the 10 attention layers hold 32,768 tokens in 31 whole blocks of 1,088
    cache = engine.kv_cache_bytes_per_gpu(QWEN35, KV["bf16"], 32768, 1, 1, "vllm", 0, paging)
    assert cache == 10 * 2048 * 31 * 1088 + 30 * 3 * 1088 * 2048
    assert engine.kv_bytes_per_token_per_gpu(QWEN35, KV["bf16"], 1) == 10 * 2048


def test_tensor_parallelism_splits_the_state_and_llamacpp_keeps_it_whole_in_f32():
    assert engine.state_bytes_per_gpu(QWEN35, 2, "vllm") == 2_146_304 / 2
    assert engine.state_bytes_per_gpu(QWEN35, 2, "llama.cpp") == (24576 + 524288) * 4
    # llama.cpp splits layers: the busiest of 2 GPUs holds 15 of the 30 state layers
    assert engine.state_cache_bytes_per_gpu(QWEN35, KV["bf16"], 2, 2, "llama.cpp", engine.STATE_ITSELF) == 2 * 15 * (24576 + 524288) * 4


def test_the_rule_of_thumb_counts_the_state_once_per_request():
    assert memory.state_bytes(QWEN35) == 30 * 2_146_304
    assert memory.kv_cache_bytes(QWEN35, 2, 1000, 3) == 3 * (10 * 2048 * 1000 + 30 * 2_146_304)


def test_vllm_s_concurrency_follows_its_groups_of_blocks():
    # 6 GiB of fp8 cache on one GPU, the Triton path's paging: 10 layers x 2,096 tokens x 1,024 B a block
    free = 6 * 2**30
    found = engine.concurrency(QWEN35, KV["fp8"], free, 1, 131072, 16384, engine.Paging(2, 16))
    assert found == (free // (10 * 2096 * 1024)) / (63 + 3 * 2)


def test_chunked_layers_keep_their_chunk_and_the_tokens_in_flight():
    scout = counted("llama-4-scout-17b-16e-instruct").arch
    assert engine.sliding_tokens(scout, 131072, 16384) == 8192 + 16384
    assert engine.sliding_tokens(scout, 131072) == 8192
    sliding = Architecture(4, 8, 8, 64, Attention("sliding", window=8192, sliding_layers=2))
    assert engine.sliding_tokens(sliding, 131072, 16384) == 8191 + 16384
    assert engine.layer_slots(scout, "vllm") == (12, 36, 0)


def test_the_sparse_indexer_key_is_cached_beside_the_latent_in_any_format():
    dsa = counted("deepseek-v3.2").arch
    assert engine.kv_bytes_per_token_per_gpu(dsa, KV["bf16"], 8) == 61 * (576 * 2 + 132)
    assert engine.kv_bytes_per_token_per_gpu(dsa, KV["fp8"], 8) == 61 * (576 + 132)


def qwen_config() -> dict:
    return json.loads((CONFIGS / "qwen3.5-35b-a3b.json").read_text())


def with_text(**changes) -> dict:
    config = qwen_config()
    config["text_config"].update(changes)
    return config


@pytest.mark.parametrize(
    "config, message",
    [
        (
            with_text(layer_types=["linear_attention"] * 39 + ["sliding_attention"]),
            'layer_types: expected a list of "linear_attention" and "full_attention", got',
        ),
        (with_text(layer_types=["full_attention"] * 40), "layer_types: no linear_attention layer; a model of full attention alone"),
        (with_text(linear_num_key_heads=12), "linear_num_key_heads: 12 does not divide linear_num_value_heads (32)"),
        (with_text(linear_key_head_dim=None), "linear_key_head_dim: expected a positive integer, got nothing"),
        (with_text(num_experts_per_tok=300), "num_experts_per_tok: 300 is more than the 256 experts"),
    ],
)
def test_a_hybrid_it_cannot_count_is_refused_naming_the_field(config, message):
    with pytest.raises(Invalid) as error:
        count(config, LIMITS)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("M*" * 25, "hybrid_override_pattern: 50 layers for num_hidden_layers (52): expected one per layer"),
        ("MX" * 26, "hybrid_override_pattern: expected a string of M, *, - and E, one per layer"),
        ("ME" * 26, "hybrid_override_pattern: expected both Mamba-2 (M) and attention (*) layers"),
    ],
)
def test_a_nemotron_pattern_it_cannot_read_is_refused(pattern, message):
    config = json.loads((CONFIGS / "nemotron-3-nano-30b-a3b-bf16.json").read_text())
    config["hybrid_override_pattern"] = pattern
    with pytest.raises(Invalid, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*") + "$"):
        count(config, LIMITS)


def test_kimi_linear_and_minimax_m1_count_as_their_checkpoints():
    """Kimi Linear 48B-A3B: 49,122,681,728 parameters, the sum of its safetensors headers as
    gogongxt/python@ec9962697819add8f24ce1b180cf98ca6a53c40f:scripts/models/kimi_linear_48b_a3b_instruct.md lists
    them (its config from the same report); MiniMax-M1, "456 billion parameters ... 45.9 billion activated per
    token" (its README, MiniMax-AI/MiniMax-M1@2abb4f45), 45.94 billion without the embeddings."""
    kimi = counted("kimi-linear-48b-a3b-instruct")
    assert (kimi.params, kimi.active, kimi.context) == (49_122_681_728, 3_484_459_904, 1_048_576)
    # KDA: q, k and v convolutions of 3 x 4,096 over a kernel of 4 less one, a recurrent 32 x 128 x 128 in FP32
    assert kimi.arch.state == State("kda", 20, 3 * 3 * 4096, 32 * 128 * 128, recurrent_bytes=4)
    assert kimi.arch.attention == Attention("mla", kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128)
    assert (kimi.arch.attention_layers, kimi.arch.experts) == (7, Experts(256, 8, 1024, 1, 1))
    minimax = counted("minimax-m1")
    assert (minimax.params, minimax.active) == (456_089_655_296, 48_403_306_496)
    assert minimax.active - 2 * 200064 * 6144 == 45_944_920_064
    assert minimax.arch.state == State("lightning", 70, 0, 64 * 128 * 128)
    assert (minimax.arch.attention_layers, minimax.arch.kv_heads, minimax.arch.experts) == (10, 8, Experts(32, 2, 9216))


def test_llama4_s_layer_list_must_be_one_per_layer():
    config = json.loads((CONFIGS / "llama-4-scout-17b-16e-instruct.json").read_text())
    broken = copy.deepcopy(config)
    broken["text_config"]["no_rope_layers"] = [1, 0]
    with pytest.raises(Invalid, match=r"^no_rope_layers: expected a list of 0 and 1, one per layer \(48\)$"):
        count(broken, LIMITS)


def test_estimate_names_the_fixed_state_apart_from_the_kv_per_token():
    done = estimate("--config", str(CONFIGS / "qwen3.5-35b-a3b.json"), "--context", "32768")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2] == "  KV cache     0.9 GB (0.8 GiB) per GPU (20,480 bytes per token)"
    assert (
        lines[3]
        == "    of which  0.2 GB (0.2 GiB) per GPU is fixed state (30 of 40 layers are Gated DeltaNet: a state per request, no KV per token)"
    )
    data = json.loads(estimate("--config", str(CONFIGS / "qwen3.5-35b-a3b.json"), "--context", "32768", "--json").stdout)
    assert data["state_bytes_per_gpu"] == 30 * 3 * 1088 * 2048
    assert data["kv_cache_bytes_per_gpu"] == 10 * 2048 * 31 * 1088 + 30 * 3 * 1088 * 2048


def test_an_nvfp4_release_keeps_at_16_bits_what_its_config_leaves_unquantized():
    config = json.loads((CONFIGS / "minimax-m2.5-nvfp4.json").read_text())
    assert kept_parts(config) == ("attention", "router")
    found = count(config, LIMITS)
    assert found.release == "nvfp4"
    arch = found.arch
    attention = 62 * (2 * 3072 * 48 * 128 + 2 * 3072 * 8 * 128)
    router = 62 * 3072 * 256
    model = model_from_config(config, LIMITS, "m", "M", "https://huggingface.co/nvidia/MiniMax-M2.5-NVFP4/blob/main/config.json")
    assert (engine.kept_params(model, ("attention",)), engine.kept_params(model, ("attention", "router"))) == (
        attention,
        attention + router,
    )
    nvfp4 = RULES.weight_formats["nvfp4"]
    assert nvfp4.bits == 4.5  # E2M1 values and an FP8 scale per 16
    sixteen = engine.embedding_params(arch) + attention + router
    kept = dataclasses.replace(
        model, repos={"nvfp4": Repo("nvfp4", "nvidia/MiniMax-M2.5-NVFP4", "https://huggingface.co", kept=("attention", "router"))}
    )
    assert engine.weights_bytes(kept, nvfp4) == (found.params - sixteen) * 4.5 / 8 + sixteen * 2
    assert (
        engine.weights_bytes(model, nvfp4) == (found.params - engine.embedding_params(arch)) * 4.5 / 8 + engine.embedding_params(arch) * 2
    )


def test_a_release_that_quantizes_the_routed_experts_alone_keeps_every_other_weight_at_16_bits():
    """NVIDIA's NVFP4 Qwen3.5 lists every layer's linear_attn or self_attn and the shared experts as unquantized
    (names as in nvidia/Qwen3.5-397B-A17B-NVFP4's hf_quant_config exclude_modules, vendored by
    ai-dynamo/aiconfigurator@095f58a5): only the routed experts are in FP4, as here on Qwen3.5 35B-A3B's shapes."""
    config = json.loads((CONFIGS / "qwen3.5-35b-a3b.json").read_text())
    ignored = ["lm_head", "*.mlp.shared_expert.*", "model.language_model.layers.0.linear_attn*", "model.language_model.layers.3.self_attn*"]
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ignored}
    assert kept_parts(text_config(config)) == ("non_experts",)
    assert kept_parts(text_config({**config, "quantization_config": {"ignore": ignored[2:]}})) == ("attention",)
    model = model_from_config(config, LIMITS, "q", "Q", "https://huggingface.co/Qwen/Qwen3.5-35B-A3B/blob/main/config.json")
    experts = 40 * 256 * 3 * 2048 * 512  # 40 MoE layers of 256 experts, gate, up and down of 2,048 x 512
    params = round(model.params_b * 1e9)
    vision = round(model.vision_params_b * 1e9)
    embeddings = 2 * 248320 * 2048  # untied input and output embeddings
    assert engine.kept_params(model, ("non_experts",)) == params - vision - embeddings - experts
    only_experts = dataclasses.replace(model, repos={"nvfp4": Repo("nvfp4", "nvidia/Q", "https://huggingface.co", kept=("non_experts",))})
    assert engine.weights_bytes(only_experts, RULES.weight_formats["nvfp4"]) == experts * 4.5 / 8 + (params - experts) * 2


def test_models_add_drafts_the_parts_a_release_keeps(tmp_path):
    folder = tmp_path / "minimax-m2.5"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "minimax-m2.5-nvfp4.json").read_text())
    source = "https://huggingface.co/nvidia/MiniMax-M2.5-NVFP4/blob/main/config.json"
    done = gpumem("models", "add", str(folder / "config.json"), "--catalogs", str(CATALOGS), "--source", source)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert '    release: "nvfp4"' in lines
    assert '    attention: {kind: "full", qk_norm: "per_layer"}' in lines  # its q and k norms over every head
    assert (
        '    repos: {nvfp4: {repo: "nvidia/MiniMax-M2.5-NVFP4", kept: ["attention", "router"], '
        'source: "https://huggingface.co/nvidia/MiniMax-M2.5-NVFP4"}}'
    ) in lines


def test_an_nvfp4_cache_is_launched_with_its_dtype():
    done = estimate("--model", "llama-3.1-8b", "--kv", "nvfp4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # head_size / 2 + head_size / 16 bytes per head: 0.5625 a value, 32 layers x 2 x 8 heads x 128
    assert lines[2] == "  KV cache     0.3 GB (0.3 GiB) per GPU (36,864 bytes per token)"
    assert lines[9] == (
        "  vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.92"
        " --max-num-seqs 1 --kv-cache-dtype nvfp4"
    )


def test_multi_token_prediction_layers_are_counted_apart_from_the_weights():
    h = 7168
    mla = h * 1536 + 1536 + 1536 * 128 * 192 + h * (512 + 64) + 512 + 512 * 128 * (128 + 128) + 128 * 128 * h
    indexer = 1536 * 64 * 128 + h * 128 + 2 * 128 + h * 64
    moe = (256 + 1) * 3 * h * 2048 + h * 256 + 256  # routed and shared experts, the router and its bias
    # one decoder layer (two norms), eh_proj (2h to h), enorm, hnorm and the head's norm, its own embedding and head
    layer = mla + indexer + 2 * h + moe + 2 * h * h + 3 * h + 2 * 129280 * h
    found = counted("deepseek-v3.2")
    assert found.mtp == layer == 13_477_385_728
    assert round((found.params + found.mtp) / 1e9) == 685  # DeepSeek's 685B on Hugging Face: main model and MTP module
    assert counted("kimi-k2-instruct").mtp == 0  # num_nextn_predict_layers: 0


def test_unpaged_a_hybrid_s_cache_is_its_tokens_and_its_state_as_a_decode_step_reads_them():
    # the speed engine's figure: no block rounding, one state of its own size per layer
    assert engine.kv_cache_bytes_per_gpu(QWEN35, KV["bf16"], 4096, 2, 1) == 2 * (10 * 2048 * 4096 + 30 * 2_146_304)


def test_nemotron_h_s_experts_are_ungated_and_each_of_its_layers_is_one_block():
    """Nemotron-H's experts are an up and a down projection (squared ReLU), Nemotron 3 Super's in a 1,024-wide latent:
    counted as gated experts of the hidden width they outweighed the whole model, so a decode step read less than
    nothing. Each of its layers is one mixer, so tensor parallelism all-reduces once a layer, not twice; only its
    attention layers attend over the context."""
    config = json.loads((CONFIGS / "nemotron-3-nano-30b-a3b-bf16.json").read_text())
    nano, large = model_from_config(config, LIMITS, "nano", "Nano", "test"), counted("nemotron-3-super-120b-a12b-fp8").arch
    assert (nano.arch.experts.projections, nano.arch.experts.width, nano.arch.blocks_per_layer) == (2, 0, 1)
    assert (large.experts.projections, large.experts.width, large.blocks_per_layer) == (2, 1024, 1)
    assert engine.expert_params(nano.arch) == 23 * 128 * 2 * 2688 * 1856 == 29_374_808_064
    assert engine.expert_params(large) == 40 * 512 * 2 * 1024 * 2688 == 112_742_891_520
    bf16, h100 = RULES.weight_formats["bf16"], CATALOG.gpu("h100-sxm")
    untouched = 2 * 29_374_808_064 * (1 - 6 / 128)  # bytes of the experts one token leaves unread
    assert speed.weight_bytes_read(nano, bf16, 1) == pytest.approx(2 * 31_577_937_344 - untouched, rel=1e-12)
    rules = CATALOG.rules.speed
    step = speed.decode_step(rules, nano, bf16, KV["bf16"], h100, 2, 1, 2048, "vllm")
    ring = 2 * (2 - 1) / 2 * 2688 * rules.activation_bytes / (h100.link.gb_s * 1e9 / 2)
    assert (speed.blocks(nano.arch), step.link_s) == (52, pytest.approx(52 * (ring + rules.efficiency["vllm"].allreduce_link_s), rel=1e-12))
    vllm = rules.efficiency["vllm"]
    assert step.overhead_s == pytest.approx(26 * (vllm.layer_overhead_s + vllm.layer_overhead_moe_s), rel=1e-12)
    assert speed.attention_flops_per_token(nano.arch, 1000) == 4 * 32 * 128 * 6 * 1000  # its 6 attention layers alone
