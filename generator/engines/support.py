"""Which engine runs a configuration's formats on a GPU, from rules.yaml's support table.

Pure functions over records: a GPU's compute capability (NVIDIA "8.6", AMD "gfx942") against the
lowest capability, or the gfx targets, the table gives for an engine and a format. A refusal is a
record that names why (the engine, its version, the format, what the card has, what the format
needs and the engine's code that decides); the pages and the commands word it. Where a format's
own engine cannot run it on a card and the table names an equivalent llama.cpp format that can,
`serving` hands back that format, so the caller sizes and times llama.cpp.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpumem.records.catalog import Gpu
from gpumem.records.engines import KvFormat, Reach, SupportRules, WeightFormat

KINDS = ("weights", "kv")


@dataclass(frozen=True)
class Refusal:
    """Why an engine cannot run a format on a GPU."""

    engine: str  # vllm | llama.cpp
    engine_label: str
    version: str
    kind: str  # weights | kv
    format: str  # the format's id
    format_label: str
    gpu: str  # the GPU's id
    gpu_name: str
    has: str  # the GPU's compute capability or gfx target
    needs: str  # the lowest NVIDIA capability that runs it; "" when none does (or the engine does not load it)
    targets: tuple[str, ...]  # the AMD targets that run it
    loaded: bool  # False: the engine does not load the format at all
    source: str


@dataclass(frozen=True)
class Serving:
    """The formats a configuration runs with: the asked weight format, or the equivalent llama.cpp runs."""

    weights: WeightFormat
    refusal: Refusal | None  # why the asked format's engine cannot (None: it can)
    runs: bool  # False: neither the asked format nor an equivalent runs on the card

    @property
    def stands_in(self) -> bool:
        """Whether another engine's format stands in for the one asked."""
        return self.runs and self.refusal is not None


def capability(value: str) -> tuple[int, int]:
    """NVIDIA's "major.minor" as a pair that compares in order: "8.9" < "9.0" < "12.0"."""
    major, minor = value.split(".")
    return int(major), int(minor)


def reach(support: SupportRules, engine: str, kind: str, name: str) -> Reach | None:
    """Where an engine runs a format; None when it does not load it."""
    table = support.weights if kind == "weights" else support.kv
    return table.get(engine, {}).get(name)


def gpu_runs(found: Reach, gpu: Gpu) -> bool:
    """Whether a GPU's capability is among those a format's reach covers."""
    if gpu.vendor == "AMD":
        return gpu.compute_capability in found.amd
    return bool(found.nvidia) and capability(gpu.compute_capability) >= capability(found.nvidia)


def refusal(support: SupportRules, engine: str, kind: str, fmt: WeightFormat | KvFormat, gpu: Gpu) -> Refusal | None:
    """Why `engine` cannot run one format on `gpu`, or None when it can (or the GPU states no capability)."""
    if not gpu.compute_capability:
        return None
    found = reach(support, engine, kind, fmt.name)
    if found is not None and gpu_runs(found, gpu):
        return None
    known = support.engines[engine]
    return Refusal(
        engine=engine,
        engine_label=known.label,
        version=known.version,
        kind=kind,
        format=fmt.name,
        format_label=fmt.label,
        gpu=gpu.id,
        gpu_name=gpu.name,
        has=gpu.compute_capability,
        needs=found.nvidia if found else "",
        targets=found.amd if found else (),
        loaded=found is not None,
        source=found.source if found else known.source,
    )


def runs(support: SupportRules, engine: str, weights: WeightFormat, kv: KvFormat, gpu: Gpu) -> Refusal | None:
    """The first reason `engine` cannot run these weights with this cache on `gpu`: the weights', then the cache's."""
    return refusal(support, engine, "weights", weights, gpu) or refusal(support, engine, "kv", kv, gpu)


def fallback(support: SupportRules, engine: str, weights: WeightFormat, gpu: Gpu) -> str:
    """The slower path an engine runs the weights through on this GPU ("" when its own kernels run them)."""
    found = reach(support, engine, "weights", weights.name)
    if found is None or not found.fallback_below or gpu.vendor == "AMD" or not gpu.compute_capability:
        return ""
    return found.fallback_via if capability(gpu.compute_capability) < capability(found.fallback_below) else ""


def serving(support: SupportRules | None, formats: dict[str, WeightFormat], weights: WeightFormat, kv: KvFormat, gpu: Gpu) -> Serving:
    """The weights a configuration runs with on `gpu`: the asked format on its own engine, else its
    llama.cpp equivalent where that runs with the same cache, else the asked one, refused."""
    if support is None:
        return Serving(weights, None, True)
    why = runs(support, weights.runtime, weights, kv, gpu)
    if why is None:
        return Serving(weights, None, True)
    stand_in = formats.get(support.equivalents.get(weights.name, ""))
    if why.kind == "weights" and stand_in is not None and runs(support, stand_in.runtime, stand_in, kv, gpu) is None:
        return Serving(stand_in, why, True)
    return Serving(weights, why, False)


def left_out(
    support: SupportRules | None, formats: dict[str, WeightFormat], weights: WeightFormat, kv: KvFormat, gpus: Iterable[Gpu]
) -> tuple[Refusal, ...]:
    """Why each of these GPUs is left out, where neither the formats' engine nor a stand-in runs them there: each GPU once,
    by id (as calculator.js lists them)."""
    if support is None:
        return ()
    found: dict[str, Refusal] = {}
    for gpu in gpus:
        served = serving(support, formats, weights, kv, gpu)
        if not served.runs and served.refusal is not None:
            found.setdefault(gpu.id, served.refusal)
    return tuple(found[key] for key in sorted(found))
