"""Regenerate the golden pages: .venv/bin/python -m tests.golden.update

Builds the fixture site (tests/golden/fixture) into tests/golden/expected. Review the
resulting diff like code before committing it.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from generator.build import Options, build
from generator.write import MARKER

GOLDEN = Path(__file__).resolve().parent
FIXTURE = GOLDEN / "fixture"
EXPECTED = GOLDEN / "expected"
# The day after the fixture's snapshot: the build never depends on it, the warning does.
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def build_fixture(out: Path) -> dict[str, bytes]:
    """The fixture site's files (the writer's own marker left out), built into `out`."""
    build(Options(catalogs=FIXTURE / "catalogs", content=FIXTURE / "content", out=out), now=NOW)
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name != MARKER}


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        files = build_fixture(Path(scratch) / "site")
    shutil.rmtree(EXPECTED, ignore_errors=True)
    for name, content in files.items():
        target = EXPECTED / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    print(f"wrote {len(files)} files to {EXPECTED.relative_to(Path.cwd()) if EXPECTED.is_relative_to(Path.cwd()) else EXPECTED}")


if __name__ == "__main__":
    main()
