"""Pages as data: URLs per language and reciprocal alternates with x-default."""

from __future__ import annotations

from gpumem.pages.routes import ROUTE_KEYS, Alternate, plan_pages
from gpumem.records.catalog import Language, Site

SITE = Site(
    base_url="https://example.org/guides/",
    languages=(Language("es", "Español"), Language("en", "English")),
    routes={
        "home": {"es": "", "en": ""},
        "guide-memory": {"es": "guias/memoria-gpu", "en": "guides/gpu-memory"},
        "guide-vram": {"es": "guias/vram-llm", "en": "guides/llm-vram"},
        "guide-sizing": {"es": "guias/dimensionar-inferencia", "en": "guides/inference-sizing"},
        "calculator": {"es": "calculadora", "en": "calculator"},
        "prices": {"es": "precios", "en": "prices"},
        "methodology": {"es": "metodologia", "en": "methodology"},
        "sources": {"es": "metodologia/fuentes", "en": "methodology/sources"},
        "guide-finetune": {"es": "guias/mejor-gpu-fine-tuning-llama-70b", "en": "guides/best-gpu-fine-tune-llama-70b"},
        "guide-api": {"es": "guias/llm-local-vs-api", "en": "guides/self-hosting-vs-api"},
        "guide-inference": {"es": "guias/mejor-gpu-inferencia-llm", "en": "guides/best-gpu-llm-inference"},
        "model": {"es": "modelos", "en": "models"},
        "gpu": {"es": "gpus", "en": "gpus"},
        "search": {"es": "buscar", "en": "search"},
    },
    stale_after_days=7,
)


SUBJECTS = {"models": ["llama-3.1-70b", "phi-4"], "gpus": ["h100-sxm"]}


def test_every_kind_and_subject_in_every_language():
    pages = plan_pages(SITE, SUBJECTS)
    assert len(pages) == 2 * (14 + 2 + 1)
    assert [p.url for p in pages if p.key == "model"] == [
        "es/modelos/llama-3.1-70b/",
        "en/models/llama-3.1-70b/",
        "es/modelos/phi-4/",
        "en/models/phi-4/",
    ]
    assert {p.template for p in pages} == {
        "home.html",
        "guide.html",
        "calculator.html",
        "prices.html",
        "methodology.html",
        "guide-finetune.html",
        "guide-api.html",
        "guide-inference.html",
        "models.html",
        "gpus.html",
        "model.html",
        "gpu.html",
        "search.html",
    }
    assert [p.shows_prices for p in pages if p.lang == "en" and not p.subject] == [
        False,
        True,
        True,
        False,
        True,
        True,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        False,
    ]


def test_fixed_spanish_and_english_urls():
    pages = {(p.key, p.lang): p for p in plan_pages(SITE, SUBJECTS)}
    assert pages[("home", "es")].url == "es/"
    assert pages[("guide-memory", "es")].url == "es/guias/memoria-gpu/"
    assert pages[("guide-memory", "en")].output == "en/guides/gpu-memory/index.html"
    assert pages[("guide-finetune", "es")].url == "es/guias/mejor-gpu-fine-tuning-llama-70b/"
    assert pages[("guide-finetune", "en")].url == "en/guides/best-gpu-fine-tune-llama-70b/"
    assert pages[("guide-api", "es")].url == "es/guias/llm-local-vs-api/"
    assert pages[("guide-api", "en")].url == "en/guides/self-hosting-vs-api/"
    assert pages[("guide-inference", "es")].url == "es/guias/mejor-gpu-inferencia-llm/"
    assert pages[("guide-inference", "en")].url == "en/guides/best-gpu-llm-inference/"
    assert pages[("search", "es")].url == "es/buscar/"
    assert pages[("search", "en")].output == "en/search/index.html"


def test_every_page_lists_all_translations_and_x_default():
    pages = {(p.key, p.lang): p for p in plan_pages(SITE, SUBJECTS)}
    assert pages[("guide-memory", "en")].alternates == (
        Alternate("es", "es/guias/memoria-gpu/"),
        Alternate("en", "en/guides/gpu-memory/"),
        Alternate("x-default", "es/guias/memoria-gpu/"),
    )
    assert pages[("home", "es")].alternate("x-default") == Alternate("x-default", "")


def test_alternates_are_reciprocal():
    pages = plan_pages(SITE, SUBJECTS)
    by_url = {p.url: p for p in pages}
    for page in pages:
        for alternate in page.alternates:
            if alternate.lang != "x-default":
                assert page.url in [a.url for a in by_url[alternate.url].alternates]


def test_base_path_from_base_url():
    assert SITE.base_path == "/guides/"
    assert Site("https://example.org/", (), {}, 7).base_path == "/"


def test_index_pages_take_the_route_of_their_kind_without_a_subject():
    pages = {(p.key, p.lang): p for p in plan_pages(SITE, SUBJECTS)}
    assert pages[("models", "es")].url == "es/modelos/"
    assert pages[("models", "en")].output == "en/models/index.html"
    assert pages[("gpus", "es")].url == "es/gpus/"
    assert pages[("models", "en")].alternates == (
        Alternate("es", "es/modelos/"),
        Alternate("en", "en/models/"),
        Alternate("x-default", "es/modelos/"),
    )
    assert ROUTE_KEYS == (
        "home",
        "guide-memory",
        "guide-vram",
        "guide-sizing",
        "calculator",
        "prices",
        "methodology",
        "sources",
        "guide-finetune",
        "guide-api",
        "guide-inference",
        "model",
        "gpu",
        "search",
    )
