"""Speed and cost figures for the pages: each model page's and GPU page's speed table and the guide
"The best GPU for LLM inference", at the load rules.yaml states (speed.pages).

Pure: the speed engine (engines/speed.py) gives tokens per second, the snapshot's configurations (engines/sizing.py)
the prices; no files, no formatting. Every figure is at one request and at the busy load, each of
`prompt_tokens` prompt and `output_tokens` output tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpumem.engines import support
from gpumem.engines.sizing import Configuration, deployment_fits
from gpumem.engines.speed import Load, Speed, served
from gpumem.figures.subjects import GpuPage, ModelPage
from gpumem.figures.verdicts import serving_claim
from gpumem.records.catalog import Catalog, Gpu, Model
from gpumem.records.engines import KvFormat, SpeedPages, WeightFormat


@dataclass(frozen=True)
class SpeedRow:
    """One configuration serving a model in one format: its speed at one request and, when its GPUs
    hold that many requests, at the busy load (else None); the costs are None without a price."""

    model: Model
    fmt: WeightFormat
    configuration: Configuration
    one: Speed
    busy: Speed | None
    claim: str = ""  # what the row's rent link says its GPUs hold: one request of the pages' lengths (figures/verdicts.py)
    unmeasured: bool = False  # no run of the format's engine on this GPU was measured: the figure rests on the fit alone

    @property
    def engine(self) -> str:
        """The engine the figure is for, the one the launch command names: the format's runtime."""
        return self.fmt.runtime

    @property
    def price_per_hour(self) -> float | None:
        """The configuration's price, or None for a GPU not on offer (its configuration is priced at 0)."""
        return self.configuration.price_per_hour if self.configuration.price_per_hour > 0 else None


def page_setting(catalog: Catalog) -> SpeedPages | None:
    """The pages' load, or None when rules.yaml states none (then no page shows a speed figure)."""
    rules = catalog.rules.speed
    if rules is None or rules.pages is None or catalog.rules.deployment is None:
        return None
    return rules.pages


def holds(catalog: Catalog, model: Model, fmt: WeightFormat, configuration: Configuration, requests: int) -> bool:
    """Whether the configuration's GPUs hold `requests` requests of the pages' prompt and output lengths."""
    setting, rules = page_setting(catalog), catalog.rules
    assert setting is not None and rules.deployment is not None
    kv = rules.deployment.kv_formats[setting.kv_format]
    tokens = setting.prompt_tokens + setting.output_tokens
    return bool(deployment_fits(rules.deployment, model, fmt, kv, tokens, requests, (configuration,), 0, rules.support))


def timed_format(catalog: Catalog, fmt: WeightFormat, kv: KvFormat, gpu: Gpu) -> WeightFormat:
    """The format a configuration is timed with: the asked one, or the llama.cpp format that stands in for it
    on this card (engines/support.serving)."""
    rules = catalog.rules.deployment
    assert rules is not None
    return support.serving(catalog.rules.support, rules.weight_formats, fmt, kv, gpu).weights


def speed_row(catalog: Catalog, model: Model, fmt: WeightFormat, configuration: Configuration, priced: bool = True) -> SpeedRow:
    """The configuration's speed at one request and at the busy load (when it holds it), priced when on offer."""
    setting, rules = page_setting(catalog), catalog.rules
    assert setting is not None and rules.speed is not None and rules.deployment is not None
    speed_rules, kv = rules.speed, rules.deployment.kv_formats[setting.kv_format]
    price = configuration.price_per_hour if priced else None
    gpu, count = configuration.gpu, configuration.count
    fmt = timed_format(catalog, fmt, kv, gpu)

    def at(requests: int) -> Speed:
        load = Load(requests, setting.prompt_tokens, setting.output_tokens)
        return served(speed_rules, rules.deployment, model, fmt, kv, gpu, count, load, price)

    busy = at(setting.busy_requests) if holds(catalog, model, fmt, configuration, setting.busy_requests) else None
    claim = serving_claim(model, fmt, setting.kv_format, setting.prompt_tokens + setting.output_tokens, 1)
    unmeasured = speed_rules.unmeasured(fmt.runtime, gpu.id)
    return SpeedRow(model, fmt, configuration if priced else Configuration(gpu, count, 0.0), at(1), busy, claim, unmeasured)


def cheapest(rows: Iterable[SpeedRow], busy: bool) -> SpeedRow | None:
    """The row with the lowest cost per million output tokens, at the busy load or at one request."""
    priced = [
        (cost, row.configuration.count, row.configuration.gpu.id, index, row)
        for index, row in enumerate(rows)
        for result in [row.busy if busy else row.one]
        if result is not None and (cost := result.usd_per_million_output_tokens) is not None
    ]
    return min(priced, key=lambda item: item[:4])[4] if priced else None


class CheapestRows:
    """Rows with the cheapest per million output tokens picked, at one request and at the busy load."""

    rows: tuple[SpeedRow, ...]

    @property
    def cheapest_one(self) -> SpeedRow | None:
        return cheapest(self.rows, busy=False)

    @property
    def cheapest_busy(self) -> SpeedRow | None:
        return cheapest(self.rows, busy=True)


@dataclass(frozen=True)
class ModelSpeed(CheapestRows):
    """A model page's speed table: a row per configuration its serving section recommends."""

    setting: SpeedPages
    rows: tuple[SpeedRow, ...]


def model_speed(catalog: Catalog, page: ModelPage) -> ModelSpeed | None:
    """Each format's cheapest configuration, then the release format's at each context, each once."""
    setting = page_setting(catalog)
    if setting is None:
        return None
    release = next((row.fmt for row in page.formats if row.fmt.name == page.model.release), None)
    picked = [(row.fmt, row.cheapest.configuration) for row in page.formats if row.cheapest is not None]
    picked += [(release, fit.configuration) for row in page.deployed for fit in (row.fit_one, row.fit_many) if fit and release]
    unique: dict[tuple[str, str, int], tuple[WeightFormat, Configuration]] = {}
    for fmt, c in picked:
        unique.setdefault((fmt.name, c.gpu.id, c.count), (fmt, c))  # the first of each, in the page's order
    return ModelSpeed(setting, tuple(speed_row(catalog, page.model, fmt, c) for fmt, c in unique.values()))


@dataclass(frozen=True)
class GpuSpeed:
    """A GPU page's speed table: each catalog model that fits one card, in the first page format that
    fits, priced per GPU-hour at the snapshot's lowest (None when the GPU is not on offer)."""

    setting: SpeedPages
    rows: tuple[SpeedRow, ...]
    price_per_gpu_hour: float | None


def gpu_speed(catalog: Catalog, page: GpuPage) -> GpuSpeed | None:
    """One card of the GPU per fitting model: a machine of several cards runs one copy per card, so the
    cost per token of one card at the lowest price per GPU-hour is the machine's too."""
    setting = page_setting(catalog)
    if setting is None:
        return None
    price = page.market.lowest_price if page.market else None
    card = Configuration(page.gpu, 1, price or 0.0)
    rows = []
    for row in page.fitting:
        fmt = next(fmt for fmt, fit in zip(page.formats, row.fits, strict=True) if fit is not None)
        rows.append(speed_row(catalog, row.model, fmt, card, priced=price is not None))
    return GpuSpeed(setting, tuple(rows), price)


@dataclass(frozen=True)
class GuidePick(CheapestRows):
    """One size class in one format: every configuration on offer that holds one request, and the
    picks among them (None when none holds it, or none holds the busy load)."""

    fmt: WeightFormat
    rows: tuple[SpeedRow, ...]

    @property
    def fastest(self) -> SpeedRow | None:
        """The highest decode rate for one request; the lower price breaks a tie."""
        return min(
            self.rows,
            key=lambda r: (-r.one.decode_tokens_per_s_per_request, r.configuration.price_per_hour, r.configuration.gpu.id),
            default=None,
        )


@dataclass(frozen=True)
class GuideClass:
    label: str
    size_b: float
    model: Model
    picks: tuple[GuidePick, ...]


@dataclass(frozen=True)
class Tradeoff:
    """The guide's worked example: one size class in its first format, its fastest configuration and
    the cheapest per token at the busy load, each with its cost there, and the cheapest one's cost at
    one request (what batching saves)."""

    model: Model
    fmt: WeightFormat
    fastest: SpeedRow
    cheapest: SpeedRow

    @property
    def fastest_cost(self) -> float | None:
        """The fastest configuration's cost per million at the busy load (tradeoff() picks one that holds it)."""
        assert self.fastest.busy is not None
        return self.fastest.busy.usd_per_million_output_tokens

    @property
    def cheapest_cost(self) -> float | None:
        assert self.cheapest.busy is not None  # picked at the busy load
        return self.cheapest.busy.usd_per_million_output_tokens

    @property
    def single_cost(self) -> float | None:
        return self.cheapest.one.usd_per_million_output_tokens


@dataclass(frozen=True)
class InferenceGuide:
    """The guide "The best GPU for LLM inference": per size class and guide format, its picks."""

    setting: SpeedPages
    formats: tuple[WeightFormat, ...]
    classes: tuple[GuideClass, ...]
    example: Tradeoff | None = None

    def column(self, fmt: str) -> tuple[tuple[GuideClass, GuidePick], ...]:
        """Every size class's pick in one format, for one table."""
        return tuple((c, pick) for c in self.classes for pick in c.picks if pick.fmt.name == fmt)


def inference_guide(catalog: Catalog, configurations: Iterable[Configuration]) -> InferenceGuide | None:
    """Per size class (rules.yaml size_classes) and guide format, the configurations on offer that hold one request."""
    setting, rules = page_setting(catalog), catalog.rules
    if setting is None:
        return None
    assert rules.deployment is not None
    offered = tuple(configurations)
    kv = rules.deployment.kv_formats[setting.kv_format]
    tokens = setting.prompt_tokens + setting.output_tokens
    formats = tuple(rules.deployment.weight_formats[name] for name in setting.guide_formats)
    classes = []
    for size in rules.size_classes:
        model = catalog.model(size.model)
        picks = []
        for fmt in formats:
            fits = deployment_fits(rules.deployment, model, fmt, kv, tokens, 1, offered, 0, rules.support)
            picks.append(GuidePick(fmt, tuple(speed_row(catalog, model, fmt, fit.configuration) for fit in fits)))
        classes.append(GuideClass(size.label, size.size_b, model, tuple(picks)))
    return InferenceGuide(setting, formats, tuple(classes), tradeoff(catalog, tuple(classes)))


def tradeoff(catalog: Catalog, classes: tuple[GuideClass, ...]) -> Tradeoff | None:
    """The worked example: the size class of the guides' example model size (rules.yaml guides), else the
    nearest whose first format has both picks and whose fastest configuration holds the busy load."""
    wanted = catalog.rules.example_size_b
    ranked = sorted(classes, key=lambda c: (abs(c.size_b - wanted), -c.size_b))
    for size in ranked:
        pick = size.picks[0] if size.picks else None
        if pick and pick.fastest and pick.fastest.busy and pick.cheapest_busy:
            return Tradeoff(size.model, pick.fmt, pick.fastest, pick.cheapest_busy)
    return None
