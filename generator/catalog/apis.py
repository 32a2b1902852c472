"""API prices of open models (catalogs/apis.yaml) and the rules.yaml block of the page that compares
them with renting GPUs (api_page): read and validated, every problem as `file:line: id: field: message`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gpumem.catalog.load import LineDict
from gpumem.catalog.validate import (
    Entry,
    Invalid,
    at_most,
    citation,
    describe,
    number_list,
    positive_int,
    positive_number,
    read_list_file,
    text,
    url,
)
from gpumem.errors import Problems
from gpumem.records.catalog import ApiPageRules, ApiPrice

FIELDS = ("provider", "model", "input_usd_per_million", "output_usd_per_million", "date", "source", "quantization")
PAGE_FIELDS = (
    "concurrency",
    "prompt_tokens",
    "output_tokens",
    "utilisations",
    "min_usd_per_million",
    "max_usd_per_million",
    "stale_after_days",
    "source",
)


def read_api_page(top: Entry, sources: dict[str, str]) -> ApiPageRules | None:
    """rules.yaml's api_page: the load, the utilisations shown (fractions up to 1) and the price bounds."""
    section = top.section("api_page")
    if section is None:
        return None
    section.check_keys(PAGE_FIELDS)
    sources["api_page"] = section.get("source", citation) or ""
    values = {
        "concurrency": section.get("concurrency", at_most(positive_int, 100_000)),
        "prompt_tokens": section.get("prompt_tokens", at_most(positive_int, 10_000_000)),
        "output_tokens": section.get("output_tokens", at_most(positive_int, 10_000_000)),
        "utilisations": section.get("utilisations", number_list(at_most(positive_number, 1))),
        "min_usd_per_million": section.get("min_usd_per_million", positive_number),
        "max_usd_per_million": section.get("max_usd_per_million", positive_number),
        "stale_after_days": section.get("stale_after_days", at_most(positive_int, 3650), required=False, default=0),
    }
    low, high = values["min_usd_per_million"], values["max_usd_per_million"]
    if low is not None and high is not None and low >= high:
        line = section.data.line_of("min_usd_per_million")
        section.report(line, "min_usd_per_million", f"{low:g} is not less than max_usd_per_million ({high:g})")
    top.failed = top.failed or section.failed
    return None if section.failed else ApiPageRules(**values)


def read_apis(
    path: Path,
    label: str,
    problems: Problems,
    model_ids: set[str],
    formats: set[str],
    page: ApiPageRules | None,
    snapshot_day: date,
) -> tuple[ApiPrice, ...]:
    """apis.yaml: an `apis` list, every problem reported; a missing file holds no price.

    A price must be seen no later than the snapshot it is compared with, and lie within
    api_page's bounds of rules.yaml (a price in cents or per thousand tokens falls outside).
    """
    read = read_list_file(path, label, problems, "apis", "apis")
    if read is None:
        return ()
    top, data, items = read
    if not isinstance(items, list):
        top.report(data.line_of("apis"), "apis", f"expected a list of API prices, got {describe(items)}")
        return ()
    prices: list[ApiPrice] = []
    seen: dict[Any, int] = {}
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            top.report(data.line_of("apis"), "apis", f"entry {index}: expected a mapping of fields, got {describe(item)}")
            continue
        provider = item.get("provider")
        ident = f"{provider} {item.get('model')}" if isinstance(provider, str) and len(provider) <= 60 else f"entry {index}"
        price = _read_price(Entry(problems, label, item, ident), model_ids, formats, page, snapshot_day, seen)
        if price is not None:
            prices.append(price)
    return tuple(prices)


def _read_price(
    entry: Entry, model_ids: set[str], formats: set[str], page: ApiPageRules | None, snapshot_day: date, seen: dict[Any, int]
) -> ApiPrice | None:
    """One price: a provider, a catalog model, plausible prices, a date not after the snapshot, an http(s) source."""
    entry.check_keys(FIELDS)
    money = _usd_per_million(page)
    weight_format = known_id(formats, "weight format", "deployment.weight_formats of rules.yaml")
    fields = dict(
        provider=entry.get("provider", text),
        model=entry.get("model", known_id(model_ids, "model", "models.yaml")),
        input_usd_per_million=entry.get("input_usd_per_million", money),
        output_usd_per_million=entry.get("output_usd_per_million", money),
        date=entry.get("date", _seen_by(snapshot_day)),
        source=entry.get("source", url),
        quantization=entry.get("quantization", weight_format, required=False, default=""),
    )
    key = (fields["provider"], fields["model"], fields["quantization"], fields["date"])
    if None not in key and key in seen:
        entry.report(entry.data.line, "date", f"the same provider, model, quantization and date as the entry on line {seen[key]}")
    seen.setdefault(key, entry.data.line)
    return None if entry.failed else ApiPrice(**fields)


def known_id(ids: set[str], what: str, where: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in ids:
            raise Invalid(f"unknown {what} {describe(value)} (not in {where})")
        return value

    return check


def _usd_per_million(page: ApiPageRules | None) -> Callable[[Any], float]:
    """US dollars per million tokens: positive, and within api_page's bounds when rules.yaml has them."""

    def check(value: Any) -> float:
        number = positive_number(value)
        if page is not None and not page.min_usd_per_million <= number <= page.max_usd_per_million:
            raise Invalid(
                f"{number:g} is outside {page.min_usd_per_million:g}–{page.max_usd_per_million:g} US$ per million tokens, "
                "the range of a plausible API price (api_page in rules.yaml): a price in cents, or per thousand tokens?"
            )
        return number

    return check


def _seen_by(snapshot_day: date) -> Callable[[Any], date]:
    """A day like 2025-08-12, not after the snapshot's day: a price is compared with the market of its time or later."""

    def check(value: Any) -> date:
        if isinstance(value, datetime) or not isinstance(value, date):
            raise Invalid(f"expected a date like 2025-08-12, got {describe(value)}")
        if value > snapshot_day:
            raise Invalid(
                f"{value.isoformat()} is after the price snapshot ({snapshot_day.isoformat()}): "
                "a price seen later cannot be compared with that market"
            )
        return value

    return check
