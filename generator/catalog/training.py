"""rules.yaml's training block: precisions, optimizers, the base each method trains over, and the
activation, logit and sharding constants of the training engine, each with its source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpumem.catalog.deployment import named_table
from gpumem.catalog.validate import (
    Entry,
    Invalid,
    at_most,
    boolean,
    citation,
    describe,
    fraction,
    known_id,
    number_list,
    one_of,
    positive_int,
    positive_number,
    slug,
)
from gpumem.engines.training import CHECKPOINTING, METHODS, TARGETS
from gpumem.records.engines import (
    TrainingDefaults,
    TrainingFit,
    TrainingOptimizer,
    TrainingPages,
    TrainingPrecision,
    TrainingRules,
    TrainingRun,
)

SECTIONS = ("precisions", "optimizers", "base", "activations", "logits", "sharding", "quantized", "defaults", "pages", "run")
PRECISION_FIELDS = ("weights", "gradients", "master", "states", "source")
OPTIMIZER_FIELDS = ("states", "state_bytes", "paged", "factored", "source")


def bytes_or_zero(value: Any) -> float:
    """A byte count per element from 0 (none, or 'the precision's') to 16."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 16:
        raise Invalid(f"expected a number of bytes from 0 to 16, got {describe(value)}")
    return float(value)


bytes_or_zero.expectation = " (expected a number of bytes from 0 to 16)"  # type: ignore[attr-defined]
small = at_most(positive_number, 1_000)


def read_training(
    top: Entry, sources: dict[str, str], weight_formats: dict[str, Any] | None, model_ids: set[str] | None = None
) -> TrainingRules | None:
    """The training block, or None (with every problem reported) when it is missing or wrong."""
    if "training" not in top.data:
        return None  # a catalog without training figures: `gpumem estimate --mode` says so
    section = top.section("training")
    if section is None:
        return None
    section.check_keys(SECTIONS)
    precisions = named_table(section, "precisions", _precision, sources, "training")
    optimizers = named_table(section, "optimizers", _optimizer, sources, "training")
    values: dict[str, Any] = {}
    base = _block(section, "base", (*METHODS, "source"), sources)
    if base is not None:
        known = tuple(weight_formats or ())
        kind = slug if weight_formats is None else _format(known)
        values["base_formats"] = {method: base.get(method, kind) for method in METHODS}
    activations = _block(section, "activations", ("layer_bytes", "score_bytes", "checkpoint_bytes", "norm_bytes", "source"), sources)
    if activations is not None:
        for name in ("layer_bytes", "score_bytes", "checkpoint_bytes", "norm_bytes"):
            values[name] = activations.get(name, small)
    logits = _block(section, "logits", ("bytes", "source"), sources)
    if logits is not None:
        values["logit_bytes"] = logits.get("bytes", small)
    sharding = _block(section, "sharding", ("gathered_layers", "source"), sources)
    if sharding is not None:
        values["gathered_layers"] = sharding.get("gathered_layers", at_most(positive_int, 1_000))
    quantized = _block(section, "quantized", ("dequantized_layers", "source"), sources)
    if quantized is not None:
        values["dequantized_layers"] = quantized.get("dequantized_layers", small)
    fit = _fit(top, sources)
    if fit is not None:
        values["fit"] = fit
    defaults = _block(section, "defaults", ("seq", "micro_batch", "lora_rank", "lora_targets", "precision", "source"), sources)
    if defaults is not None:
        values["defaults"] = _defaults(defaults, tuple(precisions or ()))
    pages = _block(section, "pages", (*PAGES_FIELDS, "source"), sources)
    if pages is not None:
        values["pages"] = _pages(pages, tuple(optimizers or ()))
    run = _block(section, "run", ("model", "tokens", "flops_per_token_per_param", "mfu", "source"), sources)
    if run is not None:
        values["run"] = _run(run, model_ids)
    parts = [part for part in (base, activations, logits, sharding, quantized, defaults, pages, run) if part is not None]
    section.failed = section.failed or any(part.failed for part in parts)
    top.failed = top.failed or section.failed
    base_formats = values.get("base_formats") or {}
    if section.failed or precisions is None or optimizers is None or any(v is None for v in (*values.values(), *base_formats.values())):
        return None
    return TrainingRules(precisions=precisions, optimizers=optimizers, **values)


def _fit(top: Entry, sources: dict[str, str]) -> TrainingFit | None:
    """rules.yaml's training_fit, beside the serving rule `fit`: the allocator's reserve and a comfortable fit's free share."""
    entry = top.section("training_fit")
    if entry is None:
        return None
    entry.check_keys(("allocator_reserve", "comfortable_free", "source"))
    sources["training_fit"] = entry.get("source", citation) or ""
    values = dict(allocator_reserve=entry.get("allocator_reserve", fraction), comfortable_free=entry.get("comfortable_free", fraction))
    top.failed = top.failed or entry.failed
    return None if entry.failed else TrainingFit(**values)


def _defaults(entry: Entry, precisions: tuple[str, ...]) -> TrainingDefaults | None:
    values = dict(
        seq=entry.get("seq", at_most(positive_int, 10_000_000)),
        micro_batch=entry.get("micro_batch", at_most(positive_int, 100_000)),
        lora_rank=entry.get("lora_rank", at_most(positive_int, 100_000)),
        lora_targets=entry.get("lora_targets", one_of(TARGETS, "LoRA targets")),
    )
    by_method = entry.section("precision")
    if by_method is not None:
        by_method.check_keys(METHODS)
        values["precision"] = {method: by_method.get(method, one_of(precisions, "precision")) for method in METHODS}
        entry.failed = entry.failed or by_method.failed
    return None if entry.failed else TrainingDefaults(**values)


PAGES_FIELDS = ("seq", "micro_batches", "checkpointing", "flash_attention", "optimizer", "lora_rank", "lora_targets")


def _pages(entry: Entry, optimizers: tuple[str, ...]) -> TrainingPages | None:
    """The setting the pages state: each field as `gpumem estimate` would take it."""
    values = dict(
        seq=entry.get("seq", at_most(positive_int, 10_000_000)),
        micro_batches=entry.get("micro_batches", number_list(at_most(positive_int, 100_000))),
        checkpointing=entry.get("checkpointing", one_of(CHECKPOINTING, "checkpointing")),
        flash_attention=entry.get("flash_attention", boolean),
        optimizer=entry.get("optimizer", one_of(optimizers, "optimizer") if optimizers else slug),
        lora_rank=entry.get("lora_rank", at_most(positive_int, 100_000)),
        lora_targets=entry.get("lora_targets", one_of(TARGETS, "LoRA targets")),
    )
    return None if entry.failed else TrainingPages(**values)


def _run(entry: Entry, model_ids: set[str] | None) -> TrainingRun | None:
    """The guide's run: its model, its size in tokens, the FLOPs per token and parameter, the utilisation."""
    values = dict(
        model=entry.get("model", known_id(model_ids, "model", "models.yaml")),
        tokens=entry.get("tokens", at_most(positive_number, 1e15)),
        flops_per_token_per_param=entry.get("flops_per_token_per_param", small),
        mfu=entry.get("mfu", fraction),
    )
    return None if entry.failed else TrainingRun(**values)


def _format(known: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        name = slug(value)
        if name not in known:
            raise Invalid(f"expected a weight format of deployment.weight_formats ({', '.join(known)}), got {describe(value)}")
        return name

    return check


def _block(section: Entry, name: str, keys: tuple[str, ...], sources: dict[str, str]) -> Entry | None:
    block = section.section(name)
    if block is not None:
        block.check_keys(keys)
        sources[f"training.{name}"] = block.get("source", citation) or ""
    return block


def _precision(entry: Entry, name: str) -> TrainingPrecision | None:
    entry.check_keys(PRECISION_FIELDS)
    values = {field: entry.get(field, bytes_or_zero) for field in PRECISION_FIELDS[:-1]}
    return None if entry.failed else TrainingPrecision(name=name, **values)


def _optimizer(entry: Entry, name: str) -> TrainingOptimizer | None:
    entry.check_keys(OPTIMIZER_FIELDS)
    values = dict(
        states=entry.get("states", at_most(positive_int, 8)),
        state_bytes=entry.get("state_bytes", bytes_or_zero),
        paged=entry.get("paged", boolean, required=False, default=False),
        factored=entry.get("factored", boolean, required=False, default=False),
    )
    return None if entry.failed else TrainingOptimizer(name=name, **values)
