"""`gpumem estimate --speed`: tokens per second and US$ per million tokens for each configuration
that holds the workload, or for one GPU and count. The arithmetic is engines/speed.py's."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpumem.commands.estimate import Estimate, refusal_text, size_text
from gpumem.engines import deployment, support
from gpumem.engines.sizing import offered_configurations
from gpumem.engines.speed import Load, Speed, served
from gpumem.errors import BuildError
from gpumem.records.catalog import Gpu
from gpumem.records.engines import WeightFormat


@dataclass(frozen=True)
class SpeedRow:
    """One configuration's speed under the load; its price is None for a GPU not on offer."""

    gpu: str
    gpu_name: str
    count: int
    price_per_hour: float | None
    speed: Speed
    stand_in: str = ""  # the label of the llama.cpp weights timed instead of a format its engine cannot run here


def speed_rows(result: Estimate, prompt: int, output: int, gpu_id: str | None = None) -> tuple[SpeedRow, ...]:
    """The configurations that hold the workload (cheapest first), or `gpu_id` x --gpus alone."""
    catalog = result.catalog
    assert catalog is not None and catalog.rules.speed is not None and catalog.rules.deployment is not None
    lengths = (("prompt", prompt), ("output", output))
    problems = [f"--{name}: expected a positive whole number, got {value}" for name, value in lengths if value <= 0]
    if prompt + output > result.context:
        problems.append(f"--prompt + --output: {prompt + output:,} tokens is more than the {result.context:,} of --context")
    known = {gpu.id: gpu for gpu in catalog.gpus}
    if gpu_id is not None and gpu_id not in known:
        problems.append(f"--gpu: unknown GPU {gpu_id!r} (a catalog id, e.g. {catalog.gpus[0].id})")
    if problems:
        raise BuildError(problems)
    rules, deployment = catalog.rules.speed, catalog.rules.deployment
    fmt, kv = deployment.weight_formats[result.weights], deployment.kv_formats[result.kv]
    load = Load(result.requests, prompt, output)
    picked: list[tuple[Gpu, int, float | None, WeightFormat | None]]
    if gpu_id is None:
        picked = [(fit.configuration.gpu, fit.configuration.count, fit.configuration.price_per_hour, fit.stand_in) for fit in result.fits]
    else:
        runs = support.serving(catalog.rules.support, deployment.weight_formats, fmt, kv, known[gpu_id])
        if not runs.runs and runs.refusal is not None:
            raise BuildError([f"--gpu: {refusal_text(runs.refusal)}"])
        stand_in = runs.weights if runs.stands_in else None
        holds(result, known[gpu_id], stand_in or fmt)
        offered = offered_configurations(catalog.gpus, catalog.snapshot.offers, catalog.rules.gpu_counts)
        prices = [c.price_per_hour for c in offered if c.gpu.id == gpu_id and c.count == result.need.gpus]
        picked = [(known[gpu_id], result.need.gpus, prices[0] if prices else None, stand_in)]
    return tuple(
        SpeedRow(
            gpu.id,
            gpu.name,
            count,
            price,
            served(rules, deployment, result.model, used or fmt, kv, gpu, count, load, price),
            used.label if used else "",
        )
        for gpu, count, price, used in picked
    )


def holds(result: Estimate, gpu: Gpu, fmt: WeightFormat) -> None:
    """Refuse a speed for --gpus x `gpu` when they cannot hold the workload, naming the memory against the memory there is:
    the need with the card's own batch defaults, against the runtime's budget of it (as sizing.deployment_fits counts)."""
    rules, count = result.rules, result.need.gpus
    card = gpu.runtime_bytes
    batch = deployment.batch_defaults(rules, card, gpu.id)
    kv = rules.kv_formats[result.kv]
    need = deployment.deployment(rules, result.model, fmt, kv, count, result.context, result.requests, batch).total_bytes_per_gpu
    budget = deployment.budget_bytes(rules, card)
    if need >= budget:
        raise BuildError(
            [
                f"--gpu: {count} x {gpu.name} cannot hold this workload: it needs {size_text(need)} per GPU, and each card "
                f"gives it {size_text(budget)} ({rules.utilization:.0%} of {size_text(card)})"
            ]
        )


def speed_json(rows: tuple[SpeedRow, ...]) -> list[dict[str, object]]:
    """The rows as the issue names their fields; the cost only for a GPU on offer."""
    found: list[dict[str, object]] = []
    for row in rows:
        entry: dict[str, object] = {
            "gpu": row.gpu,
            "count": row.count,
            "decode_tokens_per_s_per_request": round(row.speed.decode_tokens_per_s_per_request, 3),
            "aggregate_tokens_per_s": round(row.speed.aggregate_tokens_per_s, 3),
            "ttft_s": round(row.speed.ttft_s, 6),
            **({"stand_in": row.stand_in, "runtime": "llama.cpp"} if row.stand_in else {}),
        }
        if row.price_per_hour is not None and row.speed.usd_per_million_output_tokens is not None:
            entry["price_per_hour"] = row.price_per_hour
            entry["usd_per_million_output_tokens"] = round(row.speed.usd_per_million_output_tokens, 6)
            entry["usd_per_million_input_tokens"] = round(row.speed.usd_per_million_input_tokens or 0.0, 6)
        found.append(entry)
    return found


def with_speed_json(estimate_json: str, rows: tuple[SpeedRow, ...]) -> str:
    data = json.loads(estimate_json)
    data["speed"] = speed_json(rows)
    return json.dumps(data, indent=2)


def speed_text(rows: tuple[SpeedRow, ...], load: Load, currency: str = "USD") -> str:
    """One line per configuration: decode per request, aggregate, time to first token, cost per million."""
    lines = [
        f"Speed at {load.concurrency} request(s) of {load.prompt_tokens:,} prompt and {load.output_tokens:,} output tokens "
        "(a roofline estimate calibrated on published benchmarks, see docs/measurements/speed.md):"
    ]
    for row in rows:
        s = row.speed
        cost = (
            f"{s.usd_per_million_output_tokens:>8.3f} {currency}/M output, {s.usd_per_million_input_tokens or 0:.3f} {currency}/M input"
            if s.usd_per_million_output_tokens is not None
            else "not on offer: no cost"
        )
        lines.append(
            f"  {row.count} x {row.gpu_name:<16} {s.decode_tokens_per_s_per_request:>8.1f} tok/s per request  "
            f"{s.aggregate_tokens_per_s:>9.1f} tok/s in all  first token {s.ttft_s:.2f} s  {cost}"
            + (f"  (llama.cpp with {row.stand_in} weights)" if row.stand_in else "")
        )
    if not rows:
        lines.append("  none: no configuration on offer holds it")
    return "\n".join(lines)
