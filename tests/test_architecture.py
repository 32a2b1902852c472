"""engines/architecture.py: the rule that estimates an architecture from a parameter count, fitted over the fixture
catalog's dense models, and its error on the models left out."""

from __future__ import annotations

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import architecture
from gpumem.engines.architecture import LeftOut, Shape

from .project import CATALOGS

SHAPES = architecture.dense_shapes(load_catalog(CATALOGS).models)
RULE = architecture.fit_rule(SHAPES)


def shape(params_b: float, layers: int, hidden: int, heads: int = 32, kv_heads: int = 8) -> Shape:
    fields = {"layers": layers, "heads": heads, "kv_heads": kv_heads, "head_dim": 128, "hidden": hidden, "vocab": 32000}
    return Shape(params_b, {**fields, "intermediate": 4 * hidden})


def test_the_rule_is_fitted_over_every_dense_architecture_once():
    # 28 models: 5 MoE and one MLA model left out, the three 70B models that share Llama 3.1 70B's numbers counted once.
    assert len(SHAPES) == 20 and RULE.models == 20
    assert [round(value, 6) for value in (*RULE.layers, *RULE.hidden)] == [16.709686, 0.352121, 1965.486933, 0.325185]
    assert (RULE.head_dim, RULE.kv_heads, RULE.vocab, RULE.mlp_ratio) == (128, 8, 129664, 3.5)


def test_a_power_law_through_two_points_is_exact():
    assert architecture.power_fit([(1.0, 10.0), (100.0, 1000.0)]) == pytest.approx((10.0, 1.0), rel=1e-12)


@pytest.mark.parametrize(
    ("params_b", "fields"),
    [
        (1, (17, 16, 8, 128, 2048, 129664, 7168)),
        (7, (33, 32, 8, 128, 4096, 129664, 14336)),
        (70, (75, 64, 8, 128, 8192, 129664, 28672)),
        (405, (138, 112, 8, 128, 14336, 129664, 50176)),
        (0.001, (1, 8, 8, 128, 1024, 129664, 3584)),  # at least one group of heads and one layer
    ],
)
def test_a_parameter_count_alone(params_b: float, fields: tuple):
    assert architecture.estimated_fields(RULE, params_b) == dict(zip(architecture.ESTIMATED, fields, strict=True))


def test_the_fields_a_reader_gives_are_kept_and_followed():
    # 40 heads: the KV heads are the largest count up to 8 that divides them; the MLP follows the given hidden size.
    given = {"heads": 40, "hidden": 5120}
    assert architecture.estimated_fields(RULE, 13, given) == {
        "layers": 41, "heads": 40, "kv_heads": 8, "head_dim": 128, "hidden": 5120, "vocab": 129664, "intermediate": 17920,
    }  # fmt: skip
    assert architecture.estimated_fields(RULE, 13, {"heads": 30})["kv_heads"] == 6
    assert architecture.estimated_fields(RULE, 13, {"heads": 7})["kv_heads"] == 7


def test_most_common_takes_the_smallest_of_a_tie():
    assert architecture.most_common([64, 256, 256, 64, 128]) == 64


def test_the_error_on_models_left_out():
    errors = {e.field: (round(e.median, 4), round(e.largest, 4)) for e in architecture.left_out_errors(SHAPES)}
    assert errors == {"layers": (0.1083, 0.3), "hidden": (0.0, 0.3333), "kv_per_token": (0.1533, 1.5)}


def test_the_error_of_a_rule_that_fits_every_model_is_nil():
    shapes = [shape(p, round(10 * p**0.5), 1024 * round(p**0.5)) for p in (1, 4, 16, 64)]
    assert architecture.left_out_errors(shapes) == (
        LeftOut("layers", 0.0, 0.0),
        LeftOut("hidden", 0.0, 0.0),
        LeftOut("kv_per_token", 0.0, 0.0),
    )


def test_sizes_too_close_to_fit_give_no_rule():
    # Two models of 8 and 9 billion parameters: any slope would do, so none is fitted (a valid catalog may be so small).
    close = [shape(8.0, 32, 4096), shape(9.2, 42, 3584)]
    assert not architecture.fittable(close) and architecture.fittable([*close, shape(16.0, 40, 5120)])
    assert architecture.left_out_errors(close) == ()
    assert architecture.catalog_rule([]) is None
