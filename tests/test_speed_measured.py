"""The speed engine against published measurements (tests/measurements/speed.yaml), with the issue's bounds."""

from __future__ import annotations

import pytest

from .measurements.fit_speed import fit
from .measurements.speed_table import BOUNDS, DOC, catalog, points, rows, table

REQUIRED = ("id", "engine", "gpu", "gpus", "model", "model_id", "weights", "kv", "concurrency", "prompt_tokens", "output_tokens")


@pytest.fixture(scope="module")
def found():
    return rows()


def test_the_points_cover_what_issue_13_asks():
    """At least 25 points on 6 GPUs and 8 models, each with its settings, source URL and quoted row."""
    listed = points()
    for point in listed:
        assert all(point.get(name) not in (None, "") for name in REQUIRED), point["id"]
        assert point["url"].startswith("https://") and point["quote"].strip(), point["id"]
    enforced = [p for p in listed if p["check"] in BOUNDS and not p.get("excluded")]
    assert len(enforced) >= 25
    assert len({p["gpu"] for p in enforced}) >= 6
    assert len({p["model_id"] for p in enforced}) >= 8
    assert {p["engine"] for p in enforced} == {"llama.cpp", "tensorrt-llm", "vllm"}


@pytest.mark.parametrize("check", sorted(BOUNDS))
def test_every_enforced_point_is_within_its_bound(found, check):
    """Single-request decode within ±25 %, aggregate throughput within ±35 %; a known miss must still miss."""
    wrong = [row for row in found if row.check == check and row.enforced and row.within == bool(row.known_miss)]
    assert not wrong, f"{[row.point for row in wrong]} against its bound or its known_miss flag\n\n{table(found)}"


def test_the_docs_show_the_current_table(found):
    assert DOC.committed() == table(found), DOC.stale()


def test_a_known_miss_says_why_and_stays_rare(found):
    misses = [row for row in found if row.known_miss]
    assert [row.point for row in misses] == ["trtllm090-h200-sxm-mistral-7b-bs56-tp1-2048-2048"]
    assert all("the engine misses it" in row.known_miss for row in misses)


def test_exclusions_give_a_reason_about_the_measurement():
    reasons = {p["id"]: p["excluded"] for p in points() if p.get("excluded")}
    assert sorted(reasons) == [
        "ikllamacpp-16x-rtx-3090-deepseek-r1-q8_0-tg256",
        "llamacpp-a100-80gb-sxm-llama3-8b-f16-pp512",
        "llamacpp-l40s-llama3-8b-f16-pp512",
        "sglang-h200x8-deepseek-r1-fp8-c8-1k1k",
    ]
    assert all("engine" not in reason for reason in reasons.values())


@pytest.mark.slow
def test_the_efficiency_factors_are_what_the_fit_gives():
    """rules.yaml's speed factors are fit_speed's output on these points, not numbers set by hand."""
    rules = catalog().rules.speed
    assert fit() == rules
