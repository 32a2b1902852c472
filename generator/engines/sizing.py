"""Sizing: which GPU configurations the snapshot offers, which holds a need, at what price.

Pure functions over records: no files, no formatting.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpumem.engines import deployment, support
from gpumem.engines.deployment import Deployment
from gpumem.records.catalog import Gpu, Model, Offer
from gpumem.records.engines import DeploymentRules, KvFormat, SupportRules, WeightFormat


@dataclass(frozen=True)
class Configuration:
    """`count` identical GPUs in each of `machines` machines, at the snapshot's lowest price."""

    gpu: Gpu
    count: int
    price_per_hour: float
    machines: int = 1

    @property
    def total_gpus(self) -> int:
        return self.count * self.machines

    @property
    def memory_gb(self) -> float:
        return self.gpu.memory_gb * self.total_gpus

    @property
    def price_per_gpu_hour(self) -> float:
        return self.price_per_hour / self.total_gpus

    def order(self) -> tuple:
        """Least total memory first; then fewer GPUs; then the lower price."""
        return (self.machines, self.memory_gb, self.total_gpus, self.price_per_hour, self.gpu.id)


@dataclass(frozen=True)
class Shortfall:
    """A need beyond the snapshot: the machines of one GPU it would take, and how many are on offer."""

    gpu: Gpu
    count: int
    machines: int
    offered: int


@dataclass(frozen=True)
class Choice:
    """The smallest configuration that holds a need, and every GPU that gives the same one; past
    everything on offer, what it would take (`short`)."""

    need_gb: float
    options: tuple[Configuration, ...]
    tight: bool = False
    short: Shortfall | None = None

    @property
    def best(self) -> Configuration | None:
        return self.options[0] if self.options else None


@dataclass(frozen=True)
class Market:
    """What the snapshot offers of one GPU model."""

    gpu_id: str
    lowest_price: float
    machines: int
    gpus: int
    sizes: tuple[int, ...]


def market(offers: Iterable[Offer]) -> dict[str, Market]:
    """Per GPU on offer: lowest price per GPU-hour, machines, GPUs and machine sizes."""
    by_gpu: dict[str, list[Offer]] = defaultdict(list)
    for offer in offers:
        by_gpu[offer.gpu].append(offer)
    return {
        gpu_id: Market(
            gpu_id=gpu_id,
            lowest_price=min(o.price_per_gpu_hour for o in found),
            machines=len(found),
            gpus=sum(o.gpus for o in found),
            sizes=tuple(sorted({o.gpus for o in found})),
        )
        for gpu_id, found in sorted(by_gpu.items())
    }


def offered_configurations(gpus: Iterable[Gpu], offers: Iterable[Offer], counts: Iterable[int]) -> tuple[Configuration, ...]:
    """n x one GPU for each n in `counts` that some machine holds, at n x its lowest price."""
    offers = tuple(offers)
    found = []
    for gpu in gpus:
        prices = [(o.gpus, o.price_per_gpu_hour) for o in offers if o.gpu == gpu.id]
        for count in counts:
            fitting = [price for size, price in prices if size >= count]
            if fitting:
                found.append(Configuration(gpu, count, count * min(fitting)))
    return tuple(found)


def multi_machine_configurations(gpus: Iterable[Gpu], offers: Iterable[Offer], count: int, need_gb: float) -> tuple[Configuration, ...]:
    """Several `count`-GPU machines of one GPU, as many as the need takes and the snapshot has."""
    offers = tuple(offers)
    found = []
    for gpu in gpus:
        prices = sorted(o.price_per_gpu_hour for o in offers if o.gpu == gpu.id and o.gpus >= count)
        machines = machines_beyond(need_gb, gpu, count)
        if prices and machines <= len(prices):
            found.append(Configuration(gpu, count, count * sum(prices[:machines]), machines))
    return tuple(found)


def machines_beyond(need_gb: float, gpu: Gpu, count: int) -> int:
    """Machines of `count` GPUs whose memory exceeds the need: a need equal to it does not fit."""
    return math.floor(need_gb / (gpu.memory_gb * count)) + 1


def shortfall(gpus: Iterable[Gpu], offers: Iterable[Offer], count: int, need_gb: float) -> Shortfall | None:
    """The GPU on offer in machines of `count` that would take the fewest machines, and how many that is."""
    offers = tuple(offers)
    found = []
    for gpu in gpus:
        offered = sum(1 for o in offers if o.gpu == gpu.id and o.gpus >= count)
        if offered:
            found.append(Shortfall(gpu, count, machines_beyond(need_gb, gpu, count), offered))
    return min(found, key=lambda s: (s.machines, s.gpu.id), default=None)


def valid_counts(counts: Iterable[int], heads: int | None) -> tuple[int, ...]:
    """GPU counts tensor parallelism accepts: each must divide the attention heads."""
    return tuple(n for n in counts if heads is None or heads % n == 0)


def is_tight(need_gb: float, memory_gb: float, extra_gb: float, min_free_fraction: float) -> bool:
    """Too little room left: under the free fraction, or under the extra requests' cache."""
    return memory_gb - need_gb < max(min_free_fraction * memory_gb, extra_gb)


def smallest_configuration(
    need_gb: float,
    configurations: Iterable[Configuration],
    *,
    heads: int | None = None,
    extra_gb: float = 0.0,
    min_free_fraction: float = 0.0,
    beyond: Iterable[Configuration] = (),
) -> Choice:
    """The configuration with the least total memory that holds the need (serving: heads rule).

    `beyond` are multi-machine configurations, considered only when no single machine holds it.
    """
    allowed = [c for c in configurations if heads is None or heads % c.count == 0]
    holding = [c for c in allowed if c.memory_gb > need_gb]  # at 100 % it does not fit
    if not holding:
        holding = [c for c in beyond if c.memory_gb > need_gb and (heads is None or heads % c.count == 0)]
    if not holding:
        return Choice(need_gb, ())
    best = min(holding, key=Configuration.order)
    same = [c for c in holding if (c.machines, c.total_gpus, c.memory_gb) == (best.machines, best.total_gpus, best.memory_gb)]
    options = tuple(sorted(same, key=lambda c: (c.price_per_hour, c.gpu.id)))
    return Choice(need_gb, options, is_tight(need_gb, best.memory_gb, extra_gb, min_free_fraction))


@dataclass(frozen=True)
class Fit:
    """A configuration that holds a deployment: its per-GPU need, the budget it fits in, and whether
    it also holds a few more requests at the same context (comfortable) or only these (tight)."""

    configuration: Configuration
    need: Deployment
    budget_bytes: float
    comfortable: bool
    stand_in: WeightFormat | None = None  # the llama.cpp format sized instead of one its engine cannot run here
    via: str = ""  # the slower path the engine runs the weights through on this card (support.fallback)

    @property
    def share(self) -> float:
        """The part of the budget the workload takes (under 1 by definition of a fit)."""
        return self.need.total_bytes_per_gpu / self.budget_bytes


@dataclass(frozen=True)
class Planned:
    """One single-machine configuration whose GPU runs the formats: the weights it runs with (a stand-in or
    the asked ones), the slower path if any, and vLLM's batch defaults and budget for its card."""

    configuration: Configuration
    weights: WeightFormat
    stands_in: bool
    via: str
    batch: deployment.Batch
    budget: float


def cheapest_first(configuration: Configuration) -> tuple:
    """The order fits are listed in: price per hour, then fewer GPUs, then the GPU id."""
    return (configuration.price_per_hour, configuration.total_gpus, configuration.gpu.id)


# The plans of this build, by the identity of the objects they were made from (the rules, the offers and
# the support table are records a build makes once and does not change), kept with those objects so that
# an identity is never reused while its plan is kept; emptied by forget() at each build.
_PLANS: dict[tuple, tuple[tuple[object, ...], tuple[Planned, ...]]] = {}


def remembered_plan(
    rules: DeploymentRules,
    fmt: WeightFormat,
    kv: KvFormat,
    configurations: Iterable[Configuration],
    support_rules: SupportRules | None,
    settings: deployment.Settings,
) -> tuple[Planned, ...]:
    """What deployment_fits tries, cheapest first: everything in it but the model and the workload. Worked out
    once per formats and settings for the same rules, offers and support table (a model page asks for some
    twenty fits, each over the same forty configurations); a one-off set of offers (a single GPU, as the
    speed rows ask) is not kept."""
    key = (id(rules), id(configurations), id(support_rules), fmt, kv, settings)
    known = _PLANS.get(key)
    if known is not None and known[0][0] is rules and known[0][1] is configurations and known[0][2] is support_rules:
        return known[1]
    per_gpu: dict[str, Planned | None] = {}  # what each GPU runs the formats with, its batch and budget; None: it cannot
    found = []
    for configuration in sorted(configurations, key=cheapest_first):
        gpu = configuration.gpu
        if configuration.machines > 1:
            continue
        if gpu.id not in per_gpu:
            served = support.serving(support_rules, rules.weight_formats, fmt, kv, gpu)
            via = support.fallback(support_rules, served.weights.runtime, served.weights, gpu) if support_rules else ""
            batch = settings.applied(deployment.batch_defaults(rules, gpu.runtime_bytes, gpu.id))
            budget = deployment.budget_bytes(rules, gpu.runtime_bytes)
            per_gpu[gpu.id] = Planned(configuration, served.weights, served.stands_in, via, batch, budget) if served.runs else None
        planned = per_gpu[gpu.id]
        if planned is not None:
            found.append(replace(planned, configuration=configuration))
    made = tuple(found)
    if isinstance(configurations, tuple) and len(configurations) > 1:
        _PLANS[key] = ((rules, configurations, support_rules), made)
    return made


def forget() -> None:
    """Empty the remembered plans (figures.site_figures does so at each build)."""
    _PLANS.clear()


def deployment_fits(
    rules: DeploymentRules,
    model: Model,
    fmt: WeightFormat,
    kv: KvFormat,
    tokens: int,
    requests: int,
    configurations: Iterable[Configuration],
    more_requests: int,
    support_rules: SupportRules | None = None,
    settings: deployment.Settings = deployment.DEFAULTS,
) -> tuple[Fit, ...]:
    """Every single-machine configuration whose GPUs hold the workload, cheapest first, at vLLM's
    defaults for each card or the engine `settings` given.

    vLLM needs a tensor-parallel size it accepts; llama.cpp splits layers and takes any count.
    With `support_rules`, a GPU whose engine cannot run the formats is left out, or sized with the
    llama.cpp format that stands in for the weights (engines/support.serving).
    Comfortable: the same GPUs also hold `more_requests` more requests of `tokens` tokens.
    The need depends on the GPU count and the card's batch defaults alone, so it is counted once
    for each pair they make (a few) rather than for every configuration (some forty).
    """
    found = []
    needs: dict[tuple[str, int, int, int, bool], tuple[Deployment, float]] = {}  # the need and its total per GPU
    roomy: dict[tuple[str, int, int, int, bool], float] = {}
    valid: dict[int, bool] = {}
    for planned in remembered_plan(rules, fmt, kv, configurations, support_rules, settings):
        use, batch, count = planned.weights, planned.batch, planned.configuration.count
        if use.runtime == "vllm":
            if count not in valid:
                valid[count] = deployment.valid_tensor_parallel(model.arch, count)
            if not valid[count]:
                continue
        key = (use.name, count, batch.tokens, batch.sequences, batch.cuda_graphs)
        if key not in needs:
            need = deployment.deployment(rules, model, use, kv, count, tokens, requests, batch)
            needs[key] = (need, need.total_bytes_per_gpu)
        need, total = needs[key]
        if total >= planned.budget:
            continue
        if key not in roomy:
            roomy[key] = deployment.deployment(rules, model, use, kv, count, tokens, requests + more_requests, batch).total_bytes_per_gpu
        stand_in = use if planned.stands_in else None
        found.append(Fit(planned.configuration, need, planned.budget, roomy[key] < planned.budget, stand_in, planned.via))
    return tuple(found)  # the plan is cheapest first
