"""Other providers' dated prices: validated like every catalog, compared with the snapshot's lowest price,
flagged when stale or not on offer, and shown on the prices page and in the VRAM guide."""

from __future__ import annotations

import dataclasses
import re
import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml

from gpumem.catalog.inputs import load_catalog
from gpumem.catalog.price_checks import compare_prices
from gpumem.engines.sizing import market
from gpumem.errors import BuildError
from gpumem.output.fingerprint import fingerprint

from .conftest import NOW, options_for
from .project import CATALOGS

CHECKS = "catalogs/price_checks.yaml"
ENTRY = "  - {provider: Example Cloud, gpu: b200, usd_per_gpu_hour: 5.43, checked_on: 2026-10-29, url: https://cloud.example/p}\n"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture catalogs as the working folder, so errors show short paths."""
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_checks(root: Path, text: str) -> None:
    (root / CHECKS).write_text(text)


def problems(root: Path) -> list[str]:
    with pytest.raises(BuildError) as raised:
        load_catalog(root / "catalogs", now=NOW)
    return raised.value.lines


def comparisons(catalog=None):
    catalog = catalog or load_catalog(CATALOGS, now=NOW)
    markets = market(catalog.snapshot.offers)
    return compare_prices(catalog.price_checks, catalog.gpus, catalog.snapshot, markets, catalog.rules.price_check_max_age_days)


# ---- the comparison ----


def test_the_fixture_checks_compared_with_the_snapshot():
    found = {c.check.gpu: c for c in comparisons()}
    assert [c.check.gpu for c in comparisons()] == ["l4", "l40s", "h100-sxm", "b200"]  # gpus.yaml's order
    b200, l40s = found["b200"], found["l40s"]
    # B200: US$5.43 there on 2026-10-29, US$6.33 here on 2026-10-31: 6.33 / 5.43 - 1 = +16.57 %
    assert (b200.status, b200.age_days, b200.lowest_price, b200.direction) == ("compared", 2, 6.33, "higher")
    assert b200.difference == pytest.approx(0.165745856, abs=1e-9)
    # L40S: US$0.97 there, US$0.44 here: 0.44 / 0.97 - 1 = -54.64 %
    assert (l40s.status, l40s.lowest_price, l40s.direction) == ("compared", 0.44, "lower")
    assert l40s.difference == pytest.approx(-0.546391753, abs=1e-9)


def test_a_check_older_than_the_limit_is_flagged_never_compared():
    h100 = next(c for c in comparisons() if c.check.gpu == "h100-sxm")
    # checked 2026-09-15, snapshot taken 2026-10-31: 46 days, more than the 30 of rules.yaml
    assert (h100.status, h100.age_days, h100.max_age_days) == ("stale", 46, 30)
    assert h100.lowest_price is None and h100.difference is None


def test_the_limit_counts_from_the_snapshot_not_the_clock():
    catalog = load_catalog(CATALOGS, now=NOW)
    check = next(c for c in catalog.price_checks if c.gpu == "b200")
    at_limit = dataclasses.replace(check, checked_on=date(2026, 10, 1))  # 30 days before 2026-10-31
    past_limit = dataclasses.replace(check, checked_on=date(2026, 9, 30))  # 31 days
    markets = market(catalog.snapshot.offers)
    found = compare_prices((at_limit, past_limit), catalog.gpus, catalog.snapshot, markets, 30)
    assert [(c.check.checked_on.isoformat(), c.age_days, c.status) for c in found] == [
        ("2026-09-30", 31, "stale"),
        ("2026-10-01", 30, "compared"),
    ]


def test_a_gpu_not_on_offer_is_said_so_without_a_comparison():
    l4 = next(c for c in comparisons() if c.check.gpu == "l4")
    assert (l4.status, l4.age_days, l4.lowest_price, l4.difference) == ("not_on_offer", 11, None, None)


def test_a_snapshot_in_another_currency_is_not_compared_with_dollars():
    catalog = load_catalog(CATALOGS, now=NOW)
    euros = dataclasses.replace(catalog, snapshot=dataclasses.replace(catalog.snapshot, currency="EUR"))
    b200 = next(c for c in comparisons(euros) if c.check.gpu == "b200")
    assert (b200.status, b200.lowest_price, b200.difference) == ("other_currency", 6.33, None)


def test_a_difference_under_half_a_per_cent_is_the_same_price():
    catalog = load_catalog(CATALOGS, now=NOW)
    check = next(c for c in catalog.price_checks if c.gpu == "b200")
    close = dataclasses.replace(check, usd_per_gpu_hour=6.35)  # 6.33 / 6.35 - 1 = -0.31 %
    (found,) = compare_prices((close,), catalog.gpus, catalog.snapshot, market(catalog.snapshot.offers), 30)
    assert (found.status, found.direction) == ("compared", "same")


# ---- validation ----


def test_a_missing_or_empty_file_holds_no_check(root):
    (root / CHECKS).unlink()
    assert load_catalog(root / "catalogs", now=NOW).price_checks == ()
    for text in ("", "# nothing checked yet\n", "checks: []\n"):
        write_checks(root, text)
        assert load_catalog(root / "catalogs", now=NOW).price_checks == (), text


@pytest.mark.shipped_data
def test_the_project_catalog_holds_only_sourced_checks():
    """The original guide's B200 and L40S check names no provider and no page: it is not in the catalog."""
    data = yaml.safe_load((Path(__file__).resolve().parent.parent / CHECKS).read_text())  # not the snapshot: only the checks
    checks = data.get("checks") or []
    assert all(str(check["url"]).startswith("https://") and check["provider"] for check in checks)
    assert not any(check["usd_per_gpu_hour"] in (5.43, 0.97) for check in checks)


BAD = [
    ("gpu: b200", "gpu: b-9000", "check 1: gpu: unknown GPU 'b-9000' (not in gpus.yaml)"),
    ("checked_on: 2026-10-29", "checked_on: 2026-13-01", "check 1: checked_on: expected a date like 2026-10-29, got '2026-13-01'"),
    ("checked_on: 2026-10-29", "checked_on: 29/10/2026", "check 1: checked_on: expected a date like 2026-10-29, got '29/10/2026'"),
    (
        "checked_on: 2026-10-29",
        "checked_on: 2026-11-02",
        "check 1: checked_on: 2026-11-02 is in the future: the clock says 2026-11-01",
    ),
    ("usd_per_gpu_hour: 5.43", "usd_per_gpu_hour: 0", "check 1: usd_per_gpu_hour: expected a positive number, got 0"),
    ("usd_per_gpu_hour: 5.43", "usd_per_gpu_hour: -5.43", "check 1: usd_per_gpu_hour: expected a positive number, got -5.43"),
    (
        "usd_per_gpu_hour: 5.43",
        "usd_per_gpu_hour: 543",
        "check 1: usd_per_gpu_hour: 543 is more than 100 per GPU-hour, the most a GPU rents for (prices.bounds in rules.yaml)",
    ),
    (
        "usd_per_gpu_hour: 5.43",
        "usd_per_gpu_hour: 0.001",
        "check 1: usd_per_gpu_hour: 0.001 is less than 0.01 per GPU-hour, the least a GPU rents for (prices.bounds in rules.yaml)",
    ),
    (
        "url: https://cloud.example/p",
        "url: ftp://cloud.example/p",
        "check 1: url: expected a URL starting with https://, got 'ftp://cloud.example/p'",
    ),
    ("url: https://cloud.example/p", "url: cloud.example/p", "check 1: url: expected a URL starting with https://, got 'cloud.example/p'"),
    ("provider: Example Cloud", "provider: ''", "check 1: provider: expected text, got ''"),
    (
        "gpu: b200",
        "gpu: b200, currency: EUR",
        "check 1: currency: unknown field (expected one of: provider, gpu, usd_per_gpu_hour, checked_on, url, note)",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD, ids=[case[2].split(": ")[1] + ": " + case[1] for case in BAD])
def test_each_bad_field_is_reported_with_its_line(root, old, new, message):
    write_checks(root, "checks:\n" + ENTRY.replace(old, new))
    assert problems(root) == [f"{CHECKS}:2: {message}"]


def test_a_missing_field_and_a_repeated_check(root):
    write_checks(root, "checks:\n" + ENTRY + ENTRY + ENTRY.replace("b200", "l40s").replace(", url: https://cloud.example/p", ""))
    assert problems(root) == [
        f"{CHECKS}:3: check 2: checked_on: the same provider, GPU and date as the check on line 2",
        f"{CHECKS}:4: check 3: url: missing field (expected a URL)",
    ]


def test_a_file_of_the_wrong_shape(root):
    write_checks(root, "- b200\n")
    assert problems(root) == [f"{CHECKS}:1: price checks: expected a mapping with a 'checks' list"]
    write_checks(root, "checks: b200\nprices: []\n")
    assert problems(root) == [
        f"{CHECKS}:1: file: checks: expected a list of price checks, got 'b200'",
        f"{CHECKS}:2: file: prices: unknown field (expected one of: checks)",
    ]
    write_checks(root, "checks:\n  - b200\n")
    assert problems(root) == [f"{CHECKS}:1: file: checks: entry 1: expected a mapping of fields, got 'b200'"]


def test_the_staleness_limit_is_a_sourced_rule(root):
    edit_rules = root / "catalogs" / "rules.yaml"
    text = edit_rules.read_text()
    edit_rules.write_text(text.replace("    max_age_days: 30\n", "    max_age_days: thirty\n"))
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "max_age_days: 30" in row)
    assert problems(root) == [f"catalogs/rules.yaml:{line}: rules: prices.checks.max_age_days: expected a positive integer, got 'thirty'"]


# ---- the pages ----


def section(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def test_the_prices_page_shows_each_check_with_both_dates(built_site):
    page = (built_site / "en" / "prices" / "index.html").read_text()
    table = section(page, '<h2 id="price-checks">', '<h2 id="earlier">')
    rows = re.findall(r"<tr><th scope=\"row\">.*?</tr>", table)
    link = '<th scope="row"><a href="https://cloud.example/pricing">Example Cloud</a></th>'
    assert rows == [
        f'<tr>{link}<td><a href="/en/gpus/l4/">L4</a></td><td>$0.80</td><td>Oct 20, 2026</td><td>—</td>'
        "<td>Oct 31, 2026</td><td>not on offer in this snapshot: not compared</td></tr>",
        f'<tr>{link}<td><a href="/en/gpus/l40s/">L40S</a></td><td>$0.97</td><td>Oct 29, 2026</td><td>$0.44</td>'
        "<td>Oct 31, 2026</td><td>55% lower here</td></tr>",
        f'<tr>{link}<td><a href="/en/gpus/h100-sxm/">H100</a></td><td>$2.99</td><td>Sep 15, 2026</td><td>—</td>'
        "<td>Oct 31, 2026</td><td>price check of Sep 15, 2026 is older than 30 days: not compared</td></tr>",
        f'<tr>{link}<td><a href="/en/gpus/b200/">B200</a></td><td>$5.43</td><td>Oct 29, 2026</td><td>$6.33</td>'
        "<td>Oct 31, 2026</td><td>17% higher here</td></tr>",
    ]
    assert "A check more than 30 days older than the snapshot is shown but not compared" in table
    spanish = (built_site / "es" / "precios" / "index.html").read_text()
    assert "<td>0,44\xa0US$</td><td>31 oct 2026</td><td>55\xa0% más barato aquí</td>" in spanish
    assert "<td>la consulta del 15 sept 2026 tiene más de 30 días: no se compara</td>" in spanish


def test_the_vram_guide_cites_the_checks_in_every_language(built_site):
    english = (built_site / "en" / "guides" / "llm-vram" / "index.html").read_text()
    provider = '<a href="https://cloud.example/pricing">Example Cloud</a>'
    assert (
        f"On Oct 29, 2026 {provider} charged $5.43 per GPU-hour for the B200; the lowest price here on Oct 31, 2026 "
        "was $6.33: 17% higher here." in english
    )
    assert (
        f"On Sep 15, 2026 {provider} charged $2.99 per GPU-hour for the H100 (price check of Sep 15, 2026 is older than 30 days: not compared)."
        in english
    )
    assert f"On Oct 20, 2026 {provider} charged $0.80 per GPU-hour for the L4 (not on offer in this snapshot: not compared)." in english
    french = (built_site / "fr" / "guides" / "vram-llm" / "index.html").read_text()
    assert "était de 0,44\xa0$US\u202f: 55\xa0% moins cher ici." in french
    for path in ("es/guias/vram-llm", "pt/guias/vram-llm", "de/ratgeber/llm-vram"):
        assert (built_site / path / "index.html").read_text().count(provider) == 4, path


def test_a_changed_price_check_changes_the_build_fingerprint(inputs):
    """A build whose price checks changed is not skipped as up to date."""
    before = fingerprint(options_for(inputs))
    path = inputs / CHECKS
    path.write_text(path.read_text().replace("usd_per_gpu_hour: 5.43", "usd_per_gpu_hour: 5.44"))
    assert fingerprint(options_for(inputs)) != before
