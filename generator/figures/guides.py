"""The three guides' figures: the main guide's tables and FAQ, the VRAM guide, the sizing article."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpumem.engines import memory, sizing
from gpumem.engines.sizing import Choice, Configuration, Fit
from gpumem.figures.shared import Cell, Need, OnOffer, Row, Shop, Table, comfort_gb, fits, page_context, plain_kv_bytes_per_token
from gpumem.figures.subjects import format_fits
from gpumem.figures.verdicts import Verdict, rule_format, serving_verdict, training_verdict
from gpumem.records.catalog import Catalog, Gpu, Model, SizeClass
from gpumem.records.engines import WeightFormat


def serving_table(catalog: Catalog, shop: Shop) -> Table:
    """Rule-of-thumb serving memory per size class and precision, with GPU and price."""
    rules = catalog.rules
    rows = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        extra = comfort_gb(catalog, model)
        tokens = page_context(catalog, model)
        cells = tuple(
            Cell(p, choice, serving_verdict(catalog, model, p, tokens, 1, choice.best, shop.configurations))
            for p in rules.serving_precisions
            for choice in [shop.choose(memory.serving_gb(rules, size.size_b, p), model.arch.heads, extra)]
        )
        rows.append(Row(size, model, cells))
    return Table("serving", rules.serving_precisions, tuple(rows))


def fine_tuning_table(catalog: Catalog, shop: Shop) -> Table:
    """Fine-tuning memory per size class and method (activations excluded); no heads rule."""
    rules = catalog.rules
    rows = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        cells = tuple(
            Cell(m, choice, training_verdict(catalog, model, m, choice.best, shop.configurations))
            for m in rules.fine_tuning_methods
            for choice in [shop.choose(memory.fine_tuning_gb(rules, size.size_b, m))]
        )
        rows.append(Row(size, model, cells))
    return Table("fine_tuning", rules.fine_tuning_methods, tuple(rows))


@dataclass(frozen=True)
class OnCard:
    """A table cell against one card: whether one such card holds the figure."""

    column: str
    need_gb: float
    fits: bool
    choice: Choice
    verdict: Verdict | None = None  # where the rule of thumb says it fits: the engines on one such card


@dataclass(frozen=True)
class CardCheck:
    """A row of a guide table against one card: per column, fits on the card or not."""

    kind: str
    gpu: Gpu
    size: SizeClass
    cells: tuple[OnCard, ...]


def card_check(catalog: Catalog, shop: Shop, table: Table, row: Row, gpu: Gpu) -> CardCheck:
    """Each cell of a table's row on one card (when it does not fit, its choice holds the smallest configuration
    on offer); where the rule of thumb says it fits, what the deployment or training model says of that card."""
    card = Configuration(gpu, 1, shop.lowest_price(gpu.id) or 0.0)
    cells = []
    for c in row.cells:
        fit = fits(c.need_gb, gpu)
        verdict = None
        if fit and table.kind == "fine_tuning":
            verdict = training_verdict(catalog, row.model, c.column, card, shop.configurations)
        elif fit:
            verdict = serving_verdict(catalog, row.model, c.column, page_context(catalog, row.model), 1, card, shop.configurations)
        cells.append(OnCard(c.column, c.need_gb, fit, c.choice, verdict))
    return CardCheck(table.kind, gpu, row.size, tuple(cells))


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
        consumer_checks=tuple(card_check(catalog, shop, tuning, row, consumer) for row in tuning.rows),
    )


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
    example_verdict: Verdict | None  # the deployment model on example_choice.best (figures/verdicts.py)
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
    deployed_high: Fit | None  # the cheapest configuration the deployment model says holds one request in BF16
    deployed_low: Fit | None  # ... and in the 4-bit format (verdicts.rule_format)
    deployed_low_format: WeightFormat | None
    deployed_tokens: int

    @property
    def deployed_saving(self) -> float | None:
        """What 4 bits save per hour by the deployment model (0.5 is half), or None when either is not held."""
        if self.deployed_high is None or self.deployed_low is None:
            return None
        return 1 - self.deployed_low.configuration.price_per_hour / self.deployed_high.configuration.price_per_hour

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
    tokens, four_bits = page_context(catalog, example), rule_format(catalog, "int4")
    deployed_high = next(iter(format_fits(catalog, shop, example, rule_format(catalog, "bf16"), tokens, 1)), None)
    deployed_low = next(iter(format_fits(catalog, shop, example, four_bits, tokens, 1)), None)
    chart_models = [catalog.model(i) for i in dict.fromkeys(s.model for s in rules.size_classes)] + [mla]
    chart = tuple(Series(m.name, tuple((t, memory.kv_cache_gb(m.arch, kv16, t)) for t in rules.chart_contexts)) for m in chart_models)
    top = max(y for series in chart for _, y in series.points)
    return VramGuide(
        example=example,
        example_size_b=size,
        example_weights_gb=weights,
        example_rule_gb=rule,
        example_choice=(example_choice := shop.choose(rule, example.arch.heads)),
        example_verdict=serving_verdict(
            catalog, example, "fp8", page_context(catalog, example), 1, example_choice.best, shop.configurations
        ),
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
        mla_plain_bytes_per_token=plain_kv_bytes_per_token(mla, kv16),
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
        deployed_high=deployed_high,
        deployed_low=deployed_low,
        deployed_low_format=four_bits,
        deployed_tokens=tokens,
        chart=chart,
        card_lines=card_lines(catalog, shop, top),
    )


@dataclass(frozen=True)
class CardFit:
    """A model on one card of a size (page context, one request): the formats that fit it
    comfortably and those that fit only tightly, by the deployment model."""

    comfortable: tuple[WeightFormat, ...]
    tight: tuple[WeightFormat, ...]


@dataclass(frozen=True)
class SizeCard:
    """The card a size stands for: the cheapest GPU on offer with that much memory (or any in the catalog)."""

    size_gb: float
    gpu: Gpu


@dataclass(frozen=True)
class WeightsFit:
    """A model's weights at one precision against a card size: whether they fit."""

    precision: str
    gb: float
    fits: bool


@dataclass(frozen=True)
class SizedModel:
    label: str
    model: Model


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
    cards: tuple[SizeCard, ...]
    fits: tuple[tuple[SizedModel, tuple[CardFit, ...]], ...]
    multi_gpu_counts: tuple[int, ...] = ()

    @property
    def seventy_bf16_fits(self) -> bool:
        """Whether the example model's 16-bit weights fit on the largest card size discussed."""
        return self.seventy_bf16_gb <= self.largest_card_gb


def size_models(catalog: Catalog) -> tuple[SizedModel, ...]:
    """The guide tables' size classes with their representative models."""
    return tuple(SizedModel(size.label, catalog.model(size.model)) for size in catalog.rules.size_classes)


def size_cards(catalog: Catalog, shop: Shop) -> tuple[SizeCard, ...]:
    """For each card size the guides discuss, the GPU whose runtime memory stands for it."""
    cards = []
    for size in catalog.rules.card_sizes_gb:
        same = [g for g in catalog.gpus if g.memory_gb == size]
        on_offer = sorted((shop.markets[g.id].lowest_price, g.id, g) for g in same if g.id in shop.markets)
        if on_offer or same:
            cards.append(SizeCard(size, on_offer[0][2] if on_offer else same[0]))
    return tuple(cards)


def card_fit(catalog: Catalog, model: Model, gpu: Gpu) -> CardFit:
    """Which of the page formats fit one such card, comfortably or tightly (the fit rule of engines/sizing.py)."""
    rules = catalog.rules
    assert rules.deployment is not None
    tokens = min(rules.fit_context, model.native_context)
    formats = [rules.deployment.weight_formats[name] for name in rules.model_formats]
    configuration = Configuration(gpu, 1, 0.0)
    kv = rules.deployment.kv_formats["bf16"]
    fits = {
        fmt.name: found[0]
        for fmt in formats
        if (
            found := sizing.deployment_fits(
                rules.deployment, model, fmt, kv, tokens, 1, (configuration,), rules.comfortable_requests, rules.support
            )
        )
    }
    comfortable = tuple(fmt for fmt in formats if fmt.name in fits and fits[fmt.name].comfortable)
    tight = tuple(fmt for fmt in formats if fmt.name in fits and not fits[fmt.name].comfortable)
    return CardFit(comfortable, tight)


def sizing_guide(catalog: Catalog, shop: Shop) -> SizingGuide:
    """The sizing article: weights per size, the cache under concurrency and what fits per card size."""
    rules = catalog.rules
    kv16, kv8 = rules.kv_precisions["bf16"], rules.kv_precisions["fp8"]
    example = catalog.model(rules.example_model)
    small, large = rules.fit_context, rules.busy_context
    cards = size_cards(catalog, shop)
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
        cards=cards,
        fits=tuple((size, tuple(card_fit(catalog, size.model, card.gpu) for card in cards)) for size in size_models(catalog)),
        multi_gpu_counts=tuple(n for n in rules.gpu_counts if n > 1),
    )
