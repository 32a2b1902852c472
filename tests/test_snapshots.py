"""Choosing the snapshot to build from: by taken_at, every file checked, no future, no silent pick."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpumem.catalog import inputs as reading
from gpumem.catalog.inputs import choose_snapshot
from gpumem.catalog.load import snapshot_name, snapshot_time
from gpumem.commands.build import gather
from gpumem.commands.prices import import_export
from gpumem.errors import BuildError, Problems

from .conftest import NOW, SNAPSHOT, edit, line_of, options_for
from .project import REPO

PRICES = Path("catalogs/prices")
DEMO = PRICES / SNAPSHOT
# A clock the day after the snapshots these tests add (2026-11-07).
LATER = datetime(2026, 11, 8, tzinfo=UTC)
HEADER = "machine_id,gpu,gpus,price_per_gpu_hour,country,form_factor,interconnect\n"


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The copy of the inputs as the working folder, so messages name short relative paths."""
    monkeypatch.chdir(inputs)
    return inputs


def snapshot(name: str, taken_at: str, old: str = "", new: str = "") -> Path:
    """A copy of the demo snapshot under another name and taken_at, with one text replaced."""
    text = DEMO.read_text().replace("taken_at: 2026-10-31T16:52:00Z", f"taken_at: {taken_at}")
    if old:
        assert old in text
        text = text.replace(old, new, 1)
    path = PRICES / name
    path.write_text(text)
    return path


def problems(root: Path, now: datetime = LATER, **options) -> list[str]:
    with pytest.raises(BuildError) as raised:
        gather(options_for(root, **options), now=now)
    return raised.value.lines


def test_the_later_of_two_imports_30_seconds_apart_is_used(root):
    # By file name, "…T09-00-30Z" sorts before "…T09-00Z": main published the older one.
    for taken_at, price in (("2026-11-07T09:00:00Z", "1.50"), ("2026-11-07T09:00:30Z", "1.40")):
        Path("export.csv").write_text(HEADER + f"m1,H100 SXM,8,{price},US,SXM,NVLink\n")
        import_export(Path("export.csv"), Path("catalogs"), None, taken_at, "USD", now=LATER)
    catalog = gather(options_for(root), now=LATER).catalog
    assert catalog.snapshot.name == "2026-11-07T09-00-30Z"
    assert catalog.snapshot.offers[0].price_per_gpu_hour == 1.40
    assert catalog.earlier_snapshots == ("2026-11-07T09-00Z", "2026-10-31T16-52Z")


def test_earlier_snapshots_are_listed_latest_first_by_taken_at(root):
    for name in ("2026-11-07T09-01Z.yaml", "2026-11-07T09-00Z.yaml", "2026-11-07T09-00-30Z.yaml"):
        snapshot(name, snapshot_time(name).strftime("%Y-%m-%dT%H:%M:%SZ"))
    catalog = gather(options_for(root), now=LATER).catalog
    assert catalog.snapshot.name == "2026-11-07T09-01Z"
    assert catalog.earlier_snapshots == ("2026-11-07T09-00-30Z", "2026-11-07T09-00Z", "2026-10-31T16-52Z")
    picked = gather(options_for(root, prices=PRICES / "2026-11-07T09-00Z.yaml"), now=LATER).catalog
    assert picked.earlier_snapshots == ("2026-11-07T09-01Z", "2026-11-07T09-00-30Z", "2026-10-31T16-52Z")


def test_a_snapshot_misnamed_2062_is_an_error_even_when_its_time_is_right(root):
    snapshot("2062-10-31T23-00Z.yaml", "2026-10-31T23:00:00Z")
    expected = [
        "catalogs/prices/2062-10-31T23-00Z.yaml:5: snapshot: taken_at: 2026-10-31T23:00:00Z disagrees with the file name, "
        "which says 2062-10-31T23:00:00Z; rename the file to 2026-10-31T23-00Z.yaml or correct taken_at"
    ]
    assert problems(root, now=NOW) == expected
    assert problems(root, now=NOW, strict=True) == expected


def test_an_older_misnamed_snapshot_is_an_error_too(root):
    snapshot("2026-10-30T00-00Z.yaml", "2026-10-29T00:00:00Z")
    assert problems(root) == [
        "catalogs/prices/2026-10-30T00-00Z.yaml:5: snapshot: taken_at: 2026-10-29T00:00:00Z disagrees with the file name, "
        "which says 2026-10-30T00:00:00Z; rename the file to 2026-10-29T00-00Z.yaml or correct taken_at"
    ]


def test_two_snapshots_of_the_same_moment_are_an_error_naming_both(root):
    snapshot("2026-11-07T09-00Z.yaml", "2026-11-07T09:00:00Z")
    snapshot("2026-11-07T09-00-00Z.yaml", "2026-11-07T09:00:00Z", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 1.99,")
    assert problems(root) == [
        "catalogs/prices/2026-11-07T09-00Z.yaml:5: snapshot: taken_at: 2026-11-07T09:00:00Z is also the taken_at of "
        "catalogs/prices/2026-11-07T09-00-00Z.yaml; keep one snapshot of each moment"
    ]


def test_a_snapshot_taken_in_2099_is_an_error_on_build(root):
    snapshot("2099-01-01T00-00Z.yaml", "2099-01-01T00:00:00Z")
    expected = [
        "catalogs/prices/2099-01-01T00-00Z.yaml:5: snapshot: taken_at: 2099-01-01T00:00:00Z is in the future: the clock says "
        "2026-11-01T00:00:00Z, and at most 5 minutes of clock skew are allowed (prices.clock in rules.yaml)"
    ]
    assert problems(root, now=NOW) == expected
    assert problems(root, now=NOW, strict=True) == expected


def test_a_future_snapshot_is_an_error_even_when_another_is_built(root):
    future = snapshot("2099-01-01T00-00Z.yaml", "2099-01-01T00:00:00Z")
    assert len(problems(root, now=NOW, prices=PRICES / SNAPSHOT)) == 1
    edit(future, "taken_at: 2099-01-01T00:00:00Z", "taken_at: 2026-11-01T00:04:00Z")
    future.rename(PRICES / "2026-11-01T00-04Z.yaml")
    assert gather(options_for(root), now=NOW).catalog.snapshot.name == "2026-11-01T00-04Z"  # within the clock skew


def test_prices_and_machine_sizes_out_of_bounds_in_a_snapshot_name_their_line(root):
    edit(root / DEMO, "price_per_gpu_hour: 0.33,", "price_per_gpu_hour: 0.0000001,")
    edit(root / DEMO, "price_per_gpu_hour: 0.45,", "price_per_gpu_hour: 1000000000000,")
    edit(root / DEMO, "gpus: 4, price_per_gpu_hour: 4.33,", "gpus: 64, price_per_gpu_hour: 4.33,")
    low, high, big = (line_of(root / DEMO, text) for text in ("0.0000001", "1000000000000", "gpus: 64"))
    assert problems(root, now=NOW) == [
        f"catalogs/prices/{SNAPSHOT}:{low}: m11143: price_per_gpu_hour: 1e-07 is less than 0.01 per GPU-hour, "
        "the least a GPU rents for (prices.bounds in rules.yaml)",
        f"catalogs/prices/{SNAPSHOT}:{high}: m11277: price_per_gpu_hour: 1000000000000 is more than 100 per GPU-hour, "
        "the most a GPU rents for (prices.bounds in rules.yaml)",
        f"catalogs/prices/{SNAPSHOT}:{big}: m13057: gpus: 64 GPUs is more than 16 in one machine, "
        "the most a machine holds (prices.bounds in rules.yaml)",
    ]


def test_long_or_multi_line_texts_in_a_snapshot_are_errors(root):
    edit(root / DEMO, 'country: "CA"', 'country: "C\\nA"')
    edit(root / DEMO, "machine: m11277,", f"machine: {'m' * 5000},")
    first, second = line_of(root / DEMO, 'C\\nA"'), line_of(root / DEMO, "m" * 5000)
    assert problems(root, now=NOW) == [
        f"catalogs/prices/{SNAPSHOT}:{first}: m11143: country: expected one line of plain text, got a control character (U+000A) in 'C\\nA'",
        f"catalogs/prices/{SNAPSHOT}:{second}: offer 2: machine: expected at most 100 characters, got 5,000: 'mmmmmmmmmmmmmmmmmmmm'…",
    ]


def test_a_snapshot_name_that_is_no_time_is_an_error(root):
    snapshot("2026-13-45T09-00Z.yaml", "2026-10-30T09:00:00Z")
    assert problems(root) == [
        "catalogs/prices/2026-13-45T09-00Z.yaml:5: snapshot: taken_at: the file name 2026-13-45T09-00Z.yaml is not a valid time"
    ]


def test_every_snapshot_is_checked_by_its_taken_at_line_and_only_the_chosen_one_is_parsed(root, monkeypatch):
    snapshot("2026-10-30T09-00Z.yaml", "2026-10-30T09:00:00Z", "offers:", "offers: [this is not read")
    snapshot("2026-10-29T09-00Z.yaml", "last Tuesday")
    (PRICES / "2026-10-28T09-00Z.yaml").write_text("currency: USD\noffers: []\n")
    assert problems(root) == [
        "catalogs/prices/2026-10-28T09-00Z.yaml:1: snapshot: taken_at: missing field (expected a UTC time like 2026-10-31T16:52:00Z)",
        "catalogs/prices/2026-10-29T09-00Z.yaml:5: snapshot: taken_at: expected a UTC time like 2026-10-31T16:52:00Z, got 'last Tuesday'",
    ]
    (PRICES / "2026-10-28T09-00Z.yaml").unlink()
    (PRICES / "2026-10-29T09-00Z.yaml").unlink()
    parsed = []
    read_yaml = reading.read_yaml
    monkeypatch.setattr(reading, "read_yaml", lambda path, *rest: parsed.append(path.name) or read_yaml(path, *rest))
    assert gather(options_for(root), now=LATER).catalog.earlier_snapshots == ("2026-10-30T09-00Z",)
    assert [name for name in parsed if name.endswith("Z.yaml")] == [SNAPSHOT]


def test_hundreds_of_snapshots_are_ordered_by_their_taken_at_lines_alone(root, monkeypatch):
    """None is parsed whole, each is read once up to its taken_at line (benchmarks/bench.py times 400 of them)."""
    start = datetime(2026, 10, 31, 16, 52, tzinfo=UTC)
    for hours in range(6, 6 * 400, 6):
        moment = start - timedelta(hours=hours)
        snapshot(snapshot_name(moment), moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    parsed, stamped = [], []
    read_yaml, read_taken_at = reading.read_yaml, reading.read_taken_at
    monkeypatch.setattr(reading, "read_yaml", lambda path, *rest: parsed.append(path.name) or read_yaml(path, *rest))
    monkeypatch.setattr(reading, "read_taken_at", lambda path: stamped.append(path.name) or read_taken_at(path))
    chosen, others = choose_snapshot(Path("catalogs"), None, Problems())
    assert chosen == PRICES / SNAPSHOT and len(others) == 399
    assert parsed == []
    assert sorted(stamped) == sorted(path.name for path in PRICES.iterdir()) and len(stamped) == 400


def test_a_prices_file_outside_the_folder_is_checked_but_need_not_be_named_by_its_time(root):
    draft = root / "draft.yaml"
    draft.write_text(DEMO.read_text().replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-11-07T09:00:00Z"))
    assert gather(options_for(root, prices=draft), now=LATER).catalog.snapshot.taken_at == datetime(2026, 11, 7, 9, tzinfo=UTC)
    edit(draft, "price_per_gpu_hour: 0.33,", "price_per_gpu_hour: 1000,")
    edit(draft, "taken_at: 2026-11-07T09:00:00Z", "taken_at: 2099-11-07T09:00:00Z")
    assert problems(root, now=LATER, prices=draft) == [
        "draft.yaml:5: snapshot: taken_at: 2099-11-07T09:00:00Z is in the future: the clock says 2026-11-08T00:00:00Z, "
        "and at most 5 minutes of clock skew are allowed (prices.clock in rules.yaml)",
        f"draft.yaml:{line_of(draft, 'price_per_gpu_hour: 1000,')}: m11143: price_per_gpu_hour: 1000 is more than 100 per GPU-hour, "
        "the most a GPU rents for (prices.bounds in rules.yaml)",
    ]
    named = root / "2026-11-07T09-00Z.yaml"
    named.write_text(DEMO.read_text())
    assert problems(root, now=LATER, prices=named) == [
        "2026-11-07T09-00Z.yaml:5: snapshot: taken_at: 2026-10-31T16:52:00Z disagrees with the file name, which says 2026-11-07T09:00:00Z; "
        "rename the file to 2026-10-31T16-52Z.yaml or correct taken_at"
    ]


def test_rules_without_the_prices_block_are_an_error(root):
    rules = root / "catalogs/rules.yaml"
    text = rules.read_text()
    rules.write_text(text[: text.index("\n# What a price snapshot may hold")] + "\n")
    # The ":0:" lines are how read_rules reports the blocks of any missing section (serving too).
    assert problems(root, now=NOW) == [
        "catalogs/rules.yaml:0: rules: prices.bounds: missing field",
        "catalogs/rules.yaml:0: rules: prices.clock: missing field",
        "catalogs/rules.yaml:0: rules: prices.checks: missing field",
        "catalogs/rules.yaml:6: rules: prices: missing field",
    ]


def test_cli_build_refuses_a_future_snapshot_with_exit_code_1(root):
    snapshot("2099-01-01T00-00Z.yaml", "2099-01-01T00:00:00Z")
    command = [
        sys.executable,
        "-m",
        "gpumem.cli.main",
        "--project",
        str(REPO),
        "build",
        "--strict",
        "--catalogs",
        "catalogs",
        "--content",
        "content",
    ]
    built = subprocess.run([*command, "--out", "site"], cwd=root, capture_output=True, text=True)
    assert built.returncode == 1
    assert built.stderr.startswith(
        "catalogs/prices/2099-01-01T00-00Z.yaml:5: snapshot: taken_at: 2099-01-01T00:00:00Z is in the future: the clock says "
    )
    assert built.stderr.endswith("\n1 problem found; nothing was written.\n")
    assert not (root / "site").exists()
