"""The speed engine against published measurements (tests/measurements/speed.yaml): each engine fitted on its own
runs, and its error on the points of a source left out of the fit held to issue 24's bounds."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from .measurements.fit_speed import ENGINES, Table, fit, predict, predict_all, source_of, terms
from .measurements.speed_table import BOUNDS, DOC, SHARES, catalog, model_of, models, points, predicted, readme_table, rows, table
from .project import REPO

REQUIRED = ("id", "engine", "version", "gpu", "gpus", "model", "model_id", "weights", "kv", "concurrency", "prompt_tokens", "output_tokens")
# Engine and check pairs whose left-out error is outside issue 24's share: the test expects them to miss, so it
# fails the day one meets its share and the entry must go. Why each misses: docs/measurements/speed.md.
KNOWN_MISSES = {("sglang", "decode")}


@pytest.fixture(scope="module")
def found():
    return rows()


def test_the_points_cover_what_issue_24_asks():
    """At least 150 enforced points over at least 14 GPUs, datacenter and PCIe cards, Blackwell and AMD among them,
    every engine calibrated, each point with its settings, engine version, source URL and quoted row."""
    listed = points()
    for point in listed:
        assert all(point.get(name) not in (None, "") for name in REQUIRED), point["id"]
        assert point["url"].startswith("https://") and point["quote"].strip(), point["id"]
    enforced = [p for p in listed if p["check"] in BOUNDS and not p.get("excluded")]
    gpus = {p["gpu"] for p in enforced}
    assert len(enforced) == 573
    assert len(gpus) == 19
    assert {"rtx-3090", "rtx-4090", "rtx-5090", "l40s"} <= gpus  # PCIe cards
    assert {"b200", "b300", "mi300x", "mi355x"} <= gpus  # Blackwell and AMD
    assert {p["engine"] for p in enforced} == set(ENGINES)


def test_multi_gpu_points_cover_tensor_parallel_over_pcie_and_layer_splits():
    enforced = [p for p in points() if p["check"] in BOUNDS and not p.get("excluded")]
    pcie = sorted(
        {
            (p["engine"], p["gpu"], int(p["gpus"]))
            for p in enforced
            if int(p["gpus"]) > 1
            and p["gpu"] in ("rtx-3090", "rtx-4090", "rtx-5090", "rtx-a6000", "rtx-6000-ada", "l40s", "a100-80gb-pcie", "h100-pcie")
        }
    )
    assert ("vllm", "rtx-4090", 4) in pcie and ("vllm", "rtx-5090", 2) in pcie
    assert {count for engine, _, count in pcie if engine == "llama.cpp"} == {2, 4, 6, 8}


def test_the_fit_reproduces_the_engine_on_every_point():
    """fit_speed's arithmetic on a point's terms is the engine's (engines/speed.py, as speed_table.predicted runs it
    on the point) to 1e-9."""
    found = catalog()
    rules = found.rules.speed
    assert rules is not None
    known, by_id = models(found), {p["id"]: p for p in points()}
    for t in terms():
        p = by_id[t.id]
        engine = predicted(p, found, model_of(known, p), rules)
        assert math.isclose(predict(t, rules.efficiency[t.engine]), engine, rel_tol=1e-9), t.id


def test_the_fit_s_columns_give_the_engine_s_figures():
    """The fit weighs a factor's grid in NumPy columns (fit_speed.Table): the rows it picks for each engine's points,
    with that engine's factors, give the engine's figure (as speed_table.predicted runs it) to 1e-9, and a column of
    candidate values gives one loss per value, each the sum over the points at that value."""
    found_catalog = catalog()
    rules = found_catalog.rules.speed
    assert rules is not None
    known, by_id = models(found_catalog), {p["id"]: p for p in points()}
    found = terms()
    table = Table(found)
    for engine in ENGINES:
        chosen = [t for t in found if t.engine == engine]
        rows = [table.row[id(t)] for t in chosen]
        figures = predict_all({name: column[rows] for name, column in table.columns.items()}, vars(rules.efficiency[engine]))
        assert figures.shape == (len(chosen),)
        for t, figure in zip(chosen, figures, strict=True):
            p = by_id[t.id]
            assert math.isclose(figure, predicted(p, found_catalog, model_of(known, p), rules), rel_tol=1e-9), t.id
    vllm = rules.efficiency["vllm"]
    decode = [t for t in found if t.engine == "vllm" and t.check == "decode"][:2]
    losses = table.losses(decode, vllm, "bandwidth_hbm", [0.5, vllm.bandwidth_hbm])
    assert len(losses) == 2
    for value, got in zip([0.5, vllm.bandwidth_hbm], losses, strict=True):
        e = replace(vllm, bandwidth_hbm=value)
        assert math.isclose(got, math.fsum(abs(math.log(predict(t, e) / t.measured)) for t in decode), rel_tol=1e-12)


def test_the_efficiency_factors_are_what_the_fit_gives():
    """rules.yaml's speed factors are fit_speed's output on these points, not numbers set by hand."""
    rules = catalog().rules.speed
    assert rules is not None
    assert fit(terms()) == {engine: rules.efficiency[engine] for engine in ENGINES}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("check", sorted(BOUNDS))
def test_each_engine_meets_its_share_on_points_left_out(found, engine, check):
    """Issue 24: decode within ±25 % on at least 85 % of an engine's points, under load within ±35 % on at least
    70 %, each point predicted by the factors fitted without its source; a known miss must still miss."""
    errors = [abs(row.left_out_error) for row in found if row.engine == engine and row.check == check and row.left_out_error is not None]
    if not errors:
        assert (engine, check) == ("llama.cpp", "aggregate")  # no batched llama.cpp run is measured
        return
    share = sum(1 for error in errors if error <= BOUNDS[check]) / len(errors)
    assert (share >= SHARES[check]) != ((engine, check) in KNOWN_MISSES), f"{engine} {check}: {share:.1%} within ±{BOUNDS[check]:.0%}"


def test_the_docs_show_the_current_table(found):
    assert DOC.committed() == table(found), DOC.stale()


def test_the_readme_quotes_the_left_out_error(found):
    assert readme_table(found) in (REPO / "README.md").read_text(), "README.md: copy speed_table.readme_table's table"


def test_a_point_names_its_publication_where_its_run_spans_several_files():
    """A point's source is its URL without the fragment and the commit of a GitHub file, or the publication it names
    (`source`): one author's result files leave the fit together."""
    url = "https://github.com/owner/runs/blob/0123abc/results/c1.json#L4"
    assert source_of({"url": url}) == "https://github.com/owner/runs/blob/results/c1.json"
    assert source_of({"url": url, "source": "https://github.com/owner/runs"}) == "https://github.com/owner/runs"


def test_every_exclusion_gives_its_reason():
    reasons = {p["id"]: p["excluded"] for p in points() if p.get("excluded")}
    assert len(reasons) == 261
    assert all(len(reason) > 20 for reason in reasons.values())
