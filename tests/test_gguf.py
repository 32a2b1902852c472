"""GGUF files tensor by tensor (engines/gguf.py): llama.cpp's type per tensor at 0c1e57098, checked against the sizes
llama.cpp itself printed for published files of dense, mixture-of-experts and MLA models, and the calculator's copy
(config.js) against the Python engine. The architectures are written here from each model's config.json (fixture
data, not the catalog)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import gguf as gguf_py
import pytest

from gpumem.engines import gguf
from gpumem.records.catalog import Architecture, Attention, Experts, State

GIB = 2**30

# From each model's config.json (Hugging Face): layers, heads, KV heads, head dim, hidden, vocab, intermediate.
QWEN25_7B = Architecture(28, 28, 4, 128, hidden=3584, vocab=152064, intermediate=18944)
LLAMA31_8B = Architecture(32, 32, 8, 128, hidden=4096, vocab=128256, intermediate=14336)
LLAMA31_70B = Architecture(80, 64, 8, 128, hidden=8192, vocab=128256, intermediate=28672)
LLAMA32_1B = Architecture(16, 32, 8, 64, hidden=2048, vocab=128256, tied_embeddings=True, intermediate=8192)
MIXTRAL = Architecture(32, 32, 8, 128, hidden=4096, vocab=32000, intermediate=14336, experts=Experts(8, 2, 14336))
MIXTRAL_22B = Architecture(56, 48, 8, 128, hidden=6144, vocab=32768, intermediate=16384, experts=Experts(8, 2, 16384))
QWEN3_30B = Architecture(48, 32, 4, 128, hidden=2048, vocab=151936, intermediate=6144, experts=Experts(128, 8, 768))
MLA = Attention("mla", kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536, v_head_dim=128)
DEEPSEEK_V3 = Architecture(61, 128, 128, 192, MLA, 7168, 129280, False, 18432, Experts(256, 8, 2048, 1, 3))
LITE = Attention("mla", kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128)  # DeepSeek-V2-Lite: no q_lora_rank
DEEPSEEK_V2_LITE = Architecture(27, 16, 16, 192, LITE, 2048, 102400, False, 10944, Experts(64, 6, 1408, 2, 1))
PHI3_MINI = Architecture(32, 32, 32, 96, Attention(fused_qkv=True), 3072, 32064, False, 8192)
HYBRID = Architecture(
    48,
    16,
    2,
    256,
    hidden=2048,
    vocab=151936,
    intermediate=5120,
    experts=Experts(512, 10, 512, 1),
    state=State("gated-deltanet", 36, 24576, 524288),
)
# Gemma 4 (text_config of tests/fixtures/hf_configs/gemma-4-31b-it-nvfp4.json and gemma-4-26b-a4b.json, Google's
# configs as NVIDIA's release and aiconfigurator keep them): in the 31B, 50 sliding layers of 16 KV
# heads of 256 and 10 full layers of 4 KV heads of 512 whose keys are the values; the 26B-A4B's dense MLP of 2,112
# beside 128 experts of 704 in each of its 30 layers. Parameters: the language model without the vision tower and its
# embedder (tests/test_gemma4.py), which llama.cpp converts into a file of its own (mmproj).
GEMMA4_31B = Architecture(
    60, 32, 16, 256, Attention("sliding", 1024, 50, global_kv_heads=4, global_head_dim=512), 5376, 262144, True, 21504
)
GEMMA4_26B = Architecture(
    30, 16, 8, 256, Attention("sliding", 1024, 25, global_kv_heads=2, global_head_dim=512), 2816, 262144, True, 2112, Experts(128, 8, 704)
)
# Their parameters: the published counts (transformers' count on the meta device, as the catalog's entries).
PARAMS = {
    "qwen2.5-7b": 7_615_616_512,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.2-1b": 1_235_814_400,
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_620_634_112 + 2 * 768 * 6144,  # the Instruct-v0.1's vocabulary of 32,768 (the base's: 32,000)
    "qwen3-30b-a3b": 30_532_122_624,
    "deepseek-v3": 671_026_419_200,
    "deepseek-v2-lite": 15_706_484_224,
    "phi-3-mini": 3_821_079_552,
    "qwen3-next-80b-a3b": 79_674_391_296,
    "gemma-4-31b": 30_697_345_280,
    "gemma-4-26b-a4b": 25_233_141_760,
}
ARCHS = {
    "qwen2.5-7b": QWEN25_7B,
    "llama-3.1-8b": LLAMA31_8B,
    "llama-3.1-70b": LLAMA31_70B,
    "llama-3.2-1b": LLAMA32_1B,
    "mixtral-8x7b": MIXTRAL,
    "mixtral-8x22b": MIXTRAL_22B,
    "qwen3-30b-a3b": QWEN3_30B,
    "deepseek-v3": DEEPSEEK_V3,
    "deepseek-v2-lite": DEEPSEEK_V2_LITE,
    "phi-3-mini": PHI3_MINI,
    "qwen3-next-80b-a3b": HYBRID,
    "gemma-4-31b": GEMMA4_31B,
    "gemma-4-26b-a4b": GEMMA4_26B,
}


def size(model: str, file_type: str) -> int:
    return gguf.file_bytes(ARCHS[model], file_type, PARAMS[model])


def test_the_block_types_are_gguf_pys():
    """ggml's blocks as the gguf package the project installs defines them (GGML_QUANT_SIZES)."""
    for name, blocks in gguf.BLOCKS.items():
        assert gguf_py.GGML_QUANT_SIZES[gguf_py.GGMLQuantizationType[name]] == blocks, name


def test_qwen2_5_7b_q4_k_m_to_the_byte():
    """llama.cpp's tools/llama-bench/README.md L330 at 0c1e57098: "model_filename":
    "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf", "model_type": "qwen2 7B Q4_K - Medium", "model_size": 4677120000,
    "model_n_params": 7615616512 (model_size: the sum of the tensors' bytes, llama_model_size)."""
    assert size("qwen2.5-7b", "Q4_K_M") == 4_677_120_000


@pytest.mark.parametrize(
    "model, file_type, gib, source",
    [
        # llama.cpp benches/mac-m2-ultra/mac-m2-ultra.md at 0c1e57098 (PR #15616): "| qwen2 7B Q8_0 | 7.54 GiB |"
        ("qwen2.5-7b", "Q8_0", 7.54, "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF"),
        # the same file: "| qwen3moe 30B.A3B Q8_0 | 30.25 GiB |"
        ("qwen3-30b-a3b", "Q8_0", 30.25, "ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF"),
        # llama-bench tables: "| qwen3moe 30B.A3B Q4_K - Medium | 17.28 GiB | 30.53 B |"
        ("qwen3-30b-a3b", "Q4_K_M", 17.28, "llama-bench"),
        # llama-bench, build 067de93: "| llama 8x7B Q4_K - Medium | 26.49 GiB | 46.70 B |"
        ("mixtral-8x7b", "Q4_K_M", 26.49, "llama-bench 067de93"),
        # llama.cpp PR #4406 (https://github.com/ggml-org/llama.cpp/pull/4406, 2023-12-16): Q6_K 35.74 GiB, Q8_0 46.22 GiB
        ("mixtral-8x7b", "Q6_K", 35.74, "llama.cpp#4406"),
        ("mixtral-8x7b", "Q8_0", 46.22, "llama.cpp#4406"),
        # mozilla-ai/llamafile#569: "| Mixtral-8x22B-Instruct-v0.1.Q6_K | 107.61 GiB |"
        ("mixtral-8x22b", "Q6_K", 107.61, "llamafile#569"),
        # llama-bench: "| llama 70B Q4_K - Medium | 39.59 GiB | 70.55 B |" (Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf)
        ("llama-3.1-70b", "Q4_K_M", 39.59, "llama-bench"),
        # llama-bench: "| deepseek2 16B Q4_K - Medium | 9.65 GiB | 15.71 B |" (DeepSeek-Coder-V2-Lite-Instruct-Q4_K_M.gguf)
        ("deepseek-v2-lite", "Q4_K_M", 9.65, "llama-bench"),
        # https://www.reddit.com/r/LocalLLaMA/comments/1uao1pk/some_llamacpp_b70_sycl_benchmarks/ (build dd4623a74):
        # "gemma4 26B.A4B Q8_0 25.00 GiB 25.23 B SYCL -1 pp512 1332.35 ± 8.80"
        ("gemma-4-26b-a4b", "Q8_0", 25.00, "reddit r/LocalLLaMA 1uao1pk"),
        # https://arkprojects.space/wiki/AMD_GFX906/pcie-lnk-speed, MODEL=unsloth/gemma-4-31B-it-GGUF:Q8_0 (llama.cpp
        # b9119): "x8 1.0	gemma4 31B Q8_0	30.38 GiB	30.70 B	ROCm	99	2048	tensor	1	pp2048	285.30 ± 0.03"
        ("gemma-4-31b", "Q8_0", 30.38, "arkprojects.space AMD_GFX906/pcie-lnk-speed"),
        # "R9700 Benchmark Results (AMD Radeon GFX1201)", llama.cpp build 073bb2c, llama-bench -m
        # ~/.lmstudio/models/lmstudio-community/gemma-4-31B-it-GGUF/gemma-4-31B-it-Q4_K_M.gguf (and the 26B-A4B's):
        # "| gemma4 31B Q4_K - Medium       |  17.39 GiB |    30.70 B | ROCm       |  99 |  1 |          pp1024 |"
        # "| gemma4 26B.A4B Q4_K - Medium   |  15.63 GiB |    25.23 B | ROCm       |  99 |  1 |          pp1024 |"
        # (a public repository's Markdown, whose repository and address the search index does not give)
        ("gemma-4-31b", "Q4_K_M", 17.39, "llama-bench 073bb2c, lmstudio-community Q4_K_M"),
        ("gemma-4-26b-a4b", "Q4_K_M", 15.63, "llama-bench 073bb2c, lmstudio-community Q4_K_M"),
        # "Measurements, ProArt PX13 — 22 August 2026", llama.cpp b10577 (54ee5ee), gemma-4-31B_q4_0-it.gguf and
        # gemma-4-26B_q4_0-it.gguf: "| gemma4 31B Q4_0                |  16.42 GiB |    30.70 B | Vulkan     | 999 |"
        # "| gemma4 26B.A4B Q4_0            |  13.43 GiB |    25.23 B | Vulkan     | 999 |" (likewise without address)
        ("gemma-4-31b", "Q4_0", 16.42, "llama-bench b10577, q4_0-it"),
        ("gemma-4-26b-a4b", "Q4_0", 13.43, "llama-bench b10577, q4_0-it"),
    ],
)
def test_published_files_to_the_hundredth_of_a_gib(model: str, file_type: str, gib: float, source: str):
    """llama.cpp prints a file's tensor bytes in GiB to two decimals (llama-model-loader.cpp: file size)."""
    assert round(size(model, file_type) / GIB, 2) == gib, source


def test_llama_3_8b_in_the_quantize_table():
    """tools/quantize/quantize.cpp L36-L70 at 0c1e57098 gives each file type's Llama-3-8B file in GiB (the header's
    ~7 MiB of vocabulary included): Q2_K 2.96, Q3_K_M 3.74, Q4_K_M 4.58, Q5_K_M 5.33, Q6_K 6.14, Q8_0 7.96."""
    tensors = {t: round(size("llama-3.1-8b", t) / GIB, 3) for t in ("Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")}
    assert tensors == {"Q2_K": 2.953, "Q3_K_M": 3.736, "Q4_K_M": 4.575, "Q5_K_M": 5.332, "Q6_K": 6.136, "Q8_0": 7.947}


def test_deepseek_r1_q4_k_m_is_within_a_fiftieth_of_a_percent():
    """ik_llama.cpp#259 (https://github.com/ikawrakow/ik_llama.cpp/pull/259, unsloth/DeepSeek-R1-GGUF): "| deepseek2
    671B Q4_K - Medium | 376.65 GiB | 671.03 B |". That file predates llama.cpp's split of attn_kv_b into attn_k_b and
    attn_v_b (PR #12801) and was typed by an older build; the pinned converter and quantizer give 376.71 GiB."""
    bytes_ = size("deepseek-v3", "Q4_K_M")
    assert bytes_ == 404_488_847_360 and round(bytes_ / GIB, 2) == 376.71
    assert abs(bytes_ / GIB / 376.65 - 1) < 0.0002


def test_the_types_each_role_gets():
    types = Counter(kind for _, kind in gguf.typed(LLAMA31_8B, "Q4_K_M"))
    assert types == {"Q4_K": 193, "Q6_K": 33}  # half the layers' attn_v and ffn_down (16 + 16) and the output head
    assert gguf.more_bits(3, 32) and gguf.more_bits(6, 32) and not gguf.more_bits(4, 32) and gguf.more_bits(28, 32)
    # Mixtral's eight experts: attn_v and attn_k in Q8_0, attn_output in Q5_K (llama-quant.cpp L599-L610, L671-L677)
    first = {t.role: kind for t, kind in gguf.typed(MIXTRAL, "Q4_K_M") if t.layer == 4}
    assert first == {
        "attn_q": "Q4_K",
        "attn_k": "Q8_0",
        "attn_v": "Q8_0",
        "attn_output": "Q5_K",
        "float": "F32",
        "ffn_gate": "Q4_K",
        "ffn_up": "Q4_K",
        "ffn_down": "Q4_K",
    }
    # DeepSeek-V2-Lite: expert rows of 1,408 and attn_k_b's of 128 are no multiple of 256 (Q4_K falls back to Q5_0)
    lite = [(t.role, t.row, kind) for t, kind in gguf.typed(DEEPSEEK_V2_LITE, "Q4_K_M") if t.layer == 2]
    assert lite == [
        ("attn_q", 2048, "Q4_K"),
        ("other", 2048, "Q4_K"),
        ("other", 128, "Q5_0"),
        ("other", 512, "Q4_K"),
        ("attn_output", 2048, "Q4_K"),
        ("float", 2048, "F32"),
        ("ffn_gate", 2048, "Q4_K"),
        ("ffn_up", 2048, "Q4_K"),
        ("ffn_down", 1408, "Q8_0"),
        ("ffn_gate", 2048, "Q4_K"),
        ("ffn_up", 2048, "Q4_K"),
        ("ffn_down", 2816, "Q6_K"),  # the two shared experts' 2,816 is a multiple of 256
    ]
    # tied embeddings take the output head's Q6_K; the 70B rule lifts attn_v from Q4_K to Q5_K
    assert gguf.typed(LLAMA32_1B, "Q4_K_M")[0][1] == "Q6_K"
    assert {kind for t, kind in gguf.typed(LLAMA31_70B, "Q4_K_M") if t.role == "attn_v"} == {"Q5_K", "Q6_K"}
    # Phi-3's fused attn_qkv is value-like (half of it in Q6_K), and counts as one tensor per layer
    assert Counter(kind for t, kind in gguf.typed(PHI3_MINI, "Q4_K_M") if t.role == "attn_v") == {"Q6_K": 16, "Q4_K": 16}


def test_a_hybrid_puts_its_state_layers_at_the_default_type():
    """Qwen3-Next: 12 attention layers of 48; the state layers' projections (what the matrices leave) in Q4_K."""
    matrices = gguf.typed(HYBRID, "Q4_K_M")
    assert sum(1 for t, _ in matrices if t.role == "attn_v") == 12
    counted = sum(t.rows * t.row for t, _ in matrices)
    rest = PARAMS["qwen3-next-80b-a3b"] - counted
    # 36 Gated DeltaNet layers' in_proj_qkvz, in_proj_ba and out_proj; the gated queries' second half; then norms,
    # convolutions and the rest of the one-dimensional tensors
    assert rest == 36 * (2048 * 12288 + 2048 * 64 + 4096 * 2048) + 12 * 2048 * 4096 + 1_489_664
    assert size("qwen3-next-80b-a3b", "Q4_K_M") == sum(gguf.tensor_bytes(k, t) for t, k in matrices) + rest * 144 // 256


NEMOTRON_NANO = Architecture(
    52,
    32,
    2,
    128,
    hidden=2688,
    vocab=131072,
    intermediate=1856,
    experts=Experts(128, 6, 1856, 1, 29),
    state=State("mamba2", 23, 18432, 524288),
)
PARAMS["nemotron-3-nano"] = 31_577_937_344
ARCHS["nemotron-3-nano"] = NEMOTRON_NANO


def test_nemotron_h_is_its_embeddings_and_head_then_the_default_type():
    """Nemotron-H's layers are each Mamba-2, attention or an ungated MoE block, which the record does not lay out. Its
    hidden size, 2,688, is no multiple of 256: the output head takes Q8_0 (L500), the embeddings and the rest, rows of
    the hidden size, fall back to Q5_0."""
    assert [(t.role, kind) for t, kind in gguf.typed(NEMOTRON_NANO, "Q4_K_M")] == [("token_embd", "Q5_0"), ("output", "Q8_0")]
    rest = PARAMS["nemotron-3-nano"] - 2 * 2688 * 131072
    assert size("nemotron-3-nano", "Q4_K_M") == 2688 * 131072 // 32 * (22 + 34) + rest * 22 // 32  # rows of 2,688: Q5_0


def test_gemma4_lays_each_layer_at_its_own_shapes():
    """src/models/gemma4.cpp at 0c1e57098: a full layer's attn_q and attn_output of 32 heads of 512, its attn_k of 4
    heads of 512 and no attn_v (its keys are the values); a sliding layer's of 256 with an attn_v; the dense MLP in
    every layer, beside the 26B-A4B's router and experts. 411 matrices in the 31B (60 layers, 50 attn_v, embeddings)."""
    layout = [(t.role, t.row, t.rows) for t, _ in gguf.typed(GEMMA4_31B, "Q4_K_M") if t.layer in (4, 5)]
    sliding = [("attn_q", 5376, 8192), ("attn_k", 5376, 4096), ("attn_v", 5376, 4096), ("attn_output", 8192, 5376)]
    full = [("attn_q", 5376, 16384), ("attn_k", 5376, 2048), ("attn_output", 16384, 5376)]
    mlp = [("ffn_gate", 5376, 21504), ("ffn_up", 5376, 21504), ("ffn_down", 21504, 5376)]
    assert layout == sliding + mlp + full + mlp
    assert [layer for layer in range(60) if gguf.full_layer(GEMMA4_31B, layer)] == list(range(5, 60, 6))
    assert len(gguf.typed(GEMMA4_31B, "Q4_K_M")) == 411
    assert sum(1 for t, _ in gguf.typed(GEMMA4_31B, "Q4_K_M") if t.role == "attn_v") == 50
    # the 26B-A4B: rows of 704 and 2,112 are no multiple of 256, so Q4_K falls back to Q5_0 and Q6_K to Q8_0
    moe = [(t.role, t.row, t.rows, kind) for t, kind in gguf.typed(GEMMA4_26B, "Q4_K_M") if t.layer == 29]
    assert moe == [
        ("attn_q", 2816, 8192, "Q4_K"),
        ("attn_k", 2816, 1024, "Q4_K"),
        ("attn_output", 8192, 2816, "Q4_K"),
        ("ffn_gate", 2816, 2112, "Q4_K"),
        ("ffn_up", 2816, 2112, "Q4_K"),
        ("ffn_down", 2112, 2816, "Q8_0"),
        ("float", 2816, 128, "F32"),
        ("ffn_gate", 2816, 128 * 704, "Q4_K"),
        ("ffn_up", 2816, 128 * 704, "Q4_K"),
        ("ffn_down", 704, 2816 * 128, "Q8_0"),
    ]
    # what the matrices leave in F32 is the norms alone: four per layer and the final one, and each layer's q and k norms
    rest = PARAMS["gemma-4-31b"] - sum(t.rows * t.row for t, _ in gguf.typed(GEMMA4_31B, "Q8_0"))
    assert rest == 60 * 4 * 5376 + 5376 + 50 * 2 * 256 + 10 * 2 * 512


def test_without_k_eq_v_gemma4_s_full_layers_keep_an_attn_v():
    variant = dataclasses.replace(GEMMA4_31B, attention=Attention("sliding", 1024, 50, global_head_dim=512))
    full = [(t.role, t.rows) for t, _ in gguf.typed(variant, "Q8_0") if t.layer == 59 and t.role.startswith("attn")]
    assert full == [("attn_q", 16384), ("attn_k", 8192), ("attn_v", 8192), ("attn_output", 5376)]


def test_the_routed_experts_bytes():
    """What a decode step that touches none of a layer's experts does not read (engines/speed.weight_bytes_read)."""
    experts = gguf.expert_bytes(QWEN3_30B, "Q8_0")
    assert experts == 48 * 3 * 128 * 768 * 2048 // 32 * 34
    assert gguf.expert_bytes(LLAMA31_8B, "Q8_0") == 0


def js_state(arch: Architecture, params: int) -> dict:
    """The calculator's state of a model of this architecture (calculator.js validate's arch), as config.js reads it."""
    a, e = arch.attention, arch.experts
    attention: dict = {"kind": a.kind, "window": a.window, "slidingLayers": a.sliding_layers, "latent": a.kv_lora_rank + a.qk_rope_head_dim}
    attention.update({"rank": a.kv_lora_rank, "vDim": a.v_head_dim} if a.kind == "mla" else {})
    attention.update({"qLora": a.q_lora_rank} if a.q_lora_rank else {}, **({"fused": 1} if a.fused_qkv else {}))
    attention.update({"globalKvHeads": a.global_kv_heads} if a.global_kv_heads else {})
    attention.update({"globalHeadDim": a.global_head_dim} if a.global_head_dim else {})
    experts = e and {
        "count": e.count,
        "active": e.active,
        "intermediate": e.intermediate,
        "shared": e.shared,
        "denseLayers": e.dense_layers,
    }
    js_arch = {"layers": arch.layers, "heads": arch.heads, "kvHeads": arch.kv_heads, "headDim": arch.head_dim, "attention": attention}
    js_arch.update(hidden=arch.hidden, vocab=arch.vocab, tied=arch.tied_embeddings, intermediate=arch.intermediate, experts=experts)
    js_arch["state"] = arch.state and {
        "kind": arch.state.kind,
        "layers": arch.state.layers,
        "conv": arch.state.conv,
        "recurrent": arch.state.recurrent,
    }
    return {"arch": js_arch, "params": params / 1e9, "vision": 0}


def test_config_js_counts_every_file_type_as_python(scripts):
    """The calculator counts a model with no preset figures itself (config.js ggufBytes): the same bytes, to the byte."""
    names = sorted(ARCHS)
    states = [js_state(ARCHS[name], PARAMS[name]) for name in names]
    got = scripts.evaluate(
        """(states) => {
            const data = JSON.parse(CALCULATOR_DATA), formats = Object.keys(data.weightFormats).filter(k => data.weightFormats[k].fileType);
            return states.map(s => formats.map(k => [k, window.gpumemConfig.ggufBytes(data, s, data.weightFormats[k])]));
        }""",
        states,
    )
    fixture = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q5_k_m": "Q5_K_M", "q4_k_m": "Q4_K_M", "q4_0": "Q4_0", "q3_k_m": "Q3_K_M", "q2_k": "Q2_K"}
    for name, rows in zip(names, got, strict=True):
        assert {format_name for format_name, _ in rows} == set(fixture), name
        for format_name, (file, experts) in rows:
            file_type = fixture[format_name]
            assert file == size(name, file_type), (name, file_type)
            assert experts == gguf.expert_bytes(ARCHS[name], file_type), (name, file_type)
