"""Speed and weight of the build and its pages, against the product's budgets.

Usage: .venv/bin/python -m benchmarks.bench [--runs 5] [--no-browser] [--scale]

Every time is a whole command as a user runs it (interpreter start included), median of --runs,
on a copy of the project's catalogs and content in a temporary folder, so no change touches
the project: a full build into an empty output with Jinja's compiled templates kept (the one
cache across runs besides the no-change check; the first build on a machine, with an empty cache,
is printed apart), a no-change rebuild, one content file edited, a one-price snapshot (each
rebuild with the cache the earlier builds left), and a catalog ten times larger (the same two
ways; its per-page cost printed).
The preview (`gpumem serve`, which keeps its state in its process) is timed on an edit of one
content file: from the save to the preview's report that its build is done ("content edit"), and
to the edited page fetched back with its new words ("preview reload"), with the project's
catalog and with the one ten times larger. Each time is printed with the CPU time it took (user +
system, the renderers it forked included), steadier than wall time on a shared machine, and the
load average when it ran. When Hugo is installed (Debian's `hugo`), a synthetic Hugo site of 300
simple pages is built in the same run and the ratio printed. Then the pages' weights, the
calculator's recompute time, and (reactions.py) how soon an open page in Chromium shows a save and
how fast 400 snapshots are ordered. With --scale, the catalog at 1, 10 and 70 times its size
(1,960 models, about 10,000 pages) is built cold (at most 3 runs each, medians), each with its peak
memory (the build and the renderer it forked) and cost per page, and the calculator page weighed at
70 times. Prints every figure and whether each budget is met; exits 1 when one is not.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.preview import preview_times
from gpumem.commands.build import gather
from gpumem.options import project_options
from gpumem.pages.routes import KINDS

from .reactions import reload_seconds, snapshots_ms

PROJECT = Path(__file__).resolve().parent.parent

BUDGETS = {
    "full build / Hugo's 300 pages (ratio)": 2.0,
    "full build, median (s)": 1.5,
    "catalog x10, full build, median (s)": 5.0,
    "one-price snapshot, median (s)": 1.5,
    "preview: content edit, median (s)": 0.25,
    "no-change rebuild, median (s)": 0.10,
    "preview reload, median (s)": 0.3,
    "preview reload, catalog x10, median (s)": 0.3,
    "page with its CSS and JS, largest (KB)": 40.0,
    "calculator page with its JS and data (KB)": 100.0,
    "methodology page with its CSS (KB)": 100.0,
    "sources page with its CSS (KB)": 100.0,
    "calculator JS and data (KB)": 60.0,
    "calculator page with its JS and data, catalog x70 (KB)": 100.0,
    "calculator JS and data, catalog x70 (KB)": 60.0,
    "calculator recompute (ms)": 5.0,
    "preview reload in Chromium after a save, median (s)": 0.3,
    "400 snapshots ordered, median (ms)": 100.0,
}
KB = 1000


Timed = tuple[float, str, float, float]  # wall seconds, what the command printed, CPU seconds, load average


@dataclass(frozen=True)
class Usage:
    """One `gpumem build`: wall seconds, what it printed, CPU seconds, the load as it ended, peak memory."""

    wall: float
    said: str
    cpu: float
    load: float
    peak_kb: int  # the largest resident set of the build and of the renderer it forked (their own wait4 figure)


def build_usage(root: Path, out: Path, cache: Path) -> Usage:
    """`gpumem build` as a user runs it, interpreter start included, with `cache` as its cache folder
    (GPUMEM_CACHE): its times (the renderers it forked included) and its peak resident memory."""
    command = [sys.executable, "-m", "gpumem", "--project", str(PROJECT), "build"]
    command += ["--catalogs", str(root / "catalogs"), "--content", str(root / "content"), "--out", str(out)]
    env = {**os.environ, "GPUMEM_CACHE": str(cache)}
    started = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env) as process:
        said = process.stdout.read() if process.stdout else ""
        _, status, usage = os.wait4(process.pid, 0)  # the child's own figures, its waited-for renderers' included
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command, said)
    return Usage(wall, said.strip(), usage.ru_utime + usage.ru_stime, os.getloadavg()[0], usage.ru_maxrss)


def command_seconds(root: Path, out: Path, cache: Path) -> Timed:
    """Wall-clock seconds of `gpumem build` (build_usage), what it printed, its CPU seconds and the
    1-minute load average as it ended."""
    used = build_usage(root, out, cache)
    return used.wall, used.said, used.cpu, used.load


def remove_output(out: Path) -> None:
    """The output path (a link to the site's current version) and gpumem's hidden folder beside it."""
    if out.is_symlink():
        out.unlink()
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out.parent / f".{out.name}.gpumem", ignore_errors=True)


def median_of(runs: int, once: Callable[[int], Timed]) -> tuple[float, list[str], float, list[float]]:
    """The median seconds of `runs` calls, what each printed, the median CPU seconds and each run's load."""
    results = [once(run) for run in range(runs)]
    return (
        statistics.median(r[0] for r in results),
        [r[1] for r in results],
        statistics.median(r[2] for r in results),
        [r[3] for r in results],
    )


def timing(wall: float, cpu: float, loads: list[float]) -> str:
    """A median with its CPU time and the load averages it was measured under."""
    return f"median {wall:.3f} s, CPU {cpu:.3f} s (load {', '.join(f'{load:.1f}' for load in loads)})"


def grow_catalog(root: Path, times: int) -> None:
    """The models catalog repeated `times` over, each copy under ids and names of its own."""
    path = root / "catalogs/models.yaml"
    text = path.read_text()
    head, _, body = text.partition("\nmodels:\n")
    copies = [body]
    for n in range(2, times + 1):
        copy = re.sub(r"^  - id: (\S+)$", rf"  - id: \1-copy{n}", body, flags=re.MULTILINE)
        copies.append(re.sub(r'^    name: "([^"]+)"$', rf'    name: "\1 (copy {n})"', copy, flags=re.MULTILINE))
    path.write_text(head + "\nmodels:\n" + "".join(c if c.endswith("\n") else c + "\n" for c in copies))


def hugo_seconds(runs: int, pages: int = 300) -> float | None:
    """Median seconds of `hugo` building a synthetic site of simple pages, or None without Hugo."""
    hugo = shutil.which("hugo")
    if hugo is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch)
        (site / "layouts/_default").mkdir(parents=True)
        (site / "content/posts").mkdir(parents=True)
        config = 'baseURL = "https://example.org/"\ntitle = "bench"\ndisableKinds = ["RSS", "taxonomy", "term"]\n'
        (site / "config.toml").write_text(config)
        layout = "<!doctype html><html><head><title>{{ .Title }}</title></head><body><main>{{ .Content }}</main></body></html>\n"
        (site / "layouts/_default/single.html").write_text(layout)
        listing = '{{ range .Pages }}<a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}'
        (site / "layouts/_default/list.html").write_text(layout.replace("{{ .Content }}", listing))
        for n in range(pages):
            (site / f"content/posts/p{n}.md").write_text(
                f"---\ntitle: Page {n}\n---\n\n## Section\n\n" + "A paragraph of text. " * 40 + "\n"
            )
        times = []
        for _ in range(runs):
            shutil.rmtree(site / "public", ignore_errors=True)
            started = time.perf_counter()
            subprocess.run([hugo, "--quiet", "-s", str(site)], check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        return statistics.median(times)


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
        route = routes()[kind.index_of or key][lang]
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

    from gpumem.commands.serve import served

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
        page.wait_for_function("!document.getElementById('calc-results').hasAttribute('aria-busy')")  # its preset came
        runs = [page.evaluate(script) for _ in range(5)]
        browser.close()
    return statistics.median(runs)


def build_times(args: argparse.Namespace, root: Path, results: dict[str, float]) -> int:
    """The build commands' times on the project's catalog (root); the number of pages built."""
    site, cache = root / "site", root / "cache"

    def warm(run: int) -> Timed:
        remove_output(site)
        return command_seconds(root, site, cache)

    home = root / "content/en/home.md"
    original = home.read_text()

    def edit_content(run: int) -> Timed:
        home.write_text(original.replace("Three questions", f"Three questions ({run + 1})", 1))
        return command_seconds(root, site, cache)

    def one_price(run: int) -> Timed:
        change_one_price(root, run)
        return command_seconds(root, site, cache)

    wall, said, cpu, loads = median_of(args.runs, cold(root))
    print(f"first build on a machine, into an empty folder with an empty cache: {timing(wall, cpu, loads)} ({said[0]})")
    command_seconds(root, site, cache)  # the cache the next builds keep
    wall, said, cpu, loads = median_of(args.runs, warm)
    results["full build, median (s)"] = wall
    print(f"full build into an empty folder, Jinja's compiled templates kept: {timing(wall, cpu, loads)} ({said[0]})")
    wall, said, cpu, loads = median_of(args.runs, lambda run: command_seconds(root, site, cache))
    results["no-change rebuild, median (s)"] = wall
    print(f"no-change rebuild: {timing(wall, cpu, loads)} ({said[0]})")
    wall, said, cpu, loads = median_of(args.runs, edit_content)
    print(f"one content file edited, gpumem build: {timing(wall, cpu, loads)} ({said[0]})")
    home.write_text(original)
    wall, said, cpu, loads = median_of(args.runs, one_price)
    results["one-price snapshot, median (s)"] = wall
    print(f"one-price snapshot (a newer snapshot, the H100 SXM's lowest price changed): {timing(wall, cpu, loads)}")
    print("".join(f"  run {run + 1}: {line}\n" for run, line in enumerate(said)), end="")
    (root / "catalogs/prices/2026-11-07T09-00Z.yaml").unlink()
    return len(list(site.rglob("*.html")))


def warm_build(tree: Path) -> Callable[[int], Timed]:
    """A build into an empty output with the compiled templates an earlier build left (cold's)."""

    def once(run: int) -> Timed:
        remove_output(tree / "site")
        return command_seconds(tree, tree / "site", tree / "fresh-cache")

    return once


def cold(tree: Path) -> Callable[[int], Timed]:
    """A build into an empty output with an empty cache: nothing compiled, computed or kept."""

    def once(run: int) -> Timed:
        remove_output(tree / "site")
        shutil.rmtree(tree / "fresh-cache", ignore_errors=True)
        return command_seconds(tree, tree / "site", tree / "fresh-cache")

    return once


def preview(root: Path, runs: int, label: str, results: dict[str, float], key: str) -> None:
    """The preview's content edit and reload on root's catalog, printed and recorded under `key`."""
    times = preview_times(PROJECT, root, runs)
    built, reloaded, cpu = times.medians
    loads = ", ".join(f"{load:.1f}" for load in times.loads)
    print(f"preview{label}, one content file edited: built {built:.3f} s, page reloaded {reloaded:.3f} s (medians)", end="")
    print(f", CPU {cpu:.3f} s (load {loads})")
    results[f"preview reload{key}, median (s)"] = reloaded
    if not key:
        results["preview: content edit, median (s)"] = built


def page_weights(site: Path, results: dict[str, float], browser: bool) -> None:
    """The heaviest page of each kind, with its CSS and JS; the calculator's recompute time in Chromium."""
    print("\npage weight, heaviest page of each kind (bytes / gzip bytes):")
    table = weights(site)
    print(f"  {'kind':28} {'HTML':>15} {'CSS':>13} {'JS':>13} {'JSON (inline)':>15} {'total':>15}")
    for kind, parts in table.items():
        cells = "".join(f" {b:>7}/{g:<6}" for b, g in parts.values())
        print(f"  {kind:28}{cells}")
    plain = {kind: parts["total"][0] for kind, parts in table.items()}
    reference = ("calculator", "methodology", "sources")
    results["page with its CSS and JS, largest (KB)"] = max(v for k, v in plain.items() if not k.startswith(reference)) / KB
    results["methodology page with its CSS (KB)"] = plain[next(k for k in plain if k.startswith("methodology"))] / KB
    results["sources page with its CSS (KB)"] = plain[next(k for k in plain if k.startswith("sources"))] / KB
    results["calculator page with its JS and data (KB)"] = plain[next(k for k in plain if k.startswith("calculator"))] / KB
    calculator = table[next(k for k in table if k.startswith("calculator"))]
    results["calculator JS and data (KB)"] = (calculator["JS"][0] + calculator["JSON (inline)"][0]) / KB
    print(f"  calculator, {preset_weights(site)}")
    if browser:
        results["calculator recompute (ms)"] = recompute_ms(site)
        print(f"\ncalculator recompute in Chromium: {results['calculator recompute (ms)']:.3f} ms (mean of 100 runs, median of 5 sets)")
        reload = results["preview reload in Chromium after a save, median (s)"] = reload_seconds(site.parent)
        print(f"gpumem serve: an open page shows a save {reload:.3f} s after it (median of 5)")
    results["400 snapshots ordered, median (ms)"] = snapshots_ms(site.parent)
    print(f"a prices folder of 400 snapshots ordered in {results['400 snapshots ordered, median (ms)']:.1f} ms (median of 5)")


SCALES = (1, 10, 70)  # the catalog's models repeated this many times: 28, 280 and 1,960 models


def scale_cases(root: Path, runs: int, results: dict[str, float]) -> None:
    """Cold builds of the catalog at each of SCALES (medians of `runs`), with peak memory and cost per page, then the
    calculator page's weight at the largest: time and memory should grow with the pages, the calculator's weight not."""
    print("\ncatalog scale, full build into an empty folder, empty cache:")
    first: tuple[float, int] | None = None
    for times in SCALES:
        with tempfile.TemporaryDirectory() as scratch:
            tree = Path(scratch)
            for name in ("catalogs", "content"):
                shutil.copytree(root / name, tree / name)
            grow_catalog(tree, times)
            used = [cold_usage(tree) for _ in range(runs)]
            wall, cpu = statistics.median(u.wall for u in used), statistics.median(u.cpu for u in used)
            peak = max(u.peak_kb for u in used) / 1024
            pages = len(list((tree / "site").rglob("*.html")))
            models = len(re.findall(r"^  - id: ", (tree / "catalogs/models.yaml").read_text(), re.M))
            extra = f", {(wall - first[0]) / (pages - first[1]) * 1000:.2f} ms per extra page" if first else ""
            label = f"catalog x{times} ({models:,} models)"
            print(f"  {label}: {pages:,} pages, {timing(wall, cpu, [u.load for u in used])}, peak RSS {peak:,.0f} MB")
            print(f"    {wall / pages * 1000:.2f} ms and {peak * 1024 / pages:.0f} KB peak per page{extra}")
            first = first or (wall, pages)
            if times == SCALES[-1]:
                calculator = weights(tree / "site")
                parts = calculator[next(k for k in calculator if k.startswith("calculator"))]
                results[f"calculator page with its JS and data, catalog x{times} (KB)"] = parts["total"][0] / KB
                results[f"calculator JS and data, catalog x{times} (KB)"] = (parts["JS"][0] + parts["JSON (inline)"][0]) / KB
                fetched = preset_weights(tree / "site")
                print(f"    {label}, calculator page: {parts['total'][0] / KB:.1f} KB with its JS and data; {fetched}")


def cold_usage(tree: Path) -> Usage:
    """A build of tree into an empty output with an empty cache (as cold), with its peak memory."""
    remove_output(tree / "site")
    shutil.rmtree(tree / "fresh-cache", ignore_errors=True)
    return build_usage(tree, tree / "site", tree / "fresh-cache")


def preset_weights(site: Path) -> str:
    """What the calculator fetches on demand: the preset list (as the page starts) and the largest preset (when chosen)."""
    listed = next(p for p in (site / "assets").glob("presets.*.json"))
    files = [p.stat().st_size for p in (site / "assets" / listed.stem).iterdir()]
    body = listed.read_bytes()
    return (
        f"fetched: the preset list {len(body) / KB:.1f} KB ({len(gzip.compress(body, 6)) / KB:.1f} KB gzipped), "
        f"{len(files):,} preset files of at most {max(files):,} bytes"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="Leave out the calculator's recompute time in Chromium.")
    parser.add_argument("--scale", action="store_true", help="Also build the catalog at 1, 10 and 70 times its size (some 3 minutes).")
    args = parser.parse_args()
    results: dict[str, float] = {}
    # The package as installed (scripts/setup): its bytecode compiled, even where Python writes none.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(PROJECT / "generator")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name in ("catalogs", "content"):
            shutil.copytree(PROJECT / name, root / name)
        pages = build_times(args, root, results)
        preview(root, args.runs, "", results, "")
        hugo = hugo_seconds(args.runs)
        if hugo is not None:
            ratio = results["full build / Hugo's 300 pages (ratio)"] = results["full build, median (s)"] / hugo
            print(f"Hugo, 300 simple pages, same run: median {hugo:.3f} s; gpumem's full build takes {ratio:.2f} times as long")
        else:
            print("Hugo is not installed (apt-get install hugo): no ratio")
        with tempfile.TemporaryDirectory() as larger:
            big = Path(larger)
            for name in ("catalogs", "content"):
                shutil.copytree(root / name, big / name)
            grow_catalog(big, 10)
            wall, _, cpu, loads = median_of(args.runs, cold(big))
            print(f"catalog x10, first build into an empty folder with an empty cache: {timing(wall, cpu, loads)}")
            wall, _, cpu, loads = median_of(args.runs, warm_build(big))
            results["catalog x10, full build, median (s)"] = wall
            big_pages = len(list((big / "site").rglob("*.html")))
            per_page = (wall - results["full build, median (s)"]) / (big_pages - pages)
            print(f"catalog x10 ({big_pages} pages), full build: {timing(wall, cpu, loads)}; {per_page * 1000:.2f} ms per extra page")
            preview(big, args.runs, ", catalog x10", results, ", catalog x10")
        page_weights(root / "site", results, not args.no_browser)
        if args.scale:
            scale_cases(root, min(args.runs, 3), results)
    print("\nbudgets:")
    failed = 0
    for name, limit in BUDGETS.items():
        if name not in results:
            print(f"  {name:44} not measured")
            continue
        ok = results[name] <= limit
        failed += not ok
        print(f"  {name:44} {results[name]:8.3f}  (at most {limit:g})  {'ok' if ok else 'OVER BUDGET'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
