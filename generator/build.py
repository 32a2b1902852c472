"""The pipeline: load -> validate -> compute -> render -> write.

`gpumem build` keeps nothing in memory between runs (each is a process of its own): across runs
only the no-change check (fingerprint.py) and Jinja's compiled templates are kept. The preview
(serve.py) rebuilds in one process and keeps its last build in a Session: the validated catalog,
the figures and the compiled strings while their inputs are the same (fingerprint.computed_key),
and every page with its key (fingerprint.page_keys), so one content edit renders one page.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .compile_ahead import CompilingAhead
from .errors import BuildError, Problems
from .figures import site_figures
from .fingerprint import clock_facts, computed_key, fingerprint, page_keys, read_inputs, stale_warning, unchanged
from .hosting import with_host_files
from .load import (
    SNAPSHOT_NAME,
    ContentPage,
    LineDict,
    check_translations,
    read_content,
    read_measurements,
    read_taken_at,
    read_yaml,
    snapshot_files,
    snapshot_name,
    snapshot_time,
)
from .options import BuildResult, Options, WriteSummary, template_cache
from .options import parallel_jobs as parallel_jobs  # where tests and scripts have found them
from .options import project_options as project_options
from .pages import CONTENT_KEYS, ROUTE_KEYS, Page, plan_pages
from .price_checks import read_price_checks
from .read_apis import read_apis
from .read_gpus import read_gpus
from .read_models import read_models
from .read_rules import read_rules
from .read_site import check_front_matter, read_site
from .read_snapshot import in_the_future, read_snapshot, taken_at_time, time_text
from .records import Catalog, Gpu, Model, Rules, Site
from .render import compile_translations
from .render_site import Computed, content_label, own_files, site_rendering, subjects
from .render_site import render_site as render_site  # where tests and scripts have found it
from .tree import write_in_place
from .validate import Invalid
from .versions import Output


@dataclass(frozen=True)
class Inputs:
    """Everything a build reads, validated, and where it was read from."""

    options: Options
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


@dataclass(frozen=True)
class Stamp:
    """A snapshot file's taken_at and the line it stands on."""

    path: Path
    moment: datetime
    line: int

    @property
    def label(self) -> str:
        return _label(self.path)


def read_stamp(path: Path, problems: Problems) -> Stamp | None:
    """A snapshot's taken_at from its `taken_at:` line alone (the whole file only when it has no
    such line); None, with the problem reported, when it has no valid one."""
    try:
        found = read_taken_at(path)
    except OSError as error:
        problems.add_raw(f"{_label(path)}: cannot read: {error.strerror or error}")
        return None
    except UnicodeDecodeError as error:
        problems.add_raw(f"{_label(path)}: taken_at: not UTF-8 text (invalid byte 0x{error.object[error.start]:02x})")
        return None
    if found is None:  # no top-level `taken_at:` line: YAML says whether it is elsewhere or missing
        data = read_yaml(path, _label(path), problems)
        if not isinstance(data, LineDict):
            if data is not None:
                problems.add_raw(f"{_label(path)}:1: snapshot: expected a mapping with taken_at, currency, source and offers")
            return None
        if "taken_at" not in data:
            problems.add(_label(path), data.line, "snapshot", "taken_at", "missing field (expected a UTC time like 2026-10-31T16:52:00Z)")
            return None
        found = (data["taken_at"], data.line_of("taken_at"))
    value, line = found
    try:
        return Stamp(path, taken_at_time(value), line)
    except Invalid as error:
        problems.add(_label(path), line, "snapshot", "taken_at", str(error))
        return None


def choose_snapshot(catalogs: Path, prices: Path | None, problems: Problems) -> tuple[Path | None, tuple[Stamp, ...]]:
    """The snapshot to build from (the latest taken_at unless named) and the others of the prices
    folder, latest first. The others are read by their taken_at line alone (read_stamp); the chosen
    one is read whole by read_catalog, and check_stamps checks them all together."""
    prices_dir = catalogs / "prices"
    named = prices.resolve() if prices is not None else None
    files = [path for path in snapshot_files(prices_dir) if named is None or path.resolve() != named]
    stamps = sorted(
        (stamp for path in files if (stamp := read_stamp(path, problems))), key=lambda stamp: (stamp.moment, stamp.path.name), reverse=True
    )
    if prices is not None:
        return prices, tuple(stamps)
    if not files:
        problems.add_raw(f"{_label(prices_dir)}: no price snapshot (expected files named like 2026-10-31T16-52Z.yaml)")
    if not stamps:  # none, or none with a valid taken_at (each reported)
        return None, ()
    return stamps[0].path, tuple(stamps[1:])


def check_stamps(
    chosen: Stamp | None, others: tuple[Stamp, ...], prices_dir: Path, problems: Problems, rules: Rules | None, now: datetime
) -> None:
    """Every snapshot's taken_at: not in the future, as its file name says, and no two of one moment.

    A file named otherwise than a snapshot (--prices FILE, say a draft) has no name to agree with,
    and one outside the prices folder is not compared with the folder's.
    """
    everyone = ([chosen] if chosen else []) + list(others)
    for stamp in everyone:
        if rules is not None and (future := in_the_future(stamp.moment, now, rules)) is not None:
            problems.add(stamp.label, stamp.line, "snapshot", "taken_at", future)
        if not SNAPSHOT_NAME.match(stamp.path.name):
            continue
        try:
            named = snapshot_time(stamp.path.name)
        except ValueError:
            problems.add(stamp.label, stamp.line, "snapshot", "taken_at", f"the file name {stamp.path.name} is not a valid time")
            continue
        if named != stamp.moment.replace(microsecond=0):
            problems.add(
                stamp.label,
                stamp.line,
                "snapshot",
                "taken_at",
                f"{time_text(stamp.moment)} disagrees with the file name, which says {time_text(named)}; "
                f"rename the file to {snapshot_name(stamp.moment)} or correct taken_at",
            )
    first: dict[datetime, Stamp] = {}
    in_folder = [*others, *([chosen] if chosen and chosen.path.resolve().parent == prices_dir.resolve() else [])]
    for stamp in sorted(in_folder, key=lambda stamp: stamp.path.name):  # the others are all of the folder
        if stamp.moment in first:
            problems.add(
                stamp.label,
                stamp.line,
                "snapshot",
                "taken_at",
                f"{time_text(stamp.moment)} is also the taken_at of {first[stamp.moment].label}; keep one snapshot of each moment",
            )
        else:
            first[stamp.moment] = stamp


def declared_ids(data: object, key: str) -> set[str] | None:
    """Ids a catalog file declares, valid or not, so references to them are not reported twice."""
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        return None
    return {item["id"] for item in data[key] if isinstance(item, dict) and isinstance(item.get("id"), str)}


def declared_formats(rules: object) -> set[str] | None:
    """Weight formats rules.yaml declares, valid or not, for the models' release formats."""
    deployment = rules.get("deployment") if isinstance(rules, dict) else None
    table = deployment.get("weight_formats") if isinstance(deployment, dict) else None
    return {str(name) for name in table} if isinstance(table, dict) else None


def read_catalog_files(catalogs: Path, problems: Problems) -> tuple[tuple[Model, ...], tuple[Gpu, ...], Rules | None, set[str] | None]:
    """models.yaml, gpus.yaml and rules.yaml, validated, and the GPU ids gpus.yaml declares."""
    paths = {name: catalogs / f"{name}.yaml" for name in ("models", "gpus", "rules")}
    raw = {name: read_yaml(path, _label(path), problems) for name, path in paths.items()}
    formats = declared_formats(raw["rules"])
    models = read_models(raw["models"], _label(paths["models"]), problems, formats) if raw["models"] is not None else ()
    gpus = read_gpus(raw["gpus"], _label(paths["gpus"]), problems) if raw["gpus"] is not None else ()
    model_ids, gpu_ids = declared_ids(raw["models"], "models"), declared_ids(raw["gpus"], "gpus")
    rules = read_rules(raw["rules"], _label(paths["rules"]), problems, model_ids, gpu_ids) if raw["rules"] is not None else None
    return models, gpus, rules, gpu_ids


def read_catalog(catalogs: Path, prices: Path | None, problems: Problems, now: datetime | None = None) -> Catalog | None:
    """The catalogs and one price snapshot, validated; None when any of them has a problem.

    `now` is the build's clock: no snapshot may be taken later (beyond the clock skew of rules.yaml).
    """
    models, gpus, rules, gpu_ids = read_catalog_files(catalogs, problems)
    snapshot_path, others = choose_snapshot(catalogs, prices, problems)
    snapshot = chosen = None
    if snapshot_path is not None:
        label = _label(snapshot_path)
        data = read_yaml(snapshot_path, label, problems)
        if data is not None:
            snapshot = read_snapshot(data, label, snapshot_path.stem, problems, gpu_ids, rules)
        if isinstance(data, LineDict) and "taken_at" in data:
            with contextlib.suppress(Invalid):  # reported by read_snapshot
                chosen = Stamp(snapshot_path, taken_at_time(data["taken_at"]), data.line_of("taken_at"))
    check_stamps(chosen, others, catalogs / "prices", problems, rules, now or datetime.now(UTC))
    if problems.found or rules is None or snapshot is None:
        return None
    earlier = tuple(stamp.path.stem for stamp in others if stamp.moment != snapshot.taken_at)
    points, configs = read_measurements(catalogs / "measurements", problems)
    checks_path = catalogs / "price_checks.yaml"
    checks = read_price_checks(checks_path, _label(checks_path), problems, gpu_ids, rules, (now or datetime.now(UTC)).date())
    apis_path = catalogs / "apis.yaml"
    formats = set(rules.deployment.weight_formats) if rules.deployment else set()
    apis = read_apis(apis_path, _label(apis_path), problems, {m.id for m in models}, formats, rules.api_page, snapshot.taken_at.date())
    if problems.found:
        return None
    return Catalog(models, gpus, rules, snapshot, earlier, points, configs, price_checks=checks, api_prices=apis)


def load_catalog(catalogs: Path, prices: Path | None = None, now: datetime | None = None) -> Catalog:
    """The catalogs and a snapshot alone (no site, no content), or one BuildError."""
    problems = Problems()
    catalog = read_catalog(catalogs, prices, problems, now)
    problems.raise_if_any()
    assert catalog is not None  # no problem means every part was read
    return catalog


def gather(options: Options, now: datetime | None = None, known: Computed | None = None) -> Inputs:
    """Read and validate every input; raise one BuildError listing all problems. What the preview
    computed from the same inputs (`known`) is not read again: the catalogs, snapshots and translations."""
    problems = Problems()
    catalog = known.catalog if known else read_catalog(options.catalogs, options.prices, problems, now)
    site_path = options.content / "site.yaml"
    site_data = read_yaml(site_path, _label(site_path), problems)
    site = read_site(site_data, _label(site_path), problems, ROUTE_KEYS) if site_data is not None else None
    content = _read_content(options.content, site, problems) if site else {}
    for language in site.languages if site and not known else ():
        catalog_file = options.translations / language.code / "LC_MESSAGES" / "messages.po"
        if not catalog_file.is_file():
            problems.add_raw(
                f"{_label(catalog_file)}: missing: every language needs its interface strings "
                "(see docs/user-guide/content.md#add-a-language)"
            )
        else:
            check_translations(catalog_file, _label(catalog_file), language.code, problems)
    if catalog is not None and site is not None:
        check_outputs(plan_pages(site, subjects(catalog)), site, _label(site_path), problems)
    problems.raise_if_any()
    assert catalog is not None and site is not None  # no problem means every part was read
    warnings = _warnings(catalog, site, now or datetime.now(UTC))
    if options.strict and warnings:
        raise BuildError([*warnings, "--strict: warnings are errors"])
    return Inputs(options, catalog, site, content, warnings)


def check_outputs(pages: Iterable[Page], site: Site, path: str, problems: Problems) -> None:
    """Every page has a file of its own: two routes (a guide's and a model's with some id) must never meet."""
    taken: dict[str, str] = {}
    for page in pages:
        who = f"{page.key} {page.subject}".strip() + f" ({page.lang})"
        if page.output in taken:
            line = site.route_lines.get((page.key, page.lang), 0)
            problems.add(
                path, line, "site", f"routes.{page.key}.{page.lang}", f"{who} would be written to {page.output}, as {taken[page.output]}"
            )
        else:
            taken[page.output] = who


def _read_content(content_dir: Path, site: Site, problems: Problems) -> dict[tuple[str, str], ContentPage]:
    """Every page kind's Markdown in every language: content/<lang>/<page key>.md."""
    found = {}
    for language in site.languages:
        for key in CONTENT_KEYS:
            path = content_dir / language.code / f"{key}.md"
            page = read_content(path, _label(path), problems)
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
    build, its pages with their keys, and the files it wrote into the preview's folder."""

    computed: Computed | None = None
    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # output -> (key, bytes)
    written: dict[str, bytes] = field(default_factory=dict)


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
    fingerprint.py; `checked`: the caller has just done that, on the inputs it read, `read`);
    otherwise it is locked for the whole build (a second build into it stops at once) and a new
    version published (versions.py). `report` hears, as they happen, what the writer did besides
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
        with Output(options.out, report, _label(options.host)) as output:
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
    rendering = site_rendering(inputs, options.jobs, known, session.pages if session else None, keys)
    files = with_host_files(rendering.files, options.host, _label(options.host))
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
    """Validate every input and render every page in memory, the host's files joined; write nothing."""
    inputs = gather(options, now)
    with_host_files(render_site(inputs), options.host, _label(options.host))
    return inputs
