"""The whole site as a reader and a crawler see it: every page, language, link and alternate."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET

from gpumem.commands.build import build, gather
from gpumem.commands.serve import served

from .conftest import NOW, SNAPSHOT, edit, options_for
from .project import fixture_options, published
from .sitecheck import broken_links, crawl, read_page

LANGUAGES = ("es", "en", "pt", "fr", "de")
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def test_every_page_exists_in_every_language(built_site):
    inputs = gather(fixture_options(), now=NOW)
    per_language = 14 + len(inputs.catalog.models) + len(inputs.catalog.gpus)  # 12 kinds, 2 indexes, each model and GPU
    assert per_language == 68
    for lang in LANGUAGES:
        assert len(list((built_site / lang).rglob("index.html"))) == per_language
    for name in ("index.html", "404.html", "sitemap.xml", "robots.txt", "_headers"):
        assert (built_site / name).is_file()
    assert published(built_site, "style.css").is_file() and published(built_site, "favicon.svg").is_file()


def test_spanish_and_english_urls_are_the_fixed_ones(built_site):
    for path in (
        "es/guias/memoria-gpu",
        "en/guides/gpu-memory",
        "es/guias/vram-llm",
        "en/guides/llm-vram",
        "es/guias/dimensionar-inferencia",
        "en/guides/inference-sizing",
        "es/calculadora",
        "en/calculator",
        "es/modelos/llama-3.1-70b",
        "en/models/llama-3.1-70b",
        "es/gpus/h100-sxm",
        "en/gpus/h100-sxm",
        "es/precios",
        "en/prices",
    ):
        assert (built_site / path / "index.html").is_file(), path


def test_no_broken_internal_link_or_fragment(built_site):
    assert broken_links(built_site) == []


def test_the_link_checker_finds_a_broken_link_and_fragment(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a/index.html").write_text('<a href="/b/">b</a><a href="/a/#nowhere">x</a><a id="here" href="#here">y</a>')
    assert broken_links(tmp_path) == [
        "a/index.html: /b/: no such file",
        "a/index.html: /a/#nowhere: no element with id 'nowhere'",
    ]


def test_sitemap_lists_every_page_with_reciprocal_alternates(built_site):
    root = ET.parse(built_site / "sitemap.xml").getroot()
    entries = {}
    for url in root.findall(f"{SITEMAP}url"):
        alternates = {link.get("hreflang"): link.get("href") for link in url.findall(f"{XHTML}link")}
        entries[url.find(f"{SITEMAP}loc").text] = alternates
    assert len(entries) == 340
    pages = {
        "https://gpumem.example.org/" + str(p.relative_to(built_site)).removesuffix("index.html")
        for p in built_site.glob("*/**/index.html")
    }
    assert set(entries) == pages
    for loc, alternates in entries.items():
        assert set(alternates) == {*LANGUAGES, "x-default"}
        for lang in LANGUAGES:
            assert entries[alternates[lang]][lang] == alternates[lang]
            assert loc in entries[alternates[lang]].values()


def test_switcher_lands_on_the_same_page_in_each_language(built_site):
    page = read_page(built_site / "fr/modeles/llama-3.1-70b/index.html")
    html = (built_site / "fr/modeles/llama-3.1-70b/index.html").read_text()
    for lang, path in (
        ("es", "/es/modelos/llama-3.1-70b/"),
        ("en", "/en/models/llama-3.1-70b/"),
        ("de", "/de/modelle/llama-3.1-70b/"),
    ):
        assert f'href="{path}" lang="{lang}" hreflang="{lang}"' in html
        assert page.alternates[lang] == "https://gpumem.example.org" + path
    assert page.alternates["x-default"] == "https://gpumem.example.org/es/modelos/llama-3.1-70b/"
    assert page.canonical == "https://gpumem.example.org/fr/modeles/llama-3.1-70b/"


def test_every_page_has_its_own_title_description_and_open_graph(built_site):
    titles = {}
    for page in built_site.glob("*/**/index.html"):
        html = page.read_text()
        title = re.search(r"<title>(.+?)</title>", html).group(1)
        description = re.search(r'<meta name="description" content="([^"]+)">', html).group(1)
        assert len(description) > 40, page
        assert f'<meta property="og:title" content="{title}">' in html
        assert '<meta property="og:url" content="https://gpumem.example.org/' in html
        titles.setdefault(title, []).append(page)
    assert [t for t, found in titles.items() if len(found) > 1] == []


def test_faq_pages_carry_json_ld(built_site):
    html = (built_site / "es/guias/memoria-gpu/index.html").read_text()
    data = json.loads(re.search(r'<script type="application/ld\+json">(.+?)</script>', html).group(1))
    assert data["@type"] == "FAQPage"
    assert data["mainEntity"][0]["name"] == "¿Cuánta memoria necesita un modelo de 70B?"
    assert data["mainEntity"][0]["acceptedAnswer"]["text"].startswith("Para servirlo: 168 GB a 16 bits, 84 GB a 8 bits")


def test_gpus_not_on_offer_say_so(built_site):
    html = (built_site / "en/gpus/mi300x/index.html").read_text()
    assert "Not on offer in the snapshot of Oct 31, 2026: no machine with this GPU was listed." in html
    offered = (built_site / "en/gpus/h200-sxm/index.html").read_text()
    assert "From $3.44 per GPU-hour in the snapshot of Oct 31, 2026" in offered


def test_robots_and_root_index(built_site):
    assert (built_site / "robots.txt").read_text() == "User-agent: *\nAllow: /\nSitemap: https://gpumem.example.org/sitemap.xml\n"
    root = read_page(built_site / "index.html")
    assert root.alternates["x-default"] == "https://gpumem.example.org/"
    assert [link for link in root.links if not link.startswith("/assets/")] == ["/es/", "/en/", "/pt/", "/fr/", "/de/"]


def test_robots_txt_is_plain_text_and_the_sitemap_xml(inputs):
    """An '&' in the base URL is written as it is in robots.txt, and as &amp; in the sitemap's XML."""
    edit(inputs / "content/site.yaml", "base_url: https://gpumem.example.org/", "base_url: https://example.org/r&d/")
    build(options_for(inputs), now=NOW)
    assert (inputs / "site/robots.txt").read_text() == "User-agent: *\nAllow: /\nSitemap: https://example.org/r&d/sitemap.xml\n"
    assert "<loc>https://example.org/r&amp;d/es/</loc>" in (inputs / "site/sitemap.xml").read_text()


def test_numbers_follow_a_catalog_and_price_change(inputs):
    """Change Llama 3.1 70B's parameters and the H100's lowest price: prose, tables and FAQ follow."""
    build(options_for(inputs), now=NOW)
    model_page = inputs / "site/en/models/llama-3.1-70b/index.html"
    assert "A model with 70.55 billion parameters." in model_page.read_text()
    calculator = inputs / "site/en/calculator/index.html"
    assert "Mistral 7B v0.3 takes 29\xa0GB at FP32, 14.5\xa0GB at FP16" in calculator.read_text()
    edit(inputs / "catalogs/models.yaml", "params_b: 70.553706496", "params_b: 71.5")
    edit(inputs / "catalogs/models.yaml", "params_b: 7.248023552", "params_b: 7.5")
    edit(inputs / f"catalogs/prices/{SNAPSHOT}", "price_per_gpu_hour: 2.07,", "price_per_gpu_hour: 1.87,")
    result = build(options_for(inputs), now=NOW)
    text = " ".join(model_page.read_text().split())
    assert "A model with 71.5 billion parameters." in text
    assert '<span class="need">143\xa0GB</span>' in model_page.read_text()  # 71.5 x 2 bytes, the weights table
    guide = " ".join((inputs / "site/en/guides/gpu-memory/index.html").read_text().split())
    assert "The H100 started at $1.87 per GPU-hour" in guide  # FAQ answer
    assert "H100 from $1.87 per GPU-hour" in guide  # table cell
    assert "Mistral 7B v0.3 takes 30\xa0GB at FP32, 15\xa0GB at FP16" in calculator.read_text()  # calculator FAQ
    prices = (inputs / "site/es/precios/index.html").read_text()
    assert "1,87\xa0US$" in prices
    assert result.summary.written > 0


def test_sub_path_site_served_under_a_prefix_follows_every_link(inputs, tmp_path):
    edit(inputs / "content/site.yaml", "base_url: https://gpumem.example.org/", "base_url: https://example.org/guides/")
    out = tmp_path / "host" / "guides"
    build(options_for(inputs, out=out), now=NOW)
    assert broken_links(out, prefix="/guides/") == []
    with served(tmp_path / "host") as origin:
        seen, failures = crawl(origin, "/guides/")
    assert failures == []
    assert all(path.startswith("/guides/") for path in seen)
    assert len([path for path in seen if path.endswith("/")]) == 341  # 340 pages and the language choice
    html = (out / "es/guias/memoria-gpu/index.html").read_text()
    assert f'<link rel="stylesheet" href="/guides/assets/{published(out, "style.css").name}">' in html
    assert '<link rel="canonical" href="https://example.org/guides/es/guias/memoria-gpu/">' in html
    hrefs = re.findall(r'(?:href|src)="(/[^"]*)"', "".join(p.read_text() for p in out.rglob("*.html")))
    assert hrefs and all(h.startswith("/guides/") for h in hrefs)
    shutil.rmtree(out.parent)  # the link, and the versions in the hidden folder beside it


def test_no_entity_is_escaped_twice(built_site):
    """A translated string is escaped once: 'Surcoût d’exécution' never shows as 'd&#39;exécution'."""
    doubled = [str(p.relative_to(built_site)) for p in built_site.rglob("*.html") if "&amp;#" in p.read_text()]
    assert doubled == []
