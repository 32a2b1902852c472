"""The memory engine, with the figures the guides quote and its monotonic properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import memory
from gpumem.records.catalog import Architecture, Attention

from .project import CATALOGS


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOGS)


def test_llama_3_1_70b_kv_cache_per_token_and_at_128k(catalog):
    arch = catalog.model("llama-3.1-70b").arch
    bf16 = catalog.rules.kv_precisions["bf16"]
    assert memory.kv_bytes_per_token(arch, bf16) == 327_680
    assert memory.kv_cache_bytes(arch, bf16, 131_072) == 42_949_672_960
    assert round(memory.kv_cache_gb(arch, bf16, 131_072), 1) == 42.9


def test_fp8_weights_plus_128k_cache_and_four_conversations(catalog):
    arch = catalog.model("llama-3.1-70b").arch
    rules = catalog.rules
    weights = memory.weights_gb(70, rules.precisions["fp8"])
    cache = memory.kv_cache_gb(arch, rules.kv_precisions["bf16"], 131_072)
    assert weights == 70
    assert round(weights + cache, 1) == 112.9
    # The guides' "70 + 4 x 42.9 = 241.6" multiplies a rounded cache; the exact sum is 241.8 GB.
    assert weights + memory.kv_cache_gb(arch, rules.kv_precisions["bf16"], 131_072, 4) == pytest.approx(241.79869184)
    assert round(weights + memory.kv_cache_gb(arch, rules.kv_precisions["bf16"], 131_072, 4), 1) == 241.8


def test_fp8_kv_cache_halves_it(catalog):
    arch = catalog.model("llama-3.1-70b").arch
    rules = catalog.rules
    assert memory.kv_bytes_per_token(arch, rules.kv_precisions["fp8"]) == 163_840


def test_zero_sixteen_bytes_per_parameter(catalog):
    assert memory.fine_tuning_gb(catalog.rules, 7.5, "full") == 120
    assert memory.fine_tuning_gb(catalog.rules, 7.5, "full_hf") == 135


def test_qlora_65b_fits_under_48_gb(catalog):
    need = memory.fine_tuning_gb(catalog.rules, 65, "qlora")
    assert need == pytest.approx(45.5)
    assert need < 48


def test_lora_is_the_16_bit_base_plus_margin(catalog):
    assert memory.fine_tuning_gb(catalog.rules, 8, "lora") == pytest.approx(19.2)


def test_serving_rule_of_thumb(catalog):
    assert memory.serving_gb(catalog.rules, 70, "bf16") == pytest.approx(168)
    assert memory.serving_gb(catalog.rules, 70, "fp8") == pytest.approx(84)
    assert memory.serving_gb(catalog.rules, 70, "int4") == pytest.approx(42)


def test_unknown_fine_tuning_method_is_refused(catalog):
    with pytest.raises(ValueError, match="unknown fine-tuning method 'dpo'"):
        memory.fine_tuning_gb(catalog.rules, 8, "dpo")


@pytest.mark.parametrize(
    ("model_id", "tokens", "expected"),
    [
        # Gemma 2 9B: 21 global layers grow; 21 sliding layers stop at 4,096 tokens.
        ("gemma-2-9b", 1_024, 2 * 8 * 256 * 2 * 42 * 1_024),
        ("gemma-2-9b", 8_192, 2 * 8 * 256 * 2 * (21 * 8_192 + 21 * 4_096)),
        # Gemma 3 27B: 10 global layers, 52 local layers capped at 1,024 tokens.
        ("gemma-3-27b", 131_072, 2 * 16 * 128 * 2 * (10 * 131_072 + 52 * 1_024)),
        # gpt-oss-120b: 18 full layers, 18 sliding layers of 128 tokens.
        ("gpt-oss-120b", 131_072, 2 * 8 * 64 * 2 * (18 * 131_072 + 18 * 128)),
        ("gpt-oss-20b", 100, 2 * 8 * 64 * 2 * 24 * 100),
    ],
)
def test_sliding_window_layers_hold_at_most_their_window(catalog, model_id, tokens, expected):
    arch = catalog.model(model_id).arch
    assert memory.kv_cache_bytes(arch, 2, tokens) == expected


def test_deepseek_v3_mla_caches_61_times_576_elements_per_token(catalog):
    arch = catalog.model("deepseek-v3").arch
    assert memory.kv_elements_per_token_layer(arch) == 576
    assert memory.kv_bytes_per_token(arch, 2) == 61 * 576 * 2 == 70_272
    # The plain formula would count 128 KV heads of 192: 61 x 2 x 128 x 192 x 2 bytes.
    assert memory.kv_bytes_per_token(arch, 2) != 61 * 2 * 128 * 192 * 2


def test_moe_weights_count_total_parameters(catalog):
    model = catalog.model("mixtral-8x7b")
    assert model.is_moe
    assert memory.weights_gb(model.params_b, 2) == pytest.approx(93.405585408)


def test_serving_breakdown_adds_overhead_on_weights_and_cache(catalog):
    rules = catalog.rules
    arch = catalog.model("llama-3.1-70b").arch
    serving = memory.serving_breakdown(rules, arch, 70, "fp8", "bf16", 131_072, 1)
    assert serving.weights == 70
    assert serving.kv_cache == pytest.approx(42.94967296)
    assert serving.total == pytest.approx((70 + 42.94967296) * 1.15)


@pytest.mark.parametrize(
    ("mode", "parts"),
    [
        ("full", (32, 0, 32, 192, 0)),
        ("lora", (32, 0, 0, 6.4, 0)),
        ("qlora", (8, 0, 0, 3.2, 0)),
    ],
)
def test_fine_tuning_modes_split_into_their_parts(catalog, mode, parts):
    arch = catalog.model("llama-3.1-8b").arch
    need = memory.memory_need(catalog.rules, arch, 16, mode, "fp32", "bf16", 8192, 4)
    assert (need.weights, need.kv_cache, need.gradients, need.optimizer, need.overhead) == pytest.approx(parts)
    assert need.total == pytest.approx(sum(parts))


def test_unknown_mode_is_refused(catalog):
    with pytest.raises(ValueError, match="unknown mode 'dpo'"):
        memory.memory_need(catalog.rules, catalog.model("llama-3.1-8b").arch, 8, "dpo", "bf16", "bf16", 1, 1)


architectures = st.builds(
    Architecture,
    layers=st.integers(1, 200),
    heads=st.just(64),
    kv_heads=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
    head_dim=st.integers(16, 512),
    attention=st.one_of(
        st.just(Attention()),
        st.builds(Attention, kind=st.just("mla"), kv_lora_rank=st.integers(1, 1024), qk_rope_head_dim=st.integers(1, 128)),
    ),
)
sizes = st.floats(0.1, 2000, allow_nan=False)
byte_sizes = st.sampled_from([0.5, 1, 2, 4])


@given(a=sizes, b=sizes, width=byte_sizes, margin=st.floats(0, 1))
def test_more_parameters_never_need_less(a, b, width, margin):
    small, big = sorted((a, b))
    assert memory.rule_of_thumb_gb(small, width, margin) <= memory.rule_of_thumb_gb(big, width, margin)
    assert memory.full_fine_tuning_gb(small, 16) <= memory.full_fine_tuning_gb(big, 16)
    assert memory.lora_gb(small, width, margin) <= memory.lora_gb(big, width, margin)


@given(params=sizes, narrow=byte_sizes, wide=byte_sizes)
def test_more_bits_never_need_less(params, narrow, wide):
    narrow, wide = sorted((narrow, wide))
    assert memory.weights_gb(params, narrow) <= memory.weights_gb(params, wide)


@given(
    arch=architectures,
    t1=st.integers(1, 10_000_000),
    t2=st.integers(1, 10_000_000),
    s1=st.integers(1, 256),
    s2=st.integers(1, 256),
)
def test_longer_context_or_more_requests_never_need_less(arch, t1, t2, s1, s2):
    short, long = sorted((t1, t2))
    few, many = sorted((s1, s2))
    assert memory.kv_cache_bytes(arch, 2, short, few) <= memory.kv_cache_bytes(arch, 2, long, few)
    assert memory.kv_cache_bytes(arch, 2, short, few) <= memory.kv_cache_bytes(arch, 2, short, many)


@given(
    layers=st.integers(2, 100),
    window=st.integers(1, 8192),
    t1=st.integers(1, 1_000_000),
    t2=st.integers(1, 1_000_000),
    data=st.data(),
)
def test_sliding_window_cache_grows_with_context_and_stays_under_full(layers, window, t1, t2, data):
    sliding = data.draw(st.integers(1, layers))
    arch = Architecture(layers, 8, 8, 128, Attention("sliding", window=window, sliding_layers=sliding))
    full = Architecture(layers, 8, 8, 128)
    short, long = sorted((t1, t2))
    assert memory.kv_cache_bytes(arch, 2, short) <= memory.kv_cache_bytes(arch, 2, long)
    assert memory.kv_cache_bytes(arch, 2, long) <= memory.kv_cache_bytes(full, 2, long)
