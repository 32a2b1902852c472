"""rules.yaml's speed block: the engines' efficiency factors, the tensor rate of each format, the link constants."""

from __future__ import annotations

from typing import Any

from .records import Efficiency, SpeedRules
from .validate import Entry, Invalid, at_most, citation, describe, fraction, positive_int, positive_number

RUNTIMES = ("vllm", "llama.cpp")
PHASES = ("bandwidth_gddr", "bandwidth_hbm", "compute", "prefill", "prefill_moe")
EFFICIENCY_FIELDS = (*PHASES, "layer_overhead_us")
TENSOR_RATES = ("bf16", "fp8", "fp4", "int8")
LINK_FIELDS = ("pcie_gb_s", "activation_bytes", "allreduce_latency_us", "source")


def read_speed(top: Entry, sources: dict[str, str], formats: set[str]) -> SpeedRules | None:
    """The speed block of rules.yaml, every constant with its source; `formats` are the known weight formats."""
    section = top.section("speed")
    if section is None:
        return None
    section.check_keys(("efficiency", "compute_precision", "link"))
    efficiency = _efficiency(section, sources)
    precisions = _compute_precision(section, sources, formats)
    link = section.section("link")
    values: dict[str, Any] = {}
    if link is not None:
        link.check_keys(LINK_FIELDS)
        sources["speed.link"] = link.get("source", citation) or ""
        latency = link.get("allreduce_latency_us", _microseconds)
        values.update(
            pcie_gb_s=link.get("pcie_gb_s", _pcie_table),
            activation_bytes=link.get("activation_bytes", at_most(positive_number, 8)),
            allreduce_latency_s=None if latency is None else latency / 1e6,
        )
        section.failed = section.failed or link.failed
    top.failed = top.failed or section.failed
    if section.failed or efficiency is None or precisions is None or any(v is None for v in values.values()):
        return None
    return SpeedRules(efficiency=efficiency, compute_precision=precisions, **values)


def _efficiency(section: Entry, sources: dict[str, str]) -> dict[str, Efficiency] | None:
    """efficiency: {vllm: {bandwidth_gddr, bandwidth_hbm, compute, prefill, prefill_moe, layer_overhead_us}, llama.cpp: {...}, source}."""
    table = section.section("efficiency")
    if table is None:
        return None
    table.check_keys((*RUNTIMES, "source"))
    sources["speed.efficiency"] = table.get("source", citation) or ""
    found: dict[str, Efficiency] = {}
    for runtime in RUNTIMES:
        entry = table.section(runtime)
        if entry is None:
            continue
        entry.check_keys(EFFICIENCY_FIELDS)
        phases = {phase: entry.get(phase, fraction) for phase in PHASES}
        overhead = entry.get("layer_overhead_us", _microseconds)
        table.failed = table.failed or entry.failed
        if not entry.failed:
            found[runtime] = Efficiency(**phases, layer_overhead_s=overhead / 1e6)
    section.failed = section.failed or table.failed
    return None if table.failed else found


def _compute_precision(section: Entry, sources: dict[str, str], formats: set[str]) -> dict[str, tuple[str, ...]] | None:
    """compute_precision: weight format -> the tensor rates it runs at, tried in order (bf16 when the GPU has none)."""
    table = section.section("compute_precision")
    if table is None:
        return None
    table.check_keys((*sorted(formats), "source"))
    sources["speed.compute_precision"] = table.get("source", citation) or ""
    found = {str(name): table.get(str(name), _rates) for name in table.data if name != "source"}
    section.failed = section.failed or table.failed
    return None if table.failed else found


def _microseconds(value: Any) -> float:
    """A fixed time in microseconds: zero or positive, under a hundredth of a second."""
    if value == 0 and not isinstance(value, bool):
        return 0.0
    return float(at_most(positive_number, 10_000)(value))


def _rates(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(item not in TENSOR_RATES for item in value):
        raise Invalid(f"expected a list of tensor rates ({', '.join(TENSOR_RATES)}), got {describe(value)}")
    return tuple(value)


def _pcie_table(value: Any) -> dict[int, float]:
    if not isinstance(value, dict) or not value:
        raise Invalid(f"expected a table of PCIe generation: GB/s, got {describe(value)}")
    return {positive_int(gen): at_most(positive_number, 10_000)(speed) for gen, speed in value.items()}
