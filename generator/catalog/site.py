"""content/site.yaml (base URL, languages, each page's path per language, the marketplace) and the
front matter of every content page."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

from gpumem.catalog.load import ContentPage, LineDict
from gpumem.catalog.validate import SLUG, Entry, Invalid, describe, positive_number, prose, text, url
from gpumem.errors import Problems
from gpumem.records.catalog import Language, Marketplace, Site

SITE_FIELDS = ("base_url", "languages", "stale_after_days", "routes", "marketplace")
RENT_PLACEHOLDERS = ("{gpu}", "{count}")
# What a URL's host and path may hold (RFC 3986: unreserved, sub-delims, ':', '@', '/' and '%'
# escapes); a quote, '<', a space or a backslash would be written as is into every canonical link.
URL_CHARACTER = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@/%-]")
DOT_SEGMENTS = (".", "..")


def base_url(value: Any) -> str:
    """Where the site is published: https://, a host, a path of folders ending with '/'. Every page's
    canonical link, the sitemap and the _headers rules start with it, as written."""
    if not isinstance(value, str) or len(value) > 2_000 or not value.startswith("https://"):
        raise Invalid(f"expected a URL starting with https://, got {describe(value)}")
    if "?" in value or "#" in value:
        raise Invalid(f"expected no query (?) or fragment (#) in the site's address, got {describe(value)}")
    bad = next((c for c in value if not URL_CHARACTER.fullmatch(c)), None)
    if bad is not None:
        escaped = "".join(f"%{byte:02X}" for byte in bad.encode())
        raise Invalid(f"{bad!r} is not a character a URL holds, in {describe(value)}; write it percent-encoded ({escaped})")
    parts = urllib.parse.urlsplit(value)
    if "@" in parts.netloc:
        raise Invalid("holds a user name or password (before '@'), which every page's canonical link would publish; remove it")
    if not parts.hostname or not _port_reads(parts) or re.search(r"%(?![0-9A-Fa-f]{2})", value):
        raise Invalid(f"expected https://, a host and a path, got {describe(value)}")
    segments = parts.path.split("/")[1:-1]
    odd = next((segment for segment in segments if urllib.parse.unquote(segment) in (*DOT_SEGMENTS, "")), None)
    if odd is not None:
        raise Invalid(
            f"the path segment {odd!r} of {describe(value)} is no folder: hosts resolve it away, and the _headers rules would "
            "match nothing; write the path it stands for"
        )
    return value


def _port_reads(parts: urllib.parse.SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 - urllib checks the port as it reads it
    except ValueError:
        return False
    return True


base_url.expectation = " (expected a URL like https://example.org/guides/)"  # type: ignore[attr-defined]


def rent_template(value: Any) -> str:
    """The address that rents a configuration: an http(s) URL holding {gpu} and {count}, and no other placeholder."""
    address = url(value)
    for found in re.findall(r"\{[^{}]*\}|[{}]", address):
        if found not in RENT_PLACEHOLDERS:
            raise Invalid(f"unknown placeholder {found!r} in {describe(address)} (expected only {{gpu}} and {{count}})")
    missing = [name for name in RENT_PLACEHOLDERS if name not in address]
    if missing:
        raise Invalid(f"expected a URL with {' and '.join(missing)} where the GPU and the count go, got {describe(address)}")
    return address


rent_template.expectation = " (expected a URL with {gpu} and {count})"  # type: ignore[attr-defined]


def read_marketplace(top: Entry) -> Marketplace | None:
    """site.yaml's marketplace: name, home_url and rent_url (a template of {gpu} and {count})."""
    entry = top.section("marketplace")
    if entry is None:
        return None
    entry.check_keys(("name", "home_url", "rent_url"))
    found = Marketplace(entry.get("name", text), entry.get("home_url", url), entry.get("rent_url", rent_template))
    top.failed = top.failed or entry.failed
    return None if entry.failed else found


def read_site(data: Any, path: str, problems: Problems, page_keys: Iterable[str]) -> Site | None:
    """content/site.yaml: base URL, languages and each page's path per language."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: site: expected a mapping of settings")
        return None
    top = Entry(problems, path, data, "site")
    top.check_keys(SITE_FIELDS)
    address = top.get("base_url", base_url)
    if address and not address.endswith("/"):
        top.report(data.line_of("base_url"), "base_url", f"expected a URL ending with '/', got {describe(address)}")
    stale = top.get("stale_after_days", positive_number, required=False, default=7.0)
    marketplace = read_marketplace(top)
    languages: list[Language] = []
    for item in data.get("languages") or []:
        if not isinstance(item, LineDict):
            top.report(data.line_of("languages"), "languages", f"expected a mapping with code and name, got {describe(item)}")
            continue
        entry = Entry(problems, path, item, "site", "languages.")
        entry.check_keys(("code", "name"))
        code, name = entry.get("code", locale_code), entry.get("name", text)
        if code and code.lower() in (language.code.lower() for language in languages):
            entry.report(item.line_of("code"), "code", f"language {describe(code)} is listed twice")
        top.failed = top.failed or entry.failed
        if code and name and not entry.failed:
            languages.append(Language(code, name))
    if not languages:
        top.report(data.line_of("languages"), "languages", "expected a list of languages with code and name")
    codes = [language.code for language in languages]
    routes_entry = top.section("routes")
    routes: dict[str, dict[str, str]] = {}
    route_lines: dict[tuple[str, str], int] = {}
    if routes_entry is not None:
        routes_entry.check_keys(page_keys)
        for key in page_keys:
            route = routes_entry.section(key)
            if route is None:
                continue
            route.check_keys(codes)
            paths = {code: route.get(code, _route_path) for code in codes}
            routes[key] = {code: value for code, value in paths.items() if value is not None}
            route_lines.update({(key, code): route.data.line_of(code) for code in routes[key]})
            for code, value in routes[key].items():
                other = next((k for k in routes if k != key and routes[k].get(code) == value), None)
                if other is not None:
                    route.report(route.data.line_of(code), code, f"path {describe(value)} is also the path of routes.{other}.{code}")
            routes_entry.failed = routes_entry.failed or route.failed
        top.failed = top.failed or routes_entry.failed
    if top.failed or marketplace is None:
        return None
    return Site(address, tuple(languages), routes, stale, route_lines, marketplace)


def locale_code(value: Any) -> str:
    """A language code Babel knows (es, en, pt-BR...), for its number, date and plural rules."""
    from babel import Locale, UnknownLocaleError

    code = text(value)
    try:
        Locale.parse(code.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        raise Invalid(f"unknown language code {describe(value)} (expected one Babel knows, like es or pt-BR)") from None
    return code


def _route_path(value: Any) -> str:
    """A page's path below its language folder: '' for the language's home, else slugs joined by '/'."""
    if value == "":
        return ""
    if not isinstance(value, str) or not all(SLUG.fullmatch(part) for part in value.split("/")):
        raise Invalid(f"expected a path of lowercase slugs joined by '/', got {describe(value)}")
    return value


def check_front_matter(page: ContentPage, key: str, problems: Problems) -> bool:
    """A content page's front matter: title and description text, and FAQ items of q and a."""
    entry = Entry(problems, page.path, page.meta, key)
    entry.check_keys(("title", "description", "faq"))
    entry.get("title", text)
    entry.get("description", prose)
    items = page.meta.get("faq", [])
    if not isinstance(items, list):
        entry.report(page.meta.line_of("faq"), "faq", f"expected a list of questions (q) and answers (a), got {describe(items)}")
        return False
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            entry.report(page.meta.line_of("faq"), f"faq[{index}]", f"expected a mapping with q and a, got {describe(item)}")
            continue
        question = Entry(problems, page.path, item, key, f"faq[{index}].")
        question.check_keys(("q", "a"))
        question.get("q", text)
        question.get("a", prose)
        entry.failed = entry.failed or question.failed
    return not entry.failed
