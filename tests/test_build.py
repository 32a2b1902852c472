"""Whole builds: byte-identical output, minimal rewrites, and table cells that match the engine."""

from __future__ import annotations

import gc
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import UTC
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpumem.commands.build import build, gather
from gpumem.engines import memory
from gpumem.figures import shared

from .conftest import NOW, SNAPSHOT, edit, options_for, tree
from .project import REPO, fixture_options


class Cells(HTMLParser):
    """Collects each guide table's cells: their data attributes and visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict]] = {}
        self.table: str | None = None
        self.cell: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "guide" in (attrs.get("class") or ""):
            self.table = attrs["id"]
            self.tables[self.table] = []
        elif tag == "td" and self.table:
            self.cell = {**attrs, "text": ""}

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cell["text"] = " ".join(self.cell["text"].split())
            self.tables[self.table].append(self.cell)
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data + " "


def cells(path: Path) -> dict[str, list[dict]]:
    parser = Cells()
    parser.feed(path.read_text())
    return parser.tables


def test_two_builds_are_byte_identical(inputs, tmp_path):
    build(options_for(inputs), now=NOW)
    other = options_for(inputs, out=tmp_path / "other")
    build(other, now=NOW)
    assert tree(inputs / "site") == tree(tmp_path / "other")


def test_a_build_under_umask_077_publishes_files_0644_and_folders_0755_down_from_the_folders_it_made(inputs):
    out = inputs / "made/by/the/build/site"
    previous = os.umask(0o077)
    try:
        build(options_for(inputs, out=out), now=NOW)
    finally:
        os.umask(previous)
    version = Path(os.path.realpath(out))
    above = [inputs / "made", inputs / "made/by", inputs / "made/by/the", out.parent, version.parent]
    below = [version, *version.rglob("*")]
    assert all(not path.is_symlink() for path in below)
    modes = {str(path): oct(stat.S_IMODE(path.stat().st_mode)) for path in [*above, *below]}
    assert modes == {str(path): "0o755" if path.is_dir() else "0o644" for path in [*above, *below]}
    assert (sum(path.is_file() for path in below), sum(path.is_dir() for path in below)) == (755, 352)  # the version's own folder too


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_rests_while_a_build_runs_and_is_left_as_it_was(inputs, monkeypatch, enabled):
    passes: list[str] = []
    monkeypatch.setattr(gc, "callbacks", [lambda phase, info: passes.append(phase)])
    (gc.enable if enabled else gc.disable)()
    try:
        gc.collect()
        passes.clear()
        result = build(options_for(inputs, force=True), now=NOW)
        assert (result.rendered, passes, gc.isenabled()) == (result.pages, [], enabled)
    finally:
        gc.enable()


def test_rebuild_writes_only_what_changed_and_removes_what_no_longer_belongs(inputs):
    (inputs / "host").mkdir()
    (inputs / "host/CNAME").write_text("gpumem.example.org\n")  # a file of the host's, copied into the site
    first = build(options_for(inputs, host=inputs / "host"), now=NOW)
    assert (first.pages, first.summary.written, first.summary.unchanged, first.summary.removed) == (347, 756, 0, 0)
    assert (inputs / "site/CNAME").read_text() == "gpumem.example.org\n"
    again = build(options_for(inputs, host=inputs / "host"), now=NOW)
    assert (again.summary.written, again.summary.unchanged, again.summary.removed) == (0, 756, 0)
    edit(inputs / "content/en/home.md", "Three questions", "Three plain questions")
    (inputs / "host/CNAME").unlink()
    third = build(options_for(inputs, host=inputs / "host"), now=NOW)
    assert (third.summary.written, third.summary.unchanged, third.summary.removed) == (1, 754, 1)
    assert not (inputs / "site/CNAME").exists()
    assert "Three plain questions" in (inputs / "site/en/index.html").read_text()


def test_guide_cells_match_the_engine_and_sizing(built_site):
    inputs = gather(fixture_options(), now=NOW)
    catalog = inputs.catalog
    shop = shared.Shop(catalog)
    rules = catalog.rules
    for page, ids in (
        ("es/guias/memoria-gpu", ("servir", "ajuste")),
        ("en/guides/gpu-memory", ("serving", "fine-tuning")),
    ):
        tables = cells(built_site / page / "index.html")
        serving, tuning = tables[ids[0]], tables[ids[1]]
        assert len(serving) == len(rules.size_classes) * len(rules.serving_precisions) == 15
        assert len(tuning) == 15
        expected = []
        for size in rules.size_classes:
            model = catalog.model(size.model)
            for precision in rules.serving_precisions:
                need = memory.serving_gb(rules, size.size_b, precision)
                expected.append((need, shop.choose(need, model.arch.heads, shared.comfort_gb(catalog, model))))
        for cell, (need, choice) in zip(serving, expected, strict=True):
            assert float(cell["data-need-gb"]) == round(need, 4)  # rows.NEED_DIGITS
            assert cell["data-gpus"] == " ".join(o.gpu.id for o in choice.options)
            assert f"{choice.best.count} × " in cell["text"]  # its configuration and price as a reader reads them
            if page.startswith("en/"):
                each = choice.best.price_per_hour if choice.best.total_gpus == 1 else choice.best.price_per_gpu_hour
                assert f"${each:,.2f} per GPU-hour" in cell["text"], cell["text"]
        expected = [
            (memory.fine_tuning_gb(rules, size.size_b, method), size) for size in rules.size_classes for method in rules.fine_tuning_methods
        ]
        for cell, (need, _) in zip(tuning, expected, strict=True):
            assert float(cell["data-need-gb"]) == round(need, 4)  # rows.NEED_DIGITS
            assert cell.get("data-gpus", "") == " ".join(o.gpu.id for o in shop.choose(need).options)


def test_known_cells_read_as_a_person_sees_them(built_site):
    es = cells(built_site / "es/guias/memoria-gpu/index.html")
    en = cells(built_site / "en/guides/gpu-memory/index.html")
    # 70B at 4 bits: 42 GB on one 48 GB card by the rule of thumb, the L40S the cheapest of three; the deployment
    # model agrees at 8,192 tokens (vLLM 0.33.0's 92 % of the card), tight, so the cell needs no verdict.
    assert es["servir"][11]["text"] == "42 GB 1 × L40S, RTX A6000 o RTX 6000 Ada L40S desde 0,44 US$ por GPU-hora justo Alquilar en Arrakis"
    assert en["serving"][11]["text"] == "42 GB 1 × L40S, RTX A6000, or RTX 6000 Ada L40S from $0.44 per GPU-hour tight Rent on Arrakis"
    # 70B at 16 bits: 168 GB on one B200.
    assert en["serving"][9]["text"] == "168 GB 1 × B200 from $6.33 per GPU-hour Rent on Arrakis"
    # 405B at 16 bits: 972 GB on four B300, priced per hour for the set.
    assert es["servir"][12]["text"] == "972 GB 4 × B300 desde 18,40 US$ por hora el conjunto (4,60 US$ por GPU-hora) Alquilar en Arrakis"
    # Full fine-tuning of a 70B: 1,120 GB on 8 x H200 (1,128 GB).
    assert (
        es["ajuste"][11]["text"]
        == "1.120 GB 8 × H200 desde 27,52 US$ por hora el conjunto (3,44 US$ por GPU-hora) justo Según el modelo de entrenamiento "
        "no cabe con 4.096 tokens por secuencia, ni con secuencias más cortas. Lo que sí cabe: 8 × B300, 36,80 US$ por hora. Alquilar en Arrakis"
    )
    # Full fine-tuning of a 405B: 6,480 GB, more than one 8-GPU machine.
    # 405B full fine-tuning fills three 8 × B300 machines to exactly 100 %: that does not fit (issue 10).
    assert en["fine-tuning"][14]["text"] == "6,480 GB 4 machines of 8 × B300, more than the 3 on offer"


def test_snapshot_line_language_switcher_and_hreflang(built_site):
    html = (built_site / "es/guias/memoria-gpu/index.html").read_text()
    assert "Precios de la instantánea de Arrakis del 31 oct 2026, 16:52 UTC: 619 GPU en 188 máquinas." in html
    assert '<a href="/en/guides/gpu-memory/" lang="en" hreflang="en">English</a>' in html
    assert '<link rel="alternate" hreflang="x-default" href="https://gpumem.example.org/es/guias/memoria-gpu/">' in html
    english = (built_site / "en/guides/gpu-memory/index.html").read_text()
    assert "Prices from the Arrakis snapshot of Oct 31, 2026, 16:52 UTC: 619 GPUs on 188 machines." in english
    assert '<link rel="alternate" hreflang="es" href="https://gpumem.example.org/es/guias/memoria-gpu/">' in english
    assert '<a href="/es/guias/memoria-gpu/" lang="es" hreflang="es">Español</a>' in english


def test_faq_answers_are_computed(built_site):
    html = (built_site / "en/guides/gpu-memory/index.html").read_text()
    assert "<li>4-bit (INT4), 42\xa0GB: yes, on 1 × L40S, RTX A6000, or RTX 6000 Ada.</li>" in html  # the deployment model agrees
    assert "<li>16-bit (FP16/BF16), 168\xa0GB: yes, on 1 × B200.</li>" in html
    assert (
        "<li>LoRA needs 19.2\xa0GB by the rule of thumb, which says it fits. By the training engine it does not hold at 4,096 "
        "tokens per sequence; it holds at 2,048. What holds: 2 × RTX 3090, $0.38 per hour.</li>"
    ) in html
    assert "<li>QLoRA needs 5.6\xa0GB: it fits.</li>" in html
    assert "<li>Full fine-tuning needs 128\xa0GB: it does not fit; the smallest configuration that holds it is 1 × H200.</li>" in html
    assert re.search(r"The H100 started at \$2\.07 per GPU-hour and the RTX 4090 at\s+\$0\.38", html)


def test_prices_option_and_newest_snapshot(inputs):
    prices = inputs / "catalogs/prices"
    newer = prices / "2026-11-07T09-00Z.yaml"
    text = (prices / SNAPSHOT).read_text().replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-11-07T09:00:00Z")
    newer.write_text(text.replace("price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 1.99,"))
    later = NOW.replace(day=8)  # a clock after the newer snapshot, which may not be in the future
    assert gather(options_for(inputs), now=later).catalog.snapshot.name == "2026-11-07T09-00Z"
    picked = gather(options_for(inputs, prices=prices / SNAPSHOT), now=later).catalog
    assert picked.snapshot.name == "2026-10-31T16-52Z"
    assert picked.earlier_snapshots == ("2026-11-07T09-00Z",)
    build(options_for(inputs), now=later)
    assert "The H100 started at $1.99 per GPU-hour" in " ".join((inputs / "site/en/guides/gpu-memory/index.html").read_text().split())


def test_stale_snapshot_warns_and_strict_fails(inputs):
    from datetime import datetime

    from gpumem.errors import BuildError

    late = datetime(2026, 11, 30, tzinfo=UTC)
    assert gather(options_for(inputs), now=late).warnings == (
        "warning: price snapshot 2026-10-31T16-52Z is 29 days old (older than stale_after_days = 7); import a newer one",
    )
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs, strict=True), now=late)
    assert raised.value.lines[-1] == "--strict: warnings are errors"


def test_cli_build_summary_and_check_writes_nothing(inputs):
    shutil.rmtree(inputs / "site", ignore_errors=True)
    run = [sys.executable, "-m", "gpumem", "--project", str(REPO)]
    paths = ["--catalogs", "catalogs", "--content", "content"]
    checked = subprocess.run([*run, "check", *paths], cwd=inputs, capture_output=True, text=True)
    assert checked.returncode == 0
    assert checked.stdout == "ok: 28 models, 26 GPUs, snapshot 2026-10-31T16-52Z (188 machines, 619 GPUs)\n"
    assert not (inputs / "site").exists()
    built = subprocess.run([*run, "build", *paths, "--out", "site"], cwd=inputs, capture_output=True, text=True)
    assert built.returncode == 0
    assert re.fullmatch(r"347 pages, 347 rendered; 755 files written, 0 unchanged, 0 removed in \d+\.\d\d s\n", built.stdout)


def test_a_folder_built_from_the_same_inputs_is_checked_not_rebuilt(inputs, monkeypatch):
    from gpumem.commands import build as pipeline
    from gpumem.errors import BuildError

    build(options_for(inputs), now=NOW)
    site = inputs / "site"
    (site / "en/index.html").unlink()  # not written in place: the inode is the earlier version's too
    (site / "en/index.html").write_text("tampered")

    def no_render(*args, **kwargs):
        raise AssertionError("rendered although nothing changed")

    monkeypatch.setattr(pipeline, "site_rendering", no_render)
    with pytest.raises(AssertionError, match="rendered although nothing changed"):
        build(options_for(inputs), now=NOW)  # the tampered page forces a real build
    monkeypatch.undo()
    repaired = build(options_for(inputs), now=NOW)
    assert (repaired.summary.written, repaired.summary.unchanged, repaired.summary.removed) == (1, 754, 0)
    monkeypatch.setattr(pipeline, "site_rendering", no_render)
    again = build(options_for(inputs), now=NOW)
    assert (again.summary.written, again.summary.unchanged, again.summary.removed) == (0, 755, 0)
    (site / "stray.html").write_text("left behind")
    monkeypatch.undo()
    with pytest.raises(BuildError) as stopped:  # a file no build wrote: named, and nothing is replaced
        build(options_for(inputs, force=True), now=NOW)
    assert stopped.value.lines == [
        f"{site}/stray.html: not written by gpumem; move it into host/, whose files every build copies into the site"
    ]
    assert (site / "stray.html").read_text() == "left behind"


def test_parallel_and_single_process_rendering_give_the_same_bytes(inputs):
    from gpumem.pages.site import render_site

    gathered = gather(options_for(inputs), now=NOW)
    assert render_site(gathered, jobs=2) == render_site(gathered, jobs=1)


def test_parallel_rendering_only_where_it_pays_off(monkeypatch):
    """Two forked renderers on two free CPUs (1.35 s against 1.71 s for the whole build);
    one where fork does not exist (Windows) or a single CPU is ours."""
    import os

    from gpumem.options import parallel_jobs

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert parallel_jobs() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert parallel_jobs() == 1
    monkeypatch.delattr(os, "fork")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert parallel_jobs() == 1
