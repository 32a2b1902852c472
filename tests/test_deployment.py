"""The deployment engine (layer 2): formats, tensor parallelism, KV per GPU, runtime, and measured logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpumem.catalog.hf_config import count, model_from_config
from gpumem.catalog.inputs import load_catalog
from gpumem.catalog.validate import Invalid
from gpumem.engines import deployment as engine
from gpumem.engines import llamacpp
from gpumem.figures.measured import BOUNDS
from gpumem.records.catalog import Architecture, Attention

from .measurements.compare import DOC, all_rows, points, table
from .project import CATALOGS

CATALOG = load_catalog(CATALOGS)
RULES = CATALOG.rules.deployment
LIMITS = CATALOG.rules.calculator_limits
assert RULES is not None
FORMATS, KV = RULES.weight_formats, RULES.kv_formats
GIB = 2**30


def test_weights_by_storage_format():
    llama = CATALOG.model("llama-3.1-8b")  # 8,030,261,248 parameters, 1,050,673,152 in embeddings and lm_head
    assert engine.embedding_params(llama.arch) == 2 * 128256 * 4096
    assert engine.weights_bytes(llama, FORMATS["bf16"]) == 16_060_522_496
    assert engine.weights_bytes(llama, FORMATS["fp8"]) == 6_979_588_096 + 2 * 1_050_673_152
    assert engine.weights_bytes(llama, FORMATS["awq"]) == pytest.approx(6_979_588_096 * 4.15625 / 8 + 2 * 1_050_673_152)
    assert engine.weights_bytes(llama, FORMATS["q4_k_m"]) == 4_912_898_048  # tensor by tensor (tests/test_gguf.py)


def test_mxfp4_quantizes_only_the_padded_experts():
    oss = CATALOG.model("gpt-oss-20b")
    experts = 24 * 32 * 3 * 2880 * 2880
    assert engine.expert_params(oss.arch) == experts
    assert engine.expert_params(oss.arch, pad_to=256) == 24 * 32 * 3 * 2880 * 3072
    rest = 20_914_757_184 - experts
    assert engine.weights_bytes(oss, FORMATS["mxfp4"]) == pytest.approx(experts * 3072 / 2880 * 4.25 / 8 + 2 * rest)


def test_a_vision_tower_stays_at_16_bits():
    gemma = CATALOG.model("gemma-3-27b")
    kept = engine.embedding_params(gemma.arch) + 0.42e9
    assert engine.weights_bytes(gemma, FORMATS["fp8"]) == pytest.approx((27.43e9 - kept) + 2 * kept)


@pytest.mark.parametrize(
    "heads, kv_heads, valid",
    [(64, 8, (1, 2, 4, 8)), (40, 10, (1, 2)), (40, 8, (1, 2, 4, 8)), (32, 32, (1, 2, 4, 8)), (128, 128, (1, 2, 4, 8)), (28, 4, (1, 2, 4))],
)
def test_tensor_parallel_sizes_vllm_accepts(heads, kv_heads, valid):
    """Phi-4's 40 heads and 10 KV heads start on 1 or 2 GPUs only (vllm-project/vllm#16021)."""
    arch = Architecture(40, heads, kv_heads, 128)
    assert engine.valid_gpu_counts(arch, (1, 2, 4, 8)) == valid


def test_kv_heads_split_then_replicate():
    arch = Architecture(80, 64, 8, 128)  # Llama 3.1 70B: 327,680 bytes per token in BF16
    assert [engine.kv_bytes_per_token_per_gpu(arch, KV["bf16"], n) for n in (1, 2, 4, 8)] == [327_680, 163_840, 81_920, 40_960]
    qwen = Architecture(28, 28, 4, 128)
    assert engine.kv_heads_per_gpu(qwen, 8) == 1.0  # 4 KV heads on 8 GPUs: one replicated head each
    assert engine.kv_bytes_per_token_per_gpu(qwen, KV["bf16"], 8) == 2 * 28 * 1 * 128 * 2


def test_the_mla_latent_is_whole_on_every_gpu():
    """DeepSeek-V3, 8 requests of 131,072 tokens on 8 GPUs: 73.7 GB on each GPU, 589.5 GB in all."""
    arch = CATALOG.model("deepseek-v3").arch
    per_gpu = engine.kv_cache_bytes_per_gpu(arch, KV["bf16"], 131_072, 8, 8)
    assert per_gpu == 61 * 576 * 2 * 131_072 * 8 == 73_685_532_672
    assert per_gpu * 8 / 1e9 == pytest.approx(589.48, abs=0.01)


def test_vllm_pads_hybrid_layer_groups_and_llamacpp_does_not():
    gemma3 = Architecture(62, 32, 16, 128, Attention("sliding", window=1024, sliding_layers=52))
    assert engine.layer_slots(gemma3, "vllm") == (10, 60, 0)
    assert engine.layer_slots(gemma3, "llama.cpp") == (10, 52, 0)
    oss = Architecture(24, 64, 8, 64, Attention("sliding", window=128, sliding_layers=12))
    assert engine.layer_slots(oss, "vllm") == (12, 12, 0)
    assert engine.kv_cache_bytes_per_gpu(oss, KV["bf16"], 8192, 1, 1) == 2 * 8 * 64 * 2 * (12 * 8192 + 12 * 128)


def test_runtime_memory_and_batch_defaults():
    llama = CATALOG.model("llama-3.1-8b").arch
    h100 = 81559 * 2**20
    assert engine.batch_defaults(RULES, h100, "h100-sxm") == engine.Batch(8192, 1024)
    assert engine.batch_defaults(RULES, 81920 * 2**20, "a100-80gb-sxm") == engine.Batch(2048, 256)
    assert engine.batch_defaults(RULES, 24564 * 2**20, "rtx-4090") == engine.Batch(2048, 256)
    one = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["bf16"], 1, engine.Batch(8192, 1024), 8192, 1)
    assert one == pytest.approx(0.25 * GIB + 0.38 * GIB + 13.67 * 1024 * 128256)
    two = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["bf16"], 2, engine.Batch(8192, 1024), 8192, 1)
    assert two - one == pytest.approx(1.85 * GIB)
    # llama-server, -fa on, 512-token micro-batch: the mask (8,192 cells x 512 tokens x 2 B), the residual
    # stream (512 x 4,096 x 4 B) and the feed-forward's gate, up and product (512 x 3 x 14,336 x 4 B)
    gguf = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["q4_k_m"], 1, engine.Batch(2048, 256), 8192, 1)
    assert gguf == 0.25 * GIB + 8192 * 512 * 2 + 512 * 4096 * 4 + 512 * 3 * 14336 * 4 == 0.25 * GIB + 104_857_600
    # on several GPUs: 4 pipeline copies of the inputs (mask and hidden state), and no NCCL buffers
    gguf_two = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["q4_k_m"], 2, engine.Batch(2048, 256), 8192, 1)
    assert gguf_two == 0.25 * GIB + 4 * (8192 * 512 * 2 + 512 * 4096 * 4) + 512 * 4096 * 4 + 512 * 3 * 14336 * 4
    assert gguf_two - gguf == 58_720_256


def test_llamacpp_reserves_one_output_row_per_slot_and_each_slot_s_cells():
    """Four slots of 8,192 tokens: the mask is each slot's 8,192 cells for the 512 tokens; the logits are 4 rows,
    far below a layer's live tensors. One slot of 256 tokens: a 256-token micro-batch over 256 cells."""
    llama = CATALOG.model("llama-3.1-8b").arch
    four = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["q4_k_m"], 1, engine.Batch(2048, 256), 8192, 4)
    assert four == 0.25 * GIB + 104_857_600
    short = engine.runtime_bytes_per_gpu(RULES, llama, FORMATS["q4_k_m"], 1, engine.Batch(2048, 256), 256, 1)
    assert short == 0.25 * GIB + 256 * 256 * 2 + 256 * 4096 * 4 + 256 * 3 * 14336 * 4 == 0.25 * GIB + 48_365_568


def test_llamacpp_compute_buffers_by_flash_attention_experts_mla_and_output():
    """Without flash attention every head's scores over the cells dominate (Qwen3-30B-A3B: 32 heads x 16,384
    cells x 512 tokens x 4 B, plus a 32-bit mask); MoE layers hold each chosen expert; MLA attends in its latent
    space; with every token output (older builds) the logits dominate."""
    qwen = CATALOG.model("qwen3-30b-a3b").arch  # 2,048 wide, 32 heads of 128, 8 of 128 experts of 768
    off = llamacpp.Graph(16384, 1, 512, 512, flash_attention=False)
    scores = 32 * 16384 + 2 * 32 * 128
    assert llamacpp.compute_bytes(qwen, off) == 16384 * 512 * 4 + 512 * 2048 * 4 + 512 * scores * 4 == 1_128_267_776
    # the chosen experts' products with the outputs of their down projections, 8 x 768 + 8 x 2,048 per token
    assert llamacpp.compute_bytes(qwen, llamacpp.Graph(16384, 1, 512, 1)) == 16384 * 512 * 2 + 512 * (2048 + 8 * 768 + 8 * 2048) * 4
    deepseek = CATALOG.model("deepseek-v3").arch  # 128 heads, latent 512 + 64 rope; 8 experts of 2,048 chosen
    attention = 128 * 576 + 128 * 512  # the query and the output in the latent, wider than the projections
    assert llamacpp.attention_elements(deepseek, llamacpp.Graph(4096, 1, 512, 1)) == attention
    assert llamacpp.feed_forward_elements(deepseek) == 8 * 2048 + 8 * 7168  # wider than the 3 dense layers' 3 x 18,432
    every = llamacpp.Graph(8192, 1, 512, 512)
    assert llamacpp.compute_bytes(llama_arch(), every) == 512 * (128256 + 4096) * 4 == 271_056_896
    assert llamacpp.compute_bytes(llama_arch(), every, output_layer=False) == 104_857_600


def test_llamacpp_sliding_layers_hold_the_window_and_one_micro_batch():
    """Gemma 2 9B (4,096-token window, 21 of 42 layers): 4,096 + 512 cells, padded to 4,608; a cache never larger
    than the context (2,000 tokens: 2,048 cells)."""
    gemma = CATALOG.model("gemma-2-9b").arch
    assert llamacpp.sliding_cells(gemma, 8192, 512) == 4608
    assert llamacpp.sliding_cells(gemma, 2000, 512) == 2048
    cache = engine.kv_cache_bytes_per_gpu(gemma, KV["q8_0"], 8192, 1, 1, "llama.cpp", 512)
    assert cache == 2 * 8 * 256 * 1.0625 * (21 * 8192 + 21 * 4608)


def llama_arch() -> Architecture:
    return CATALOG.model("llama-3.1-8b").arch


def test_the_largest_cards_take_the_largest_batch():
    b200 = 183359 * 2**20  # 179.06 GiB
    h200 = 143771 * 2**20  # 140.4 GiB
    assert engine.batch_defaults(RULES, b200, "b200") == engine.Batch(16384, 1024)
    assert engine.batch_defaults(RULES, h200, "h200") == engine.Batch(8192, 1024)
    assert engine.batch_defaults(RULES, 160 * GIB, "any") == engine.Batch(16384, 1024)
    assert engine.batch_defaults(RULES, 160 * GIB - 1, "any") == engine.Batch(8192, 1024)


def test_the_cuda_graph_estimate_is_taken_unless_eager_and_only_by_vllm():
    llama = CATALOG.model("llama-3.1-8b")
    graphs = engine.deployment(RULES, llama, FORMATS["bf16"], KV["bf16"], 1, 8192, 1, engine.Batch(8192, 1024))
    eager = engine.deployment(RULES, llama, FORMATS["bf16"], KV["bf16"], 1, 8192, 1, engine.Batch(8192, 1024, cuda_graphs=False))
    gguf = engine.deployment(RULES, llama, FORMATS["q4_k_m"], KV["q8_0"], 1, 8192, 1, engine.Batch(8192, 1024))
    assert graphs.graph_bytes_per_gpu == 0.36 * GIB
    assert eager.graph_bytes_per_gpu == 0.0 == gguf.graph_bytes_per_gpu
    assert graphs.total_bytes_per_gpu - eager.total_bytes_per_gpu == pytest.approx(0.36 * GIB)


def test_vllm_reserves_window_minus_one_plus_the_steps_in_flight_per_sliding_layer():
    """Gemma 2 27B (46 layers, half of them sliding over 4,096 tokens) at 8,192 tokens on an H100; async
    scheduling keeps 2 steps of max_num_batched_tokens in flight (rules.yaml deployment.batch.in_flight)."""
    gemma = CATALOG.model("gemma-2-27b")
    h100 = engine.batch_defaults(RULES, 81559 * 2**20, "h100-sxm")
    need = engine.deployment(RULES, gemma, FORMATS["bf16"], KV["bf16"], 1, 8192, 1, h100)
    assert need.kv_cache_bytes_per_gpu == 46 * 8192 * 2 * 16 * 128 * 2  # min(4095 + 2 x 8192, 8192): every token
    assert round(need.kv_cache_bytes_per_gpu / 1e9, 2) == 3.09
    window_only = engine.kv_cache_bytes_per_gpu(gemma.arch, KV["bf16"], 8192, 1, 1)
    assert round(window_only / 1e9, 2) == 2.32  # what the layers read, and what the model reserved before
    small = engine.deployment(RULES, gemma, FORMATS["bf16"], KV["bf16"], 1, 32768, 1, engine.Batch(2048, 256))
    assert small.kv_cache_bytes_per_gpu == (23 * 32768 + 23 * (4096 - 1 + 2 * 2048)) * 2 * 16 * 128 * 2
    gguf = engine.deployment(RULES, gemma, FORMATS["q4_k_m"], KV["bf16"], 1, 8192, 1, h100)
    # llama.cpp keeps the window and one 512-token micro-batch, padded to 256 cells: 4,608
    assert gguf.kv_cache_bytes_per_gpu == (23 * 8192 + 23 * 4608) * 2 * 16 * 128 * 2 == 2_411_724_800


def test_vllm_refuses_to_start_when_one_request_of_max_model_len_does_not_fit():
    llama = CATALOG.model("llama-3.1-8b")
    rtx_4090 = 24564 * 2**20
    batch = engine.batch_defaults(RULES, rtx_4090, "rtx-4090")
    native = engine.deployment(RULES, llama, FORMATS["bf16"], KV["bf16"], 1, 131072, 1, batch)
    short = engine.deployment(RULES, llama, FORMATS["bf16"], KV["bf16"], 1, 8192, 1, batch)
    missing = engine.startup_refusal(native, 1, RULES, rtx_4090)
    available = 0.92 * rtx_4090 - native.weights_bytes_per_gpu - native.runtime_bytes_per_gpu - 0.36 * GIB
    assert missing == pytest.approx(131072 * 131072 - available)
    assert round(missing / GIB, 2) == 10.3
    assert engine.startup_refusal(short, 1, RULES, rtx_4090) == 0.0


def test_a_deployment_fits_within_the_utilization_of_the_card():
    llama = CATALOG.model("llama-3.1-8b")
    h100 = 81559 * 2**20
    need = engine.deployment(RULES, llama, FORMATS["bf16"], KV["bf16"], 1, 8192, 10, engine.Batch(8192, 1024))
    parts = need.weights_bytes_per_gpu + need.runtime_bytes_per_gpu + need.graph_bytes_per_gpu + need.kv_cache_bytes_per_gpu
    assert need.total_bytes_per_gpu == parts
    assert need.kv_cache_bytes_per_gpu == 131_072 * 8192 * 10
    assert engine.budget_bytes(RULES, h100) == 0.92 * h100
    assert engine.budget_bytes(RULES, h100, 0.95) == 0.95 * h100
    assert engine.fits(need, RULES, h100)
    assert not engine.fits(need, RULES, need.total_bytes_per_gpu / 0.92 - 1)


# Configs: parameters counted as transformers creates them.


@pytest.mark.parametrize("model", CATALOG.models, ids=lambda m: m.id)
def test_configs_count_the_catalog_parameters_exactly(model):
    counted = count(json.loads((Path(__file__).parent / "fixtures/hf_configs" / f"{model.id}.json").read_text()), LIMITS)
    if model.id == "gemma-3-27b":  # the catalog rounds the vision tower: 27.43 B
        assert (counted.params + counted.vision) / 1e9 == pytest.approx(27.43, abs=0.005)
    else:
        assert counted.params == round(model.params_b * 1e9)
    assert counted.arch.layers == model.arch.layers and counted.arch.kv_heads == model.arch.kv_heads
    assert counted.arch.attention == model.arch.attention
    if model.active_params_b and not model.id.startswith("gpt-oss"):  # OpenAI's card leaves out the input embedding
        assert counted.active == round(model.active_params_b * 1e9)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"model_type": "bert"}, 'model_type: "bert" is not an architecture gpumem counts (expected one of llama, mistral, '),
        ({"model_type": "llama", "hidden_size": 4096}, "num_hidden_layers: expected a positive integer, got nothing"),
        (
            {"model_type": "qwen2", "hidden_size": 0, "num_hidden_layers": 2, "vocab_size": 5},
            "hidden_size: expected a positive integer, got 0",
        ),
        ([], "expected a JSON object (a config.json)"),
    ],
)
def test_a_config_it_cannot_count_is_an_error_naming_the_field(config, message):
    with pytest.raises(Invalid) as raised:
        count(config, LIMITS)
    assert str(raised.value).startswith(message)


def test_a_drafted_model_carries_release_format_and_vision():
    config = json.loads((Path(__file__).parent / "fixtures/hf_configs/gemma-3-27b.json").read_text())
    model = model_from_config(config, LIMITS, "my-gemma", "My Gemma", "https://huggingface.co/google/gemma-3-27b-it")
    assert (model.size_label, model.release, round(model.vision_params_b, 3)) == ("27B", "bf16", 0.423)
    oss = json.loads((Path(__file__).parent / "fixtures/hf_configs/gpt-oss-20b.json").read_text())
    assert model_from_config(oss, LIMITS, "oss", "oss", "https://huggingface.co/openai/gpt-oss-20b").release == "mxfp4"


# Measured logs: issue 10's bounds on every point that is not set aside with a reason.


def test_at_least_40_measured_points_with_sources_and_coverage():
    measured = points()
    assert len(measured) >= 40
    assert all(p["url"].startswith("https://") and p["quote"].strip() for p in measured)
    enforced = [row for row in all_rows() if not row.excluded]
    by_check = {check: [row for row in enforced if row.check == check] for check in BOUNDS}
    assert {check: len(rows) >= 10 for check, rows in by_check.items()} == {
        "weights": True,
        "kv": True,
        "runtime": True,
        "compute": False,
        "state": False,
        "concurrency": False,
    }
    # issue 23's new kinds: llama.cpp's recurrent buffer in 3 logs of 3 threads, vLLM's concurrency for Gated DeltaNet
    # (2 runs), Mamba-2 (Nemotron-H: 2 engines of one job), chunked local attention (1 run), DeepSeek sparse attention
    # (GLM-5.1, 1 run) and Gemma 4's full layers of their own size (1 run), and the KV of the attention layers alone in 2
    # hybrid logs
    assert len(by_check["state"]) == 3 and len({row.url for row in by_check["state"]}) == 3
    assert sorted(row.point for row in by_check["concurrency"]) == [
        "vllm-cascade2-30b-a3b-nvfp4-h100-mamba2-async",
        "vllm-cascade2-30b-a3b-nvfp4-h100-mamba2-sync",
        "vllm-gemma4-31b-bf16-b300-sliding",
        "vllm-glm-5.1-fp8-tp8-h200-dsa",
        "vllm-llama4-scout-tp8-h200-chunked",
        "vllm-qwen36-35b-a3b-nvfp4-5090-club3090-612",
        "vllm-qwen36-35b-a3b-nvfp4-5090-club3090-652",
    ]
    assert {"qwen3.6-27b", "qwen3.6-35b-a3b", "qwen3-next-80b-a3b", "llama-4-scout", "glm-5.1", "gemma-4-31b"} <= {
        p["arch"] for p in measured
    }
    # llama.cpp's compute buffer: 5 GPUs in 4 logs from 3 threads, with and without flash attention, 1 and 2 GPUs
    assert len(by_check["compute"]) == 5 and len({row.url for row in by_check["compute"]}) == 3
    quantized = {p["weights"] for p in measured} & {"fp8", "int8", "awq", "gptq", "nf4", "mxfp4", "q4_k_m", "q8_0", "q6_k", "q4_0"}
    assert len(quantized) >= 4
    assert any(p["gpus"] > 1 for p in measured)
    archs = {p["arch"] for p in measured}
    assert {"gemma-2-9b", "gemma-3-27b", "gpt-oss-20b"} <= archs  # sliding window
    assert {"mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b"} <= archs  # mixture of experts
    assert {"deepseek-v2-lite", "deepseek-v3"} <= archs  # MLA
    assert all(reason for p in measured for reason in p.get("not_enforced", {}).values())


@pytest.mark.parametrize(
    "row", [row for row in all_rows() if not row.excluded], ids=lambda row: "-".join(filter(None, (row.point, row.check, row.device)))
)
def test_the_engine_is_within_the_bounds_of_each_measured_point(row):
    assert abs(row.error) <= BOUNDS[row.check], f"{row.point} {row.check}: {row.error:+.1%}"


def test_the_error_table_lists_every_check():
    text = table(all_rows())
    assert len([line for line in text.splitlines() if line.startswith("| ")]) == len(all_rows()) + 1  # the header, then one per check
    assert text.startswith("- weights: 57 enforced points")


def test_the_docs_show_the_current_table():
    assert DOC.committed() == table(all_rows()), DOC.stale()
