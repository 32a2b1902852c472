"""The training engine against measured fine-tuning peaks, as docs/measurements/fine-tuning-memory.md shows it,
and the two constants sized on them: the allocator's reserve (training_fit.allocator_reserve, the median
over the runs that publish both readings) and QLoRA's dequantized layers (training.quantized, a least-squares
fit of the relative error over the enforced QLoRA points, with its leave-one-source-out error).

Every point is compared at the pages' setting: the frozen embeddings, norms and head in 16 bits, as current
trainers keep them (the fms runs cast them to FP32 with PEFT's prepare_model_for_kbit_training).

Usage: .venv/bin/python -m tests.measurements.training [--write]
"""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics
from collections.abc import Iterable
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
UNITS = {"GB": 1e9, "GiB": 2**30, "MiB": 2**20, "bytes": 1}
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
    method: str = ""
    source: str = ""  # the publisher: the URL's GitHub owner or host
    slope: float = 0.0  # bytes the comparable figure gains per dequantized layer (QLoRA)
    known_miss: str = ""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= BOUND


def points() -> list[dict[str, Any]]:
    return yaml.safe_load((HERE / "training.yaml").read_text())["points"]


@functools.cache
def rules() -> tuple[TrainingRules, DeploymentRules]:
    """The fixture catalog's training and deployment rules, read once (the fits below ask for them per row)."""
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


def pages_setup(point: dict[str, Any]) -> TrainingSetup:
    """The point's run at the pages' setting: frozen embeddings in 16 bits."""
    return dataclasses.replace(setup(point), fp32_unquantized=False)


def comparable(need: Training, what: str) -> float:
    """The engine's figure for what was measured: torch's counters see neither the CUDA context nor paged
    states; what torch reserves and what the device shows add the caching allocator's reserve."""
    if what == "reserved":
        return need.allocated_bytes_per_gpu + need.reserve_bytes_per_gpu
    if what == "device":
        return need.footprint_bytes_per_gpu
    return need.allocated_bytes_per_gpu if what in TORCH_COUNTERS else need.total_bytes_per_gpu


def source_of(url: str) -> str:
    """A point's publisher: the GitHub owner, or the host."""
    parts = url.split("/")
    return parts[3] if parts[2] == "github.com" else parts[2]


def reading(value: dict[str, Any]) -> float:
    return float(value["peak"]) * UNITS[value["unit"]]


def reserve_pairs() -> list[tuple[str, float, float]]:
    """(point, allocated, reserved) for every run that publishes both; nvidia-smi less the engine's CUDA context."""
    deployment = rules()[1]
    pairs = []
    for point in points():
        measured = point["measured"]
        if "device" in measured:
            runtime = deployment.non_torch_bytes + (deployment.parallel_bytes if point["gpus"] > 1 else 0.0)
            pairs.append((point["id"], reading(measured), reading(measured["device"]) - runtime))
        elif "allocated" in measured:
            pairs.append((point["id"], reading(measured["allocated"]), reading(measured)))
    return pairs


def measured_reserve() -> float:
    """The median of reserved / allocated - 1 over the published pairs."""
    return statistics.median(reserved / allocated - 1 for _, allocated, reserved in reserve_pairs())


def describe(point: dict[str, Any]) -> str:
    lora = point.get("lora") or {}
    method = point["method"] if not lora else f"{point['method']} r{lora['rank']} {'/'.join(lora['targets'])}"
    sharding = f"ZeRO-{point['zero']}" if point["zero"] else "DP" if point["gpus"] > 1 else "1 GPU"
    if point["gpus"] > 1:
        sharding += f" x{point['gpus']}"
    checkpointing = "ckpt" if point["checkpointing"] == "full" else "no ckpt"
    return f"{point['arch']}, {method}, {point['micro_batch']}x{point['seq']}, {checkpointing}, {point['optimizer']}, {sharding}"


def all_rows(dequantized_layers: float | None = None) -> tuple[Row, ...]:
    """Every enforced point at the pages' setting, with rules.yaml's dequantized layers or the count given."""
    training_rules, deployment_rules = rules()
    if dequantized_layers is not None:
        training_rules = dataclasses.replace(training_rules, dequantized_layers=dequantized_layers)
    without = dataclasses.replace(training_rules, dequantized_layers=0.0)
    found = []
    for point in points():
        measured = point["measured"]
        if point.get("not_enforced"):
            continue
        arch, run, what = model(point["arch"]), pages_setup(point), measured["what"]
        predicted = comparable(training(arch, run, training_rules, deployment_rules), what)
        bare = comparable(training(arch, run, without, deployment_rules), what)
        found.append(
            Row(
                point=point["id"],
                setting=describe(point),
                what=what,
                measured=reading(measured),
                predicted=predicted,
                method=point["method"],
                source=source_of(point["url"]),
                slope=(predicted - bare) / training_rules.dequantized_layers if training_rules.dequantized_layers else 0.0,
                known_miss=point.get("known_miss", ""),
            )
        )
    return tuple(found)


def fitted_layers(rows: Iterable[Row]) -> float:
    """The dequantized layers that minimise the squared relative error over the QLoRA rows given."""
    quantized = [row for row in rows if row.method == "qlora"]
    # each row's figure is bare + k * slope: least squares on (bare + k * slope) / measured - 1
    bare = [(row.predicted - row.slope * current_layers()) / row.measured - 1 for row in quantized]
    gain = [row.slope / row.measured for row in quantized]
    return -sum(b * g for b, g in zip(bare, gain, strict=True)) / sum(g * g for g in gain)


def current_layers() -> float:
    return rules()[0].dequantized_layers


def leave_one_source_out(rows: tuple[Row, ...]) -> dict[str, float]:
    """Each row's error when the dequantized layers are fitted on every other source's QLoRA points."""
    errors = {}
    for source in sorted({row.source for row in rows}):
        layers = fitted_layers(row for row in rows if row.source != source)
        for row in rows:
            if row.source == source:
                errors[row.point] = (row.predicted + row.slope * (layers - current_layers())) / row.measured - 1
    return errors


def table(found: tuple[Row, ...]) -> str:
    """The error table as Markdown, each point with its error when its source is left out of the fit, then a summary line."""
    loso = leave_one_source_out(found)
    lines = ["| point | setting | measured | engine | error | left out of the fit |", "|---|---|---|---|---|---|"]
    for row in found:
        mark = "" if row.within else " (miss)"
        lines.append(
            f"| {row.point} | {row.setting} | {row.measured / 2**30:,.2f} GiB {row.what} | {row.predicted / 2**30:,.2f} GiB "
            f"| {row.error:+.1%}{mark} | {loso[row.point]:+.1%} |"
        )
    within = [row for row in found if row.within]
    errors = [abs(row.error) for row in found]
    kept = [abs(row.error) for row in found if not row.known_miss]
    lines.append(
        f"\n{len(within)} of {len(found)} enforced points within ±{BOUND:.0%}; mean |error| {sum(errors) / len(errors):.1%}, "
        f"worst {max(errors):.1%}; without the {len(found) - len(kept)} known misses, worst {max(kept):.1%}"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class MethodSummary:
    """One method's points: how many, how many within the bound, the mean and worst |error|, and the same
    when each source's points are predicted with the constants fitted without it."""

    method: str
    points: int
    within: int
    mean: float
    worst: float
    loso_within: int
    loso_mean: float


def summaries(found: tuple[Row, ...]) -> list[MethodSummary]:
    loso = leave_one_source_out(found)
    result = []
    for method in ("qlora", "lora", "full"):
        rows = [row for row in found if row.method == method]
        errors, left_out = [abs(row.error) for row in rows], [abs(loso[row.point]) for row in rows]
        result.append(
            MethodSummary(
                method,
                len(rows),
                sum(e <= BOUND for e in errors),
                sum(errors) / len(rows),
                max(errors),
                sum(e <= BOUND for e in left_out),
                sum(left_out) / len(rows),
            )
        )
    return result


LABELS = {"qlora": "QLoRA", "lora": "LoRA", "full": "Full"}


def summary_table(found: tuple[Row, ...]) -> str:
    """Per method: points, within ±15 %, mean and worst |error|, and the leave-one-source-out figures."""
    lines = [
        f"| method | points | within ±{BOUND:.0%} | mean \\|error\\| | worst | leave-one-source-out: within, mean \\|error\\| |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries(found):
        lines.append(
            f"| {LABELS[s.method]} | {s.points} | {s.within} | {s.mean:.1%} | {s.worst:.1%} | {s.loso_within} of {s.points}, {s.loso_mean:.1%} |"
        )
    return "\n".join(lines)


def reserve_table() -> str:
    """The runs that publish what torch allocated and what it (or the device) reserved, and the median."""
    lines = ["| point | allocated | reserved | reserve |", "|---|---|---|---|"]
    for point, allocated, reserved in reserve_pairs():
        lines.append(f"| {point} | {allocated / 2**30:,.2f} GiB | {reserved / 2**30:,.2f} GiB | {reserved / allocated - 1:+.1%} |")
    lines.append(f"\nMedian reserve {measured_reserve():.1%} over {len(reserve_pairs())} runs (rules.yaml training_fit.allocator_reserve).")
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
    """The docs' block: the summary, per method, the fit, the allocator's reserve, the enforced points, the points set aside."""
    enforced, summary = table(found).rsplit("\n\n", 1)
    fit = (
        f"QLoRA's dequantized layers: {fitted_layers(found):.2f} fitted on the {sum(r.method == 'qlora' for r in found)} "
        f"enforced QLoRA points from {len({r.source for r in found if r.method == 'qlora'})} sources; rules.yaml holds "
        f"{current_layers():.1f}. Left out one source at a time, the fit gives "
        + ", ".join(f"{layers:.2f} without {source}" for source, layers in per_source_fits(found).items())
        + "."
    )
    return "\n\n".join(
        [
            f"- {summary}",
            summary_table(found),
            fit,
            "### The allocator's reserve",
            reserve_table(),
            "### Every enforced point",
            enforced,
            "### The points set aside, and why",
            set_aside(),
        ]
    )


def per_source_fits(found: tuple[Row, ...]) -> dict[str, float]:
    """The dequantized layers fitted without each source of QLoRA points."""
    sources = sorted({row.source for row in found if row.method == "qlora"})
    return {source: fitted_layers(row for row in found if row.source != source) for source in sources}


if __name__ == "__main__":
    main(DOC, lambda: markdown(all_rows()))
