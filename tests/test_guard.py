"""The guard of tests/conftest.py: a test that reads the production catalogs/, itself or through a Python
subprocess, fails and names what it read; one marked shipped_data may."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .guard.catalog_guard import FOLDER_VARIABLE, LOG_VARIABLE
from .project import REPO

TESTS = """
import subprocess, sys
from pathlib import Path

import pytest

CATALOGS = Path({catalogs!r})


def test_reads_a_catalog():
    assert "models:" in (CATALOGS / "models.yaml").read_text()


def test_lists_the_folder():
    assert "prices" in [p.name for p in CATALOGS.iterdir()]


def test_reads_them_in_a_subprocess():
    code = "import sys; assert 'gpus:' in open(sys.argv[1]).read()"
    assert subprocess.run([sys.executable, "-c", code, str(CATALOGS / "gpus.yaml")]).returncode == 0


def test_reads_the_fixture_catalogs():
    assert "models:" in (Path({repo!r}) / "tests/fixtures/catalogs/models.yaml").read_text()


@pytest.mark.shipped_data
def test_checks_the_shipped_data():
    assert "models:" in (CATALOGS / "models.yaml").read_text()
"""


def test_a_test_that_reads_the_production_catalogs_fails_naming_the_files(tmp_path: Path):
    (tmp_path / "test_reads.py").write_text(TESTS.format(catalogs=str(REPO / "catalogs"), repo=str(REPO)))
    # The inner session installs its own guard: this one's subprocess log must not see its reads. No short
    # summary (-rN) and no CI variable: pytest cuts its summary lines to the terminal's width, except under CI.
    env = {key: value for key, value in os.environ.items() if key not in (FOLDER_VARIABLE, LOG_VARIABLE, "PYTHONPATH", "CI")}
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-c", str(REPO / "pyproject.toml")]
    command += ["--rootdir", str(tmp_path), "-q", "-rN", "-W", "error::pytest.PytestUnknownMarkWarning", str(tmp_path / "test_reads.py")]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    advice = "Tests read tests/fixtures/catalogs; mark a test that checks the shipped data @pytest.mark.shipped_data"
    said = [line for line in result.stdout.splitlines() if " read the production catalogs: " in line]
    assert said == [
        f"test_reads.py::test_reads_a_catalog read the production catalogs: catalogs/models.yaml. {advice}",
        f"test_reads.py::test_lists_the_folder read the production catalogs: catalogs. {advice}",
        f"test_reads.py::test_reads_them_in_a_subprocess read the production catalogs: catalogs/gpus.yaml. {advice}",
    ], result.stdout
    assert re.fullmatch(r"3 failed, 2 passed in \d+\.\d\ds", result.stdout.splitlines()[-1]), result.stdout
    assert result.returncode == 1
