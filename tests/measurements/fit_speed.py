"""How the speed engine's factors in rules.yaml are fitted on tests/measurements/speed.yaml, engine by engine,
and their error on the points of a source left out of the fit.

Each engine (vLLM, SGLang, TensorRT-LLM, llama.cpp) gets its own factors, fitted on its own runs. A factor
with fewer than MIN_POINTS points of its engine takes the value fitted on every serving engine's points
together (vLLM, SGLang and TensorRT-LLM pooled), or, with too few pooled points as well, its FALLBACK factor;
for llama.cpp, the factor it is tied to: its batched decode and its MoE prompts run the MMQ kernels of its
GGUF types (no batched compute-bound run and no MoE prompt run is measured), so both take its quantized prefill.
The all-reduce's fixed cost, one per path (the engine's own all-reduce over a GPU link, or over two PCIe cards
with peer access; NCCL's over PCIe: engines/speed.link_path), is fitted on every serving engine's multi-GPU points
of that path together and shared by the three (POOLED): fitted per engine, the few multi-GPU points of each engine
gave a larger error on the points left out (vLLM: 5 of 7 decode and 15 of 21 aggregate points within their
bounds, against 7 and 19 shared). Without MIN_POINTS PCIe points the PCIe cost takes the link's.

Each factor is chosen on a grid of 0.01 (the time per layer and the all-reduce's cost on 1 µs), a coarse
pass then a fine one around its best, to minimise the summed absolute log error (predicted / measured) over
the points it acts on, one factor at a time, repeated until nothing moves. Excluded points are left out.

A point is reduced once to its terms: the engine (engines/speed.py) at unit efficiency and no fixed costs
gives a decode step's memory and compute seconds and its ring all-reduce, and the prompt's; the factors
then divide them as the engine does (test_speed_measured checks the two agree on every point).

Usage: .venv/bin/python -m tests.measurements.fit_speed   (prints the factors and the left-out errors)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from gpumem.engines.speed import Load, allreduces, blocks, decode_step, link_path, passes, prefill_chunk, prefill_step, quantized_kernels
from gpumem.records.engines import Efficiency

from .speed_table import BOUNDS, CHECKS, ENGINES, catalog, model_of, models, points

GITHUB_COMMIT = re.compile(r"/blob/[0-9a-f]{7,40}/")
SERVING = ENGINES[:3]  # the batched serving engines; llama.cpp is the fourth
MIN_POINTS = 3
TIED = {"llama.cpp": {"compute": "prefill_quantized", "prefill_moe": "prefill_quantized"}}
FALLBACK = {"prefill_quantized": "prefill", "allreduce_pcie_s": "allreduce_link_s"}  # too few points even pooled
UNIT = Efficiency(1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
START = Efficiency(0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 50e-6)  # where every fit starts, so that it depends on the points alone
MICROSECONDS = ("layer_overhead_s", "layer_overhead_quantized_s", "layer_overhead_moe_s", "allreduce_link_s", "allreduce_pcie_s")
POOLED = ("allreduce_link_s", "allreduce_pcie_s")  # fitted on the serving engines together, shared by each


@dataclass(frozen=True)
class Terms:
    """One measured point at unit efficiency: what the factors divide, and what they add."""

    id: str
    source: str
    engine: str
    gpu: str
    check: str
    measured: float
    hbm: bool
    moe: bool
    quantized: bool  # multiplied in the engine's quantized kernels (engines/speed.quantized_kernels)
    path: str
    allreduces: int  # all-reduces per forward pass on several GPUs (engines/speed.allreduces; none for llama.cpp)
    blocks: int  # residual blocks (engines/speed.blocks): the time per layer counts two
    passes: int  # the prompt's forward passes (chunked prefill): each pays the fixed costs
    load: Load
    decode_memory: float
    decode_compute: float
    decode_ring: float
    prefill_memory: float
    prefill_compute: float
    prefill_ring: float


def source_of(point: dict) -> str:
    """A point's source: its URL without the fragment and without the commit of a GitHub file (one file, page or
    thread, whatever its version: a page's tables at three releases are one source), or the publication it names
    (`source`) where one author's runs are spread over several files of a repository: those leave the fit together."""
    return GITHUB_COMMIT.sub("/blob/", str(point.get("source") or point["url"]).split("#")[0])


def terms() -> list[Terms]:
    """Every point of speed.yaml that is not excluded, reduced to its terms."""
    found = catalog()
    known = models(found)
    deployment, rules = found.rules.deployment, found.rules.speed
    assert deployment is not None and rules is not None
    unit = replace(rules, efficiency=dict.fromkeys(ENGINES, UNIT))
    found_terms = []
    for p in points():
        if p.get("excluded"):
            continue
        model, gpu, gpus, engine = model_of(known, p), found.gpu(p["gpu"]), int(p["gpus"]), p["engine"]
        fmt, kv = deployment.weight_formats[p["weights"]], deployment.kv_formats[p["kv"]]
        load = Load(int(p["concurrency"]), int(p["prompt_tokens"]), int(p["output_tokens"]))
        step = decode_step(unit, model, fmt, kv, gpu, gpus, load.concurrency, load.prompt_tokens + load.output_tokens / 2, engine)
        chunk = prefill_chunk(deployment, engine, gpu)
        prompt = prefill_step(unit, model, fmt, gpu, gpus, load.prompt_tokens, engine, chunk)
        found_terms.append(
            Terms(
                id=p["id"],
                source=source_of(p),
                engine=engine,
                gpu=p["gpu"],
                check=p["check"],
                measured=float(p["measured"]),
                hbm=gpu.memory_type.upper().startswith("HBM"),
                moe=model.is_moe,
                quantized=quantized_kernels(fmt),
                path=link_path(gpu, gpus),
                allreduces=0 if engine == "llama.cpp" or gpus == 1 else allreduces(model.arch),
                blocks=blocks(model.arch),
                passes=passes(load.prompt_tokens, chunk),
                load=load,
                decode_memory=step.memory_s,
                decode_compute=step.compute_s,
                decode_ring=step.link_s,
                prefill_memory=prompt.memory_s,
                prefill_compute=prompt.compute_s,
                prefill_ring=prompt.link_s,
            )
        )
    return found_terms


def predict(t: Terms, e: Efficiency) -> float:
    """The engine's figure for a point, in its check's unit: predict_all on the point's one row."""
    return float(predict_all(columns([t]), vars(e))[0])


# Which points each factor acts on.
ACTS: dict[str, Callable[[Terms], bool]] = {
    "bandwidth_gddr": lambda t: t.check in ("decode", "aggregate") and not t.hbm,
    "bandwidth_hbm": lambda t: t.check in ("decode", "aggregate") and t.hbm,
    "compute": lambda t: t.check == "aggregate",
    "prefill": lambda t: t.check in ("prefill", "ttft", "aggregate") and not t.moe and not t.quantized,
    "prefill_moe": lambda t: t.check in ("prefill", "ttft", "aggregate") and t.moe,
    "prefill_quantized": lambda t: t.check in ("prefill", "ttft", "aggregate") and not t.moe and t.quantized,
    "layer_overhead_s": lambda t: t.check in ("decode", "aggregate"),
    "layer_overhead_quantized_s": lambda t: t.check in ("decode", "aggregate") and t.quantized,
    "layer_overhead_moe_s": lambda t: t.check in ("decode", "aggregate") and t.moe,
    "allreduce_link_s": lambda t: t.check in ("decode", "aggregate") and t.allreduces > 0 and t.path == "link",
    "allreduce_pcie_s": lambda t: t.check in ("decode", "aggregate") and t.allreduces > 0 and t.path == "pcie",
}


COLUMNS = ("measured", "hbm", "moe", "quantized", "allreduces", "blocks", "passes", "decode_memory", "decode_compute")
COLUMNS += ("decode_ring", "prefill_memory", "prefill_compute", "prefill_ring")


def columns(found: Sequence[Terms]) -> dict[str, np.ndarray]:
    """The terms of points as NumPy columns, one row a point."""
    found_columns = {name: np.array([getattr(t, name) for t in found]) for name in COLUMNS}
    return found_columns | {
        "pcie": np.array([t.path == "pcie" for t in found]),
        "check": np.array([CHECKS.index(t.check) for t in found]),
        "prompt": np.array([t.load.prompt_tokens for t in found]),
        "output": np.array([t.load.output_tokens for t in found]),
        "requests": np.array([t.load.concurrency for t in found]),
    }


class Table:
    """The columns of the points a fit sees, so that one expression gives the loss (the summed absolute log error,
    predicted / measured) of every value of a factor's grid over the points it acts on. Point by point in Python,
    the fit's millions of predictions took 3.5 s a fit and 334 s for this module's run (the fit and the 64 fits with
    a source left out); in columns, 0.3 s and 24 s, with the same factors to the last digit."""

    def __init__(self, found: Sequence[Terms]):
        self.row = {id(t): i for i, t in enumerate(found)}
        self.columns = columns(found)

    def losses(self, chosen: Sequence[Terms], e: Efficiency, name: str, values: Sequence[float]) -> list[float]:
        """The loss over `chosen` with each of `values` as factor `name`, the others e's."""
        rows = np.fromiter((self.row[id(t)] for t in chosen), dtype=np.intp, count=len(chosen))
        c = {column: array[rows] for column, array in self.columns.items()}
        factors = {f.name: getattr(e, f.name) for f in fields(Efficiency)} | {name: np.array(values)[:, None]}
        return [float(v) for v in np.abs(np.log(predict_all(c, factors) / c["measured"])).sum(axis=1)]


def predict_all(c: dict[str, np.ndarray], f: dict) -> np.ndarray:
    """engines/speed.py's arithmetic on points' parts (columns) divided by the factors, written out here because the
    fit runs it millions of times (building speed()'s records for each would make it far slower); a factor is a
    number or a column of candidates, giving a row of figures per candidate."""
    bandwidth = np.where(c["hbm"], f["bandwidth_hbm"], f["bandwidth_gddr"])
    layer = f["layer_overhead_s"] + np.where(c["quantized"], f["layer_overhead_quantized_s"], 0.0)
    layer = layer + np.where(c["moe"], f["layer_overhead_moe_s"], 0.0)
    fixed = c["allreduces"] * np.where(c["pcie"], f["allreduce_pcie_s"], f["allreduce_link_s"]) + c["blocks"] / 2 * layer
    step = np.maximum(c["decode_memory"] / bandwidth, c["decode_compute"] / f["compute"]) + c["decode_ring"] + fixed
    rate = np.where(c["moe"], f["prefill_moe"], np.where(c["quantized"], f["prefill_quantized"], f["prefill"]))
    prompt, output, requests = c["prompt"], c["output"], c["requests"]
    prefill = np.maximum(c["prefill_compute"] / rate, c["prefill_memory"] / bandwidth) + c["prefill_ring"] + c["passes"] * fixed
    prefill = np.where(prompt > 0, prefill, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # each point keeps its own check's figure
        figures = (1 / step, requests * output / (requests * prefill + output * step), prompt / prefill, prefill + step)
    check = c["check"]
    return np.select([check == CHECKS.index(name) for name in CHECKS[:3]], figures[:3], figures[3])


def best(candidates: Callable[[int], float], low: int, high: int, coarse: int, costs: Callable[[list[float]], list[float]]) -> float:
    """The grid value of least cost: every `coarse` step first, then each step around the coarse best."""
    wide = list(range(low, high + 1, coarse))
    coarse_costs = costs([candidates(step) for step in wide])
    middle = wide[coarse_costs.index(min(coarse_costs))]
    fine = list(range(max(low, middle - coarse + 1), min(high, middle + coarse - 1) + 1))
    return candidates(min(zip(costs([candidates(step) for step in fine]), fine, strict=True))[1])


def fit_engine(
    chosen: list[Terms], start: Efficiency, shared: Efficiency | None, tied: dict[str, str], pooled: list[Terms], table: Table
) -> Efficiency:
    """One engine's (or the pooled serving engines') factors on its points: one pass over the factors. `shared` holds
    the pooled factors, fitted on `pooled`; a factor too few points of either act on takes its FALLBACK."""
    e = start
    for name, acts in ACTS.items():
        on = [t for t in chosen if acts(t)]
        few = len(on) < MIN_POINTS and sum(1 for t in pooled if acts(t)) < MIN_POINTS
        if name in tied:
            e = replace(e, **{name: getattr(e, tied[name])})
        elif name in POOLED and shared is not None:
            e = replace(e, **{name: getattr(shared, name)})
        elif few and name in FALLBACK:
            e = replace(e, **{name: getattr(e, FALLBACK[name])})
        elif len(on) >= MIN_POINTS:
            costs = _factor_costs(table, on, e, name)
            if name in MICROSECONDS:
                e = replace(e, **{name: best(lambda us: us / 1e6, 0, 500, 25, costs)})
            else:
                e = replace(e, **{name: best(lambda c: c / 100, 10, 95, 5, costs)})
        elif shared is not None:
            e = replace(e, **{name: getattr(shared, name)})
    return e


def _factor_costs(table: Table, on: list[Terms], e: Efficiency, name: str) -> Callable[[list[float]], list[float]]:
    return lambda values: table.losses(on, e, name, values)


def fit(found: list[Terms]) -> dict[str, Efficiency]:
    """Every engine's factors, fitted on `found` from START."""
    efficiency = dict.fromkeys(ENGINES, START)
    pooled = START
    serving = [t for t in found if t.engine in SERVING]
    table = Table(found)
    for _ in range(30):
        before = (efficiency, pooled)
        pooled = fit_engine(serving, pooled, None, {}, serving, table)
        efficiency = {
            engine: fit_engine(
                [t for t in found if t.engine == engine],
                efficiency[engine],
                None if engine == "llama.cpp" else pooled,
                TIED.get(engine, {}),
                [] if engine == "llama.cpp" else serving,
                table,
            )
            for engine in ENGINES
        }
        if (efficiency, pooled) == before:
            break
    return efficiency


@dataclass(frozen=True)
class LeftOut:
    """One point's error when its source was left out of the fit."""

    terms: Terms
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.terms.measured - 1


def left_out(found: list[Terms]) -> list[LeftOut]:
    """Every point predicted by the factors fitted without its source."""
    result = []
    for source in sorted({t.source for t in found}):
        held = [t for t in found if t.source == source]
        fitted = fit([t for t in found if t.source != source])
        result += [LeftOut(t, predict(t, fitted[t.engine])) for t in held]
    return sorted(result, key=lambda row: row.terms.id)


@dataclass(frozen=True)
class Summary:
    """One engine's left-out error on one check."""

    points: int
    within: int  # within the check's bound (decode and aggregate)
    mean_error: float
    worst_error: float


def summaries(rows: list[LeftOut]) -> dict[str, dict[str, Summary]]:
    """Per engine and check: the points, how many are within the bound, the mean and worst |error|."""
    found: dict[str, dict[str, Summary]] = {}
    for engine in ENGINES:
        for check in CHECKS:
            errors = [abs(row.error) for row in rows if row.terms.engine == engine and row.terms.check == check]
            if errors:
                bound = BOUNDS.get(check, math.inf)
                found.setdefault(engine, {})[check] = Summary(
                    len(errors), sum(1 for e in errors if e <= bound), math.fsum(errors) / len(errors), max(errors)
                )
    return found


if __name__ == "__main__":
    found = terms()
    fitted = fit(found)
    for engine, factors in fitted.items():
        print(engine, factors)
    for engine, checks in summaries(left_out(found)).items():
        for check, s in checks.items():
            print(f"{engine:13} {check:9} {s.points:4} points, {s.within:4} within, mean {s.mean_error:.1%}, worst {s.worst_error:.1%}")
