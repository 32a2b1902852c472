"""Regenerate the golden pages: .venv/bin/python -m tests.golden.update

Builds the fixture site (tests/golden/fixture) and writes its pages into one text file,
tests/golden/expected.txt, each after a "=== path ===" line. Review the resulting diff like code
before committing it. Static assets are copied verbatim by the build and are left out, and so is the search index
(pagefind/, binary; tests/test_search.py checks it).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from gpumem.commands.build import build
from gpumem.options import project_options

GOLDEN = Path(__file__).resolve().parent
FIXTURE = GOLDEN / "fixture"
EXPECTED = GOLDEN / "expected.txt"
# The day after the fixture's snapshot: the build never depends on it, the warning does.
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def build_fixture(out: Path) -> str:
    """The fixture site's pages as one text, built into `out` (assets and the search index left out)."""
    build(project_options(GOLDEN.parent.parent, catalogs=FIXTURE / "catalogs", content=FIXTURE / "content", out=out), now=NOW)
    pages = [p for p in sorted(out.rglob("*")) if p.is_file() and p.parts[len(out.parts)] not in ("assets", "pagefind")]
    return "".join(f"=== {p.relative_to(out)} ===\n{p.read_text()}" for p in pages)


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        text = build_fixture(Path(scratch) / "site")
    EXPECTED.write_text(text)
    print(f"wrote {text.count('=== ')} files to {EXPECTED}")


if __name__ == "__main__":
    main()
