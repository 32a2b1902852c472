"""Helpers that read a built site the way a crawler does: links, ids, alternates."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse


class PageLinks(HTMLParser):
    """Every href and src of a page, every id it defines, and its hreflang alternates."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.alternates: dict[str, str] = {}
        self.canonical = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "link" and attrs.get("rel") == "alternate":
            self.alternates[attrs["hreflang"]] = attrs["href"]
        elif tag == "link" and attrs.get("rel") == "canonical":
            self.canonical = attrs["href"]
        elif tag in ("a", "link") and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag in ("script", "img") and attrs.get("src"):
            self.links.append(attrs["src"])


def read_page(path: Path) -> PageLinks:
    parser = PageLinks()
    parser.feed(path.read_text())
    return parser


def target_file(site: Path, prefix: str, url: str) -> Path | None:
    """The file a site-internal URL (path starting with prefix) points to, or None."""
    path = urlparse(url).path
    if not path.startswith(prefix):
        return None
    local = site / path[len(prefix) :]
    return local / "index.html" if path.endswith("/") else local


def broken_links(site: Path, prefix: str = "/") -> list[str]:
    """Internal links, sources and #fragments of every HTML page that point nowhere."""
    problems, pages = [], {}
    for page in sorted(site.rglob("*.html")):
        pages[page] = read_page(page)
    for page, parsed in pages.items():
        here = prefix + str(page.relative_to(site)).removesuffix("index.html")
        for link in parsed.links:
            if urlparse(link).scheme in ("http", "https", "mailto"):
                continue
            absolute, fragment = urldefrag(urljoin(here, link))
            target = target_file(site, prefix, absolute)
            if target is None or not target.is_file():
                problems.append(f"{page.relative_to(site)}: {link}: no such file")
            elif fragment and fragment not in (pages.get(target) or read_page(target)).ids:
                problems.append(f"{page.relative_to(site)}: {link}: no element with id {fragment!r}")
    return problems


def crawl(origin: str, start: str) -> tuple[set[str], list[str]]:
    """Follow every internal link from `start` over HTTP; return pages seen and failures."""
    import urllib.error
    import urllib.request

    seen, failures, queue = set(), [], [start]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            with urllib.request.urlopen(origin + path, timeout=5) as response:
                body = response.read()
                kind = response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            failures.append(f"{path}: HTTP {error.code}")
            continue
        if "html" not in kind:
            continue
        parser = PageLinks()
        parser.feed(body.decode())
        for link in parser.links:
            if urlparse(link).scheme:
                continue
            target = urldefrag(urljoin(path, link))[0]
            if target not in seen:
                queue.append(target)
    return seen, failures
