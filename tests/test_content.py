"""Content holds words, not logic; and any valid price snapshot builds.

The Markdown in content/ is translated prose with placeholders: a formatter call on a computed
figure, a link or a macro call. Every decision (which GPU, fits or not, yes or no), every table
and every loop lives in templates/_macros.html and generator/compute*.py, written once for all
languages. A snapshot that lacks the GPUs the prose names as examples still builds: the prose
says so and names the nearest GPU on offer.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import nodes

from gpumem.commands.build import build, gather
from gpumem.errors import BuildError
from gpumem.figures import shared
from gpumem.pages.render import CONTENT_NAMES

from .conftest import NOW, SNAPSHOT, edit, line_of, options_for
from .project import CATALOGS, REPO, fixture_options

CONTENT = REPO / "content"
FILES = sorted(CONTENT.glob("*/*.md"))

# The only names a content placeholder may read (the content renderer's sandbox will expose just these).
ALLOWED_NAMES = frozenset({"m", *CONTENT_NAMES})  # the macros, and what the sandbox passes
# Expressions that are logic, not words. Concat (`~`) joins caption words and stays allowed;
# every other binary operator (arithmetic, and, or) is a BinExpr.
LOGIC = {
    nodes.If: "an if",
    nodes.For: "a for loop",
    nodes.CondExpr: "an inline if",
    nodes.Compare: "a comparison",
    nodes.Dict: "a dictionary",
    nodes.List: "a list",
    nodes.Tuple: "a tuple",
    nodes.BinExpr: "arithmetic or a boolean operator",
    nodes.UnaryExpr: "a unary operator",
    nodes.Filter: "a filter",
    nodes.Test: "an is-test",
    nodes.Slice: "a slice",
}
HTML_TAG = re.compile(r"<!--|</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")


def catalog_ids(*folders: Path) -> set[str]:
    """Every GPU and model id of these catalogs folders."""
    ids = set()
    for catalogs in folders:
        for name, key in (("gpus.yaml", "gpus"), ("models.yaml", "models")):
            ids |= {item["id"] for item in yaml.safe_load((catalogs / name).read_text())[key]}
    return ids


def id_pattern(ids: set[str]) -> re.Pattern[str]:
    """An id as a whole word: not inside a longer id, a number or a name (a sentence's full stop may follow)."""
    alternatives = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w-]|\.\w)")


FIXTURE_IDS = id_pattern(catalog_ids(CATALOGS))


def problems(source: str, ids: re.Pattern[str] = FIXTURE_IDS) -> list[str]:
    """What in a content file is not words: statements, ids, HTML, logic and names outside the allowed list."""
    found = []
    if "{%" in source:
        found.append("a {% statement %}")
    if "{#" in source:
        found.append("a {# comment #}")
    found += [f"catalog id {match.group()!r}" for match in ids.finditer(source)]
    found += [f"HTML {match.group()!r}" for match in HTML_TAG.finditer(source)]
    try:
        template = jinja2.Environment().parse(source)
    except jinja2.TemplateSyntaxError as error:
        return [*found, f"template syntax: {error.message}"]
    found += [f"a {type(node).__name__} statement" for node in template.body if not isinstance(node, nodes.Output)]
    for node in template.find_all(nodes.Node):
        found += [f"{what} ({type(node).__name__})" for kind, what in LOGIC.items() if isinstance(node, kind)]
        if isinstance(node, nodes.Name) and (node.ctx != "load" or node.name not in ALLOWED_NAMES):
            found.append(f"the name {node.name!r}")
    return found


@pytest.fixture(scope="module")
def shipped_ids() -> re.Pattern[str]:
    """The ids of the project's catalogs (the shipped content must name none) and of the fixture catalogs."""
    return id_pattern(catalog_ids(REPO / "catalogs", CATALOGS))


@pytest.mark.shipped_data
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CONTENT)) for p in FILES])
def test_content_holds_words_not_logic(path: Path, shipped_ids: re.Pattern[str]):
    assert problems(path.read_text(), shipped_ids) == []


def test_every_language_has_every_page():
    assert len(FILES) == 55


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{% set x = 1 %}{{ x }}", ["a {% statement %}", "a Assign statement", "the name 'x'", "the name 'x'"]),
        ("{{ f.money(shop.markets['h100-sxm'].lowest_price) }}", ["catalog id 'h100-sxm'", "the name 'shop'"]),
        ("{{ catalog.gpu('rtx-4090').name }}", ["catalog id 'rtx-4090'", "the name 'catalog'"]),
        (
            "<table><tr><td>1</td></tr></table>",
            ["HTML '<table>'", "HTML '<tr>'", "HTML '<td>'", "HTML '</td>'", "HTML '</tr>'", "HTML '</table>'"],
        ),
        ("{{ 'yes' if guide.x else 'no' }}", ["an inline if (CondExpr)"]),
        ("{{ f.gb(guide.a + guide.b) }}", ["arithmetic or a boolean operator (Add)"]),
        ("{{ {'fp32': 'FP32'}['fp32'] }}", ["a dictionary (Dict)"]),
        ("{{ f.either(rules.gpu_counts[1:] | map('string')) }}", ["a filter (Filter)", "a slice (Slice)"]),
        ("{{ guide.a > 1 }}", ["a comparison (Compare)"]),
        ("{{ fits(guide.a, guide.b) }}", ["the name 'fits'"]),
    ],
)
def test_the_checker_finds_logic(source, expected):
    assert problems(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "About {{ f.gb(guide.full_example_gb) }} with {{ f.percent(rules.serving_margin) }} more ([prices]({{ link('prices', page.lang) }})).",
        '{{ m.guide_table(guide.serving, "serving", "Memory (weights + " ~ f.percent(rules.serving_margin) ~ ")") }}',
        "Llama-style models at 3.5 bits, a 70B model, x < y and a -> b: {{ f.number(rules.precisions['bf16'], 1) }}",
    ],
)
def test_the_checker_lets_words_through(source):
    assert problems(source) == []


# ---- Any valid snapshot builds: the GPUs the prose names may be missing from it ----

HEAD = "taken_at: 2026-10-31T16:52:00Z\ncurrency: USD\nsource: A test snapshot.\noffers:\n"


def offer(machine: str, gpu: str, gpus: int, price: float) -> str:
    return f'  - {{machine: {machine}, gpu: {gpu}, gpus: {gpus}, price_per_gpu_hour: {price}, country: "DE", form_factor: PCIe, interconnect: PCIe}}\n'


def build_with_snapshot(root: Path, text: str) -> dict[str, str]:
    """Build the fixture project with this snapshot; each page's HTML with its line breaks and runs of spaces
    collapsed (no-break spaces kept), by path."""
    (root / "catalogs/prices" / SNAPSHOT).write_text(text)
    result = build(options_for(root), now=NOW)
    assert result.pages == 347
    return {str(p.relative_to(root / "site")): re.sub(r"[ \n]+", " ", p.read_text()) for p in (root / "site").rglob("index.html")}


def test_a_snapshot_without_the_example_gpus_names_the_nearest_on_offer(inputs):
    fixture = (inputs / "catalogs/prices" / SNAPSHOT).read_text()
    kept = [line for line in fixture.splitlines(keepends=True) if "gpu: h100-sxm," not in line and "gpu: rtx-4090," not in line]
    assert len(kept) < len(fixture.splitlines())
    pages = build_with_snapshot(inputs, "".join(kept))
    guide = pages["en/guides/gpu-memory/index.html"]
    assert (
        "No H100 was on offer; the nearest GPU that was, the A100 80GB (80\xa0GB), started at $2.21 per GPU-hour. "
        "No RTX 4090 was on offer; the nearest GPU that was, the RTX 3090 (24\xa0GB), started at $0.19 per GPU-hour. "
        "Prices are per hour" in guide
    )
    assert (
        "No había ninguna H100 en oferta; la GPU en oferta más cercana, la A100 80GB (80\xa0GB), costaba desde 2,21\xa0US$ por GPU-hora."
        in pages["es/guias/memoria-gpu/index.html"]
    )
    assert (
        "Not on offer in the snapshot of Oct 31, 2026: no machine with this GPU was listed. The nearest GPU on offer is the "
        '<a href="/en/gpus/rtx-3090/">RTX 3090</a> (24\xa0GB), from $0.19 per GPU-hour.' in pages["en/gpus/rtx-4090/index.html"]
    )
    # The question still names the consumer card of rules.yaml: whether it holds a need does not depend on the market.
    assert '<h3 id="faq-3"><a href="#faq-3">Can I fine-tune an 8B model on an RTX 4090?</a></h3>' in guide


def test_a_snapshot_of_one_small_gpu_builds_and_says_what_it_lacks(inputs):
    pages = build_with_snapshot(inputs, HEAD + offer("only", "rtx-3090", 1, 0.22))
    guide = pages["en/guides/gpu-memory/index.html"]
    assert "Arrakis offered 1 GPU on 1 machine." in guide
    assert "No H100 was on offer; the nearest GPU that was, the RTX 3090 (24\xa0GB), started at $0.22 per GPU-hour." in guide
    assert "<li>16-bit (FP16/BF16), 168\xa0GB: no configuration on offer holds it.</li>" in guide
    assert "<li>Full fine-tuning needs 128\xa0GB: it does not fit, and no configuration on offer holds it.</li>" in guide
    vram = pages["en/guides/llm-vram/index.html"]
    assert "so it needs about 84\xa0GB. No configuration on offer holds it.</p>" in vram
    assert "Llama 3.1 70B needs 168\xa0GB in BF16 and 42\xa0GB in 4 bits, and no configuration on offer holds either." in vram
    assert "4 bits (about 35\xa0GB, more than any configuration on offer holds)" in pages["en/calculator/index.html"]
    assert "lists 1 GPU on 1 machine, of 1 GPU model." in pages["en/prices/index.html"]
    assert '<a href="/de/gpus/rtx-3090/">RTX 3090</a> (24\xa0GB), ab 0,22\xa0$ pro GPU-Stunde.' in pages["de/gpus/h100-sxm/index.html"]


def test_a_snapshot_of_one_big_machine_builds(inputs):
    pages = build_with_snapshot(inputs, HEAD + offer("big", "b200", 8, 5.5))
    guide = pages["en/guides/gpu-memory/index.html"]
    assert "No RTX 4090 was on offer; the nearest GPU that was, the B200 (180\xa0GB), started at $5.50 per GPU-hour." in guide
    assert "<li>4-bit (INT4), 42\xa0GB: yes, on 1 × B200.</li>" in guide
    vram = pages["en/guides/llm-vram/index.html"]
    assert "the smallest configuration on offer, 1 × B200, holds it with room to spare." in vram
    assert "4 such conversations at once need 241.8\xa0GB: that takes 2 × B200." in vram
    assert "with these prices 4 bits saves nothing per hour." in vram
    assert "Aucun H100 n’était proposé\u202f; le GPU proposé le plus proche, le B200" in pages["fr/guides/memoire-gpu/index.html"]


def test_nearest_on_offer_is_the_closest_memory_preferring_at_least_as_much():
    catalog = gather(fixture_options(), now=NOW).catalog
    shop = shared.Shop(catalog)
    nearest = {gpu_id: shop.nearest_on_offer(catalog.gpu(gpu_id)) for gpu_id in ("h100-pcie", "mi300x", "gb300", "l4")}
    # 80 GB: two GPUs on offer have exactly as much; the cheaper one wins.
    assert nearest["h100-pcie"].id == "h100-sxm"
    assert shop.markets["h100-sxm"].lowest_price < shop.markets["a100-80gb-sxm"].lowest_price
    # 192 GB: the least memory at or above it, even though a card with less is closer.
    assert nearest["mi300x"].id == "b300"
    # 288 GB: nothing on offer has as much, so the biggest below it.
    assert nearest["gb300"].id == "b300"
    assert nearest["l4"].id == "rtx-3090"
    offered = shop.on_offer(catalog.gpu("h100-sxm"))
    assert (offered.market, offered.nearest) == (shop.markets["h100-sxm"], None)


def test_price_examples_must_be_known_gpus(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    edit(inputs / "catalogs/rules.yaml", "price_examples: [h100-sxm, rtx-4090]", "price_examples: [h100-sxm, rtx-4091]")
    edit(inputs / "catalogs/rules.yaml", "consumer_gpu: rtx-4090", "consumer_gpu: rtx4090")
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    line = line_of(inputs / "catalogs/rules.yaml", "price_examples:")
    assert raised.value.lines == [
        f"catalogs/rules.yaml:{line}: rules: guides.price_examples: unknown GPU 'rtx-4091' (not in gpus.yaml)",
        f"catalogs/rules.yaml:{line + 1}: rules: guides.consumer_gpu: unknown GPU 'rtx4090' (not in gpus.yaml)",
    ]
