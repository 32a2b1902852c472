"""Regenerating on price updates: import an export, diff two snapshots, rebuild only what changed."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import build, gather
from gpumem.commands.prices import import_export
from gpumem.commands.prices_diff import diff
from gpumem.errors import BuildError

from .conftest import NOW, SNAPSHOT, options_for
from .project import REPO, published

HEADER = "machine_id,gpu,gpus,price_per_gpu_hour,country,form_factor,interconnect\n"
# A clock after the snapshots these tests import (2026-11-07 and -08): no snapshot may be in the future.
LATER = datetime(2026, 11, 9, tzinfo=UTC)


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(inputs)
    return inputs


def prices(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "catalogs/prices").iterdir())}


def test_csv_import_maps_aliases_and_writes_a_valid_snapshot(root):
    # m-3 leaves its optional cells empty; it still has one cell per column (a short row is an error).
    (root / "export.csv").write_text(HEADER + "m-2,RTX 4090,2,0.41,DE,PCIe,PCIe\nm-1,H100 SXM,8,1.99,US,SXM,NVLink\nm-3,l40s,1,0.52,FR,,\n")
    target = import_export(root / "export.csv", root / "catalogs", None, "2026-11-07T09:00:00Z", "USD")
    assert target == root / "catalogs/prices/2026-11-07T09-00Z.yaml"
    assert target.read_text() == (
        "# Price snapshot: the marketplace's offers at one moment, written by gpumem prices import.\n"
        "taken_at: 2026-11-07T09:00:00Z\n"
        "currency: USD\n"
        'source: "Imported from export.csv by gpumem prices import"\n'
        "offers:\n"
        '  - {machine: "m-1", gpu: h100-sxm, gpus: 8, price_per_gpu_hour: 1.99, country: "US", form_factor: "SXM", interconnect: "NVLink"}\n'
        '  - {machine: "m-2", gpu: rtx-4090, gpus: 2, price_per_gpu_hour: 0.41, country: "DE", form_factor: "PCIe", interconnect: "PCIe"}\n'
        '  - {machine: "m-3", gpu: l40s, gpus: 1, price_per_gpu_hour: 0.52, country: "FR", form_factor: "unknown", interconnect: "unknown"}\n'
    )
    catalog = load_catalog(root / "catalogs")
    assert catalog.snapshot.name == "2026-11-07T09-00Z"
    assert catalog.snapshot.gpu_count == 11
    assert catalog.earlier_snapshots == ("2026-10-31T16-52Z",)


def test_json_import_takes_the_files_own_time(root):
    offers = [{"machine_id": "x1", "gpu": "H200", "gpus": 8, "price_per_gpu_hour": 3.1, "country": "NL"}]
    (root / "export.json").write_text(json.dumps({"taken_at": "2026-11-08T10:30:15Z", "offers": offers}))
    target = import_export(root / "export.json", root / "catalogs", None, None, "USD")
    assert target.name == "2026-11-08T10-30-15Z.yaml"
    assert load_catalog(root / "catalogs").snapshot.offers[0].gpu == "h200-sxm"


def test_bad_rows_are_all_reported_and_nothing_is_written(root):
    before = prices(root)
    (root / "export.csv").write_text(
        HEADER + "a1,H100 SXM,8,1.95,US,SXM,NVLink\na2,H900,1,1.0,US,SXM,NVLink\na3,L40S,0,0.5,US,PCIe,PCIe\n"
        "a4,L40S,1,-0.5,US,PCIe,PCIe\na1,L40S,1,0.5,US,PCIe,PCIe\na5,L40S,two,0.5,US,PCIe,PCIe\n"
    )
    with pytest.raises(BuildError) as raised:
        import_export(root / "export.csv", root / "catalogs", "csv", "2026-11-07T09:00:00Z", "USD")
    assert raised.value.lines == [
        f"{root / 'export.csv'}:3: a2: gpu: unknown GPU 'H900' (not a catalog id or alias in gpus.yaml)",
        f"{root / 'export.csv'}:4: a3: gpus: expected a positive integer, got '0'",
        f"{root / 'export.csv'}:5: a4: price_per_gpu_hour: expected a positive number, got '-0.5'",
        f"{root / 'export.csv'}:6: a1: machine_id: duplicate machine id (first on line 2)",
        f"{root / 'export.csv'}:7: a5: gpus: expected a positive integer, got 'two'",
    ]
    assert prices(root) == before


def test_missing_column_and_missing_time(root):
    (root / "no-price.csv").write_text("machine_id,gpu,gpus,country\na1,H100 SXM,8,US\n")
    with pytest.raises(BuildError) as raised:
        import_export(root / "no-price.csv", root / "catalogs", None, "2026-11-07T09:00:00Z", "USD")
    assert raised.value.lines == [f"{root / 'no-price.csv'}:1: header: missing column price_per_gpu_hour"]
    (root / "no-time.json").write_text(
        json.dumps([{"machine_id": "x", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 6, "country": "US"}])
    )
    with pytest.raises(BuildError) as raised:
        import_export(root / "no-time.json", root / "catalogs", None, None, "USD")
    assert raised.value.lines == [
        f"{root / 'no-time.json'}: taken_at: the export has no taken_at field; pass --taken-at, e.g. --taken-at 2026-11-07T09:00:00Z"
    ]


def test_json_rows_missing_a_key_are_named(root):
    (root / "e.json").write_text(json.dumps([{"machine_id": "x", "gpu": "B200", "gpus": 8, "country": "US"}]))
    with pytest.raises(BuildError) as raised:
        import_export(root / "e.json", root / "catalogs", None, "2026-11-07T09:00:00Z", "USD")
    assert raised.value.lines == [f"{root / 'e.json'}: row 1: x: price_per_gpu_hour: missing column"]


def test_cli_import_exit_codes(root):
    (root / "bad.csv").write_text(HEADER + "a1,H900,8,1.95,US,SXM,NVLink\n")
    run = [
        sys.executable,
        "-m",
        "gpumem.cli.main",
        "--project",
        str(REPO),
        "prices",
        "import",
        "--catalogs",
        "catalogs",
        "--taken-at",
        "2026-11-07T09:00:00Z",
    ]
    failed = subprocess.run([*run, "bad.csv"], cwd=root, capture_output=True, text=True)
    assert failed.returncode == 1
    assert (
        failed.stderr
        == "bad.csv:2: a1: gpu: unknown GPU 'H900' (not a catalog id or alias in gpus.yaml)\n1 problem found; nothing was written.\n"
    )
    (root / "good.csv").write_text(HEADER + "a1,H100 SXM,8,1.95,US,SXM,NVLink\n")
    done = subprocess.run([*run, "good.csv"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == "wrote catalogs/prices/2026-11-07T09-00Z.yaml\n"


def one_price_changed(root: Path) -> Path:
    """The demo snapshot taken a week later with the cheapest H100 at $1.87 instead of $2.07."""
    text = (root / "catalogs/prices" / SNAPSHOT).read_text()
    newer = root / "catalogs/prices/2026-11-07T09-00Z.yaml"
    newer.write_text(
        text.replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-11-07T09:00:00Z").replace(
            "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 1.87,"
        )
    )
    return newer


def test_diff_names_prices_and_cells_that_change(root):
    old = root / "catalogs/prices" / SNAPSHOT
    report = diff(old, one_price_changed(root), root / "catalogs").splitlines()
    assert report[:5] == [
        "2026-10-31T16-52Z → 2026-11-07T09-00Z",
        "Lowest price per GPU-hour (1 changed):",
        "  H100: $2.07 → $1.87",
        "GPUs that appear: none",
        "GPUs that vanish: none",
    ]
    assert report[5] == "Guide-table cells that change (70):"
    assert (
        "  /en/guides/gpu-memory/ | serving 32B (Qwen2.5 32B (Instruct)) | bf16: 1 × H100/A100 80GB $2.07/h → 1 × H100/A100 80GB $1.87/h"
        in report
    )
    assert all(" → " in line for line in report[6:76]) and len(report) == 6 + 70 + 1
    # No deployment row's configuration is an H100: no cost per million tokens changes
    assert (
        report[76]
        == "Cost per million output tokens at 16 requests of 1,000 prompt and 500 output tokens, a roofline estimate (0 changed):"
    )


def test_diff_lists_gpus_that_appear_and_vanish(root):
    old = root / "catalogs/prices" / SNAPSHOT
    text = old.read_text()
    lines = [line for line in text.splitlines() if "gpu: b200," not in line]
    lines.append(
        '  - {machine: m1, gpu: mi300x, gpus: 8, price_per_gpu_hour: 2.5, country: "US", form_factor: OAM, interconnect: Infinity Fabric}'
    )
    newer = root / "catalogs/prices/2026-11-07T09-00Z.yaml"
    newer.write_text("\n".join(lines).replace("2026-10-31T16:52:00Z", "2026-11-07T09:00:00Z") + "\n")
    report = diff(old, newer, root / "catalogs").splitlines()
    assert report[1:4] == ["Lowest price per GPU-hour (0 changed):", "GPUs that appear: MI300X (from $2.50)", "GPUs that vanish: B200"]


def test_rebuild_after_a_new_snapshot_rewrites_only_pages_that_show_it(root):
    build(options_for(root), now=NOW)
    site = root / "site"
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    one_price_changed(root)
    result = build(options_for(root), now=LATER)
    changed = sorted(str(p.relative_to(site)) for p in before if p.read_bytes() != before[p])
    unchanged = sorted(str(p.relative_to(site)) for p in before if p.read_bytes() == before[p])
    assert (result.summary.written, result.summary.unchanged, result.summary.removed) == (len(changed), len(unchanged), 0)
    assert unchanged == sorted(
        [
            "404.html",
            *(f"{lang}/404.html" for lang in ("es", "en", "pt", "fr", "de")),
            "_headers",
            *(
                str(published(site, name).relative_to(site))
                for name in (
                    "api.css",
                    "api.js",
                    "calculator.css",
                    "calculator.js",
                    "charts.css",
                    "config.js",
                    "copy.js",
                    "favicon.svg",
                    "forms.css",
                    "search.css",
                    "search.js",
                    "speed.js",
                    "style.css",
                    "tables.css",
                    "tables.js",
                    "training.js",
                )
            ),
            *(str(p.relative_to(site)) for p in (site / "assets").glob("presets.*/*.json")),  # the calculator's presets: no prices
            *(str(p.relative_to(site)) for p in (site / "assets").glob("presets.*.json")),
            *(str(p.relative_to(site)) for p in (site / "assets").glob("config-data.*/*.json")),  # config.js's data and words
            *(str(p.relative_to(site)) for p in (site / "assets").glob("config-data.*.json")),
            *(str(p.relative_to(site)) for p in (site / "pagefind").rglob("*") if p.is_file()),  # the search index: no prices
            "index.html",
            "robots.txt",
            "sitemap.xml",
        ]
        + [
            f"{lang}/{path}/index.html"
            for lang, path in [
                ("es", "guias/dimensionar-inferencia"),
                ("en", "guides/inference-sizing"),
                ("pt", "guias/dimensionar-inferencia"),
                ("fr", "guides/dimensionner-inference"),
                ("de", "ratgeber/inferenz-dimensionieren"),
                ("es", "metodologia"),
                ("en", "methodology"),
                ("pt", "metodologia"),
                ("fr", "methodologie"),
                ("de", "methodik"),
                ("es", "metodologia/fuentes"),
                ("en", "methodology/sources"),
                ("pt", "metodologia/fontes"),
                ("fr", "methodologie/sources"),
                ("de", "methodik/quellen"),
                ("es", "buscar"),
                ("en", "search"),
                ("pt", "pesquisa"),
                ("fr", "recherche"),
                ("de", "suche"),
            ]
        ]
    )
    # every page that shows prices, the two index pages, the fine-tuning, inference and API guides in each language among them
    assert len(changed) == 320
    prices_page = (site / "en/prices/index.html").read_text()
    assert "<li>Oct 31, 2026, 16:52 UTC</li>" in prices_page
    assert "$1.87" in prices_page


def test_staleness_warns_from_the_site_setting_and_output_never_depends_on_now(root):
    config = root / "content/site.yaml"
    config.write_text(config.read_text().replace("stale_after_days: 7", "stale_after_days: 30"))
    late = datetime(2026, 11, 30, tzinfo=UTC)
    assert gather(options_for(root), now=late).warnings == ()
    later = datetime(2026, 12, 15, tzinfo=UTC)
    assert gather(options_for(root), now=later).warnings == (
        "warning: price snapshot 2026-10-31T16-52Z is 44 days old (older than stale_after_days = 30); import a newer one",
    )
    build(options_for(root), now=NOW)
    first = {p: p.read_bytes() for p in (root / "site").rglob("*") if p.is_file()}
    again = build(options_for(root), now=later)
    assert again.summary.written == 0
    assert {p: p.read_bytes() for p in (root / "site").rglob("*") if p.is_file()} == first
