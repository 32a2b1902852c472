"""Price snapshots: a marketplace export (CSV or JSON) checked row by row and written as a validated
snapshot, whole or not at all (`gpumem prices import`)."""

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

from gpumem.catalog.inputs import read_catalog_files, read_stamp
from gpumem.catalog.load import parse_json, parse_yaml, readable_size, snapshot_files, snapshot_name
from gpumem.catalog.snapshot import (
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
from gpumem.catalog.validate import Invalid
from gpumem.errors import BuildError, Problems
from gpumem.options import MAX_FILE_BYTES
from gpumem.records.catalog import Gpu, Offer, Rules

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
    if skip and data.startswith(codecs.BOM_UTF8, skip):  # read as text, the second would start the first column's name
        raise BuildError([f"{path}: starts with two byte-order marks (EF BB BF twice), not one; save the export as UTF-8 once"])
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
    if not readable_size(size := len(content.encode())):
        raise BuildError(
            [f"{target}: the snapshot would be {size:,} bytes, larger than the {MAX_FILE_BYTES:,} a build reads; nothing was written"]
        )
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
    """Write a snapshot whole or not at all, and never over another: a temporary file of a unique
    name, then a hard link to the snapshot's name, which fails if that name exists. Of two imports
    for one moment, the one that links second finds the other's snapshot: the same bytes are the
    same import, other bytes its error (os.replace would have put one export over the other, each
    import saying it wrote its own).

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
        try:
            os.link(temporary, target)
        except FileExistsError:
            _same_file(target, content)  # raises unless it is this very snapshot
    except OSError as error:
        raise BuildError([f"{target}: cannot write: {error.strerror or error}"]) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
