"""The writer under real conditions, each build a `gpumem build` process of its own: two builds at
once, `kill -9` at every step and at random moments of the write, and the build that follows; the
earlier writer's folder turned into the link. After each, the output path shows a whole site, byte
for byte the old one or the new one, and the hidden folder never holds more than three versions.

The kills at random moments build the fixture site (347 pages), whose write lasts some tens of
milliseconds for the kills to land in; the kills at the writer's named steps and the other runs build
the golden fixture's site (23 pages), whose builds take a fraction of the time and reach the same steps."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SNAPSHOT, tree
from .golden.update import FIXTURE as GOLDEN
from .project import CATALOGS, REPO
from .test_write import old_layout

pytestmark = pytest.mark.slow

RUN = [sys.executable, "-m", "gpumem", "--project", str(REPO), "build", "--catalogs", "catalogs", "--content", "content"]
SUMMARY = r"23 pages, \d+ rendered; {written} files? written, {unchanged} unchanged, {removed} removed in \d+\.\d\d s\n"  # golden
PRICES = ("2.07", "1.87")  # the H100 offer the guides quote, at the fixture's price and at another


def start(root: Path, hook: str = "", *more: str) -> subprocess.Popen[str]:
    """`gpumem build` into root/site, with the writer's test hook when given."""
    env = {key: value for key, value in os.environ.items() if key != "GPUMEM_WRITE_TEST"}
    env.update({"GPUMEM_WRITE_TEST": hook} if hook else {})
    return subprocess.Popen([*RUN, "--out", "site", *more], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, list[str]]:
    """Exit code, stdout, and stderr's lines without the (date-dependent) stale-snapshot warning."""
    out, err = process.communicate(timeout=600)
    return process.returncode, out, [line for line in err.splitlines() if not line.startswith("warning: price snapshot")]


def set_price(root: Path, price: str) -> None:
    path = root / f"catalogs/prices/{SNAPSHOT}"
    # the fixture's offer, or the golden fixture's
    text, count = re.subn(
        r"(machine: (?:m48883|g3), gpu: h100-sxm, gpus: 8, price_per_gpu_hour: )[0-9.]+,", rf"\g<1>{price},", path.read_text()
    )
    assert count == 1
    path.write_text(text)


def project(root: Path, golden: bool = True) -> Path:
    """A copy of the golden fixture's catalogs and content to build from, or of the fixture catalogs and the
    project's content."""
    shutil.copytree(GOLDEN / "catalogs" if golden else CATALOGS, root / "catalogs")
    shutil.copytree(GOLDEN / "content" if golden else REPO / "content", root / "content")
    return root


def built_at_each_price(root: Path) -> dict[str, dict[str, bytes]]:
    """The site as the command builds it from root at each price."""
    trees = {}
    for price in PRICES:
        set_price(root, price)
        assert finish(start(root, "", "--force"))[0] == 0
        trees[price] = tree(root / "site")
    assert trees[PRICES[0]] != trees[PRICES[1]]
    return trees


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """The golden fixture's site at each price."""
    return built_at_each_price(project(tmp_path_factory.mktemp("references")))


@pytest.fixture(scope="module")
def large_references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """The fixture site at each price."""
    return built_at_each_price(project(tmp_path_factory.mktemp("large-references"), golden=False))


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    return project(tmp_path)


@pytest.fixture
def large_inputs(tmp_path: Path) -> Path:
    return project(tmp_path, golden=False)


def versions_in(root: Path) -> list[str]:
    """The version folders in the hidden folder, by number."""
    found = [name for name in os.listdir(root / ".site.gpumem") if re.fullmatch(r"v\d+", name)]
    return sorted(found, key=lambda name: int(name[1:]))


def shown(root: Path, references: dict[str, dict[str, bytes]]) -> str:
    """Which price the output path shows, after checking it is one whole site and the hidden folder
    holds at most three versions."""
    site = tree(root / "site")
    price = next((price for price in PRICES if references[price] == site), None)
    assert price is not None, sorted(site)[:5]
    assert len(versions_in(root)) <= 3, versions_in(root)
    return price


def settled(root: Path) -> None:
    """At rest: every version recorded, each holding exactly the files its record lists."""
    hidden = root / ".site.gpumem"
    for name in versions_in(root):
        assert sorted(tree(hidden / name)) == sorted(json.loads((hidden / f"{name}.json").read_text())["files"]), name
    assert sorted(os.listdir(root)) == [".site.gpumem", "catalogs", "content", "site"]


def test_a_second_build_into_the_same_output_stops_at_once(inputs):
    go = inputs / "go"
    first = start(inputs, f"wait:locked:{go}")
    lock = inputs / ".site.gpumem/lock"
    deadline = time.monotonic() + 300
    while not (lock.exists() and lock.read_text() == f"{first.pid}\n"):  # the first build holds the lock
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    assert finish(start(inputs)) == (
        1,
        "",
        [
            f"site: another gpumem build (pid {first.pid}) is writing this folder; try again when it ends",
            "1 problem found; nothing was written.",
        ],
    )
    go.touch()
    code, out, err = finish(first)
    assert (code, err) == (0, [])
    assert re.fullmatch(SUMMARY.format(written=74, unchanged=0, removed=0), out)
    assert sorted(os.listdir(inputs / ".site.gpumem")) == ["lock", "v1", "v1.json"]


def test_two_builds_started_together_leave_one_whole_site(inputs, references):
    set_price(inputs, PRICES[0])
    assert finish(start(inputs))[0] == 0
    set_price(inputs, PRICES[1])
    builds = [start(inputs), start(inputs)]
    results = [finish(process) for process in builds]
    for (code, out, err), other in zip(results, reversed(builds), strict=True):
        if code == 0:
            assert err == []  # it wrote the changed pages, or found them written by the other one
            assert re.fullmatch(SUMMARY.format(written=11, unchanged=63, removed=0), out) or re.fullmatch(
                SUMMARY.format(written=0, unchanged=74, removed=0), out
            )
        else:  # it found the other one writing
            assert (code, out) == (1, "")
            assert err == [
                f"site: another gpumem build (pid {other.pid}) is writing this folder; try again when it ends",
                "1 problem found; nothing was written.",
            ]
    assert 0 in [code for code, _, _ in results]
    assert shown(inputs, references) == PRICES[1]
    settled(inputs)


# Each run builds at the other price and is killed at a step; the output path then shows the build
# of `shows` (0: the old price, 1: the new one); the next run says which unfinished version it reused.
KILL_CHAIN = [("kill:locked", 0, False), ("kill:writing", 0, True), ("kill:recorded", 0, False), ("kill:flipped", 1, False)]
REUSED = r"site: reused \.site\.gpumem/v\d+, left unfinished by a build that was stopped"


def test_kill_9_at_every_step_leaves_a_whole_site_and_the_next_build_recovers(inputs, references):
    for price in (*PRICES, PRICES[0]):  # a live version, the one before it and a spare
        set_price(inputs, price)
        assert finish(start(inputs))[0] == 0
    said_before = False
    for hook, shows, leaves_unfinished in KILL_CHAIN:
        before = shown(inputs, references)
        after = PRICES[1 - PRICES.index(before)]
        set_price(inputs, after)
        code, out, err = finish(start(inputs, hook))
        assert (code, out) == (-signal.SIGKILL, ""), hook
        assert len(err) == int(said_before) and all(re.fullmatch(REUSED, line) for line in err), (hook, err)
        assert shown(inputs, references) == (before, after)[shows], hook
        said_before = leaves_unfinished
    set_price(inputs, PRICES[1 - PRICES.index(shown(inputs, references))])
    code, out, err = finish(start(inputs))
    assert (code, err) == (0, [])
    settled(inputs)


# Where to kill: so long after the build's new version folder appeared (it fills it for some tens
# of milliseconds), or after its record appeared (the flip follows within a millisecond).
MOMENTS = [("folder", delay) for delay in (0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08)]
MOMENTS += [("record", delay) for delay in (0, 0, 0.0002, 0.0005, 0.001)]


def unfinished_versions(root: Path) -> bool:
    """Whether the hidden folder holds a version folder without its record (a build killed while writing it)."""
    names = set(os.listdir(root / ".site.gpumem"))
    return any(re.fullmatch(r"v\d+", name) and f"{name}.json" not in names for name in names)


def test_kill_9_at_random_moments_of_the_write_leaves_a_whole_site(large_inputs, large_references):
    for price in (*PRICES, PRICES[0]):
        set_price(large_inputs, price)
        assert finish(start(large_inputs))[0] == 0
    left_unfinished = False  # by the kill before: then, and only then, the next build says it took the version over
    for anchor, delay in MOMENTS:
        before = shown(large_inputs, large_references)
        set_price(large_inputs, PRICES[1 - PRICES.index(before)])
        known = set(os.listdir(large_inputs / ".site.gpumem"))
        process = start(large_inputs)
        deadline = time.monotonic() + 300
        wanted = (lambda name: re.fullmatch(r"v\d+", name)) if anchor == "folder" else (lambda name: re.fullmatch(r"v\d+\.json", name))
        while process.poll() is None and not any(wanted(name) for name in set(os.listdir(large_inputs / ".site.gpumem")) - known):
            assert time.monotonic() < deadline
            time.sleep(0.0002)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        code, out, err = finish(process)
        assert code in (0, -signal.SIGKILL), err
        assert sum(1 for line in err if re.fullmatch(REUSED, line)) == left_unfinished, err
        left_unfinished = unfinished_versions(large_inputs)
        shown(large_inputs, large_references)
    set_price(large_inputs, PRICES[1 - PRICES.index(shown(large_inputs, large_references))])
    code, out, err = finish(start(large_inputs))
    assert code == 0
    assert sum(1 for line in err if re.fullmatch(REUSED, line)) == left_unfinished, err
    settled(large_inputs)


def test_the_earlier_writer_s_folder_stops_on_a_file_it_did_not_write_and_a_kill_while_it_is_moved_is_recovered(inputs, references):
    set_price(inputs, PRICES[0])
    old_layout(inputs / "site", references[PRICES[0]], {"CNAME": b"gpumem.example.org\n"})
    code, out, err = finish(start(inputs, "", "--host", "host"))
    assert (code, out, err) == (
        1,
        "",
        [
            "site/CNAME: not written by gpumem; move it into host/, whose files every build copies into the site",
            "1 problem found; nothing was written.",
        ],
    )
    (inputs / "site/CNAME").unlink()
    set_price(inputs, PRICES[1])
    assert finish(start(inputs, "kill:migrating", "--host", "host"))[0] == -signal.SIGKILL
    assert not os.path.lexists(inputs / "site")  # the one instant without a site, between two renames
    code, out, err = finish(start(inputs, "", "--host", "host"))
    assert (code, len(err)) == (0, 1) and re.fullmatch(REUSED, err[0])
    assert shown(inputs, references) == PRICES[1]
    settled(inputs)
    (inputs / "host").mkdir()
    (inputs / "host/CNAME").write_text("gpumem.example.org\n")  # where the host's own files belong
    code, out, err = finish(start(inputs, "", "--host", "host"))
    assert (code, err) == (0, []) and re.fullmatch(SUMMARY.format(written=1, unchanged=74, removed=0), out)
    assert (inputs / "site/CNAME").read_text() == "gpumem.example.org\n"
