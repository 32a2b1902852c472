"""The llama.cpp speed draft (catalogs/measurements/drafts/speed_llamacpp.yaml): every point complete and sourced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .test_speed_drafts_serving import CHECKS
from .test_speed_drafts_serving import REQUIRED as SERVING_REQUIRED

DRAFT = Path(__file__).resolve().parent.parent / "catalogs" / "measurements" / "drafts" / "speed_llamacpp.yaml"

REQUIRED = (*SERVING_REQUIRED, "notes")  # the serving draft's keys, and notes on every point


def problems(points: list[dict[str, Any]]) -> list[str]:
    """What is wrong with each point, one sentence per fault, in the order of the file."""
    found: list[str] = []
    seen: set[str] = set()
    for index, point in enumerate(points):
        name = f"point {index} ({point.get('id', 'no id')})"
        missing = [key for key in REQUIRED if key not in point]
        if missing:
            found.append(f"{name}: missing {', '.join(missing)}")
        measured = point.get("measured")
        if not isinstance(measured, (int, float)) or isinstance(measured, bool) or measured <= 0:
            found.append(f"{name}: measured {measured!r} is not a positive number")
        if point.get("check") not in CHECKS:
            found.append(f"{name}: check {point.get('check')!r} is not one of {', '.join(CHECKS)}")
        if not str(point.get("url", "")).startswith(("https://", "http://")):
            found.append(f"{name}: url {point.get('url')!r} is not http(s)")
        if not str(point.get("quote") or "").strip():
            found.append(f"{name}: empty quote")
        if point.get("id") in seen:
            found.append(f"{name}: id used twice")
        seen.add(point.get("id", ""))
    return found


def good(**changes: Any) -> dict[str, Any]:
    point: dict[str, Any] = {key: "x" for key in REQUIRED}
    point.update(id="p", check="decode", measured=12.5, url="https://example.org/run", quote="| tg128 | 12.50 ± 0.01 |")
    point.update(changes)
    return point


def test_a_complete_point_has_no_problem():
    assert problems([good(id="a"), good(id="b", check="prefill", measured=3)]) == []


def test_each_fault_is_named_with_its_point():
    broken = {key: value for key, value in good(id="c").items() if key not in ("version", "notes")}
    assert problems(
        [
            good(id="a", measured=0),
            good(id="b", check="throughput", url="ftp://example.org", quote="  "),
            broken,
            good(id="a", measured="12"),
        ]
    ) == [
        "point 0 (a): measured 0 is not a positive number",
        "point 1 (b): check 'throughput' is not one of decode, aggregate, prefill, ttft",
        "point 1 (b): url 'ftp://example.org' is not http(s)",
        "point 1 (b): empty quote",
        "point 2 (c): missing version, notes",
        "point 3 (a): measured '12' is not a positive number",
        "point 3 (a): id used twice",
    ]


@pytest.mark.shipped_data
def test_every_draft_point_is_complete_and_sourced():
    document = yaml.safe_load(DRAFT.read_text(encoding="utf-8"))
    assert set(document) == {"meta", "points"}
    assert {"what", "collected", "conventions", "sources", "rejected"} <= set(document["meta"])
    assert document["points"], "the draft has no points"
    assert problems(document["points"]) == []
