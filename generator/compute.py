"""Stage 3: precompute every figure the pages show, language-neutral.

Uses the memory engine and sizing; knows nothing of templates or formatting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from . import memory, sizing
from .records import Catalog, Gpu, Model, SizeClass
from .sizing import Choice, Configuration, Market


@dataclass(frozen=True)
class Cell:
    """One figure of a guide table and the configuration that holds it."""

    column: str
    choice: Choice

    @property
    def need_gb(self) -> float:
        return self.choice.need_gb


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


@dataclass
class Shop:
    """The snapshot seen as configurations to rent: chooses the smallest that holds a need."""

    catalog: Catalog
    _choices: dict = field(default_factory=dict)

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
            fit = dict(heads=heads, extra_gb=extra_gb, min_free_fraction=rules.min_free_fraction)
            choice = sizing.smallest_configuration(need_gb, self.configurations, **fit)
            if not choice.options:
                beyond = sizing.multi_machine_configurations(
                    self.catalog.gpus, self.catalog.snapshot.offers, max(rules.gpu_counts), need_gb
                )
                choice = sizing.smallest_configuration(need_gb, (), beyond=beyond, **fit)
            self._choices[key] = choice
        return self._choices[key]

    def lowest_price(self, gpu_id: str) -> float | None:
        found = self.markets.get(gpu_id)
        return found.lowest_price if found else None


def comfort_gb(catalog: Catalog, model: Model) -> float:
    """Cache a comfortable fit leaves room for: a few more requests at the page's context."""
    rules = catalog.rules
    cache = memory.kv_cache_gb(model.arch, rules.kv_precisions["bf16"], rules.fit_context, rules.comfortable_requests)
    return cache * (1 + rules.runtime_overhead)


def serving_table(catalog: Catalog, shop: Shop) -> Table:
    """Rule-of-thumb serving memory per size class and precision, with GPU and price."""
    rules = catalog.rules
    rows = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        extra = comfort_gb(catalog, model)
        cells = tuple(
            Cell(p, shop.choose(memory.serving_gb(rules, size.size_b, p), model.arch.heads, extra))
            for p in rules.serving_precisions
        )
        rows.append(Row(size, model, cells))
    return Table("serving", rules.serving_precisions, tuple(rows))


def fine_tuning_table(catalog: Catalog, shop: Shop) -> Table:
    """Fine-tuning memory per size class and method (activations excluded); no heads rule."""
    rules = catalog.rules
    rows = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        cells = tuple(Cell(m, shop.choose(memory.fine_tuning_gb(rules, size.size_b, m))) for m in rules.fine_tuning_methods)
        rows.append(Row(size, model, cells))
    return Table("fine_tuning", rules.fine_tuning_methods, tuple(rows))


@dataclass(frozen=True)
class MainGuide:
    """Everything the main guide shows: its two tables and the figures its prose cites."""

    serving: Table
    fine_tuning: Table
    full_example_gb: float
    qlora_example_gb: float

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """Every GPU the tables recommend, smallest memory first."""
        found = {
            o.gpu.id: o.gpu for t in (self.serving, self.fine_tuning) for r in t.rows for c in r.cells for o in c.choice.options
        }
        return tuple(sorted(found.values(), key=lambda g: (g.memory_gb, g.name)))


def main_guide(catalog: Catalog, shop: Shop) -> MainGuide:
    rules = catalog.rules
    return MainGuide(
        serving=serving_table(catalog, shop),
        fine_tuning=fine_tuning_table(catalog, shop),
        full_example_gb=memory.full_fine_tuning_gb(rules.full_example_params_b, rules.full_bytes),
        qlora_example_gb=memory.qlora_gb(rules.qlora_example_params_b, rules.qlora_bytes),
    )


def fits(need_gb: float, gpu: Gpu) -> bool:
    """Whether one such GPU holds the need."""
    return need_gb <= gpu.memory_gb
