"""Which pages the site has, where each lives, and its translations (i18n as data)."""

from __future__ import annotations

from dataclasses import dataclass

from .records import Site

# Page kinds: which template draws them and which content file holds their words.
TEMPLATES = {
    "home": "home.html",
    "guide-memory": "guide.html",
}


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
    def output(self) -> str:
        """The file the page is written to, relative to the output folder."""
        return self.url + "index.html"

    def alternate(self, lang: str) -> Alternate:
        return next(a for a in self.alternates if a.lang == lang)


def page_url(lang: str, route: str, subject: str = "") -> str:
    """'es/guias/memoria-gpu/': language folder, localized route, then the subject's id."""
    parts = [lang, route, subject]
    return "/".join(part for part in parts if part) + "/"


def plan_pages(site: Site) -> tuple[Page, ...]:
    """Every page in every language, in route order then language order."""
    pages = []
    codes = [language.code for language in site.languages]
    for key, template in TEMPLATES.items():
        routes = site.routes[key]
        translations = tuple(Alternate(code, page_url(code, routes[code])) for code in codes)
        default = Alternate("x-default", "" if key == "home" else translations[0].url)
        for alternate in translations:
            pages.append(Page(key, alternate.lang, alternate.url, template, (*translations, default)))
    return tuple(pages)
