"""The error table of the deployment model against the measured points, as docs/measurements/serving-memory.md shows it.

Usage: .venv/bin/python -m tests.measurements.compare [--write]
"""

from __future__ import annotations

import json

import yaml

from gpumem.catalog.inputs import load_catalog
from gpumem.figures.measured import BOUNDS, Row, rows, summaries

from ..project import REPO
from .generated import Generated, main

MEASUREMENTS = REPO / "tests" / "fixtures" / "catalogs" / "measurements"
DOC = Generated("serving-memory.md", "tests.measurements.compare")


def points() -> list[dict]:
    return yaml.safe_load((MEASUREMENTS / "serving.yaml").read_text())["points"]


def all_rows() -> tuple[Row, ...]:
    catalog_rules = load_catalog(REPO / "tests" / "fixtures" / "catalogs").rules
    rules = catalog_rules.deployment
    assert rules is not None
    configs = {path.stem: json.loads(path.read_text()) for path in sorted((MEASUREMENTS / "configs").glob("*.json"))}
    return rows(points(), configs, rules, catalog_rules.calculator_limits)


def table(found: tuple[Row, ...]) -> str:
    """Each check's summary as a list, then the error table as Markdown, one line per check."""
    lines = [
        f"- {summary.check}: {summary.count} enforced points, mean |error| {summary.mean_error:.1%}, "
        f"worst {summary.worst_error:.1%} (bound ±{summary.bound:.0%})"
        for summary in summaries(found)
    ]
    lines += ["", "| point | check | measured | engine | error | bound |", "|---|---|---|---|---|---|"]
    for row in found:
        bound = f"±{BOUNDS[row.check]:.0%}" if not row.excluded else f"not enforced: {row.excluded}"
        lines.append(
            f"| {row.point} | {row.check}{f' ({row.device})' if row.device else ''} | {_shown(row.measured, row.check)} | {_shown(row.predicted, row.check)} | {row.error:+.1%} | {bound} |"
        )
    return "\n".join(lines)


def _shown(value: float, check: str) -> str:
    if check == "concurrency":
        return f"{value:,.2f}x"
    if check == "state":
        return f"{value / 2**20:,.2f} MiB"
    if check == "kv" and value < 10**7:
        return f"{value:,.0f} B/token"
    return f"{value / 2**20:,.2f} MiB" if check == "compute" else f"{value / 2**30:,.2f} GiB"


if __name__ == "__main__":
    main(DOC, lambda: table(all_rows()))
