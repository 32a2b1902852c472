"""Stage 4, over the whole site: every page and file rendered in memory, or kept from the last build.

A page is kept when nothing it read changed (its price-free key, fingerprint.page_keys, and the
snapshot figures it read, incremental.py); the others are rendered, in forked processes where that
pays off, and every page gets the snapshot's stamp set in. Nothing here writes: build.py hands the
files to the writer.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from markupsafe import Markup

from . import compute
from .assets import headers, publish
from .compute_calculator import model_query
from .errors import BuildError
from .figures import site_figures
from .incremental import PIECES, Read, StampWords, Values, finalize, read_paths, stamp_texts, substitutable, unstamp, watched
from .load import snapshot_time
from .marker import Earlier
from .memo import Computed
from .options import template_cache
from .pages import KINDS, Page, breadcrumbs, plan_pages
from .records import Catalog, Site
from .render import Renderer

if TYPE_CHECKING:
    from .build import Inputs

Out = TypeVar("Out")  # what rendering a page gives: its bytes and what it read
ROOT_PAGES = ("index.html", "404.html")


def subjects(catalog: Catalog) -> dict[str, list[str]]:
    """The ids that pages are generated for, by kind of subject."""
    return {"models": [m.id for m in catalog.models], "gpus": [g.id for g in catalog.gpus]}


def content_label(page: Page) -> str:
    """The input label (fingerprint.input_files) of the Markdown a page reads, or ""."""
    return f"content/{page.lang}/{page.key}.md" if KINDS[page.key].has_content else ""


def own_files(site: Site) -> list[tuple[str, str]]:
    """The site's files besides its pages that are rendered, each with its language ("": all)."""
    return [
        *((name, "") for name in (*ROOT_PAGES, "sitemap.xml", "robots.txt")),
        *((f"{lang.code}/404.html", lang.code) for lang in site.languages),
    ]


@dataclass(frozen=True)
class Rendering:
    """Every output file, and what the marker records for the next build to keep pages by."""

    files: dict[str, bytes]
    pages: dict[str, dict[str, Any]]
    stamps: dict[str, dict[str, str]]
    rendered: int  # HTML files rendered, not kept


def render_site(inputs: Inputs, jobs: int = 1, earlier: Earlier | None = None, computed: Computed | None = None) -> dict[str, bytes]:
    """Every output file, as bytes, computed in memory before anything is written (site_rendering)."""
    return site_rendering(inputs, jobs, earlier, computed).files


def site_rendering(
    inputs: Inputs,
    jobs: int = 1,
    earlier: Earlier | None = None,
    computed: Computed | None = None,
    keys: dict[str, str] | None = None,
    figures_key: str = "",
    words_key: str = "",
) -> Rendering:
    """Every output file, as bytes, computed in memory before anything is written.

    A page is kept from `earlier` (not rendered) when its price-free key (`keys`) is the one the
    last build recorded and every snapshot figure it read then digests as before (incremental.py);
    `computed` holds the catalog's figures and compiled strings when an earlier build made them
    (memo.py). Figures of the key the last build's were (`figures_key`) are its figures, so no
    value a page read need be looked up again; nor are the stamp's words rendered again when their
    key (`words_key`) is the last build's. With jobs > 1 the pages are shared among forked processes (the rendering is pure).
    """
    options, catalog, site = inputs.options, inputs.catalog, inputs.site
    figures = computed.figures if computed else site_figures(catalog)
    pages = plan_pages(site, subjects(catalog))
    languages = [language.code for language in site.languages]
    messages = computed.messages if computed else None
    cache = template_cache(options.project)
    renderer = Renderer(options.templates, options.translations, languages, cache, messages)
    assets = publish(options.static)  # pages link to the names these files are published under
    links = {(page.key, page.subject, page.lang): page.url for page in pages}
    planned = frozenset(links.values())
    currency = catalog.snapshot.currency
    common: dict[str, Any] = dict(
        site=site,
        catalog=catalog,
        snapshot=catalog.snapshot,
        rules=catalog.rules,
        figures=figures,
        shop=figures.shop,
        guide=figures.main,
        vram=figures.vram,
        sizing=figures.sizing,
        calc=figures.calculator,
        method=figures.method,
        tune=figures.finetune,
        api=figures.api,
        infer=figures.infer,
        fits=compute.fits,
        snapshot_time=snapshot_time,
        url=lambda relative: site.base_path + assets.url(relative),
        absolute=lambda relative: site.base_url + assets.url(relative),
        link=lambda key, lang, subject="": site.base_path + links[(key, subject, lang)],
        marketplace=site.marketplace,
        rent=site.marketplace.rent,
        breadcrumbs=lambda page: breadcrumbs(site, page, planned),
        calculator_query=lambda model, context, gpus: model_query(catalog, model, context, gpus),
        has_page=lambda key, lang: (key, "", lang) in links,
    )
    first = languages[0]

    def stamp_of(lang: str) -> dict[str, Markup]:
        return stamp_texts(renderer.render("_stamp.html", {**common, **renderer.language_context(lang, currency)}))

    texts = _earlier_words(earlier, words_key, languages) or {lang: stamp_of(lang) for lang in languages}
    placeholders = {lang: substitutable(words) for lang, words in texts.items()}
    values = Values(common)
    outputs = [(page.output, page.lang) for page in pages] + [(name, lang or first) for name, lang in own_files(site)]
    same = bool(figures_key) and earlier is not None and earlier.figures == figures_key
    kept = _unchanged_outputs(outputs, earlier, keys, None if same else values) if earlier and keys else {}

    def context_of(lang: str, log: set[Read]) -> dict[str, Any]:
        stamp = StampWords(texts[lang], placeholders[lang], log)
        return {**common, **watched(common, log), **renderer.language_context(lang, currency), "stamp": stamp}

    def render(page: Page) -> tuple[bytes, list[Read]]:
        log: set[Read] = {("snapshot", "currency")}
        context = {**context_of(page.lang, log), "page": page}
        if KINDS[page.key].has_content:
            context["content"] = renderer.content(inputs.content[(page.lang, page.key)], context)
        return renderer.render(page.template, context).encode(), sorted(log)

    def render_own(name: str, lang: str) -> tuple[bytes, list[Read]]:
        log: set[Read] = {("snapshot", "currency")}
        if lang:  # for hosts that serve the nearest 404.html: one in each language's folder
            html = renderer.render("not-found.html", context_of(lang, log))
        else:
            root = {**context_of(first, log), "pages": pages}
            root["translations"] = [(language, renderer.strings[language.code]["_"]) for language in site.languages]
            root["translate"] = {language.code: renderer.strings[language.code]["_"] for language in site.languages}
            html = renderer.render(name, root)
        return html.encode(), sorted(log)

    due = tuple(page for page in pages if page.output not in kept)
    parallel = jobs > 1 and len(due) > 1
    if parallel:  # else a language's formats are loaded when a page of it is rendered
        renderer.prepare(currency)
    rendered, problems = in_parallel(due, render, jobs) if parallel else render_pages(due, render)
    if problems:
        raise BuildError(sorted(set(problems), key=problems.index))
    rendered.update({name: render_own(name, lang) for name, lang in own_files(site) if name not in kept})
    files, records = {}, {}
    for output, lang in outputs:
        raw, paths, deps = kept[output] if output in kept else (*rendered[output], "")
        files[output], places = finalize(raw, texts[lang])
        if keys is not None:
            record = {"key": keys[output], "deps": deps or values.digest(paths), "paths": [list(path) for path in paths]}
            records[output] = {**record, "stamps": [list(place) for place in places]}
    extra = dict(assets.files)
    extra["_headers"] = headers({**files, **extra}, site.base_path)
    clash = sorted(set(extra) & set(files))
    if clash:  # check_outputs keeps pages apart; this keeps them off the site's own files
        raise BuildError([f"{name}: a page and the site's own file would both be written here" for name in clash])
    stamps = {lang: {piece: str(text) for piece, text in words.items()} for lang, words in texts.items()}
    count = sum(1 for output, _ in outputs if output not in kept and output.endswith(".html"))
    return Rendering({**files, **extra}, records, stamps, count)


def _earlier_words(earlier: Earlier | None, key: str, languages: list[str]) -> dict[str, dict[str, Markup]] | None:
    """The stamp's words the last build set in, by language, when they were rendered from what this
    build's would be (the same key) and the marker holds them whole."""
    if earlier is None or not key or earlier.words != key:
        return None
    words = {}
    for lang in languages:
        pieces = earlier.stamps.get(lang)
        if not isinstance(pieces, dict) or set(pieces) != set(PIECES) or not all(isinstance(text, str) for text in pieces.values()):
            return None
        words[lang] = {piece: Markup(text) for piece, text in pieces.items()}
    return words


def _unchanged_outputs(
    outputs: list[tuple[str, str]], earlier: Earlier, keys: dict[str, str], values: Values | None
) -> dict[str, tuple[bytes, list[Read], str]]:
    """The last build's files (as rendered, the stamp's words taken out), what they read and its
    digest, for those whose price-free key and snapshot figures read are this build's; `outputs`
    pairs each file with its stamp's language; no `values`: the figures are the last build's."""
    kept = {}
    for output, lang in outputs:
        record = earlier.records.get(output)
        if not isinstance(record, dict) or record.get("key") != keys.get(output) or output not in earlier.files:
            continue
        paths, deps = read_paths(record.get("paths")), record.get("deps")
        if paths is None or not isinstance(deps, str) or (values is not None and values.digest(paths) != deps):
            continue
        words = earlier.stamps.get(lang)
        raw = unstamp(earlier.files[output], record.get("stamps"), words) if isinstance(words, dict) else None
        if raw is not None:
            kept[output] = (raw, paths, deps)
    return kept


def render_pages(pages: Iterable[Page], render: Callable[[Page], Out]) -> tuple[dict[str, Out], list[str]]:
    """Render every page; a page that fails is reported, and the others are still rendered,
    so one build lists every problem (a content file's error is reported once, not per page)."""
    files: dict[str, Out] = {}
    problems: list[str] = []
    for page in pages:
        try:
            files[page.output] = render(page)
        except BuildError as error:
            problems += error.lines
        except Exception as error:  # noqa: BLE001 - a template that fails on some catalog value
            problems.append(f"templates/{page.template}: {page.output}: {type(error).__name__}: {error}")
    return files, problems


def in_parallel(pages: tuple[Page, ...], render: Callable[[Page], Out], jobs: int) -> tuple[dict[str, Out], list[str]]:
    """Render pages in `jobs` processes: forked children take every jobs-th page, the parent the rest."""
    children = []
    for job in range(1, jobs):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child renders its share, sends it back and always leaves here
            try:
                os.close(reader)
                _render_share(pages[job::jobs], render, writer)
            finally:
                os._exit(0)
        os.close(writer)
        children.append((pid, reader))
    try:
        files, problems = render_pages(pages[0::jobs], render)
    finally:
        results = [_collect(pid, reader) for pid, reader in children]
    for kind, value in results:
        if kind != "ok":
            problems.append(f"a rendering process failed: {value}")
            continue
        files.update(value[0])
        problems += value[1]
    return {p.output: files[p.output] for p in pages if p.output in files}, problems


def _render_share(pages: tuple[Page, ...], render: Callable[[Page], Any], writer: int) -> None:
    """In a child: render pages and pickle the outcome (files and problems, or a crash) into the pipe."""
    payload: tuple[str, Any]
    try:
        payload = ("ok", render_pages(pages, render))
    except BaseException:  # noqa: BLE001 - reported by the parent
        payload = ("crash", traceback.format_exc(limit=-1).strip().splitlines()[-1])
    with contextlib.suppress(OSError), os.fdopen(writer, "wb") as stream:
        pickle.dump(payload, stream)


def _collect(pid: int, reader: int) -> tuple[str, Any]:
    """A child's outcome; a child that died without sending one is a crash, not a hang."""
    try:
        with os.fdopen(reader, "rb") as stream:
            outcome = pickle.load(stream)
    except (EOFError, pickle.UnpicklingError, OSError) as error:
        outcome = ("crash", f"no result ({type(error).__name__})")
    os.waitpid(pid, 0)
    return outcome
