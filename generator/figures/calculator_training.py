"""The calculator's fine-tuning modes: their fields and defaults, the run the page precomputes, and the training
engine's constants for the script (templates/static/training.js), as gpumem estimate --mode takes and lists them."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem.engines import sizing
from gpumem.engines import training as engine
from gpumem.figures import training as compute_training
from gpumem.records.catalog import Catalog, Model

# The fine-tuning modes' fields (after the serving ones in the script's FIELDS), LoRA's among them, and the
# parts of a run the page lists, with the data-result each is written to.
TRAINING_FIELDS = (
    "seq",
    "micro_batch",
    "checkpointing",
    "flash_attention",
    "optimizer",
    "precision",
    "lora_rank",
    "lora_targets",
    "zero",
    "offload",
    "fp32_unquantized",
)
LORA_FIELDS = ("lora_rank", "lora_targets")
QLORA_FIELDS = ("fp32_unquantized",)
TRAINING_PARTS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer",
    "activations": "activations",
    "dequantized": "dequantized",  # listed only when there are some (QLoRA)
    "overhead": "runtime",
}
TRAINING_RESULTS = {
    "weights": "weights-per-gpu-gb",
    "gradients": "gradients-gb",
    "optimizer": "optimizer-gb",
    "activations": "activations-gb",
    "dequantized": "dequantized-gb",
    "overhead": "runtime-gb",
}


@dataclass(frozen=True)
class Tuning:
    """A fine-tuning mode: the run's memory per GPU, and the configurations of that many GPUs on offer whose
    cards hold it, cheapest first (as gpumem estimate --mode lists them)."""

    setup: engine.TrainingSetup
    need: engine.Training
    fits: tuple[compute_training.Held, ...]  # each with the training fit rule's verdict

    @property
    def total_bytes(self) -> float:
        return self.need.total_bytes_per_gpu * self.need.gpus


def tuning(catalog: Catalog, model: Model, fields: dict[str, str]) -> Tuning:
    """What the calculator shows in a fine-tuning mode for the form's fields."""
    rules, dep = catalog.rules.training, catalog.rules.deployment
    assert rules is not None and dep is not None  # a calculator is built only with a training block
    mode, lora = fields["mode"], fields["mode"] != "full"
    setup = engine.TrainingSetup(
        method=mode,
        seq=int(fields["seq"]),
        micro_batch=int(fields["micro_batch"]),
        checkpointing=fields["checkpointing"],
        flash_attention=fields["flash_attention"] == "on",
        optimizer=fields["optimizer"],
        precision=fields["precision"],
        lora_rank=int(fields["lora_rank"]) if lora else 0,
        lora_targets=engine.targets_of(fields["lora_targets"], model.arch) if lora else (),
        zero=int(fields["zero"]),
        gpus=int(fields["gpus"]),
        offload_optimizer=fields["offload"] == "on",
        fp32_unquantized=mode == "qlora" and fields["fp32_unquantized"] == "on",
    )
    need = engine.training(model, setup, rules, dep)
    offered = sizing.offered_configurations(catalog.gpus, catalog.snapshot.offers, (setup.gpus,))
    held = compute_training.holding(need.footprint_bytes_per_gpu, offered)
    return Tuning(setup, need, tuple(compute_training.held_run(c, need, rules) for c in held))


def training_fields(catalog: Catalog, mode: str) -> dict[str, str]:
    """The fine-tuning fields at gpumem estimate's defaults (rules.yaml's training.defaults and the flags' own),
    the precision the mode's (the first method's while serving)."""
    rules = catalog.rules.training
    assert rules is not None and rules.defaults is not None
    d, flags = rules.defaults, engine.FLAG_DEFAULTS
    precision = d.precision.get(mode, d.precision[engine.METHODS[0]])
    return {
        "seq": str(d.seq),
        "micro_batch": str(d.micro_batch),
        "checkpointing": flags["checkpointing"],
        "flash_attention": flags["flash_attention"],
        "optimizer": flags["optimizer"],
        "precision": precision,
        "lora_rank": str(d.lora_rank),
        "lora_targets": d.lora_targets,
        "zero": str(flags["zero"]),
        "offload": "on" if flags["offload_optimizer"] else "off",
        "fp32_unquantized": "off",  # gpumem estimate keeps them as the 4-bit format does unless --fp32-unquantized
    }


def training_data(catalog: Catalog) -> dict:
    """The training engine's constants for the script (training.js), and the fields' defaults and choices."""
    rules = catalog.rules.training
    assert rules is not None and rules.defaults is not None
    return {
        "precisions": {p.name: [p.weights, p.gradients, p.master, p.states] for p in rules.precisions.values()},
        "optimizers": {o.name: [o.states, o.state_bytes, int(o.paged), int(o.factored)] for o in rules.optimizers.values()},
        "base": rules.base_formats,
        "layerBytes": rules.layer_bytes,
        "scoreBytes": rules.score_bytes,
        "checkpointBytes": rules.checkpoint_bytes,
        "normBytes": rules.norm_bytes,
        "logitBytes": rules.logit_bytes,
        "gatheredLayers": rules.gathered_layers,
        "dequantizedLayers": rules.dequantized_layers,
        "allocatorReserve": rules.fit.allocator_reserve if rules.fit else 0.0,
        "comfortableFree": rules.fit.comfortable_free if rules.fit else 0.0,
        "targets": engine.TARGETS,
        "checkpointing": engine.CHECKPOINTING,
        "zero": engine.ZERO_STAGES,
        "defaults": {**training_fields(catalog, engine.METHODS[0]), "precision": rules.defaults.precision},
    }


def machines(catalog: Catalog) -> dict[str, list[list[float]]]:
    """Per GPU, each machine size on offer with its lowest price per GPU-hour: what sizing.offered_configurations
    prices n GPUs from (n x the lowest price of a machine holding at least n), for any n the script is given."""
    found: dict[str, dict[int, float]] = {}
    for offer in catalog.snapshot.offers:
        sizes = found.setdefault(offer.gpu, {})
        sizes[offer.gpus] = min(sizes.get(offer.gpus, offer.price_per_gpu_hour), offer.price_per_gpu_hour)
    known = {gpu.id for gpu in catalog.gpus}
    return {gpu: [[size, price] for size, price in sorted(sizes.items())] for gpu, sizes in sorted(found.items()) if gpu in known}
