"""How the speed engine's efficiency factors in rules.yaml were fitted on tests/measurements/speed.yaml.

Each factor is chosen on a grid of 0.01 (the all-reduce latency on a grid of 1 µs) to minimise the
sum of squared log errors (predicted / measured) over every point it acts on, one factor at a time,
repeated until nothing moves. Excluded points are left out of the fit.

Usage: .venv/bin/python -m tests.measurements.fit_speed
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpumem.records.engines import Efficiency, SpeedRules

from .speed_table import catalog, models, points, predicted

# (runtime, factor, which points it is fitted on): engine group, memory kind, checks.
FACTORS: tuple[tuple[str, str, Callable[[dict[str, Any], str], bool]], ...] = (
    ("llama.cpp", "bandwidth_gddr", lambda p, memory: p["check"] == "decode" and memory == "gddr"),
    ("llama.cpp", "bandwidth_hbm", lambda p, memory: p["check"] == "decode" and memory == "hbm"),
    ("llama.cpp", "prefill", lambda p, memory: p["check"] == "prefill"),
    ("vllm", "bandwidth_hbm", lambda p, memory: p["check"] in ("decode", "aggregate")),
    ("vllm", "compute", lambda p, memory: p["check"] == "aggregate"),
    ("vllm", "prefill", lambda p, memory: p["check"] in ("ttft", "aggregate") and not p["moe"]),
    ("vllm", "prefill_moe", lambda p, memory: p["check"] in ("ttft", "aggregate") and p["moe"]),
)


def runtime_of(point: dict[str, Any]) -> str:
    return "llama.cpp" if point["engine"] == "llama.cpp" else "vllm"


def loss(rules: SpeedRules, chosen: list[dict[str, Any]]) -> float:
    found, known = _CATALOG, _MODELS
    return math.fsum(abs(math.log(predicted(p, found, known[p["model_id"]], rules) / float(p["measured"]))) for p in chosen)


def with_factor(rules: SpeedRules, runtime: str, name: str, value: float) -> SpeedRules:
    """The rules with one factor changed; the serving engines' two memory kinds move together."""
    changes = {name: value}
    if runtime == "vllm" and name == "bandwidth_hbm":
        changes["bandwidth_gddr"] = value  # two GDDR points (L40S) are too few to fit apart
    if runtime == "llama.cpp" and name == "prefill":
        # No batched llama.cpp measurement and no MoE prompt one: both take the prefill factor.
        changes.update(compute=value, prefill_moe=value)
    efficiency: Efficiency = replace(rules.efficiency[runtime], **changes)
    return replace(rules, efficiency={**rules.efficiency, runtime: efficiency})


_CATALOG = catalog()
_MODELS = models(_CATALOG)


def fit() -> SpeedRules:
    found = _CATALOG
    rules = found.rules.speed
    assert rules is not None
    usable = [{**p, "moe": _MODELS[p["model_id"]].is_moe} for p in points() if not p.get("excluded")]
    for _ in range(30):
        before = rules
        for runtime, name, picks in FACTORS:
            chosen = [p for p in usable if runtime_of(p) == runtime and picks(p, _memory(found, p))]
            grid = [step / 100 for step in range(10, 96)]
            best = min(grid, key=lambda value: loss(with_factor(rules, runtime, name, value), chosen))
            rules = with_factor(rules, runtime, name, best)
        for runtime in ("llama.cpp", "vllm"):
            chosen = [p for p in usable if runtime_of(p) == runtime and p["check"] in ("decode", "aggregate")]
            overhead = min(range(0, 301, 5), key=lambda us: loss(with_factor(rules, runtime, "layer_overhead_s", us / 1e6), chosen))
            rules = with_factor(rules, runtime, "layer_overhead_s", overhead / 1e6)
        parallel = [p for p in usable if runtime_of(p) == "vllm" and int(p["gpus"]) > 1]
        latency = min(range(0, 101), key=lambda us: loss(replace(rules, allreduce_latency_s=us / 1e6), parallel))
        rules = replace(rules, allreduce_latency_s=latency / 1e6)
        if rules == before:
            break
    return rules


def _memory(found: Any, point: dict[str, Any]) -> str:
    return "hbm" if found.gpu(point["gpu"]).memory_type.upper().startswith("HBM") else "gddr"


if __name__ == "__main__":
    fitted = fit()
    for runtime, factors in fitted.efficiency.items():
        print(runtime, factors)
    print(f"layer overhead µs: {[round(e.layer_overhead_s * 1e6) for e in fitted.efficiency.values()]}")
    print(f"allreduce latency: {fitted.allreduce_latency_s * 1e6:.0f} µs")
