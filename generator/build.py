"""The pipeline: load -> validate -> compute -> render -> write."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import compute
from .errors import BuildError, Problems
from .load import ContentPage, read_content, read_yaml, snapshot_files, snapshot_time
from .pages import CONTENT_KEYS, KINDS, plan_pages
from .records import Catalog, Site
from .render import Renderer
from .validate import read_gpus, read_models, read_rules, read_site, read_snapshot
from .write import WriteSummary, write_site

PROJECT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PROJECT / "templates"
TRANSLATIONS_DIR = PROJECT / "translations"
STATIC_DIR = TEMPLATES_DIR / "static"


@dataclass(frozen=True)
class Options:
    """Where a build reads and writes; defaults are the project's own folders."""

    catalogs: Path = PROJECT / "catalogs"
    content: Path = PROJECT / "content"
    prices: Path | None = None
    out: Path = PROJECT / "site"
    strict: bool = False


@dataclass(frozen=True)
class Inputs:
    """Everything a build reads, validated."""

    catalog: Catalog
    site: Site
    content: dict[tuple[str, str], ContentPage]
    warnings: tuple[str, ...]


def _label(path: Path) -> str:
    """A path as errors show it: relative to the working folder when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def choose_snapshot(catalogs: Path, prices: Path | None, problems: Problems) -> tuple[Path | None, tuple[str, ...]]:
    """The snapshot to build from (newest unless named) and the names of the others."""
    prices_dir = catalogs / "prices"
    found = snapshot_files(prices_dir)
    if prices is not None:
        chosen = prices
    elif found:
        chosen = found[-1]
    else:
        problems.add_raw(f"{_label(prices_dir)}: no price snapshot (expected files named like 2026-10-31T16-52Z.yaml)")
        return None, ()
    others = tuple(p.stem for p in reversed(found) if p.resolve() != chosen.resolve())
    return chosen, others


def declared_ids(data: object, key: str) -> set[str] | None:
    """Ids a catalog file declares, valid or not, so references to them are not reported twice."""
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        return None
    return {item.get("id") for item in data[key] if isinstance(item, dict)}


def read_catalog(catalogs: Path, prices: Path | None, problems: Problems) -> Catalog | None:
    """The catalogs and one price snapshot, validated; None when any of them has a problem."""
    paths = {name: catalogs / f"{name}.yaml" for name in ("models", "gpus", "rules")}
    raw = {name: read_yaml(path, _label(path), problems) for name, path in paths.items()}
    models = read_models(raw["models"], _label(paths["models"]), problems) if raw["models"] is not None else ()
    gpus = read_gpus(raw["gpus"], _label(paths["gpus"]), problems) if raw["gpus"] is not None else ()
    model_ids, gpu_ids = declared_ids(raw["models"], "models"), declared_ids(raw["gpus"], "gpus")
    rules = read_rules(raw["rules"], _label(paths["rules"]), problems, model_ids, gpu_ids) if raw["rules"] is not None else None
    snapshot_path, earlier = choose_snapshot(catalogs, prices, problems)
    snapshot = None
    if snapshot_path is not None:
        data = read_yaml(snapshot_path, _label(snapshot_path), problems)
        if data is not None:
            snapshot = read_snapshot(data, _label(snapshot_path), snapshot_path.stem, problems, gpu_ids)
    if problems.found:
        return None
    return Catalog(models, gpus, rules, snapshot, earlier)


def load_catalog(catalogs: Path = PROJECT / "catalogs", prices: Path | None = None) -> Catalog:
    """The catalogs and a snapshot alone (no site, no content), or one BuildError."""
    problems = Problems()
    catalog = read_catalog(catalogs, prices, problems)
    problems.raise_if_any()
    return catalog


def gather(options: Options, now: datetime | None = None) -> Inputs:
    """Read and validate every input; raise one BuildError listing all problems."""
    problems = Problems()
    catalog = read_catalog(options.catalogs, options.prices, problems)
    site_path = options.content / "site.yaml"
    site_data = read_yaml(site_path, _label(site_path), problems)
    site = read_site(site_data, _label(site_path), problems, KINDS) if site_data is not None else None
    content = _read_content(options.content, site, problems) if site else {}
    problems.raise_if_any()
    warnings = _warnings(catalog, site, now or datetime.now(UTC))
    if options.strict and warnings:
        raise BuildError([*warnings, "--strict: warnings are errors"])
    return Inputs(catalog, site, content, warnings)


def _read_content(content_dir: Path, site: Site, problems: Problems) -> dict[tuple[str, str], ContentPage]:
    """Every page kind's Markdown in every language: content/<lang>/<page key>.md."""
    found = {}
    for language in site.languages:
        for key in CONTENT_KEYS:
            path = content_dir / language.code / f"{key}.md"
            page = read_content(path, _label(path), problems)
            if page is None:
                continue
            for field in ("title", "description"):
                if not isinstance(page.meta.get(field), str):
                    problems.add(page.path, page.meta.line_of(field), key, field, "missing field (expected text)")
            found[(language.code, key)] = page
    return found


def _warnings(catalog: Catalog, site: Site, now: datetime) -> tuple[str, ...]:
    """Things worth saying that do not stop a build (unless --strict)."""
    age = now - catalog.snapshot.taken_at
    days = age.total_seconds() / 86400
    if days > site.stale_after_days:
        return (
            f"warning: price snapshot {catalog.snapshot.name} is {days:.0f} days old "
            f"(older than stale_after_days = {site.stale_after_days:g}); import a newer one",
        )
    return ()


def render_site(inputs: Inputs) -> dict[str, bytes]:
    """Every output file, as bytes, computed in memory before anything is written."""
    catalog, site = inputs.catalog, inputs.site
    figures = compute.site_figures(catalog)
    pages = plan_pages(site, {"models": [m.id for m in catalog.models], "gpus": [g.id for g in catalog.gpus]})
    renderer = Renderer(TEMPLATES_DIR, TRANSLATIONS_DIR, [language.code for language in site.languages])
    links = {(page.key, page.subject, page.lang): page.url for page in pages}
    common: dict[str, Any] = dict(
        site=site,
        catalog=catalog,
        snapshot=catalog.snapshot,
        figures=figures,
        shop=figures.shop,
        guide=figures.main,
        vram=figures.vram,
        sizing=figures.sizing,
        calc=figures.calculator,
        fits=compute.fits,
        snapshot_time=snapshot_time,
        url=lambda relative: site.base_path + relative,
        absolute=lambda relative: site.base_url + relative,
        link=lambda key, lang, subject="": site.base_path + links[(key, subject, lang)],
    )
    files: dict[str, bytes] = {}
    for page in pages:
        context = {**common, **renderer.language_context(page.lang, catalog.snapshot.currency), "page": page}
        if KINDS[page.key].has_content:
            context["content"] = renderer.content(inputs.content[(page.lang, page.key)], context)
        files[page.output] = renderer.render(page.template, context).encode()
    first = site.languages[0].code
    root = {**common, **renderer.language_context(first, catalog.snapshot.currency), "pages": pages}
    root["not_found"] = [(language, renderer.strings[language.code]["_"]("Page not found")) for language in site.languages]
    for name in ("index.html", "404.html", "sitemap.xml", "robots.txt"):
        files[name] = renderer.render(name, root).encode()
    for path in sorted(STATIC_DIR.iterdir()):
        files[f"assets/{path.name}"] = path.read_bytes()
    return files


@dataclass(frozen=True)
class BuildResult:
    summary: WriteSummary
    seconds: float
    warnings: tuple[str, ...]
    pages: int


def build(options: Options, now: datetime | None = None) -> BuildResult:
    """Gather, compute and render everything; only then write the output folder."""
    started = time.perf_counter()
    inputs = gather(options, now)
    files = render_site(inputs)
    summary = write_site(options.out, files)
    pages = sum(1 for name in files if name.endswith(".html"))
    return BuildResult(summary, time.perf_counter() - started, inputs.warnings, pages)


def check(options: Options, now: datetime | None = None) -> Inputs:
    """Validate every input and render every page in memory; write nothing."""
    inputs = gather(options, now)
    render_site(inputs)
    return inputs
