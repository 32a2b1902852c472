"""Golden pages: a small fixture site, built and compared byte for byte with a committed tree.

After an intended change, regenerate with `.venv/bin/python -m tests.golden.update` and review the diff.
"""

from __future__ import annotations

import difflib

from .golden.update import EXPECTED, build_fixture


def test_fixture_site_matches_the_committed_pages(tmp_path):
    built = build_fixture(tmp_path / "site")
    expected = {str(p.relative_to(EXPECTED)): p.read_bytes() for p in sorted(EXPECTED.rglob("*")) if p.is_file()}
    assert sorted(built) == sorted(expected)
    for name, content in built.items():
        if content != expected[name]:
            diff = difflib.unified_diff(
                expected[name].decode().splitlines(), content.decode().splitlines(), f"expected/{name}", f"built/{name}", lineterm="", n=1
            )
            raise AssertionError("\n".join(list(diff)[:40]) + "\n(run .venv/bin/python -m tests.golden.update if this change is intended)")
    assert len(built) == 19
