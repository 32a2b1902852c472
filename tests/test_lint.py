"""The code stays lint-clean (ruff) and type-clean (mypy)."""

from __future__ import annotations

import subprocess
import sys

from .project import REPO


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert result.stdout == "All checks passed!\n"
    assert result.returncode == 0


def test_mypy_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.stdout.startswith("Success: no issues found"), result.stdout
    assert result.returncode == 0
