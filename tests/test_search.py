"""Search across the site: the Pagefind index a build writes under pagefind/ (pages/search.py), one per language,
the same bytes for the same pages and made again only when they change; the search page, the only page that loads
the search script; and, in Chromium, a search in English and in Spanish finding a model, a GPU and a guide's section."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from gpumem.pages import search
from gpumem.pages.search import Indexed, SearchIndex, document, run_pagefind

from .project import published
from .test_quality import axe_violations

LANGUAGES = ["de", "en", "es", "fr", "pt"]
SEARCH_PAGES = ["es/buscar/index.html", "en/search/index.html", "pt/pesquisa/index.html", "fr/recherche/index.html", "de/suche/index.html"]

PAGE = """<!doctype html>
<html lang="en"><head><title>Mixtral · GPU memory guides</title>
<meta name="description" content="How much memory Mixtral &amp; friends need.">
</head><body><header><a href="/">GPU memory guides</a></header>
<main><h1>Mixtral <small>8x22B</small></h1>
<p>Prose with US$1.20/h, not indexed.</p>
<h2 id="deployment"><a href="#deployment">Serve it &amp; launch</a></h2>
<table><tr><td>2 × H100</td></tr></table>
<h3 id="launch"><a href="#launch">How to start it</a></h3>
<h4 id="deep">Not a section of the list</h4>
</main></body></html>"""


def test_a_page_is_indexed_by_its_title_description_and_section_headings():
    assert document("en", PAGE) == (
        '<!doctype html><html lang="en"><head><title>Mixtral 8x22B</title></head><body>'
        "<h1>Mixtral 8x22B</h1><p>How much memory Mixtral &amp; friends need.</p>"
        '<h2 id="deployment">Serve it &amp; launch</h2><h3 id="launch">How to start it</h3></body></html>'
    )


def test_the_fixture_site_has_one_index_per_language_without_the_search_pages(built_site: Path):
    entry = json.loads((built_site / "pagefind/pagefind-entry.json").read_text())
    assert list(entry["languages"]) == LANGUAGES  # written back sorted: Pagefind writes a hash map's order
    assert {lang: found["page_count"] for lang, found in entry["languages"].items()} == dict.fromkeys(LANGUAGES, 67)
    for lang, found in entry["languages"].items():
        assert (built_site / f"pagefind/pagefind.{found['hash']}.pf_meta").is_file()
        assert (built_site / f"pagefind/wasm.{lang}.pagefind").is_file()
    assert len(list((built_site / "pagefind/fragment").iterdir())) == 5 * 67
    assert sorted(path.name for path in (built_site / "pagefind").glob("*.js")) == ["pagefind-worker.js", "pagefind.js"]


def test_only_the_search_pages_load_the_search_script_and_every_page_links_them(built_site: Path):
    script = f"/assets/{published(built_site, 'search.js').name}"
    style = f"/assets/{published(built_site, 'search.css').name}"
    loading = sorted(
        str(p.relative_to(built_site)) for p in built_site.rglob("*.html") if script in p.read_text() or style in p.read_text()
    )
    assert loading == sorted(SEARCH_PAGES)
    english = (built_site / "en/models/mixtral-8x22b/index.html").read_text()
    assert '<a href="/en/search/">Search</a>' in english
    french = (built_site / "fr/recherche/index.html").read_text()
    assert '<a href="/fr/recherche/" aria-current="page">Rechercher</a>' in french
    assert "<p>La recherche a besoin de JavaScript. Sans lui, parcourez les index et les guides\u202f:</p>" in french
    assert re.search(
        r'<noscript>\n<p>[^<]*</p>\n<ul>\n<li><a href="/fr/modeles/">Modèles</a></li>\n<li><a href="/fr/gpu/">GPU</a></li>', french
    )


DOCUMENTS = {
    "en/a/index.html": document("en", PAGE),
    "es/a/index.html": document("es", PAGE.replace('lang="en"', 'lang="es"').replace("Serve it", "Servirlo")),
    "de/a/index.html": document("de", PAGE.replace("Serve it", "Bereitstellen")),
}


def test_the_built_index_is_what_pagefind_makes_of_the_site_again(built_site: Path):
    """The index the build published (perhaps from the cache) is, byte for byte, a fresh run of Pagefind on the
    site's own pages: one more run, on 335 pages, shows Pagefind's output stable where it indexes in parallel."""
    pages = [
        Indexed(str(path.relative_to(built_site)), path.relative_to(built_site).parts[0], path.read_bytes())
        for path in sorted(built_site.glob("*/**/index.html"))
        if str(path.relative_to(built_site)) not in SEARCH_PAGES
    ]
    assert len(pages) == 5 * 67
    published_files = {str(p.relative_to(built_site)): p.read_bytes() for p in (built_site / "pagefind").rglob("*") if p.is_file()}
    assert SearchIndex(None).files(pages) == published_files


def test_the_same_documents_give_the_same_index_bytes():
    first, second = run_pagefind(DOCUMENTS), run_pagefind(dict(reversed(DOCUMENTS.items())))
    assert first == second
    assert list(json.loads(first["pagefind/pagefind-entry.json"])["languages"]) == ["de", "en", "es"]
    assert not [name for name in first if "-ui." in name or "highlight" in name]


def test_pagefind_runs_again_only_when_a_document_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    runs: list[int] = []

    def counted(documents: dict[str, str]) -> dict[str, bytes]:
        runs.append(len(documents))
        return run_pagefind(documents)

    monkeypatch.setattr(search, "run_pagefind", counted)
    pages = [Indexed("en/a/index.html", "en", PAGE.encode()), Indexed("es/a/index.html", "es", PAGE.encode())]
    made = SearchIndex(tmp_path).files(pages)
    assert runs == [2] and len(list(tmp_path.glob("search-*.zip"))) == 1
    kept = SearchIndex(tmp_path).files(pages)  # another build: from the cache folder
    assert kept == made and runs == [2]
    priced = [Indexed(page.output, page.lang, page.html.replace(b"US$1.20/h", b"US$1.10/h")) for page in pages]
    assert SearchIndex(tmp_path).files(priced) == made and runs == [2]  # prose and tables are not indexed
    renamed = [pages[0], Indexed("es/a/index.html", "es", PAGE.replace("How to start it", "Cómo arrancarlo").encode())]
    changed = SearchIndex(tmp_path).files(renamed)
    assert changed != made and runs == [2, 2]
    assert len(list(tmp_path.glob("search-*.zip"))) == 2  # the earlier index kept beside it
    preview = SearchIndex(None)  # the preview's, kept in its process
    assert preview.files(renamed) == changed and runs == [2, 2, 2]
    monkeypatch.setattr(search, "document", lambda lang, page: pytest.fail("a page read again"))
    assert preview.files(renamed) is preview.last[1] and runs == [2, 2, 2]  # the same pages' bytes: nothing read or run


def test_the_cache_keeps_the_last_four_indexes_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(search, "run_pagefind", lambda documents: {"pagefind/x": "".join(documents.values()).encode()})
    seen: set[Path] = set()
    for n in range(6):
        SearchIndex(tmp_path).files([Indexed("en/a/index.html", "en", PAGE.replace("How to start", f"Start {n}").encode())])
        for made in set(tmp_path.glob("search-*.zip")) - seen:  # one second apart: a file system's clock may tick slower
            os.utime(made, (1_000_000 + n, 1_000_000 + n))
            seen.add(made)
    assert len(list(tmp_path.glob("search-*.zip"))) == 4
    monkeypatch.setattr(search, "run_pagefind", lambda documents: pytest.fail("ran again"))
    first = [Indexed("en/a/index.html", "en", PAGE.replace("How to start", "Start 2").encode())]
    assert b"Start 2" in SearchIndex(tmp_path).files(first)["pagefind/x"]  # among the four last


def test_a_failing_pagefind_is_a_build_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    fake = tmp_path / "pagefind"
    fake.write_text("#!/bin/sh\necho 'Error: no html' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(search, "executable", lambda: fake)
    with pytest.raises(search.BuildError) as failed:
        run_pagefind(DOCUMENTS)
    assert failed.value.lines == ["search index: pagefind exited with 3: Error: no html"]
    monkeypatch.setattr(search, "executable", lambda: tmp_path / "missing")
    with pytest.raises(search.BuildError) as missing:
        run_pagefind(DOCUMENTS)
    assert missing.value.lines == [
        f"search index: cannot run Pagefind ([Errno 2] No such file or directory: '{tmp_path}/missing'); "
        "`bash scripts/setup` installs pagefind-bin"
    ]


def found(page: Page, base: str, path: str, words: str) -> None:
    page.goto(base + path)
    page.get_by_role("searchbox").fill(words)


def test_searching_in_english_finds_a_model_and_a_guide_section(page: Page, site_url: str):
    found(page, site_url, "/en/search/", "Mixtral 8x22B")
    results = page.locator("#search-results > li > a")
    expect(results.first).to_have_attribute("href", "/en/models/mixtral-8x22b/")
    expect(results.first).to_have_text("Mixtral 8x22B v0.1")
    expect(page.get_by_role("status")).to_contain_text("Pages found: ")
    assert axe_violations(page) == []  # with its results listed
    page.get_by_role("searchbox").fill("Fine-tuning: memory per method")
    expect(page.locator('#search-results a[href="/en/guides/gpu-memory/#fine-tuning-memory-per-method"]')).to_have_text(
        "Fine-tuning: memory per method"
    )
    page.get_by_role("searchbox").fill("zzyzx")
    expect(page.get_by_role("status")).to_have_text("No page matches these words.")
    expect(page.locator("#search-results > li")).to_have_count(0)


def test_searching_in_spanish_finds_a_gpu_in_the_spanish_index(page: Page, site_url: str):
    found(page, site_url, "/es/buscar/", "H100 SXM5")
    first = page.locator("#search-results > li > a").first
    expect(first).to_have_attribute("href", "/es/gpus/h100-sxm/")
    expect(first).to_have_text("H100 SXM5 80GB")
    expect(page.get_by_role("status")).to_contain_text("Páginas encontradas: ")
    hrefs = page.locator("#search-results a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs and all(href.startswith("/es/") for href in hrefs)
    page.goto(site_url + "/es/buscar/?q=Mixtral+8x22B")  # a link to a search
    expect(page.get_by_role("searchbox")).to_have_value("Mixtral 8x22B")
    expect(page.locator("#search-results > li > a").first).to_have_attribute("href", "/es/modelos/mixtral-8x22b/")


def test_without_javascript_the_search_page_says_so_and_links_the_indexes(browser_type, browser_type_launch_args, site_url: str):
    """Scripts off in Blink's settings, as a reader turns them off: the parser then shows <noscript> (Playwright's
    java_script_enabled=False stops scripts from running but still parses a page as if they ran)."""
    args = [*browser_type_launch_args["args"], "--blink-settings=scriptEnabled=false"]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    try:
        page = browser.new_page()
        page.goto(site_url + "/de/suche/")
        shown = page.locator("main").inner_text()  # Playwright's text and role selectors pass over <noscript>
        assert "Die Suche braucht JavaScript. Ohne sie blättern Sie in den Verzeichnissen und Ratgebern:\n" in shown
        links = page.locator("main noscript a").evaluate_all("links => links.map(a => [a.textContent, a.getAttribute('href')])")
        assert links == [
            ["Modelle", "/de/modelle/"],
            ["GPUs", "/de/gpus/"],
            ["Wie viel Speicher?", "/de/ratgeber/gpu-speicher/"],
            ["VRAM und langer Kontext", "/de/ratgeber/llm-vram/"],
            ["Inferenz dimensionieren", "/de/ratgeber/inferenz-dimensionieren/"],
            ["Inferenz-Tempo", "/de/ratgeber/beste-gpu-llm-inferenz/"],
        ]
        expect(page.locator("main noscript a").first).to_be_visible()
        expect(page.locator("form.search")).to_be_hidden()
    finally:
        browser.close()
