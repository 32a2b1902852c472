"""The serving speed draft (catalogs/measurements/drafts/speed_serving.yaml): every point complete and quoted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DRAFT = ROOT / "catalogs" / "measurements" / "drafts" / "speed_serving.yaml"

REQUIRED = (
    "id",
    "engine",
    "version",
    "gpu",
    "gpus",
    "tensor_parallel",
    "model",
    "model_id",
    "weights",
    "kv",
    "concurrency",
    "prompt_tokens",
    "output_tokens",
    "check",
    "measured",
    "measured_as",
    "quote",
    "url",
)
CHECKS = ("decode", "aggregate", "prefill", "ttft")
FLAG = "(not in the catalog; flagged)"


def problems(points: list[dict], gpus: set[str], models: set[str]) -> list[str]:
    """What is wrong with each point, one message per fault, in file order."""
    found = []
    seen: set[str] = set()
    for number, point in enumerate(points, 1):
        name = point.get("id") or f"point {number}"
        found += [f"{name}: {key}: missing" for key in REQUIRED if key not in point]
        if name in seen:
            found.append(f"{name}: id: used twice")
        seen.add(name)
        measured = point.get("measured")
        if not isinstance(measured, int | float) or isinstance(measured, bool) or measured <= 0:
            found.append(f"{name}: measured: expected a positive number, got {measured!r}")
        if point.get("check") not in CHECKS:
            found.append(f"{name}: check: expected one of {', '.join(CHECKS)}, got {point.get('check')!r}")
        if not str(point.get("url", "")).startswith(("https://", "http://")):
            found.append(f"{name}: url: expected an http(s) address, got {point.get('url')!r}")
        if not str(point.get("quote") or "").strip():
            found.append(f"{name}: quote: empty")
        gpu = str(point.get("gpu", ""))
        if gpu not in gpus and not gpu.endswith(FLAG):
            found.append(f"{name}: gpu: {gpu!r} is neither a catalog id nor flagged {FLAG!r}")
        if point.get("model_id") is not None and point["model_id"] not in models:
            found.append(f"{name}: model_id: {point['model_id']!r} is not in models.yaml")
        if point.get("doubtful") and "Doubtful" not in str(point.get("notes", "")):
            found.append(f"{name}: notes: a doubtful point says why (a sentence starting 'Doubtful')")
    return found


GOOD = {
    "id": "vllm-x-c1",
    "engine": "vllm",
    "version": "v0.11.0",
    "gpu": "h100-sxm",
    "gpus": 1,
    "tensor_parallel": 1,
    "model": "Qwen3-8B",
    "model_id": "qwen3-8b",
    "weights": "bf16",
    "kv": "bf16",
    "concurrency": 1,
    "prompt_tokens": 233,
    "output_tokens": 221,
    "check": "decode",
    "measured": 137.36,
    "measured_as": "1000 / 7.28",
    "quote": "Mean TPOT (ms):                          7.28",
    "url": "https://example.org/run",
}


def test_a_complete_point_passes():
    assert problems([GOOD], {"h100-sxm"}, {"qwen3-8b"}) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"measured": 0}, "vllm-x-c1: measured: expected a positive number, got 0"),
        ({"measured": "137"}, "vllm-x-c1: measured: expected a positive number, got '137'"),
        ({"check": "latency"}, "vllm-x-c1: check: expected one of decode, aggregate, prefill, ttft, got 'latency'"),
        ({"url": "github.com/x"}, "vllm-x-c1: url: expected an http(s) address, got 'github.com/x'"),
        ({"quote": "  "}, "vllm-x-c1: quote: empty"),
        ({"gpu": "RTX 4080"}, "vllm-x-c1: gpu: 'RTX 4080' is neither a catalog id nor flagged '(not in the catalog; flagged)'"),
        ({"model_id": "qwq-32b"}, "vllm-x-c1: model_id: 'qwq-32b' is not in models.yaml"),
        ({"doubtful": True, "notes": "odd"}, "vllm-x-c1: notes: a doubtful point says why (a sentence starting 'Doubtful')"),
    ],
)
def test_each_fault_is_named(change, message):
    assert problems([GOOD | change], {"h100-sxm"}, {"qwen3-8b"}) == [message]


def test_a_missing_key_and_a_repeated_id_are_named():
    partial = {key: value for key, value in GOOD.items() if key != "kv"}
    assert problems([partial, GOOD], {"h100-sxm"}, {"qwen3-8b"}) == ["vllm-x-c1: kv: missing", "vllm-x-c1: id: used twice"]


@pytest.mark.shipped_data
def test_the_serving_draft_is_complete():
    """Every point of the draft: required keys, a positive measured, a known check, an http(s) url, a quote, a unique id."""
    draft = yaml.safe_load(DRAFT.read_text())
    gpus = {gpu["id"] for gpu in yaml.safe_load((ROOT / "catalogs" / "gpus.yaml").read_text())["gpus"]}
    models = {model["id"] for model in yaml.safe_load((ROOT / "catalogs" / "models.yaml").read_text())["models"]}
    assert set(draft) == {"meta", "points"}
    assert {"what", "collected", "conventions", "sources", "rejected"} <= set(draft["meta"])
    assert problems(draft["points"], gpus, models) == []
