"""Figures of the methodology page: every constant of both memory layers, with its source,
and the deployment model against measured logs. Language-neutral: no formatting here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpumem.catalog.links import Source, source
from gpumem.engines import architecture
from gpumem.engines.architecture import LeftOut, ShapeRule
from gpumem.engines.deployment import GIB
from gpumem.figures.measured import BOUNDS, Row, Summary
from gpumem.records.catalog import Catalog, Gpu
from gpumem.records.engines import EnginePin, KvFormat, Reach, WeightFormat

# Below this, a KV check is bytes per token on one GPU; above, a whole cache (llama.cpp's buffers).
PER_TOKEN_LIMIT = 10**7


@dataclass(frozen=True)
class WeightRow:
    fmt: WeightFormat
    source: Source


@dataclass(frozen=True)
class KvRow:
    fmt: KvFormat
    source: Source


@dataclass(frozen=True)
class SupportRow:
    """Where one engine runs formats (rules.yaml, support), with the engine's version and its source: the
    formats that share a rule and its source share a row."""

    engine: str  # the engine's label and version, "vLLM 0.33.0"
    kind: str  # weights | kv
    label: str  # the formats', "GGUF Q8_0, GGUF Q6_K"
    reach: Reach
    source: Source


@dataclass(frozen=True)
class CardMemory:
    """A GPU's memory as its vendor lists it and as the runtime budgets from."""

    gpu: Gpu
    vendor_gb: float
    runtime_gib: float
    logged: bool  # a deviceQuery, torch or nvidia-smi log gave the total; else the vendor's GB read as GiB
    source: Source


@dataclass(frozen=True)
class Check:
    """One measured check as the page shows it: the row, and whether its sizes are bytes per token."""

    row: Row
    per_token: bool
    bound: float


@dataclass(frozen=True)
class PointChecks:
    """A measured point's checks, with the log it was read from."""

    point: str
    url: str
    checks: tuple[Check, ...]


@dataclass(frozen=True)
class MethodologyPage:
    """Everything the methodology page shows."""

    precisions: tuple[tuple[str, float], ...]
    kv_precisions: tuple[tuple[str, float], ...]
    weight_formats: tuple[WeightRow, ...]
    kv_formats: tuple[KvRow, ...]
    cards: tuple[CardMemory, ...]
    sources: tuple[Source, ...]
    checks: tuple[Check, ...]
    summary: tuple[Summary, ...]
    large_card_exceptions: tuple[Gpu, ...]
    has_deployment: bool
    support: tuple[SupportRow, ...] = ()
    utilization: float = 0.0
    non_torch_gib: float = 0.0
    parallel_gib: float = 0.0
    activation_gib: float = 0.0
    sampler_bytes: float = 0.0
    llamacpp_batch: int = 0
    large_card_gib: float = 0.0
    large_batch_tokens: int = 0
    large_batch_sequences: int = 0
    small_batch_tokens: int = 0
    small_batch_sequences: int = 0
    huge_card_gib: float = 0.0
    huge_batch_tokens: int = 0
    huge_batch_sequences: int = 0
    cuda_graph_gib: float = 0.0
    llamacpp_copies: int = 0
    in_flight_batches: int = 0
    engines: tuple[EnginePin, ...] = ()  # the pinned engine versions (rules.yaml, engines)
    estimate: ShapeRule | None = None  # a parameter count's architecture (engines/architecture.py), fitted on the catalog
    estimate_errors: tuple[LeftOut, ...] = ()  # its error on each architecture left out of the fit

    @property
    def estimate_error(self) -> dict[str, LeftOut]:
        """The left-out error by field: layers, hidden and kv_per_token."""
        return {error.field: error for error in self.estimate_errors}

    @property
    def enforced_count(self) -> int:
        return sum(item.count for item in self.summary)

    @property
    def check_count(self) -> int:
        return len(self.checks)

    @property
    def point_count(self) -> int:
        return len(self.points)

    @property
    def points(self) -> tuple[PointChecks, ...]:
        """The checks grouped by measured point, in the file's order."""
        grouped: dict[str, list[Check]] = {}
        for item in self.checks:
            grouped.setdefault(item.row.point, []).append(item)
        return tuple(PointChecks(point, found[0].row.url, tuple(found)) for point, found in grouped.items())


def support_rows(catalog: Catalog, source_of: Callable[[str], Source]) -> tuple[SupportRow, ...]:
    """The support table by engine, then weights before KV formats, in rules.yaml's order; formats with the same
    rule and source in one row, where the first of them stands."""
    table, deployment = catalog.rules.support, catalog.rules.deployment
    if table is None or deployment is None:
        return ()
    rows: dict[tuple[str, str, Reach], list[str]] = {}
    first: dict[tuple[str, str, Reach], str] = {}
    for name, engine in table.engines.items():
        for kind, reaches, labels in (("weights", table.weights, deployment.weight_formats), ("kv", table.kv, deployment.kv_formats)):
            for fmt, reach in reaches.get(name, {}).items():
                key = (f"{engine.label} {engine.version}", kind, reach)
                rows.setdefault(key, []).append(labels[fmt].label)
                first.setdefault(key, f"support.{kind}.{name}.{fmt}")
    return tuple(
        SupportRow(shown, kind, ", ".join(names), reach, source_of(first[shown, kind, reach]))
        for (shown, kind, reach), names in rows.items()
    )


def methodology_page(catalog: Catalog, measured: tuple[Row, ...], summary: tuple[Summary, ...]) -> MethodologyPage:
    """The methodology page's figures, from the rules, the GPUs and the measured checks."""
    rules = catalog.rules
    sources = rules.sources
    deployment = rules.deployment

    def source_of(block: str) -> Source:
        return source(block, sources.get(block, ""), rules.references)

    cards = tuple(
        CardMemory(gpu, gpu.memory_gb, gpu.runtime_bytes / GIB, bool(gpu.visible_bytes), source(gpu.id, gpu.visible_source))
        for gpu in catalog.gpus
    )
    checks = tuple(Check(row, row.check == "kv" and row.measured < PER_TOKEN_LIMIT, BOUNDS[row.check]) for row in measured)
    common: dict[str, Any] = dict(
        precisions=tuple(rules.precisions.items()),
        kv_precisions=tuple(rules.kv_precisions.items()),
        cards=cards,
        # The support table cites its own rules beside them (support_rows): not a second time here.
        sources=tuple(source(block, text, rules.references) for block, text in sources.items() if not block.startswith("support.")),
        checks=checks,
        summary=summary,
        estimate=architecture.catalog_rule(catalog.models),
        estimate_errors=architecture.left_out_errors(architecture.dense_shapes(catalog.models)),
    )
    if deployment is None:
        return MethodologyPage(weight_formats=(), kv_formats=(), large_card_exceptions=(), has_deployment=False, **common)
    known = {gpu.id: gpu for gpu in catalog.gpus}
    return MethodologyPage(
        support=support_rows(catalog, source_of),
        weight_formats=tuple(WeightRow(f, source_of(f"deployment.weight_formats.{n}")) for n, f in deployment.weight_formats.items()),
        kv_formats=tuple(KvRow(f, source_of(f"deployment.kv_formats.{n}")) for n, f in deployment.kv_formats.items()),
        large_card_exceptions=tuple(known[g] for g in deployment.large_card_exceptions if g in known),
        has_deployment=True,
        utilization=deployment.utilization,
        non_torch_gib=deployment.non_torch_bytes / GIB,
        parallel_gib=deployment.parallel_bytes / GIB,
        activation_gib=deployment.activation_bytes / GIB,
        sampler_bytes=deployment.sampler_bytes,
        llamacpp_batch=deployment.llamacpp_batch,
        large_card_gib=deployment.large_card_gib,
        large_batch_tokens=deployment.large_batch_tokens,
        large_batch_sequences=deployment.large_batch_sequences,
        small_batch_tokens=deployment.small_batch_tokens,
        small_batch_sequences=deployment.small_batch_sequences,
        huge_card_gib=deployment.huge_card_gib,
        huge_batch_tokens=deployment.huge_batch_tokens,
        huge_batch_sequences=deployment.huge_batch_sequences,
        cuda_graph_gib=deployment.cuda_graph_bytes / GIB,
        llamacpp_copies=deployment.llamacpp_copies,
        in_flight_batches=deployment.in_flight_batches,
        engines=tuple(rules.engines.values()),
        **common,
    )
