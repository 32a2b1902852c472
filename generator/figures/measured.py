"""The deployment model against measured serving memory: one row per check of each measured point.

Pure: takes the points of catalogs/measurements/serving.yaml (runtime output quoted from public
logs), the config.json of each measured architecture and the deployment rules; returns the
rows the methodology page shows and tests/test_deployment.py holds to issue 10's bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpumem.catalog.hf_config import model_from_config
from gpumem.engines import deployment as engine
from gpumem.engines import llamacpp
from gpumem.records.catalog import Model
from gpumem.records.engines import DeploymentRules, KvFormat

UNITS = {"GiB": 2**30, "MiB": 2**20, "bytes": 1}
# Issue 10's bounds: weights, KV bytes per token per GPU, and weights + runtime; issue 22's on llama.cpp's
# compute buffer, a term without a fitted constant, under-counted by up to 11 % on the logs that show it.
# Issue 23's on a hybrid's state (llama.cpp's recurrent buffer) and on vLLM's concurrency, both without a fitted constant.
BOUNDS = {"weights": 0.03, "kv": 0.02, "runtime": 0.10, "compute": 0.15, "state": 0.02, "concurrency": 0.03}
# Every runtime point ran on an H100 80GB (its logs print 79.19 GiB): what CUDA reports for it.
H100_BYTES = 85_045_477_376


@dataclass(frozen=True)
class Row:
    """One check: what was measured, what the engine says, and why a bound does not apply (or '')."""

    point: str
    check: str
    measured: float
    predicted: float
    excluded: str = ""
    url: str = ""
    device: str = ""  # the GPU a per-GPU figure was printed for (llama.cpp's compute buffer), or ""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= BOUNDS[self.check]


@dataclass(frozen=True)
class Summary:
    """One check's enforced rows: how many, the mean and the worst error, and its bound."""

    check: str
    count: int
    mean_error: float
    worst_error: float
    bound: float


def rows(
    points: list[dict[str, Any]], configs: Mapping[str, dict[str, Any]], rules: DeploymentRules, limits: Mapping[str, float]
) -> tuple[Row, ...]:
    """Every check every point allows, in the file's order (the configs counted within rules.yaml's calculator limits)."""
    models = {name: model_from_config(config, limits, name, name, "https://huggingface.co") for name, config in configs.items()}
    return tuple(row for point in points for row in _rows_of(point, models, rules))


def summaries(found: tuple[Row, ...]) -> tuple[Summary, ...]:
    result = []
    for check, bound in BOUNDS.items():
        enforced = [abs(row.error) for row in found if row.check == check and not row.excluded]
        mean = sum(enforced) / len(enforced) if enforced else 0.0
        result.append(Summary(check, len(enforced), mean, max(enforced, default=0.0), bound))
    return tuple(result)


def _amount(point: dict[str, Any], key: str) -> float:
    return float(point["measured"][key]) * UNITS[point.get("units", {}).get(key, "GiB")]


def _rows_of(point: dict[str, Any], models: Mapping[str, Model], rules: DeploymentRules) -> list[Row]:
    excluded = point.get("not_enforced", {})
    if "all" in excluded or point.get("arch") not in models:
        return []
    found = []
    measured, settings = point["measured"], point.get("settings", {})
    model, gpus, url = models[point["arch"]], point["gpus"], point["url"]
    kv = rules.kv_formats.get(point["kv"])
    fmt = rules.weight_formats.get(point.get("weights") or "")

    def row(check: str, measured_value: float, predicted: float, device: str = "") -> None:
        found.append(Row(point["id"], check, measured_value, predicted, excluded.get(check, ""), url, device))

    if fmt and "weights" in measured:
        row("weights", _amount(point, "weights"), engine.weights_bytes(model, fmt) / gpus)
    if fmt and "model_size" in measured:
        row("weights", _amount(point, "model_size"), engine.weights_bytes(model, fmt))
    # a hybrid's tokens are vLLM's concurrency at max_model_len, not its memory over a per-token cost: its check is concurrency
    if kv and "kv_cache_tokens" in measured and "kv_cache_memory" in measured and model.arch.state is None:
        per_token = _amount(point, "kv_cache_memory") / measured["kv_cache_tokens"]
        row("kv", per_token, engine.kv_bytes_per_token_per_gpu(model.arch, kv, gpus))
    if kv and "kv_self" in measured:
        row("kv", _amount(point, "kv_self"), _llamacpp_cache(model, kv, settings))
    if fmt and {"weights", "non_torch", "activation_peak"} <= set(measured):
        total = sum(_amount(point, key) for key in ("weights", "non_torch", "activation_peak"))
        batch = engine.batch_defaults(rules, H100_BYTES, "h100-sxm")
        context = settings.get("max_model_len", model.native_context)
        runtime = engine.runtime_bytes_per_gpu(rules, model.arch, fmt, gpus, batch, context, batch.sequences)
        predicted = engine.weights_bytes(model, fmt) / gpus + runtime
        row("runtime", total, predicted)
    if "state" in measured:
        # llama.cpp keeps (1 + n_rs_seq) copies of each sequence's state when speculative decoding can roll it back
        copies = settings.get("sequences", 1) * (1 + settings.get("rs_seq", 0))
        row("state", _amount(point, "state"), engine.state_cache_bytes_per_gpu(model.arch, kv, copies, 1, "llama.cpp", engine.STATE_ITSELF))
    if kv and "concurrency" in measured:
        paging = engine.Paging(**settings["paging"]) if "paging" in settings else engine.state_paging(rules, model.arch)
        reserved = rules.in_flight_batches * settings.get("max_num_batched_tokens", 0)
        found_concurrency = engine.concurrency(
            model.arch, kv, _amount(point, "kv_cache_memory"), gpus, settings["max_model_len"], reserved, paging
        )
        row("concurrency", float(measured["concurrency"]), found_concurrency)
    if "compute" in measured:
        unit = UNITS[point["units"]["compute"]]
        for device, role in settings["devices"].items():
            predicted = llamacpp.compute_bytes(model.arch, _graph(settings), output_layer=role == "output")
            row("compute", float(measured["compute"][device]) * unit, predicted, device)
    return found


def _graph(settings: dict[str, Any]) -> llamacpp.Graph:
    """The graph a logged start-up reserved: its cells per sequence, micro-batch, output rows (older builds reserved
    the whole micro-batch), flash attention and pipeline copies."""
    sequences = settings["sequences"]
    context = settings["n_ctx"] // sequences
    return llamacpp.Graph(context, sequences, settings["n_ubatch"], settings["n_outputs"], settings["flash_attn"], settings["copies"])


def _llamacpp_cache(model: Model, kv: KvFormat, settings: dict[str, Any]) -> float:
    """llama.cpp's KV buffer: n_ctx cells shared by its sequences, or one part of an interleaved cache."""
    sequences = settings.get("sequences", 1)
    tokens = settings["n_ctx"] // sequences
    arch = model.arch
    per_layer = engine.kv_elements_per_token_layer(arch, 1) * kv.bytes * tokens * sequences
    full, sliding, _ = engine.layer_slots(arch, "llama.cpp")
    part = settings.get("cache")
    if part == "full_layers":  # the full-attention layers' cache (a hybrid's state is a buffer of its own)
        return per_layer * full
    if part == "sliding_layers":
        return per_layer * sliding * min(1, arch.attention.window / tokens)
    return engine.kv_cache_bytes_per_gpu(arch, kv, tokens, sequences, 1, "llama.cpp")
