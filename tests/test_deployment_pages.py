"""Model pages, GPU pages and the sizing guide size workloads with the deployment model."""

from __future__ import annotations

import re
from pathlib import Path

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import deployment

from .project import CATALOGS


def text(site: Path, page: str, start: str, end: str) -> str:
    """A page's words between two markers, tags dropped and white space folded."""
    html = (site / page / "index.html").read_text()
    part = html[html.index(start) : html.index(end, html.index(start))]
    return " ".join(re.sub(r"<[^>]+>", " ", part).replace("&#39;", "'").split())


def test_a_model_page_leads_with_its_release_format_and_the_cheapest_fit(built_site):
    words = text(built_site, "en/models/gpt-oss-120b", 'id="deployment"', 'id="deployed-table"')
    assert "gpt-oss-120b is released in MXFP4." in words
    assert (
        "MXFP4 69.3 GB 70.1 GB 4 × RTX 3090, 21.2 GB per GPU $0.76 per hour comfortable: also holds 3 more requests of 8,192 tokens Rent on Arrakis"
        in words
    )
    rows = text(built_site, "en/models/llama-3.1-8b", 'id="formats-table"', "</table>")
    assert rows.split(" Cheapest configuration on offer, memory per GPU ")[1].split(" GGUF")[0] == (
        "BF16 16.1 GB 19.3 GB 1 × RTX 3090, 18.6 GB per GPU $0.19 per hour comfortable: also holds 3 more requests of 8,192 tokens Rent on Arrakis "
        "FP8 9.1 GB 9.6 GB 1 × RTX 3090, 11.7 GB per GPU $0.19 per hour comfortable: also holds 3 more requests of 8,192 tokens Rent on Arrakis "
        "AWQ 4-bit 5.7 GB 4.8 GB 1 × RTX 3090, 8.3 GB per GPU $0.19 per hour comfortable: also holds 3 more requests of 8,192 tokens Rent on Arrakis"
    )


def test_a_model_is_sized_at_its_own_context_when_shorter():
    """Llama 2 7B reads 4,096 tokens: the pages never size it at 8,192."""
    catalog = load_catalog(CATALOGS)
    from gpumem.figures.subjects import page_context

    assert page_context(catalog, catalog.model("llama-2-7b")) == 4096


def test_the_tight_tag_says_what_tight_means(built_site):
    words = text(built_site, "en/models/gemma-2-27b", 'id="formats-table"', "</table>")
    assert (
        "FP8 28.4 GB 32.7 GB 2 × RTX 3090, 19.7 GB per GPU $0.38 per hour tight: holds these requests, not 3 more of 8,192 tokens Rent on Arrakis"
        in words
    )


def test_impossible_gpu_counts_are_explained(built_site):
    words = text(built_site, "en/models/phi-4", 'id="gpus"', "</p>")
    assert "a count works when it divides the heads and either divides the key-value heads or is a multiple of them." in words
    assert "For this model that is 1 or 2 GPUs; vLLM refuses to start on other counts." in words


def test_a_gpu_page_counts_with_the_memory_the_runtime_sees(built_site):
    catalog = load_catalog(CATALOGS)
    budget = deployment.budget_bytes(catalog.rules.deployment, catalog.gpu("rtx-4090").runtime_bytes)
    assert round(budget / 1e9, 1) == 23.4
    words = text(built_site, "en/gpus/rtx-4090", 'id="models"', "</table>")
    assert "must fit within 92% of the 25.4 GB the runtime sees." in words
    assert "Comfortable: the card also holds 3 more requests of the same length. Tight: it holds these requests, not 3 more." in words
    assert "Llama 3.1 8B 18.6 GB up to 44,121 tokens 5 requests of 8,192 tokens at once comfortable" in words


def test_the_sizing_guide_splits_comfortable_and_tight_per_card(built_site):
    words = text(built_site, "en/guides/inference-sizing", "Formats that fit one card", "</table>")
    assert "24 GB (RTX 3090) 48 GB (L40S) 96 GB (RTX PRO 6000) fits comfortably fits tightly fits comfortably fits tightly" in words
    # AWQ 4-bit holds on one 48 GB card at 8,192 tokens with vLLM 0.33.0's 0.92 (it did not at 0.9)
    assert "70B Llama 3.3 70B Instruct — — — AWQ 4-bit FP8, AWQ 4-bit, and GGUF Q4_K_M — 405B Llama 3.1 405B — — — — — —" in words
    assert "14B Qwen2.5 14B (Instruct) AWQ 4-bit and GGUF Q4_K_M FP8 BF16, FP8, AWQ 4-bit, and GGUF Q4_K_M —" in words
    spanish = text(built_site, "es/guias/dimensionar-inferencia", "Formatos que caben", "</table>")
    assert "cabe con holgura cabe justo" in spanish
    # an empty cell is a dash, without the tag's colours (issue 25: empty cells wore the yellow "tight" pill)
    page = (built_site / "en/guides/inference-sizing/index.html").read_text()
    assert '<td class="tight">—</td>' not in page and '<td class="comfortable">—</td>' not in page
    assert '<td>—</td><td class="tight">AWQ 4-bit</td>' in page


def test_no_figure_beyond_the_native_context_and_the_page_says_why(built_site):
    words = text(built_site, "en/models/llama-2-7b", 'id="deployment"', 'id="fine-tuning"')
    assert "Contexts of 8,192, 32,768, and 131,072 tokens are left out: Llama 2 7B was trained for 4,096 tokens at most" in words
    assert "Serving Llama 2 7B at 16 bits, 4,096 tokens, one request" in words
    assert "8,192 tokens" not in words.replace("Contexts of 8,192,", "")


def test_a_card_without_fp8_tensor_cores_says_how_vllm_still_runs_fp8_weights(built_site):
    """Issue 25: the A10's page said "FP8: no" above a filled FP8 column; vLLM 0.33.0 runs FP8 weights below compute
    capability 8.9 through its weight-only Marlin kernels (rules.yaml support.weights.vllm.fp8.fallback)."""
    a10 = (built_site / "en/gpus/a10/index.html").read_text()
    assert "<dt>FP8</dt><dd>no: vLLM runs FP8 weights through its Marlin kernels, stored in 8 bits and computed in 16</dd>" in a10
    assert "<dt>FP8</dt><dd>yes</dd>" in (built_site / "en/gpus/h100-sxm/index.html").read_text()
    german = (built_site / "de/gpus/a10/index.html").read_text()
    assert (
        "<dt>FP8</dt><dd>nein: vLLM rechnet FP8-Gewichte mit seinen Marlin-Kernels, in 8 Bit gespeichert und in 16 Bit gerechnet</dd>"
        in german
    )
