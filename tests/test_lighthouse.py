"""Lighthouse 12 in Debian's Chromium on the Spanish main guide and calculator and the English search page, against the budgets
that do not depend on the machine's load: accessibility, best practices and SEO. The performance
score is a timing, budgeted in `benchmarks.lighthouse` (docs/developer-guide/performance.md)."""

from __future__ import annotations

import pytest

from benchmarks.lighthouse import BUDGETS, TIMED, scores, under_budget

UNTIMED = tuple(name for name in BUDGETS if name not in TIMED)


@pytest.mark.parametrize("preset", ["mobile", "desktop"])
@pytest.mark.parametrize("path", ["/es/guias/memoria-gpu/", "/es/calculadora/", "/en/search/"])
def test_lighthouse_scores_meet_the_budgets(site_url: str, path: str, preset: str):
    found = scores(site_url + path, preset, UNTIMED)
    assert sorted(found) == ["accessibility", "best-practices", "seo"]
    assert under_budget(found, preset) == []


def test_the_budget_check_reports_a_low_score():
    assert under_budget({"performance": 0.9, "accessibility": 1, "best-practices": 0.96, "seo": 1}, "mobile") == [
        "performance 0.90 < 0.95",
        "best-practices 0.96 < 1.00",
    ]
    assert under_budget({"performance": 0.9, "accessibility": 1, "best-practices": 1, "seo": 1}, "desktop") == []
    assert under_budget({"accessibility": 0.98, "best-practices": 1, "seo": 1}, "mobile") == ["accessibility 0.98 < 1.00"]
