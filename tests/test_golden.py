"""Golden pages: a small fixture site, built and compared byte for byte with a committed tree.

After an intended change, regenerate with `.venv/bin/python -m tests.golden.update` and review the diff.
"""

from __future__ import annotations

import difflib

from .golden.update import EXPECTED, build_fixture


def test_fixture_site_matches_the_committed_pages(tmp_path):
    built = build_fixture(tmp_path / "site")
    expected = EXPECTED.read_text()
    if built != expected:
        diff = difflib.unified_diff(expected.splitlines(), built.splitlines(), "expected.txt", "built", lineterm="", n=2)
        raise AssertionError("\n".join(list(diff)[:40]) + "\n(run .venv/bin/python -m tests.golden.update if this change is intended)")
    # 22 pages (the search page among them), sitemap.xml, robots.txt, _headers and the one language's 404 page
    assert built.count("\n=== ") + 1 == 26
