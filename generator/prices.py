"""Price snapshots: import a marketplace export into a validated snapshot, and diff two snapshots."""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import compute
from .build import load_catalog, read_catalog_files, read_stamp
from .compute_api import usd_per_million
from .errors import BuildError, Problems
from .figures import SiteFigures, site_figures
from .load import parse_json, parse_yaml, snapshot_files, snapshot_name
from .read_snapshot import (
    MAX_TEXT,
    _currency,
    bounded_gpus,
    bounded_price,
    in_the_future,
    line_text,
    read_snapshot,
    shown,
    taken_at_time,
    time_text,
)
from .records import Catalog, Gpu, Offer, Rules
from .render import Formats
from .sizing import Choice, Fit
from .validate import Invalid

REQUIRED = ("machine_id", "gpu", "gpus", "price_per_gpu_hour", "country")
OPTIONAL = ("form_factor", "interconnect")
TIME_FIELDS = ("taken_at", "timestamp")
FILE_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a pipe",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}
INTEGER = re.compile(r"^[0-9]+$")
DECIMAL = re.compile(r"^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


@dataclass(frozen=True)
class Row:
    """One row of an export: where it stands (a line or an index) and its values as read."""

    where: str
    values: dict[str, Any]
    label: str = ""


def read_text(path: Path) -> str:
    """An export's text: a regular file of UTF-8, with or without Excel's byte-order mark."""
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = FILE_KINDS.get(stat.S_IFMT(mode), "something else")
            raise BuildError([f"{path}: not a regular file ({kind}); give the export as a file"])
        data = path.read_bytes()
    except OSError as error:
        raise BuildError([f"{path}: cannot read: {error.strerror or error}"]) from None
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = skip + error.start
        line = data.count(b"\n", 0, offset) + 1
        raise BuildError(
            [f"{path}: not UTF-8 text (invalid byte 0x{data[offset]:02x} at offset {offset}, line {line}); save the export as UTF-8"]
        ) from None


def read_export(path: Path, kind: str, problems: Problems) -> tuple[list[Row], Any]:
    """The rows of a CSV or JSON export and its own timestamp field, if any."""
    data = read_text(path)
    if kind == "csv":
        return _read_csv(path, data, problems)
    document = parse_json(data, str(path), "an export is a list of offers, each an object of values")
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


def _read_csv(path: Path, data: str, problems: Problems) -> tuple[list[Row], Any]:
    """CSV rows with exactly as many cells as the header; CRLF or LF line ends, cells quoted or not."""
    reader = csv.reader(io.StringIO(data, newline=""))
    header: list[str] | None = None
    rows: list[Row] = []
    end = 0
    while True:
        start = end + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            end = reader.line_num
            if header is None:  # without a header no row can be read
                raise BuildError([f"{path}:{end}: header: {_csv_error(error)}"]) from None
            problems.add_raw(f"{path}:{end}: ?: cells: {_csv_error(error)}")
            continue
        end = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue  # a blank line
        if header is None:
            header = [cell.strip() for cell in cells]
            _check_header(path, header)
            continue
        values = dict(zip(header, cells, strict=False))
        if len(cells) != len(header):
            machine = _ident(values.get("machine_id"))
            hint = "; quote a value that holds a comma, and write prices with a decimal point" if len(cells) > len(header) else ""
            problems.add_raw(f"{path}:{start}: {machine}: cells: expected {len(header)} cells as in the header, found {len(cells)}{hint}")
            continue
        rows.append(Row(f"{path}:{start}", values, f"line {start}"))
    if header is None:
        _check_header(path, [])
    stamps = sorted({str(row.values[f]).strip() for row in rows for f in TIME_FIELDS if str(row.values.get(f) or "").strip()})
    if len(stamps) > 1:
        listed = ", ".join(shown(stamp) for stamp in stamps[:3]) + (f" and {len(stamps) - 3} more" if len(stamps) > 3 else "")
        problems.add_raw(f"{path}: taken_at: rows disagree on the time ({listed})")
    return rows, next(iter(stamps), None)


def _check_header(path: Path, header: list[str]) -> None:
    """The header must name every required column, and no column twice."""
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise BuildError([f"{path}:1: header: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"])
    twice = sorted({c for c in header if c and header.count(c) > 1})
    if twice:
        raise BuildError([f"{path}:1: header: column{'s' if len(twice) > 1 else ''} {', '.join(twice)} given twice"])


def _csv_error(error: csv.Error) -> str:
    """Python's CSV error in the export's terms."""
    message = str(error)
    if "field larger than field limit" in message:
        return f"a cell of more than {csv.field_size_limit():,} characters (no value of an export needs more than {MAX_TEXT})"
    return f"unreadable CSV: {message}"


def _ident(value: Any) -> str:
    """A machine id as messages name a row: '?' when it is missing or not a short line of text."""
    try:
        return line_text(value)
    except Invalid:
        return "?"


def gpu_names(gpus: tuple[Gpu, ...]) -> dict[str, str]:
    """Catalog ids and aliases, lower-cased, to catalog ids."""
    names = {}
    for gpu in gpus:
        names[gpu.id.lower()] = gpu.id
        for alias in gpu.aliases:
            names[alias.lower()] = gpu.id
    return names


def read_offer(row: Row, names: dict[str, str], seen: dict[str, str], problems: Problems, rules: Rules | None = None) -> Offer | None:
    """One row as an offer on a catalog GPU; every problem reported with the row."""
    values = row.values
    found: dict[str, Any] = {}
    machine = _ident(values.get("machine_id"))
    checks = {
        "machine_id": line_text,
        "gpu": line_text,
        "gpus": lambda value: _integer(value, rules),
        "price_per_gpu_hour": lambda value: _number(value, rules),
        "country": line_text,
    }
    for field, check in checks.items():
        if field not in values:
            problems.add_raw(f"{row.where}: {machine}: {field}: missing column")
            continue
        try:
            found[field] = check(values[field])
        except Invalid as error:
            problems.add_raw(f"{row.where}: {machine}: {field}: {error}")
    for field in OPTIONAL:
        value = values.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            found[field] = "unknown"
            continue
        try:
            found[field] = line_text(value)
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
    if len(found) < len(checks) + len(OPTIONAL):
        return None
    return Offer(
        found["machine_id"],
        names[found["gpu"].lower()],
        found["gpus"],
        found["price_per_gpu_hour"],
        found["country"],
        found["form_factor"],
        found["interconnect"],
    )


def _integer(value: Any, rules: Rules | None = None) -> int:
    """A positive whole number of GPUs from a CSV cell (digits only) or a JSON value; errors quote what was written."""
    if isinstance(value, str):
        cell = value.strip()
        if not INTEGER.match(cell) or len(cell) > MAX_TEXT:
            raise Invalid(f"expected a positive integer, got {shown(value)}")
        return bounded_gpus(int(cell), rules, shown(value))
    return bounded_gpus(value, rules)


def _number(value: Any, rules: Rules | None = None) -> float:
    """A positive price from a CSV cell (a decimal point, no thousands separators) or a JSON value."""
    if isinstance(value, str):
        cell = value.strip()
        if not DECIMAL.match(cell) or len(cell) > MAX_TEXT:
            hint = " (write prices with a decimal point)" if re.match(r"^[0-9]+,[0-9]+$", cell) else ""
            raise Invalid(f"expected a positive number, got {shown(value)}{hint}")
        return bounded_price(float(cell), rules, shown(value))
    return bounded_price(value, rules)


def snapshot_yaml(moment: datetime, currency: str, source: str, offers: list[Offer]) -> str:
    """A snapshot file: one flow mapping per machine, ordered by machine id."""
    lines = [
        "# Price snapshot: the marketplace's offers at one moment, written by gpumem prices import.",
        f"taken_at: {time_text(moment)}",
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


def import_export(path: Path, catalogs: Path, kind: str | None, taken_at: str | None, currency: str, now: datetime | None = None) -> Path:
    """Turn a marketplace export into catalogs/prices/<time>.yaml; nothing is written if any row is bad.

    `now` is the clock the export's time may not be later than (beyond the clock skew of rules.yaml).
    """
    kind = kind or ("json" if path.suffix.lower() == ".json" else "csv")
    now = now or datetime.now(UTC)
    problems = Problems()
    _, gpus, rules, _ = read_catalog_files(catalogs, problems)
    problems.raise_if_any()
    assert rules is not None  # no problem means rules.yaml was read
    try:
        _currency(currency)
    except Invalid as error:
        problems.add_raw(f"--currency: {error}")
    rows, own_time = read_export(path, kind, problems)
    names = gpu_names(gpus)
    seen: dict[str, str] = {}
    offers = [offer for row in rows if (offer := read_offer(row, names, seen, problems, rules))]
    if not rows and not problems.found:
        problems.add_raw(f"{path}: no offers (an export needs at least one row)")
    stamp = taken_at or own_time
    moment = None
    where = "--taken-at" if taken_at else str(path)
    if stamp is None:
        problems.add_raw(f"{path}: taken_at: the export has no taken_at field; pass --taken-at, e.g. --taken-at 2026-11-07T09:00:00Z")
    else:
        try:
            moment = taken_at_time(stamp).replace(microsecond=0)  # a snapshot records whole seconds
        except Invalid as error:
            problems.add_raw(f"{where}: taken_at: {error}")
    if moment is not None and (future := in_the_future(moment, now, rules)):
        problems.add_raw(f"{where}: taken_at: {future}")
    problems.raise_if_any()
    assert moment is not None  # a missing or bad time is a problem raised above
    target = catalogs / "prices" / snapshot_name(moment)
    content = snapshot_yaml(moment, currency, f"Imported from {path.name} by gpumem prices import", offers)
    check = Problems()
    read_snapshot(parse_yaml(content, str(target), check), str(target), target.stem, check, {g.id for g in gpus}, rules)
    check.raise_if_any()
    _check_folder(target, moment)
    if not _same_file(target, content):
        write_snapshot(target, content)
    return target


def _check_folder(target: Path, moment: datetime) -> None:
    """The new snapshot may not take the moment of another file of the prices folder."""
    others = (path for path in snapshot_files(target.parent) if path.name != target.name)
    for stamp in (read_stamp(path, Problems()) for path in others):
        if stamp is not None and stamp.moment == moment:
            raise BuildError([f"{target}: taken_at: {time_text(moment)} is already the taken_at of {stamp.label}; nothing was written"])


def _same_file(target: Path, content: str) -> bool:
    """Whether the target already holds this snapshot (an export imported twice); another one there is an error."""
    try:
        existing = target.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise BuildError([f"{target}: cannot read: {error.strerror or error}"]) from None
    if existing != content.encode():
        raise BuildError([f"{target}: a different snapshot for this time already exists; nothing was written"])
    return True


def write_snapshot(target: Path, content: str) -> None:
    """Write a snapshot whole or not at all: a temporary file of a unique name, then os.replace.

    The temporary name starts with a dot and does not end in Z.yaml, so a build never reads it.
    """
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    if target.parent.exists() and not target.parent.is_dir():
        raise BuildError([f"{target}: cannot write: {target.parent} is not a folder"])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for any file
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content.encode())
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise BuildError([f"{target}: cannot write: {error.strerror or error}"]) from None


@dataclass(frozen=True)
class CellChange:
    page: str
    row: str
    column: str
    before: str
    after: str


def _offer_text(choice: Choice, f: Formats) -> str:
    """A recommendation as the diff prints it: count, GPU names and price per hour."""
    best = choice.best
    if best is None:
        return "nothing on offer"
    names = "/".join(o.gpu.name for o in choice.options)
    machines = f"{best.machines} machines of " if best.machines > 1 else ""
    return f"{machines}{best.count} × {names} {f.money(best.price_per_hour)}/h"


def _fit_text(fit: Fit | None, f: Formats) -> str:
    """A deployment recommendation as the diff prints it: count, GPU and price per hour."""
    if fit is None:
        return "nothing on offer"
    config = fit.configuration
    return f"{config.count} × {config.gpu.name} {f.money(config.price_per_hour)}/h"


def table_cells(catalog: Catalog, figures: SiteFigures | None = None) -> dict[tuple[str, str, str], Choice | Fit | None]:
    """Every recommendation a guide table shows, by (page, row, column), with English URLs."""
    figures = figures or site_figures(catalog)
    cells: dict[tuple[str, str, str], Choice | Fit | None] = {}
    for table in (figures.main.serving, figures.main.fine_tuning):
        for row in table.rows:
            for cell in row.cells:
                cells[("/en/guides/gpu-memory/", f"{table.kind} {row.size.label} ({row.model.name})", cell.column)] = cell.choice
    for model, fits in figures.calculator.rows:
        for format_fit in fits:
            cells[("/en/calculator/", model.name, format_fit.fmt.name)] = format_fit.cheapest
    for model_id, page in figures.models.items():
        url = f"/en/models/{model_id}/"
        for need in page.serving:
            cells[(url, "serving", need.key)] = need.choice
        for need in page.fine_tuning:
            cells[(url, "fine-tuning", need.key)] = need.choice
        for context in page.contexts:
            cells[(url, f"{context.tokens} tokens", "1 request")] = context.choice_one
            cells[(url, f"{context.tokens} tokens", f"{page.requests} requests")] = context.choice_many
        for format_fit in page.formats:
            cells[(url, "deployment", format_fit.fmt.name)] = format_fit.cheapest
    return cells


def cost_cells(catalog: Catalog, figures: SiteFigures | None = None) -> dict[tuple[str, str, str], float | None]:
    """The US$ per million output tokens of every deployment row's configuration (the calculator's and the
    model pages'), at the load of the page "Self-hosting or an API?"; None where nothing on offer holds it.
    Keyed as table_cells keys the same rows."""
    figures = figures or site_figures(catalog)
    rows = [("/en/calculator/", model.name, model, fit) for model, fits in figures.calculator.rows for fit in fits]
    for model_id, page in figures.models.items():
        rows += [(f"/en/models/{model_id}/", "deployment", catalog.model(model_id), fit) for fit in page.formats]
    return {
        (page, row, fit.fmt.name): usd_per_million(catalog, model, fit.fmt, fit.cheapest.configuration) if fit.cheapest else None
        for page, row, model, fit in rows
    }


def _cost_text(value: float | None, f: Formats) -> str:
    return "nothing on offer" if value is None else f.money(value, 3)


def cost_changes(before: Catalog, after: Catalog, old: dict, new: dict, f: Formats) -> list[str]:
    """Lines of the diff for the cost per million output tokens: old → new and the change in per cent."""
    setting = after.rules.api_page
    if setting is None:
        return []
    changed = [key for key in old if key in new and _cost_text(old[key], f) != _cost_text(new[key], f)]
    load = f"{setting.concurrency} requests of {setting.prompt_tokens:,} prompt and {setting.output_tokens:,} output tokens"
    lines = [f"Cost per million output tokens at {load}, a roofline estimate ({len(changed)} changed):"]
    for page, row, column in changed:
        was, now = old[(page, row, column)], new[(page, row, column)]
        change = f" ({now / was - 1:+.1%})" if was is not None and now is not None else ""
        lines.append(f"  {page} | {row} | {column}: {_cost_text(was, f)} → {_cost_text(now, f)}{change}")
    return lines


def _cell_text(cell: Choice | Fit | None, f: Formats) -> str:
    return _offer_text(cell, f) if isinstance(cell, Choice) else _fit_text(cell, f)


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
    old_figures, new_figures = site_figures(before), site_figures(after)
    old_cells, new_cells = table_cells(before, old_figures), table_cells(after, new_figures)
    changes = [
        CellChange(page, row, column, _cell_text(old_cells[key], f), _cell_text(new_cells[key], f))
        for key in old_cells
        for page, row, column in [key]
        if key in new_cells and _cell_text(old_cells[key], f) != _cell_text(new_cells[key], f)
    ]
    lines.append(f"Guide-table cells that change ({len(changes)}):")
    lines += [f"  {c.page} | {c.row} | {c.column}: {c.before} → {c.after}" for c in changes]
    lines += cost_changes(before, after, cost_cells(before, old_figures), cost_cells(after, new_figures), f)
    return "\n".join(lines)
