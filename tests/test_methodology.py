"""The methodology page: both memory layers' constants, the measured error, every source linked."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import yaml
from markupsafe import Markup, escape
from playwright.sync_api import expect

from gpumem.catalog.links import links_in
from gpumem.commands.build import gather
from gpumem.figures.measured import rows, summaries
from gpumem.pages.formats import Formats

from .conftest import NOW
from .project import CATALOGS, fixture_options

PAGES = {
    "es": "es/metodologia/",
    "en": "en/methodology/",
    "pt": "pt/metodologia/",
    "fr": "fr/methodologie/",
    "de": "de/methodik/",
}
BASE = "https://gpumem.example.org/"
URL = re.compile(r"https?://[^\s)]+[^\s).,;:]")


class Links(HTMLParser):
    """Every href of <a> and <link> elements, with the hreflang of alternates."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.alternates: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.hrefs.append(values["href"] or "")
        if tag == "link" and values.get("rel") == "alternate":
            self.alternates[values.get("hreflang") or ""] = values.get("href") or ""


SOURCES = {
    lang: PAGES[lang] + route + "/" for lang, route in zip(PAGES, ("fuentes", "sources", "fontes", "sources", "quellen"), strict=True)
}


def page(built_site: Path, lang: str) -> str:
    return (built_site / PAGES[lang] / "index.html").read_text()


def sources_page(built_site: Path, lang: str) -> str:
    """The page that quotes every rules.yaml source (the support table cites its own on the methodology page)."""
    return (built_site / SOURCES[lang] / "index.html").read_text()


def quoted_blocks(sources: dict[str, str]) -> dict[str, str]:
    """The blocks the sources page quotes: all but the support table's, which it cites beside its rules."""
    return {block: text for block, text in sources.items() if not block.startswith("support.")}


def links(text: str) -> Links:
    parser = Links()
    parser.feed(text)
    return parser


def collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def catalog():
    return gather(fixture_options(), now=NOW).catalog


def test_the_english_heading(built_site):
    assert "<h1>How the numbers are computed</h1>" in page(built_site, "en")
    assert "<h1>Cómo se calculan las cifras</h1>" in page(built_site, "es")
    assert "<h1>Wie die Zahlen berechnet werden</h1>" in page(built_site, "de")


def test_every_weight_format_with_its_label_and_bits(built_site):
    text = page(built_site, "en")
    deployment = catalog().rules.deployment
    assert deployment is not None and len(deployment.weight_formats) >= 10
    english = Formats("en", "USD")
    for fmt in deployment.weight_formats.values():
        assert f'<th scope="row">{escape(fmt.label)}</th><td>{english.number(fmt.bits, 3)}</td>' in text, fmt.name
    assert '<th scope="row">GGUF Q4_K_M</th><td>4.899</td>' in text
    assert '<th scope="row">AWQ 4-bit</th><td>4.156</td>' in text


def test_every_kv_format_and_gpu_memory_as_the_runtime_sees_it(built_site):
    text = page(built_site, "en")
    found = catalog()
    assert found.rules.deployment is not None
    for kv in found.rules.deployment.kv_formats.values():
        assert f'<th scope="row">{escape(kv.label)}</th><td>{Formats("en", "USD").number(kv.bytes, 4)}</td>' in text
    for gpu in found.gpus:
        assert f'<a href="/en/gpus/{gpu.id}/">{escape(gpu.name)}</a></th>' in text
    # The RTX 3090: 24 GB on the box, 25,327,697,920 bytes for CUDA, 92 % of it for vLLM 0.33.0.
    assert '<a href="/en/gpus/rtx-3090/">RTX 3090</a></th><td>24\xa0GB</td><td>23.59\xa0GiB</td><td>21.7\xa0GiB</td>' in text


def test_the_error_summary_shows_the_counts_of_measured_summaries(built_site):
    found = catalog()
    assert found.rules.deployment is not None
    expected = summaries(rows(list(found.measured_points), found.measured_configs, found.rules.deployment, found.rules.calculator_limits))
    assert [item.count for item in expected] == [57, 49, 32, 5, 3, 7]
    text = collapsed(page(built_site, "en"))
    english = Formats("en", "USD")
    labels = {"weights": "weights", "kv": "KV cache", "runtime": "weights + runtime", "compute": "compute buffer"}
    labels.update(state="recurrent state", concurrency="requests at once")
    for item in expected:
        mean, worst = english.number(item.mean_error * 100, 2), english.number(item.worst_error * 100, 2)
        bound = english.percent(item.bound)
        row = f'<th scope="row">{labels[item.check]}</th><td>{item.count}</td><td>{mean}%</td><td>{worst}%</td><td>±{bound}</td>'
        assert row in text, row
    total = sum(item.count for item in expected)
    assert f"{total} of them held to a bound by the tests" in text
    # Every check has its row, its point linked to the log it was read from.
    checks = rows(list(found.measured_points), found.measured_configs, found.rules.deployment, found.rules.calculator_limits)
    hrefs = set(links(text).hrefs)
    assert {check.url for check in checks} <= hrefs
    assert text.count("<td>weights + runtime</td>") == sum(check.check == "runtime" for check in checks)
    # llama.cpp's compute buffer, one row per GPU a log names
    assert (text.count("<td>compute buffer on CUDA0</td>"), text.count("<td>compute buffer on CUDA1</td>")) == (4, 1)


def sources(value: object) -> list[str]:
    """Every `source` text of a YAML document, however deep."""
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in ([item] if key == "source" else sources(item))]
    if isinstance(value, list):
        return [text for item in value for text in sources(item)]
    return []


def test_every_rules_yaml_source_url_is_linked(built_site):
    texts = sources(yaml.safe_load((CATALOGS / "rules.yaml").read_text()))
    urls = {match.group() for text in texts for match in URL.finditer(str(text))}
    urls |= {f"https://arxiv.org/abs/{paper}" for text in texts for paper in re.findall(r"arXiv:(\d{4}\.\d{4,5})", str(text))}
    assert len(urls) >= 20 and "https://arxiv.org/abs/1910.02054" in urls
    for lang in PAGES:
        hrefs = set(links(page(built_site, lang)).hrefs) | set(links(sources_page(built_site, lang)).hrefs)
        assert urls - hrefs == set(), lang
    # Every block's source text is quoted as written, under its block name.
    text = sources_page(built_site, "en")
    for block, source in quoted_blocks(catalog().rules.sources).items():
        quoted = re.search(rf'<th scope="row"><code>{re.escape(block)}</code></th><td><q lang="en">(.*?)</q></td>', text)
        assert quoted is not None, block
        assert Markup(quoted.group(1)).striptags() == " ".join(source.split()), block


def test_links_in_a_source_text():
    found = links_in(
        "Adam (arXiv:1910.02054), see (https://example.org/a/b.html#x); and https://example.org/c, then https://arxiv.org/abs/1910.02054."
        " A log: https://github.com/o/r/issues/21, a file https://github.com/o/r/blob/abc/src/x.py#L3 of https://github.com/o/r"
    )
    assert [(link.url, link.label) for link in found] == [
        ("https://example.org/a/b.html#x", "example.org/…/b.html"),
        ("https://example.org/c", "example.org/c"),
        ("https://arxiv.org/abs/1910.02054", "arXiv:1910.02054"),
        ("https://github.com/o/r/issues/21", "o/r#21"),
        ("https://github.com/o/r/blob/abc/src/x.py#L3", "o/r/…/x.py"),
        ("https://github.com/o/r", "o/r"),
    ]


def test_five_languages_link_each_other_and_every_page_links_here(built_site):
    for lang in PAGES:
        parsed = links(page(built_site, lang))
        assert parsed.alternates == {**{code: BASE + url for code, url in PAGES.items()}, "x-default": BASE + PAGES["es"]}
        assert {"/" + url for url in PAGES.values()} <= set(parsed.hrefs)
        home = links((built_site / lang / "index.html").read_text())
        assert "/" + PAGES[lang] in home.hrefs
    sitemap = (built_site / "sitemap.xml").read_text()
    for url in PAGES.values():
        assert f"<loc>{BASE}{url}</loc>" in sitemap
    assert '<a href="/fr/methodologie/" aria-current="page">Comment les chiffres sont calculés</a>' in page(built_site, "fr")


def test_the_engine_versions_and_what_changes_with_them(built_site):
    """Part 3 of issue 22: the versions every figure follows, and the terms that move with them, from the build."""
    words = " ".join(re.sub(r"<[^>]+>", " ", (built_site / "en/methodology/index.html").read_text()).split())
    assert "vllm 0.33.0 4ba787ec9" in words
    assert "llama.cpp 0c1e57098 0c1e57098" in words
    assert "With vLLM 0.33.0, gpu_memory_utilization defaults to 92% (it was 90% in vLLM 0.19)" in words
    assert "its CUDA-graph memory, 0.36 GiB per GPU as public logs print it (none with --enforce-eager )" in words
    assert "cards of 160 GiB or more take the largest batch defaults" in words
    assert "keeps 4 pipeline copies of what each GPU receives (the mask and the hidden state)" in words
    assert "its sliding-window caches hold the window plus one micro-batch of cells" in words
    assert "one 512-token micro-batch" in words
    german = " ".join(re.sub(r"<[^>]+>", " ", (built_site / "de/methodik/index.html").read_text()).split())
    assert "Mit vLLM 0.33.0 ist gpu_memory_utilization standardmäßig 92" in german


def test_a_model_page_gives_the_command_of_each_cheapest_configuration(built_site):
    html = (built_site / "en/models/qwen3-32b/index.html").read_text()
    assert (
        '<p>AWQ 4-bit on 1 × RTX 3090, vLLM 0.33.0 <button type="button" class="copy" hidden>Copy</button></p>\n'
        "<pre><code>vllm serve Qwen/Qwen3-32B-AWQ --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.92 "
        "--max-num-seqs 1</code></pre>"
    ) in html
    assert '<a href="https://huggingface.co/Qwen/Qwen3-32B-GGUF">Qwen/Qwen3-32B-GGUF</a>' in html
    french = (built_site / "fr/modeles/qwen3-32b/index.html").read_text()
    assert '<div class="launches" data-done="Copié">' in french and '<button type="button" class="copy" hidden>Copier</button>' in french
    assert len(list((built_site / "assets").glob("copy.*.js"))) == 1


def test_the_parameter_count_estimate_and_its_error_on_models_left_out(built_site):
    words = " ".join(re.sub(r"<[^>]+>", " ", page(built_site, "en")).split())
    assert (
        "estimate the rest from the catalog&#39;s 20 dense architectures: layers ≈ 16.71 × P^0.352 and hidden size ≈ 1,965.5 × P^0.325"
    ) in words
    assert "misses the one left out by a median of 11% in layers (at most 30%), 0% in hidden size (at most 33%) and 15% in the KV" in words


def test_the_sources_have_a_page_of_their_own_linked_from_the_methodology(built_site):
    for lang in PAGES:
        assert f'href="/{SOURCES[lang]}"' in page(built_site, lang), lang
        text = sources_page(built_site, lang)
        assert f'href="/{PAGES[lang]}"' in text and "<table" in text, lang
    assert "<h1>Every constant of rules.yaml and its source</h1>" in sources_page(built_site, "en")
    assert "<h1>Chaque constante de rules.yaml et sa source</h1>" in sources_page(built_site, "fr")


def test_a_copy_button_copies_its_command_and_says_so(page, site_url):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{site_url}/fr/modeles/qwen3-32b/")
    button = page.locator(".launch button.copy").first
    expect(button).to_be_visible()
    command = page.locator(".launch code").first.inner_text()
    button.click()
    expect(button).to_have_text("Copié")
    assert page.evaluate("navigator.clipboard.readText()") == command
    assert command.startswith("vllm serve ") and "--max-model-len 8192" in command
    expect(button).to_have_text("Copier", timeout=5000)  # two seconds later
