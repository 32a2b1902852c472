"""GPU choice: the heads rule, the smallest configuration, its alternatives and price."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import sizing
from gpumem.engines.deployment import DEFAULTS
from gpumem.records.catalog import Gpu, Offer

from .project import CATALOGS


def gpu(gpu_id: str, memory_gb: float) -> Gpu:
    return Gpu(
        gpu_id,
        gpu_id.upper(),
        gpu_id,
        "NVIDIA",
        "datacenter",
        memory_gb,
        "HBM3",
        1.0,
        "SXM",
        "NVLink",
        True,
        2024,
        (),
        "https://example.org/",
    )


def offer(machine: str, gpu_id: str, gpus: int, price: float) -> Offer:
    return Offer(machine, gpu_id, gpus, price, "US", "SXM", "NVLink")


H100, H200, L40S, A6000, RTX = gpu("h100", 80), gpu("h200", 141), gpu("l40s", 48), gpu("a6000", 48), gpu("rtx", 24)
OFFERS = (
    offer("m1", "h100", 8, 2.07),
    offer("m2", "h100", 1, 1.50),
    offer("m3", "h200", 8, 3.44),
    offer("m4", "l40s", 2, 0.44),
    offer("m5", "a6000", 4, 0.49),
    offer("m6", "rtx", 8, 0.38),
)
COUNTS = (1, 2, 4, 8)


def configurations():
    return sizing.offered_configurations((H100, H200, L40S, A6000, RTX), OFFERS, COUNTS)


def test_price_is_n_times_the_lowest_price_among_machines_with_at_least_n():
    found = {(c.gpu.id, c.count): c.price_per_hour for c in configurations()}
    assert found[("h100", 1)] == 1.50
    assert found[("h100", 2)] == pytest.approx(4.14)
    assert found[("l40s", 2)] == pytest.approx(0.88)
    assert ("l40s", 4) not in found
    assert ("a6000", 8) not in found


def test_sixty_four_heads_allow_1_2_4_8_never_3():
    assert sizing.valid_counts((1, 2, 3, 4, 8), 64) == (1, 2, 4, 8)
    assert sizing.valid_counts((1, 2, 3, 4, 8), 40) == (1, 2, 4, 8)
    assert sizing.valid_counts((1, 2, 3, 4, 8), 24) == (1, 2, 3, 4, 8)
    assert sizing.valid_counts((1, 2, 4, 8), 28) == (1, 2, 4)


def test_three_gpus_are_never_chosen_for_64_heads_but_are_for_fine_tuning():
    three = (sizing.Configuration(H100, 3, 6.0), sizing.Configuration(H100, 4, 8.0))
    assert sizing.smallest_configuration(200, three, heads=64).best.count == 4
    assert sizing.smallest_configuration(200, three).best.count == 3


def test_heads_rule_skips_counts_that_do_not_divide():
    choice = sizing.smallest_configuration(150, configurations(), heads=28)
    assert [(c.gpu.id, c.count, c.memory_gb) for c in choice.options] == [("h100", 2, 160)]
    # 600 GB takes 8 x H100 (640 GB), but 28 heads do not split over 8 GPUs.
    assert sizing.smallest_configuration(600, configurations()).best.count == 8
    assert sizing.smallest_configuration(600, configurations(), heads=28).best is None


def test_least_memory_wins_then_fewer_gpus_then_price():
    choice = sizing.smallest_configuration(42, configurations(), heads=64)
    # 48 GB on one GPU beats 2 x 24 GB (same memory, more GPUs); the L40S is cheaper than the A6000.
    assert [(c.gpu.id, c.count) for c in choice.options] == [("l40s", 1), ("a6000", 1)]
    assert choice.best.price_per_hour == 0.44


def test_beyond_one_machine_counts_machines():
    beyond = sizing.multi_machine_configurations((H100, H200), OFFERS, 8, 2000)
    # 2,000 GB takes 2 x 8 x H200 or 4 x 8 x H100, but the snapshot has one 8-GPU machine of each.
    assert beyond == ()
    assert sizing.smallest_configuration(2000, configurations(), beyond=beyond).best is None
    two_h200 = sizing.multi_machine_configurations((H200,), (*OFFERS, offer("m7", "h200", 8, 3.60)), 8, 2000)
    assert [(c.machines, c.price_per_hour) for c in two_h200] == [(2, pytest.approx(8 * (3.44 + 3.60)))]


def test_nothing_on_offer_holds_it():
    assert sizing.smallest_configuration(5000, configurations()).options == ()


def test_tight_when_less_than_free_fraction_or_extra_cache_is_left():
    assert sizing.is_tight(76.8, 80, 0, 0.05)
    assert not sizing.is_tight(70, 80, 0, 0.05)
    assert sizing.is_tight(70, 80, 12, 0.05)


def test_market_summary():
    found = sizing.market(OFFERS)
    assert found["h100"] == sizing.Market("h100", 1.50, 2, 9, (1, 8))
    assert list(found) == ["a6000", "h100", "h200", "l40s", "rtx"]


gpus_strategy = st.lists(st.sampled_from([24, 32, 40, 48, 80, 94, 96, 141, 180, 192, 270]), min_size=1, max_size=6, unique=True)


@st.composite
def markets(draw):
    memories = draw(gpus_strategy)
    gpus = tuple(gpu(f"g{m}", m) for m in memories)
    offers = tuple(
        offer(f"m{i}", draw(st.sampled_from(gpus)).id, draw(st.sampled_from([1, 2, 4, 8])), draw(st.floats(0.05, 20)))
        for i in range(draw(st.integers(1, 12)))
    )
    return gpus, offers


@given(market=markets(), need=st.floats(0.1, 3000), heads=st.sampled_from([None, 24, 28, 32, 40, 64, 128]))
def test_chosen_configuration_holds_the_need_and_nothing_smaller_does(market, need, heads):
    gpus, offers = market
    configurations = sizing.offered_configurations(gpus, offers, COUNTS)
    choice = sizing.smallest_configuration(need, configurations, heads=heads)
    allowed = [c for c in configurations if heads is None or heads % c.count == 0]
    if choice.best is None:
        assert all(c.memory_gb < need for c in allowed)
        return
    best = choice.best
    assert best.memory_gb >= need
    assert heads is None or heads % best.count == 0
    for other in allowed:
        if other.memory_gb < need:
            continue
        assert not other.memory_gb < best.memory_gb
        assert not (other.memory_gb == best.memory_gb and other.count < best.count)
        assert not (other.memory_gb == best.memory_gb and other.count == best.count and other.price_per_hour < best.price_per_hour)
    assert all(o.memory_gb == best.memory_gb and o.count == best.count for o in choice.options)
    assert [o.price_per_hour for o in choice.options] == sorted(o.price_per_hour for o in choice.options)


def test_fits_come_cheapest_first_from_one_plan_per_formats_and_offers():
    """deployment_fits works out which GPUs run the formats once per formats and offers (sizing.remembered_plan) and
    lists the fits cheapest first, then fewer GPUs, then by GPU id: the same as over a fresh list of the offers."""
    catalog = load_catalog(CATALOGS)
    rules = catalog.rules.deployment
    assert rules is not None
    model, fmt, kv = catalog.model("llama-3.1-70b"), rules.weight_formats["awq"], rules.kv_formats["bf16"]
    offered = sizing.offered_configurations(catalog.gpus, catalog.snapshot.offers, catalog.rules.gpu_counts)
    sizing.forget()
    first = sizing.remembered_plan(rules, fmt, kv, offered, catalog.rules.support, DEFAULTS)
    assert sizing.remembered_plan(rules, fmt, kv, offered, catalog.rules.support, DEFAULTS) is first
    assert [p.configuration for p in first] == sorted(
        (p.configuration for p in first), key=lambda c: (c.price_per_hour, c.total_gpus, c.gpu.id)
    )
    kept = sizing.deployment_fits(rules, model, fmt, kv, 8192, 1, offered, 3, catalog.rules.support)
    fresh = sizing.deployment_fits(rules, model, fmt, kv, 8192, 1, list(offered), 3, catalog.rules.support)
    assert kept == fresh and len(kept) > 3
    assert [fit.configuration for fit in kept] == sorted((fit.configuration for fit in kept), key=sizing.cheapest_first)
    sizing.forget()
    assert sizing.remembered_plan(rules, fmt, kv, offered, catalog.rules.support, DEFAULTS) is not first
