"""The deployment engine against measured serving memory: one row per check of each measured point.

Usage: .venv/bin/python -m tests.measurements.compare   (prints the README's error table)

Reads tests/measurements/serving.yaml (runtime output quoted from public logs) and the fixture
catalog's deployment rules; architectures come from config.json files whose parameters
gpumem.hf_config counts. Nothing here is fitted: the bounds are issue 10's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from gpumem import deployment as engine
from gpumem.build import load_catalog
from gpumem.hf_config import model_from_config
from gpumem.records import DeploymentRules, Model

HERE = Path(__file__).resolve().parent
CONFIGS = (HERE / "configs", HERE.parent / "fixtures" / "hf_configs")
UNITS = {"GiB": 2**30, "MiB": 2**20, "bytes": 1}
BOUNDS = {"weights": 0.03, "kv": 0.02, "runtime": 0.10}  # weights, KV bytes per token per GPU, weights + runtime
H100_BYTES = 85_045_477_376  # the card every runtime point ran on (its logs print 79.19 GiB; catalog h100-sxm)


@dataclass(frozen=True)
class Row:
    """One check: what was measured, what the engine says, and whether the bound applies."""

    point: str
    check: str
    measured: float
    predicted: float
    excluded: str = ""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= BOUNDS[self.check]


@cache
def rules() -> DeploymentRules:
    deployment = load_catalog(HERE.parent / "fixtures" / "catalogs").rules.deployment
    assert deployment is not None
    return deployment


@cache
def model(arch: str) -> Model:
    """A measured model, counted from its config.json."""
    path = next(folder / f"{arch}.json" for folder in CONFIGS if (folder / f"{arch}.json").is_file())
    return model_from_config(json.loads(path.read_text()), arch, arch, "https://huggingface.co")


def points() -> list[dict]:
    return yaml.safe_load((HERE / "serving.yaml").read_text())["points"]


def amount(point: dict, key: str) -> float:
    return point["measured"][key] * UNITS[point["units"].get(key, "GiB")]


def rows_of(point: dict) -> list[Row]:
    """Every check a point's measured figures allow."""
    excluded = point.get("not_enforced", {})
    if "all" in excluded:
        return []
    found = []
    measured, settings = point["measured"], point["settings"]
    arch, gpus = model(point["arch"]), point["gpus"]
    kv = rules().kv_formats.get(point["kv"])
    fmt = rules().weight_formats.get(point["weights"] or "")
    if fmt and "weights" in measured:
        found.append(
            Row(point["id"], "weights", amount(point, "weights"), engine.weights_bytes(arch, fmt) / gpus, excluded.get("weights", ""))
        )
    if fmt and "model_size" in measured:
        found.append(Row(point["id"], "weights", amount(point, "model_size"), engine.weights_bytes(arch, fmt), excluded.get("weights", "")))
    if kv and "kv_cache_tokens" in measured and "kv_cache_memory" in measured:
        per_token = amount(point, "kv_cache_memory") / measured["kv_cache_tokens"]
        found.append(Row(point["id"], "kv", per_token, engine.kv_bytes_per_token_per_gpu(arch.arch, kv, gpus), excluded.get("kv", "")))
    if kv and "kv_self" in measured:
        found.append(Row(point["id"], "kv", amount(point, "kv_self"), _llamacpp_cache(arch, kv, settings), excluded.get("kv", "")))
    if fmt and {"weights", "non_torch", "activation_peak"} <= set(measured):
        total = sum(amount(point, key) for key in ("weights", "non_torch", "activation_peak"))
        batch = engine.batch_defaults(rules(), H100_BYTES, "h100-sxm")
        predicted = engine.weights_bytes(arch, fmt) / gpus + engine.runtime_bytes_per_gpu(rules(), arch.arch, fmt, gpus, batch)
        found.append(Row(point["id"], "runtime", total, predicted, excluded.get("runtime", "")))
    return found


def _llamacpp_cache(arch: Model, kv, settings: dict) -> float:  # noqa: ANN001 - a KvFormat
    """llama.cpp's KV buffer: n_ctx cells shared by its sequences, or one part of an interleaved cache."""
    sequences = settings.get("sequences", 1)
    tokens = settings["n_ctx"] // sequences
    shape = arch.arch
    per_layer = engine.kv_elements_per_token_layer(shape, 1) * kv.bytes * tokens * sequences
    part = settings.get("cache")
    full, sliding = engine.layer_slots(shape, "llama.cpp")
    if part == "full_layers":
        return per_layer * full
    if part == "sliding_layers":
        return per_layer * sliding * min(1, shape.attention.window / tokens)
    return engine.kv_cache_bytes_per_gpu(shape, kv, tokens, sequences, 1, "llama.cpp")


def all_rows() -> list[Row]:
    return [row for point in points() for row in rows_of(point)]


def table(rows: list[Row]) -> str:
    """The error table as Markdown: one line per check, the enforced bounds and a summary."""
    lines = ["| point | check | measured | engine | error | bound |", "|---|---|---|---|---|---|"]
    for row in rows:
        bound = f"±{BOUNDS[row.check]:.0%}" if not row.excluded else f"not enforced: {row.excluded}"
        lines.append(
            f"| {row.point} | {row.check} | {_shown(row.measured, row.check)} | {_shown(row.predicted, row.check)} | {row.error:+.1%} | {bound} |"
        )
    for check in BOUNDS:
        enforced = [row for row in rows if row.check == check and not row.excluded]
        worst = max((abs(row.error) for row in enforced), default=0.0)
        mean = sum(abs(row.error) for row in enforced) / len(enforced) if enforced else 0.0
        lines.append(f"\n{check}: {len(enforced)} enforced points, mean |error| {mean:.1%}, worst {worst:.1%} (bound ±{BOUNDS[check]:.0%})")
    return "\n".join(lines)


def _shown(value: float, check: str) -> str:
    return f"{value:,.0f} B/token" if check == "kv" and value < 10**7 else f"{value / 2**30:,.2f} GiB"


if __name__ == "__main__":
    print(table(all_rows()))
