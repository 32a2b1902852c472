"""Reading the catalogs and a price snapshot into one validated Catalog: the files of catalogs/
(models, GPUs, rules, the snapshot chosen among the prices folder's, the measured points, other
providers' prices and the API prices), every problem reported at once. What a build has read
(Inputs) is held here too, since every stage after this one receives it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpumem.catalog.apis import read_apis
from gpumem.catalog.files import label
from gpumem.catalog.gpus import read_gpus
from gpumem.catalog.hf_config import count
from gpumem.catalog.load import (
    SNAPSHOT_NAME,
    ContentPage,
    LineDict,
    read_measurements,
    read_taken_at,
    read_yaml,
    snapshot_files,
    snapshot_name,
    snapshot_time,
)
from gpumem.catalog.models import read_models
from gpumem.catalog.price_checks import read_price_checks
from gpumem.catalog.rules import read_rules
from gpumem.catalog.snapshot import in_the_future, read_snapshot, taken_at_time, time_text
from gpumem.catalog.validate import Invalid
from gpumem.errors import Problems
from gpumem.options import Options
from gpumem.records.catalog import Catalog, Gpu, Model, Rules, Site


@dataclass(frozen=True)
class Inputs:
    """Everything a build reads, validated, and where it was read from."""

    options: Options
    catalog: Catalog
    site: Site
    content: dict[tuple[str, str], ContentPage]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Stamp:
    """A snapshot file's taken_at and the line it stands on."""

    path: Path
    moment: datetime
    line: int

    @property
    def label(self) -> str:
        return label(self.path)


def read_stamp(path: Path, problems: Problems) -> Stamp | None:
    """A snapshot's taken_at from its `taken_at:` line alone (the whole file only when it has no
    such line); None, with the problem reported, when it has no valid one."""
    try:
        found = read_taken_at(path)
    except IsADirectoryError:
        problems.add_raw(f"{label(path)}: a folder named like a snapshot (a snapshot is a file); rename or remove it")
        return None
    except OSError as error:
        problems.add_raw(f"{label(path)}: cannot read: {error.strerror or error}")
        return None
    except UnicodeDecodeError as error:
        problems.add_raw(f"{label(path)}: taken_at: not UTF-8 text (invalid byte 0x{error.object[error.start]:02x})")
        return None
    if found is None:  # no top-level `taken_at:` line: YAML says whether it is elsewhere or missing
        data = read_yaml(path, label(path), problems)
        if not isinstance(data, LineDict):
            if data is not None:
                problems.add_raw(f"{label(path)}:1: snapshot: expected a mapping with taken_at, currency, source and offers")
            return None
        if "taken_at" not in data:
            problems.add(label(path), data.line, "snapshot", "taken_at", "missing field (expected a UTC time like 2026-10-31T16:52:00Z)")
            return None
        found = (data["taken_at"], data.line_of("taken_at"))
    value, line = found
    try:
        return Stamp(path, taken_at_time(value), line)
    except Invalid as error:
        problems.add(label(path), line, "snapshot", "taken_at", str(error))
        return None


def choose_snapshot(catalogs: Path, prices: Path | None, problems: Problems) -> tuple[Path | None, tuple[Stamp, ...]]:
    """The snapshot to build from (the latest taken_at unless named) and the others of the prices
    folder, latest first. The others are read by their taken_at line alone (read_stamp); the chosen
    one is read whole by read_catalog, and check_stamps checks them all together."""
    prices_dir = catalogs / "prices"
    named = prices.resolve() if prices is not None else None
    files = [path for path in snapshot_files(prices_dir) if named is None or path.resolve() != named]
    stamps = sorted(
        (stamp for path in files if (stamp := read_stamp(path, problems))), key=lambda stamp: (stamp.moment, stamp.path.name), reverse=True
    )
    if prices is not None:
        return prices, tuple(stamps)
    if not files:
        problems.add_raw(f"{label(prices_dir)}: no price snapshot (expected files named like 2026-10-31T16-52Z.yaml)")
    if not stamps:  # none, or none with a valid taken_at (each reported)
        return None, ()
    return stamps[0].path, tuple(stamps[1:])


def check_stamps(
    chosen: Stamp | None, others: tuple[Stamp, ...], prices_dir: Path, problems: Problems, rules: Rules | None, now: datetime
) -> None:
    """Every snapshot's taken_at: not in the future, as its file name says, and no two of one moment.

    A file named otherwise than a snapshot (--prices FILE, say a draft) has no name to agree with,
    and one outside the prices folder is not compared with the folder's.
    """
    everyone = ([chosen] if chosen else []) + list(others)
    for stamp in everyone:
        if rules is not None and (future := in_the_future(stamp.moment, now, rules)) is not None:
            problems.add(stamp.label, stamp.line, "snapshot", "taken_at", future)
        if not SNAPSHOT_NAME.match(stamp.path.name):
            continue
        try:
            named = snapshot_time(stamp.path.name)
        except ValueError:
            problems.add(stamp.label, stamp.line, "snapshot", "taken_at", f"the file name {stamp.path.name} is not a valid time")
            continue
        if named != stamp.moment.replace(microsecond=0):
            problems.add(
                stamp.label,
                stamp.line,
                "snapshot",
                "taken_at",
                f"{time_text(stamp.moment)} disagrees with the file name, which says {time_text(named)}; "
                f"rename the file to {snapshot_name(stamp.moment)} or correct taken_at",
            )
    first: dict[datetime, Stamp] = {}
    in_folder = [*others, *([chosen] if chosen and chosen.path.resolve().parent == prices_dir.resolve() else [])]
    for stamp in sorted(in_folder, key=lambda stamp: stamp.path.name):  # the others are all of the folder
        if stamp.moment in first:
            problems.add(
                stamp.label,
                stamp.line,
                "snapshot",
                "taken_at",
                f"{time_text(stamp.moment)} is also the taken_at of {first[stamp.moment].label}; keep one snapshot of each moment",
            )
        else:
            first[stamp.moment] = stamp


def declared_ids(data: object, key: str) -> set[str] | None:
    """Ids a catalog file declares, valid or not, so references to them are not reported twice."""
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        return None
    return {item["id"] for item in data[key] if isinstance(item, dict) and isinstance(item.get("id"), str)}


def declared_formats(rules: object) -> set[str] | None:
    """Weight formats rules.yaml declares, valid or not, for the models' release formats."""
    deployment = rules.get("deployment") if isinstance(rules, dict) else None
    table = deployment.get("weight_formats") if isinstance(deployment, dict) else None
    return {str(name) for name in table} if isinstance(table, dict) else None


def read_catalog_files(catalogs: Path, problems: Problems) -> tuple[tuple[Model, ...], tuple[Gpu, ...], Rules | None, set[str] | None]:
    """models.yaml, gpus.yaml and rules.yaml, validated, and the GPU ids gpus.yaml declares."""
    paths = {name: catalogs / f"{name}.yaml" for name in ("models", "gpus", "rules")}
    raw = {name: read_yaml(path, label(path), problems) for name, path in paths.items()}
    formats = declared_formats(raw["rules"])
    models = read_models(raw["models"], label(paths["models"]), problems, formats) if raw["models"] is not None else ()
    gpus = read_gpus(raw["gpus"], label(paths["gpus"]), problems) if raw["gpus"] is not None else ()
    model_ids, gpu_ids = declared_ids(raw["models"], "models"), declared_ids(raw["gpus"], "gpus")
    rules = read_rules(raw["rules"], label(paths["rules"]), problems, model_ids, gpu_ids) if raw["rules"] is not None else None
    return models, gpus, rules, gpu_ids


def read_catalog(catalogs: Path, prices: Path | None, problems: Problems, now: datetime | None = None) -> Catalog | None:
    """The catalogs and one price snapshot, validated; None when any of them has a problem.

    `now` is the build's clock: no snapshot may be taken later (beyond the clock skew of rules.yaml).
    """
    models, gpus, rules, gpu_ids = read_catalog_files(catalogs, problems)
    snapshot_path, others = choose_snapshot(catalogs, prices, problems)
    snapshot = chosen = None
    if snapshot_path is not None:
        shown = label(snapshot_path)
        data = read_yaml(snapshot_path, shown, problems)
        if data is not None:
            snapshot = read_snapshot(data, shown, snapshot_path.stem, problems, gpu_ids, rules)
        if isinstance(data, LineDict) and "taken_at" in data:
            with contextlib.suppress(Invalid):  # reported by read_snapshot
                chosen = Stamp(snapshot_path, taken_at_time(data["taken_at"]), data.line_of("taken_at"))
    check_stamps(chosen, others, catalogs / "prices", problems, rules, now or datetime.now(UTC))
    if problems.found or rules is None or snapshot is None:
        return None
    earlier = tuple(stamp.path.stem for stamp in others if stamp.moment != snapshot.taken_at)
    points, configs = read_measurements(catalogs / "measurements", problems)
    check_configs(catalogs / "measurements/configs", configs, rules, problems)
    checks_path = catalogs / "price_checks.yaml"
    checks = read_price_checks(checks_path, label(checks_path), problems, gpu_ids, rules, (now or datetime.now(UTC)).date())
    apis_path = catalogs / "apis.yaml"
    formats = set(rules.deployment.weight_formats) if rules.deployment else set()
    apis = read_apis(apis_path, label(apis_path), problems, {m.id for m in models}, formats, rules.api_page, snapshot.taken_at.date())
    if problems.found:
        return None
    return Catalog(models, gpus, rules, snapshot, earlier, points, configs, price_checks=checks, api_prices=apis)


def check_configs(folder: Path, configs: dict[str, dict], rules: Rules, problems: Problems) -> None:
    """The measured architectures' config.json files, counted as `gpumem estimate --config` counts one."""
    for name, config in configs.items():
        try:
            count(config, rules.calculator_limits)
        except Invalid as error:
            problems.add_raw(f"{label(folder / f'{name}.json')}: {error}")


def load_catalog(catalogs: Path, prices: Path | None = None, now: datetime | None = None) -> Catalog:
    """The catalogs and a snapshot alone (no site, no content), or one BuildError."""
    problems = Problems()
    catalog = read_catalog(catalogs, prices, problems, now)
    problems.raise_if_any()
    assert catalog is not None  # no problem means every part was read
    return catalog
