"""The training engine against measured fine-tuning peaks, as docs/measurements/fine-tuning-memory.md shows it.

Usage: .venv/bin/python -m tests.measurements.training [--write]
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import yaml

from gpumem.catalog.hf_config import model_from_config
from gpumem.catalog.inputs import load_catalog
from gpumem.engines.training import Training, TrainingSetup, training
from gpumem.records.catalog import Model
from gpumem.records.engines import DeploymentRules, TrainingRules

from ..project import REPO
from .generated import Generated, main

HERE = REPO / "tests" / "measurements"
BOUND = 0.15
UNITS = {"GB": 1e9, "GiB": 2**30, "bytes": 1}
TORCH_COUNTERS = ("allocated", "active", "reserved")  # no CUDA context, no paged optimizer states
DOC = Generated("fine-tuning-memory.md", "tests.measurements.training")


@dataclass(frozen=True)
class Row:
    """One measured point: what was measured, what the engine says, and why the bound does not apply."""

    point: str
    setting: str
    what: str
    measured: float
    predicted: float
    excluded: str = ""
    known_miss: str = ""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= BOUND


def points() -> list[dict[str, Any]]:
    return yaml.safe_load((HERE / "training.yaml").read_text())["points"]


def rules() -> tuple[TrainingRules, DeploymentRules]:
    loaded = load_catalog(REPO / "tests" / "fixtures" / "catalogs").rules
    assert loaded.training is not None and loaded.deployment is not None
    return loaded.training, loaded.deployment


@functools.cache
def limits() -> dict[str, float]:
    """rules.yaml's calculator bounds, which a config.json's counts keep."""
    return load_catalog(REPO / "tests" / "fixtures" / "catalogs").rules.calculator_limits


def model(arch: str) -> Model:
    return model_from_config(json.loads((HERE / "configs" / f"{arch}.json").read_text()), limits(), arch, arch, "https://huggingface.co")


def setup(point: dict[str, Any]) -> TrainingSetup:
    lora = point.get("lora") or {}
    return TrainingSetup(
        method=point["method"],
        seq=point["seq"],
        micro_batch=point["micro_batch"],
        checkpointing=point["checkpointing"],
        flash_attention=point["flash_attention"],
        optimizer=point["optimizer"],
        precision=point["precision"],
        lora_rank=lora.get("rank") or 0,
        lora_targets=tuple(lora.get("targets") or ()),
        zero=point["zero"],
        gpus=point["gpus"],
        offload_optimizer=point["offload_optimizer"],
        fp32_unquantized=point["fp32_unquantized"],
    )


def comparable(need: Training, what: str) -> float:
    """The engine's figure for what was measured: torch's counters see neither the CUDA context nor paged states."""
    if what not in TORCH_COUNTERS:
        return need.total_bytes_per_gpu
    paged = need.optimizer_bytes_per_gpu if need.paged_optimizer else 0.0
    return need.total_bytes_per_gpu - need.runtime_bytes_per_gpu - paged


def describe(point: dict[str, Any]) -> str:
    lora = point.get("lora") or {}
    method = point["method"] if not lora else f"{point['method']} r{lora['rank']} {'/'.join(lora['targets'])}"
    sharding = f"ZeRO-{point['zero']}" if point["zero"] else "DP" if point["gpus"] > 1 else "1 GPU"
    if point["gpus"] > 1:
        sharding += f" x{point['gpus']}"
    checkpointing = "ckpt" if point["checkpointing"] == "full" else "no ckpt"
    return f"{point['arch']}, {method}, {point['micro_batch']}x{point['seq']}, {checkpointing}, {point['optimizer']}, {sharding}"


def all_rows() -> tuple[Row, ...]:
    """Every reviewed point the engine can be asked about (excluded ones too, when their settings are known)."""
    training_rules, deployment_rules = rules()
    found = []
    for point in points():
        measured = point["measured"]
        if point.get("not_enforced"):
            continue
        need = training(model(point["arch"]), setup(point), training_rules, deployment_rules)
        found.append(
            Row(
                point=point["id"],
                setting=describe(point),
                what=measured["what"],
                measured=float(measured["peak"]) * UNITS[measured["unit"]],
                predicted=comparable(need, measured["what"]),
                known_miss=point.get("known_miss", ""),
            )
        )
    return tuple(found)


def table(found: tuple[Row, ...]) -> str:
    """The error table as Markdown, then a summary line."""
    lines = ["| point | setting | measured | engine | error |", "|---|---|---|---|---|"]
    for row in found:
        mark = "" if row.within else " (miss)"
        lines.append(
            f"| {row.point} | {row.setting} | {row.measured / 2**30:,.2f} GiB {row.what} | {row.predicted / 2**30:,.2f} GiB | {row.error:+.1%}{mark} |"
        )
    within = [row for row in found if row.within]
    errors = [abs(row.error) for row in found]
    kept = [abs(row.error) for row in found if not row.known_miss]
    lines.append(
        f"\n{len(within)} of {len(found)} enforced points within ±{BOUND:.0%}; mean |error| {sum(errors) / len(errors):.1%}, "
        f"worst {max(errors):.1%}; without the {len(found) - len(kept)} known misses, worst {max(kept):.1%}"
    )
    return "\n".join(lines)


def set_aside() -> str:
    """The points kept out of the check, each with what was measured and why, as Markdown."""
    lines = ["| point | measured | why it is not enforced |", "|---|---|---|"]
    for point in points():
        if point.get("not_enforced"):
            measured = point["measured"]
            shown = f"{float(measured['peak']) * UNITS[measured['unit']] / 2**30:,.2f} GiB {measured['what']}"
            lines.append(f"| {point['id']} | {shown} | {point['not_enforced']} |")
    return "\n".join(lines)


def markdown(found: tuple[Row, ...]) -> str:
    """The docs' block: the summary line, the enforced points, then the points set aside."""
    enforced, summary = table(found).rsplit("\n\n", 1)
    return "\n\n".join([f"- {summary}", "### Every enforced point", enforced, "### The points set aside, and why", set_aside()])


if __name__ == "__main__":
    main(DOC, lambda: markdown(all_rows()))
