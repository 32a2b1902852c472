"""Figures of the two index pages: every catalog model and every catalog GPU in one table each.

The model rows repeat the model pages' own figure for the release format (so the index and the
page a row links to always agree); the GPU rows read the snapshot's market. Language-neutral.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpumem.engines.sizing import Fit, Market
from gpumem.figures.shared import Shop
from gpumem.figures.subjects import format_fit, page_context
from gpumem.figures.verdicts import serving_claim
from gpumem.records.catalog import Catalog, Gpu, Model
from gpumem.records.engines import WeightFormat


@dataclass(frozen=True)
class ModelRow:
    """A model in its release format: one request of `context` tokens, its memory on one GPU
    (the deployment model), and the cheapest configuration on offer that holds it."""

    model: Model
    fmt: WeightFormat
    context: int
    need_gb: float
    fit: Fit | None

    @property
    def claim(self) -> str:
        """What the row's rent link says its configuration holds (figures/verdicts.py)."""
        return serving_claim(self.model, self.fmt, "bf16", self.context, 1)


@dataclass(frozen=True)
class ModelsIndex:
    """Every catalog model, smallest first; `context` is the rules' context a row is sized at
    unless its model's native context is shorter."""

    rows: tuple[ModelRow, ...]
    context: int


@dataclass(frozen=True)
class GpuRow:
    """A GPU and what the snapshot offers of it: its lowest price per GPU-hour and that price per
    GB of memory (None when it is not on offer)."""

    gpu: Gpu
    market: Market | None
    price_per_gb_hour: float | None


@dataclass(frozen=True)
class GpusIndex:
    """Every catalog GPU, least memory first."""

    rows: tuple[GpuRow, ...]


def models_index(catalog: Catalog, shop: Shop) -> ModelsIndex:
    """One row per catalog model from its page's release-format figure (the first of its page's
    formats, subjects.model_page), by size, then name."""
    assert catalog.rules.deployment is not None
    rows = []
    for model in catalog.models:
        release = format_fit(catalog, shop, model, catalog.rules.deployment.weight_formats[model.release])
        rows.append(ModelRow(model, release.fmt, page_context(catalog, model), release.need_gb, release.cheapest))
    return ModelsIndex(tuple(sorted(rows, key=lambda row: (row.model.params_b, row.model.name))), catalog.rules.fit_context)


def gpus_index(gpus: Iterable[Gpu], markets: Mapping[str, Market]) -> GpusIndex:
    """One row per catalog GPU, by memory, then name; price per GB-hour is the lowest price ÷ memory_gb."""
    rows = []
    for gpu in gpus:
        market = markets.get(gpu.id)
        rows.append(GpuRow(gpu, market, market.lowest_price / gpu.memory_gb if market else None))
    return GpusIndex(tuple(sorted(rows, key=lambda row: (row.gpu.memory_gb, row.gpu.name))))
