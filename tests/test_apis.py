"""API prices (catalogs/apis.yaml) and the page "Self-hosting or an API?": the catalog validated like the
others, the page's costs at each utilisation and break-even volume from the fixture catalogs, the
script agreeing with Python, and the cost per million tokens in `gpumem prices diff`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import quickjs
import yaml

from gpumem.catalog.inputs import load_catalog
from gpumem.commands.build import build
from gpumem.commands.prices_diff import diff
from gpumem.errors import BuildError
from gpumem.figures.apis import api_guide, configurations_needed, requests_tokens, volume_cost
from gpumem.figures.shared import Shop

from .conftest import NOW, SNAPSHOT, edit, options_for
from .project import CATALOGS, published

APIS = "catalogs/apis.yaml"
GOOD = "  - {provider: Example API, model: llama-3.1-8b, input_usd_per_million: 0.1, output_usd_per_million: 0.2, date: 2026-10-01, source: https://api.example/p}\n"
PAGE = "en/guides/self-hosting-vs-api/index.html"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture catalogs as the working folder, so errors show short paths."""
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def problems(root: Path, *entries: str) -> list[str]:
    (root / APIS).write_text("apis:\n" + "".join(entries))
    with pytest.raises(BuildError) as raised:
        load_catalog(root / "catalogs", now=NOW)
    return raised.value.lines


def guide():
    catalog = load_catalog(CATALOGS, now=NOW)
    found = api_guide(catalog, Shop(catalog).configurations)
    assert found is not None
    return found


# ---- the catalog ----


def test_the_fixture_prices_are_read_with_their_fields():
    prices = load_catalog(CATALOGS, now=NOW).api_prices
    assert [(p.provider, p.model, p.input_usd_per_million, p.output_usd_per_million, str(p.date), p.quantization) for p in prices] == [
        ("Example API", "llama-3.1-8b", 0.1, 0.2, "2026-10-01", ""),
        ("Example API", "llama-3.3-70b", 0.6, 0.8, "2026-10-01", "fp8"),
        ("Other API", "llama-3.3-70b", 0.9, 0.9, "2026-09-15", ""),
    ]


@pytest.mark.shipped_data
def test_the_project_catalog_covers_enough_models_and_providers():
    """The project's apis.yaml alone, against its models.yaml: not the newest snapshot, which the daily routine replaces."""
    root = Path(__file__).resolve().parent.parent / "catalogs"
    prices = yaml.safe_load((root / "apis.yaml").read_text())["apis"]
    models = {model["id"] for model in yaml.safe_load((root / "models.yaml").read_text())["models"]}
    assert len(prices) >= 12 and len({p["model"] for p in prices}) >= 6 and len({p["provider"] for p in prices}) >= 3
    assert all(p["model"] in models and str(p["source"]).startswith("https://") for p in prices)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (GOOD.replace("llama-3.1-8b", "llama-9b"), "Example API llama-9b: model: unknown model 'llama-9b' (not in models.yaml)"),
        (GOOD.replace("2026-10-01", "2026-13-01"), "Example API llama-3.1-8b: date: expected a date like 2025-08-12, got '2026-13-01'"),
        (
            GOOD.replace("2026-10-01", "2026-11-05"),
            "Example API llama-3.1-8b: date: 2026-11-05 is after the price snapshot (2026-10-31): "
            "a price seen later cannot be compared with that market",
        ),
        (
            GOOD.replace("input_usd_per_million: 0.1", "input_usd_per_million: 0"),
            "Example API llama-3.1-8b: input_usd_per_million: expected a positive number, got 0",
        ),
        (
            GOOD.replace("output_usd_per_million: 0.2", "output_usd_per_million: 88"),
            "Example API llama-3.1-8b: output_usd_per_million: 88 is outside 0.005–50 US$ per million tokens, the range of a plausible "
            "API price (api_page in rules.yaml): a price in cents, or per thousand tokens?",
        ),
        (
            GOOD.replace("input_usd_per_million: 0.1", "input_usd_per_million: 0.0001"),
            "Example API llama-3.1-8b: input_usd_per_million: 0.0001 is outside 0.005–50 US$ per million tokens, the range of a plausible "
            "API price (api_page in rules.yaml): a price in cents, or per thousand tokens?",
        ),
        (
            GOOD.replace("https://api.example/p", "ftp://api.example/p"),
            "Example API llama-3.1-8b: source: expected a URL starting with https://, got 'ftp://api.example/p'",
        ),
        (
            GOOD.replace("}", ", note: on demand}"),
            "Example API llama-3.1-8b: note: unknown field (expected one of: provider, model, input_usd_per_million, output_usd_per_million, date, source, quantization)",
        ),
        (
            GOOD.replace("}", ", quantization: fp4}"),
            "Example API llama-3.1-8b: quantization: unknown weight format 'fp4' (not in deployment.weight_formats of rules.yaml)",
        ),
    ],
)
def test_each_bad_price_is_one_exact_problem(root, entry, message):
    assert problems(root, entry) == [f"{APIS}:2: {message}"]


def test_a_missing_source_is_named_on_its_entry(root):
    assert problems(root, GOOD.replace(", source: https://api.example/p", "")) == [
        f"{APIS}:2: Example API llama-3.1-8b: source: missing field (expected a URL)"
    ]


def test_the_same_price_twice_is_refused(root):
    assert problems(root, GOOD, GOOD) == [
        f"{APIS}:3: Example API llama-3.1-8b: date: the same provider, model, quantization and date as the entry on line 2"
    ]


def test_every_bad_entry_is_reported_at_once(root):
    found = problems(root, GOOD.replace("llama-3.1-8b", "llama-9b"), GOOD.replace("0.2", "-1"))
    assert found == [
        f"{APIS}:2: Example API llama-9b: model: unknown model 'llama-9b' (not in models.yaml)",
        f"{APIS}:3: Example API llama-3.1-8b: output_usd_per_million: expected a positive number, got -1",
    ]


def test_a_file_without_its_list_is_refused(root):
    (root / APIS).write_text("prices: []\n")
    with pytest.raises(BuildError) as raised:
        load_catalog(root / "catalogs", now=NOW)
    assert raised.value.lines == [
        f"{APIS}:1: file: prices: unknown field (did you mean 'apis'?)",
        f"{APIS}:1: file: apis: expected a list of API prices, got nothing",
    ]


def test_no_file_means_no_price(root):
    (root / APIS).unlink()
    assert load_catalog(root / "catalogs", now=NOW).api_prices == ()


def page_rule_problems(root: Path, field: str, old: str, new: str) -> tuple[int, list[str]]:
    """rules.yaml's api_page with one field's value changed: the field's line and what loading the catalog reports."""
    edit(root / "catalogs/rules.yaml", f"{field}: {old}", f"{field}: {new}")
    line = next(n for n, text in enumerate((root / "catalogs/rules.yaml").read_text().splitlines(), 1) if field in text)
    with pytest.raises(BuildError) as raised:
        load_catalog(root / "catalogs", now=NOW)
    return line, raised.value.lines


def test_price_bounds_must_be_in_order(root):
    line, problems = page_rule_problems(root, "min_usd_per_million", "0.005", "60")
    assert problems == [f"catalogs/rules.yaml:{line}: rules: api_page.min_usd_per_million: 60 is not less than max_usd_per_million (50)"]


# ---- the page's figures (fixture catalogs: 16 requests of 1,000 + 500 tokens) ----


def test_the_cheapest_configuration_per_token_and_its_cost_at_each_utilisation():
    first = guide().models[0]
    hosted = first.hosted
    assert (first.model.id, first.fmt.name, hosted.fit.configuration.count, hosted.fit.configuration.gpu.id) == (
        "llama-3.1-8b",
        "bf16",
        1,
        "rtx-3090",
    )
    assert hosted.fit.configuration.price_per_hour == 0.19
    assert round(hosted.speed.aggregate_tokens_per_s, 3) == 427.674
    # $0.19 / (427.674 tokens/s x 3,600 s) x 1e6 = $0.1234 per million at 100 %, ten times that at 10 %
    assert [round(hosted.at(u), 6) for u in guide().setting.utilisations] == [1.234065, 0.246813, 0.123407]


def test_the_break_even_volume_against_an_api():
    offer = guide().models[0].cheapest_api
    # The API at this load: $0.20 output + $0.10 input x 1,000 / 500 prompt tokens per output token = $0.40 per million
    assert offer.usd_per_million_at_load == 0.4
    # Renting all day: $0.19 x 24 = $4.56, over $0.40 per million = 11.4 million output tokens a day,
    # 30.9 % of the 427.674 x 86,400 = 36.95 million the RTX 3090 produces at this load
    assert (offer.breakeven_tokens_per_day, round(offer.breakeven_utilisation, 4), offer.reachable) == (11_400_000.0, 0.3085, True)
    # In requests of the load's 500 output tokens: 11.4 million / 500 = 22,800 a day
    assert offer.breakeven_requests_per_day == 22_800.0


def test_what_a_configuration_makes_in_a_day_at_full_use():
    hosted = guide().models[0].hosted
    # 427.674 output tokens/s x 86,400 s = 36.95 million a day: the denominator of a reader's utilisation
    assert round(hosted.tokens_per_day, 3) == 36_951_041.523
    assert round(hosted.tokens_per_day / 500, 3) == 73_902.083  # requests of the load's 500 output tokens


def test_a_volume_a_day_becomes_a_utilisation_and_a_cost():
    hosted = guide().models[0].hosted
    # 5 million output tokens a day on the RTX 3090 ($4.56 a day): 13.5 % of its 36.95 million, $4.56 / 5 = $0.912 per million
    assert (round(hosted.utilisation(5_000_000), 6), round(hosted.at_volume(5_000_000), 9)) == (0.135314, 0.912)
    # 20,000 requests of 500 output tokens are 10 million output tokens: $4.56 / 10 = $0.456 per million
    assert requests_tokens(20_000, 500) == 10_000_000
    assert (round(hosted.utilisation(10_000_000), 6), round(hosted.at_volume(10_000_000), 9)) == (0.270628, 0.456)
    # 100 million a day is 271 % of one: three of them, each rented all day, $13.68 / 100 = $0.1368 per million
    assert (configurations_needed(hosted.utilisation(100_000_000)), round(hosted.at_volume(100_000_000), 9)) == (3, 0.1368)
    # At a utilisation the table shows, the volume's cost is the table's
    assert hosted.at_volume(hosted.tokens_per_day * 0.5) == pytest.approx(hosted.at(0.5), rel=1e-12)


@pytest.mark.parametrize(("utilisation", "copies"), [(0.05, 1), (1.0, 1), (1.0001, 2), (2.0, 2), (2.5, 3)])
def test_past_full_use_each_started_hundred_per_cent_takes_one_more_configuration(utilisation, copies):
    assert configurations_needed(utilisation) == copies
    assert volume_cost(1.0, utilisation) == copies / utilisation


def test_the_cheapest_api_at_a_reader_s_lengths():
    eight, seventy = guide().models
    # At the load (1,000 prompt, 500 output) as the table; with 4,000 prompt and 250 output tokens the input price
    # weighs 16 times: $0.20 + $0.10 x 16 = $1.80; Example API's $0.80 + $0.60 x 16 = $10.40 beats Other API's $15.30
    assert (eight.cheapest_api_cost(1000, 500), seventy.cheapest_api_cost(1000, 500)) == (0.4, 2.0)
    assert (round(eight.cheapest_api_cost(4000, 250), 9), round(seventy.cheapest_api_cost(4000, 250), 9)) == (1.8, 10.4)


def test_the_script_data_holds_the_load_and_each_model_s_prices():
    found = guide()
    data = found.script_data()
    assert (data["prompt"], data["output"], list(data["models"])) == (1000, 500, ["llama-3.1-8b", "llama-3.3-70b"])
    assert data["models"]["llama-3.3-70b"] == {
        "full": found.models[1].hosted.usd_per_million,
        "day": found.models[1].hosted.tokens_per_day,
        "apis": [[0.6, 0.8], [0.9, 0.9]],
    }


def test_apis_are_listed_cheapest_at_the_load_first():
    seventy = guide().models[1]
    assert [(o.price.provider, round(o.usd_per_million_at_load, 6)) for o in seventy.apis] == [("Example API", 2.0), ("Other API", 2.7)]
    assert seventy.hosted.fit.configuration.count == 8 and round(seventy.hosted.usd_per_million, 6) == 1.476785


def test_a_price_seen_more_than_the_limit_before_the_snapshot_is_marked(root):
    """rules.yaml api_page.stale_after_days: the fixture snapshot is of 2026-10-31, its prices were seen on
    2026-10-01 (30 days before) and 2026-09-15 (46 days before)."""
    assert [(o.price.provider, o.age_days, o.stale) for o in guide().models[1].apis] == [
        ("Example API", 30, False),
        ("Other API", 46, False),
    ]
    edit(root / "catalogs/rules.yaml", "stale_after_days: 180", "stale_after_days: 40")
    catalog = load_catalog(root / "catalogs", now=NOW)
    seventy = api_guide(catalog, Shop(catalog).configurations).models[1]
    assert [(o.price.provider, o.age_days, o.stale) for o in seventy.apis] == [("Example API", 30, False), ("Other API", 46, True)]
    shutil.copytree(Path(__file__).resolve().parent.parent / "content", root / "content")
    build(options_for(root), now=NOW)
    html = (root / "site" / PAGE).read_text()
    assert '<td>Sep 15, 2026 <span class="tight">46 days old</span></td>' in html
    assert "<td>Oct 1, 2026</td>" in html
    assert "A price seen more than 40 days before the GPU prices of this page is marked" in html


def test_the_limit_is_a_whole_number_of_days(root):
    line, problems = page_rule_problems(root, "stale_after_days", "180", "half a year")
    assert problems == [f"catalogs/rules.yaml:{line}: rules: api_page.stale_after_days: expected a positive integer, got 'half a year'"]


def test_a_snapshot_in_another_currency_has_no_comparison(root):
    snapshot = root / "catalogs/prices" / SNAPSHOT
    snapshot.write_text(snapshot.read_text().replace("currency: USD", "currency: EUR"))
    catalog = load_catalog(root / "catalogs", now=NOW)
    assert api_guide(catalog, Shop(catalog).configurations).models == ()
    shutil.copytree(Path(__file__).resolve().parent.parent / "content", root / "content")
    build(options_for(root), now=NOW)
    html = (root / "site" / PAGE).read_text()
    assert "No comparison can be drawn here: it needs API prices (catalogs/apis.yaml) and a price snapshot in US dollars." in html
    assert 'id="api-costs"' not in html


# ---- the page ----


def test_the_page_shows_the_figures(built_site: Path):
    html = re.sub(r"\s+", " ", (built_site / PAGE).read_text())
    assert "<td>1 × RTX 3090</td><td>$0.19</td><td>37 million</td> <td>$1.23</td><td>$0.25</td><td>$0.12</td>" in html
    # The first table: what the configuration makes in a day, and the break-even with the cheapest API in three units
    assert '<td>$0.40 <span class="note">Example API</span></td> <td>11.4 million</td><td>22,800</td><td>31%</td></tr>' in html
    # The 70B's 8 x RTX 3090 at $1.8119 per million at full use: 18.24 million a day, 36,480 requests, 91 % of its 20.1 million
    assert '<td>$2.00 <span class="note">Example API</span></td> <td>18.2 million</td><td>36,480</td><td>74%</td></tr>' in html
    # The prices table: every API, its cost at the load and the day it was seen
    assert "<td>$0.10</td><td>$0.20</td><td>$0.40</td><td>Oct 1, 2026</td>" in html
    assert (
        '<th scope="row">Llama 3.3 70B Instruct</th><td><a href="https://other.example/prices" rel="nofollow">Other API</a></td> <td>$0.90</td><td>$0.90</td><td>$2.70</td><td>Sep 15, 2026</td>'
        in html
    )
    assert '<a href="https://api.example/pricing" rel="nofollow">Example API</a> <span class="note">serves FP8</span>' in html
    assert (
        '<input id="api-tokens" type="number" min="1" aria-describedby="api-error">' in html
        and '<input id="api-prompt" type="number" min="1" value="1000" aria-describedby="api-error">' in html
        and '<input id="api-output" type="number" min="1" value="500" aria-describedby="api-error">' in html
    )
    assert (
        "Take Llama 3.1 8B: the cheapest configuration per token on offer is 1 × RTX 3090 at $0.19 per hour. At this load it produces "
        "about 428 output tokens per second, so a million output tokens costs $0.12 when it never rests and $1.23 when it is busy 10% "
        "of the time. Renting it all day costs the same as Example API at 11.4 million output tokens a day; at this load the "
        "configuration produces at most 37 million a day."
    ) in html


@pytest.mark.parametrize(
    ("path", "link"),
    [
        ("en/index.html", "/en/guides/self-hosting-vs-api/"),
        ("en/calculator/index.html", "/en/guides/self-hosting-vs-api/"),
        ("es/guias/dimensionar-inferencia/index.html", "/es/guias/llm-local-vs-api/"),
        ("es/calculadora/index.html", "/es/guias/llm-local-vs-api/"),
    ],
)
def test_the_home_page_calculator_and_sizing_guide_link_it(built_site: Path, path: str, link: str):
    assert f'href="{link}"' in (built_site / path).read_text()


def test_the_script_stays_small():
    assert (Path(__file__).resolve().parent.parent / "templates/static/api.js").stat().st_size <= 5 * 1024


# ---- the script (QuickJS): the published api.js computes what Python computes ----

API_STUB = """
var window = globalThis;
function element(id) {
  if (id === "api-data") { return {textContent: API_DATA}; }
  if (id === "api-messages") { return {textContent: API_MESSAGES}; }
  return {hidden: true, value: "", textContent: "", addEventListener: function () {}};
}
var document = {getElementById: element, querySelectorAll: function () { return []; }, documentElement: {lang: "en"}};
var Intl = {NumberFormat: function () { this.format = String; }};
"""


def script_in_quickjs(site: Path) -> quickjs.Context:
    """The published api.js run in QuickJS on the English page's #api-data and #api-messages (no form: a stub)."""
    html = (site / PAGE).read_text()
    context = quickjs.Context()
    for name in ("api-data", "api-messages"):
        found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', html, re.S)
        assert found is not None
        context.set(name.upper().replace("-", "_"), found.group(1))
    context.eval(API_STUB)
    context.eval(published(site, "api.js").read_text())
    return context


def test_the_script_agrees_with_python_to_the_cent(built_site: Path):
    context = script_in_quickjs(built_site)
    data = json.loads(re.search(r'id="api-data">(.*?)</script>', (built_site / PAGE).read_text(), re.S).group(1))

    def js(call: str) -> float:
        return json.loads(context.eval(f"JSON.stringify(window.gpumemApi.{call})"))

    found = guide()
    checked = 0
    for comparison in found.models:
        hosted, row = comparison.hosted, data["models"][comparison.model.id]
        for tokens in (1_000_000, 5_000_000, requests_tokens(20_000, 500), hosted.tokens_per_day, 100_000_000, 1.5e9):
            share = tokens / row["day"]
            usd = js(f"volumeCost({row['full']!r}, {share!r})")
            assert usd == hosted.at_volume(tokens) and round(usd, 2) == round(hosted.at_volume(tokens), 2)
            assert js(f"needed({share!r})") == configurations_needed(hosted.utilisation(tokens))
            checked += 1
        for prompt, output in ((1000, 500), (4000, 250), (1, 1), (120, 2048)):
            assert js(f"cheapestApi({json.dumps(row['apis'])}, {prompt}, {output})") == comparison.cheapest_api_cost(prompt, output)
    assert checked == 12


# ---- prices diff ----


def test_diff_reports_the_cost_per_million_tokens_of_each_row(root):
    old = root / "catalogs/prices" / SNAPSHOT
    newer = root / "catalogs/prices/2026-11-07T09-00Z.yaml"
    text = old.read_text().replace("taken_at: 2026-10-31T16:52:00Z", "taken_at: 2026-11-07T09:00:00Z")
    newer.write_text(text.replace("price_per_gpu_hour: 0.19,", "price_per_gpu_hour: 0.17,"))
    report = diff(old, newer, root / "catalogs").splitlines()
    start = next(i for i, line in enumerate(report) if line.startswith("Cost per million output tokens"))
    assert (
        report[start]
        == "Cost per million output tokens at 16 requests of 1,000 prompt and 500 output tokens, a roofline estimate (158 changed):"
    )
    # The RTX 3090 from $0.19 to $0.17 an hour: 0.17 / 0.19 - 1 = -10.5 % on every row it serves
    assert report[start + 1 : start + 3] == [
        "  /en/calculator/ | Llama 3.1 8B | bf16: $0.123 → $0.110 (-10.5%)",
        "  /en/calculator/ | Llama 3.1 8B | fp8: $0.123 → $0.110 (-10.5%)",
    ]
    assert "  /en/models/llama-3.1-8b/ | deployment | bf16: $0.123 → $0.110 (-10.5%)" in report
    assert len(report) == start + 1 + 158  # the calculator rows: its table's first 16 models


def test_diff_of_a_snapshot_with_itself_changes_no_cost(root):
    old = root / "catalogs/prices" / SNAPSHOT
    report = diff(old, old, root / "catalogs").splitlines()
    assert (
        report[-1]
        == "Cost per million output tokens at 16 requests of 1,000 prompt and 500 output tokens, a roofline estimate (0 changed):"
    )


def test_the_build_writes_the_page_in_every_language(root):
    shutil.copytree(Path(__file__).resolve().parent.parent / "content", root / "content")
    build(options_for(root), now=NOW)
    for path in (
        "es/guias/llm-local-vs-api",
        "en/guides/self-hosting-vs-api",
        "pt/guias/llm-local-vs-api",
        "fr/guides/llm-auto-heberge-ou-api",
        "de/ratgeber/llm-selbst-hosten-oder-api",
    ):
        assert (root / "site" / path / "index.html").is_file()


# ---- the script (Chromium) ----


def yours(page) -> list[list[object]]:
    return page.eval_on_selector_all(
        "[data-api-model]", "cells => cells.map(c => [c.dataset.apiModel, Number(c.dataset.usd), c.textContent])"
    )


def test_the_script_recomputes_the_cost_like_python(page, site_url: str):
    page.goto(site_url + "/en/guides/self-hosting-vs-api/")
    found = guide()
    for comparison in found.models:
        for utilisation in (*found.setting.utilisations, 0.375, 0.07, 2.4):
            full = comparison.hosted.usd_per_million
            found_js = page.evaluate("([full, u]) => window.gpumemApi.volumeCost(full, u)", [full, utilisation])
            assert found_js == volume_cost(full, utilisation)
    page.fill("#api-utilisation", "37.5")
    assert yours(page) == [
        ["llama-3.1-8b", found.models[0].hosted.at(0.375), "$0.33 (38% busy; cheaper than the cheapest API)"],
        ["llama-3.3-70b", found.models[1].hosted.at(0.375), "$3.94 (38% busy; dearer than the cheapest API)"],
    ]


def test_typing_tokens_a_day_updates_each_row_to_python_s_figure(page, site_url: str):
    """A reader's "5 million output tokens a day": 14 % of the RTX 3090's 37 million, $0.912 per million, dearer than
    Example API's $0.40; 20 % of the 70B configuration's 24.7 million, $7.296, dearer than $2.00."""
    page.goto(site_url + "/en/guides/self-hosting-vs-api/")
    eight, seventy = guide().models
    page.fill("#api-tokens", "5000000")
    assert page.input_value("#api-utilisation") == "" and page.text_content("#api-error") == ""
    assert yours(page) == [
        ["llama-3.1-8b", eight.hosted.at_volume(5_000_000), "$0.91 (14% busy; dearer than the cheapest API)"],
        ["llama-3.3-70b", seventy.hosted.at_volume(5_000_000), "$7.30 (20% busy; dearer than the cheapest API)"],
    ]
    # 100 million a day takes three RTX 3090 configurations (271 %) and five of the 70B's (405 %)
    page.fill("#api-tokens", "100000000")
    assert yours(page) == [
        ["llama-3.1-8b", eight.hosted.at_volume(100_000_000), "$0.14 (3 of them, each 90% busy; cheaper than the cheapest API)"],
        ["llama-3.3-70b", seventy.hosted.at_volume(100_000_000), "$1.82 (5 of them, each 81% busy; cheaper than the cheapest API)"],
    ]


def test_requests_a_day_with_their_lengths_price_the_api_at_those_lengths(page, site_url: str):
    """20,000 requests of 4,000 prompt and 250 output tokens: 5 million output tokens a day, $0.912 per million self-hosted
    against $1.80 at the cheapest API once its input price counts 16 prompt tokens per output token."""
    page.goto(site_url + "/en/guides/self-hosting-vs-api/")
    eight, seventy = guide().models
    page.fill("#api-requests", "20000")
    page.fill("#api-prompt", "4000")
    page.fill("#api-output", "250")
    assert page.input_value("#api-requests") == "20000" and page.input_value("#api-tokens") == ""
    assert yours(page) == [
        ["llama-3.1-8b", eight.hosted.at_volume(5_000_000), "$0.91 (14% busy; cheaper than the cheapest API)"],
        ["llama-3.3-70b", seventy.hosted.at_volume(5_000_000), "$7.30 (20% busy; cheaper than the cheapest API)"],
    ]


@pytest.mark.parametrize(
    ("field", "values", "message"),
    [
        ("#api-utilisation", ("0", "120", "", "-5"), "Enter a percentage above 0 and at most 100."),
        ("#api-tokens", ("0", "", "-5"), "Enter a number of output tokens a day above 0."),
        ("#api-requests", ("0", "", "-5"), "Enter a number of requests a day above 0, and lengths of at least 1 token."),
        ("#api-output", ("0", ""), "Enter a number of requests a day above 0, and lengths of at least 1 token."),
    ],
)
def test_the_script_refuses_a_volume_out_of_range(page, site_url: str, field: str, values: tuple[str, ...], message: str):
    page.goto(site_url + "/en/guides/self-hosting-vs-api/")
    assert page.is_visible("#api-form")
    page.fill("#api-requests", "100")  # so that only the field under test is wrong
    for value in values:
        page.fill(field, value)
        assert page.text_content("#api-error") == message
        assert page.eval_on_selector_all("[data-api-model]", "cells => cells.map(c => c.textContent)") == ["—", "—"]


@pytest.mark.parametrize("width", [390, 1280])
def test_the_volume_form_has_no_axe_violation_and_fits_a_phone(page, site_url: str, width: int):
    """The form as the script shows it, with a volume typed and an error shown: axe finds nothing, in French (the
    longest labels), and the page does not scroll sideways."""
    from .test_quality import axe_violations

    page.set_viewport_size({"width": width, "height": 900})
    page.goto(site_url + "/fr/guides/llm-auto-heberge-ou-api/")
    page.fill("#api-requests", "20000")
    page.fill("#api-output", "0")
    assert page.text_content("#api-error") == (
        "Saisissez un nombre de requêtes par jour supérieur à 0, et des longueurs d’au moins 1 token."
    )
    assert axe_violations(page) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
