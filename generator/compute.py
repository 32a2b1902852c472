"""Stage 3: precompute every figure the pages show, language-neutral.

Uses the memory engine and sizing; knows nothing of templates or formatting.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass, field
from functools import cached_property

from . import memory, sizing
from .records import Architecture, Catalog, Gpu, Model, SizeClass
from .sizing import Choice, Configuration, Market


@dataclass(frozen=True)
class Cell:
    """One figure of a guide table and the configuration that holds it."""

    column: str
    choice: Choice

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


def serving_table(catalog: Catalog, shop: Shop) -> Table:
    """Rule-of-thumb serving memory per size class and precision, with GPU and price."""
    rules = catalog.rules
    rows = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        extra = comfort_gb(catalog, model)
        cells = tuple(
            Cell(p, shop.choose(memory.serving_gb(rules, size.size_b, p), model.arch.heads, extra)) for p in rules.serving_precisions
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
class OnCard:
    """A table cell against one card: whether one such card holds the figure."""

    column: str
    need_gb: float
    fits: bool
    choice: Choice


@dataclass(frozen=True)
class CardCheck:
    """A row of a guide table against one card: per column, fits on the card or not."""

    kind: str
    gpu: Gpu
    size: SizeClass
    cells: tuple[OnCard, ...]


def card_check(table: Table, row: Row, gpu: Gpu) -> CardCheck:
    """Each cell of a table's row on one card (when it does not fit, its choice holds the smallest configuration on offer)."""
    cells = tuple(OnCard(c.column, c.need_gb, fits(c.need_gb, gpu), c.choice) for c in row.cells)
    return CardCheck(table.kind, gpu, row.size, cells)


@dataclass(frozen=True)
class MainGuide:
    """Everything the main guide shows: its two tables and the figures its prose cites."""

    serving: Table
    fine_tuning: Table
    full_example_gb: float
    qlora_example_gb: float
    card_lines: tuple[tuple[str, float], ...]
    price_examples: tuple[OnOffer, ...] = ()
    consumer_gpu: Gpu | None = None
    consumer_checks: tuple[CardCheck, ...] = ()

    @property
    def offered_examples(self) -> tuple[OnOffer, ...]:
        """The price examples on offer in the snapshot, in the order rules.yaml lists them."""
        return tuple(e for e in self.price_examples if e.market is not None)

    @property
    def missing_examples(self) -> tuple[OnOffer, ...]:
        """The price examples the snapshot does not offer, each with the nearest GPU that it does."""
        return tuple(e for e in self.price_examples if e.market is None)

    def consumer(self, label: str) -> CardCheck:
        """The fine-tuning row of a size class against the consumer card of rules.yaml."""
        return next(c for c in self.consumer_checks if c.size.label == label)

    @property
    def chart(self) -> tuple[tuple[str, tuple[float, ...]], ...]:
        """Serving memory per size class (one bar per precision), for the guide's picture."""
        return tuple((row.size.label, tuple(cell.need_gb for cell in row.cells)) for row in self.serving.rows)

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """Every GPU the tables recommend, smallest memory first."""
        found = {o.gpu.id: o.gpu for t in (self.serving, self.fine_tuning) for r in t.rows for c in r.cells for o in c.choice.options}
        return tuple(sorted(found.values(), key=lambda g: (g.memory_gb, g.name)))


def main_guide(catalog: Catalog, shop: Shop) -> MainGuide:
    """The main guide: both tables, the worked examples of its rules and the cards its chart marks."""
    rules = catalog.rules
    serving = serving_table(catalog, shop)
    tuning = fine_tuning_table(catalog, shop)
    top = max(cell.need_gb for row in serving.rows for cell in row.cells)
    consumer = catalog.gpu(rules.consumer_gpu)
    return MainGuide(
        serving=serving,
        fine_tuning=tuning,
        full_example_gb=memory.full_fine_tuning_gb(rules.full_example_params_b, rules.full_bytes),
        qlora_example_gb=memory.qlora_gb(rules.qlora_example_params_b, rules.qlora_bytes),
        card_lines=card_lines(catalog, shop, top),
        price_examples=tuple(shop.on_offer(catalog.gpu(i)) for i in rules.price_examples),
        consumer_gpu=consumer,
        consumer_checks=tuple(card_check(tuning, row, consumer) for row in tuning.rows),
    )


def fits(need_gb: float, gpu: Gpu) -> bool:
    """Whether one such GPU holds the need."""
    return need_gb <= gpu.memory_gb


@dataclass(frozen=True)
class Need:
    """A named figure (a precision or a method) and the configuration that holds it."""

    key: str
    gb: float
    choice: Choice


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


def _plain_kv_bytes_per_token(model: Model, kv_bytes: float) -> float:
    """What 2 x layers x KV heads x head dim would give, ignoring windows and MLA."""
    arch = model.arch
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * kv_bytes


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
        plain_kv_bytes_per_token=_plain_kv_bytes_per_token(model, kv16),
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
class Series:
    """One line of a chart: a label and (x, y) points."""

    label: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class VramGuide:
    """The VRAM guide's worked examples."""

    example: Model
    example_size_b: float
    example_weights_gb: float
    example_rule_gb: float
    example_choice: Choice
    tight_model: Model
    tight_need_gb: float
    tight_choice: Choice
    roomy_choice: Choice
    kv_bytes_per_token: float
    long_tokens: int
    long_kv_gb: float
    long_kv_fp8_gb: float
    long_total_gb: float
    long_choice: Choice
    conversations: int
    conversations_total_gb: float
    conversations_choice: Choice
    mla_model: Model
    mla_bytes_per_token: float
    mla_plain_bytes_per_token: float
    qlora_gb_per_b: float
    lora_bytes_per_param: float
    heads_need_gb: float
    heads_gpu: Gpu
    heads_paper_count: int
    heads_valid_count: int
    valid_counts: tuple[int, ...]
    cost_high: Need
    cost_low: Need
    cost_saving: float
    chart: tuple[Series, ...]
    card_lines: tuple[tuple[str, float], ...]

    @property
    def tight_case(self) -> str:
        """What the snapshot makes of the tight example: "tight" (the smallest configuration holds it with
        almost no room and a bigger one is on offer), "no_bigger" (tight, and nothing bigger), "roomy" (the
        smallest holds it with room to spare) or "none" (no configuration holds it)."""
        if self.tight_choice.best is None:
            return "none"
        if not self.tight_choice.tight:
            return "roomy"
        return "tight" if self.roomy_choice.best is not None else "no_bigger"

    @property
    def cost_case(self) -> str:
        """What the snapshot makes of the cost comparison: "saving" (4 bits costs less per hour), "no_saving"
        (both are on offer, 4 bits saves nothing), "low_only" (only the 4-bit need is held) or "none"."""
        if self.cost_low.choice.best is None:
            return "none"
        if self.cost_high.choice.best is None:
            return "low_only"
        return "saving" if self.cost_saving > 0 else "no_saving"


def card_lines(catalog: Catalog, shop: Shop, top_gb: float) -> tuple[tuple[str, float], ...]:
    """Memory sizes of the GPUs on offer (name, GB) up to a chart's top, one line per size."""
    sizes: dict[float, str] = {}
    for gpu in sorted(catalog.gpus, key=lambda g: (g.memory_gb, g.name)):
        if gpu.id in shop.markets:
            sizes.setdefault(gpu.memory_gb, gpu.name)
    ordered = sorted(sizes.items())
    below = [(name, size) for size, name in ordered if size <= top_gb]
    above = [(name, size) for size, name in ordered if size > top_gb]
    return tuple(below + above[:1])


def vram_guide(catalog: Catalog, shop: Shop) -> VramGuide:
    """The VRAM guide's figures: the rule, long context, MLA, tensor-parallel counts and cost."""
    rules = catalog.rules
    example, size = catalog.model(rules.example_model), rules.example_size_b
    weights = memory.weights_gb(size, rules.precisions["fp8"])
    rule = memory.serving_gb(rules, size, "fp8")
    tight_model = catalog.model(rules.tight_model)
    tight_need = memory.serving_gb(rules, tight_model.params_b, "bf16")
    kv16, kv8 = rules.kv_precisions["bf16"], rules.kv_precisions["fp8"]
    tokens = example.native_context
    long_kv = memory.kv_cache_gb(example.arch, kv16, tokens)
    conversations = weights + memory.kv_cache_gb(example.arch, kv16, tokens, rules.long_conversations)
    mla = catalog.model(rules.mla_model)
    heads_gpu = catalog.gpu(rules.heads_gpu)
    high_need, low_need = memory.serving_gb(rules, size, "bf16"), memory.serving_gb(rules, size, "int4")
    paper = math.ceil(high_need / heads_gpu.memory_gb)
    usable = sizing.valid_counts(range(paper, max(rules.gpu_counts) + 1), example.arch.heads)
    high = Need("bf16", high_need, shop.choose(high_need, example.arch.heads))
    low = Need("int4", low_need, shop.choose(low_need, example.arch.heads))
    saving = 1 - low.choice.best.price_per_hour / high.choice.best.price_per_hour if high.choice.best and low.choice.best else 0.0
    chart_models = [catalog.model(i) for i in dict.fromkeys(s.model for s in rules.size_classes)] + [mla]
    chart = tuple(Series(m.name, tuple((t, memory.kv_cache_gb(m.arch, kv16, t)) for t in rules.chart_contexts)) for m in chart_models)
    top = max(y for series in chart for _, y in series.points)
    return VramGuide(
        example=example,
        example_size_b=size,
        example_weights_gb=weights,
        example_rule_gb=rule,
        example_choice=shop.choose(rule, example.arch.heads),
        tight_model=tight_model,
        tight_need_gb=tight_need,
        tight_choice=shop.choose(tight_need, tight_model.arch.heads),
        roomy_choice=shop.choose(tight_need / (1 - rules.min_free_fraction), tight_model.arch.heads),
        kv_bytes_per_token=memory.kv_bytes_per_token(example.arch, kv16),
        long_tokens=tokens,
        long_kv_gb=long_kv,
        long_kv_fp8_gb=memory.kv_cache_gb(example.arch, kv8, tokens),
        long_total_gb=weights + long_kv,
        long_choice=shop.choose(weights + long_kv, example.arch.heads),
        conversations=rules.long_conversations,
        conversations_total_gb=conversations,
        conversations_choice=shop.choose(conversations, example.arch.heads),
        mla_model=mla,
        mla_bytes_per_token=memory.kv_bytes_per_token(mla.arch, kv16),
        mla_plain_bytes_per_token=_plain_kv_bytes_per_token(mla, kv16),
        qlora_gb_per_b=rules.qlora_example_gpu_gb / rules.qlora_example_params_b,
        lora_bytes_per_param=rules.precisions[rules.lora_base_precision] * (1 + rules.lora_margin),
        heads_need_gb=high_need,
        heads_gpu=heads_gpu,
        heads_paper_count=paper,
        heads_valid_count=usable[0] if usable else 0,
        valid_counts=sizing.valid_counts(rules.gpu_counts, example.arch.heads),
        cost_high=high,
        cost_low=low,
        cost_saving=saving,
        chart=chart,
        card_lines=card_lines(catalog, shop, top),
    )


@dataclass(frozen=True)
class CardFit:
    """The best precision a model serves at on one card of a size, and whether it is tight."""

    precision: str | None
    need_gb: float
    tight: bool


@dataclass(frozen=True)
class WeightsFit:
    """A model's weights at one precision against a card size: whether they fit."""

    precision: str
    gb: float
    fits: bool


@dataclass(frozen=True)
class SizingGuide:
    """The sizing article's figures: weights per size, cache under concurrency, what fits where."""

    weights: tuple[tuple[float, tuple[float, ...]], ...]
    quantization_factor: float
    largest_card_gb: float
    seventy_fits: tuple[WeightsFit, ...]
    seventy_bf16_gb: float
    example: Model
    kv_small_gb: float
    kv_large_gb: float
    kv_busy_gb: float
    kv_busy_fp8_gb: float
    small_tokens: int
    large_tokens: int
    busy_requests: int
    card_sizes: tuple[float, ...]
    fits: tuple[tuple[Model, tuple[CardFit, ...]], ...]
    multi_gpu_counts: tuple[int, ...] = ()

    @property
    def seventy_bf16_fits(self) -> bool:
        """Whether the example model's 16-bit weights fit on the largest card size discussed."""
        return self.seventy_bf16_gb <= self.largest_card_gb


def card_fit(catalog: Catalog, model: Model, card_gb: float) -> CardFit:
    """The widest serving precision whose detailed total (page context, one request) fits the card."""
    rules = catalog.rules
    for precision in rules.serving_precisions:
        total = memory.serving_breakdown(rules, model.arch, model.params_b, precision, "bf16", rules.fit_context, 1).total
        if total <= card_gb:
            return CardFit(precision, total, sizing.is_tight(total, card_gb, comfort_gb(catalog, model), rules.min_free_fraction))
    return CardFit(None, 0.0, False)


def sizing_guide(catalog: Catalog) -> SizingGuide:
    """The sizing article: weights per size, the cache under concurrency and what fits per card size."""
    rules = catalog.rules
    kv16, kv8 = rules.kv_precisions["bf16"], rules.kv_precisions["fp8"]
    example = catalog.model(rules.example_model)
    small, large = rules.fit_context, rules.busy_context
    weights = tuple(
        (size, tuple(memory.weights_gb(size, rules.precisions[p]) for p in rules.serving_precisions))
        for size in rules.weights_table_sizes_b
    )
    return SizingGuide(
        weights=weights,
        quantization_factor=rules.precisions["bf16"] / rules.precisions["int4"],
        largest_card_gb=max(rules.card_sizes_gb),
        seventy_fits=tuple(
            WeightsFit(p, gb, gb <= max(rules.card_sizes_gb))
            for p in rules.serving_precisions
            for gb in [memory.weights_gb(rules.example_size_b, rules.precisions[p])]
        ),
        seventy_bf16_gb=memory.weights_gb(rules.example_size_b, rules.precisions["bf16"]),
        example=example,
        kv_small_gb=memory.kv_cache_gb(example.arch, kv16, small),
        kv_large_gb=memory.kv_cache_gb(example.arch, kv16, large),
        kv_busy_gb=memory.kv_cache_gb(example.arch, kv16, large, rules.busy_requests),
        kv_busy_fp8_gb=memory.kv_cache_gb(example.arch, kv8, large, rules.busy_requests),
        small_tokens=small,
        large_tokens=large,
        busy_requests=rules.busy_requests,
        card_sizes=rules.card_sizes_gb,
        fits=tuple((m, tuple(card_fit(catalog, m, c) for c in rules.card_sizes_gb)) for m in catalog.models),
        multi_gpu_counts=tuple(n for n in rules.gpu_counts if n > 1),
    )


@dataclass(frozen=True)
class CalculatorPage:
    """The calculator page's precomputed tables and FAQ figures (the page works without JavaScript)."""

    rows: tuple[tuple[Model, tuple[Need, ...]], ...]
    seventy_bf16_weights_gb: float
    seventy_int4_weights_gb: float
    largest_consumer: Gpu
    seventy_int4_choice: Choice
    small: Model
    small_weights: tuple[tuple[str, float], ...]
    small_kv_gb: float
    small_total_gb: float
    small_cards: tuple[Gpu, ...]
    default: CalculatorState
    small_card_gb: float = 0.0


@dataclass(frozen=True)
class CalculatorState:
    """The calculator's opening state, worked out at build time so the page shows it before any script runs."""

    fields: dict[str, str]
    need: memory.Breakdown
    choices: tuple[tuple[Configuration, bool], ...]
    valid_counts: tuple[int, ...]

    @property
    def query(self) -> str:
        return urllib.parse.urlencode(self.fields)

    @property
    def parts(self) -> tuple[tuple[str, float], ...]:
        """The parts a mode has (the others are zero), in the order the page lists them."""
        names = ("weights", "kv_cache", "gradients", "optimizer", "overhead")
        return tuple((name, getattr(self.need, name)) for name in names if getattr(self.need, name))


def calculator_default(catalog: Catalog, shop: Shop) -> CalculatorState:
    """The opening state of rules.yaml, computed the way the calculator's script computes it."""
    d = catalog.rules.calculator_defaults
    model = catalog.model(d["model"])
    arch = model.arch
    fields = {
        "model": model.id,
        "params": repr(model.params_b),
        "layers": str(arch.layers),
        "heads": str(arch.heads),
        "kv_heads": str(arch.kv_heads),
        "head_dim": str(arch.head_dim),
        "mode": d["mode"],
        "weights": d["weights"],
        "kv": d["kv"],
        "batch": str(d["batch"]),
        "context": str(d["context"]),
    }
    need = memory.memory_need(catalog.rules, arch, model.params_b, d["mode"], d["weights"], d["kv"], d["context"], d["batch"])
    choices = calculator_choices(catalog, shop, arch, d["mode"], d["kv"], d["context"], need.total)
    return CalculatorState(fields, need, choices, sizing.valid_counts(catalog.rules.gpu_counts, arch.heads))


def calculator_page(catalog: Catalog, shop: Shop) -> CalculatorPage:
    """The calculator page without its script: every preset precomputed, the FAQ figures, the opening state."""
    rules = catalog.rules
    rows = []
    for model in catalog.models:
        needs = []
        for precision in rules.serving_precisions:
            total = memory.serving_breakdown(rules, model.arch, model.params_b, precision, "bf16", rules.fit_context, 1).total
            needs.append(Need(precision, total, shop.choose(total, model.arch.heads)))
        rows.append((model, tuple(needs)))
    size = rules.example_size_b
    int4 = memory.weights_gb(size, rules.precisions["int4"])
    small = catalog.model(rules.small_model)
    small_bf16 = memory.weights_gb(small.params_b, rules.precisions["bf16"])
    small_kv = memory.kv_cache_gb(small.arch, rules.kv_precisions["bf16"], rules.small_context)
    holding = [g for g in catalog.gpus if g.memory_gb >= small_bf16 + small_kv]
    smallest = min((g.memory_gb for g in holding), default=None)
    return CalculatorPage(
        rows=tuple(rows),
        seventy_bf16_weights_gb=memory.weights_gb(size, rules.precisions["bf16"]),
        seventy_int4_weights_gb=int4,
        largest_consumer=max((g for g in catalog.gpus if g.segment == "consumer"), key=lambda g: g.memory_gb),
        seventy_int4_choice=shop.choose(int4),
        small=small,
        small_weights=tuple((p, memory.weights_gb(small.params_b, b)) for p, b in rules.precisions.items()),
        small_kv_gb=small_kv,
        small_total_gb=small_bf16 + small_kv,
        small_cards=tuple(sorted((g for g in holding if g.memory_gb == smallest), key=lambda g: g.name)),
        default=calculator_default(catalog, shop),
        small_card_gb=smallest or 0.0,
    )


@dataclass(frozen=True)
class PricesPage:
    """The snapshot: every GPU on offer with its lowest price, machines and sizes."""

    rows: tuple[tuple[Gpu, Market], ...]


def prices_page(catalog: Catalog, shop: Shop) -> PricesPage:
    """The GPUs on offer, by memory then lowest price."""
    rows = [(g, shop.markets[g.id]) for g in catalog.gpus if g.id in shop.markets]
    return PricesPage(tuple(sorted(rows, key=lambda row: (row[0].memory_gb, row[1].lowest_price))))


@dataclass(frozen=True)
class SiteFigures:
    """Every figure of every page, computed once per build for all languages."""

    shop: Shop
    main: MainGuide
    vram: VramGuide
    sizing: SizingGuide
    calculator: CalculatorPage
    prices: PricesPage
    models: dict[str, ModelPage]
    gpus: dict[str, GpuPage]
    calculator_json: str


def site_figures(catalog: Catalog) -> SiteFigures:
    """Every page's figures, computed once from the catalog and its snapshot."""
    shop = Shop(catalog)
    return SiteFigures(
        shop=shop,
        main=main_guide(catalog, shop),
        vram=vram_guide(catalog, shop),
        sizing=sizing_guide(catalog),
        calculator=calculator_page(catalog, shop),
        prices=prices_page(catalog, shop),
        models={m.id: model_page(catalog, shop, m) for m in catalog.models},
        gpus={g.id: gpu_page(catalog, shop, g) for g in catalog.gpus},
        calculator_json=json.dumps(calculator_data(catalog, shop), sort_keys=True, separators=(",", ":")),
    )


def calculator_extra_gb(catalog: Catalog, arch: Architecture, mode: str, kv_precision: str, context: int) -> float:
    """Room a comfortable fit leaves in the calculator: none when training, else at the chosen context."""
    return room_gb(catalog, arch, kv_precision, context) if mode == "serve" else 0.0


def calculator_choices(
    catalog: Catalog, shop: Shop, arch: Architecture, mode: str, kv_precision: str, context: int, need_gb: float
) -> tuple[tuple[Configuration, bool], ...]:
    """Every configuration on offer that holds the need, smallest first, each flagged tight or not."""
    rules = catalog.rules
    extra = calculator_extra_gb(catalog, arch, mode, kv_precision, context)
    holding = [c for c in shop.configurations if c.memory_gb >= need_gb and (mode != "serve" or arch.heads % c.count == 0)]
    return tuple(
        (c, sizing.is_tight(need_gb, c.memory_gb, extra, rules.min_free_fraction)) for c in sorted(holding, key=Configuration.order)
    )


def calculator_data(catalog: Catalog, shop: Shop) -> dict:
    """What the calculator's JavaScript reads: rules, presets, GPUs and configurations on offer."""
    rules = catalog.rules
    models = []
    for m in catalog.models:
        a = m.arch.attention
        attention = {"kind": a.kind, "window": a.window, "slidingLayers": a.sliding_layers, "latent": a.kv_lora_rank + a.qk_rope_head_dim}
        models.append(
            {
                "id": m.id,
                "name": m.name,
                "params": m.params_b,
                "layers": m.arch.layers,
                "heads": m.arch.heads,
                "kvHeads": m.arch.kv_heads,
                "headDim": m.arch.head_dim,
                "attention": attention,
            }
        )
    return {
        "precisions": rules.precisions,
        "kvPrecisions": rules.kv_precisions,
        "runtimeOverhead": rules.runtime_overhead,
        "fullParts": rules.full_parts,
        "loraBase": rules.lora_base_precision,
        "loraMargin": rules.lora_margin,
        "qloraBase": rules.qlora_base_precision,
        "qloraBytes": rules.qlora_bytes,
        "gpuCounts": list(rules.gpu_counts),
        "minFreeFraction": rules.min_free_fraction,
        "comfortableRequests": rules.comfortable_requests,
        "limits": rules.calculator_limits,
        "defaults": rules.calculator_defaults,
        "currency": catalog.snapshot.currency,
        "models": models,
        "configurations": [
            {"gpu": c.gpu.id, "name": c.gpu.name, "memory": c.gpu.memory_gb, "count": c.count, "price": c.price_per_hour}
            for c in sorted(shop.configurations, key=Configuration.order)
        ],
    }
