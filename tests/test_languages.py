"""No English on a page in another language, except names: a scan of what a reader sees.

Every Spanish, Portuguese, French and German page of the fixture build (and the root pages,
which mark each language's text with its own `lang`) is read the way a reader meets it: visible
text, the title, the meta description, and the alt, aria-label, placeholder and title attributes,
plus the messages the calculator's script shows. Names are taken out first (models, GPUs,
vendors, licences, formats, engines: from the catalogs where they live there), then any word of
a list of common English words fails the test, with the page, the word and its context.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.records.catalog import STATE_NAMES

from .project import CATALOGS

# Common English words that are not also words (or units, or established loanwords) of Spanish,
# Portuguese, French or German. Left out on purpose: a, an (German «an»), as (Portuguese «as»),
# do, serve, some, out (Portuguese «do», «serve», «some», «out.» for October), die, fast, man, so,
# was, will, also, war, tensor (German), for (Portuguese «se for»), in, on, or (French «or»), no
# (Spanish and Portuguese), once, son and error (Spanish), use (Portuguese «use»), large, long,
# machine, page, table, section, source, content, figures, guide, options, format, mode,
# activations, gradients, licence (French), total, zero, dimension, bits, bytes, cache (every one).
ENGLISH = frozenset(
    """
    the and of with to not per is are be been being it its this that these those which who what
    when where why how than then there their they them you your we our from by at into about
    after before over under without within between because while only all any each every both
    such more most less least very much many can could would should must may might have has had
    does did done shall here just but if yet up off
    memory price prices priced model models request requests weight weights head heads layer
    layers key value values hidden size sizes serving served training fine tuning tuned full
    card cards hour hours day days offer offered rent snapshot license community terms bandwidth
    bridge way unverified assumed computed link links count none found home back choose language
    calculator methodology estimate estimates measure measured number numbers whole valid
    expected got integer object enter above below too copy copied preset custom workload output
    input vocabulary width tight comfortable holds hold fits needs need run runs runtime overhead
    batch deploy deploys deployment deployments context one two three four eight thousand
    billion million gigabytes precision quantization parallelism concurrent sequence length
    optimizer states adapters inference free cheapest lowest smallest largest fastest cheap low
    high small big
    """.split()
)

# Names a native reader sees untranslated, besides those the catalogs hold. Each is a proper
# name (of an engine, a library, a paper, a company, a file format or a command) or a unit.
NAMES = (
    "vLLM",
    "llama.cpp",  # runtimes
    "TensorRT-LLM",
    "SGLang",
    "PyTorch",
    "Hugging Face",
    "FlashAttention",
    "DeepSpeed",
    "ZeRO",  # DeepSpeed's Zero Redundancy Optimizer, by its paper's name
    "FSDP",
    "AdamW",
    "Adam",
    "EleutherAI",
    "Transformer Math 101",  # the title of EleutherAI's article
    "CUDA",
    "NCCL",
    "nvidia-smi",
    "MIG",
    "arXiv",
    "all-reduce",  # NCCL's collective operation
    "config.json",
    "NVLink",
    "PCIe",
    "SXM",
    "GGUF",
    "AWQ",
    "GPTQ",
    "bitsandbytes",
    "JSON",
    "JavaScript",
)

# Loanwords a native technical reader uses as they are, per language; each says why.
TOKENS = ("tokens", "token")  # the unit every language's documentation uses (vLLM, Hugging Face)
FINE_TUNING = ("fine-tuning",)  # the term of art readers search for; es and pt gloss it beside «ajuste fino»
LOANWORDS = {
    "es": (*TOKENS, *FINE_TUNING),
    "pt": (*TOKENS, *FINE_TUNING, "link", "links"),  # Brazil's word for a hyperlink («ligação» is a phone call)
    "fr": (*TOKENS, *FINE_TUNING, "million"),  # «le fine-tuning» is the usual noun in French technical writing; «million» is French
    "de": (
        *TOKENS,
        *FINE_TUNING,
        "Training",  # in the Duden, the German word for training a model
        "Batch",  # «Batchgröße»: German ML writing keeps the term
        "Overhead",  # in the Duden
        "Link",  # in the Duden
        "Head",  # «Attention-Head», «KV-Head»: the attention's heads keep their name in German ML writing
        "Heads",
        "Key",  # the attention's key and value vectors keep their names too, as in «Key-Value-Cache»
        "Keys",
        "Value",
        "Values",
        "Mixture-of-Experts",  # the architecture's name
        "Million",  # in the Duden: «eine Million Tokens»
    ),
}

# Units a language writes its own way, matched with their case (French «To» is not English «to»).
UNITS = {"fr": ("To", "Go", "Gio", "Tio")}

# Anglicisms that have a plain word in the language; found as whole words, any case.
ANGLICISMS = {
    "pt": ("snapshot", "overhead", "runtime", "batch", "deploy", "deploys", "deployment"),
}

TEXT_ATTRIBUTES = ("alt", "aria-label", "placeholder", "title")
SKIPPED = {"script", "style", "code", "pre"}  # code is not prose: commands and identifiers are names
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class ReaderText(HTMLParser):
    """The texts a reader meets on a page, each with the language its element declares."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str]] = []  # (tag, lang)
        self.texts: list[tuple[str, str]] = []  # (lang, text)
        self.script_id = ""

    @property
    def lang(self) -> str:
        return self.stack[-1][1] if self.stack else ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        lang = values.get("lang", self.lang)
        for name in TEXT_ATTRIBUTES:
            if values.get(name):
                self.texts.append((lang, values[name]))
        if tag == "meta" and values.get("name") == "description" or values.get("property", "").startswith("og:title"):
            self.texts.append((lang, values.get("content", "")))
        if tag == "script":
            self.script_id = values.get("id", "")
        if tag not in VOID:
            self.stack.append((tag, lang))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        while self.stack:  # close what the page left open inside this element (a <p> before a <ul>)
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        tags = {tag for tag, _ in self.stack}
        if self.script_id == "calculator-messages" and self.stack and self.stack[-1][0] == "script":
            self.texts += [(self.lang, text) for text in json_strings(json.loads(data))]
        elif not tags & SKIPPED and data.strip():
            self.texts.append((self.lang, data))


def json_strings(value: object) -> list[str]:
    """Every string inside a JSON value (the calculator's messages)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in json_strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in json_strings(item)]
    return []


def reader_texts(page: Path) -> list[tuple[str, str]]:
    """The texts of a page with their languages; or of the calculator's messages that only config.js shows, published
    apart in one language a file (assets/config-data.<digest>/<lang>.json)."""
    if page.suffix == ".json":
        return [(page.stem, text) for text in json_strings(json.loads(page.read_text()))]
    reader = ReaderText()
    reader.feed(page.read_text())
    return reader.texts


def catalog_names(catalogs: Path = CATALOGS) -> list[str]:
    """Names the catalogs hold: models, GPUs, vendors, licences, weight and cache formats, and the state layers'."""
    catalog = load_catalog(catalogs)
    names = [model.name for model in catalog.models] + [getattr(model.license, "name", model.license) for model in catalog.models]
    names += [name for gpu in catalog.gpus for name in (gpu.name, gpu.full_name, gpu.vendor)]
    deployment = catalog.rules.deployment
    names += [f.label for f in deployment.weight_formats.values()] + [f.label for f in deployment.kv_formats.values()]
    return names + list(STATE_NAMES.values())


def phrases(names: list[str] | tuple[str, ...], flags: int = 0) -> re.Pattern[str]:
    """One pattern matching any of the names, the longest first, not inside a longer word
    (but within a compound: «KV-Heads», «Fine-Tuning-Tabelle»)."""
    ordered = sorted(set(names), key=len, reverse=True)
    return re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(name) for name in ordered) + r")(?![^\W_])", flags)


WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


# Placeholders of the calculator's messages, config.json keys such as num_key_value_heads, and a link's parameters as
# the link writes them (model=, weights=: the calculator names the value it could not honour).
CODE_WORDS = re.compile(r"%\(\w+\)s|\b\w+_\w+\b|\b\w+=")


def english_words(text: str, names: re.Pattern[str], loanwords: re.Pattern[str] | None, banned: frozenset[str]) -> list[tuple[str, str]]:
    """The English words of one text, each with some context, once the names are taken out."""
    cleaned = names.sub(" ", CODE_WORDS.sub(" ", text))
    if loanwords is not None:
        cleaned = loanwords.sub(" ", cleaned)
    found = []
    for match in WORD.finditer(cleaned):
        for word in re.split(r"[-'’]", match.group(0)):
            if word.lower() in banned:
                start = max(0, match.start() - 40)
                found.append((word, " ".join(cleaned[start : match.end() + 40].split())))
    return found


def leaks(site: Path, catalogs: Path = CATALOGS) -> list[str]:
    """Every English word on a page (or a part of one) that is not in English (names of `catalogs` let through)."""
    names = phrases([*catalog_names(catalogs), *NAMES], re.IGNORECASE)
    loans = {lang: phrases(words, re.IGNORECASE) for lang, words in LOANWORDS.items()}
    units = {lang: phrases(UNITS.get(lang, ("GB",))) for lang in LOANWORDS}
    banned = {lang: ENGLISH | {word.lower() for word in ANGLICISMS.get(lang, ())} for lang in LOANWORDS}
    found = []
    pages = [site / "index.html", site / "404.html", *(p for lang in LOANWORDS for p in sorted((site / lang).rglob("*.html")))]
    for page in [*pages, *sorted(site.glob("assets/config-data.*/*.json"))]:
        for lang, text in reader_texts(page):
            if lang not in LOANWORDS:
                continue  # English (a language's own name in the switcher, the root pages' English line)
            for word, context in english_words(units[lang].sub(" ", text), names, loans[lang], frozenset(banned[lang])):
                found.append(f"{page.relative_to(site)}: {word!r} ({lang}) in «{context}»")
    return sorted(set(found))


def test_no_english_word_on_a_page_in_another_language(built_site):
    found = leaks(built_site)
    assert found == [], f"{len(found)} English words on pages in other languages:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<html lang="fr"><title>Memory of the model</title></html>', ["'Memory'", "'of'", "'the'", "'model'"]),
        ('<html lang="de"><p aria-label="Prices per hour">Preise</p></html>', ["'Prices'", "'per'", "'hour'"]),
        ('<html lang="pt"><p>Um snapshot com overhead</p></html>', ["'snapshot'", "'overhead'"]),
        ('<html lang="es"><p>Llama 3.1 Community License en vLLM, <span lang="en">English</span></p></html>', []),
        ('<html lang="fr"><p>Les <code>memory.used</code> tokens</p><meta name="description" content="the"></html>', ["'the'"]),
    ],
)
def test_the_scan_finds_english_and_lets_names_through(tmp_path, html, expected):
    (tmp_path / "es").mkdir()
    (tmp_path / "index.html").write_text("<html></html>")
    (tmp_path / "404.html").write_text(html)
    found = leaks(tmp_path)
    assert [line.split(": ", 1)[1].split(" ", 1)[0] for line in found] == sorted(expected)


NOT_FOUND = {
    "es": ("Página no encontrada · Guías de memoria de GPU", "Calculadora"),
    "en": ("Page not found · GPU memory guides", "Calculator"),
    "pt": ("Página não encontrada · Guias de memória de GPU", "Calculadora"),
    "fr": ("Page introuvable · Guides de mémoire GPU", "Calculateur"),
    "de": ("Seite nicht gefunden · Ratgeber GPU-Speicher", "Rechner"),
}
CALCULATOR = {"es": "calculadora", "en": "calculator", "pt": "calculadora", "fr": "calculateur", "de": "rechner"}


def index_routes(lang: str) -> list[str]:
    """The models and GPUs index pages of a language (at the model and GPU pages' route, without a
    subject), where the site has them: the 404 pages link them."""
    import yaml

    from gpumem.pages.routes import KINDS

    from .project import REPO

    routes = yaml.safe_load((REPO / "content/site.yaml").read_text())["routes"]
    return [f"/{lang}/{routes[kind][lang]}/" for key, kind in (("models", "model"), ("gpus", "gpu")) if key in KINDS]


@pytest.mark.parametrize("lang", NOT_FOUND)
def test_each_language_has_a_404_page_in_its_own_words(built_site, lang):
    from .sitecheck import read_page

    path = built_site / lang / "404.html"
    html = path.read_text()
    title, calculator = NOT_FOUND[lang]
    assert f'<html lang="{lang}">' in html
    assert re.findall("<title>(.*)</title>", html) == [title]
    assert re.findall("<h1>(.*)</h1>", html) == [title.split(" · ")[0]]
    assert f'<a href="/{lang}/{CALCULATOR[lang]}/">{calculator}</a>' in html
    links = [link for link in read_page(path).links if not link.startswith("/assets/")]
    assert links == [f"/{lang}/", f"/{lang}/", *index_routes(lang), f"/{lang}/{CALCULATOR[lang]}/"]


def test_the_root_404_speaks_every_language_without_javascript(built_site):
    html = (built_site / "404.html").read_text()
    assert re.findall("<title>(.*)</title>", html) == ["Página no encontrada · Guías de memoria de GPU"]
    sections = re.findall(
        r'<section lang="(\w+)" aria-labelledby="not-found-\1" data-title="([^"]*)">\n<h2 id="not-found-\1">([^<]*)</h2>', html
    )
    assert sections == [(lang, title, title.split(" · ")[0]) for lang, (title, _) in NOT_FOUND.items()]
    for lang in NOT_FOUND:
        assert f'<li><a href="/{lang}/{CALCULATOR[lang]}/">{NOT_FOUND[lang][1]}</a></li>' in html


@pytest.mark.parametrize(("address", "locale", "lang"), [("/fr/guides/nulle-part/", "en-US", "fr"), ("/nowhere", "de-DE", "de")])
def test_the_root_404_shows_the_language_of_the_address_or_else_the_browser(page, site_url, built_site, address, locale, lang):
    """A host that serves the root 404.html for any missing path: the first segment picks the language."""
    page.context.set_extra_http_headers({"Accept-Language": locale})
    page.add_init_script(f"Object.defineProperty(navigator, 'languages', {{get: () => [{locale!r}]}})")
    page.route(f"{site_url}{address}", lambda route: route.fulfill(status=404, path=built_site / "404.html"))
    page.goto(site_url + address)
    assert page.title() == NOT_FOUND[lang][0]
    assert page.evaluate("document.documentElement.lang") == lang
    assert page.locator("section[lang]:visible").evaluate_all("sections => sections.map(s => s.lang)") == [lang]


@pytest.mark.parametrize(
    ("path", "sentence"),
    [
        (
            "es/modelos/qwen2.5-72b/index.html",
            'Licencia: <a href="https://huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/LICENSE">Qwen License Agreement</a>, '
            "condiciones propias del desarrollador: lee sus términos de uso antes de desplegarlo con fines comerciales.",
        ),
        (
            "de/modelle/mistral-7b-v0.3/index.html",
            'Lizenz: <a href="https://www.apache.org/licenses/LICENSE-2.0">Apache License 2.0</a>, '
            "eine Open-Source-Lizenz, die kommerzielle Nutzung erlaubt.",
        ),
        (
            "fr/modeles/deepseek-r1-distill-llama-70b/index.html",
            'Licence\u202f: <a href="https://www.llama.com/llama3_3/license/">Llama 3.3 Community License</a>, '
            "des conditions propres à l’éditeur du modèle\u202f: lisez-les avant tout usage commercial.",
        ),
    ],
)
def test_a_model_page_names_its_licence_and_says_what_kind_it_is(built_site, path, sentence):
    assert sentence in (built_site / path).read_text()


# French typography on the built pages, wherever a string comes from (content, interface, catalog,
# the calculator's messages): a narrow no-break space before : ; ! ? and Go/To for GB/TB.
FRENCH_PUNCTUATION = re.compile(r"(?:[^\s\u202f]|[ \u00a0])[:;!?](?=\s|$)")
ENGLISH_UNITS = re.compile(r"\d[\s\u202f\u00a0]?(?:GB|TB)(?:/s)?\b")


def french_typography(site: Path) -> list[str]:
    """Each French text (outside names and code) with a colon, semicolon, mark or unit set the English way."""
    names = phrases([*catalog_names(), *NAMES], re.IGNORECASE)
    found = []
    for page in [*sorted((site / "fr").rglob("*.html")), *site.glob("assets/config-data.*/fr.json")]:
        for lang, text in reader_texts(page):
            cleaned = names.sub(" ", CODE_WORDS.sub(" ", text)) if lang == "fr" else ""
            for match in [*FRENCH_PUNCTUATION.finditer(cleaned), *ENGLISH_UNITS.finditer(cleaned)]:
                context = " ".join(cleaned[max(0, match.start() - 30) : match.end() + 20].split())
                found.append(f"{page.relative_to(site)}: {match.group(0)!r} in «{context}»")
    return sorted(set(found))


def test_french_pages_write_go_and_a_narrow_space_before_colons(built_site):
    from gpumem.pages.formats import Formats, gettext_functions, load_translations

    from .project import REPO

    strings = gettext_functions(load_translations(REPO / "translations", "fr"))
    assert [str(strings["_"](unit)) for unit in ("%(value)s GB", "%(value)s TB/s")] == ["%(value)s Go", "%(value)s To/s"]
    assert (Formats("fr", "USD").colon, Formats("fr", "USD").semicolon, Formats("de", "USD").colon) == ("\u202f:", "\u202f;", ":")
    found = french_typography(built_site)
    assert found == [], f"{len(found)} French typography slips:\n" + "\n".join(found)
