"""`gpumem estimate --mode full|lora|qlora`: one fine-tuning run's memory per GPU, by part, and the
configurations on offer that hold it. Reads the catalogs; the arithmetic is engines/training.py's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.estimate import ESTIMATED_ID, Request, estimated_line, model_of, size_text
from gpumem.engines import training as engine
from gpumem.engines.sizing import Configuration, offered_configurations
from gpumem.errors import BuildError
from gpumem.figures.training import holding, is_tight
from gpumem.records.catalog import Model
from gpumem.records.engines import TrainingDefaults

# what `gpumem estimate` takes for serving only, and what it takes for training only
SERVING_FLAGS = {
    "weights": "--weights",
    "kv": "--kv",
    "context": "--context",
    "requests": "--requests",
    "utilization": "--utilization",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "enforce_eager": "--enforce-eager",
}
TRAINING_FLAGS = {
    "seq": "--seq",
    "micro_batch": "--micro-batch",
    "checkpointing": "--checkpointing",
    "flash_attention": "--flash-attention",
    "optimizer": "--optimizer",
    "precision": "--precision",
    "lora_rank": "--lora-rank",
    "lora_targets": "--lora-targets",
    "zero": "--zero",
    "offload_optimizer": "--offload-optimizer",
    "fp32_unquantized": "--fp32-unquantized",
}


@dataclass(frozen=True)
class TrainingRequest:
    """The training options of `gpumem estimate`; None where the flag was not given."""

    mode: str
    seq: int | None = None
    micro_batch: int | None = None
    checkpointing: str | None = None
    flash_attention: str | None = None
    optimizer: str | None = None
    precision: str | None = None
    lora_rank: int | None = None
    lora_targets: str | None = None
    zero: int | None = None
    offload_optimizer: bool | None = None
    fp32_unquantized: bool | None = None


@dataclass(frozen=True)
class Fit:
    configuration: Configuration
    card_bytes: float
    tight: bool = False  # the training fit rule: less than training_fit.comfortable_free of the card left free


@dataclass(frozen=True)
class TrainingEstimate:
    model: Model
    setup: engine.TrainingSetup
    need: engine.Training
    fits: tuple[Fit, ...]
    comfortable_free: float = 0.0  # rules.yaml training_fit, stated beside each tag
    estimated: str = ""  # what --params estimated, and the rule


def check_flags(request: Request, training: TrainingRequest) -> None:
    """Serving flags with a training mode, or training flags with --mode serve, are refused by name."""
    if training.mode == "serve":
        given = [flag for name, flag in TRAINING_FLAGS.items() if getattr(training, name) is not None]
        if given:
            raise BuildError([f"{given[0]}: applies to fine-tuning only (--mode full, lora or qlora)"])
        return
    given = [flag for name, flag in SERVING_FLAGS.items() if getattr(request, name) is not None]
    if given:
        raise BuildError([f"{given[0]}: applies to serving only (--mode serve); fine-tuning takes --seq and --micro-batch"])
    if training.mode == "full" and (training.lora_rank is not None or training.lora_targets is not None):
        flag = "--lora-rank" if training.lora_rank is not None else "--lora-targets"
        raise BuildError([f"{flag}: full fine-tuning trains every weight; LoRA options apply to --mode lora or qlora"])


def setup_of(model: Model, request: Request, training: TrainingRequest, defaults: TrainingDefaults) -> engine.TrainingSetup:
    """The engine's setup from the flags, each missing one at its default (rules.yaml, training.defaults)."""
    method = training.mode
    lora = method != "full"
    try:
        targets = engine.targets_of(training.lora_targets or defaults.lora_targets, model.arch) if lora else ()
    except engine.TrainingError as error:
        raise BuildError([f"--lora-targets: {error}"]) from None
    return engine.TrainingSetup(
        method=method,
        seq=training.seq if training.seq is not None else defaults.seq,
        micro_batch=training.micro_batch if training.micro_batch is not None else defaults.micro_batch,
        checkpointing=training.checkpointing or engine.FLAG_DEFAULTS["checkpointing"],
        flash_attention=(training.flash_attention or engine.FLAG_DEFAULTS["flash_attention"]) == "on",
        optimizer=training.optimizer or engine.FLAG_DEFAULTS["optimizer"],
        precision=training.precision or defaults.precision[method],
        lora_rank=(training.lora_rank if training.lora_rank is not None else defaults.lora_rank) if lora else 0,
        lora_targets=targets,
        zero=training.zero or engine.FLAG_DEFAULTS["zero"],
        gpus=request.gpus,
        offload_optimizer=bool(training.offload_optimizer),
        fp32_unquantized=bool(training.fp32_unquantized),
    )


def estimate(catalogs: Path, request: Request, training: TrainingRequest) -> TrainingEstimate:
    """The run's parts per GPU and the configurations of --gpus GPUs on offer whose cards hold it, cheapest first."""
    catalog = load_catalog(catalogs)
    rules, deployment = catalog.rules.training, catalog.rules.deployment
    if rules is None or deployment is None or rules.defaults is None:
        raise BuildError([f"{catalogs / 'rules.yaml'}: no training block, so fine-tuning cannot be estimated"])
    check_flags(request, training)
    numbers = (
        ("--seq", training.seq),
        ("--micro-batch", training.micro_batch),
        ("--lora-rank", training.lora_rank),
        ("--gpus", request.gpus),
    )
    wrong = [f"{flag}: expected a positive whole number, got {value}" for flag, value in numbers if value is not None and value <= 0]
    if wrong:
        raise BuildError(wrong)
    model = model_of(catalog, request)
    setup = setup_of(model, request, training, rules.defaults)
    try:
        need = engine.training(model, setup, rules, deployment)
    except engine.TrainingError as error:
        raise BuildError([str(error)]) from None
    configurations = offered_configurations(catalog.gpus, catalog.snapshot.offers, (setup.gpus,))
    held = holding(need.footprint_bytes_per_gpu, configurations)
    fits = tuple(Fit(c, c.gpu.runtime_bytes, is_tight(need, c, rules)) for c in held)
    estimated = estimated_line(catalog, model) if model.id == ESTIMATED_ID else ""
    return TrainingEstimate(model, setup, need, fits, rules.fit.comfortable_free if rules.fit else 0.0, estimated)


def as_json(result: TrainingEstimate) -> str:
    """Bytes per GPU, as the issue names them, and every configuration that holds the run."""
    setup, need = result.setup, result.need
    data = {
        "model": result.model.id,
        "mode": setup.method,
        "seq": setup.seq,
        "micro_batch": setup.micro_batch,
        "checkpointing": setup.checkpointing,
        "flash_attention": "on" if setup.flash_attention else "off",
        "optimizer": setup.optimizer,
        "precision": setup.precision,
        "lora_rank": setup.lora_rank or None,
        "lora_targets": list(setup.lora_targets) or None,
        "zero": setup.zero,
        "gpus": setup.gpus,
        "offload_optimizer": setup.offload_optimizer,
        "fp32_unquantized": setup.fp32_unquantized,
        "trainable_params": round(need.trainable_params),
        "weights_bytes_per_gpu": round(need.weights_bytes_per_gpu),
        "gradients_bytes_per_gpu": round(need.gradients_bytes_per_gpu),
        "optimizer_bytes_per_gpu": round(need.optimizer_bytes_per_gpu),
        "activations_bytes_per_gpu": round(need.activations_bytes_per_gpu),
        "dequantized_bytes_per_gpu": round(need.dequantized_bytes_per_gpu),
        "runtime_bytes_per_gpu": round(need.runtime_bytes_per_gpu),
        "total_bytes_per_gpu": round(need.total_bytes_per_gpu),
        "reserve_bytes_per_gpu": round(need.reserve_bytes_per_gpu),
        "footprint_bytes_per_gpu": round(need.footprint_bytes_per_gpu),
        "fit_rule": {"allocator_reserve": need.allocator_reserve, "comfortable_free": result.comfortable_free},
        "configurations": [
            {
                "gpu": fit.configuration.gpu.id,
                "count": fit.configuration.count,
                "price_per_hour": fit.configuration.price_per_hour,
                "card_bytes": round(fit.card_bytes),
                "fit": "tight" if fit.tight else "comfortable",
            }
            for fit in result.fits
        ],
    }
    return json.dumps(data, indent=2)


def as_text(result: TrainingEstimate, currency: str = "USD") -> str:
    """The parts and the configurations, for a terminal."""
    setup, need = result.setup, result.need
    method = setup.method if setup.method == "full" else f"{setup.method} (rank {setup.lora_rank} on {', '.join(setup.lora_targets)})"
    sharding = (
        f"ZeRO-{setup.zero} over {setup.gpus} GPUs"
        if setup.zero
        else f"data parallel over {setup.gpus} GPUs"
        if setup.gpus > 1
        else "one GPU"
    )
    attention = "on" if setup.flash_attention else "off"
    lines = [
        f"{result.model.name}, {method}, {setup.micro_batch} x {setup.seq:,} tokens, checkpointing {setup.checkpointing}, "
        f"FlashAttention {attention}, {setup.optimizer} ({setup.precision}), {sharding}:",
        f"  weights      {size_text(need.weights_bytes_per_gpu)} per GPU",
        f"  gradients    {size_text(need.gradients_bytes_per_gpu)} per GPU ({need.trainable_params:,.0f} trainable parameters)",
        f"  optimizer    {size_text(need.optimizer_bytes_per_gpu)} per GPU"
        f"{' (in CPU memory: offloaded)' if setup.offload_optimizer else ''}",
        f"  activations  {size_text(need.activations_bytes_per_gpu)} per GPU",
        *(
            [f"  dequantized  {size_text(need.dequantized_bytes_per_gpu)} per GPU (16-bit copies of the 4-bit weights)"]
            if need.dequantized_bytes_per_gpu
            else []
        ),
        f"  runtime      {size_text(need.runtime_bytes_per_gpu)} per GPU (CUDA context{', NCCL buffers' if setup.gpus > 1 else ''})",
        f"  total        {size_text(need.total_bytes_per_gpu)} per GPU",
        f"  reserve      {size_text(need.reserve_bytes_per_gpu)} per GPU "
        f"(the caching allocator: {need.allocator_reserve:.0%} of what torch allocates)",
        f"  footprint    {size_text(need.footprint_bytes_per_gpu)} per GPU",
        f"Training fit rule: a card holds the run when the footprint fits its memory; comfortable when {result.comfortable_free:.0%} "
        "of the memory stays free, tight otherwise.",
        f"Configurations of {setup.gpus} GPU(s) on offer whose cards hold it, cheapest first:",
    ]
    if result.estimated:
        lines.insert(1, f"  {result.estimated}")
    for fit in result.fits:
        config = fit.configuration
        lines.append(
            f"  {config.count} x {config.gpu.name:<16} {config.price_per_hour:>8.2f} {currency}/h  {size_text(fit.card_bytes)} per card, "
            f"{'tight' if fit.tight else 'comfortable'}"
        )
    if not result.fits:
        lines.append("  none: shard it over more GPUs (--zero 3 --gpus N), or lower --micro-batch or --seq")
    return "\n".join(lines)
