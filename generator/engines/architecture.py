"""An architecture estimated from a parameter count alone, for a reader who knows only "7 billion parameters".

The rule is fitted over the catalog's dense models (their published config.json, counted by catalog/hf_config.py),
never one model: the layers and the hidden size are power laws of the text parameters, least squares on their
logarithms; the head dimension and the KV heads are the catalog's most common, the vocabulary its median, the MLP
width its median ratio to the hidden size. `left_out_errors` refits without each architecture in turn and says how
far the rule lands from the one left out. Hand-written: a two-coefficient least-squares fit is a few lines, and
calculator.js repeats `estimated_fields` operation for operation, so both must stay this small.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpumem.records.catalog import Architecture, Model

# The form's architecture fields a parameter count estimates, in the calculator's order.
ESTIMATED = ("layers", "heads", "kv_heads", "head_dim", "hidden", "vocab", "intermediate")


@dataclass(frozen=True)
class Shape:
    """A dense model's text parameters (billions) and the numbers of its architecture the rule estimates."""

    params_b: float
    fields: Mapping[str, int]


@dataclass(frozen=True)
class ShapeRule:
    """layers = a * P**b and hidden = c * P**d (P: billions of parameters), the rest the catalog's typical values."""

    layers: tuple[float, float]
    hidden: tuple[float, float]
    head_dim: int
    kv_heads: int
    vocab: int
    mlp_ratio: float
    models: int  # the distinct dense architectures it was fitted on


def dense_shapes(models: Sequence[Model]) -> tuple[Shape, ...]:
    """The catalog's dense models with full or sliding attention, each architecture once (a fine-tune shares its base's)."""
    found: dict[tuple, Shape] = {}
    for model in models:
        arch = model.arch
        if arch.experts is not None or arch.attention.kind == "mla":
            continue
        fields = {
            "layers": arch.layers,
            "heads": arch.heads,
            "kv_heads": arch.kv_heads,
            "head_dim": arch.head_dim,
            "hidden": arch.hidden,
            "vocab": arch.vocab,
            "intermediate": arch.intermediate,
        }
        params = model.params_b - model.vision_params_b
        found.setdefault((params, *fields.values()), Shape(params, fields))
    return tuple(found.values())


def power_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of y = a * x**b, least squares on log y against log x."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - slope * mx), slope


def most_common(values: Sequence[int]) -> int:
    """The most frequent value, the smallest of equally frequent ones."""
    counts = Counter(values)
    return min(counts, key=lambda value: (-counts[value], value))


# The sizes a fit spans at least, largest over smallest: closer ones give any slope (and a power that overflows).
FIT_SPAN = 2.0


def fittable(shapes: Sequence[Shape]) -> bool:
    """Whether the shapes span sizes enough for a power law (a valid catalog may hold one dense model, or none)."""
    sizes = [s.params_b for s in shapes]
    return bool(sizes) and max(sizes) >= FIT_SPAN * min(sizes)


def fit_rule(shapes: Sequence[Shape]) -> ShapeRule:
    """The rule over these shapes (fittable ones)."""
    return ShapeRule(
        layers=power_fit([(s.params_b, s.fields["layers"]) for s in shapes]),
        hidden=power_fit([(s.params_b, s.fields["hidden"]) for s in shapes]),
        head_dim=most_common([s.fields["head_dim"] for s in shapes]),
        kv_heads=most_common([s.fields["kv_heads"] for s in shapes]),
        vocab=round(statistics.median(s.fields["vocab"] for s in shapes)),
        mlp_ratio=statistics.median(s.fields["intermediate"] / s.fields["hidden"] for s in shapes),
        models=len(shapes),
    )


def catalog_rule(models: Sequence[Model]) -> ShapeRule | None:
    """The rule fitted over a catalog's dense models; None when they do not span sizes enough (fittable)."""
    shapes = dense_shapes(models)
    return fit_rule(shapes) if fittable(shapes) else None


def estimated_architecture(rule: ShapeRule, params_b: float) -> Architecture:
    """A dense model of full attention and separate output head, its numbers estimated from `params_b` alone."""
    f = estimated_fields(rule, params_b)
    return Architecture(
        f["layers"], f["heads"], f["kv_heads"], f["head_dim"], hidden=f["hidden"], vocab=f["vocab"], intermediate=f["intermediate"]
    )


def nearest(value: float) -> int:
    """A positive value to the nearest whole number, halves up as JavaScript's Math.round rounds them, at least 1."""
    whole = math.floor(value)
    return max(1, whole + 1 if value - whole >= 0.5 else whole)


def estimated_fields(rule: ShapeRule, params_b: float, given: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every field the rule estimates for `params_b` billion parameters; a field in `given` is the reader's and
    the others follow it. The heads are a multiple of the KV heads (grouped-query attention, as the catalog's
    models group them), the hidden size their width, the KV heads the largest count up to the typical dividing them."""
    given = given or {}
    head_dim = given.get("head_dim") or rule.head_dim
    hidden_guess = given.get("hidden") or rule.hidden[0] * params_b ** rule.hidden[1]
    heads = given.get("heads") or rule.kv_heads * nearest(hidden_guess / (head_dim * rule.kv_heads))
    hidden = given.get("hidden") or heads * head_dim
    kv_heads = given.get("kv_heads") or max(n for n in range(1, min(heads, rule.kv_heads) + 1) if heads % n == 0)
    return {
        "layers": given.get("layers") or nearest(rule.layers[0] * params_b ** rule.layers[1]),
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden": hidden,
        "vocab": given.get("vocab") or rule.vocab,
        "intermediate": given.get("intermediate") or nearest(rule.mlp_ratio * hidden / head_dim) * head_dim,
    }


def kv_elements_per_token(fields: Mapping[str, int]) -> int:
    """Keys and values one token caches over every layer (full attention), the figure the estimate matters most for."""
    return 2 * fields["layers"] * fields["kv_heads"] * fields["head_dim"]


@dataclass(frozen=True)
class LeftOut:
    """How far the rule fitted without one architecture lands from it: the median and the largest relative error."""

    field: str
    median: float
    largest: float


def left_out_errors(shapes: Sequence[Shape]) -> tuple[LeftOut, ...]:
    """For layers, hidden size and the KV cache per token: each shape estimated by the rule fitted on the others
    (none when the others cannot be fitted)."""
    errors: dict[str, list[float]] = {"layers": [], "hidden": [], "kv_per_token": []}
    for index, shape in enumerate(shapes):
        others = [s for i, s in enumerate(shapes) if i != index]
        if not fittable(others):
            continue
        rule = fit_rule(others)
        guess = estimated_fields(rule, shape.params_b)
        for name in ("layers", "hidden"):
            errors[name].append(abs(guess[name] / shape.fields[name] - 1))
        errors["kv_per_token"].append(abs(kv_elements_per_token(guess) / kv_elements_per_token(shape.fields) - 1))
    return tuple(LeftOut(name, statistics.median(found), max(found)) for name, found in errors.items() if found)
