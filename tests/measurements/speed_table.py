"""The speed engine against published measurements: one row per point, with its error in the fit and with
its source left out of the fit (fit_speed.left_out), and the error table docs/measurements/speed.md shows.

Usage: .venv/bin/python -m tests.measurements.speed_table [--write]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpumem.catalog.hf_config import model_from_config
from gpumem.catalog.inputs import load_catalog
from gpumem.engines.speed import Load, Speed, served
from gpumem.records.catalog import KEPT_PARTS, Catalog, Model, Repo
from gpumem.records.engines import ENGINE_LABELS, SpeedRules

from ..project import REPO
from .generated import Generated, main

HERE = Path(__file__).parent
POINTS = HERE / "speed.yaml"
CONFIG_FOLDERS = (REPO / "tests" / "fixtures" / "catalogs" / "measurements" / "configs", HERE / "speed_configs")
BOUNDS = {"decode": 0.25, "aggregate": 0.35}  # each point's bound; prefill and ttft are reported only
SHARES = {"decode": 0.85, "aggregate": 0.70}  # issue 24: the share of each engine's left-out points within the bound
UNITS = {"decode": "tok/s", "aggregate": "tok/s", "prefill": "tok/s", "ttft": "s"}
CHECKS = ("decode", "aggregate", "prefill", "ttft")
ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp")  # each fitted on its own runs (fit_speed.py)
FIGURES = {
    "decode": "decode_tokens_per_s_per_request",
    "aggregate": "aggregate_tokens_per_s",
    "prefill": "prefill_tokens_per_s",
    "ttft": "ttft_s",
}
DOC = Generated("speed.md", "tests.measurements.speed_table")


@dataclass(frozen=True)
class Row:
    """One measured point and what the engine predicts for it."""

    point: str
    check: str
    engine: str
    gpu: str
    gpus: int
    model: str
    measured: float
    predicted: float
    excluded: str
    left_out: float | None = None  # the prediction with the point's source left out of the fit (None: excluded)

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def left_out_error(self) -> float | None:
        return None if self.left_out is None else self.left_out / self.measured - 1


def points() -> list[dict[str, Any]]:
    return yaml.safe_load(POINTS.read_text())["points"]


def catalog() -> Catalog:
    return load_catalog(REPO / "tests" / "fixtures" / "catalogs")


def models(found: Catalog) -> dict[str, Model]:
    """Catalog models, plus the measured models the catalog lacks, read from their config.json."""
    known = {model.id: model for model in found.models}
    for folder in CONFIG_FOLDERS:
        for path in sorted(folder.glob("*.json")):
            if path.stem not in known:
                config = json.loads(path.read_text())
                known[path.stem] = model_from_config(config, found.rules.calculator_limits, path.stem, path.stem, str(path))
    return known


def model_of(known: dict[str, Model], point: dict[str, Any]) -> Model:
    """A point's model, with what its checkpoint keeps at 16 bits (`kept`: parts of records.catalog.KEPT_PARTS, as
    a models.yaml repository lists them) when the point says so."""
    model, kept = known[point["model_id"]], tuple(point.get("kept", ()))
    if not kept:
        return model
    assert set(kept) <= set(KEPT_PARTS), point["id"]
    return replace(model, repos={**model.repos, point["weights"]: Repo(point["weights"], "", point["url"], kept=kept)})


def predicted(point: dict[str, Any], found: Catalog, model: Model, rules: SpeedRules) -> float:
    """The engine's figure in the unit of the point's check, with the factors of the engine that ran it."""
    deployment = found.rules.deployment
    assert deployment is not None
    runtime = point["engine"]
    load = Load(int(point["concurrency"]), int(point["prompt_tokens"]), int(point["output_tokens"]))
    fmt, kv = deployment.weight_formats[point["weights"]], deployment.kv_formats[point["kv"]]
    gpu, gpus = found.gpu(point["gpu"]), int(point["gpus"])
    result = served(rules, deployment, model, fmt, kv, gpu, gpus, load, runtime=runtime)
    return figure(result, point["check"])


def figure(result: Speed, check: str) -> float:
    """The figure of a Speed a check compares with its measurement."""
    return getattr(result, FIGURES[check])


@cache
def left_out() -> dict[str, float]:
    """Each point's prediction with its source left out of the fit (fit_speed.left_out), by point id."""
    from .fit_speed import left_out as refit
    from .fit_speed import terms

    return {row.terms.id: row.predicted for row in refit(terms())}


def rows(rules: SpeedRules | None = None) -> tuple[Row, ...]:
    found = catalog()
    rules = rules or found.rules.speed
    assert rules is not None
    known = models(found)
    unseen = left_out()
    return tuple(
        Row(
            point=p["id"],
            check=p["check"],
            engine=p["engine"],
            gpu=p["gpu"],
            gpus=int(p["gpus"]),
            model=p["model_id"],
            measured=float(p["measured"]),
            predicted=predicted(p, found, model_of(known, p), rules),
            excluded=p.get("excluded", ""),
            left_out=unseen.get(p["id"]),
        )
        for p in points()
    )


def summary(found: tuple[Row, ...], engine: str, check: str) -> str:
    """One engine's check over its points that are not excluded: count, and the mean and worst |error| left out
    (within the bound, for decode and aggregate), then in the fit."""
    chosen = [row for row in found if row.engine == engine and row.check == check and not row.excluded]
    unseen = [abs(row.left_out_error) for row in chosen if row.left_out_error is not None]
    seen = [abs(row.error) for row in chosen]
    text = f"{engine} {check}: {len(chosen)} points; left out, mean |error| {math.fsum(unseen) / len(unseen):.1%}, worst {max(unseen):.1%}"
    if check in BOUNDS:
        inside = sum(1 for error in unseen if error <= BOUNDS[check])
        text += f", {inside} within ±{BOUNDS[check]:.0%} (at least {SHARES[check]:.0%} required)"
    return text + f"; in the fit, mean {math.fsum(seen) / len(seen):.1%}, worst {max(seen):.1%}"


def table(found: tuple[Row, ...]) -> str:
    """One summary line per engine and check as a list, then the error table as Markdown."""
    engines = sorted({row.engine for row in found if not row.excluded})
    lines = [
        f"- {summary(found, engine, check)}"
        for engine in engines
        for check in CHECKS
        if any(row.engine == engine and row.check == check and not row.excluded for row in found)
    ]
    lines += ["", "| point | check | GPUs | measured | engine | error in the fit | source left out |", "|---|---|---|---|---|---|---|"]
    for row in found:
        unit = UNITS[row.check]
        digits = 3 if unit == "s" else 1
        unseen = f"not enforced: {row.excluded}" if row.left_out_error is None else f"{row.left_out_error:+.1%}"
        lines.append(
            f"| {row.point} | {row.check} | {row.gpus} × {row.gpu} | {row.measured:,.{digits}f} {unit} "
            f"| {row.predicted:,.{digits}f} {unit} | {row.error:+.1%} | {unseen} |"
        )
    return "\n".join(lines)


def readme_table(found: tuple[Row, ...]) -> str:
    """README's table: per engine, its points within the bound and the mean |error|, each predicted with its
    source left out of the fit."""
    lines = ["| engine | one request: within ±25%, mean \\|error\\| | under load: within ±35%, mean |", "|---|---|---|"]
    for engine in ENGINES:
        name = ENGINE_LABELS[engine]
        cells = []
        for check in ("decode", "aggregate"):
            errors = [
                abs(row.left_out_error) for row in found if row.engine == engine and row.check == check and row.left_out_error is not None
            ]
            inside = sum(1 for error in errors if error <= BOUNDS[check])
            cells.append(f"{inside} of {len(errors)}, {math.fsum(errors) / len(errors):.1%}" if errors else "not measured")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main(DOC, lambda: table(rows()))
