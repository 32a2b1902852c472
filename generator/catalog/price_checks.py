"""Other providers' dated prices (catalogs/price_checks.yaml): read, validated, and compared with
the snapshot's lowest price of the same GPU. The comparison is pure: no I/O, no formatting."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gpumem.catalog.load import LineDict
from gpumem.catalog.snapshot import bounded_price
from gpumem.catalog.validate import Entry, Invalid, describe, prose, read_list_file, text, url
from gpumem.engines.sizing import Market
from gpumem.errors import Problems
from gpumem.records.catalog import Gpu, PriceCheck, Rules, Snapshot

FIELDS = ("provider", "gpu", "usd_per_gpu_hour", "checked_on", "url", "note")
# A check is priced in US dollars: it is compared only with a snapshot in the same currency.
CURRENCY = "USD"


def read_price_checks(
    path: Path, label: str, problems: Problems, gpu_ids: set[str] | None, rules: Rules | None, today: date
) -> tuple[PriceCheck, ...]:
    """price_checks.yaml: a `checks` list, every problem reported; a missing or empty file holds no check."""
    read = read_list_file(path, label, problems, "checks", "price checks")
    if read is None:
        return ()
    top, data, items = read
    if items is None:
        return ()
    if not isinstance(items, list):
        top.report(data.line_of("checks"), "checks", f"expected a list of price checks, got {describe(items)}")
        return ()
    checks: list[PriceCheck] = []
    seen: dict[Any, int] = {}
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            top.report(data.line_of("checks"), "checks", f"entry {index}: expected a mapping of fields, got {describe(item)}")
            continue
        check = _read_check(Entry(problems, label, item, f"check {index}"), gpu_ids, rules, today, seen)
        if check is not None:
            checks.append(check)
    return tuple(checks)


def _read_check(entry: Entry, gpu_ids: set[str] | None, rules: Rules | None, today: date, seen: dict[Any, int]) -> PriceCheck | None:
    """One check: a provider, a catalog GPU, a plausible price, a past date and the page it was read on."""
    entry.check_keys(FIELDS)
    fields = dict(
        provider=entry.get("provider", text),
        gpu=entry.get("gpu", _known_gpu(gpu_ids)),
        usd_per_gpu_hour=entry.get("usd_per_gpu_hour", lambda value: bounded_price(value, rules)),
        checked_on=entry.get("checked_on", _past_date(today)),
        url=entry.get("url", url),
        note=entry.get("note", prose, required=False, default=""),
    )
    key = (fields["provider"], fields["gpu"], fields["checked_on"])
    if None not in key and key in seen:
        entry.report(entry.data.line, "checked_on", f"the same provider, GPU and date as the check on line {seen[key]}")
    seen.setdefault(key, entry.data.line)
    return None if entry.failed else PriceCheck(**fields)


def _known_gpu(ids: set[str] | None) -> Any:
    def check(value: Any) -> str:
        if not isinstance(value, str) or (ids is not None and value not in ids):
            raise Invalid(f"unknown GPU {describe(value)} (not in gpus.yaml)")
        return value

    return check


def _past_date(today: date) -> Any:
    """A day like 2026-10-29, not after the build's clock."""

    def check(value: Any) -> date:
        if isinstance(value, datetime) or not isinstance(value, date):
            raise Invalid(f"expected a date like 2026-10-29, got {describe(value)}")
        if value > today:
            raise Invalid(f"{value.isoformat()} is in the future: the clock says {today.isoformat()}")
        return value

    return check


@dataclass(frozen=True)
class Comparison:
    """A price check beside the snapshot's lowest price of the same GPU.

    status: compared | stale (older than the limit: not compared) | not_on_offer |
    other_currency (the snapshot is not priced in US dollars). `difference` is the snapshot's
    lowest price relative to the check's: -0.15 means 15 % lower, 0.17 means 17 % higher.
    """

    check: PriceCheck
    gpu: Gpu
    status: str
    age_days: int  # from the check's date to the snapshot's taken_at
    max_age_days: int
    snapshot_taken_at: datetime
    lowest_price: float | None = None
    difference: float | None = None

    @property
    def currency(self) -> str:
        return CURRENCY

    @property
    def direction(self) -> str:
        """lower, higher or same: the snapshot's price against the check's, as a whole per cent shows it."""
        if self.difference is None or round(abs(self.difference) * 100) == 0:
            return "same"
        return "lower" if self.difference < 0 else "higher"


def compare_prices(
    checks: tuple[PriceCheck, ...], gpus: tuple[Gpu, ...], snapshot: Snapshot, markets: dict[str, Market], max_age_days: int
) -> tuple[Comparison, ...]:
    """Every check against the snapshot, in the GPU catalog's order then by date; a stale one or one without an offer is never compared.

    Age is counted from the snapshot's taken_at, never from the clock, so a build is the same whenever it runs.
    """
    known = {gpu.id: gpu for gpu in gpus}
    order = {gpu.id: index for index, gpu in enumerate(gpus)}
    found = []
    for check in sorted(checks, key=lambda c: (order[c.gpu], c.checked_on, c.provider)):
        age = (snapshot.taken_at.date() - check.checked_on).days
        common: dict[str, Any] = dict(check=check, gpu=known[check.gpu], age_days=age, max_age_days=max_age_days)
        common["snapshot_taken_at"] = snapshot.taken_at
        market = markets.get(check.gpu)
        if age > max_age_days:
            found.append(Comparison(status="stale", **common))
        elif market is None:
            found.append(Comparison(status="not_on_offer", **common))
        elif snapshot.currency != CURRENCY:
            found.append(Comparison(status="other_currency", lowest_price=market.lowest_price, **common))
        else:
            difference = market.lowest_price / check.usd_per_gpu_hour - 1
            found.append(Comparison(status="compared", lowest_price=market.lowest_price, difference=difference, **common))
    return tuple(found)
