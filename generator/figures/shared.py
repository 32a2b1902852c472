"""Stage 3: the figures every page shares: table cells, the snapshot as configurations to rent
(Shop), and the room a comfortable fit leaves. Language-neutral; knows nothing of templates.

Each page kind's own figures live beside it: figures/guides.py, figures/subjects.py,
figures/calculator.py; figures/site.py gathers them all once per build.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gpumem.engines import memory, sizing
from gpumem.engines.sizing import Choice, Configuration, Market
from gpumem.records.catalog import Architecture, Catalog, Gpu, Model, SizeClass

if TYPE_CHECKING:
    from gpumem.figures.verdicts import Verdict


@dataclass(frozen=True)
class Cell:
    """One figure of a guide table and the configuration that holds it."""

    column: str
    choice: Choice
    verdict: Verdict | None = None  # what the deployment or training model says of choice.best (figures/verdicts.py)

    @property
    def need_gb(self) -> float:
        return self.choice.need_gb

    @property
    def on_one_gpu(self) -> bool:
        """Whether a single GPU on offer holds the figure."""
        best = self.choice.best
        return best is not None and best.total_gpus == 1


@dataclass(frozen=True)
class Row:
    """A size class with its representative model and one cell per column."""

    size: SizeClass
    model: Model
    cells: tuple[Cell, ...]

    def cell(self, column: str) -> Cell:
        return next(c for c in self.cells if c.column == column)


@dataclass(frozen=True)
class Table:
    """A guide table: `kind` is serving or fine_tuning; columns are precisions or methods."""

    kind: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]

    def row(self, label: str) -> Row:
        return next(r for r in self.rows if r.size.label == label)


@dataclass(frozen=True)
class OnOffer:
    """A GPU the pages name and what the snapshot offers of it; when it is not on offer, the nearest GPU that is."""

    gpu: Gpu
    market: Market | None
    nearest: Gpu | None = None
    nearest_market: Market | None = None


@dataclass
class Shop:
    """The snapshot seen as configurations to rent: chooses the smallest that holds a need."""

    catalog: Catalog
    _choices: dict = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """The catalog alone: what it has worked out is remade on demand (and pickles alike however much it has)."""
        return {"catalog": self.catalog}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(catalog=state["catalog"], _choices={})

    @cached_property
    def configurations(self) -> tuple[Configuration, ...]:
        snapshot, rules = self.catalog.snapshot, self.catalog.rules
        return sizing.offered_configurations(self.catalog.gpus, snapshot.offers, rules.gpu_counts)

    @cached_property
    def markets(self) -> dict[str, Market]:
        return sizing.market(self.catalog.snapshot.offers)

    def choose(self, need_gb: float, heads: int | None = None, extra_gb: float = 0.0) -> Choice:
        """Smallest configuration for a need; past the biggest machine, several of them."""
        key = (need_gb, heads, extra_gb)
        if key not in self._choices:
            rules = self.catalog.rules
            free = rules.min_free_fraction
            choice = sizing.smallest_configuration(need_gb, self.configurations, heads=heads, extra_gb=extra_gb, min_free_fraction=free)
            if not choice.options:
                beyond = sizing.multi_machine_configurations(
                    self.catalog.gpus, self.catalog.snapshot.offers, max(rules.gpu_counts), need_gb
                )
                choice = sizing.smallest_configuration(need_gb, (), heads=heads, extra_gb=extra_gb, min_free_fraction=free, beyond=beyond)
                if not choice.options:
                    short = sizing.shortfall(self.catalog.gpus, self.catalog.snapshot.offers, max(rules.gpu_counts), need_gb)
                    choice = dataclasses.replace(choice, short=short)
            self._choices[key] = choice
        return self._choices[key]

    def lowest_price(self, gpu_id: str) -> float | None:
        found = self.markets.get(gpu_id)
        return found.lowest_price if found else None

    def nearest_on_offer(self, gpu: Gpu) -> Gpu | None:
        """The GPU on offer that comes nearest to `gpu`, for text that names a GPU the snapshot lacks.

        Nearest means closest in memory, preferring at least as much: among the other GPUs on
        offer, the one with the least memory at or above `gpu`'s; when none has that much, the one
        with the most memory below it. Equal memory goes to the lower price per GPU-hour, then to
        the catalog id. None only when nothing else is on offer.
        """
        offered = [g for g in self.catalog.gpus if g.id in self.markets and g.id != gpu.id]
        enough = [g for g in offered if g.memory_gb >= gpu.memory_gb]
        if enough:
            return min(enough, key=lambda g: (g.memory_gb, self.markets[g.id].lowest_price, g.id))
        return min(offered, key=lambda g: (-g.memory_gb, self.markets[g.id].lowest_price, g.id), default=None)

    def on_offer(self, gpu: Gpu) -> OnOffer:
        """What the snapshot offers of a GPU; the nearest GPU on offer when it offers none."""
        market = self.markets.get(gpu.id)
        if market is not None:
            return OnOffer(gpu, market)
        nearest = self.nearest_on_offer(gpu)
        return OnOffer(gpu, None, nearest, self.markets[nearest.id] if nearest else None)


def room_gb(catalog: Catalog, arch: Architecture, kv_precision: str, context: int) -> float:
    """Room a comfortable fit leaves: the cache of a few more requests at a context, with overhead."""
    rules = catalog.rules
    cache = memory.kv_cache_gb(arch, rules.kv_precisions[kv_precision], context, rules.comfortable_requests)
    return cache * (1 + rules.runtime_overhead)


def comfort_gb(catalog: Catalog, model: Model) -> float:
    """Room a comfortable fit leaves on the pages: 16-bit cache at the page's context."""
    return room_gb(catalog, model.arch, "bf16", catalog.rules.fit_context)


def page_context(catalog: Catalog, model: Model) -> int:
    """The context the pages size a model at: the rules' context, or the model's own when shorter."""
    return min(catalog.rules.fit_context, model.native_context)


def fits(need_gb: float, gpu: Gpu) -> bool:
    """Whether one such GPU holds the need."""
    return need_gb < gpu.memory_gb  # at 100 % it does not fit


@dataclass(frozen=True)
class Need:
    """A named figure (a precision or a method) and the configuration that holds it."""

    key: str
    gb: float
    choice: Choice
    verdict: Verdict | None = None  # what the deployment or training model says of choice.best (figures/verdicts.py)


def plain_kv_bytes_per_token(model: Model, kv_bytes: float) -> float:
    """What 2 x layers x KV heads x head dim would give, ignoring windows and MLA."""
    arch = model.arch
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * kv_bytes
