"""The writer under real conditions: a gh-pages worktree, two builds at once, and `kill -9` at
every step of a real `gpumem build` (each in its own process), then the build that recovers."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpumem.build import build
from gpumem.write import MARKER

from .conftest import NOW, SNAPSHOT, edit, options_for
from .project import REPO
from .test_write import snapshot, with_foreign

RUN = [sys.executable, "-m", "gpumem.cli", "--project", str(REPO), "build", "--catalogs", "catalogs", "--content", "content"]
FOREIGN = (".git", "CNAME", ".nojekyll")
SUMMARY = r"337 pages, \d+ rendered; {written} files? written, {unchanged} unchanged, {removed} removed in \d+\.\d\d s\n"


def start(inputs: Path, out: str = "site", hook: str = "") -> subprocess.Popen[str]:
    """`gpumem build` into inputs/out, with the writer's test hook when given."""
    env = {key: value for key, value in os.environ.items() if key != "GPUMEM_WRITE_TEST"}
    if hook:
        env["GPUMEM_WRITE_TEST"] = hook
    return subprocess.Popen([*RUN, "--out", out], cwd=inputs, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, list[str]]:
    """Exit code, stdout, and stderr's lines without the (date-dependent) stale-snapshot warning."""
    out, err = process.communicate(timeout=300)
    return process.returncode, out, [line for line in err.splitlines() if not line.startswith("warning: price snapshot")]


def set_price(inputs: Path, price: str) -> None:
    """The H100 offer the guides quote, at this price."""
    path = inputs / f"catalogs/prices/{SNAPSHOT}"
    text, count = re.subn(r"(machine: m48883, gpu: h100-sxm, gpus: 8, price_per_gpu_hour: )[0-9.]+,", rf"\g<1>{price},", path.read_text())
    assert count == 1
    path.write_text(text)


def own(tree: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in tree.items() if k.split("/")[0] not in FOREIGN}


def foreign_of(tree: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in tree.items() if k.split("/")[0] in FOREIGN}


def whole(site: Path) -> dict[str, object]:
    """The site's own entries, after checking they are exactly what its marker lists, byte for byte."""
    tree = own(snapshot(site))
    listed = json.loads((site / MARKER).read_text())["files"]
    files = {k: v for k, v in tree.items() if isinstance(v, bytes) and k != MARKER}
    assert sorted(files) == sorted(listed)
    assert all(hashlib.sha256(files[k]).hexdigest() == digest for k, digest in listed.items())
    return tree


def beside(inputs: Path) -> list[str]:
    return sorted(name for name in os.listdir(inputs) if name == "site" or name.startswith(".site."))


def staged_elsewhere(inputs: Path) -> dict[str, object]:
    """What the staging folder a journal names holds (a killed build moved foreign entries there)."""
    journal = inputs / ".site.gpumem-journal"
    return snapshot(inputs / json.loads(journal.read_text())["staging"]) if journal.exists() else {}


def test_a_gh_pages_worktree_keeps_its_repository_cname_and_nojekyll(inputs):
    site = inputs / "site"
    site.mkdir()
    with_foreign(site)
    (site / ".git/config").write_text("[core]\n\tbare = false\n")
    (site / ".git/index").write_bytes(b"DIRC\x00\x00\x00\x02")
    kept = snapshot(site)
    assert sorted(kept) == [
        ".git",
        ".git/HEAD",
        ".git/config",
        ".git/index",
        ".git/objects",
        ".git/objects/ab",
        ".git/objects/ab/cdef",
        ".nojekyll",
        "CNAME",
    ]
    first = build(options_for(inputs), now=NOW)
    assert (first.summary.written, first.summary.unchanged, first.summary.removed) == (348, 0, 0)
    edit(inputs / f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 1.87,")
    second = build(options_for(inputs), now=NOW)
    # the pages that show the H100 price: guides, prices, calculator, models, and the GPU pages naming it as nearest
    assert (second.summary.written, second.summary.unchanged, second.summary.removed) == (165, 183, 0)
    assert foreign_of(snapshot(site)) == kept
    code, out, err = finish(start(inputs))  # and as the command, in a process of its own
    assert (code, err) == (0, [])
    assert re.fullmatch(SUMMARY.format(written=0, unchanged=348, removed=0), out)
    assert foreign_of(snapshot(site)) == kept
    assert "H100 from $1.87 per GPU-hour" in " ".join((site / "en/guides/gpu-memory/index.html").read_text().split())
    whole(site)


def test_a_file_gpumem_did_not_write_in_the_way_stops_the_command_and_touches_nothing(inputs):
    assert finish(start(inputs))[0] == 0
    site = inputs / "site"
    marker = json.loads((site / MARKER).read_text())
    del marker["files"]["robots.txt"]  # as if someone else had put it there
    (site / MARKER).write_text(json.dumps(marker))
    (site / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    before = snapshot(site)
    process = subprocess.Popen([*RUN, "--out", "site", "--force"], cwd=inputs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, out, err = finish(process)
    assert (code, out) == (1, "")
    assert err == [
        "site/robots.txt: not written by gpumem (not in .gpumem-site) and not what the build writes there; "
        "refusing to replace it (move it away or delete it)",
        "1 problem found; nothing was written.",
    ]
    assert snapshot(site) == before


def test_a_second_build_into_the_same_folder_stops_at_once(inputs):
    go = inputs / "go"
    first = start(inputs, hook=f"wait:locked:{go}")
    lock = inputs / ".site.gpumem-lock"
    deadline = time.monotonic() + 120
    while not (lock.exists() and lock.read_text() == f"{first.pid}\n"):  # the first build holds the lock
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    # The first holds the lock until `go` exists, made below: a second build that waited for it would
    # never end, and finish()'s timeout would say so.
    code, out, err = finish(start(inputs))
    assert (code, out) == (1, "")
    assert err == [
        f"site: another gpumem build (pid {first.pid}) is writing this folder; try again when it ends",
        "1 problem found; nothing was written.",
    ]
    go.touch()
    code, out, err = finish(first)
    assert (code, err) == (0, [])
    assert re.fullmatch(SUMMARY.format(written=348, unchanged=0, removed=0), out)
    whole(inputs / "site")
    assert beside(inputs) == [".site.gpumem-lock", "site"]


def test_two_builds_started_together_leave_one_whole_site(inputs):
    code, _, _ = finish(start(inputs))
    assert code == 0
    set_price(inputs, "1.87")
    builds = [start(inputs), start(inputs)]
    results = [finish(process) for process in builds]
    for (code, out, err), other in zip(results, reversed(builds), strict=True):
        if code == 0:
            assert err == []  # it rewrote the changed pages, or found them written by the other one
            assert re.fullmatch(SUMMARY.format(written=165, unchanged=183, removed=0), out) or re.fullmatch(
                SUMMARY.format(written=0, unchanged=348, removed=0), out
            )
        else:  # it found the other one writing
            assert (code, out) == (1, "")
            assert err == [
                f"site: another gpumem build (pid {other.pid}) is writing this folder; try again when it ends",
                "1 problem found; nothing was written.",
            ]
    assert 0 in [code for code, _, _ in results]
    assert "H100 from $1.87 per GPU-hour" in " ".join((inputs / "site/en/guides/gpu-memory/index.html").read_text().split())
    whole(inputs / "site")


def reference_trees(inputs: Path) -> dict[str, dict[str, object]]:
    """The site as the command builds it at the old price (2.07) and at the new one (1.87)."""
    trees = {}
    for price, name in (("2.07", "old"), ("1.87", "new")):
        set_price(inputs, price)
        code, _, _ = finish(start(inputs, out=f"reference-{name}"))
        assert code == 0
        trees[price] = whole(inputs / f"reference-{name}")
    assert trees["2.07"] != trees["1.87"]
    return trees


# Each run builds at `price` and is killed at `step` (or runs to its end); the site then shows the
# build at `shows` (None: missing, the instant between two renames); `said` is what that run says
# it recovered from the run before it.
KILL_CHAIN = [
    ("1.87", "kill:locked", "2.07", None),
    ("1.87", "kill:staged", "2.07", None),
    (
        "1.87",
        "kill:journal",
        "2.07",
        "site: a build was killed while it prepared the new site; removed its unfinished copy {staging} (the site was untouched)",
    ),
    ("1.87", "kill:moving", "2.07", "site: a build was killed before it swapped in the new site; kept the previous site"),
    (
        "1.87",
        "kill:swapped",
        "1.87",
        "site: a build was killed before it swapped in the new site; kept the previous site; put back .git, not written by gpumem",
    ),
    ("2.07", "kill:recovering", "1.87", None),  # killed while finishing the swap of the run before: still the new site
    ("2.07", "kill:finished", "2.07", "site: a build was killed just after it swapped in the new site; finished it"),
    ("1.87", "no-exchange,kill:fallback", None, "site: a build was killed just after it swapped in the new site; finished it"),
    ("1.87", "", "1.87", "site: a build was killed between its two renames, while the folder was missing; put the new site there"),
]


def test_kill_9_at_every_step_leaves_a_whole_site_and_the_next_build_recovers(inputs):
    trees = reference_trees(inputs)
    set_price(inputs, "2.07")
    site = inputs / "site"
    site.mkdir()
    with_foreign(site)
    kept = snapshot(site)
    assert finish(start(inputs))[0] == 0
    staging = ""
    for price, hook, shows, said in KILL_CHAIN:
        set_price(inputs, price)
        code, out, err = finish(start(inputs, hook=hook))
        assert err == ([said.format(staging=staging)] if said else []), hook
        if hook:
            assert (code, out) == (-signal.SIGKILL, ""), hook
        else:
            assert code == 0
            assert re.fullmatch(SUMMARY.format(written=0, unchanged=348, removed=0), out)
        if shows is None:
            assert not site.exists(), hook
        else:
            left = snapshot(site)
            assert own(left) == trees[shows], hook
            elsewhere = staged_elsewhere(inputs)
            away = sorted(k for k in kept if k not in left)
            assert away == ([".git", ".git/HEAD", ".git/objects", ".git/objects/ab", ".git/objects/ab/cdef"] if "moving" in hook else []), (
                hook
            )
            assert all(left.get(k, elsewhere.get(k)) == v for k, v in kept.items()), hook
        staging = next((name for name in os.listdir(inputs) if name.startswith(".site.gpumem-new.")), "")
    assert foreign_of(snapshot(site)) == kept
    assert whole(site) == trees["1.87"]
    assert beside(inputs) == [".site.gpumem-lock", ".site.gpumem-old", "site"]


def reached(inputs: Path, process: subprocess.Popen[str], anchor: str) -> bool:
    """Whether this build has made its staging folder ("staging") or written its journal ("journal")."""
    if anchor == "staging":
        return any(name.startswith(f".site.gpumem-new.{process.pid}-") for name in os.listdir(inputs))
    try:  # a journal a killed build left names that build's staging folder, not this one's
        return f".{process.pid}-" in json.loads((inputs / ".site.gpumem-journal").read_text())["staging"]
    except (OSError, ValueError):
        return False


# Where to kill: so long after the build made its staging folder (it then fills it for a few tenths
# of a second), or after it wrote its journal (moves and swap then take about a millisecond).
MOMENTS = [("staging", delay) for delay in (0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.25)]
MOMENTS += [("journal", delay) for delay in (0, 0, 0.0002, 0.0005, 0.001, 0.002)]


def test_kill_9_at_random_moments_of_the_write_leaves_a_whole_site(inputs):
    trees = reference_trees(inputs)
    set_price(inputs, "2.07")
    site = inputs / "site"
    site.mkdir()
    with_foreign(site)
    kept = snapshot(site)
    assert finish(start(inputs))[0] == 0
    shows, recovered = "2.07", 0
    for anchor, delay in MOMENTS:
        price = "1.87" if shows == "2.07" else "2.07"
        set_price(inputs, price)
        process = start(inputs)
        deadline = time.monotonic() + 120
        while process.poll() is None and not reached(inputs, process, anchor):
            assert time.monotonic() < deadline
            time.sleep(0.0002)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        code, out, err = finish(process)
        assert code in (0, -signal.SIGKILL), err
        recovered += len(err)  # what this run said it recovered from the kill before it
        left = snapshot(site)
        assert own(left) in (trees["2.07"], trees["1.87"]), (anchor, delay)
        elsewhere = staged_elsewhere(inputs)
        assert all(left.get(k, elsewhere.get(k)) == v for k, v in kept.items()), (anchor, delay)
        shows = "2.07" if own(left) == trees["2.07"] else "1.87"
    code, out, err = finish(start(inputs))
    assert code == 0
    recovered += len(err)
    assert recovered >= 3  # kills landed inside the writer, and the next build recovered and said so
    assert foreign_of(snapshot(site)) == kept
    assert whole(site) == trees[price]
    assert beside(inputs) == [".site.gpumem-lock", ".site.gpumem-old", "site"]


def test_a_build_killed_while_it_clears_the_previous_copy_leaves_one_the_next_build_clears(inputs):
    """The set-aside tree loses its marker last: killed halfway, it still says which files are gpumem's."""
    trees = reference_trees(inputs)
    site = inputs / "site"
    site.mkdir()
    with_foreign(site)
    kept = snapshot(site)
    for price in ("2.07", "1.87"):  # the second build sets the first one's tree aside
        set_price(inputs, price)
        assert finish(start(inputs))[0] == 0
    old = inputs / ".site.gpumem-old"
    assert (old / MARKER).is_file()
    set_price(inputs, "2.07")
    code, out, err = finish(start(inputs, hook="kill:discarding"))
    assert (code, out, err) == (-signal.SIGKILL, "", [])
    assert (old / MARKER).is_file() and len(list(old.rglob("*"))) > 1  # halfway, marker kept
    code, out, err = finish(start(inputs))
    assert code == 0, err
    assert [re.sub(r"gpumem-new\.\d+-[0-9a-f]{8}", "gpumem-new.N", line) for line in err] == [
        "site: a build was killed while it prepared the new site; removed its unfinished copy .site.gpumem-new.N (the site was untouched)"
    ]
    assert own(snapshot(site)) == trees["2.07"] and foreign_of(snapshot(site)) == kept
    assert beside(inputs) == [".site.gpumem-lock", ".site.gpumem-old", "site"]
