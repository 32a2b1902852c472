"""The fine-tuning figures of the pages: each model page's "Fine-tune it" table and the fine-tuning
guide, computed from the fixture catalogs and their snapshot, and what the built pages show."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import build, gather
from gpumem.errors import BuildError
from gpumem.figures.shared import Shop
from gpumem.figures.training import finetune_guide, holding, model_tuning, run_hours

from .conftest import NOW, edit, line_of, options_for
from .project import CATALOGS, fixture_options

CATALOG = load_catalog(CATALOGS)
SHOP = Shop(CATALOG)


def summary(row):
    """A table row as numbers: method, micro-batch, GPUs, the parts per GPU in bytes, the smallest and the cheapest configuration."""
    need, smallest, cheapest = row.shown, row.smallest, row.cheapest
    return (
        row.method,
        row.micro_batch,
        need.gpus,
        round(need.weights_bytes_per_gpu),
        round(need.gradients_bytes_per_gpu + need.optimizer_bytes_per_gpu),
        round(need.activations_bytes_per_gpu),
        round(need.total_bytes_per_gpu),
        smallest and (smallest.configuration.count, smallest.configuration.gpu.id, smallest.configuration.price_per_hour),
        cheapest and (cheapest.configuration.count, cheapest.configuration.gpu.id, cheapest.configuration.price_per_hour),
    )


def test_model_page_rows_for_llama_3_1_8b():
    tuning = model_tuning(CATALOG, CATALOG.model("llama-3.1-8b"), SHOP.configurations)
    assert tuning.lora_targets == ("q", "k", "v", "o", "gate", "up", "down")
    assert [summary(row) for row in tuning.rows] == [
        # with the allocator's 15 % reserve, 158 GB no longer fits the H200 nor 4 x L40S
        ("full", 1, 1, 16060522496, 112423657472, 8998879232, 137751494656, (1, "b300", 4.6), (8, "l40s", 3.52)),
        ("full", 8, 1, 16060522496, 112423657472, 71991033856, 200743649280, (1, "b300", 4.6), (1, "b300", 4.6)),
        ("lora", 1, 1, 16144408576, 251658240, 8998879232, 25663381504, (1, "l40s", 0.44), (2, "rtx-3090", 0.38)),
        (
            "lora",
            8,
            1,
            16144408576,
            251658240,
            71991033856,
            88655536128,
            (1, "rtx-pro-6000-blackwell", 1.9),
            (1, "rtx-pro-6000-blackwell", 1.9),
        ),
        # QLoRA adds 3 layers of 16-bit weights dequantized (1.31 GB)
        ("qlora", 1, 1, 5785827393, 251658240, 8998879232, 16613423169, (1, "rtx-3090", 0.19), (1, "rtx-3090", 0.19)),
        (
            "qlora",
            8,
            1,
            5785827393,
            251658240,
            71991033856,
            79605577793,
            (1, "rtx-pro-6000-blackwell", 1.9),
            (1, "rtx-pro-6000-blackwell", 1.9),
        ),
    ]


def test_a_run_no_configuration_holds_shows_the_most_gpus_a_machine_has():
    """Full fine-tuning of the 671B DeepSeek-V3 fits nothing on offer: the row shows it sharded over 8 GPUs."""
    tuning = model_tuning(CATALOG, CATALOG.model("deepseek-v3"), SHOP.configurations)
    full = tuning.rows[0]
    assert (full.method, full.held, full.smallest, full.cheapest, full.shown.gpus) == ("full", (), None, None, 8)


def test_holding_keeps_the_cards_that_hold_the_peak_cheapest_first():
    ones = [c for c in SHOP.configurations if c.count == 1]
    held = holding(40e9, ones)
    assert [(c.gpu.id, c.price_per_hour) for c in held[:3]] == [("l40s", 0.44), ("rtx-a6000", 0.49), ("rtx-6000-ada", 0.74)]
    assert all(c.gpu.runtime_bytes >= 40e9 for c in held)
    assert "rtx-4090" not in [c.gpu.id for c in held]


def test_run_hours_is_tokens_times_flops_over_what_the_gpus_sustain():
    # 3.6e8 tokens x 6 x 1e9 parameters = 2.16e18 FLOPs; 4 GPUs x 250 TFLOPS x 0.4 = 4e14 FLOPs/s: 5,400 s
    assert run_hours(3.6e8, 1e9, 6, 4, 250, 0.4) == pytest.approx(1.5, rel=1e-12)
    assert run_hours(1e8, 70.553706496e9, 6, 8, 362, 0.38) == pytest.approx(10.685292856450518, rel=1e-12)


def test_the_guide_without_throughputs_prices_no_run():
    guide = finetune_guide(CATALOG, SHOP.configurations, {})
    assert (guide.model.id, guide.micro_batch, guide.bigger_batch, guide.million_tokens, guide.mfu, guide.timed) == (
        "llama-3.1-70b",
        1,
        8,
        100,
        0.38,
        False,
    )
    cheapest = {
        m.method: (
            len(m.options),
            m.options[0].held.configuration.count,
            m.options[0].held.configuration.gpu.id,
            m.options[0].held.configuration.price_per_hour,
            round(m.options[0].held.need.total_bytes_per_gpu),
        )
        for m in guide.methods
    }
    assert cheapest == {
        "full": (2, 8, "b300", 36.8, 160313267354),
        "lora": (21, 8, "l40s", 3.52, 37051374746),
        "qlora": (30, 4, "l40s", 1.76, 32286950435),
    }
    full = guide.method("full").options
    assert [round(o.bigger_batch.total_bytes_per_gpu) if o.bigger_batch else None for o in full] == [None, None]


def test_the_guide_times_and_prices_the_run_where_the_throughput_is_known():
    guide = finetune_guide(CATALOG, SHOP.configurations, {"l40s": 362.0})
    assert guide.timed
    first = guide.method("lora").options[0]
    assert first.hours == pytest.approx(10.685292856450518, rel=1e-12)
    assert first.cost == pytest.approx(10.685292856450518 * 3.52, rel=1e-12)
    qlora = [(o.held.configuration.count, round(o.hours, 3)) for o in guide.method("qlora").options if o.hours is not None]
    assert qlora == [(4, 21.371), (8, 10.685)]
    assert guide.method("full").options[0].hours is None


def page(built_site: Path, path: str) -> str:
    return (built_site / path / "index.html").read_text()


def test_model_page_shows_the_fine_tune_table(built_site):
    html = page(built_site, "en/models/llama-3.1-8b")
    assert '<h2 id="fine-tune-it"><a href="#fine-tune-it">Fine-tune it</a></h2>' in html
    assert (
        '<tr><th scope="row">QLoRA</th><td>1</td>\n<td>5.8\xa0GB</td><td>0.3\xa0GB</td><td>9\xa0GB</td>\n'
        '<td data-need-gb="16.6134"><span class="need">16.6\xa0GB</span></td>\n'
        '<td><span class="config">1 × RTX 3090</span> <span class="price">$0.19 per hour</span> <span class="comfortable">'
        "comfortable: 19.1\xa0GB of 25.3\xa0GB</span></td></tr>"
    ) in html
    assert (
        '<span class="config">1 × B300</span> <span class="price">$4.60 per hour</span> <span class="comfortable">'
        "comfortable: 158.4\xa0GB of 288.4\xa0GB</span>\n"
        '<span>cheapest:</span><span class="config">8 × L40S, sharded with ZeRO-3</span>'
    ) in html


def test_guide_names_the_cheapest_configuration_per_method(built_site):
    html = page(built_site, "en/guides/best-gpu-fine-tune-llama-70b")
    for line in (
        "Full fine-tuning: the cheapest configuration on offer that holds it is 8 × B300, sharded with ZeRO-3, at $36.80 per hour, 160.3\xa0GB per GPU.",
        "LoRA: the cheapest configuration on offer that holds it is 8 × L40S, sharded with ZeRO-3, at $3.52 per hour, 37.1\xa0GB per GPU.",
        "QLoRA: the cheapest configuration on offer that holds it is 4 × L40S, sharded with ZeRO-3, at $1.76 per hour, 32.3\xa0GB per GPU.",
    ):
        assert f"<li>{line}</li>" in html
    # gpus.yaml's dense BF16 rate of the L40S (362.05 TFLOPS): 1e8 tokens x 6 x 70.55e9 / (8 x 362.05e12 x 0.38) = 10.68 h
    assert (
        '<tr><th scope="row">8 × L40S, sharded with ZeRO-3 <span class="comfortable">comfortable: '
        "42.3\xa0GB of 47.8\xa0GB</span></th><td>$3.52</td><td>37.1\xa0GB</td>\n"
        "<td>does not fit</td><td>10.7 h</td><td>$37.61</td></tr>"
    ) in html
    spanish = page(built_site, "es/guias/mejor-gpu-fine-tuning-llama-70b")
    assert (
        "<li>QLoRA: la configuración disponible más barata que lo admite es 4 × L40S, repartido con ZeRO-3, a 1,76\xa0US$ por hora, con 32,3\xa0GB por GPU.</li>"
        in spanish
    )


@pytest.mark.parametrize(
    ("vram", "guide", "words"),
    [
        ("es/guias/vram-llm", "/es/guias/mejor-gpu-fine-tuning-llama-70b/", "mejor GPU para hacer fine-tuning de Llama 70B"),
        ("en/guides/llm-vram", "/en/guides/best-gpu-fine-tune-llama-70b/", "The best GPU to fine-tune Llama 3.1 70B"),
        ("pt/guias/vram-llm", "/pt/guias/melhor-gpu-fine-tuning-llama-70b/", "melhor GPU para fine-tuning do Llama 3.1 70B"),
        ("fr/guides/vram-llm", "/fr/guides/meilleur-gpu-fine-tuning-llama-70b/", "meilleur GPU pour le fine-tuning de Llama 3.1 70B"),
        ("de/ratgeber/llm-vram", "/de/ratgeber/beste-gpu-fine-tuning-llama-70b/", "Die beste GPU für das Fine-Tuning von Llama 3.1 70B"),
    ],
)
def test_the_vram_guide_faq_links_the_fine_tuning_guide(built_site, vram, guide, words):
    assert f'<a href="{guide}">{words}</a>' in page(built_site, vram)
    assert (built_site / guide.strip("/") / "index.html").is_file()


def test_a_broken_pages_or_run_block_is_reported_by_file_and_line(inputs, monkeypatch):
    monkeypatch.chdir(inputs)
    rules = inputs / "catalogs" / "rules.yaml"
    edit(rules, "    micro_batches: [1, 8]\n", "    micro_batches: [1, 0]\n")
    edit(rules, "    optimizer: adamw\n", "    optimizer: lion\n")
    edit(rules, "    model: llama-3.1-70b\n    tokens:", "    model: llama-9-70b\n    tokens:")
    edit(rules, "    mfu: 0.38\n", "    mfu: 38\n")
    with pytest.raises(BuildError) as raised:
        gather(options_for(inputs), now=NOW)
    at = {text: line_of(rules, text) for text in ("micro_batches: [1, 0]", "optimizer: lion", "model: llama-9-70b", "mfu: 38")}
    assert raised.value.lines == [
        f"catalogs/rules.yaml:{at['micro_batches: [1, 0]']}: rules: training.pages.micro_batches: expected a positive integer, got 0",
        f"catalogs/rules.yaml:{at['optimizer: lion']}: rules: training.pages.optimizer: "
        "unknown optimizer 'lion' (expected adafactor, adamw, adamw_8bit, paged_adamw or sgd)",
        f"catalogs/rules.yaml:{at['model: llama-9-70b']}: rules: training.run.model: unknown model 'llama-9-70b' (not in models.yaml)",
        f"catalogs/rules.yaml:{at['mfu: 38']}: rules: training.run.mfu: expected a fraction between 0 and 1, got 38",
    ]


def test_the_guide_shows_time_and_cost_once_a_throughput_is_known(tmp_path, monkeypatch):
    """What the page shows after the GPU figures are wired in: the run's hours and cost beside each configuration that has them."""
    import gpumem.figures.site

    def with_l40s(catalog, configurations, dense_bf16_tflops):
        return finetune_guide(catalog, configurations, {"l40s": 362.0})

    monkeypatch.setattr(gpumem.figures.site, "finetune_guide", with_l40s)
    build(fixture_options(out=tmp_path / "site"), now=NOW)
    html = (tmp_path / "site/en/guides/best-gpu-fine-tune-llama-70b/index.html").read_text()
    assert "Time and cost are shown for GPUs whose dense BF16 throughput the catalog states." in html
    assert '<th>Time of the run</th><th class="key">Cost of the run</th>' in html
    assert (
        '<tr><th scope="row">8 × L40S, sharded with ZeRO-3 <span class="comfortable">comfortable: '
        "42.3\xa0GB of 47.8\xa0GB</span></th><td>$3.52</td><td>37.1\xa0GB</td>\n"
        "<td>does not fit</td><td>10.7 h</td><td>$37.61</td></tr>"
    ) in html
    assert "<td>—</td><td>—</td></tr>" in html  # a GPU whose throughput is not known


def test_the_training_fit_rule_tags_a_run_that_leaves_less_than_a_tenth_free(built_site):
    # LoRA of Llama 3.1 70B on 2 x RTX PRO 6000: 89.3 GB peak + 15 % of the 88.9 GB torch allocates = 102.3 GB of 102.6 GB
    lora = finetune_guide(CATALOG, SHOP.configurations, {}).method("lora").options
    two = next(o.held for o in lora if (o.held.configuration.count, o.held.configuration.gpu.id) == (2, "rtx-pro-6000-blackwell"))
    assert two.tight and round(two.need.footprint_bytes_per_gpu / 1e9, 1) == 102.3
    assert [o.held.tight for o in lora].count(True) == 2
    html = page(built_site, "en/guides/best-gpu-fine-tune-llama-70b")
    assert (
        '<tr><th scope="row">2 × RTX PRO 6000, sharded with ZeRO-3 <span class="tight">tight: 102.3\xa0GB of 102.6\xa0GB</span></th>'
    ) in html


@pytest.mark.parametrize("path", ["en/models/llama-3.1-8b", "en/guides/best-gpu-fine-tune-llama-70b"])
def test_the_page_states_the_training_fit_rule_once_above_its_tags(built_site, path):
    """The tags say only the footprint and the card's memory: the rule (the reserve, the free share) is this sentence."""
    html = page(built_site, path)
    assert html.count("QLoRA&#39;s figure also holds") == 1
    assert "reserve, " not in html.split("QLoRA&#39;s figure also holds")[1]
    assert (
        "QLoRA&#39;s figure also holds the 16-bit copies bitsandbytes dequantizes from its 4-bit weights (3 layers&#39; worth). "
        "Each configuration&#39;s tag adds the caching allocator&#39;s 15% reserve and calls the fit tight when less than 10% "
        "of the card stays free.</p>"
    ) in html
    german = page(built_site, "de/modelle/llama-3.1-8b")
    assert "und nennt die Konfiguration knapp, wenn weniger als 10\xa0% der Karte frei bleiben.</p>" in german
