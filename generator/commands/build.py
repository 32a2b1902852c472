"""The pipeline: load -> validate -> compute -> render -> write.

`gpumem build` keeps nothing in memory between runs (each is a process of its own): across runs
only the no-change check (output/fingerprint.py) and Jinja's compiled templates are kept. The preview
(commands/serve.py) rebuilds in one process and keeps its last build in a Session: the validated catalog,
the figures and the compiled strings while their inputs are the same (fingerprint.computed_key),
and every page with its key (fingerprint.page_keys), so one content edit renders one page.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpumem.catalog.inputs import Inputs, label, read_catalog
from gpumem.catalog.load import ContentPage, check_translations, read_content, read_yaml, snapshot_time
from gpumem.catalog.site import check_front_matter, read_site
from gpumem.errors import BuildError, Problems
from gpumem.figures.site import site_figures
from gpumem.options import BuildResult, Options, WriteSummary, template_cache
from gpumem.output.fingerprint import clock_facts, computed_key, fingerprint, page_keys, read_inputs, stale_warning, unchanged
from gpumem.output.hosting import with_host_files
from gpumem.output.tree import ancestors, checked_files, write_in_place
from gpumem.output.versions import Output
from gpumem.pages.compile_ahead import CompilingAhead
from gpumem.pages.formats import compile_translations
from gpumem.pages.routes import CONTENT_KEYS, ROUTE_KEYS, Page, plan_pages
from gpumem.pages.search import SearchIndex
from gpumem.pages.site import Computed, content_label, own_files, render_site, site_rendering, subjects
from gpumem.records.catalog import Catalog, Site


def gather(options: Options, now: datetime | None = None, known: Computed | None = None) -> Inputs:
    """Read and validate every input; raise one BuildError listing all problems. What the preview
    computed from the same inputs (`known`) is not read again: the catalogs, snapshots and translations."""
    problems = Problems()
    catalog = known.catalog if known else read_catalog(options.catalogs, options.prices, problems, now)
    site_path = options.content / "site.yaml"
    site_data = read_yaml(site_path, label(site_path), problems)
    site = read_site(site_data, label(site_path), problems, ROUTE_KEYS) if site_data is not None else None
    content = _read_content(options.content, site, problems) if site else {}
    for language in site.languages if site and not known else ():
        catalog_file = options.translations / language.code / "LC_MESSAGES" / "messages.po"
        if not catalog_file.is_file():
            problems.add_raw(
                f"{label(catalog_file)}: missing: every language needs its interface strings "
                "(see docs/user-guide/content.md#add-a-language)"
            )
        else:
            check_translations(catalog_file, label(catalog_file), language.code, problems)
    if catalog is not None and site is not None:
        catalogs = {"model": label(options.catalogs / "models.yaml"), "gpu": label(options.catalogs / "gpus.yaml")}
        check_outputs(plan_pages(site, subjects(catalog)), site, label(site_path), problems, catalogs)
    problems.raise_if_any()
    assert catalog is not None and site is not None  # no problem means every part was read
    warnings = _warnings(catalog, site, now or datetime.now(UTC))
    if options.strict and warnings:
        raise BuildError([*warnings, "--strict: warnings are errors"])
    return Inputs(options, catalog, site, content, warnings)


def check_outputs(pages: Iterable[Page], site: Site, path: str, problems: Problems, catalogs: dict[str, str]) -> None:
    """Every page has a file of its own, below no file of the site's: two routes (a guide's and a
    model's with some id) must never meet, nor a page's folder be a file written too (a route or a
    model id `404.html` or `index.html`). `catalogs`: the file that names each kind of subject."""
    taken = {name: "one of the site's own files" for name, _ in own_files(site)}
    own = set(taken)
    placed = []
    for page in pages:
        who = f"{page.key} {page.subject}".strip() + f" ({page.lang})"
        if page.output in taken:
            line = site.route_lines.get((page.key, page.lang), 0)
            problems.add(
                path, line, "site", f"routes.{page.key}.{page.lang}", f"{who} would be written to {page.output}, as {taken[page.output]}"
            )
        else:
            taken[page.output] = who
            placed.append((page, who))
    for page, who in placed:
        below = next((folder for folder in sorted(ancestors([page.output])) if folder in taken), None)
        if below is None:
            continue
        where = f"{page.output}, inside {below}, " + (taken[below] if below in own else f"the page of {taken[below]}")
        if page.subject:
            problems.add_raw(f"{catalogs[page.key]}: {who} would be written to {where}; give it another id")
        else:
            line = site.route_lines.get((page.key, page.lang), 0)
            problems.add(path, line, "site", f"routes.{page.key}.{page.lang}", f"{who} would be written to {where}")


def _read_content(content_dir: Path, site: Site, problems: Problems) -> dict[tuple[str, str], ContentPage]:
    """Every page kind's Markdown in every language: content/<lang>/<page key>.md."""
    found = {}
    for language in site.languages:
        for key in CONTENT_KEYS:
            path = content_dir / language.code / f"{key}.md"
            page = read_content(path, label(path), problems)
            if page is not None and check_front_matter(page, key, problems):
                found[(language.code, key)] = page
    return found


def _warnings(catalog: Catalog, site: Site, now: datetime) -> tuple[str, ...]:
    """Things worth saying that do not stop a build (unless --strict)."""
    warning = stale_warning(catalog.snapshot.name, catalog.snapshot.taken_at, site.stale_after_days, now)
    return (warning,) if warning else ()


@dataclass
class Session:
    """What the preview keeps between its rebuilds, in its own process: the figures of the last
    build, its pages with their keys, the files it wrote into the preview's folder, and the search
    index with the documents it was made from (Pagefind runs again only when they change)."""

    computed: Computed | None = None
    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # output -> (key, bytes)
    written: dict[str, bytes] = field(default_factory=dict)
    search: SearchIndex | None = None


def build(
    options: Options,
    now: datetime | None = None,
    report: Callable[[str], None] | None = None,
    checked: bool = False,
    read: dict[str, bytes] | None = None,
    session: Session | None = None,
) -> BuildResult:
    """Gather, compute and render everything; only then write the output.

    An output whose live version was built from the same inputs is left as it is (see
    output/fingerprint.py; `checked`: the caller has just done that, on the inputs it read, `read`);
    otherwise it is locked for the whole build (a second build into it stops at once) and a new
    version published (output/versions.py). `report` hears, as they happen, what the writer did besides
    the build. With a `session` (the preview), the output is the preview's own folder, written in
    place, and what the session holds from the last build is used again.

    The garbage collector does not run meanwhile: its passes over the catalog, the figures and the
    pages cost a seventh of the rendering (1,597 pages in one process: 7.6 s with them, 6.6 s
    without) for the few cycles a build leaves, which are freed after it (the memory at its height
    grows from 230 to 373 MB for those pages). Forked renderers inherit this, and so do not copy
    the parent's memory page by page by collecting it.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        if read is None:  # read before gathering: a file saved meanwhile makes the next build look again
            read = read_inputs(options)
        if session is not None:
            return _build(options, now or datetime.now(UTC), read, started, session)
        same = None if checked else unchanged(options, now, fingerprint(options, read))
        if same is not None:
            return same
        with Output(options.out, report, label(options.host)) as output:
            return _build(options, now or datetime.now(UTC), read, started, output)
    finally:
        if collecting:
            gc.enable()


def _build(options: Options, moment: datetime, read: dict[str, bytes], started: float, target: Output | Session) -> BuildResult:
    """The build's stages, into the output (a new version) or the preview's folder (a session)."""
    # the layouts compiled while the inputs are read and the figures computed
    ahead = CompilingAhead(options.templates, options.translations, template_cache(options.project), options.jobs)
    key = computed_key(read, options.prices, moment)
    session = target if isinstance(target, Session) else None
    known = session.computed if session and session.computed and session.computed.key == key else None
    inputs = gather(options, moment, known)
    if known is None:
        messages = {language.code: compile_translations(options.translations, language.code) for language in inputs.site.languages}
        known = Computed(key, inputs.catalog, site_figures(inputs.catalog), messages)
    pages = plan_pages(inputs.site, subjects(inputs.catalog))
    outputs = [
        *((page.output, page.lang, content_label(page)) for page in pages),
        *((name, lang, "") for name, lang in own_files(inputs.site)),
    ]
    keys = page_keys(read, outputs, f"{moment.date()}|{options.prices}") if session else None
    ahead.wait()
    if session is not None and session.search is None:
        session.search = SearchIndex(template_cache(options.project))
    search = session.search if session else None
    rendering = site_rendering(inputs, options.jobs, known, session.pages if session else None, keys, search)
    files = with_host_files(rendering.files, options.host, label(options.host))
    summary: WriteSummary
    if session is not None:
        summary = write_in_place(options.out, files, session.written)
        session.computed, session.written = known, files
        session.pages = {output: (key, rendering.files[output]) for output, key in (keys or {}).items()}
    else:
        assert isinstance(target, Output)
        summary = target.publish(files, fingerprint(options, read), input_facts(inputs))
    return BuildResult(summary, time.perf_counter() - started, inputs.warnings, summary.pages, rendering.rendered)


def input_facts(inputs: Inputs) -> dict[str, object]:
    """What the version's record keeps for the no-change check (fingerprint.clock_facts): a snapshot is in
    the future until its taken_at less the allowed skew; the newest of the folder's counts."""
    catalog = inputs.catalog
    moments = [catalog.snapshot.taken_at, *(snapshot_time(name) for name in catalog.earlier_snapshots)]
    not_before = max(moments) - timedelta(minutes=catalog.rules.max_clock_skew_minutes) + timedelta(seconds=1)
    return clock_facts(not_before, catalog.snapshot.name, catalog.snapshot.taken_at, inputs.site.stale_after_days)


def check(options: Options, now: datetime | None = None) -> Inputs:
    """Validate every input and render every page in memory, the host's files joined, and refuse
    what the writer would refuse; write nothing."""
    inputs = gather(options, now)
    checked_files(with_host_files(render_site(inputs), options.host, label(options.host)))  # as the writer checks them
    return inputs
