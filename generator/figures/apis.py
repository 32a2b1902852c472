"""Figures of the page "Self-hosting or an API?": for each model with API prices (catalogs/apis.yaml),
the marketplace's cheapest configuration per million output tokens at rules.yaml's api_page load, that
cost at a few utilisations, and the volume per day at which renting it all day costs what the API does.

Pure: engines/speed.py gives the tokens per second, engines/sizing.py the configurations that hold the load and their
prices; no files, no formatting. `prices diff` prices its rows' configurations with `usd_per_million`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from gpumem.engines import support
from gpumem.engines.sizing import Configuration, Fit, deployment_fits
from gpumem.engines.speed import MILLION, SECONDS_PER_HOUR, Load, Speed, served
from gpumem.records.catalog import ApiPageRules, ApiPrice, Catalog, Model
from gpumem.records.engines import WeightFormat

API_CURRENCY = "USD"  # apis.yaml's prices are in US dollars: compared only with a snapshot in the same currency
HOURS_PER_DAY = 24
SECONDS_PER_DAY = SECONDS_PER_HOUR * HOURS_PER_DAY


def page_load(rules: ApiPageRules) -> Load:
    """The load the page states: requests at once, each with its prompt and output lengths."""
    return Load(rules.concurrency, rules.prompt_tokens, rules.output_tokens)


def usd_per_million(catalog: Catalog, model: Model, fmt: WeightFormat, configuration: Configuration) -> float | None:
    """US$ per million output tokens of a configuration serving `model` at the page load, fully used; None without the rules."""
    rules = catalog.rules
    if rules.speed is None or rules.deployment is None or rules.api_page is None:
        return None
    kv, load = rules.deployment.kv_formats["bf16"], page_load(rules.api_page)
    fmt = support.serving(rules.support, rules.deployment.weight_formats, fmt, kv, configuration.gpu).weights
    found = served(
        rules.speed, rules.deployment, model, fmt, kv, configuration.gpu, configuration.count, load, configuration.price_per_hour
    )
    return found.usd_per_million_output_tokens


@dataclass(frozen=True)
class SelfHosted:
    """The configuration on offer that serves the load for the least per output token, and its speed."""

    fit: Fit
    speed: Speed

    @property
    def usd_per_million(self) -> float:
        """At full utilisation: the price per hour over the output tokens of an hour, per million."""
        assert self.speed.usd_per_million_output_tokens is not None  # every fit has a price
        return self.speed.usd_per_million_output_tokens

    @property
    def tokens_per_day(self) -> float:
        """Output tokens a day at full utilisation: the most the configuration can produce."""
        return self.speed.aggregate_tokens_per_s * SECONDS_PER_DAY

    @property
    def million_tokens_per_day(self) -> float:
        return self.tokens_per_day / MILLION

    @property
    def price_per_day(self) -> float:
        return self.fit.configuration.price_per_hour * HOURS_PER_DAY

    def at(self, utilisation: float) -> float:
        """US$ per million output tokens when the configuration is busy `utilisation` of the time it is rented."""
        return self.usd_per_million / utilisation

    def utilisation(self, tokens_per_day: float) -> float:
        """A reader's output tokens a day over what the configuration makes in 24 hours at the page load (above 1: more than one)."""
        return tokens_per_day / self.tokens_per_day

    def at_volume(self, tokens_per_day: float) -> float:
        """US$ per million output tokens of a reader's daily volume, on as many configurations as it takes, each rented all day."""
        return volume_cost(self.usd_per_million, self.utilisation(tokens_per_day))


def configurations_needed(utilisation: float) -> int:
    """How many copies of a configuration a utilisation takes: one up to 100 %, then one more for each started 100 %."""
    return max(1, math.ceil(utilisation))


def volume_cost(full: float, utilisation: float) -> float:
    """US$ per million output tokens at a utilisation of one configuration (`full` at 100 %): the copies it takes,
    each rented all day, over the tokens it asks for. api.js's volumeCost computes the same."""
    return full * configurations_needed(utilisation) / utilisation


def requests_tokens(requests_per_day: float, output_tokens: float) -> float:
    """The output tokens a day of a number of requests a day, each of `output_tokens`."""
    return requests_per_day * output_tokens


def api_cost(price: ApiPrice, prompt_tokens: float, output_tokens: float) -> float:
    """What an API charges per million output tokens of requests of these lengths, their prompt tokens included."""
    return price.output_usd_per_million + price.input_usd_per_million * prompt_tokens / output_tokens


@dataclass(frozen=True)
class ApiOffer:
    """One API price against the self-hosted configuration.

    `usd_per_million_at_load` is what the API charges per million output tokens of the page load,
    its prompt tokens included (the self-hosted cost includes their prefill too). `breakeven_tokens_per_day`
    is the output volume a day at which renting the configuration 24 hours costs the same;
    `breakeven_utilisation` is that volume over what the configuration can produce (above 1: it cannot), and
    `breakeven_requests_per_day` that volume in requests of the load's output length.
    """

    price: ApiPrice
    usd_per_million_at_load: float
    breakeven_tokens_per_day: float | None = None
    breakeven_utilisation: float | None = None
    breakeven_requests_per_day: float | None = None
    age_days: int = 0  # how long before the GPU snapshot the price was seen
    stale: bool = False  # seen more than api_page.stale_after_days before it: marked on the page

    @property
    def breakeven_million_tokens_per_day(self) -> float | None:
        return None if self.breakeven_tokens_per_day is None else self.breakeven_tokens_per_day / MILLION

    @property
    def reachable(self) -> bool:
        return self.breakeven_utilisation is not None and self.breakeven_utilisation <= 1


@dataclass(frozen=True)
class ModelComparison:
    """A model's API prices (cheapest at the load first) against its cheapest self-hosted configuration."""

    model: Model
    fmt: WeightFormat
    hosted: SelfHosted | None
    apis: tuple[ApiOffer, ...]

    @property
    def cheapest_api(self) -> ApiOffer:
        return self.apis[0]

    def cheapest_api_cost(self, prompt_tokens: float, output_tokens: float) -> float:
        """The least an API charges per million output tokens of requests of these lengths (api.js: cheapestApi)."""
        return min(api_cost(o.price, prompt_tokens, output_tokens) for o in self.apis)


@dataclass(frozen=True)
class ApiGuide:
    """The page's figures: its setting and one comparison per model with API prices, in catalog order."""

    setting: ApiPageRules
    models: tuple[ModelComparison, ...]

    @property
    def low(self) -> float:
        """The lowest utilisation the table shows, the one the page's example quotes."""
        return self.setting.utilisations[0]

    @property
    def low_factor(self) -> float:
        """How many times a token costs at the lowest utilisation what it costs at full use."""
        return 1 / self.low

    @property
    def first(self) -> ModelComparison | None:
        """The comparison the page's worked example uses: the first model that a configuration on offer serves."""
        return next((c for c in self.models if c.hosted is not None), None)

    def script_data(self) -> dict[str, object]:
        """What the page's script recomputes from: the load's lengths and, per model, the cost at full utilisation,
        the output tokens a day at full utilisation and each API's input and output prices."""
        return {
            "prompt": self.setting.prompt_tokens,
            "output": self.setting.output_tokens,
            "models": {
                c.model.id: {
                    "full": c.hosted.usd_per_million,
                    "day": c.hosted.tokens_per_day,
                    "apis": [[o.price.input_usd_per_million, o.price.output_usd_per_million] for o in c.apis],
                }
                for c in self.models
                if c.hosted is not None
            },
        }


def cheapest_hosted(catalog: Catalog, model: Model, fmt: WeightFormat, configurations: Iterable[Configuration]) -> SelfHosted | None:
    """Of the configurations that hold the page load, the one with the lowest US$ per million output tokens."""
    rules = catalog.rules
    assert rules.deployment is not None and rules.speed is not None and rules.api_page is not None
    load, kv = page_load(rules.api_page), rules.deployment.kv_formats["bf16"]
    tokens = load.prompt_tokens + load.output_tokens
    fits = deployment_fits(rules.deployment, model, fmt, kv, tokens, load.concurrency, configurations, 0, rules.support)
    priced = []
    for fit in fits:
        config = fit.configuration
        timed = fit.stand_in or fmt
        priced.append(
            SelfHosted(fit, served(rules.speed, rules.deployment, model, timed, kv, config.gpu, config.count, load, config.price_per_hour))
        )
    return min(priced, key=lambda h: (h.usd_per_million, h.fit.configuration.count, h.fit.configuration.gpu.id), default=None)


def api_offer(price: ApiPrice, rules: ApiPageRules, hosted: SelfHosted | None, snapshot_day: date) -> ApiOffer:
    """An API price per million output tokens of the load, where renting all day breaks even with it, and how long
    before the GPU prices it was seen."""
    at_load = api_cost(price, rules.prompt_tokens, rules.output_tokens)
    age = (snapshot_day - price.date).days
    stale = bool(rules.stale_after_days) and age > rules.stale_after_days
    if hosted is None:
        return ApiOffer(price, at_load, age_days=age, stale=stale)
    breakeven = hosted.price_per_day / at_load * MILLION
    return ApiOffer(price, at_load, breakeven, breakeven / hosted.tokens_per_day, breakeven / rules.output_tokens, age, stale)


def api_guide(catalog: Catalog, configurations: Iterable[Configuration]) -> ApiGuide | None:
    """Every catalog model with an API price, in catalog order; None when rules.yaml lacks what the page needs,
    and no model when the snapshot is not priced in US dollars, as API prices are."""
    rules = catalog.rules
    if rules.api_page is None or rules.deployment is None or rules.speed is None:
        return None
    if catalog.snapshot.currency != API_CURRENCY:
        return ApiGuide(rules.api_page, ())
    offered = tuple(configurations)
    found = []
    for model in catalog.models:
        prices = [p for p in catalog.api_prices if p.model == model.id]
        if not prices:
            continue
        fmt = rules.deployment.weight_formats[model.release]
        hosted = cheapest_hosted(catalog, model, fmt, offered)
        day = catalog.snapshot.taken_at.date()
        offers = sorted(
            (api_offer(p, rules.api_page, hosted, day) for p in prices), key=lambda o: (o.usd_per_million_at_load, o.price.provider)
        )
        found.append(ModelComparison(model, fmt, hosted, tuple(offers)))
    return ApiGuide(rules.api_page, tuple(found))
