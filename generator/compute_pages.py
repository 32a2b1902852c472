"""Figures of the generated pages: one per model, one per GPU, and the prices page."""

from __future__ import annotations

from dataclasses import dataclass

from . import memory, sizing
from .compute import Need, OnOffer, Shop, comfort_gb, plain_kv_bytes_per_token
from .records import Catalog, Gpu, Model
from .sizing import Choice, Market


@dataclass(frozen=True)
class ContextFigures:
    """A model at one context length: cache and serving totals for one and several requests."""

    tokens: int
    kv_one_gb: float
    kv_many_gb: float
    serving_one: memory.Breakdown
    serving_many: memory.Breakdown
    choice_one: Choice
    choice_many: Choice


@dataclass(frozen=True)
class ModelPage:
    """Everything a model's page shows."""

    model: Model
    weights: tuple[Need, ...]
    serving: tuple[Need, ...]
    kv_bytes_per_token: float
    plain_kv_bytes_per_token: float
    latent_elements: int
    contexts: tuple[ContextFigures, ...]
    fine_tuning: tuple[Need, ...]
    valid_counts: tuple[int, ...]
    breakdown: memory.Breakdown
    requests: int


def model_page(catalog: Catalog, shop: Shop, model: Model) -> ModelPage:
    """Weights, serving, cache per context, fine-tuning and GPU choices for one model."""
    rules, arch = catalog.rules, model.arch
    kv16 = rules.kv_precisions["bf16"]
    extra = comfort_gb(catalog, model)
    weights = tuple(
        Need(p, memory.weights_gb(model.params_b, b), shop.choose(memory.weights_gb(model.params_b, b), arch.heads))
        for p, b in rules.precisions.items()
    )
    serving = tuple(
        Need(p, need, shop.choose(need, arch.heads, extra))
        for p in rules.serving_precisions
        for need in [memory.serving_gb(rules, model.params_b, p)]
    )
    contexts = []
    for tokens in (t for t in rules.model_contexts if t <= model.native_context):
        one = memory.serving_breakdown(rules, arch, model.params_b, "bf16", "bf16", tokens, 1)
        many = memory.serving_breakdown(rules, arch, model.params_b, "bf16", "bf16", tokens, rules.page_requests)
        contexts.append(
            ContextFigures(
                tokens,
                memory.kv_cache_gb(arch, kv16, tokens),
                memory.kv_cache_gb(arch, kv16, tokens, rules.page_requests),
                one,
                many,
                shop.choose(one.total, arch.heads),
                shop.choose(many.total, arch.heads),
            )
        )
    tuning = tuple(
        Need(m, need, shop.choose(need)) for m in rules.fine_tuning_methods for need in [memory.fine_tuning_gb(rules, model.params_b, m)]
    )
    return ModelPage(
        model=model,
        weights=weights,
        serving=serving,
        kv_bytes_per_token=memory.kv_bytes_per_token(arch, kv16),
        plain_kv_bytes_per_token=plain_kv_bytes_per_token(model, kv16),
        latent_elements=memory.kv_elements_per_token_layer(arch),
        contexts=tuple(contexts),
        fine_tuning=tuning,
        valid_counts=sizing.valid_counts(rules.gpu_counts, arch.heads),
        breakdown=memory.serving_breakdown(rules, arch, model.params_b, "bf16", "bf16", rules.fit_context, 1),
        requests=rules.page_requests,
    )


@dataclass(frozen=True)
class GpuFit:
    """One model at one precision on one GPU (page context, one request)."""

    precision: str
    need_gb: float
    tight: bool
    max_context: int
    requests: int


@dataclass(frozen=True)
class GpuModelRow:
    model: Model
    fits: tuple[GpuFit | None, ...]


@dataclass(frozen=True)
class GpuPage:
    """Everything a GPU's page shows: its market and the catalog models that fit on one card."""

    gpu: Gpu
    market: Market | None
    rows: tuple[GpuModelRow, ...]
    offer: OnOffer | None = None

    @property
    def fitting(self) -> tuple[GpuModelRow, ...]:
        return tuple(row for row in self.rows if any(row.fits))

    @property
    def too_big(self) -> tuple[GpuModelRow, ...]:
        return tuple(row for row in self.rows if not any(row.fits))


def gpu_fit(catalog: Catalog, gpu: Gpu, model: Model, precision: str) -> GpuFit | None:
    """Serving on one card at the page's context: fits, tight, longest context and concurrency."""
    rules, arch = catalog.rules, model.arch
    kv16 = rules.kv_precisions["bf16"]
    serving = memory.serving_breakdown(rules, arch, model.params_b, precision, "bf16", rules.fit_context, 1)
    if serving.total > gpu.memory_gb:
        return None
    budget = (gpu.memory_gb / (1 + rules.runtime_overhead) - serving.weights) * memory.BYTES_PER_GB
    tight = sizing.is_tight(serving.total, gpu.memory_gb, comfort_gb(catalog, model), rules.min_free_fraction)
    return GpuFit(
        precision=precision,
        need_gb=serving.total,
        tight=tight,
        max_context=memory.max_context_tokens(arch, kv16, budget, model.native_context),
        requests=memory.requests_that_fit(arch, kv16, budget, rules.fit_context),
    )


def gpu_page(catalog: Catalog, shop: Shop, gpu: Gpu) -> GpuPage:
    """A GPU's market and, for every catalog model, how it serves on one card."""
    rows = tuple(
        GpuModelRow(model, tuple(gpu_fit(catalog, gpu, model, p) for p in catalog.rules.serving_precisions)) for model in catalog.models
    )
    return GpuPage(gpu, shop.markets.get(gpu.id), rows, shop.on_offer(gpu))


@dataclass(frozen=True)
class PricesPage:
    """The snapshot: every GPU on offer with its lowest price, machines and sizes."""

    rows: tuple[tuple[Gpu, Market], ...]


def prices_page(catalog: Catalog, shop: Shop) -> PricesPage:
    """The GPUs on offer, by memory then lowest price."""
    rows = [(g, shop.markets[g.id]) for g in catalog.gpus if g.id in shop.markets]
    return PricesPage(tuple(sorted(rows, key=lambda row: (row[0].memory_gb, row[1].lowest_price))))
