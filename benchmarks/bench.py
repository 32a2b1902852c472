"""Speed and weight of the build and its pages, against the product's budgets.

Usage: .venv/bin/python -m benchmarks.bench [--runs 5]

Works on a copy of the project's catalogs and content in a temporary folder, so the
one-price change never touches the project. Prints every figure and whether each budget
is met; exits 1 when one is not.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpumem.build import Options, build, gather, parallel_jobs, project_options
from gpumem.pages import KINDS

PROJECT = Path(__file__).resolve().parent.parent

BUDGETS = {
    "full build, median (s)": 1.0,
    "no-change rebuild, median (s)": 0.3,
    "page with its CSS and JS, largest (KB)": 40.0,
    "calculator page with its JS and data (KB)": 100.0,
    "methodology page with its CSS (KB)": 100.0,
    "calculator JS and data (KB)": 60.0,
    "calculator recompute (ms)": 5.0,
}
KB = 1000


def timed(options: Options) -> tuple[float, int]:
    """Seconds one build takes (in process) and the files it wrote."""
    started = time.perf_counter()
    result = build(options)
    return time.perf_counter() - started, result.summary.written


def command_seconds(root: Path, out: Path) -> float:
    """Wall-clock seconds of `gpumem build` as a user runs it, interpreter start included."""
    command = [sys.executable, "-m", "gpumem.cli", "--project", str(PROJECT), "build"]
    command += ["--catalogs", str(root / "catalogs"), "--content", str(root / "content")]
    started = time.perf_counter()
    subprocess.run([*command, "--out", str(out)], check=True, capture_output=True)
    return time.perf_counter() - started


def change_one_price(root: Path, run: int) -> None:
    """A newer snapshot where one GPU's lowest price differs from the previous run's."""
    demo = sorted((root / "catalogs/prices").glob("2026-10-31*.yaml"))[0]
    text = demo.read_text().replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-11-07T09:00:00Z")
    newer = root / "catalogs/prices/2026-11-07T09-00Z.yaml"
    newer.write_text(text.replace("price_per_gpu_hour: 2.07,", f"price_per_gpu_hour: {1.80 + run / 100:.2f},"))


@functools.cache
def routes() -> dict[str, dict[str, str]]:
    return gather(project_options(PROJECT)).site.routes


def kind_of(site: Path, page: Path) -> str:
    """The page kind a file belongs to, from its place in the site."""
    parts = page.relative_to(site).parts
    if len(parts) == 1:
        return parts[0].removesuffix(".html")
    lang, rest = parts[0], "/".join(parts[1:-1])
    for key, kind in KINDS.items():
        route = routes()[key][lang]
        if (kind.subjects and rest.rsplit("/", 1)[0] == route) or (not kind.subjects and rest == route):
            return key
    return "other"


def weights(site: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Per page kind, the heaviest page's HTML, CSS, JS and inline JSON: (bytes, gzipped bytes)."""
    found: dict[str, dict[str, tuple[int, int]]] = {}
    kinds = {}
    for page in sorted(site.rglob("*.html")):
        kinds.setdefault(kind_of(site, page), []).append(page)
    for kind, pages in sorted(kinds.items()):
        heaviest = max(pages, key=lambda p: p.stat().st_size)
        html = heaviest.read_bytes()
        text = html.decode()
        css = b"".join((site / p).read_bytes() for p in re.findall(r'<link rel="stylesheet" href="/([^"]+)"', text))
        js = b"".join((site / p).read_bytes() for p in re.findall(r'<script src="/([^"]+)"', text))
        data = "".join(re.findall(r'<script type="application/(?:ld\+)?json"[^>]*>(.*?)</script>', text, re.S)).encode()
        parts = {"HTML": html, "CSS": css, "JS": js, "JSON (inline)": data, "total": html + css + js}
        sizes = {name: (len(body), len(gzip.compress(body, 6)) if body else 0) for name, body in parts.items()}
        found[f"{kind} ({len(pages)} pages)"] = sizes
    return found


def recompute_ms(site: Path) -> float:
    """Median over 5 sets of the calculator's mean recompute time over 100 runs, in Chromium."""
    from playwright.sync_api import sync_playwright

    from gpumem.serve import served

    script = """() => {
        const input = document.querySelector('[name="context"]');
        const start = performance.now();
        for (let i = 0; i < 100; i++) { input.value = String(4096 + i); input.dispatchEvent(new Event("input", {bubbles: true})); }
        return (performance.now() - start) / 100;
    }"""
    with served(site) as origin, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{origin}/en/calculator/?model=llama-3.1-70b")
        runs = [page.evaluate(script) for _ in range(5)]
        browser.close()
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name in ("catalogs", "content"):
            shutil.copytree(PROJECT / name, root / name)
        options = project_options(PROJECT, catalogs=root / "catalogs", content=root / "content", out=root / "site", jobs=parallel_jobs())
        full = []
        for _ in range(args.runs):
            shutil.rmtree(options.out, ignore_errors=True)
            full.append(timed(options))
        again = [timed(options) for _ in range(args.runs)]
        changed = []
        for run in range(args.runs):
            change_one_price(root, run)
            changed.append(timed(options))
        command = []
        for _ in range(args.runs):
            shutil.rmtree(root / "cli-site", ignore_errors=True)
            command.append(command_seconds(root, root / "cli-site"))
        pages = len(list(options.out.rglob("*.html")))
        results["full build, median (s)"] = statistics.median(s for s, _ in full)
        results["no-change rebuild, median (s)"] = statistics.median(s for s, _ in again)
        print(f"pages: {pages} HTML files ({pages - 2} pages in 5 languages, the language choice and 404.html)")
        print(f"full build: median {results['full build, median (s)']:.3f} s over {args.runs} runs, {full[0][1]} files written each")
        print(f"full build as a command (`gpumem build`, interpreter start included): median {statistics.median(command):.3f} s")
        print(f"no-change rebuild: median {results['no-change rebuild, median (s)']:.3f} s, files written {[w for _, w in again]}")
        print(
            f"rebuild after a one-price snapshot change: median {statistics.median(s for s, _ in changed):.3f} s,"
            f" files written {[w for _, w in changed]}"
        )
        print("\npage weight, heaviest page of each kind (bytes / gzip bytes):")
        table = weights(options.out)
        print(f"  {'kind':28} {'HTML':>15} {'CSS':>13} {'JS':>13} {'JSON (inline)':>15} {'total':>15}")
        for kind, parts in table.items():
            cells = "".join(f" {b:>7}/{g:<6}" for b, g in parts.values())
            print(f"  {kind:28}{cells}")
        plain = {kind: parts["total"][0] for kind, parts in table.items()}
        reference = ("calculator", "methodology")
        results["page with its CSS and JS, largest (KB)"] = max(v for k, v in plain.items() if not k.startswith(reference)) / KB
        results["methodology page with its CSS (KB)"] = plain[next(k for k in plain if k.startswith("methodology"))] / KB
        results["calculator page with its JS and data (KB)"] = plain[next(k for k in plain if k.startswith("calculator"))] / KB
        calculator = table[next(k for k in table if k.startswith("calculator"))]
        results["calculator JS and data (KB)"] = (calculator["JS"][0] + calculator["JSON (inline)"][0]) / KB
        results["calculator recompute (ms)"] = recompute_ms(options.out)
        print(f"\ncalculator recompute in Chromium: {results['calculator recompute (ms)']:.3f} ms (mean of 100 runs, median of 5 sets)")
    print("\nbudgets:")
    failed = 0
    for name, limit in BUDGETS.items():
        ok = results[name] <= limit
        failed += not ok
        print(f"  {name:44} {results[name]:8.3f}  (at most {limit:g})  {'ok' if ok else 'OVER BUDGET'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
