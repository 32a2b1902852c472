"""`gpumem estimate` and `gpumem models add`: one workload's per-GPU breakdown, and a catalog entry
drafted from a config.json. Reads the catalogs and a config; the arithmetic is engines/deployment.py's."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpumem.catalog.checkpoint import Checkpoint
from gpumem.catalog.hf_config import kept_parts, model_from_config, text_config
from gpumem.catalog.inputs import label, load_catalog
from gpumem.catalog.load import parse_json, read_text, read_yaml
from gpumem.catalog.models import HF_PAGE
from gpumem.catalog.rules import read_rules
from gpumem.catalog.validate import Invalid
from gpumem.commands.estimate_checkpoint import checkpoint_json, checkpoint_problems, checkpoint_repos, checkpoint_text, weighed_checkpoint
from gpumem.engines import architecture, deployment, launch, support
from gpumem.engines.sizing import Fit, deployment_fits, offered_configurations
from gpumem.engines.support import Refusal
from gpumem.errors import BuildError, Problems
from gpumem.records.catalog import STATE_NAMES, Catalog, Model, Weighed
from gpumem.records.engines import DeploymentRules, KvFormat, WeightFormat

GB = 1e9
GIB = 2**30
ESTIMATED_ID = "estimated"  # the id of a model --params describes
LINK = re.compile(r"https://[^\s,;)]+")  # the first address a source cites
MOST_GPUS = "the most GPUs one machine holds (rules.yaml's max_gpus_per_machine)"


@dataclass(frozen=True)
class Request:
    """What `gpumem estimate` was asked: a model (catalog id or config.json) and a workload."""

    model: str | None = None
    config: Path | None = None
    params: float | None = None  # billions, the architecture estimated from them (engines/architecture.py)
    weights: str | None = None
    kv: str = "bf16"
    gpus: int = 1
    context: int | None = None
    requests: int = 1
    utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool | None = None
    checkpoint: Path | None = None  # a local checkpoint whose headers give the weights' exact bytes

    @property
    def settings(self) -> deployment.Settings:
        return deployment.Settings(self.max_num_batched_tokens, self.max_num_seqs, bool(self.enforce_eager))


@dataclass(frozen=True)
class Estimate:
    model: Model
    weights: str
    kv: str
    context: int
    requests: int
    rules: DeploymentRules
    need: deployment.Deployment
    valid_gpu_counts: tuple[int, ...]
    fits: tuple[Fit, ...]
    catalog: Catalog | None = None  # for `--speed`
    batch: deployment.Batch = deployment.Batch(0, 0)  # the engine settings the need was counted at
    version: str = ""  # the pinned version of the engine that serves the format (rules.yaml, engines)
    command: launch.Launch | None = None  # the command that serves it on the GPUs asked for
    refused: tuple[Refusal, ...] = ()  # the GPUs on offer whose engine cannot run these formats, one each
    checkpoint: Checkpoint | None = None  # the checkpoint whose headers gave the weights' bytes


def serving_defaults(options: dict[str, Any]) -> dict[str, Any]:
    """The serving flags with the defaults of flags left out (None)."""
    kv, requests = options.get("kv"), options.get("requests")
    return {**options, "kv": "bf16" if kv is None else kv, "requests": 1 if requests is None else requests}


def read_config(path: Path) -> dict[str, Any]:
    """A config.json as a dict, or a BuildError naming the file."""
    problems = Problems()
    text = read_text(path, str(path), problems)
    problems.raise_if_any()
    assert text is not None
    data = parse_json(text, str(path), "a config.json is one object of numbers")
    if not isinstance(data, dict):
        raise BuildError([f"{path}: expected a JSON object (a config.json)"])
    return data


def model_of(catalog: Catalog, request: Request) -> Model:
    """The catalog model named by --model, or the one a --config describes."""
    if request.config is not None:
        try:
            config = read_config(request.config)
            limits = catalog.rules.calculator_limits
            return model_from_config(config, limits, request.config.stem, request.config.stem, "https://huggingface.co")
        except Invalid as error:
            raise BuildError([f"{request.config}: {error}"]) from None
    if request.params is not None:
        return estimated_model(catalog, request.params)
    known = {m.id: m for m in catalog.models}
    if request.model not in known:
        raise BuildError([f"--model: unknown model {request.model!r} (a catalog id, e.g. {catalog.models[0].id}; or pass --config)"])
    return known[request.model]


def estimated_model(catalog: Catalog, params_b: float) -> Model:
    """A model of `params_b` billion parameters whose architecture the catalog's dense models estimate."""
    most = catalog.rules.calculator_limits["max_params_b"]
    if not 0 < params_b <= most:
        raise BuildError([f"--params: expected billions of parameters above 0 and at most {most:,g}, got {params_b:g}"])
    rule = architecture.catalog_rule(catalog.models)
    if rule is None:
        too_few = "the catalog's dense models span too few sizes to fit the estimate on (the largest at least twice the smallest)"
        raise BuildError([f"--params: {too_few}"])
    arch = architecture.estimated_architecture(rule, params_b)
    name = f"{params_b:g}B parameters"
    return Model(ESTIMATED_ID, name, "custom", "", params_b, None, int(catalog.rules.calculator_limits["max_context"]), arch, None, "")


def estimated_line(catalog: Catalog, model: Model) -> str:
    """What the parameter count estimated, and the rule (printed under an estimated model's breakdown)."""
    rule, arch = architecture.catalog_rule(catalog.models), model.arch
    assert rule is not None  # estimated_model fitted it
    shape = f"{arch.layers} layers, hidden size {arch.hidden:,}, {arch.heads} heads of {arch.head_dim}, {arch.kv_heads} KV heads, "
    shape += f"vocabulary {arch.vocab:,}, MLP width {arch.intermediate:,}"
    law = f"layers = {rule.layers[0]:.3f} x P^{rule.layers[1]:.3f}, hidden = {rule.hidden[0]:.3f} x P^{rule.hidden[1]:.3f}"
    return f"Architecture estimated from the parameter count: {shape} ({law}, fitted over {rule.models} catalog dense models)"


def estimate(catalogs: Path, request: Request) -> Estimate:
    """The breakdown per GPU and the configurations on offer that hold it, cheapest first."""
    catalog = load_catalog(catalogs)
    rules = catalog.rules.deployment
    assert rules is not None  # validated with the catalogs
    model = model_of(catalog, request)
    checkpoint = weighed_checkpoint(request.checkpoint) if request.checkpoint is not None else None
    problems = []
    weights = request.weights or (checkpoint and checkpoint.format) or model.release
    problems += checkpoint_problems(checkpoint, model, weights)
    if weights not in rules.weight_formats:
        problems.append(f"--weights: unknown weight format {weights!r} (expected one of {', '.join(rules.weight_formats)})")
    if request.kv not in rules.kv_formats:
        problems.append(f"--kv: unknown KV format {request.kv!r} (expected one of {', '.join(rules.kv_formats)})")
    context = request.context or min(catalog.rules.fit_context, model.native_context)
    if context > model.native_context:
        problems.append(f"--context: {context:,} tokens is beyond {model.name}'s native context of {model.native_context:,}")
    if request.utilization is not None and not 0 < request.utilization < 1:
        problems.append(f"--utilization: expected a fraction between 0 and 1, got {request.utilization:g}")
    problems += _setting_problems(request)
    for flag, value in (("--gpus", request.gpus), ("--requests", request.requests), ("--context", context)):
        if value <= 0:
            problems.append(f"{flag}: expected a positive whole number, got {value}")
    if request.gpus > (most := catalog.rules.max_gpus_per_machine):  # either runtime serves from one machine here
        problems.append(f"--gpus: expected at most {most:,}, {MOST_GPUS}, got {request.gpus:,}")
    if problems:
        raise BuildError(problems)
    fmt, kv = rules.weight_formats[weights], rules.kv_formats[request.kv]
    if kv.runtime != fmt.runtime and request.kv not in ("bf16", "fp32"):
        usable = [name for name, other in rules.kv_formats.items() if other.runtime == fmt.runtime or name == "bf16"]
        raise BuildError(
            [f"--kv: {request.kv} is {kv.runtime}'s cache format; {fmt.label} weights run on {fmt.runtime} (use {_listed(tuple(usable))})"]
        )
    if nowhere := runs_nowhere(catalog, fmt, kv):
        raise BuildError([nowhere])
    vllm = fmt.runtime == "vllm"  # llama.cpp splits by layers and takes any count
    counts = deployment.valid_gpu_counts(model.arch, catalog.rules.gpu_counts) if vllm else catalog.rules.gpu_counts
    if vllm and not deployment.valid_tensor_parallel(model.arch, request.gpus):
        heads = f"{model.arch.heads} attention heads and {model.arch.kv_heads} KV heads"
        raise BuildError([f"--gpus: vLLM cannot split {model.name}'s {heads} over {request.gpus} GPUs; it accepts {_listed(counts)}"])
    if request.utilization is not None:
        rules = dataclasses.replace(rules, utilization=request.utilization)
    if checkpoint is not None:
        model = dataclasses.replace(model, weighed=Weighed(weights, checkpoint.bytes))
    batch = request.settings.applied(deployment.Batch(rules.large_batch_tokens, rules.large_batch_sequences))
    need = deployment.deployment(rules, model, fmt, kv, request.gpus, context, request.requests, batch)
    configurations = offered_configurations(catalog.gpus, catalog.snapshot.offers, catalog.rules.gpu_counts)
    more = catalog.rules.comfortable_requests
    fits = deployment_fits(rules, model, fmt, kv, context, request.requests, configurations, more, catalog.rules.support, request.settings)
    refused = support.left_out(catalog.rules.support, rules.weight_formats, fmt, kv, (c.gpu for c in configurations))
    pin = catalog.rules.engines.get(fmt.runtime)
    version = pin.version if pin else ""
    work = launch.Workload(request.gpus, context, request.requests)
    settings = launch.Settings(rules.utilization, request.max_num_batched_tokens, bool(request.enforce_eager), request.max_num_seqs)
    command = launch.launch(model, fmt, kv, work, settings, version)
    parts = (need, counts, fits, catalog, batch, version, command, refused, checkpoint)
    return Estimate(model, weights, request.kv, context, request.requests, rules, *parts)


def _setting_problems(request: Request) -> list[str]:
    """vLLM's own limits on the engine settings given: positive, and max_num_batched_tokens >= max_num_seqs
    (SchedulerConfig refuses less); request slots for every concurrent request."""
    problems = []
    seqs, tokens = request.max_num_seqs, request.max_num_batched_tokens
    for flag, value in (("--max-num-seqs", seqs), ("--max-num-batched-tokens", tokens)):
        if value is not None and value <= 0:
            problems.append(f"{flag}: expected a positive whole number, got {value}")
    if seqs is not None and tokens is not None and 0 < tokens < seqs:
        problems.append(f"--max-num-batched-tokens: vLLM needs at least --max-num-seqs ({seqs:,}) tokens per step, got {tokens:,}")
    if seqs is not None and 0 < seqs < request.requests:
        problems.append(
            f"--max-num-seqs: {request.requests:,} concurrent requests need at least {request.requests:,} request slots, got {seqs:,}"
        )
    return problems


def refusal_text(refusal: Refusal) -> str:
    """Why an engine cannot run a format on a GPU, in one sentence with the engine's code that decides."""
    engine = f"{refusal.engine_label} {refusal.version}"
    does = f"runs {refusal.format_label} weights" if refusal.kind == "weights" else f"stores an {refusal.format_label} KV cache"
    if not refusal.loaded:
        said = (
            f"{engine} does not load {refusal.format_label} weights"
            if refusal.kind == "weights"
            else f"{engine} has no {refusal.format_label} KV cache"
        )
    elif not refusal.needs and not refusal.targets:
        said = f"{engine} {does} on no GPU"
    elif refusal.has.startswith("gfx"):
        targets = f"AMD {_listed(refusal.targets)} only" if refusal.targets else "no AMD GPU"
        said = f"{engine} {does} on {targets}; the {refusal.gpu_name} is {refusal.has}"
    elif refusal.needs:
        said = f"{engine} {does} from compute capability {refusal.needs}; the {refusal.gpu_name} has {refusal.has}"
    else:
        said = f"{engine} {does} on no NVIDIA GPU"
    cited = LINK.search(refusal.source)
    return f"{said} ({cited.group(0)})" if cited else said


def runs_nowhere(catalog: Catalog, fmt: WeightFormat, kv: KvFormat) -> str:
    """Why no GPU at all runs these formats (and no stand-in does), or ""."""
    table = catalog.rules.support
    if table is None:
        return ""
    for kind, name, engine in (("weights", fmt.name, fmt.runtime), ("kv", kv.name, fmt.runtime)):
        found = support.reach(table, engine, kind, name)
        stand_in = table.equivalents.get(fmt.name) if kind == "weights" else None
        if found is not None and not found.nvidia and not found.amd and stand_in is None:
            flag = "--weights" if kind == "weights" else "--kv"
            gpu = catalog.gpus[0]
            refusal = support.refusal(table, engine, kind, fmt if kind == "weights" else kv, gpu)
            assert refusal is not None
            return f"{flag}: {refusal_text(refusal)}"
    return ""


def _listed(items: tuple[Any, ...]) -> str:
    return ", ".join(map(str, items[:-1])) + f" or {items[-1]}" if len(items) > 1 else str(items[0])


def as_json(result: Estimate) -> str:
    """Bytes, as the issue names them, and every configuration that holds the workload."""
    need = result.need
    data = {
        "model": result.model.id,
        **({"estimated_architecture": estimated_fields(result.model)} if result.model.id == ESTIMATED_ID else {}),
        "weights": result.weights,
        "kv": result.kv,
        "context": result.context,
        "requests": result.requests,
        "gpus": need.gpus,
        "weights_bytes": round(need.weights_bytes),
        **({"checkpoint": checkpoint_json(result.checkpoint)} if result.checkpoint else {}),
        "weights_bytes_per_gpu": round(need.weights_bytes_per_gpu),
        "kv_bytes_per_token_per_gpu": round(need.kv_bytes_per_token_per_gpu),
        "kv_cache_bytes_per_gpu": round(need.kv_cache_bytes_per_gpu),
        **({"state_bytes_per_gpu": round(need.state_bytes_per_gpu)} if result.model.arch.state else {}),
        "runtime_bytes_per_gpu": round(need.runtime_bytes_per_gpu),
        "cuda_graph_bytes_per_gpu": round(need.graph_bytes_per_gpu),
        "total_bytes_per_gpu": round(need.total_bytes_per_gpu),
        "engine": _engine_json(result),
        "launch": _launch_json(result.command),
        "valid_gpu_counts": list(result.valid_gpu_counts),
        "configurations": [
            {
                "gpu": fit.configuration.gpu.id,
                "count": fit.configuration.count,
                "price_per_hour": fit.configuration.price_per_hour,
                "total_bytes_per_gpu": round(fit.need.total_bytes_per_gpu),
                "budget_bytes_per_gpu": round(fit.budget_bytes),
                "comfortable": fit.comfortable,
                **({"weights": fit.stand_in.name, "runtime": fit.stand_in.runtime} if fit.stand_in else {}),
                **({"via": fit.via} if fit.via else {}),
            }
            for fit in result.fits
        ],
        **({"refused": [{"gpu": r.gpu, "reason": refusal_text(r)} for r in result.refused]} if result.refused else {}),
    }
    return json.dumps(data, indent=2)


def _state_lines(result: Estimate) -> list[str]:
    """A hybrid's fixed state, the part of the cache a request holds whatever its length."""
    state = result.model.arch.state
    if state is None:
        return []
    layers = f"{state.layers} of {result.model.arch.layers} layers are {STATE_NAMES[state.kind]}"
    fixed = size_text(result.need.state_bytes_per_gpu)
    return [f"    of which  {fixed} per GPU is fixed state ({layers}: a state per request, no KV per token)"]


def as_text(result: Estimate, currency: str = "USD") -> str:
    """The breakdown and the configurations, for a terminal."""
    need, model = result.need, result.model
    fmt = result.rules.weight_formats[result.weights]
    lines = [
        f"{model.name}, {fmt.label} weights, {result.rules.kv_formats[result.kv].label} KV cache, "
        f"{result.requests} request(s) of {result.context:,} tokens on {need.gpus} GPU(s):",
        f"  weights      {size_text(need.weights_bytes)} in all, {size_text(need.weights_bytes_per_gpu)} per GPU",
        f"  KV cache     {size_text(need.kv_cache_bytes_per_gpu)} per GPU ({need.kv_bytes_per_token_per_gpu:,.0f} bytes per token)",
        *_state_lines(result),
        f"  runtime      {size_text(need.runtime_bytes_per_gpu)} per GPU ({RUNTIME_PARTS[fmt.runtime]})",
        *_graph_lines(result),
        f"  total        {size_text(need.total_bytes_per_gpu)} per GPU",
        _split_line(fmt.runtime, result.valid_gpu_counts),
        *_launch_lines(result.command, need.gpus),
        f"Configurations on offer that hold it (per GPU: need / {result.rules.utilization:.0%} of the card), cheapest first:",
    ]
    if model.id == ESTIMATED_ID and result.catalog is not None:
        lines.insert(1, "  " + estimated_line(result.catalog, model))
    if result.checkpoint is not None:
        lines.insert(2, f"               read from the headers of {result.checkpoint.path}: {checkpoint_text(result.checkpoint)}")
    for fit in result.fits:
        config = fit.configuration
        tag = "comfortable" if fit.comfortable else "tight"
        lines.append(
            f"  {config.count} x {config.gpu.name:<16} {config.price_per_hour:>8.2f} {currency}/h  "
            f"{size_text(fit.need.total_bytes_per_gpu)} of {size_text(fit.budget_bytes)}  {tag}{_engine_note(fit)}"
        )
    if not result.fits:
        lines.append("  none: it needs more than one machine of the largest GPUs on offer")
    if result.refused:
        lines.append("Left out, as the engine cannot run these formats there:")
        lines += [f"  {r.gpu_name}: {refusal_text(r)}" for r in result.refused]
    return "\n".join(lines)


def estimated_fields(model: Model) -> dict[str, int]:
    """An estimated model's numbers, named as the calculator's fields."""
    a = model.arch
    values = (a.layers, a.heads, a.kv_heads, a.head_dim, a.hidden, a.vocab, a.intermediate)
    return dict(zip(architecture.ESTIMATED, values, strict=True))


def _launch_json(command: launch.Launch | None) -> dict[str, Any] | None:
    if command is None:
        return None
    return {
        "engine": command.engine,
        "version": command.version,
        "argv": list(command.argv),
        "text": command.text,
        "download": command.download,
        "missing": command.missing,
    }


def _launch_lines(command: launch.Launch | None, gpus: int) -> list[str]:
    """The command that serves the workload on the GPUs asked for, with its engine version."""
    if command is None:
        return []
    lines = [f"Launch on {gpus} GPU(s) ({command.label} {command.version}):", f"  {command.text}"]
    if command.download:
        lines.append(f"  the GGUF file is in https://huggingface.co/{command.download}")
    if command.missing:
        lines.append(f"  the catalog names no {command.missing.strip('<>')}: put its repository or file in its place")
    return lines


def _engine_json(result: Estimate) -> dict[str, Any]:
    """The engine, its pinned version and the settings the need was counted at."""
    runtime = result.rules.weight_formats[result.weights].runtime
    data: dict[str, Any] = {"name": runtime, "version": result.version, "gpu_memory_utilization": result.rules.utilization}
    if runtime == "vllm":
        batch = result.batch
        data.update(max_num_batched_tokens=batch.tokens, max_num_seqs=batch.sequences, enforce_eager=not batch.cuda_graphs)
    return data


def _graph_lines(result: Estimate) -> list[str]:
    """vLLM's CUDA-graph line and the engine settings the need was counted at (none for llama.cpp)."""
    if result.rules.weight_formats[result.weights].runtime != "vllm":
        return []
    batch, need = result.batch, result.need
    graphs = "off (--enforce-eager)" if not batch.cuda_graphs else "on"
    return [
        f"  CUDA graphs  {size_text(need.graph_bytes_per_gpu)} per GPU (vLLM's estimate, taken from the KV budget)",
        f"  vLLM {result.version}: max_num_batched_tokens {batch.tokens:,}, max_num_seqs {batch.sequences:,}, CUDA graphs {graphs}",
    ]


def _engine_note(fit: Fit) -> str:
    """What a fit line adds when another engine's format stands in, or the engine takes a slower path."""
    notes = [f"llama.cpp with {fit.stand_in.label} weights"] if fit.stand_in else []
    notes += [f"through its {fit.via} kernels"] if fit.via else []
    return f"  ({'; '.join(notes)})" if notes else ""


# What the runtime line counts for each runtime (engines/deployment.runtime_bytes_per_gpu).
RUNTIME_PARTS = {
    "vllm": "vLLM's non-torch memory and profiling peak at the settings below",
    "llama.cpp": "llama.cpp's context and compute buffer",
}


def _split_line(runtime: str, counts: tuple[int, ...]) -> str:
    """How the runtime splits the model over GPUs, and the counts it takes among those on offer."""
    if runtime == "llama.cpp":
        return f"llama.cpp splits the model by layers (its default split mode): any count of GPUs; machines on offer hold {_listed(counts)}"
    return f"Tensor-parallel sizes vLLM accepts: {_listed(counts)}"


def size_text(value: float) -> str:
    return f"{value / GB:,.1f} GB ({value / GIB:,.1f} GiB)"


def config_limits(catalogs: Path) -> dict[str, float]:
    """rules.yaml's calculator bounds, which a config.json's counts keep (read alone: a draft needs no snapshot)."""
    problems = Problems()
    path = catalogs / "rules.yaml"
    data = read_yaml(path, label(path), problems)
    rules = read_rules(data, label(path), problems, None) if data is not None else None
    problems.raise_if_any()
    assert rules is not None  # no problem means the rules were read
    return rules.calculator_limits


def draft_entry(
    config_path: Path, catalogs: Path, model_id: str | None, name: str | None, source: str | None, checkpoint: Path | None = None
) -> str:
    """A models.yaml entry drafted from a config.json: the numbers counted, the words left to fill; with a
    checkpoint, its repository entry with the bytes its headers give."""
    config = read_config(config_path)
    ident = model_id or config_path.parent.name.lower() or config_path.stem
    try:
        model = model_from_config(config, config_limits(catalogs), ident, name or ident, source or "https://huggingface.co")
    except Invalid as error:
        raise BuildError([f"{config_path}: {error}"]) from None
    arch = model.arch
    attention: dict[str, Any] = {"kind": arch.attention.kind}
    if arch.attention.kind in ("sliding", "chunked"):
        attention.update(window=arch.attention.window, sliding_layers=arch.attention.sliding_layers)
    if arch.attention.global_head_dim:  # Gemma 4's full layers of their own size
        attention.update({"global_kv_heads": arch.attention.global_kv_heads} if arch.attention.global_kv_heads else {})
        attention.update(global_head_dim=arch.attention.global_head_dim)
    if arch.attention.qk_norm:  # MiniMax M2's q and k norms over every head
        attention.update(qk_norm=arch.attention.qk_norm)
    if arch.attention.kind == "mla":
        attention.update(kv_lora_rank=arch.attention.kv_lora_rank, qk_rope_head_dim=arch.attention.qk_rope_head_dim)
        attention.update({"q_lora_rank": arch.attention.q_lora_rank} if arch.attention.q_lora_rank else {})
        attention.update(v_head_dim=arch.attention.v_head_dim)
        attention.update({"index_bytes": arch.attention.index_bytes} if arch.attention.index_bytes else {})
    fields: list[tuple[str, Any]] = [
        ("id", model.id),
        ("name", model.name),
        ("family", model.family),
        ("size_label", model.size_label),
        ("params_b", round(model.params_b, 9)),
    ]
    if model.active_params_b:
        fields.append(("active_params_b", round(model.active_params_b, 9)))
    fields += [
        ("layers", arch.layers),
        ("hidden", arch.hidden),
        ("heads", arch.heads),
        ("kv_heads", arch.kv_heads),
        ("head_dim", arch.head_dim),
        ("native_context", model.native_context),
        ("attention", attention),
        ("vocab", arch.vocab),
        ("tied_embeddings", arch.tied_embeddings),
        ("intermediate", arch.intermediate),
    ]
    if arch.blocks_per_layer != 2:
        fields.append(("blocks_per_layer", arch.blocks_per_layer))
    if arch.experts:
        e = arch.experts
        experts = {"count": e.count, "active": e.active, "intermediate": e.intermediate}
        gated = 0 if e.projections == 3 else e.projections  # a gated expert's three, models.yaml's default, left out
        given = (("shared", e.shared), ("dense_layers", e.dense_layers), ("projections", gated), ("width", e.width))
        experts.update({k: v for k, v in given if v})
        fields.append(("experts", experts))
    if arch.state:
        state = {"kind": arch.state.kind, "layers": arch.state.layers, **({"conv": arch.state.conv} if arch.state.conv else {})}
        state["recurrent"] = arch.state.recurrent  # lightning attention keeps no convolution: models.yaml leaves conv out
        state.update({"recurrent_bytes": arch.state.recurrent_bytes} if arch.state.recurrent_bytes else {})
        state.update({"mlp_layers": arch.state.mlp_layers} if arch.state.mlp_layers else {})
        fields.append(("state", state))
    if model.vision_params_b:
        fields.append(("vision_params_b", round(model.vision_params_b, 6)))
    if model.mtp_params_b:
        fields.append(("mtp_params_b", round(model.mtp_params_b, 9)))
    fields.append(("release", model.release))
    kept = kept_parts(text_config(config))
    if checkpoint is not None:
        fields.append(("repos", checkpoint_repos(weighed_checkpoint(checkpoint), model, source, kept)))
    elif kept and (page := HF_PAGE.fullmatch(source or "")):  # the release's repository, with what it keeps at 16 bits
        fields.append(
            ("repos", {model.release: {"repo": page.group(1), "kept": list(kept), "source": f"https://huggingface.co/{page.group(1)}"}})
        )
    fields += [("license", DRAFT_LICENSE), ("source", model.source)]
    lines = ["  - " + _yaml_field(*fields[0])] + ["    " + _yaml_field(key, value) for key, value in fields[1:]]
    return "\n".join(lines) + "\n"


# A config.json says nothing of the licence: the draft names what to fill in (and fails validation until then).
DRAFT_LICENSE = {"name": "TODO: the licence's name", "kind": "TODO: open-source or custom", "url": "TODO: the URL of its text"}


def _yaml_field(key: str, value: Any) -> str:
    return f"{key}: {_flow(value)}"


def _flow(value: Any) -> str:
    """A value in YAML's flow style: a mapping in braces, a list in brackets (nested ones too), else a scalar."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))
