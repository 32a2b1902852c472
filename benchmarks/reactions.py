"""Two times the tests once asserted and now leave to bench.py (a test never times: its outcome must not depend
on the machine's load): how soon an open preview page shows a save, and how fast a folder of hundreds of price
snapshots is ordered. Each is measured on a copy of the project's inputs under root and given as a median."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
SAVED = "Three questions"  # the text of content/en/home.md each save changes


def reload_seconds(root: Path, saves: int = 5) -> float:
    """Median seconds from a save of content/en/home.md to the open page in Chromium showing it (`gpumem serve`'s
    watcher, build, event and reload), by the reloaded page's own clock rather than a polling step."""
    from playwright.sync_api import expect, sync_playwright

    command = [sys.executable, "-u", "-m", "gpumem", "--project", str(PROJECT), "serve", "--port", "0"]
    command += ["--catalogs", str(root / "catalogs"), "--content", str(root / "content")]
    home = root / "content/en/home.md"
    original = home.read_text()
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    delays = []
    try:
        assert server.stdout is not None
        serving = next(line for line in server.stdout if line.startswith("serving "))
        server.stdout.readline()  # "watching the sources": the watcher is on
        next(line for line in server.stdout if line.startswith("rebuilt: "))  # the first build, which follows listening
        origin = serving.split(" on ")[1].split(" ")[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(origin + "en/")
            page.wait_for_function("document.readyState === 'complete'")
            for count in range(1, saves + 1):
                home.write_text(original.replace(SAVED, f"{SAVED} ({count} saves)", 1))
                saved = time.time()
                expect(page.locator("main")).to_contain_text(f"{SAVED} ({count} saves)", timeout=90_000)
                loaded = page.evaluate("performance.timeOrigin + performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
                delays.append(loaded / 1000 - saved)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
        home.write_text(original)
    return statistics.median(delays)


def snapshots_ms(root: Path, count: int = 400, runs: int = 5) -> float:
    """Median milliseconds of choosing the snapshot from a prices folder of `count` snapshots, six hours apart."""
    from gpumem.catalog.inputs import choose_snapshot
    from gpumem.catalog.load import snapshot_name
    from gpumem.errors import Problems

    with tempfile.TemporaryDirectory() as scratch:
        catalogs = Path(scratch) / "catalogs"
        shutil.copytree(root / "catalogs", catalogs)
        *older, latest = sorted((catalogs / "prices").glob("*.yaml"))
        for path in older:
            path.unlink()
        text = latest.read_text()
        found = re.search(r"^taken_at: (\S+)$", text, re.MULTILINE)
        assert found is not None, latest
        start = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
        for hours in range(6, 6 * count, 6):
            moment = start - timedelta(hours=hours)
            copy = text.replace(found.group(0), f"taken_at: {moment:%Y-%m-%dT%H:%M:%SZ}", 1)
            (catalogs / "prices" / snapshot_name(moment)).write_text(copy)
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            chosen, others = choose_snapshot(catalogs, None, Problems())
            times.append((time.perf_counter() - began) * 1000)
            assert chosen == latest and len(others) == count - 1
    return statistics.median(times)
