"""Price snapshots: import a marketplace export into a validated snapshot, and diff two snapshots."""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import compute
from .build import load_catalog
from .errors import BuildError, Problems
from .load import parse_yaml, snapshot_name
from .records import Catalog, Gpu, Offer
from .render import Formats
from .validate import Invalid, positive_int, positive_number, read_snapshot, text, utc_time

REQUIRED = ("machine_id", "gpu", "gpus", "price_per_gpu_hour", "country")
OPTIONAL = ("form_factor", "interconnect")
TIME_FIELDS = ("taken_at", "timestamp")


@dataclass(frozen=True)
class Row:
    """One row of an export: where it stands (a line or an index) and its values as read."""

    where: str
    values: dict[str, Any]
    label: str = ""


def read_export(path: Path, kind: str, problems: Problems) -> tuple[list[Row], Any]:
    """The rows of a CSV or JSON export and its own timestamp field, if any."""
    try:
        data = path.read_text(encoding="utf-8")
    except OSError as error:
        raise BuildError([f"{path}: cannot read: {error.strerror or error}"]) from None
    if kind == "csv":
        reader = csv.DictReader(io.StringIO(data))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise BuildError([f"{path}:1: header: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"])
        rows = [Row(f"{path}:{reader.line_num}", dict(row), f"line {reader.line_num}") for row in reader]
        stamps = {str(row.values[f]) for row in rows for f in TIME_FIELDS if row.values.get(f)}
        if len(stamps) > 1:
            problems.add_raw(f"{path}: taken_at: rows disagree on the time ({', '.join(sorted(stamps))})")
        return rows, next(iter(stamps), None)
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        raise BuildError([f"{path}:{error.lineno}:{error.colno}: JSON syntax error: {error.msg}"]) from None
    stamp = next((document.get(f) for f in TIME_FIELDS if isinstance(document, dict) and document.get(f)), None)
    items = document.get("offers") if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise BuildError([f"{path}: expected a list of offers, or an object with an 'offers' list"])
    rows = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.add_raw(f"{path}: row {index}: expected an object with {', '.join(REQUIRED)}")
            continue
        rows.append(Row(f"{path}: row {index}", item, f"row {index}"))
    return rows, stamp


def gpu_names(gpus: tuple[Gpu, ...]) -> dict[str, str]:
    """Catalog ids and aliases, lower-cased, to catalog ids."""
    names = {}
    for gpu in gpus:
        names[gpu.id.lower()] = gpu.id
        for alias in gpu.aliases:
            names[alias.lower()] = gpu.id
    return names


def read_offer(row: Row, names: dict[str, str], seen: dict[str, str], problems: Problems) -> Offer | None:
    """One row as an offer on a catalog GPU; every problem reported with the row."""
    values = row.values
    found: dict[str, Any] = {}
    machine = str(values.get("machine_id") or "").strip() or "?"
    checks = {"machine_id": text, "gpu": text, "gpus": _integer, "price_per_gpu_hour": _number, "country": text}
    for field, check in checks.items():
        if field not in values:
            problems.add_raw(f"{row.where}: {machine}: {field}: missing column")
            continue
        try:
            found[field] = check(values[field])
        except Invalid as error:
            problems.add_raw(f"{row.where}: {machine}: {field}: {error}")
    if "gpu" in found and found["gpu"].lower() not in names:
        problems.add_raw(f"{row.where}: {machine}: gpu: unknown GPU {found['gpu']!r} (not a catalog id or alias in gpus.yaml)")
        found.pop("gpu")
    if "machine_id" in found:
        if found["machine_id"] in seen:
            problems.add_raw(f"{row.where}: {machine}: machine_id: duplicate machine id (first on {seen[found['machine_id']]})")
            found.pop("machine_id")
        else:
            seen[found["machine_id"]] = row.label
    if len(found) < len(checks):
        return None
    extra = {field: str(values.get(field) or "unknown").strip() or "unknown" for field in OPTIONAL}
    return Offer(found["machine_id"], names[found["gpu"].lower()], found["gpus"], found["price_per_gpu_hour"], found["country"], **extra)


def _integer(value: Any) -> int:
    """A positive whole number from a CSV cell or a JSON value; errors quote what was written."""
    try:
        return positive_int(int(value.strip()) if isinstance(value, str) else value)
    except (ValueError, Invalid):
        raise Invalid(f"expected a positive integer, got {value!r}") from None


def _number(value: Any) -> float:
    """A positive number from a CSV cell or a JSON value; errors quote what was written."""
    try:
        return positive_number(float(value.strip()) if isinstance(value, str) else value)
    except (ValueError, Invalid):
        raise Invalid(f"expected a positive number, got {value!r}") from None


def snapshot_yaml(moment: datetime, currency: str, source: str, offers: list[Offer]) -> str:
    """A snapshot file: one flow mapping per machine, ordered by machine id."""
    lines = [
        "# Price snapshot: the marketplace's offers at one moment, written by gpumem prices import.",
        f"taken_at: {moment.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"currency: {currency}",
        f"source: {json.dumps(source)}",
        "offers:",
    ]
    for o in sorted(offers, key=lambda offer: offer.machine):
        fields = [
            f"machine: {json.dumps(o.machine)}",
            f"gpu: {o.gpu}",
            f"gpus: {o.gpus}",
            f"price_per_gpu_hour: {o.price_per_gpu_hour!r}",
            f"country: {json.dumps(o.country)}",
            f"form_factor: {json.dumps(o.form_factor)}",
            f"interconnect: {json.dumps(o.interconnect)}",
        ]
        lines.append("  - {" + ", ".join(fields) + "}")
    return "\n".join(lines) + "\n"


def import_export(path: Path, catalogs: Path, kind: str | None, taken_at: str | None, currency: str) -> Path:
    """Turn a marketplace export into catalogs/prices/<time>.yaml; nothing is written if any row is bad."""
    kind = kind or ("json" if path.suffix.lower() == ".json" else "csv")
    catalog = load_catalog(catalogs)
    problems = Problems()
    rows, own_time = read_export(path, kind, problems)
    names = gpu_names(catalog.gpus)
    seen: dict[str, str] = {}
    offers = [offer for row in rows if (offer := read_offer(row, names, seen, problems))]
    if not rows:
        problems.add_raw(f"{path}: no offers (an export needs at least one row)")
    stamp = taken_at or own_time
    moment = None
    if stamp is None:
        problems.add_raw(f"{path}: taken_at: the export has no taken_at field; pass --taken-at, e.g. --taken-at 2026-11-07T09:00:00Z")
    else:
        try:
            moment = utc_time(stamp)
        except Invalid as error:
            problems.add_raw(f"{'--taken-at' if taken_at else str(path)}: taken_at: {error}")
    problems.raise_if_any()
    assert moment is not None  # a missing or bad time is a problem raised above
    target = catalogs / "prices" / snapshot_name(moment)
    content = snapshot_yaml(moment, currency, f"Imported from {path.name} by gpumem prices import", offers)
    check = Problems()
    read_snapshot(parse_yaml(content, str(target), check), str(target), target.stem, check, {g.id for g in catalog.gpus})
    check.raise_if_any()
    if target.exists() and target.read_text(encoding="utf-8") != content:
        raise BuildError([f"{target}: a different snapshot for this time already exists; nothing was written"])
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(content, encoding="utf-8")
    os.replace(temporary, target)
    return target


@dataclass(frozen=True)
class CellChange:
    page: str
    row: str
    column: str
    before: str
    after: str


def _offer_text(choice: compute.Choice, f: Formats) -> str:
    """A recommendation as the diff prints it: count, GPU names and price per hour."""
    best = choice.best
    if best is None:
        return "nothing on offer"
    names = "/".join(o.gpu.name for o in choice.options)
    machines = f"{best.machines} machines of " if best.machines > 1 else ""
    return f"{machines}{best.count} × {names} {f.money(best.price_per_hour)}/h"


def table_cells(catalog: Catalog) -> dict[tuple[str, str, str], compute.Choice]:
    """Every recommendation a guide table shows, by (page, row, column), with English URLs."""
    figures = compute.site_figures(catalog)
    cells = {}
    for table in (figures.main.serving, figures.main.fine_tuning):
        for row in table.rows:
            for cell in row.cells:
                cells[("/en/guides/gpu-memory/", f"{table.kind} {row.size.label} ({row.model.name})", cell.column)] = cell.choice
    for model, needs in figures.calculator.rows:
        for need in needs:
            cells[("/en/calculator/", model.name, need.key)] = need.choice
    for model_id, page in figures.models.items():
        url = f"/en/models/{model_id}/"
        for need in page.serving:
            cells[(url, "serving", need.key)] = need.choice
        for need in page.fine_tuning:
            cells[(url, "fine-tuning", need.key)] = need.choice
        for context in page.contexts:
            cells[(url, f"{context.tokens} tokens", "1 request")] = context.choice_one
            cells[(url, f"{context.tokens} tokens", f"{page.requests} requests")] = context.choice_many
    return cells


def diff(old: Path, new: Path, catalogs: Path) -> str:
    """What changes from one snapshot to another: lowest prices, GPUs on offer, table cells."""
    before, after = load_catalog(catalogs, old), load_catalog(catalogs, new)
    f = Formats("en", after.snapshot.currency)
    lines = [f"{before.snapshot.name} → {after.snapshot.name}"]
    old_market, new_market = compute.Shop(before).markets, compute.Shop(after).markets
    names = {g.id: g.name for g in after.gpus}
    changed = [g for g in sorted(set(old_market) & set(new_market)) if old_market[g].lowest_price != new_market[g].lowest_price]
    lines.append(f"Lowest price per GPU-hour ({len(changed)} changed):")
    for g in changed:
        lines.append(f"  {names[g]}: {f.money(old_market[g].lowest_price)} → {f.money(new_market[g].lowest_price)}")
    appear, vanish = sorted(set(new_market) - set(old_market)), sorted(set(old_market) - set(new_market))
    lines.append("GPUs that appear: " + (", ".join(f"{names[g]} (from {f.money(new_market[g].lowest_price)})" for g in appear) or "none"))
    lines.append("GPUs that vanish: " + (", ".join(names[g] for g in vanish) or "none"))
    old_cells, new_cells = table_cells(before), table_cells(after)
    changes = [
        CellChange(page, row, column, _offer_text(old_cells[key], f), _offer_text(new_cells[key], f))
        for key in old_cells
        for page, row, column in [key]
        if key in new_cells and _offer_text(old_cells[key], f) != _offer_text(new_cells[key], f)
    ]
    lines.append(f"Guide-table cells that change ({len(changes)}):")
    lines += [f"  {c.page} | {c.row} | {c.column}: {c.before} → {c.after}" for c in changes]
    return "\n".join(lines)
