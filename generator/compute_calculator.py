"""The calculator page: its precomputed default result, FAQ figures and the JSON its script reads."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from . import memory, sizing
from .compute import Need, Shop, room_gb
from .records import Architecture, Catalog, Gpu, Model
from .sizing import Choice, Configuration


@dataclass(frozen=True)
class CalculatorPage:
    """The calculator page's precomputed tables and FAQ figures (the page works without JavaScript)."""

    rows: tuple[tuple[Model, tuple[Need, ...]], ...]
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


@dataclass(frozen=True)
class CalculatorState:
    """The calculator's opening state, worked out at build time so the page shows it before any script runs."""

    fields: dict[str, str]
    need: memory.Breakdown
    choices: tuple[tuple[Configuration, bool], ...]
    valid_counts: tuple[int, ...]

    @property
    def query(self) -> str:
        return urllib.parse.urlencode(self.fields)

    @property
    def parts(self) -> tuple[tuple[str, float], ...]:
        """The parts a mode has (the others are zero), in the order the page lists them."""
        names = ("weights", "kv_cache", "gradients", "optimizer", "overhead")
        return tuple((name, getattr(self.need, name)) for name in names if getattr(self.need, name))


def calculator_default(catalog: Catalog, shop: Shop) -> CalculatorState:
    """The opening state of rules.yaml, computed the way the calculator's script computes it."""
    d = catalog.rules.calculator_defaults
    model = catalog.model(d["model"])
    arch = model.arch
    fields = {
        "model": model.id,
        "params": repr(model.params_b),
        "layers": str(arch.layers),
        "heads": str(arch.heads),
        "kv_heads": str(arch.kv_heads),
        "head_dim": str(arch.head_dim),
        "mode": d["mode"],
        "weights": d["weights"],
        "kv": d["kv"],
        "batch": str(d["batch"]),
        "context": str(d["context"]),
    }
    need = memory.memory_need(catalog.rules, arch, model.params_b, d["mode"], d["weights"], d["kv"], d["context"], d["batch"])
    choices = calculator_choices(catalog, shop, arch, d["mode"], d["kv"], d["context"], need.total)
    return CalculatorState(fields, need, choices, sizing.valid_counts(catalog.rules.gpu_counts, arch.heads))


def calculator_page(catalog: Catalog, shop: Shop) -> CalculatorPage:
    """The calculator page without its script: every preset precomputed, the FAQ figures, the opening state."""
    rules = catalog.rules
    rows = []
    for model in catalog.models:
        needs = []
        for precision in rules.serving_precisions:
            total = memory.serving_breakdown(rules, model.arch, model.params_b, precision, "bf16", rules.fit_context, 1).total
            needs.append(Need(precision, total, shop.choose(total, model.arch.heads)))
        rows.append((model, tuple(needs)))
    size = rules.example_size_b
    int4 = memory.weights_gb(size, rules.precisions["int4"])
    small = catalog.model(rules.small_model)
    small_bf16 = memory.weights_gb(small.params_b, rules.precisions["bf16"])
    small_kv = memory.kv_cache_gb(small.arch, rules.kv_precisions["bf16"], rules.small_context)
    holding = [g for g in catalog.gpus if g.memory_gb >= small_bf16 + small_kv]
    smallest = min((g.memory_gb for g in holding), default=None)
    return CalculatorPage(
        rows=tuple(rows),
        seventy_bf16_weights_gb=memory.weights_gb(size, rules.precisions["bf16"]),
        seventy_int4_weights_gb=int4,
        largest_consumer=max((g for g in catalog.gpus if g.segment == "consumer"), key=lambda g: g.memory_gb),
        seventy_int4_choice=shop.choose(int4),
        small=small,
        small_weights=tuple((p, memory.weights_gb(small.params_b, b)) for p, b in rules.precisions.items()),
        small_kv_gb=small_kv,
        small_total_gb=small_bf16 + small_kv,
        small_cards=tuple(sorted((g for g in holding if g.memory_gb == smallest), key=lambda g: g.name)),
        default=calculator_default(catalog, shop),
        small_card_gb=smallest or 0.0,
    )


def calculator_extra_gb(catalog: Catalog, arch: Architecture, mode: str, kv_precision: str, context: int) -> float:
    """Room a comfortable fit leaves in the calculator: none when training, else at the chosen context."""
    return room_gb(catalog, arch, kv_precision, context) if mode == "serve" else 0.0


def calculator_choices(
    catalog: Catalog, shop: Shop, arch: Architecture, mode: str, kv_precision: str, context: int, need_gb: float
) -> tuple[tuple[Configuration, bool], ...]:
    """Every configuration on offer that holds the need, smallest first, each flagged tight or not."""
    rules = catalog.rules
    extra = calculator_extra_gb(catalog, arch, mode, kv_precision, context)
    holding = [c for c in shop.configurations if c.memory_gb >= need_gb and (mode != "serve" or arch.heads % c.count == 0)]
    return tuple(
        (c, sizing.is_tight(need_gb, c.memory_gb, extra, rules.min_free_fraction)) for c in sorted(holding, key=Configuration.order)
    )


def calculator_data(catalog: Catalog, shop: Shop) -> dict:
    """What the calculator's JavaScript reads: rules, presets, GPUs and configurations on offer."""
    rules = catalog.rules
    models = []
    for m in catalog.models:
        a = m.arch.attention
        attention = {"kind": a.kind, "window": a.window, "slidingLayers": a.sliding_layers, "latent": a.kv_lora_rank + a.qk_rope_head_dim}
        models.append(
            {
                "id": m.id,
                "name": m.name,
                "params": m.params_b,
                "layers": m.arch.layers,
                "heads": m.arch.heads,
                "kvHeads": m.arch.kv_heads,
                "headDim": m.arch.head_dim,
                "attention": attention,
            }
        )
    return {
        "precisions": rules.precisions,
        "kvPrecisions": rules.kv_precisions,
        "runtimeOverhead": rules.runtime_overhead,
        "fullParts": rules.full_parts,
        "loraBase": rules.lora_base_precision,
        "loraMargin": rules.lora_margin,
        "qloraBase": rules.qlora_base_precision,
        "qloraBytes": rules.qlora_bytes,
        "gpuCounts": list(rules.gpu_counts),
        "minFreeFraction": rules.min_free_fraction,
        "comfortableRequests": rules.comfortable_requests,
        "limits": rules.calculator_limits,
        "defaults": rules.calculator_defaults,
        "currency": catalog.snapshot.currency,
        "models": models,
        "configurations": [
            {"gpu": c.gpu.id, "name": c.gpu.name, "memory": c.gpu.memory_gb, "count": c.count, "price": c.price_per_hour}
            for c in sorted(shop.configurations, key=Configuration.order)
        ],
    }
