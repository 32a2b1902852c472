"""Speed and cost per token on the pages: each model page's and GPU page's speed table and the guide
"The best GPU for LLM inference", computed from the fixture catalogs and their snapshot at rules.yaml's
speed.pages load, checked against the speed engine itself and against what the built pages show."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import gather
from gpumem.engines.speed import Load, served
from gpumem.errors import BuildError
from gpumem.figures.shared import Shop
from gpumem.figures.speed import SpeedRow, gpu_speed, inference_guide, model_speed
from gpumem.figures.subjects import gpu_page, model_page

from .conftest import NOW, edit, line_of, options_for
from .measurements.speed_table import rows as measured_rows
from .project import CATALOGS

CATALOG = load_catalog(CATALOGS)
SHOP = Shop(CATALOG)
RULES = CATALOG.rules


def numbers(row: SpeedRow) -> tuple:
    """A row as the page shows it, before formatting: format, GPUs, price, decode and aggregate tokens/s,
    time to first token, and the cost per million output tokens at one request and at the busy load."""
    busy = row.busy
    return (
        row.fmt.name,
        row.configuration.count,
        row.configuration.gpu.id,
        row.configuration.price_per_hour,
        round(row.one.decode_tokens_per_s_per_request, 2),
        busy and round(busy.aggregate_tokens_per_s, 2),
        round(row.one.ttft_s, 4),
        row.one.usd_per_million_output_tokens and round(row.one.usd_per_million_output_tokens, 4),
        busy and busy.usd_per_million_output_tokens and round(busy.usd_per_million_output_tokens, 4),
    )


def engine(row: SpeedRow, requests: int, price: float | None):
    """What engines/speed.py gives for the row's configuration at `requests` requests of the pages' lengths."""
    pages, deployment = RULES.speed.pages, RULES.deployment
    load = Load(requests, pages.prompt_tokens, pages.output_tokens)
    kv = deployment.kv_formats[pages.kv_format]
    return served(RULES.speed, deployment, row.model, row.fmt, kv, row.configuration.gpu, row.configuration.count, load, price)


def assert_engine_figures(row: SpeedRow, price: float | None) -> None:
    """The row's figures are the engine's, at one request and (when held) at the busy load."""
    assert row.one == engine(row, 1, price)
    if row.busy is not None:
        assert row.busy == engine(row, RULES.speed.pages.busy_requests, price)


def table_rows(page: Path) -> list[list[str]]:
    """The speed section's table of a built page, as the reader sees each cell's text."""
    text = page.read_text()
    start = text.index('<h2 id="speed"')
    end = text.find("<h2", start + 5)
    section = text[start : end if end > 0 else text.index("</article>")]
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", section, re.S):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        found.append([" ".join(html.unescape(re.sub(r"<[^>]+>", "", cell)).split()) for cell in cells])
    return found


def test_the_pages_load_is_stated_in_rules_yaml():
    pages = RULES.speed.pages
    assert (pages.prompt_tokens, pages.output_tokens, pages.busy_requests, pages.kv_format, pages.guide_formats) == (
        1000,
        1000,
        16,
        "bf16",
        ("bf16", "fp8", "awq"),
    )


def test_model_page_rows_for_llama_3_1_70b():
    table = model_speed(CATALOG, model_page(CATALOG, SHOP, CATALOG.model("llama-3.1-70b")))
    assert [numbers(row) for row in table.rows] == [
        ("bf16", 8, "rtx-3090", 1.52, 34.57, 325.7, 0.4651, 12.3985, 1.2964),
        ("fp8", 4, "rtx-3090", 0.76, 33.82, None, 0.7292, 6.3899, None),
        ("awq", 1, "l40s", 0.44, 18.11, None, 0.7926, 6.8376, None),  # one 48 GB card holds it at vLLM 0.33.0's 0.92
        ("q4_k_m", 2, "rtx-3090", 0.38, 17.4, None, 2.98, 6.3761, None),  # 39.59 GiB of GGUF tensors: two 24 GB cards
        ("bf16", 8, "l40s", 3.52, 32.69, 430.25, 0.2385, 30.1111, 2.2726),
        ("bf16", 2, "b300", 9.2, 50.69, 757.33, 0.0666, 50.5346, 3.3744),
    ]
    for row in table.rows:
        assert_engine_figures(row, row.configuration.price_per_hour)
    # vLLM has a measured run on the L40S alone of these cards (rules.yaml speed.calibration gpus); llama.cpp on the RTX 3090
    assert [(row.engine, row.unmeasured) for row in table.rows] == [
        ("vllm", True),
        ("vllm", True),
        ("vllm", False),
        ("llama.cpp", False),
        ("vllm", False),
        ("vllm", True),
    ]


def test_the_cheapest_per_token_is_marked_in_words(built_site):
    table = model_speed(CATALOG, model_page(CATALOG, SHOP, CATALOG.model("llama-3.1-70b")))
    assert numbers(table.cheapest_one)[:3] == ("q4_k_m", 2, "rtx-3090")
    assert numbers(table.cheapest_busy)[:3] == ("bf16", 8, "rtx-3090")
    costs = [row.one.usd_per_million_output_tokens for row in table.rows]
    assert table.cheapest_one.one.usd_per_million_output_tokens == min(costs)
    shown = table_rows(built_site / "en/models/llama-3.1-70b/index.html")
    assert shown[0] == [
        "Configuration",
        "Tokens/s, one request",
        "Tokens/s in all, 16 requests",
        "First token",
        "Price per hour",
        "Per million output tokens, one request",
        "Per million output tokens, 16 requests",
    ]
    assert shown[1] == ["8 × RTX 3090, BF16 · vLLM* Rent on Arrakis", "34.6", "325.7", "0.47 s", "$1.52", "$12.40", "$1.30 cheapest"]
    assert shown[2] == [
        "4 × RTX 3090, FP8 · vLLM* Rent on Arrakis",
        "33.8",
        "does not hold them",
        "0.73 s",
        "$0.76",
        "$6.39",
        "does not hold them",
    ]
    assert shown[3] == [
        "1 × L40S, AWQ 4-bit · vLLM Rent on Arrakis",
        "18.1",
        "does not hold them",
        "0.79 s",
        "$0.44",
        "$6.84",
        "does not hold them",
    ]
    assert shown[4] == [
        "2 × RTX 3090, GGUF Q4_K_M · llama.cpp Rent on Arrakis",
        "17.4",
        "does not hold them",
        "2.98 s",
        "$0.38",
        "$6.38 cheapest",
        "does not hold them",
    ]
    assert sum("cheapest" in cell for row in shown[1:] for cell in row) == 2
    page = (built_site / "en/models/llama-3.1-70b/index.html").read_text()
    assert 'href="https://arrakis.example.org/rent?gpu=rtx-3090&amp;count=4"' in page


def test_gpu_page_rows_for_the_rtx_4090(built_site):
    table = gpu_speed(CATALOG, gpu_page(CATALOG, SHOP, CATALOG.gpu("rtx-4090")))
    assert table.price_per_gpu_hour == 0.38
    first = table.rows[0]
    assert numbers(first) == ("bf16", 1, "rtx-4090", 0.38, 51.95, 664.86, 0.1278, 2.0433, 0.1588)
    assert first.model.id == "llama-3.1-8b"
    for row in table.rows:
        assert_engine_figures(row, 0.38)
    shown = table_rows(built_site / "en/gpus/rtx-4090/index.html")
    assert shown[0] == ["Model", "Tokens/s, one request", "Tokens/s in all, 16 requests", "Per million output tokens, 16 requests"]
    assert shown[1] == ["Llama 3.1 8B (BF16) · vLLM", "52", "664.9", "$0.16"]  # a measured vLLM card: no *


def test_a_gpu_not_on_offer_shows_speed_and_no_price(built_site):
    assert "rtx-5090" not in SHOP.markets
    table = gpu_speed(CATALOG, gpu_page(CATALOG, SHOP, CATALOG.gpu("rtx-5090")))
    assert table.price_per_gpu_hour is None
    assert numbers(table.rows[0]) == ("bf16", 1, "rtx-5090", 0.0, 84.59, 1071.61, 0.0979, None, None)
    for row in table.rows:
        assert_engine_figures(row, None)
        assert row.price_per_hour is None
    page = built_site / "en/gpus/rtx-5090/index.html"
    shown = table_rows(page)
    assert shown[0] == ["Model", "Tokens/s, one request", "Tokens/s in all, 16 requests"]
    assert shown[1] == ["Llama 3.1 8B (BF16) · vLLM", "84.6", "1,071.6"]
    assert "The RTX 5090 is not on offer in this snapshot, so the table shows tokens per second and no price." in page.read_text()
    assert not any("$" in cell for row in shown for cell in row)


def picks(fmt: str, label: str):
    guide = inference_guide(CATALOG, SHOP.configurations)
    return next(pick for size, pick in guide.column(fmt) if size.label == label)


@pytest.mark.parametrize(
    ("label", "fmt", "fastest", "cheapest_one", "cheapest_busy"),
    [
        (
            "70B",
            "bf16",
            ("bf16", 8, "b300", 36.8, 90.94, 1381.87, 0.0331, 112.6325, 7.3974),
            ("bf16", 8, "rtx-3090", 1.52, 34.57, 325.7, 0.4651, 12.3985, 1.2964),
            ("bf16", 8, "rtx-3090", 1.52, 34.57, 325.7, 0.4651, 12.3985, 1.2964),
        ),
        (
            "32B",
            "awq",  # one RTX 3090 holds one request, not 16: the busy pick is an L40S
            ("awq", 8, "b300", 36.8, 137.82, 2084.91, 0.0234, 74.3376, 4.903),
            ("awq", 1, "rtx-3090", 0.19, 36.89, None, 1.7494, 1.5215, None),
            ("awq", 1, "l40s", 0.44, 34.54, 384.55, 0.3707, 3.5806, 0.3178),
        ),
        (
            "405B",
            "fp8",
            ("fp8", 8, "b300", 36.8, 47.2, 709.75, 0.0759, 217.1517, 14.4026),
            ("fp8", 2, "b300", 9.2, 21.5, 322.44, 0.1721, 119.2067, 7.9257),
            ("fp8", 2, "b300", 9.2, 21.5, 322.44, 0.1721, 119.2067, 7.9257),
        ),
    ],
)
def test_the_guide_picks_per_size_class(label, fmt, fastest, cheapest_one, cheapest_busy):
    pick = picks(fmt, label)
    assert (numbers(pick.fastest), numbers(pick.cheapest_one), numbers(pick.cheapest_busy)) == (fastest, cheapest_one, cheapest_busy)
    for row in (pick.fastest, pick.cheapest_one, pick.cheapest_busy):
        assert_engine_figures(row, row.configuration.price_per_hour)
    assert pick.fastest.one.decode_tokens_per_s_per_request == max(r.one.decode_tokens_per_s_per_request for r in pick.rows)
    assert pick.cheapest_busy.busy.usd_per_million_output_tokens == min(
        r.busy.usd_per_million_output_tokens for r in pick.rows if r.busy is not None
    )


def test_the_guide_page_shows_its_picks(built_site):
    text = (built_site / "en/guides/best-gpu-llm-inference/index.html").read_text()
    start = text.index('id="inference-bf16"')
    row = text[text.index('<tr><th scope="row">70B', start) :]
    cells = [
        " ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in re.findall(r"<td>(.*?)</td>", row[: row.index("</tr>")], re.S)
    ]
    assert cells == [
        "8 × B300 · vLLM* 90.9 tokens/s $36.80 per hour $112.63 per million output tokens Rent on Arrakis",
        "8 × RTX 3090 · vLLM* 34.6 tokens/s $1.52 per hour $12.40 per million output tokens Rent on Arrakis",
        "8 × RTX 3090 · vLLM* 325.7 tokens/s $1.52 per hour $1.30 per million output tokens Rent on Arrakis",
    ]


def test_every_speed_figure_says_it_is_an_estimate_and_links_the_method(built_site):
    """Each speed table quotes the error on measurements left out of the fit (vLLM's and llama.cpp's, the pages'
    engines), names the engines and versions, and says what the * of an unmeasured engine and GPU means."""
    sentence = (
        "Estimates; on measurements left out of the fit, vLLM is off by 12.6% for one request (33 measurements), "
        "19.1% under load (272), llama.cpp by 7.1% (121). See how speed is estimated. "
        "Engines: vLLM 0.33.0 and llama.cpp 0c1e57098, those of the launch commands. "
        "*: no run of this engine on this GPU was measured."
    )
    for page in ("en/models/llama-3.1-70b/", "en/gpus/rtx-5090/", "en/guides/best-gpu-llm-inference/"):
        text = (built_site / page / "index.html").read_text()
        assert sentence in " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split()), page
        assert 'href="/en/methodology/#speed"' in text, page
    method = " ".join(html.unescape(re.sub(r"<[^>]+>", "", (built_site / "en/methodology/index.html").read_text())).split())
    assert "Speed and cost per token" in method
    assert (
        "vLLM: Single-request decode: 31 of 33 measurements within 25%, mean error 12.6%, worst 25.8%. "
        "Throughput under load: 227 of 272 within 35%, mean error 19.1%, worst 116.6%. "
        "SGLang: Single-request decode: 14 of 29 measurements within 25%, mean error 45.1%, worst 192.7%."
    ) in method
    assert "llama.cpp: Single-request decode: 119 of 121 measurements within 25%, mean error 7.1%, worst 46.3%." in method
    assert '<h2 id="speed"><a href="#speed">Speed and cost per token</a></h2>' in (built_site / "en/methodology/index.html").read_text()


def test_the_calibration_rules_yaml_states_is_the_measured_table():
    """rules.yaml speed.calibration holds each engine's left-out error as tests.measurements.speed_table computes
    it, to three decimals, and the GPUs each engine was measured on."""
    found = [row for row in measured_rows() if row.left_out_error is not None]
    calibration = RULES.speed.calibration
    assert sorted(calibration.engines) == ["llama.cpp", "sglang", "tensorrt-llm", "vllm"]
    for engine, checks in calibration.engines.items():
        assert sorted(checks) == (["decode"] if engine == "llama.cpp" else ["aggregate", "decode"])
        for name, check in checks.items():
            errors = [abs(row.left_out_error) for row in found if row.engine == engine and row.check == name]
            within = sum(1 for error in errors if error <= check.bound)
            assert (check.points, check.within) == (len(errors), within)
            assert (check.mean_error, check.worst_error) == (round(math.fsum(errors) / len(errors), 3), round(max(errors), 3))
        gpus = {row.gpu for row in found if row.engine == engine and row.check in ("decode", "aggregate")}
        assert calibration.measured[engine] == gpus


def test_speed_pages_errors_name_the_line(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    rules = inputs / "catalogs/rules.yaml"
    edit(rules, "    busy_requests: 16\n", "    busy_requests: 0\n")
    edit(rules, "    guide_formats: [bf16, fp8, awq]\n", "    guide_formats: [bf16, fp9]\n")
    edit(rules, "    kv_format: bf16\n", "    kv_format: bf17\n")
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    at = {text: line_of(rules, text) for text in ("busy_requests: 0", "kv_format: bf17", "guide_formats: [bf16, fp9]")}
    assert raised.value.lines == [
        f"catalogs/rules.yaml:{at['busy_requests: 0']}: rules: speed.pages.busy_requests: expected a positive integer, got 0",
        f"catalogs/rules.yaml:{at['kv_format: bf17']}: rules: speed.pages.kv_format: unknown KV-cache format 'bf17' (expected bf16, fp32, fp8, nvfp4, q4_0 or q8_0)",
        f"catalogs/rules.yaml:{at['guide_formats: [bf16, fp9]']}: rules: speed.pages.guide_formats: "
        "unknown weight format 'fp9' (not in deployment.weight_formats)",
    ]
