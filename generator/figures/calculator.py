"""The calculator page without its scripts: the opening state worked out at build time, the URL query of a state,
every preset's table and the FAQ's figures (the JSON the scripts read is figures/calculator_data.py's)."""

from __future__ import annotations

import functools
import urllib.parse
from dataclasses import dataclass
from decimal import Decimal

from gpumem.engines import deployment, launch, memory, sizing, support
from gpumem.engines.sizing import Choice, Fit
from gpumem.engines.speed import DEFAULT_OUTPUT, DEFAULT_PROMPT, Load, Speed, served
from gpumem.engines.support import Refusal
from gpumem.figures.calculator_training import LORA_FIELDS, QLORA_FIELDS, TRAINING_FIELDS, TRAINING_PARTS, TRAINING_RESULTS, Tuning
from gpumem.figures.calculator_training import training_fields as training_fields
from gpumem.figures.calculator_training import tuning as tuning
from gpumem.figures.shared import Shop
from gpumem.figures.subjects import FormatFit, format_fit
from gpumem.figures.verdicts import serving_claim
from gpumem.records.catalog import Architecture, Catalog, Gpu, Model
from gpumem.records.engines import WeightFormat

# The model fields of the form, in the order of the script's ARCH.
ARCH_FIELDS = (
    "params",
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "hidden",
    "vocab",
    "tied",
    "intermediate",
    "experts",
    "experts_active",
    "expert_width",
)
# The orders serving mode lists its configurations in (sort=): price per hour, output tokens per second, US$ per million tokens.
SORTS = ("price", "speed", "cost")
# The table of presets lists this many catalog models at most (the first): the page keeps its weight at any catalog
# size (each row weighs some 300 bytes), and each model's own page and the model index hold the rest.
# With 20 rows, the link notices, the estimate rule and the training fit rule, the French page came to 100.5 KB of its 100.
TABLE_MODELS = 16
# Decimals of the speed figures: seconds to the first token, and prices per million tokens (often under a cent).
SPEED_DIGITS = {"seconds": 2, "perMillion": 3}


@dataclass(frozen=True)
class CalculatorPage:
    """The calculator page's precomputed tables and FAQ figures (the page works without JavaScript)."""

    rows: tuple[tuple[Model, tuple[FormatFit, ...]], ...]
    seventy_bf16_weights_gb: float
    seventy_int4_weights_gb: float
    largest_consumer: Gpu
    seventy_int4_choice: Choice
    small: Model
    small_weights: tuple[tuple[str, float], ...]
    small_kv_gb: float
    small_total_gb: float
    small_cards: tuple[Gpu, ...]
    default: CalculatorState
    small_card_gb: float = 0.0
    formats: tuple[WeightFormat, ...] = ()
    tuning_model: Model | None = None  # LoRA at the fine-tuning fields' defaults on the opening model: the page's example
    tuning_example: Tuning | None = None
    catalog_models: int = 0  # how many models the catalog holds, the table's rows the first TABLE_MODELS of them

    @property
    def more_models(self) -> int:
        """How many catalog models the table leaves out."""
        return max(0, self.catalog_models - len(self.rows))

    @property
    def tuning_gb(self) -> float:
        return self.tuning_example.need.total_bytes_per_gpu / 1e9 if self.tuning_example else 0.0

    @property
    def tuning_activations_gb(self) -> float:
        return self.tuning_example.need.activations_bytes_per_gpu / 1e9 if self.tuning_example else 0.0

    @property
    def speed_digits(self) -> dict[str, int]:
        return SPEED_DIGITS


def js_number(value: float) -> str:
    """A number as JavaScript's String() writes it (data-value attributes the script rewrites)."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if -7 < power < 21:
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def custom_model(params_b: float, arch: Architecture, vision_params_b: float = 0.0) -> Model:
    """A model typed into the calculator (or pasted as a config.json): only its numbers count."""
    return Model("custom", "custom", "custom", "", params_b, None, 0, arch, None, "", vision_params_b=vision_params_b)


@dataclass(frozen=True)
class Serving:
    """Serving mode: the per-GPU need on the chosen GPU count, and every configuration on offer that holds it."""

    need: deployment.Deployment
    fits: tuple[Fit, ...]
    runtime: str  # vllm | llama.cpp, the weight format's
    valid_counts: tuple[int, ...]
    speeds: tuple[Speed, ...] = ()  # each fit's speed under the load, in the order of fits (none without a speed block)
    sort: str = "price"
    command: launch.Launch | None = None  # what starts it on the GPUs chosen, on the pinned engine version
    refused: tuple[Refusal, ...] = ()  # the GPUs on offer whose engine cannot run these formats (engines/support.py)
    claim: str = ""  # what each configuration's rent link claims it holds (a catalog model's; verdicts.serving_claim)
    unmeasured: frozenset[str] = frozenset()  # GPUs whose speed rests on the fit alone: no measured run of the engine there

    @property
    def total_bytes(self) -> float:
        return self.need.total_bytes_per_gpu * self.need.gpus

    @property
    def rows(self) -> tuple[tuple[Fit, Speed | None], ...]:
        """The fits in the chosen order: cheapest per hour first (sizing.deployment_fits), most output tokens
        per second first, or cheapest per million output tokens first; ties keep the price order."""
        if not self.speeds:
            return tuple((fit, None) for fit in self.fits)
        rows = tuple(zip(self.fits, self.speeds, strict=True))
        if self.sort == "speed":
            return tuple(sorted(rows, key=lambda row: -row[1].aggregate_tokens_per_s))
        if self.sort == "cost":
            return tuple(sorted(rows, key=lambda row: row[1].usd_per_million_output_tokens or 0.0))
        return rows


def serving(
    catalog: Catalog,
    shop: Shop,
    model: Model,
    weights: str,
    kv: str,
    gpus: int,
    context: int,
    requests: int,
    lengths: tuple[int, int] = (DEFAULT_PROMPT, DEFAULT_OUTPUT),
    sort: str = "price",
) -> Serving:
    """What the calculator shows in serving mode, as gpumem estimate computes it (vLLM's large-card batch),
    with each configuration's speed at `requests` requests of `lengths` (prompt, output) tokens."""
    rules = catalog.rules.deployment
    assert rules is not None  # validated with the catalogs
    fmt, cache = rules.weight_formats[weights], rules.kv_formats[kv]
    large = deployment.Batch(rules.large_batch_tokens, rules.large_batch_sequences)
    need = deployment.deployment(rules, model, fmt, cache, gpus, context, requests, large)
    more, table = catalog.rules.comfortable_requests, catalog.rules.support
    fits = sizing.deployment_fits(rules, model, fmt, cache, context, requests, shop.configurations, more, table)
    counts = catalog.rules.gpu_counts
    valid = deployment.valid_gpu_counts(model.arch, counts) if fmt.runtime == "vllm" else counts
    speeds: tuple[Speed, ...] = ()
    if catalog.rules.speed is not None:
        load = Load(requests, *lengths)
        speeds = tuple(
            served(
                catalog.rules.speed,
                rules,
                model,
                f.stand_in or fmt,
                cache,
                f.configuration.gpu,
                f.configuration.count,
                load,
                f.configuration.price_per_hour,
            )
            for f in fits
        )
    pin = catalog.rules.engines.get(fmt.runtime)
    work, settings = launch.Workload(gpus, context, requests), launch.Settings(rules.utilization)
    command = launch.launch(model, fmt, cache, work, settings, pin.version if pin else "")
    refused = support.left_out(table, rules.weight_formats, fmt, cache, (c.gpu for c in shop.configurations))
    claim = serving_claim(model, fmt, kv, context, requests) if model in catalog.models else ""
    rules_speed = catalog.rules.speed
    unmeasured = frozenset(
        f.configuration.gpu.id
        for f in fits
        if speeds and rules_speed is not None and rules_speed.unmeasured((f.stand_in or fmt).runtime, f.configuration.gpu.id)
    )
    return Serving(need, fits, fmt.runtime, valid, speeds, sort, command, refused, claim, unmeasured)


@dataclass(frozen=True)
class CalculatorState:
    """The calculator's opening state, worked out at build time so the page shows it before any script runs."""

    fields: dict[str, str]
    serving: Serving | None = None
    tuning: Tuning | None = None

    @property
    def query(self) -> str:
        return calculator_query(self.fields)

    @property
    def total(self) -> float:
        return (self.serving.total_bytes if self.serving else self.tuning.total_bytes) / 1e9  # type: ignore[union-attr]

    @property
    def parts(self) -> tuple[tuple[str, float], ...]:
        """The parts of the mode per GPU, in the order the page lists them."""
        if self.serving:
            need = self.serving.need
            return (
                ("weights", need.weights_bytes_per_gpu / 1e9),
                ("kv_cache", need.kv_cache_bytes_per_gpu / 1e9),
                ("overhead", (need.runtime_bytes_per_gpu + need.graph_bytes_per_gpu) / 1e9),
            )
        run = self.tuning.need  # type: ignore[union-attr]
        parts = ((name, getattr(run, f"{part}_bytes_per_gpu") / 1e9) for name, part in TRAINING_PARTS.items())
        return tuple((name, value) for name, value in parts if value or name != "dequantized")

    @property
    def per_gpu(self) -> float:
        need = self.serving.need if self.serving else self.tuning.need  # type: ignore[union-attr]
        return need.total_bytes_per_gpu / 1e9

    @property
    def values(self) -> dict[str, str]:
        """data-value of each result, as the script writes it (GB, decimal)."""
        found = {"total-gb": js_number(self.total), "per-gpu-gb": js_number(self.per_gpu)}
        if self.serving:
            need = self.serving.need
            found.update(
                {
                    "weights-gb": js_number(need.weights_bytes / 1e9),
                    "weights-per-gpu-gb": js_number(need.weights_bytes_per_gpu / 1e9),
                    "kv-gb": js_number(need.kv_cache_bytes_per_gpu / 1e9),
                    "runtime-gb": js_number((need.runtime_bytes_per_gpu + need.graph_bytes_per_gpu) / 1e9),
                }
            )
        else:
            found.update({TRAINING_RESULTS[name]: js_number(value) for name, value in self.parts})
        return found


def model_fields(model: Model) -> dict[str, str]:
    """A preset's numbers as the form holds them."""
    arch = model.arch
    experts = arch.experts
    return {
        "params": repr(model.params_b),
        "layers": str(arch.layers),
        "heads": str(arch.heads),
        "kv_heads": str(arch.kv_heads),
        "head_dim": str(arch.head_dim),
        "hidden": str(arch.hidden),
        "vocab": str(arch.vocab),
        "tied": "1" if arch.tied_embeddings else "0",
        "intermediate": str(arch.intermediate),
        "experts": str(experts.count if experts else 0),
        "experts_active": str(experts.active if experts else 0),
        "expert_width": str(experts.intermediate if experts else 0),
    }


def applies(name: str, mode: str) -> bool:
    """Whether a field counts in a mode (the others are hidden and left out of links), as the script's `applies`."""
    if mode == "serve":
        return name not in TRAINING_FIELDS
    if name in LORA_FIELDS:
        return mode != "full"
    if name in QLORA_FIELDS:
        return mode == "qlora"
    return name in ("model", *ARCH_FIELDS, "mode", "gpus", *TRAINING_FIELDS)


def calculator_query(fields: dict[str, str]) -> str:
    """The URL query of a calculator state, as its script's fromQuery reads it (and toQuery writes it)."""
    return urllib.parse.urlencode({name: value for name, value in fields.items() if applies(name, fields["mode"])})


def state_fields(
    model: Model, mode: str, weights: str, kv: str, gpus: int, batch: int, context: int, training: dict[str, str] | None = None
) -> dict[str, str]:
    """Every field of the calculator's form for a preset, in the order of its script's FIELDS."""
    fields = {"model": model.id, **model_fields(model), "mode": mode, "weights": weights, "kv": kv}
    fields.update({"gpus": str(gpus), "batch": str(batch), "context": str(context)})
    return {**fields, **(training or {})}


def speed_fields() -> dict[str, str]:
    """The serving load and order the calculator opens with (its script's defaults when a link has none)."""
    return {"prompt": str(DEFAULT_PROMPT), "output": str(DEFAULT_OUTPUT), "sort": SORTS[0]}


def model_query(catalog: Catalog, model: Model, context: int, gpus: int) -> str:
    """The calculator opened on a model page's workload: serving its release format, one request of
    `context` tokens on `gpus` GPUs (the cheapest configuration the page names)."""
    return _serving_query(model, catalog.rules.calculator_defaults["kv"], context, gpus)


@functools.lru_cache(maxsize=4096)
def _serving_query(model: Model, kv: str, context: int, gpus: int) -> str:
    """Remembered: every language's page of a model links the same query, and encoding its forty
    fields costs a tenth of the page's rendering (a model record is a value: the same answer for ever)."""
    return calculator_query(state_fields(model, "serve", model.release, kv, gpus, 1, context))


def calculator_default(catalog: Catalog, shop: Shop) -> CalculatorState:
    """The opening state of rules.yaml, computed the way the calculator's script computes it."""
    d = catalog.rules.calculator_defaults
    model = catalog.model(d["model"])
    gpus = default_gpus(catalog)
    fields = state_fields(model, d["mode"], d["weights"], d["kv"], gpus, d["batch"], d["context"], training_fields(catalog, d["mode"]))
    fields.update(speed_fields())
    if d["mode"] == "serve":
        return CalculatorState(fields, serving=serving(catalog, shop, model, d["weights"], d["kv"], gpus, d["context"], d["batch"]))
    return CalculatorState(fields, tuning=tuning(catalog, model, fields))


def default_gpus(catalog: Catalog) -> int:
    """The GPU count the calculator opens with: the smallest machine size."""
    return min(catalog.rules.gpu_counts)


def calculator_page(catalog: Catalog, shop: Shop) -> CalculatorPage:
    """The calculator page without its script: the first TABLE_MODELS presets precomputed, the FAQ figures, the opening state."""
    rules = catalog.rules
    assert rules.deployment is not None
    formats = tuple(rules.deployment.weight_formats[name] for name in rules.model_formats)
    rows = tuple((model, tuple(format_fit(catalog, shop, model, fmt) for fmt in formats)) for model in catalog.models[:TABLE_MODELS])
    size = rules.example_size_b
    int4 = memory.weights_gb(size, rules.precisions["int4"])
    small = catalog.model(rules.small_model)
    small_kv = memory.kv_cache_gb(small.arch, rules.kv_precisions["bf16"], rules.small_context)
    small_needs = {g.id: single_card_need(catalog, small, "bf16", rules.small_context, g) for g in catalog.gpus}
    holding = [g for g in catalog.gpus if small_needs[g.id] < deployment.budget_bytes(rules.deployment, g.runtime_bytes)]
    smallest = min((g.memory_gb for g in holding), default=None)
    cards = tuple(sorted((g for g in holding if g.memory_gb == smallest), key=lambda g: g.name))
    example = catalog.model(rules.calculator_defaults["model"])
    return CalculatorPage(
        rows=rows,
        formats=formats,
        seventy_bf16_weights_gb=memory.weights_gb(size, rules.precisions["bf16"]),
        seventy_int4_weights_gb=int4,
        largest_consumer=max((g for g in catalog.gpus if g.segment == "consumer"), key=lambda g: g.memory_gb),
        seventy_int4_choice=shop.choose(int4),
        small=small,
        small_weights=tuple((p, memory.weights_gb(small.params_b, b)) for p, b in rules.precisions.items()),
        small_kv_gb=small_kv,
        small_total_gb=small_needs[cards[0].id] / 1e9 if cards else 0.0,
        small_cards=cards,
        default=calculator_default(catalog, shop),
        small_card_gb=smallest or 0.0,
        tuning_model=example,
        tuning_example=tuning(catalog, example, state_fields(example, "lora", "bf16", "bf16", 1, 1, 1, training_fields(catalog, "lora"))),
        catalog_models=len(catalog.models),
    )


def single_card_need(catalog: Catalog, model: Model, weights: str, tokens: int, gpu: Gpu) -> float:
    """Bytes one request of `tokens` tokens takes on one such card: weights, runtime and KV cache."""
    rules = catalog.rules.deployment
    assert rules is not None
    batch = deployment.batch_defaults(rules, gpu.runtime_bytes, gpu.id)
    need = deployment.deployment(rules, model, rules.weight_formats[weights], rules.kv_formats["bf16"], 1, tokens, 1, batch)
    return need.total_bytes_per_gpu
