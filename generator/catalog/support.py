"""rules.yaml's support block: which GPUs each engine runs each weight and KV format on, with its source.

A capability is written as the GPU catalog writes it (gpus.yaml, compute_capability): NVIDIA's
"major.minor" in quotes, AMD's gfx target; every format id must be one of the deployment block's.
"""

from __future__ import annotations

from typing import Any

from gpumem.catalog.deployment import RUNTIMES
from gpumem.catalog.gpus import capability_of
from gpumem.catalog.validate import Entry, Invalid, citation, describe, slug, text
from gpumem.records.engines import DeploymentRules, EnginePin, Reach, SupportRules

REACH_FIELDS = ("nvidia", "amd", "fallback", "source")
NO_GPU = "none"  # nvidia: none, no NVIDIA GPU runs the format


def read_support(
    top: Entry, sources: dict[str, str], deployment: DeploymentRules | None, engines: dict[str, EnginePin] | None
) -> SupportRules | None:
    """The support block, read at the engine versions rules.yaml pins (`engines`); None when it fails (every
    problem reported where it stands)."""
    section = top.section("support")
    if section is None:
        return None
    section.check_keys(("weights", "kv", "equivalents"))
    weights = _tables(section, "weights", set(deployment.weight_formats) if deployment else None, "deployment.weight_formats", sources)
    kv = _tables(section, "kv", set(deployment.kv_formats) if deployment else None, "deployment.kv_formats", sources)
    equivalents = _equivalents(section, weights or {}, deployment)
    unpinned = sorted({*(weights or {}), *(kv or {})} - set(engines or {}))
    for engine in unpinned:
        if engines is not None or "engines" not in top.data:  # a failed engines block was reported where it stands
            top.report(top.data.line_of("support"), "support", f"{engine}: no version pinned for it in the engines block")
    top.failed = top.failed or section.failed
    if section.failed or unpinned or engines is None or weights is None or kv is None:
        return None
    return SupportRules(engines=engines, weights=weights, kv=kv, equivalents=equivalents)


def _tables(section: Entry, name: str, known: set[str] | None, where: str, sources: dict[str, str]) -> dict[str, dict[str, Reach]] | None:
    """weights or kv: engine -> format -> Reach."""
    table = section.section(name)
    if table is None:
        return None
    table.check_keys(RUNTIMES)
    found: dict[str, dict[str, Reach]] = {}
    for engine in RUNTIMES:
        formats = table.section(engine, required=False) if engine in table.data else None
        if formats is None:
            continue
        found[engine] = {}
        for key in formats.data:
            entry = formats.section(str(key))
            if entry is None:
                continue
            if known is not None and key not in known:
                formats.report(formats.data.line_of(key), key, f"unknown format {describe(key)} (not in {where})")
                continue
            reach = _reach(entry)
            sources[f"support.{name}.{engine}.{key}"] = reach.source if reach else ""
            if reach is not None:
                found[engine][str(key)] = reach
            formats.failed = formats.failed or entry.failed
        table.failed = table.failed or formats.failed
    section.failed = section.failed or table.failed
    return None if table.failed else found


def _reach(entry: Entry) -> Reach | None:
    entry.check_keys(REACH_FIELDS)
    nvidia = entry.get("nvidia", _nvidia)
    amd = entry.get("amd", _targets)
    source = entry.get("source", citation)
    below, via = "", ""
    fallback = entry.section("fallback", required=False) if "fallback" in entry.data else None
    if fallback is not None:
        fallback.check_keys(("below", "via"))
        below = fallback.get("below", capability_of("NVIDIA")) or ""
        via = fallback.get("via", text) or ""
        if below and nvidia and _version(below) <= _version(nvidia):
            fallback.report(fallback.data.line_of("below"), "below", f"{below} is not above the lowest capability {nvidia}")
        entry.failed = entry.failed or fallback.failed
    if entry.failed or nvidia is None or amd is None or source is None:
        return None
    return Reach(nvidia=nvidia, amd=amd, source=source, fallback_below=below, fallback_via=via)


def _equivalents(section: Entry, weights: dict[str, dict[str, Reach]], deployment: DeploymentRules | None) -> dict[str, str]:
    """weight format -> the llama.cpp format that runs in its place; both known, the second one llama.cpp's."""
    table = section.section("equivalents", required=False) if "equivalents" in section.data else None
    if table is None:
        return {}
    found = {}
    known = deployment.weight_formats if deployment else {}
    for key in table.data:
        value = table.data[key]
        line = table.data.line_of(key)
        if known and key not in known:
            table.report(line, key, f"unknown weight format {describe(key)} (not in deployment.weight_formats)")
        elif known and (value not in known or known[value].runtime != "llama.cpp"):
            table.report(line, key, f"expected a llama.cpp weight format of deployment.weight_formats, got {describe(value)}")
        elif value not in weights.get("llama.cpp", {}):
            table.report(line, key, f"{value} is not in support.weights.llama.cpp")
        else:
            found[slug(key)] = str(value)
    section.failed = section.failed or table.failed
    return found


def _nvidia(value: Any) -> str:
    if value == NO_GPU:
        return ""
    try:
        return str(capability_of("NVIDIA")(value))
    except Invalid:
        raise Invalid(f'expected a compute capability in quotes like "8.9" or none, got {describe(value)}') from None


def _targets(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise Invalid(f"expected a list of AMD gfx targets like [gfx942], got {describe(value)}")
    return tuple(capability_of("AMD")(item) for item in value)


def _version(capability: str) -> tuple[int, int]:
    major, minor = capability.split(".")
    return int(major), int(minor)
