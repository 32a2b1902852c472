"""Fine-tuning figures for the pages: each model page's "Fine-tune it" table and the guide "The best
GPU to fine-tune" a model, at the setting rules.yaml states (training.pages, training.run).

Pure: the training engine (engines/training.py) gives the memory per GPU, the snapshot's configurations
(engines/sizing.py) the prices; no files, no formatting. `gpumem estimate --mode` uses `holding` too, so a
page and the command agree on which configurations hold a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpumem.engines import training as engine
from gpumem.engines.sizing import Configuration
from gpumem.records.catalog import Catalog, Model
from gpumem.records.engines import TrainingPages, TrainingRules


def holding(footprint_bytes_per_gpu: float, configurations: Iterable[Configuration]) -> list[Configuration]:
    """The configurations whose every card holds the run, cheapest first.

    The training fit rule (rules.yaml training_fit): a card holds a run when its footprint (the peak
    plus the caching allocator's reserve, Training.footprint_bytes_per_gpu) fits the memory the
    runtime sees (Gpu.runtime_bytes); training has no vLLM utilisation cap.
    """
    fits = [c for c in configurations if footprint_bytes_per_gpu <= c.gpu.runtime_bytes]
    return sorted(fits, key=lambda c: (c.price_per_hour, c.gpu.id))


def is_tight(need: engine.Training, configuration: Configuration, rules: TrainingRules) -> bool:
    """A held run is tight when it leaves less than training_fit.comfortable_free of the card's memory free."""
    memory = configuration.gpu.runtime_bytes
    free = rules.fit.comfortable_free if rules.fit else 0.0
    return memory - need.footprint_bytes_per_gpu < free * memory


def page_setup(model: Model, method: str, micro_batch: int, gpus: int, rules: TrainingRules) -> engine.TrainingSetup:
    """The pages' setting for one method and micro-batch on `gpus` GPUs: ZeRO-3 (FSDP's full shard) past one GPU."""
    pages, defaults = rules.pages, rules.defaults
    assert pages is not None and defaults is not None  # tuning_rules() checked them
    lora = method != "full"
    return engine.TrainingSetup(
        method=method,
        seq=pages.seq,
        micro_batch=micro_batch,
        checkpointing=pages.checkpointing,
        flash_attention=pages.flash_attention,
        optimizer=pages.optimizer,
        precision=defaults.precision[method],
        lora_rank=pages.lora_rank if lora else 0,
        lora_targets=engine.targets_of(pages.lora_targets, model.arch) if lora else (),
        zero=3 if gpus > 1 else 0,
        gpus=gpus,
    )


@dataclass(frozen=True)
class Held:
    """A configuration on offer that holds a run, and the run's memory on each of its GPUs."""

    configuration: Configuration
    need: engine.Training
    tight: bool = False  # within training_fit.comfortable_free of the card's memory


def held_run(configuration: Configuration, need: engine.Training, rules: TrainingRules) -> Held:
    """A configuration that holds the run, with the fit rule's verdict."""
    return Held(configuration, need, is_tight(need, configuration, rules))


@dataclass(frozen=True)
class TuningRow:
    """One method at one micro-batch: every configuration on offer that holds it, cheapest first.

    `shown` is the run on the smallest configuration that holds it (fewest GPUs, then the lower
    price), or, when none does, the run sharded over the most GPUs a machine holds.
    """

    method: str
    micro_batch: int
    held: tuple[Held, ...]
    shown: engine.Training

    @property
    def smallest(self) -> Held | None:
        return fewest_gpus(self.held)

    @property
    def cheapest(self) -> Held | None:
        return self.held[0] if self.held else None


def fewest_gpus(held: Iterable[Held]) -> Held | None:
    """The configuration with the fewest GPUs; among those, the cheapest."""
    return min(held, key=lambda h: (h.configuration.count, h.configuration.price_per_hour, h.configuration.gpu.id), default=None)


def tuning_row(model: Model, method: str, micro_batch: int, catalog: Catalog, configurations: Iterable[Configuration]) -> TuningRow:
    """Every GPU count of a machine (rules.yaml gpu_counts), the run's peak on it, and the configurations that hold it."""
    rules, deployment = catalog.rules.training, catalog.rules.deployment
    assert rules is not None and deployment is not None
    offered = tuple(configurations)
    held: list[Held] = []
    need = None
    for gpus in sorted(catalog.rules.gpu_counts):
        need = engine.training(model, page_setup(model, method, micro_batch, gpus, rules), rules, deployment)
        at_count = [c for c in offered if c.count == gpus]
        held += [held_run(c, need, rules) for c in holding(need.footprint_bytes_per_gpu, at_count)]
    held.sort(key=lambda h: (h.configuration.price_per_hour, h.configuration.count, h.configuration.gpu.id))
    assert need is not None  # gpu_counts is never empty (catalog/rules.py)
    smallest = fewest_gpus(held)
    return TuningRow(method, micro_batch, tuple(held), smallest.need if smallest else need)


def tuning_rules(catalog: Catalog) -> TrainingPages | None:
    """The pages' setting, or None when rules.yaml lacks what the fine-tuning figures need."""
    rules = catalog.rules.training
    if rules is None or rules.pages is None or rules.defaults is None or catalog.rules.deployment is None:
        return None
    return rules.pages


@dataclass(frozen=True)
class ModelTuning:
    """A model page's "Fine-tune it" table: a row per method and micro-batch."""

    model: Model
    setting: TrainingPages
    lora_targets: tuple[str, ...]
    rows: tuple[TuningRow, ...]


def model_tuning(catalog: Catalog, model: Model, configurations: Iterable[Configuration]) -> ModelTuning | None:
    """Full fine-tuning, LoRA and QLoRA at each of the pages' micro-batches."""
    setting = tuning_rules(catalog)
    if setting is None:
        return None
    offered = tuple(configurations)
    rows = tuple(
        tuning_row(model, method, micro_batch, catalog, offered) for method in engine.METHODS for micro_batch in setting.micro_batches
    )
    return ModelTuning(model, setting, engine.targets_of(setting.lora_targets, model.arch), rows)


def run_hours(tokens: float, params: float, flops_per_token_per_param: float, gpus: int, tflops: float, mfu: float) -> float:
    """Hours a run of `tokens` takes on `gpus` GPUs of `tflops` dense BF16 throughput at utilisation `mfu`."""
    flops = tokens * flops_per_token_per_param * params
    return flops / (gpus * tflops * 1e12 * mfu) / 3600


@dataclass(frozen=True)
class GuideOption:
    """A configuration that holds the guide's run, with its time and cost when the GPU's throughput is known."""

    held: Held
    bigger_batch: engine.Training | None  # the run at the larger micro-batch on this configuration, if it fits
    hours: float | None
    cost: float | None


@dataclass(frozen=True)
class GuideMethod:
    method: str
    options: tuple[GuideOption, ...]
    shown: engine.Training  # the run on the smallest configuration, or sharded over the most GPUs


@dataclass(frozen=True)
class FinetuneGuide:
    """The guide "The best GPU to fine-tune" a model: per method, every configuration that holds it."""

    model: Model
    setting: TrainingPages
    lora_targets: tuple[str, ...]
    micro_batch: int
    bigger_batch: int | None
    tokens: float
    flops_per_token_per_param: float
    mfu: float
    methods: tuple[GuideMethod, ...]

    @property
    def million_tokens(self) -> float:
        """The run's size as the guide writes it: millions of tokens."""
        return self.tokens / 1e6

    @property
    def timed(self) -> bool:
        """Whether any configuration has a time and cost (its GPU's throughput is known)."""
        return any(option.hours is not None for m in self.methods for option in m.options)

    def method(self, name: str) -> GuideMethod:
        return next(m for m in self.methods if m.method == name)


def _at_batch(model: Model, method: str, micro_batch: int, config: Configuration, catalog: Catalog) -> engine.Training | None:
    """The run at another micro-batch on the same configuration, when its cards still hold it."""
    rules, deployment = catalog.rules.training, catalog.rules.deployment
    assert rules is not None and deployment is not None
    need = engine.training(model, page_setup(model, method, micro_batch, config.count, rules), rules, deployment)
    return need if holding(need.footprint_bytes_per_gpu, (config,)) else None


def finetune_guide(
    catalog: Catalog, configurations: Iterable[Configuration], dense_bf16_tflops: Mapping[str, float]
) -> FinetuneGuide | None:
    """Per method, the configurations that hold the guide's model at the smallest micro-batch, cheapest
    first, whether the largest micro-batch fits them too, and the run's time and cost where the
    GPU's dense BF16 throughput (TFLOPS, by GPU id) is known."""
    setting, rules = tuning_rules(catalog), catalog.rules.training
    if setting is None or rules is None or rules.run is None:
        return None
    run, model = rules.run, catalog.model(rules.run.model)
    offered = tuple(configurations)
    small, big = min(setting.micro_batches), max(setting.micro_batches)
    methods = []
    for method in engine.METHODS:
        row = tuning_row(model, method, small, catalog, offered)
        options = []
        for held in row.held:
            config = held.configuration
            tflops = dense_bf16_tflops.get(config.gpu.id)
            hours = (
                None
                if tflops is None
                else run_hours(run.tokens, model.params_b * 1e9, run.flops_per_token_per_param, config.count, tflops, run.mfu)
            )
            bigger = _at_batch(model, method, big, config, catalog) if big != small else None
            options.append(GuideOption(held, bigger, hours, None if hours is None else hours * config.price_per_hour))
        methods.append(GuideMethod(method, tuple(options), row.shown))
    return FinetuneGuide(
        model=model,
        setting=setting,
        lora_targets=engine.targets_of(setting.lora_targets, model.arch),
        micro_batch=small,
        bigger_batch=big if big != small else None,
        tokens=run.tokens,
        flops_per_token_per_param=run.flops_per_token_per_param,
        mfu=run.mfu,
        methods=tuple(methods),
    )
