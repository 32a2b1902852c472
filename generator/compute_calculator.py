"""The calculator page: its precomputed default result, FAQ figures and the JSON its script reads."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from decimal import Decimal

from . import deployment, hf_config, memory, sizing
from .compute import Shop
from .compute_calculator_training import (
    LORA_FIELDS,
    QLORA_FIELDS,
    TRAINING_FIELDS,
    TRAINING_PARTS,
    TRAINING_RESULTS,
    Tuning,
    machines,
    training_data,
)
from .compute_calculator_training import training_fields as training_fields
from .compute_calculator_training import tuning as tuning
from .compute_pages import FormatFit, format_fit
from .records import Architecture, Catalog, Experts, Gpu, Model, SpeedRules, WeightFormat
from .sizing import Choice, Configuration, Fit
from .speed import DEFAULT_OUTPUT, DEFAULT_PROMPT, MILLION, SECONDS_PER_HOUR, Load, Speed, speed

# Limits of the serving fields rules.yaml's calculator block does not bound yet (plausible input:
# the widest open models have hidden sizes near 16k, vocabularies near 260k, experts near 260).
SERVING_LIMITS = {"max_hidden": 65536, "max_vocab": 1_000_000, "max_intermediate": 1_000_000, "max_experts": 4096}
# The KV formats every runtime takes, whatever the weights (as gpumem estimate checks them).
KV_ANY_RUNTIME = ("bf16", "fp32")
# deployment.layer_slots: vLLM groups sliding and full layers by the larger count under 1.5 x the smaller.
HYBRID_GROUP_RATIO = 1.5
# hf_config.count's constants of the architectures it counts, for the script's config.json reader.
COUNTING = {
    "gatedMatrices": 3,  # gate, up and down projections of a gated MLP or expert
    "fourNorms": 4,  # Gemma's norms per layer (two elsewhere)
    "channels": 3,  # RGB channels of a vision tower's patch embedding
    "attentionMatrices": 4,  # q, k, v and output projections of a vision layer
    "gemma3Pattern": 6,  # Gemma 3's sliding_window_pattern default: one global layer in six
    "defaultContext": 4096,  # max_position_embeddings when a config omits it
    "mixtralActive": 2,  # Mixtral's num_experts_per_tok default
}
RUNTIME_NAMES = {"vllm": "vLLM", "llama.cpp": "llama.cpp"}
# With its script, the calculator lists this many configurations (the cheapest) and a button shows the rest.
SHOWN_CONFIGURATIONS = 5
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
RELEASE_METHODS = {"fp8": "fp8", "mxfp4": "mxfp4", "awq": "awq", "gptq": "gptq", "bitsandbytes": "nf4"}
# The orders serving mode lists its configurations in (sort=): price per hour, output tokens per second, US$ per million tokens.
SORTS = ("price", "speed", "cost")
# A preset's numbers in the calculator's JSON, one row per model in this order (the keys are written once).
MODEL_FIELDS = ("id", "params", "layers", "heads", "kvHeads", "headDim", "hidden", "vocab", "intermediate", "release")
# A GPU on offer in the calculator's JSON, a row in this order (the last left out when unknown).
GPU_FIELDS = ("name", "runtimeBytes", "bandwidth", "memoryType", "tflops", "link", "pcieGen")
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
    fits = sizing.deployment_fits(rules, model, fmt, cache, context, requests, shop.configurations, catalog.rules.comfortable_requests)
    counts = catalog.rules.gpu_counts
    valid = deployment.valid_gpu_counts(model.arch, counts) if fmt.runtime == "vllm" else counts
    speeds: tuple[Speed, ...] = ()
    if catalog.rules.speed is not None:
        load = Load(requests, *lengths)
        speeds = tuple(
            speed(catalog.rules.speed, model, fmt, cache, c.gpu, c.count, load, c.price_per_hour) for c in (f.configuration for f in fits)
        )
    return Serving(need, fits, fmt.runtime, valid, speeds, sort)


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
                ("overhead", need.runtime_bytes_per_gpu / 1e9),
            )
        run = self.tuning.need  # type: ignore[union-attr]
        return tuple((name, getattr(run, f"{part}_bytes_per_gpu") / 1e9) for name, part in TRAINING_PARTS.items())

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
                    "runtime-gb": js_number(need.runtime_bytes_per_gpu / 1e9),
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
    kv = catalog.rules.calculator_defaults["kv"]
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
    """The calculator page without its script: every preset precomputed, the FAQ figures, the opening state."""
    rules = catalog.rules
    assert rules.deployment is not None
    formats = tuple(rules.deployment.weight_formats[name] for name in rules.model_formats)
    rows = tuple((model, tuple(format_fit(catalog, shop, model, fmt) for fmt in formats)) for model in catalog.models)
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
    )


def single_card_need(catalog: Catalog, model: Model, weights: str, tokens: int, gpu: Gpu) -> float:
    """Bytes one request of `tokens` tokens takes on one such card: weights, runtime and KV cache."""
    rules = catalog.rules.deployment
    assert rules is not None
    batch = deployment.batch_defaults(rules, gpu.runtime_bytes, gpu.id)
    need = deployment.deployment(rules, model, rules.weight_formats[weights], rules.kv_formats["bf16"], 1, tokens, 1, batch)
    return need.total_bytes_per_gpu


def calculator_data(catalog: Catalog, shop: Shop) -> dict:
    """What the calculator's JavaScript reads: rules, presets, GPUs and configurations on offer."""
    rules = catalog.rules
    dep = rules.deployment
    assert dep is not None  # validated with the catalogs
    models = [model_row(m) for m in catalog.models]
    offered = sorted(shop.configurations, key=Configuration.order)
    large_card = dep.large_card_gib * deployment.GIB
    return shortest_numbers(
        {
            "gpuCounts": list(rules.gpu_counts),
            "comfortableRequests": rules.comfortable_requests,
            "shownConfigurations": SHOWN_CONFIGURATIONS,
            "limits": {**rules.calculator_limits, **SERVING_LIMITS, "max_gpus": rules.max_gpus_per_machine},
            "defaults": {
                **rules.calculator_defaults,
                "gpus": default_gpus(catalog),
                "prompt": DEFAULT_PROMPT,
                "output": DEFAULT_OUTPUT,
                "sort": SORTS[0],
            },
            "sorts": list(SORTS),
            "digits": SPEED_DIGITS,
            "currency": catalog.snapshot.currency,
            "modelFields": list(MODEL_FIELDS),
            "models": models,
            "gpuFields": list(GPU_FIELDS),
            "gpus": {c.gpu.id: gpu_row(c.gpu) for c in offered},
            "machines": machines(catalog),
            "weightFormats": {
                f.name: {
                    "label": f.label,
                    "bits": f.bits,
                    "scope": f.scope,
                    "runtime": f.runtime,
                    **({"padTo": f.pad_to} if f.pad_to else {}),
                }
                for f in dep.weight_formats.values()
            },
            "kvFormats": [{"name": k.name, "label": k.label, "bytes": k.bytes, "runtime": k.runtime} for k in dep.kv_formats.values()],
            "deployment": {
                "utilization": dep.utilization,
                "nonTorchBytes": dep.non_torch_bytes,
                "parallelBytes": dep.parallel_bytes,
                "activationBytes": dep.activation_bytes,
                "samplerBytes": dep.sampler_bytes,
                "llamacppBatch": dep.llamacpp_batch,
                "logitBytes": deployment.LOGIT_BYTES,
                "largeCardBytes": large_card,
                "largeCardExceptions": list(dep.large_card_exceptions),
                "largeBatch": {"tokens": dep.large_batch_tokens, "sequences": dep.large_batch_sequences},
                "smallBatch": {"tokens": dep.small_batch_tokens, "sequences": dep.small_batch_sequences},
                "bitsPerByte": 8,
                "sixteenBitBytes": 2,
                "hybridGroupRatio": HYBRID_GROUP_RATIO,
                "kvAnyRuntime": list(KV_ANY_RUNTIME),
                "runtimeNames": RUNTIME_NAMES,
            },
            "training": training_data(catalog),
            "speed": speed_data(rules.speed),
            "counting": {
                **COUNTING,
                "architectures": list(hf_config.ARCHITECTURES),
                "qkvBias": list(hf_config.QKV_BIAS),
                "qkNorm": list(hf_config.QK_NORM),
                "fourNormKinds": list(hf_config.FOUR_NORMS),
                "releaseMethods": RELEASE_METHODS,
            },
        }
    )


def model_row(m: Model) -> list:
    """A preset as the script reads it: its MODEL_FIELDS in order, then what only some models have (an active
    parameter count, tied embeddings, attention other than full, experts, a vision tower) as one object, if any."""
    a = m.arch.attention
    row: list = [m.id, m.params_b, m.arch.layers, m.arch.heads, m.arch.kv_heads, m.arch.head_dim, m.arch.hidden, m.arch.vocab]
    row += [m.arch.intermediate, m.release]
    extra: dict = {}
    if m.active_params_b is not None:
        extra["active"] = m.active_params_b
    # Left out when they say nothing: untied embeddings, full attention, no experts, no vision tower (the script's defaults).
    if m.arch.tied_embeddings:
        extra["tied"] = True
    if a.kind != "full":
        extra["attention"] = {
            "kind": a.kind,
            "window": a.window,
            "slidingLayers": a.sliding_layers,
            "latent": a.kv_lora_rank + a.qk_rope_head_dim,
            **({"rank": a.kv_lora_rank} if a.kind == "mla" else {}),  # the width MLA attends over (speed.js)
        }
    if m.arch.experts:
        extra["experts"] = experts_data(m.arch.experts)
    if m.vision_params_b:
        extra["vision"] = m.vision_params_b
    return row + [extra] if extra else row


def shortest_numbers(value):
    """The data with every whole float written as an integer (8.0 as 8: the same number in JavaScript, two bytes fewer)."""
    if isinstance(value, dict):
        return {key: shortest_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shortest_numbers(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def gpu_row(gpu: Gpu) -> list:
    """A GPU on offer as the scripts read it, its GPU_FIELDS in order: the name, the bytes the runtime sees, and what
    the speed engine reads (bandwidth in TB/s, memory kind, dense TFLOPS, the link; the PCIe generation, if known)."""
    link = {"kind": gpu.link.kind, "gbS": gpu.link.gb_s, **({"gpus": gpu.link.gpus} if gpu.link.gpus else {})}
    row = [gpu.name, gpu.runtime_bytes, gpu.bandwidth_tb_s, gpu.memory_type, gpu.dense_tflops, link]
    return row + [gpu.form_factor.pcie_gen] if gpu.form_factor.pcie_gen else row


def speed_data(rules: SpeedRules | None) -> dict | None:
    """rules.yaml's speed block for speed.js (None without one: the calculator then shows no speeds)."""
    if rules is None:
        return None
    efficiency = {
        runtime: {
            "bandwidthGddr": e.bandwidth_gddr,
            "bandwidthHbm": e.bandwidth_hbm,
            "compute": e.compute,
            "prefill": e.prefill,
            "prefillMoe": e.prefill_moe,
            "layerOverheadS": e.layer_overhead_s,
        }
        for runtime, e in rules.efficiency.items()
    }
    return {
        "efficiency": efficiency,
        "computePrecision": {name: list(rates) for name, rates in rules.compute_precision.items()},
        "pcieGbS": {str(gen): gb_s for gen, gb_s in rules.pcie_gb_s.items()},
        "activationBytes": rules.activation_bytes,
        "allreduceLatencyS": rules.allreduce_latency_s,
        "secondsPerHour": SECONDS_PER_HOUR,
        "million": MILLION,
    }


def experts_data(experts: Experts | None) -> dict | None:
    if experts is None:
        return None
    return {
        "count": experts.count,
        "active": experts.active,
        "intermediate": experts.intermediate,
        "shared": experts.shared,
        "denseLayers": experts.dense_layers,
    }
