"""Stage 4, over the whole site: every page and file rendered in memory, in forked processes where
that pays off. The preview (build.Session) hands back its last build's pages with their keys: a
page whose key (fingerprint.page_keys) is the same is taken from there, not rendered. Nothing here
writes: commands/build.py hands the files to the writer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from gpumem.catalog.load import snapshot_time
from gpumem.errors import BuildError
from gpumem.figures import shared as compute
from gpumem.figures.calculator import model_query
from gpumem.figures.calculator_data import PresetFiles
from gpumem.figures.site import SiteFigures, site_figures
from gpumem.options import template_cache
from gpumem.pages.assets import headers, publish
from gpumem.pages.headings import with_headings_linked
from gpumem.pages.parallel import in_parallel, render_pages
from gpumem.pages.render import Renderer
from gpumem.pages.routes import KINDS, Page, breadcrumbs, plan_pages
from gpumem.pages.search import Indexed, SearchIndex
from gpumem.records.catalog import Catalog, Site

if TYPE_CHECKING:
    from gpumem.catalog.inputs import Inputs

ROOT_PAGES = ("index.html", "404.html")
STAMP_PIECE = re.compile(r"<(\w+)>(.*?)</\1>", re.S)  # a piece of templates/_stamp.html: <date>…</date>


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
class Computed:
    """What a build computes before rendering, and the key of the inputs it comes from
    (fingerprint.computed_key): the validated catalog, every page's figures, the compiled strings."""

    key: str
    catalog: Catalog
    figures: SiteFigures
    messages: dict[str, bytes]  # by language, its .mo (formats.compile_translations)


@dataclass(frozen=True)
class Rendering:
    """Every output file, and how many of the HTML files were rendered (not taken as they were)."""

    files: dict[str, bytes]
    rendered: int


def render_site(inputs: Inputs, jobs: int = 1, computed: Computed | None = None) -> dict[str, bytes]:
    """Every output file, as bytes, computed in memory before anything is written (site_rendering)."""
    return site_rendering(inputs, jobs, computed).files


def site_rendering(
    inputs: Inputs,
    jobs: int = 1,
    computed: Computed | None = None,
    earlier: dict[str, tuple[str, bytes]] | None = None,
    keys: dict[str, str] | None = None,
    search: SearchIndex | None = None,
) -> Rendering:
    """Every output file, as bytes, computed in memory before anything is written.

    `computed` holds the catalog's figures and compiled strings when they were made already; a file
    of `earlier` (output -> its key and bytes) whose key is the one in `keys` is taken as it is.
    With jobs > 1 the pages are shared among forked processes (the rendering is pure). The search index
    (pages/search.py) is made last, from the rendered pages, by `search` (the preview's, which keeps its last).
    """
    options, catalog, site = inputs.options, inputs.catalog, inputs.site
    figures = computed.figures if computed else site_figures(catalog)
    pages = plan_pages(site, subjects(catalog))
    languages = [language.code for language in site.languages]
    messages = computed.messages if computed else None
    cache = template_cache(options.project)
    renderer = Renderer(options.templates, options.translations, languages, cache, messages)
    currency = catalog.snapshot.currency
    generated = {"presets": figures.calculator_presets, "config-data": config_data(renderer, figures, languages, currency)}
    assets = publish(options.static, generated)  # pages link to the names these files are published under
    links = {(page.key, page.subject, page.lang): page.url for page in pages}
    planned = frozenset(links.values())
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

    def context_of(lang: str) -> dict[str, Any]:
        return {**common, **renderer.language_context(lang, currency)}

    # The snapshot's stamp (stamp.line, stamp.date…), rendered once per language for every page.
    stamps = {lang: stamp_words(renderer.render("_stamp.html", context_of(lang))) for lang in languages}

    def render(page: Page) -> bytes:
        context = {**context_of(page.lang), "stamp": stamps[page.lang], "page": page}
        if KINDS[page.key].has_content:
            context["content"] = renderer.content(inputs.content[(page.lang, page.key)], context)
        return with_headings_linked(renderer.render(page.template, context)).encode()

    def render_own(name: str, lang: str) -> bytes:
        if lang:  # for hosts that serve the nearest 404.html: one in each language's folder
            return renderer.render("not-found.html", {**context_of(lang), "stamp": stamps[lang]}).encode()
        root = {**context_of(first), "stamp": stamps[first], "pages": pages}
        root["translations"] = [(language, renderer.strings[language.code]["_"]) for language in site.languages]
        root["translate"] = {language.code: renderer.strings[language.code]["_"] for language in site.languages}
        return renderer.render(name, root).encode()

    kept = {output: content for output, (key, content) in (earlier or {}).items() if keys and keys.get(output) == key}
    due = tuple(page for page in pages if page.output not in kept)
    parallel = jobs > 1 and len(due) > 1
    if parallel:  # else a language's formats are loaded when a page of it is rendered
        renderer.prepare(currency)
    rendered, problems = in_parallel(due, render, jobs) if parallel else render_pages(due, render)
    if problems:
        raise BuildError(sorted(set(problems), key=problems.index))
    rendered.update({name: render_own(name, lang) for name, lang in own_files(site) if name not in kept})
    files = {
        output: kept[output] if output in kept else rendered[output]
        for output in [page.output for page in pages] + [n for n, _ in own_files(site)]
    }
    search = search or SearchIndex(cache)
    extra = {**assets.files, **search.files(Indexed(page.output, page.lang, files[page.output]) for page in pages if page.key != "search")}
    extra["_headers"] = headers({**files, **extra}, site.base_path)
    clash = sorted(set(extra) & set(files))
    if clash:  # check_outputs keeps pages apart; this keeps them off the site's own files
        raise BuildError([f"{name}: a page and the site's own file would both be written here" for name in clash])
    count = sum(1 for output in rendered if output.endswith(".html"))
    return Rendering({**files, **extra}, count)


def config_data(renderer: Renderer, figures: SiteFigures, languages: list[str], currency: str) -> PresetFiles:
    """What config.js reads beyond the page, published as assets/config-data.<digest>.json (the counting data) and
    assets/config-data.<digest>/<lang>.json (the messages only it shows, in each language: _config_messages.html)."""

    def words(lang: str) -> bytes:
        return renderer.render("_config_messages.html", renderer.language_context(lang, currency)).strip().encode()

    return replace(figures.calculator_counting, files={f"{lang}.json": words(lang) for lang in languages})


def stamp_words(rendered: str) -> dict[str, Markup]:
    """The pieces of templates/_stamp.html as rendered for one language, by name."""
    return {name: Markup(text.strip()) for name, text in STAMP_PIECE.findall(rendered)}
