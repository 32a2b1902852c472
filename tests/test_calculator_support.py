"""The calculator says which cards it leaves out, and why (engines/support.py, mirrored in calculator.js)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .test_calculator import CATALOG, calculator  # noqa: F401 - calculator is a fixture


def note(page: Page) -> str:
    return page.locator("#calc-note").inner_text()


def test_an_fp8_cache_leaves_out_the_cards_below_8_9_and_names_them(calculator: Page):  # noqa: F811
    before = note(calculator)
    calculator.select_option('[name="kv"]', "fp8")
    expect(calculator.locator("#calc-note")).to_have_text(
        f"{before} vLLM runs the FP8 KV cache from compute capability 8.9: left out A100 80GB, RTX 3090, RTX A6000."
    )
    options = calculator.locator("#calc-options").inner_text()
    assert "RTX 3090" not in options and "A100" not in options
    calculator.select_option('[name="kv"]', "bf16")
    expect(calculator.locator("#calc-note")).to_have_text(before)


def test_nf4_weights_run_on_no_gpu_in_the_pinned_vllm(calculator: Page):  # noqa: F811
    before = note(calculator)
    calculator.select_option('[name="weights"]', "nf4")
    expect(calculator.locator("#calc-note")).to_have_text(f"{before} vLLM runs NF4 (bitsandbytes) weights on no GPU.")
    expect(calculator.locator("#calc-options tr").first).to_have_text("No configuration on offer holds it.")
    assert CATALOG.rules.support is not None and CATALOG.rules.support.engines["vllm"].version == "0.33.0"
