"""Sources readers can trust: every source of rules.yaml on the methodology page of every language,
and the papers and pages behind a guide's table or figure cited next to it, from rules.yaml alone."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
import yaml

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import check
from gpumem.errors import BuildError

from .conftest import NOW, options_for
from .project import CATALOGS, REPO
from .test_methodology import PAGES, links, page, quoted_blocks, sources_page

URL = re.compile(r"https?://[^\s)\"]+[^\s).,;:\"]")
ARXIV = re.compile(r"arXiv:(\d{4}\.\d{4,5})")
GUIDES = {
    "guide-memory": {
        "es": "es/guias/memoria-gpu",
        "en": "en/guides/gpu-memory",
        "pt": "pt/guias/memoria-gpu",
        "fr": "fr/guides/memoire-gpu",
    },
    "guide-vram": {"es": "es/guias/vram-llm", "en": "en/guides/llm-vram", "pt": "pt/guias/vram-llm", "fr": "fr/guides/vram-llm"},
}
GUIDES["guide-memory"]["de"] = "de/ratgeber/gpu-speicher"
GUIDES["guide-vram"]["de"] = "de/ratgeber/llm-vram"
PAPERS = {
    "zero": "https://arxiv.org/abs/1910.02054",
    "qlora": "https://arxiv.org/abs/2305.14314",
    "lora": "https://arxiv.org/abs/2106.09685",
    "llama3": "https://arxiv.org/abs/2407.21783",
    "hf": "https://huggingface.co/docs/transformers/perf_train_gpu_one#anatomy-of-models-memory",
    "eleuther": "https://blog.eleuther.ai/transformer-math/",
}


def strings(value: object) -> list[str]:
    """Every string of a YAML document, keys included, however deep."""
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (strings(key) + strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return [value] if isinstance(value, str) else []


def cited(text: str) -> set[str]:
    """The web addresses a text names, arXiv numbers as their abstract pages."""
    return {match.group() for match in URL.finditer(text)} | {f"https://arxiv.org/abs/{n}" for n in ARXIV.findall(text)}


def test_every_address_of_rules_yaml_is_linked_on_the_methodology_or_sources_page_of_every_language(built_site):
    found = yaml.safe_load((CATALOGS / "rules.yaml").read_text())
    addresses = set().union(*(cited(text) for text in strings(found)))
    assert set(PAPERS.values()) <= addresses and len(addresses) >= 25
    sources = load_catalog(CATALOGS, now=NOW).rules.sources
    for lang in PAGES:
        text = sources_page(built_site, lang)
        assert addresses - set(links(text).hrefs) - set(links(page(built_site, lang)).hrefs) == set(), lang
        for block, source in quoted_blocks(sources).items():  # every block's source quoted whole, in every language
            quoted = re.search(rf'<th scope="row"><code>{re.escape(block)}</code></th><td><q lang="en">(.*?)</q></td>', text)
            assert quoted is not None, (lang, block)
            assert html.unescape(re.sub(r"<[^>]+>", "", quoted.group(1))) == " ".join(source.split()), (lang, block)


def test_the_methodology_names_each_paper_as_readers_know_it(built_site):
    text = page(built_site, "en")
    assert '<a href="https://arxiv.org/abs/2305.14314">QLoRA (Dettmers et al., 2023)</a>' in text  # the NF4 format's source


def source_lines(text: str) -> list[str]:
    return re.findall(r'<p class="note source">(.*?)</p>', text)


def test_the_main_guide_cites_the_papers_behind_its_tables_in_every_language(built_site):
    for lang, path in GUIDES["guide-memory"].items():
        lines = source_lines((built_site / path / "index.html").read_text())
        serving, fine_tuning, rules_section = lines
        assert re.findall(r'href="([^"]+)"', serving) == [PAPERS["eleuther"], PAPERS["qlora"]], lang
        assert re.findall(r'href="([^"]+)"', fine_tuning) == [PAPERS["qlora"], PAPERS["lora"], PAPERS["zero"]], lang
        assert re.findall(r'href="([^"]+)"', rules_section) == [PAPERS[k] for k in ("zero", "hf", "lora", "qlora")], lang
    english = source_lines((built_site / GUIDES["guide-memory"]["en"] / "index.html").read_text())
    assert english[2] == (
        'Sources: <a href="https://arxiv.org/abs/1910.02054" lang="en">ZeRO (Rajbhandari et al., 2019)</a>; '
        f'<a href="{PAPERS["hf"]}" lang="en">Hugging Face Transformers</a>; '
        '<a href="https://arxiv.org/abs/2106.09685" lang="en">LoRA (Hu et al., 2021)</a>; '
        '<a href="https://arxiv.org/abs/2305.14314" lang="en">QLoRA (Dettmers et al., 2023)</a>'
    )
    french = source_lines((built_site / GUIDES["guide-memory"]["fr"] / "index.html").read_text())
    assert french[0].startswith("Sources\u202f: ")


def test_the_vram_guide_cites_llama_3_where_it_uses_llama_numbers(built_site):
    for lang, path in GUIDES["guide-vram"].items():
        lines = [re.findall(r'href="([^"]+)"', line) for line in source_lines((built_site / path / "index.html").read_text())]
        assert lines == [
            [PAPERS["eleuther"]],  # the 20 % margin
            [PAPERS["llama3"]],  # 80 layers, 8 KV heads of 128
            [PAPERS[k] for k in ("zero", "hf", "lora", "qlora")],  # 16-18 bytes, 3x less, 48 GB for 65B
            ["https://docs.vllm.ai/en/latest/serving/parallelism_scaling.html", PAPERS["llama3"]],  # 64 heads
        ], lang
    spanish = source_lines((built_site / GUIDES["guide-vram"]["es"] / "index.html").read_text())
    assert spanish[1] == f'Fuente: <a href="{PAPERS["llama3"]}" lang="en">The Llama 3 Herd of Models (Llama Team, Meta, 2024)</a>'


@pytest.mark.shipped_data
def test_content_types_no_address_that_rules_yaml_cites():
    """A paper's address lives once, in rules.yaml; content names it through a source line."""
    addresses = set().union(*(cited(text) for text in strings(yaml.safe_load((REPO / "catalogs" / "rules.yaml").read_text()))))
    for path in sorted((REPO / "content").glob("*/*.md")):
        typed = cited(path.read_text()) & addresses
        assert typed == set(), path


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    shutil.copytree(REPO / "content", tmp_path / "content")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rules_problems(root: Path, old: str, new: str) -> tuple[list[str], int]:
    path = root / "catalogs" / "rules.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    line = next(n for n, row in enumerate(path.read_text().splitlines(), start=1) if new.splitlines()[-1] in row)
    with pytest.raises(BuildError) as raised:
        load_catalog(root / "catalogs", now=NOW)
    return raised.value.lines, line


def test_a_reference_no_source_cites_is_refused(root):
    found, line = rules_problems(root, "references:\n", 'references:\n  "https://arxiv.org/abs/1706.03762": "Attention Is All You Need"\n')
    assert found == [
        f"catalogs/rules.yaml:{line}: rules: references.https://arxiv.org/abs/1706.03762: "
        "cited by no source of this file (write the address or arXiv number in a source first)"
    ]


def test_a_reference_must_be_an_address(root):
    found, line = rules_problems(root, "references:\n", 'references:\n  "arXiv:1910.02054": "ZeRO"\n')
    assert found == [
        f"catalogs/rules.yaml:{line}: rules: references.arXiv:1910.02054: expected a URL starting with https://, got 'arXiv:1910.02054'"
    ]


def test_a_source_line_naming_a_block_rules_yaml_lacks_fails_the_build(root):
    path = root / "content" / "en" / "guide-vram.md"
    text = path.read_text()
    path.write_text(text.replace('m.source_line("serving.margin")', 'm.source_line("serving.margins")'))
    line = next(n for n, row in enumerate(path.read_text().splitlines(), start=1) if "serving.margins" in row)
    with pytest.raises(BuildError) as raised:
        check(options_for(root), now=NOW)
    assert f"content/en/guide-vram.md:{line}: template: KeyError: 'no source in rules.yaml for serving.margins'" in raised.value.lines
