"""The daily routine never turns a test red: in a copy of the project, import a newer snapshot
and add a model to catalogs/ (what the ops job and an editor do), then run the fast part there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .project import REPO


def copy_project(target: Path) -> None:
    """The files git tracks (and untracked ones it does not ignore), as a fresh clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def export_of_today(catalogs: Path) -> str:
    """A marketplace export taken an hour ago: the demo snapshot's machines at other prices."""
    import yaml

    demo = yaml.safe_load(next((catalogs / "prices").glob("*.yaml")).read_text())
    rows = ["machine_id,gpu,gpus,price_per_gpu_hour,country"]
    for offer in demo["offers"]:
        price = round(offer["price_per_gpu_hour"] * 0.93, 2)
        rows.append(f"{offer['machine']},{offer['gpu']},{offer['gpus']},{price},{offer['country']}")
    return "\n".join(rows) + "\n"


def test_a_new_snapshot_and_a_new_model_leave_the_suite_green(tmp_path):
    project = tmp_path / "project"
    copy_project(project)
    catalogs = project / "catalogs"
    (tmp_path / "export.csv").write_text(export_of_today(catalogs))
    taken = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:00Z")
    gpumem = [sys.executable, "-m", "gpumem.cli", "--project", str(project)]
    imported = subprocess.run(
        [*gpumem, "prices", "import", str(tmp_path / "export.csv"), "--taken-at", taken], capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr
    models = catalogs / "models.yaml"
    first = models.read_text().split("\n  - id: ")[1]
    models.write_text(models.read_text() + "  - id: routine-test-model" + first[first.index("\n") :].rstrip("\n") + "\n")
    assert subprocess.run([*gpumem, "check"], capture_output=True, text=True).returncode == 0
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    fast = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow"],
        cwd=project,
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    assert fast.returncode == 0, fast.stdout[-3000:]
    assert " passed" in fast.stdout.splitlines()[-1] and "failed" not in fast.stdout.splitlines()[-1]
