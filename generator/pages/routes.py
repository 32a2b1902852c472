"""Which pages the site has, where each lives, and its translations (i18n as data)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from gpumem.records.catalog import Site


@dataclass(frozen=True)
class Kind:
    """A kind of page: its template, whether content/<lang>/<key>.md holds its words, its subjects,
    whether it shows prices (then it shows the snapshot's time too), and the kind whose route it
    takes without a subject (an index of that kind's pages) when it has no route of its own."""

    template: str
    has_content: bool = True
    subjects: str = ""
    prices: bool = True
    index_of: str = ""


KINDS = {
    "home": Kind("home.html", prices=False),
    "guide-memory": Kind("guide.html"),
    "guide-vram": Kind("guide.html"),
    "guide-sizing": Kind("guide.html", prices=False),
    "calculator": Kind("calculator.html"),
    "prices": Kind("prices.html"),
    "methodology": Kind("methodology.html", prices=False),
    "sources": Kind("methodology.html", prices=False),
    "guide-finetune": Kind("guide-finetune.html"),
    "guide-api": Kind("guide-api.html"),
    "guide-inference": Kind("guide-inference.html"),
    "models": Kind("models.html", has_content=False, index_of="model"),
    "gpus": Kind("gpus.html", has_content=False, index_of="gpu"),
    "model": Kind("model.html", has_content=False, subjects="models"),
    "gpu": Kind("gpu.html", has_content=False, subjects="gpus"),
    "search": Kind("search.html", has_content=False, prices=False),
}
CONTENT_KEYS = tuple(key for key, kind in KINDS.items() if kind.has_content)
ROUTE_KEYS = tuple(key for key, kind in KINDS.items() if not kind.index_of)  # the kinds content/site.yaml routes


@dataclass(frozen=True)
class Alternate:
    """One translation of a page: `lang` is a code or 'x-default'; `url` is below the site root."""

    lang: str
    url: str


@dataclass(frozen=True)
class Page:
    """One page in one language, and all its translations (itself included)."""

    key: str
    lang: str
    url: str
    template: str
    alternates: tuple[Alternate, ...]
    subject: str = ""

    @property
    def shows_prices(self) -> bool:
        return KINDS[self.key].prices

    @property
    def output(self) -> str:
        """The file the page is written to, relative to the output folder."""
        return self.url + "index.html"

    def alternate(self, lang: str) -> Alternate:
        return next(a for a in self.alternates if a.lang == lang)


def page_url(lang: str, route: str, subject: str = "") -> str:
    """'es/guias/memoria-gpu/': language folder, localized route, then the subject's id."""
    parts = [lang, route, subject]
    return "/".join(part for part in parts if part) + "/"


def plan_pages(site: Site, subjects: Mapping[str, Iterable[str]]) -> tuple[Page, ...]:
    """Every page in every language: kinds in order, subjects in catalog order, then languages."""
    pages = []
    codes = [language.code for language in site.languages]
    for key, kind in KINDS.items():
        routes = site.routes[kind.index_of or key]
        for subject in subjects.get(kind.subjects, ()) if kind.subjects else ("",):
            translations = tuple(Alternate(code, page_url(code, routes[code], subject)) for code in codes)
            default = Alternate("x-default", "" if key == "home" else translations[0].url)
            for alternate in translations:
                pages.append(Page(key, alternate.lang, alternate.url, kind.template, (*translations, default), subject))
    return tuple(pages)


@dataclass(frozen=True)
class Crumb:
    """One step of a page's breadcrumb: what it is ('home', a section such as 'models', or 'page')
    and its URL below the site root."""

    key: str
    url: str


def breadcrumbs(site: Site, page: Page, planned: Collection[str] = ()) -> tuple[Crumb, ...]:
    """Home, then the section of a page about one subject (the index of its kind, at the kind's
    route without a subject), then the page itself; the home page is its own one step.

    A section whose index page is not among the `planned` URLs has no URL: it is named, not linked.
    """
    home = Crumb("home", page_url(page.lang, site.routes["home"][page.lang]))
    if page.key == "home":
        return (home,)
    steps = [home]
    if page.subject:
        index = page_url(page.lang, site.routes[page.key][page.lang])
        steps.append(Crumb(KINDS[page.key].subjects, index if index in planned else ""))
    return (*steps, Crumb("page", page.url))
