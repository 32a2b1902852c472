"""gpus.yaml: one typed Gpu per entry, its form factor, GPU-to-GPU link and dense throughput as data."""

from __future__ import annotations

import re
from typing import Any

from gpumem.catalog.validate import (
    Entry,
    Invalid,
    at_most,
    boolean,
    citation,
    describe,
    entries,
    one_of,
    positive_int,
    positive_number,
    prose,
    slug,
    text,
    text_list,
    unique,
    url,
)
from gpumem.errors import Problems
from gpumem.records.catalog import FormFactor, Gpu, Link

GPU_FIELDS = (
    "id name full_name vendor segment memory_gb memory_type dense_tflops throughput_source notes visible_bytes "
    "visible_source bandwidth_tb_s form_factor link fp8 compute_capability capability_source year aliases source"
).split()
FORM_FACTORS = ("pcie", "sxm", "oam", "superchip")
LINKS = ("nvlink", "nvlink-bridge", "infinity-fabric", "pcie")
# dense TFLOPS (TOPS for int8), bf16 required; fp16: FP16 with FP16 accumulate, where the vendor lists it above bf16's
PRECISIONS = ("bf16", "fp16", "fp8", "fp4", "int8")
PCIE_GENERATIONS = (3, 4, 5, 6)
NVIDIA_CAPABILITY = re.compile(r"[1-9][0-9]?\.[0-9]")  # CUDA's compute capability, major.minor: "8.6", "10.0"
AMD_TARGET = re.compile(r"gfx[0-9]{2,3}[0-9a-f]")  # the LLVM target ROCm builds for: gfx90a, gfx942, gfx950


def read_gpus(data: Any, path: str, problems: Problems) -> tuple[Gpu, ...]:
    """gpus.yaml: one typed Gpu per entry; ids and aliases are unique across the file."""
    gpus: list[Gpu] = []
    seen: dict[Any, int] = {}
    names: dict[Any, int] = {}
    for item, ident in entries(data, "gpus", path, problems):
        entry = Entry(problems, path, item, ident)
        entry.check_keys(GPU_FIELDS)
        gpu_id = entry.get("id", slug)
        unique(entry, "id", gpu_id, seen)
        aliases = entry.get("aliases", text_list, default=())
        for alias in aliases or ():
            unique(entry, "aliases", alias.lower(), names)
        fields = dict(
            name=entry.get("name", text),
            full_name=entry.get("full_name", text),
            vendor=entry.get("vendor", text),
            segment=entry.get("segment", one_of(("consumer", "workstation", "datacenter"), "segment")),
            memory_gb=entry.get("memory_gb", at_most(positive_number, 10_000)),
            memory_type=entry.get("memory_type", text),
            bandwidth_tb_s=entry.get("bandwidth_tb_s", at_most(positive_number, 1_000)),
            form_factor=read_form_factor(entry),
            link=read_link(entry),
            dense_tflops=read_throughput(entry),
            throughput_source=entry.get("throughput_source", url),
            notes=entry.get("notes", prose, required=False, default=""),
            fp8=entry.get("fp8", boolean),
            compute_capability=entry.get("compute_capability", capability_of(item.get("vendor"))),
            capability_source=entry.get("capability_source", url),
            year=entry.get("year", at_most(positive_int, 2_100)),
            source=entry.get("source", url),
            visible_bytes=entry.get("visible_bytes", at_most(positive_int, 10**14), required=False, default=0),
            visible_source=entry.get("visible_source", citation, required="visible_bytes" in item, default=""),
        )
        _check_fp8(entry, fields["fp8"], fields["dense_tflops"])
        if not entry.failed:
            gpus.append(Gpu(id=gpu_id, aliases=aliases, **fields))
    return tuple(gpus)


def read_form_factor(entry: Entry) -> FormFactor | None:
    """form_factor: {kind, pcie_gen, slots}; a PCIe card states its generation, only a card its slots."""
    section = entry.section("form_factor")
    if section is None:
        return None
    section.check_keys(("kind", "pcie_gen", "slots"))
    kind = section.get("kind", one_of(FORM_FACTORS, "form factor"))
    gen = section.get("pcie_gen", _pcie_generation, required=kind == "pcie", default=0)
    slots = section.get("slots", at_most(positive_int, 4), required=False, default=0)
    if slots and kind != "pcie":
        section.report(section.data.line_of("slots"), "slots", f"only a PCIe card has slots, got kind {kind}")
    entry.failed = entry.failed or section.failed
    return None if section.failed else FormFactor(kind, gen, slots)


def read_link(entry: Entry) -> Link | None:
    """link: {kind, generation, gb_s, gpus, p2p, p2p_source}; gb_s per GPU with both directions summed, gpus for a
    bridge only, p2p (with its source) for PCIe cards only."""
    section = entry.section("link")
    if section is None:
        return None
    section.check_keys(("kind", "generation", "gb_s", "gpus", "p2p", "p2p_source"))
    kind = section.get("kind", one_of(LINKS, "link kind"))
    generation = section.get("generation", _generation, required=False, default="")
    gb_s = section.get("gb_s", at_most(positive_number, 100_000))
    bridge = kind == "nvlink-bridge"
    gpus = section.get("gpus", at_most(positive_int, 8), required=bridge, default=0)
    if gpus and not bridge:
        section.report(section.data.line_of("gpus"), "gpus", f"only a bridge joins a fixed number of GPUs, got kind {kind}")
    p2p = section.get("p2p", boolean, required=False, default=None)
    p2p_source = section.get("p2p_source", url, required=p2p is not None, default="")
    if p2p is not None and kind != "pcie":
        section.report(section.data.line_of("p2p"), "p2p", f"peer access over PCIe is stated for PCIe cards only, got kind {kind}")
    entry.failed = entry.failed or section.failed
    return None if section.failed else Link(kind, generation, gb_s, gpus, p2p, p2p_source or "")


def read_throughput(entry: Entry) -> dict[str, float]:
    """dense_tflops: {bf16, fp16, fp8, fp4, int8}, the vendor's dense peaks (no sparsity); bf16 is required."""
    section = entry.section("dense_tflops")
    if section is None:
        return {}
    section.check_keys(PRECISIONS)
    given = [name for name in PRECISIONS if name in section.data or name == "bf16"]
    found = {name: section.get(name, at_most(positive_number, 1_000_000), required=name == "bf16") for name in given}
    entry.failed = entry.failed or section.failed
    return {} if section.failed else found


def _check_fp8(entry: Entry, fp8: bool | None, dense: dict[str, float]) -> None:
    if fp8 is None or entry.failed or fp8 == ("fp8" in dense):
        return
    if fp8:
        entry.report(entry.data.line_of("fp8"), "fp8", "true, but dense_tflops gives no fp8 rate")
    else:
        entry.report(entry.data.line_of("fp8"), "fp8", "false, but dense_tflops gives an fp8 rate")


def capability_of(vendor: Any) -> Any:
    """The check of a GPU's compute_capability: NVIDIA's "major.minor" in quotes, AMD's gfx target."""

    def check(value: Any) -> str:
        if vendor == "AMD":
            if not isinstance(value, str) or not AMD_TARGET.fullmatch(value):
                raise Invalid(f'expected an AMD gfx target like "gfx942", got {describe(value)}')
        elif not isinstance(value, str) or not NVIDIA_CAPABILITY.fullmatch(value):
            raise Invalid(f'expected a compute capability in quotes like "8.6", got {describe(value)}')
        return value

    return check


def _pcie_generation(value: Any) -> int:
    if isinstance(value, bool) or value not in PCIE_GENERATIONS:
        raise Invalid(f"expected a PCIe generation ({', '.join(map(str, PCIE_GENERATIONS))}), got {describe(value)}")
    return int(value)


def _generation(value: Any) -> str:
    if not isinstance(value, str) or not value.isdigit() or len(value) > 2:
        raise Invalid(f'expected a generation number in quotes like "4", got {describe(value)}')
    return value
