"""Figures of the generated pages: one per model, one per GPU, and the prices page."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpumem.engines import deployment, launch, memory, sizing, support
from gpumem.engines.deployment import Deployment
from gpumem.engines.sizing import Choice, Fit, Market, deployment_fits
from gpumem.figures.shared import Need, OnOffer, Shop, comfort_gb, page_context, plain_kv_bytes_per_token
from gpumem.figures.verdicts import Verdict, rule_precision, serving_verdict, training_verdict
from gpumem.records.catalog import STATE_NAMES, Catalog, Gpu, Model
from gpumem.records.engines import WeightFormat


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
    verdict_one: Verdict | None = None  # the deployment model on choice_one.best (figures/verdicts.py)
    verdict_many: Verdict | None = None


@dataclass(frozen=True)
class FormatFit:
    """A model in one weight format, on one GPU at the page's context with one request: what the
    deployment model counts, the rule of thumb beside it, and the cheapest configurations on offer."""

    fmt: WeightFormat
    need: Deployment
    rule_gb: float
    cheapest: Fit | None
    cheapest_comfortable: Fit | None
    command: launch.Launch | None = None  # what starts the cheapest configuration, as this page sizes it

    @property
    def need_gb(self) -> float:
        return self.need.total_bytes_per_gpu / 1e9

    @property
    def difference(self) -> float:
        """How far the deployment figure is from the rule of thumb (0.1 is 10 % more)."""
        return self.need_gb / self.rule_gb - 1


@dataclass(frozen=True)
class DeployedContext:
    """The release format at one context: per-GPU totals for one and several requests, and where they fit."""

    tokens: int
    one: Deployment
    many: Deployment
    fit_one: Fit | None
    fit_many: Fit | None


def format_fits(catalog: Catalog, shop: Shop, model: Model, fmt: WeightFormat, tokens: int, requests: int) -> tuple[Fit, ...]:
    rules = catalog.rules
    assert rules.deployment is not None
    kv = rules.deployment.kv_formats["bf16"]
    more = rules.comfortable_requests
    return deployment_fits(rules.deployment, model, fmt, kv, tokens, requests, shop.configurations, more, rules.support)


def format_fit(catalog: Catalog, shop: Shop, model: Model, fmt: WeightFormat) -> FormatFit:
    """One format at the page's context: its per-GPU need on one card and its cheapest fits."""
    rules = catalog.rules
    assert rules.deployment is not None
    tokens = page_context(catalog, model)
    large = deployment.Batch(rules.deployment.large_batch_tokens, rules.deployment.large_batch_sequences)
    need = deployment.deployment(rules.deployment, model, fmt, rules.deployment.kv_formats["bf16"], 1, tokens, 1, large)
    fits = format_fits(catalog, shop, model, fmt, tokens, 1)
    rule = memory.serving_gb(rules, model.params_b, rule_precision(fmt))
    comfortable = next((fit for fit in fits if fit.comfortable), None)
    command = launch_of(catalog, model, fmt, fits[0], tokens) if fits else None
    return FormatFit(fmt, need, rule, fits[0] if fits else None, comfortable, command)


def launch_of(catalog: Catalog, model: Model, fmt: WeightFormat, fit: Fit, tokens: int) -> launch.Launch:
    """The command that starts `fit`'s configuration for one request of `tokens` tokens, BF16 cache."""
    rules = catalog.rules
    assert rules.deployment is not None
    pin = rules.engines.get(fmt.runtime)
    work = launch.Workload(fit.configuration.count, tokens, 1)
    settings = launch.Settings(rules.deployment.utilization)
    return launch.launch(model, fmt, rules.deployment.kv_formats["bf16"], work, settings, pin.version if pin else "")


def deployed_contexts(catalog: Catalog, shop: Shop, model: Model) -> tuple[DeployedContext, ...]:
    """The release format at each page context up to the model's own: one and several requests."""
    rules = catalog.rules
    assert rules.deployment is not None
    fmt = rules.deployment.weight_formats[model.release]
    kv = rules.deployment.kv_formats["bf16"]
    large = deployment.Batch(rules.deployment.large_batch_tokens, rules.deployment.large_batch_sequences)
    found = []
    for tokens in (t for t in rules.model_contexts if t <= model.native_context):
        one = deployment.deployment(rules.deployment, model, fmt, kv, 1, tokens, 1, large)
        many = deployment.deployment(rules.deployment, model, fmt, kv, 1, tokens, rules.page_requests, large)
        fits_one = format_fits(catalog, shop, model, fmt, tokens, 1)
        fits_many = format_fits(catalog, shop, model, fmt, tokens, rules.page_requests)
        found.append(DeployedContext(tokens, one, many, fits_one[0] if fits_one else None, fits_many[0] if fits_many else None))
    return tuple(found)


@dataclass(frozen=True)
class ModelPage:
    """Everything a model's page shows."""

    model: Model
    weights: tuple[Need, ...]
    serving: tuple[Need, ...]
    kv_bytes_per_token: float
    plain_kv_bytes_per_token: float
    latent_elements: int
    state_bytes: float  # a hybrid's fixed state per request, at 16 bits (0 without one)
    state_name: str
    contexts: tuple[ContextFigures, ...]
    fine_tuning: tuple[Need, ...]
    valid_counts: tuple[int, ...]
    breakdown: memory.Breakdown
    requests: int
    formats: tuple[FormatFit, ...] = ()
    deployed: tuple[DeployedContext, ...] = ()
    tp_counts: tuple[int, ...] = ()
    context: int = 0
    skipped_contexts: tuple[int, ...] = ()  # page contexts beyond the model's native context

    @property
    def recommended_fits(self) -> tuple[Fit, ...]:
        """The configurations the deployment tables recommend (each format's cheapest, then the
        release format's at each context), in the order the page shows them."""
        found = [row.cheapest for row in self.formats] + [fit for row in self.deployed for fit in (row.fit_one, row.fit_many)]
        return tuple(fit for fit in found if fit is not None)

    @property
    def recommended_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs of the recommended configurations, each once, in the page's order."""
        return tuple({fit.configuration.gpu.id: fit.configuration.gpu for fit in self.recommended_fits}.values())

    @property
    def calculator_gpus(self) -> int:
        """The GPU count the prefilled calculator opens with: the release format's cheapest configuration's."""
        release = self.formats[0].cheapest if self.formats else None
        return release.configuration.count if release else min(self.tp_counts or self.valid_counts or (1,))


def model_page(catalog: Catalog, shop: Shop, model: Model) -> ModelPage:
    """Weights, serving, cache per context, fine-tuning and GPU choices for one model."""
    rules, arch = catalog.rules, model.arch
    assert rules.deployment is not None
    formats = rules.deployment.weight_formats
    kv16 = rules.kv_precisions["bf16"]
    extra = comfort_gb(catalog, model)
    weights = tuple(
        Need(p, memory.weights_gb(model.params_b, b), shop.choose(memory.weights_gb(model.params_b, b), arch.heads))
        for p, b in rules.precisions.items()
    )
    tokens, offered = page_context(catalog, model), shop.configurations
    serving = tuple(
        Need(p, need, choice, serving_verdict(catalog, model, p, tokens, 1, choice.best, offered))
        for p in rules.serving_precisions
        for need in [memory.serving_gb(rules, model.params_b, p)]
        for choice in [shop.choose(need, arch.heads, extra)]
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
                one_choice := shop.choose(one.total, arch.heads),
                many_choice := shop.choose(many.total, arch.heads),
                serving_verdict(catalog, model, "bf16", tokens, 1, one_choice.best, offered),
                serving_verdict(catalog, model, "bf16", tokens, rules.page_requests, many_choice.best, offered),
            )
        )
    tuning = tuple(
        Need(m, need, choice, training_verdict(catalog, model, m, choice.best, offered))
        for m in rules.fine_tuning_methods
        for need in [memory.fine_tuning_gb(rules, model.params_b, m)]
        for choice in [shop.choose(need)]
    )
    return ModelPage(
        model=model,
        weights=weights,
        serving=serving,
        kv_bytes_per_token=memory.kv_bytes_per_token(arch, kv16),
        plain_kv_bytes_per_token=plain_kv_bytes_per_token(model, kv16),
        latent_elements=memory.kv_elements_per_token_layer(arch),
        state_bytes=memory.state_bytes(arch),
        state_name=STATE_NAMES[arch.state.kind] if arch.state else "",
        contexts=tuple(contexts),
        fine_tuning=tuning,
        valid_counts=sizing.valid_counts(rules.gpu_counts, arch.heads),
        breakdown=memory.serving_breakdown(rules, arch, model.params_b, "bf16", "bf16", page_context(catalog, model), 1),
        requests=rules.page_requests,
        formats=tuple(format_fit(catalog, shop, model, formats[name]) for name in dict.fromkeys((model.release, *rules.model_formats))),
        deployed=deployed_contexts(catalog, shop, model),
        tp_counts=deployment.valid_gpu_counts(arch, rules.gpu_counts),
        context=page_context(catalog, model),
        skipped_contexts=tuple(t for t in rules.model_contexts if t > model.native_context),
    )


@dataclass(frozen=True)
class GpuFit:
    """One model in one weight format on one card (page context, one request), by the deployment model."""

    fmt: str
    need_gb: float
    share: float
    comfortable: bool
    max_context: int
    requests: int
    context: int
    stand_in: str = ""  # the label of the llama.cpp format sized instead of one its engine cannot run on this card
    via: str = ""  # the slower path the engine runs the weights through on this card


# The rows a GPU page's table of fitting models shows at most: 28 rows of four formats keep the heaviest GPU page
# under the 40 KB budget of issue 20 with its CSS and JS (benchmarks.bench).
GPU_TABLE_MODELS = 28


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
    formats: tuple[WeightFormat, ...] = ()
    budget_bytes: float = 0.0
    fp8_via: str = ""  # on a card without FP8 tensor cores, the weight-only kernels vLLM runs FP8 weights through

    @functools.cached_property
    def fitting(self) -> tuple[GpuModelRow, ...]:
        return tuple(row for row in self.rows if any(row.fits))

    @functools.cached_property
    def shown(self) -> tuple[GpuModelRow, ...]:
        """The fitting rows the table shows, in catalog order: the GPU_TABLE_MODELS largest, so that the page keeps
        its weight as the catalog grows (each model's own page lists every card that holds it)."""
        fitting = self.fitting
        largest = set(sorted(range(len(fitting)), key=lambda n: -fitting[n].model.params_b)[:GPU_TABLE_MODELS])
        return tuple(row for n, row in enumerate(fitting) if n in largest)

    @property
    def too_big(self) -> tuple[GpuModelRow, ...]:
        return tuple(row for row in self.rows if not any(row.fits))


def gpu_fit(catalog: Catalog, gpu: Gpu, model: Model, fmt: WeightFormat) -> GpuFit | None:
    """Serving on one card: the per-GPU need, comfortable or tight, the longest context one request
    can hold and how many requests of the page's context fit at once; None when it does not fit."""
    rules = catalog.rules
    assert rules.deployment is not None
    card, kv = gpu.runtime_bytes, rules.deployment.kv_formats["bf16"]
    asked, served = fmt, support.serving(rules.support, rules.deployment.weight_formats, fmt, kv, gpu)
    fmt = served.weights
    if not served.runs or (fmt.runtime == "vllm" and not deployment.valid_tensor_parallel(model.arch, 1)):
        return None
    batch = deployment.batch_defaults(rules.deployment, card, gpu.id)
    tokens = page_context(catalog, model)
    need = deployment.deployment(rules.deployment, model, fmt, kv, 1, tokens, 1, batch)
    budget = deployment.budget_bytes(rules.deployment, card)
    if need.total_bytes_per_gpu >= budget:
        return None
    free = budget - need.weights_bytes_per_gpu - need.runtime_bytes_per_gpu - need.graph_bytes_per_gpu
    per_request = need.kv_cache_bytes_per_gpu
    requests = int(free // per_request)
    reserved = deployment.reserved_tokens(rules.deployment, fmt, batch)
    paging = deployment.state_paging(rules.deployment, model.arch)
    longest = deployment.longest_context(model.arch, kv, free, model.native_context, fmt.runtime, reserved, paging)
    return GpuFit(
        asked.name,
        need.total_bytes_per_gpu / 1e9,
        need.total_bytes_per_gpu / budget,
        requests > rules.comfortable_requests,
        longest,
        requests,
        tokens,
        fmt.label if served.stands_in else "",
        support.fallback(rules.support, fmt.runtime, fmt, gpu) if rules.support else "",
    )


def gpu_page(catalog: Catalog, shop: Shop, gpu: Gpu) -> GpuPage:
    """A GPU's market and, for every catalog model, how it serves on one card in the page formats."""
    rules = catalog.rules
    assert rules.deployment is not None
    formats = tuple(rules.deployment.weight_formats[name] for name in rules.model_formats)
    rows = tuple(GpuModelRow(model, tuple(gpu_fit(catalog, gpu, model, fmt) for fmt in formats)) for model in catalog.models)
    budget = deployment.budget_bytes(rules.deployment, gpu.runtime_bytes)
    fp8 = rules.deployment.weight_formats.get("fp8")
    via = support.fallback(rules.support, fp8.runtime, fp8, gpu) if fp8 is not None and rules.support else ""
    return GpuPage(gpu, shop.markets.get(gpu.id), rows, shop.on_offer(gpu), formats, budget, via)


@dataclass(frozen=True)
class PricesPage:
    """The snapshot: every GPU on offer with its lowest price, machines and sizes."""

    rows: tuple[tuple[Gpu, Market], ...]


def prices_page(catalog: Catalog, shop: Shop) -> PricesPage:
    """The GPUs on offer, by memory then lowest price."""
    rows = [(g, shop.markets[g.id]) for g in catalog.gpus if g.id in shop.markets]
    return PricesPage(tuple(sorted(rows, key=lambda row: (row[0].memory_gb, row[1].lowest_price))))
