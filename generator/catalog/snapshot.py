"""A price snapshot (catalogs/prices/): when it was taken, in what currency, and its offers, each on a
known GPU and within the price and machine-size bounds of rules.yaml. `gpumem prices import` checks
an export's rows with the same field checks before it writes one."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

from gpumem.catalog.load import LineDict
from gpumem.catalog.validate import Entry, Invalid, describe, positive_int, positive_number, text, unique, utc_time
from gpumem.errors import Problems
from gpumem.records.catalog import Offer, Rules, Snapshot

OFFER_FIELDS = ("machine", "gpu", "gpus", "price_per_gpu_hour", "country", "form_factor", "interconnect")
SNAPSHOT_FIELDS = ("taken_at", "currency", "source", "offers")
# The longest machine id, GPU name, country, form factor or interconnect a snapshot or an export
# may give: real ones are a few characters, and every page and error message repeats them.
MAX_TEXT = 100
# Characters that are not plain text on one line: controls (tab, line feed, escape), invisible
# formatting (bidirectional overrides, zero-width joiners), lone surrogates and line separators.
NOT_PLAIN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
# No marketplace export predates this; a time before it is a clock at zero or a typo.
EARLIEST_TAKEN_AT = datetime(2000, 1, 1, tzinfo=UTC)


def shown(value: Any) -> str:
    """A value as a message quotes it: on one line and short, never a whole list, mapping or huge number."""
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:30]!r}… ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of {len(str(value)) if value.bit_length() < 10000 else 'thousands of'} digits"
    return describe(value)


def line_text(value: Any) -> str:
    """One line of plain text of at most MAX_TEXT characters: a machine id, a GPU name, a country."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {shown(value)}")
    value = value.strip()
    if len(value) > MAX_TEXT:
        raise Invalid(f"expected at most {MAX_TEXT} characters, got {len(value):,}: {value[:20]!r}…")
    bad = next((c for c in value if unicodedata.category(c) in NOT_PLAIN), None)
    if bad is not None:
        raise Invalid(f"expected one line of plain text, got a control character (U+{ord(bad):04X}) in {shown(value)}")
    return value


def time_text(moment: datetime) -> str:
    """A UTC moment as messages and snapshots write it: 2026-10-31T16:52:00Z."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def taken_at_time(value: Any) -> datetime:
    """When a snapshot or an export was taken: a UTC time, not before 2000."""
    if not isinstance(value, (str, datetime)) or (isinstance(value, str) and len(value) > MAX_TEXT):
        raise Invalid(f"expected a UTC time like 2026-10-31T16:52:00Z, got {shown(value)}")
    moment = utc_time(value)
    if moment < EARLIEST_TAKEN_AT:
        raise Invalid(f"{time_text(moment)} is before {EARLIEST_TAKEN_AT.year}: no export was taken then (a clock at zero?)")
    return moment


def in_the_future(moment: datetime, now: datetime, rules: Rules) -> str | None:
    """Why a taken_at is refused as in the future, or None when it is not beyond the allowed clock skew."""
    if moment <= now + timedelta(minutes=rules.max_clock_skew_minutes):
        return None
    return (
        f"{time_text(moment)} is in the future: the clock says {time_text(now)}, and at most "
        f"{rules.max_clock_skew_minutes:g} minutes of clock skew are allowed (prices.clock in rules.yaml)"
    )


def bounded_price(value: Any, rules: Rules | None, written: str | None = None) -> float:
    """A price per GPU-hour within prices.bounds of rules.yaml; `written` is how the export wrote it."""
    shown_as = written or shown(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise Invalid(f"expected a positive number, got {shown_as}")
    if rules is not None and not value <= rules.max_price_per_gpu_hour:
        raise Invalid(
            f"{shown_as} is more than {rules.max_price_per_gpu_hour:g} per GPU-hour, the most a GPU rents for (prices.bounds in rules.yaml)"
        )
    if rules is not None and value < rules.min_price_per_gpu_hour:
        raise Invalid(
            f"{shown_as} is less than {rules.min_price_per_gpu_hour:g} per GPU-hour, the least a GPU rents for "
            "(prices.bounds in rules.yaml)"
        )
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits, when there are no rules to bound it
        number = float("inf")
    if number == float("inf"):
        raise Invalid(f"expected a finite number, got {shown_as}")
    return number


def bounded_gpus(value: Any, rules: Rules | None, written: str | None = None) -> int:
    """The GPUs of one machine: a positive integer within prices.bounds of rules.yaml."""
    shown_as = written or shown(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Invalid(f"expected a positive integer, got {shown_as}")
    if rules is not None and value > rules.max_gpus_per_machine:
        raise Invalid(
            f"{shown_as} GPUs is more than {rules.max_gpus_per_machine} in one machine, the most a machine holds "
            "(prices.bounds in rules.yaml)"
        )
    return value


line_text.expectation = " (expected text)"  # type: ignore[attr-defined]
taken_at_time.expectation = " (expected a UTC time like 2026-10-31T16:52:00Z)"  # type: ignore[attr-defined]


def read_snapshot(
    data: Any, path: str, name: str, problems: Problems, gpu_ids: set[str] | None, rules: Rules | None = None
) -> Snapshot | None:
    """A price snapshot: when it was taken and its offers, each on a known GPU and, with the
    rules, within their price and machine-size bounds. Whether taken_at is in the future or agrees
    with the file name is for the caller, which knows the clock and the other snapshots."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: snapshot: expected a mapping with taken_at, currency, source and offers")
        return None
    top = Entry(problems, path, data, "snapshot")
    top.check_keys(SNAPSHOT_FIELDS)
    taken_at = top.get("taken_at", taken_at_time)
    currency = top.get("currency", _currency)
    source = top.get("source", text)
    items = data.get("offers")
    if "offers" in data and (items is None or items == []):
        top.report(data.line_of("offers"), "offers", "no offers (a snapshot needs at least one)")
        items = []
    elif "offers" not in data:
        top.report(data.line, "offers", "missing field (expected a list of offers)")
        items = []
    elif not isinstance(items, list):
        top.report(data.line_of("offers"), "offers", f"expected a list of offers, got {shown(items)}")
        items = []
    offers: list[Offer] = []
    seen: dict[Any, int] = {}
    for index, item in enumerate(items, start=1):
        offer = _read_offer(item, index, top, seen, gpu_ids, rules)
        if offer:
            offers.append(offer)
    if top.failed or len(offers) != len(items):
        return None
    return Snapshot(name=name, taken_at=taken_at, currency=currency, source=source, offers=tuple(offers))


def _read_offer(item: Any, index: int, top: Entry, seen: dict[Any, int], gpu_ids: set[str] | None, rules: Rules | None) -> Offer | None:
    """One offer of a snapshot: a machine on a known GPU, with counts and prices within bounds."""
    if not isinstance(item, LineDict):
        top.report(top.data.line_of("offers"), f"offers[{index}]", f"expected a mapping, got {shown(item)}")
        return None
    try:
        ident = line_text(item.get("machine"))
    except Invalid:
        ident = f"offer {index}"
    entry = Entry(top.problems, top.path, item, ident)
    entry.check_keys(OFFER_FIELDS)
    machine = entry.get("machine", line_text)
    unique(entry, "machine", machine, seen)
    gpu = entry.get("gpu", line_text)
    if gpu and gpu_ids is not None and gpu not in gpu_ids:
        entry.report(item.line_of("gpu"), "gpu", f"unknown GPU {describe(gpu)} (not in gpus.yaml)")
    fields = dict(
        gpus=entry.get("gpus", (lambda value: bounded_gpus(value, rules)) if "gpus" in item else positive_int),
        price_per_gpu_hour=entry.get(
            "price_per_gpu_hour", (lambda value: bounded_price(value, rules)) if "price_per_gpu_hour" in item else positive_number
        ),
        country=entry.get("country", line_text),
        form_factor=entry.get("form_factor", line_text),
        interconnect=entry.get("interconnect", line_text),
    )
    if entry.failed:
        top.failed = True
        return None
    return Offer(machine=machine, gpu=gpu, **fields)


def _currency(value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"^[A-Z]{3}$", value):
        raise Invalid(f"expected a three-letter currency code like USD, got {describe(value)}")
    return value
