"""A reader's way through the site: breadcrumbs, rent links, next steps and the root chooser."""

from __future__ import annotations

import json
import re
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

from gpumem.commands.build import gather
from gpumem.pages.routes import Crumb, breadcrumbs, plan_pages

from .conftest import NOW
from .project import fixture_options

RENT = "https://arrakis.example.org/rent?gpu={gpu}&count={count}"


class Anchors(HTMLParser):
    """Every link of a page as (href, its text), and the JSON-LD blocks by @type."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[tuple[str, str]] = []
        self.json_ld: dict[str, dict] = {}
        self._href: str | None = None
        self._text: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self._href, self._text = attrs["href"], []
        self._script = tag == "script" and attrs.get("type") == "application/ld+json"

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)
        if self._script:
            block = json.loads(data)
            self.json_ld[block["@type"]] = block

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.anchors.append((self._href, "".join(self._text)))
            self._href = None
        self._script = False


def anchors(path: Path) -> Anchors:
    parser = Anchors()
    parser.feed(path.read_text())
    return parser


def rent_links(path: Path) -> list[str]:
    return [href for href, text in anchors(path).anchors if href.startswith("https://arrakis.example.org/rent")]


def crumbs_of(path: Path) -> str:
    return re.search(r'<nav class="crumbs" aria-label="[^"]+"><ol>(.*?)</ol></nav>', path.read_text()).group(1)


def test_a_model_page_rents_its_cheapest_configuration(built_site):
    page = built_site / "en/models/qwen2.5-32b/index.html"
    html = page.read_text()
    # The BF16 row: 4 x RTX 3090 is the cheapest configuration on offer that holds one 8,192-token request.
    assert (
        '<td data-need-gb="20.5004"><span class="config">4 × RTX 3090, 20.5\xa0GB per GPU</span>\n'
        '<span class="price">$0.76 per hour</span>\n'
        '<span class="comfortable">comfortable: also holds 3 more requests of 8,192 tokens</span>\n'
        '<a class="rent" data-holds="serve:qwen2.5-32b:bf16:bf16:8192:1" href="https://arrakis.example.org/rent?gpu=rtx-3090&amp;count=4">'
        "Rent on Arrakis</a></td>"
    ) in html
    links = rent_links(page)
    assert links[0] == "https://arrakis.example.org/rent?gpu=rtx-3090&count=4"
    assert ("https://arrakis.example.org/rent?gpu=rtx-3090&count=4", "Rent on Arrakis") in anchors(page).anchors
    spanish = anchors(built_site / "es/modelos/qwen2.5-32b/index.html").anchors
    assert ("https://arrakis.example.org/rent?gpu=rtx-3090&count=4", "Alquilar en Arrakis") in spanish


def test_every_priced_configuration_of_the_main_guide_links_to_rent_it(built_site):
    inputs = gather(fixture_options(), now=NOW)
    for lang, page in (("es", "es/guias/memoria-gpu"), ("fr", "fr/guides/memoire-gpu")):
        html = (built_site / page / "index.html").read_text()
        cells = re.findall(r'<td data-need-gb="[^"]+" data-gpus="([^" ]+)[^"]*"()>(.*?)</td>', html, re.S)
        assert len(cells) == 29, lang  # every cell but the one no configuration on offer holds
        for gpu, _count, cell in cells:
            assert gpu in {g.id for g in inputs.catalog.gpus}
            # the cell's configuration, or, where the engines say it does not hold, the one that does
            rented = gpu if 'class="verdict"' not in cell else r"[a-z0-9-]+"
            assert re.search(
                rf'<a class="rent" data-holds="[^"]+" href="https://arrakis\.example\.org/rent\?gpu={rented}&amp;count=\d\">', cell
            ), cell
    es = rent_links(built_site / "es/guias/memoria-gpu/index.html")
    # 70B at 4 bits: the rule of thumb's one L40S does not hold 8,192 tokens by the deployment model, four RTX 3090 do;
    # 405B at 16 bits: four B300 in one machine.
    assert RENT.format(gpu="rtx-3090", count=4) in es
    assert RENT.format(gpu="b300", count=4) in es


def test_gpu_pages_rent_the_gpu_or_the_nearest_on_offer(built_site):
    assert rent_links(built_site / "en/gpus/h200-sxm/index.html") == [RENT.format(gpu="h200-sxm", count=1)]
    not_offered = (built_site / "en/gpus/l4/index.html").read_text()
    assert (
        'The nearest GPU on offer is the <a href="/en/gpus/rtx-3090/">RTX 3090</a> (24\xa0GB), from $0.19 per GPU-hour. '
        '<a class="rent" href="https://arrakis.example.org/rent?gpu=rtx-3090&amp;count=1">Rent on Arrakis</a></p>'
    ) in not_offered


def test_the_sizing_guide_rents_the_cards_it_discusses(built_site):
    html = (built_site / "de/ratgeber/inferenz-dimensionieren/index.html").read_text()
    assert (
        '<p>Mieten Sie eine dieser Karten bei Arrakis: <a class="rent" href="https://arrakis.example.org/rent?gpu=rtx-3090&amp;count=1">'
        'RTX 3090</a> (24\xa0GB), <a class="rent" href="https://arrakis.example.org/rent?gpu=l40s&amp;count=1">L40S</a> (48\xa0GB) und '
        '<a class="rent" href="https://arrakis.example.org/rent?gpu=rtx-pro-6000-blackwell&amp;count=1">RTX PRO 6000</a> (96\xa0GB).</p>'
    ) in html


def test_breadcrumbs_of_a_model_page_visible_and_as_json_ld(built_site):
    page = built_site / "es/modelos/qwen2.5-32b/index.html"
    assert crumbs_of(page) == '<li><a href="/es/">Guías de memoria de GPU</a></li><li><a href="/es/modelos/">Modelos</a></li>'
    assert '<nav class="crumbs" aria-label="Ruta de navegación">' in page.read_text()
    assert anchors(page).json_ld["BreadcrumbList"] == {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": [
            {"@type": "ListItem", "position": 1, "name": "Guías de memoria de GPU", "item": "https://gpumem.example.org/es/"},
            {"@type": "ListItem", "position": 2, "name": "Modelos", "item": "https://gpumem.example.org/es/modelos/"},
            {
                "@type": "ListItem",
                "position": 3,
                "name": "Qwen2.5 32B (Instruct)",
                "item": "https://gpumem.example.org/es/modelos/qwen2.5-32b/",
            },
        ],
    }


def test_breadcrumbs_of_a_guide_and_of_the_home_page(built_site):
    guide = built_site / "fr/guides/memoire-gpu/index.html"
    names = [item["name"] for item in anchors(guide).json_ld["BreadcrumbList"]["itemListElement"]]
    assert names == ["Guides de mémoire GPU", "Combien de mémoire GPU faut-il pour votre modèle\u202f?"]
    assert crumbs_of(guide) == '<li><a href="/fr/">Guides de mémoire GPU</a></li>'
    assert anchors(guide).json_ld["FAQPage"]["mainEntity"]  # both blocks, each its own JSON
    home = built_site / "en/index.html"
    assert '<nav class="crumbs"' not in home.read_text()  # the home page is the first step: no trail to show


def test_a_section_crumb_links_its_index_once_the_index_page_exists():
    inputs = gather(fixture_options(), now=NOW)
    site = inputs.site
    page = next(p for p in plan_pages(site, {"models": ["phi-4"], "gpus": []}) if p.key == "model" and p.lang == "de")
    assert breadcrumbs(site, page) == (Crumb("home", "de/"), Crumb("models", ""), Crumb("page", "de/modelle/phi-4/"))
    assert breadcrumbs(site, page, {"de/modelle/"}) == (
        Crumb("home", "de/"),
        Crumb("models", "de/modelle/"),
        Crumb("page", "de/modelle/phi-4/"),
    )


def test_a_catalog_name_in_the_breadcrumb_stays_text(inputs):
    from gpumem.pages.site import render_site

    from .conftest import edit, options_for

    edit(inputs / "catalogs/models.yaml", 'name: "Phi-4 14B"', "name: \"Phi</script><b>4 & 'x'\"")
    files = render_site(gather(options_for(inputs), now=NOW))
    html = files["en/models/phi-4/index.html"].decode()
    assert "<h1>Phi&lt;/script&gt;&lt;b&gt;4 &amp; &#39;x&#39;</h1>" in html  # the page's own step is its h1
    block = re.search(
        r'<script type="application/ld\+json">(\{"@context": "https://schema.org", "@type": "BreadcrumbList".*?)</script>', html
    )
    assert json.loads(block.group(1))["itemListElement"][2]["name"] == "Phi</script><b>4 & 'x'"


def test_a_model_page_leads_to_its_gpus_and_the_prefilled_calculator(built_site):
    page = built_site / "en/models/qwen2.5-32b/index.html"
    links = dict((text, href) for href, text in anchors(page).anchors)
    calculator = links["Open the calculator with Qwen2.5 32B (Instruct)"]
    path, query = calculator.split("?")
    assert path == "/en/calculator/"
    assert urllib.parse.parse_qs(query) == {
        key: [value]
        for key, value in {
            "model": "qwen2.5-32b",
            "params": "32.763876352",
            "layers": "64",
            "heads": "40",
            "kv_heads": "8",
            "head_dim": "128",
            "hidden": "5120",
            "vocab": "152064",
            "tied": "0",
            "intermediate": "27648",
            "experts": "0",
            "experts_active": "0",
            "expert_width": "0",
            "mode": "serve",
            "weights": "bf16",
            "kv": "bf16",
            "gpus": "4",
            "batch": "1",
            "context": "8192",
        }.items()
    }
    assert "BF16, one request of 8,192 tokens on 4 GPUs; change the context" in page.read_text()
    assert links["RTX 3090"] == "/en/gpus/rtx-3090/"


def test_the_calculator_link_is_built_as_the_calculator_builds_its_own():
    from gpumem.figures.calculator import calculator_default, calculator_query, speed_fields, state_fields, training_fields
    from gpumem.figures.shared import Shop

    catalog = gather(fixture_options(), now=NOW).catalog
    default = calculator_default(catalog, Shop(catalog))
    model = catalog.model(default.fields["model"])
    fields = {**state_fields(model, "serve", "bf16", "bf16", 1, 1, 8192, training_fields(catalog, "serve")), **speed_fields()}
    assert fields == default.fields
    serving = {
        **state_fields(model, "serve", "bf16", "bf16", 1, 1, 8192),
        **speed_fields(),
    }  # a serving link leaves the training fields out
    assert default.query == calculator_query(fields) == calculator_query(serving) == urllib.parse.urlencode(serving)


def test_the_root_page_explains_the_site_in_every_language(built_site):
    html = (built_site / "index.html").read_text()
    description = (
        "Cuánta memoria de GPU necesita un modelo de lenguaje para servirlo o ajustarlo, qué GPU lo cubren y cuánto cuestan en Arrakis."
    )
    assert f'<meta name="description" content="{description}">' in html
    assert f'<li lang="es"><a href="/es/" hreflang="es">Español</a> <span>{description}</span></li>' in html
    assert (
        '<li lang="fr"><a href="/fr/" hreflang="fr">Français</a> <span>La mémoire GPU qu’il faut pour servir ou affiner un modèle de '
        "langage, les GPU qui l’accueillent et leur prix sur Arrakis.</span></li>"
    ) in html
    for lang in ("en", "pt", "de"):
        assert re.search(rf'<li lang="{lang}"><a href="/{lang}/" hreflang="{lang}">[^<]+</a> <span>[^<]+ Arrakis[^<]*\.</span></li>', html)


def test_guides_link_the_prices_page_in_their_body(built_site):
    for page, prices in (
        ("es/guias/memoria-gpu", "/es/precios/"),
        ("en/guides/llm-vram", "/en/prices/"),
        ("pt/guias/dimensionar-inferencia", "/pt/precos/"),
        ("fr/guides/vram-llm", "/fr/prix/"),
        ("de/ratgeber/gpu-speicher", "/de/preise/"),
    ):
        html = (built_site / page / "index.html").read_text()
        body = html[html.index("<article") : html.index("</article>")]
        assert f'<a href="{prices}">' in body, page


def test_content_names_the_marketplace_only_through_its_placeholder():
    from .project import REPO

    site = gather(fixture_options(), now=NOW).site
    pages = sorted((REPO / "content").glob("*/*.md"))
    assert len(pages) == 55
    assert [page for page in pages if site.marketplace.name in page.read_text()] == []
    named = [page for page in pages if "{{ marketplace.name }}" in page.read_text()]
    assert sorted({page.stem for page in named}) == ["guide-inference", "guide-memory", "guide-vram", "home", "prices"]
    assert len(named) == 25


def test_the_vram_guide_rents_its_worked_example(built_site):
    html = (built_site / "en/guides/llm-vram/index.html").read_text()
    assert (
        "The smallest configuration on offer that holds it is 1 × RTX PRO 6000, from $1.90 per GPU-hour. "
        '<a class="rent" data-holds="serve:llama-3.1-70b:fp8:bf16:8192:1" '
        'href="https://arrakis.example.org/rent?gpu=rtx-pro-6000-blackwell&amp;count=1">Rent on Arrakis</a></p>'
    ) in html


def test_the_index_pages_are_their_own_section(built_site):
    page = built_site / "de/gpus/index.html"
    assert crumbs_of(page) == '<li><a href="/de/">Ratgeber GPU-Speicher</a></li>'
    models = built_site / "en/models/index.html"
    assert RENT.format(gpu="rtx-3090", count=4) in rent_links(models)  # Qwen2.5 32B's cheapest configuration
