"""rules.yaml's speed block: the engines' efficiency factors, the tensor rate of each format, the link constants."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from gpumem.catalog.validate import Entry, Invalid, at_most, citation, describe, fraction, one_of, positive_int, positive_number, text_list
from gpumem.records.engines import Efficiency, SpeedCalibration, SpeedCheck, SpeedPages, SpeedRules

RUNTIMES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp")  # each engine's factors, fitted on its own runs
PHASES = ("bandwidth_gddr", "bandwidth_hbm", "compute", "prefill", "prefill_moe", "prefill_quantized")
EFFICIENCY_FIELDS = (
    *PHASES,
    "layer_overhead_us",
    "layer_overhead_quantized_us",
    "layer_overhead_moe_us",
    "allreduce_link_us",
    "allreduce_pcie_us",
)
TENSOR_RATES = ("bf16", "fp16", "fp8", "fp4", "int8")
LINK_FIELDS = ("pcie_gb_s", "activation_bytes", "source")
PAGE_FIELDS = ("prompt_tokens", "output_tokens", "busy_requests", "kv_format", "guide_formats", "source")
CHECK_FIELDS = ("points", "within", "bound", "mean_error", "worst_error")


def read_speed(top: Entry, sources: dict[str, str], formats: set[str], kv_formats: Collection[str] = ()) -> SpeedRules | None:
    """The speed block of rules.yaml, every constant with its source; `formats` and `kv_formats` are the
    known weight and KV-cache formats. Without `pages` the site shows no speed figure."""
    section = top.section("speed")
    if section is None:
        return None
    section.check_keys(("efficiency", "compute_precision", "link", "pages", "calibration"))
    pages = _pages(section, sources, formats, kv_formats) if "pages" in section.data else None
    calibration = _calibration(section, sources) if "calibration" in section.data else None
    efficiency = _efficiency(section, sources)
    precisions = _compute_precision(section, sources, formats)
    link = section.section("link")
    values: dict[str, Any] = {}
    if link is not None:
        link.check_keys(LINK_FIELDS)
        sources["speed.link"] = link.get("source", citation) or ""
        values.update(
            pcie_gb_s=link.get("pcie_gb_s", _pcie_table),
            activation_bytes=link.get("activation_bytes", at_most(positive_number, 8)),
        )
        section.failed = section.failed or link.failed
    top.failed = top.failed or section.failed
    if section.failed or efficiency is None or precisions is None or any(v is None for v in values.values()):
        return None
    return SpeedRules(
        efficiency=efficiency,
        compute_precision=precisions[0],
        engine_precision=precisions[1],
        pages=pages,
        calibration=calibration,
        **values,
    )


def _pages(section: Entry, sources: dict[str, str], formats: set[str], kv_formats: Collection[str]) -> SpeedPages | None:
    """pages: the load the site's speed figures are stated at, and the inference guide's formats."""
    entry = section.section("pages")
    if entry is None:
        return None
    entry.check_keys(PAGE_FIELDS)
    sources["speed.pages"] = entry.get("source", citation) or ""
    values = {name: entry.get(name, at_most(positive_int, 1_000_000)) for name in PAGE_FIELDS[:3]}
    values["kv_format"] = entry.get("kv_format", one_of(kv_formats or ("bf16",), "KV-cache format"))
    values["guide_formats"] = entry.get("guide_formats", _known_formats(formats))
    section.failed = section.failed or entry.failed
    return None if entry.failed else SpeedPages(**values)


def _calibration(section: Entry, sources: dict[str, str]) -> SpeedCalibration | None:
    """calibration: {engine: {decode: {...}, aggregate: {...}, gpus: [...]}, source}: each engine's error on the
    measurements of a source left out of its fit (docs/measurements/speed.md), and the GPUs it was measured on."""
    entry = section.section("calibration")
    if entry is None:
        return None
    entry.check_keys((*RUNTIMES, "source"))
    sources["speed.calibration"] = entry.get("source", citation) or ""
    engines: dict[str, dict[str, SpeedCheck]] = {}
    measured: dict[str, frozenset[str]] = {}
    for runtime in (name for name in RUNTIMES if name in entry.data):
        table = entry.section(runtime)
        if table is None:
            continue
        table.check_keys(("decode", "aggregate", "gpus"))
        measured[runtime] = frozenset(table.get("gpus", text_list) or ())
        for name in (name for name in ("decode", "aggregate") if name in table.data):
            check = table.section(name)
            if check is None:
                continue
            check.check_keys(CHECK_FIELDS)
            counts = {"points": check.get("points", positive_int), "within": check.get("within", _count)}
            errors = {field: check.get(field, fraction) for field in CHECK_FIELDS[2:4]}
            errors["worst_error"] = check.get("worst_error", at_most(positive_number, 100))
            table.failed = table.failed or check.failed
            if not check.failed:
                engines.setdefault(runtime, {})[name] = SpeedCheck(**counts, **errors)
        entry.failed = entry.failed or table.failed
    section.failed = section.failed or entry.failed
    return None if entry.failed else SpeedCalibration(engines=engines, measured=measured)


def _known_formats(formats: set[str]) -> Callable[[Any], tuple[str, ...]]:
    """A list of weight formats deployment.weight_formats names."""

    def check(value: Any) -> tuple[str, ...]:
        names = text_list(value)
        unknown = [name for name in names if formats and name not in formats]
        if unknown:
            raise Invalid(f"unknown weight format {unknown[0]!r} (not in deployment.weight_formats)")
        return names

    return check


def _efficiency(section: Entry, sources: dict[str, str]) -> dict[str, Efficiency] | None:
    """efficiency: {engine: {bandwidth_gddr, bandwidth_hbm, compute, prefill, prefill_moe, prefill_quantized,
    layer_overhead_us, layer_overhead_quantized_us, layer_overhead_moe_us, allreduce_link_us, allreduce_pcie_us}, ...,
    source}."""
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
        fixed = {"layer_overhead_us": entry.get("layer_overhead_us", _microseconds)}
        # the quantized kernels' time, and for llama.cpp, which splits layers and all-reduces nothing, the all-reduces:
        # a row may leave these out
        fixed.update({name: entry.get(name, _microseconds, required=False, default=0.0) for name in EFFICIENCY_FIELDS[len(PHASES) + 1 :]})
        table.failed = table.failed or entry.failed
        if not entry.failed:
            seconds = {name.removesuffix("_us") + "_s": value / 1e6 for name, value in fixed.items()}
            found[runtime] = Efficiency(**phases, **seconds)
    section.failed = section.failed or table.failed
    return None if table.failed else found


Precisions = dict[str, tuple[str, ...]]


def _compute_precision(section: Entry, sources: dict[str, str], formats: set[str]) -> tuple[Precisions, dict[str, Precisions]] | None:
    """compute_precision: weight format -> the tensor rates it runs at, tried in order (bf16 when the GPU has none);
    by_engine: {engine: {format: rates}}, where an engine's kernels run a format at other rates than the others'."""
    table = section.section("compute_precision")
    if table is None:
        return None
    table.check_keys((*sorted(formats), "by_engine", "source"))
    sources["speed.compute_precision"] = table.get("source", citation) or ""
    found = {str(name): table.get(str(name), _rates) for name in table.data if name not in ("source", "by_engine")}
    by_engine: dict[str, Precisions] = {}
    engines = table.section("by_engine") if "by_engine" in table.data else None
    if engines is not None:
        engines.check_keys(RUNTIMES)
        for runtime in (name for name in RUNTIMES if name in engines.data):
            rates = engines.section(runtime)
            if rates is not None:
                rates.check_keys(sorted(formats))
                by_engine[runtime] = {str(name): rates.get(str(name), _rates) for name in rates.data}
                engines.failed = engines.failed or rates.failed
        table.failed = table.failed or engines.failed
    section.failed = section.failed or table.failed
    return None if table.failed else (found, by_engine)


def _count(value: Any) -> int:
    """How many: zero or a positive integer."""
    return 0 if value == 0 and isinstance(value, int) and not isinstance(value, bool) else positive_int(value)


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
