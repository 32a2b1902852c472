"""Issue 23's models on the pages: two hybrids, chunked local attention and sparse MLA with multi-token prediction,
each with its own paragraph in every language, and no English word left on the other languages' pages.

The project is the golden fixture's (3 models, 107 pages) with the four entries of tests/fixtures/models-2026.yaml
appended to its models.yaml, built once for the module.
"""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import pytest

from gpumem.commands.build import build
from gpumem.options import project_options

from .conftest import NOW
from .golden.update import FIXTURE as GOLDEN
from .project import REPO, copy_project
from .test_languages import leaks

EXTRA = REPO / "tests/fixtures/models-2026.yaml"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("models-2026"), GOLDEN / "catalogs")
    models = root / "catalogs/models.yaml"
    extra = "".join(line for line in EXTRA.read_text().splitlines(True) if not line.startswith("#"))
    models.write_text(models.read_text() + extra)
    build(project_options(root), now=NOW)
    return root / "site"


def paragraph(page: Path, start: str) -> str:
    """The text of the first paragraph or list item that starts with `start`, its markup undone."""
    for block in re.findall(r"<(?:p|li)>(.*?)</(?:p|li)>", page.read_text(), re.DOTALL):
        text = html.unescape(re.sub(r"<[^>]+>", "", block)).strip()
        if text.startswith(start):
            return text
    raise AssertionError(f"{start!r} not on {page}")


def test_a_hybrid_s_page_says_which_layers_keep_a_state_and_which_cache_per_token(site: Path):
    # 30 x (24,576 x 2 + 524,288 x 4) bytes: the convolution in 16 bits, the recurrent state in FP32 (mamba_ssm_dtype)
    assert paragraph(site / "en/models/qwen3.5-35b-a3b/index.html", "30 of its 40 layers") == (
        "30 of its 40 layers are Gated DeltaNet layers: each keeps a fixed state per request, the last inputs of a "
        "convolution and a recurrent matrix, 64,389,120 bytes over those layers in the dtypes vLLM keeps them in, "
        "whatever the context. Only the other 10 layers cache keys and values, 20,480 bytes per token at 16 bits."
    )
    assert paragraph(site / "fr/modeles/qwen3.5-35b-a3b/index.html", "30 de ses 40 couches") == (
        "30 de ses 40 couches sont des couches Gated DeltaNet\u202f: chacune garde un état fixe par requête, les dernières "
        "entrées d’une convolution et une matrice récurrente, soit 64\u202f389\u202f120 octets pour ces couches dans les types "
        "de données où vLLM les garde, quel que soit le contexte. Seules les 10 autres couches gardent des clés et des "
        "valeurs, 20\u202f480 octets par token en 16 bits."
    )


def test_a_mamba_2_hybrid_says_its_mlp_only_blocks_cache_nothing(site: Path):
    # Nemotron-H: 23 Mamba-2 layers of 18,432 x 2 + 524,288 x 4 bytes (FP32 recurrent state), 23 MoE blocks alone and
    # 6 attention layers of 2 x 2 KV heads x 128 x 2 bytes
    assert paragraph(site / "en/models/nemotron-3-nano-30b-a3b/index.html", "23 of its 52 layers") == (
        "23 of its 52 layers are Mamba-2 layers: each keeps a fixed state per request, the last inputs of a convolution "
        "and a recurrent matrix, 49,082,368 bytes over those layers in the dtypes vLLM keeps them in, whatever the "
        "context. 23 more are MLP or mixture-of-experts blocks, which keep nothing per request; only the remaining 6 "
        "layers cache keys and values, 6,144 bytes per token at 16 bits."
    )
    assert paragraph(site / "fr/modeles/nemotron-3-nano-30b-a3b/index.html", "23 de ses 52 couches") == (
        "23 de ses 52 couches sont des couches Mamba-2\u202f: chacune garde un état fixe par requête, les dernières entrées "
        "d’une convolution et une matrice récurrente, soit 49\u202f082\u202f368 octets pour ces couches dans les types de "
        "données où vLLM les garde, quel que soit le contexte. 23 autres sont des blocs MLP ou de mélange d’experts, qui "
        "ne gardent rien par requête\u202f; seules les 6 couches restantes gardent des clés et des valeurs, 6\u202f144 octets "
        "par token en 16 bits."
    )


def test_chunked_local_attention_and_sparse_mla_have_their_own_words(site: Path):
    assert paragraph(site / "en/models/llama-4-scout/index.html", "36 of its 48 layers") == (
        "36 of its 48 layers attend only within their chunk of 8,192 tokens and never cache more than one chunk; the "
        "others grow with the whole context. While every layer still grows, the cache takes 196,608 bytes per token at 16 bits."
    )
    page = site / "en/models/deepseek-v3.2/index.html"
    assert paragraph(page, "Its sparse attention") == (
        "Its sparse attention also caches an indexer key of 132 bytes per token in each layer, whatever the KV cache's "
        "format: the indexer picks the tokens each query attends to."
    )
    assert paragraph(page, "The checkpoint also holds") == (
        "The checkpoint also holds 13.48 billion parameters of multi-token prediction layers, which vLLM loads only "
        "for speculative decoding: no figure here counts them."
    )


def test_every_language_has_its_own_words_for_them(site: Path):
    assert leaks(site, site.parent / "catalogs") == []


def test_a_gpu_page_lists_the_28_largest_of_the_models_that_fit_in_catalog_order():
    from gpumem.catalog.inputs import load_catalog
    from gpumem.figures.subjects import GPU_TABLE_MODELS, GpuModelRow, GpuPage

    from .project import CATALOGS

    catalog = load_catalog(CATALOGS)
    base = catalog.models[0]
    models = [dataclasses.replace(base, id=f"m{n}", params_b=float((n * 7) % 40 + 1)) for n in range(40)]
    fit = object()
    rows = tuple(GpuModelRow(model, (fit,) if n != 3 else (None,)) for n, model in enumerate(models))  # m3 fits nowhere
    page = GpuPage(catalog.gpus[0], None, rows)
    shown = [row.model.id for row in page.shown]
    largest = sorted((row for row in page.fitting), key=lambda row: -row.model.params_b)[:GPU_TABLE_MODELS]
    assert GPU_TABLE_MODELS == 28 and len(page.fitting) == 39
    assert shown == [row.model.id for row in page.fitting if row in largest]
    # sizes 1 to 40 once each, m3 (22) fitting nowhere: the 28 largest that fit are 40 to 23 and 21 to 12
    assert min(models[int(ident[1:])].params_b for ident in shown) == 12.0
