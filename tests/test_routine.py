"""The daily routine on the shipped data: in a copy of the project, import a newer snapshot and add a model to
catalogs/ (what the ops job and an editor do), then `gpumem check` passes there. The rest of the suite reads
tests/fixtures/catalogs only (tests/conftest.py's guard), so the routine cannot turn another test red."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from .project import REPO


def export_of_today(catalogs: Path) -> str:
    """A marketplace export taken an hour ago: the shipped snapshot's machines at other prices."""
    (shipped,) = (catalogs / "prices").glob("*.yaml")
    rows = ["machine_id,gpu,gpus,price_per_gpu_hour,country"]
    for offer in yaml.safe_load(shipped.read_text())["offers"]:
        price = round(offer["price_per_gpu_hour"] * 0.93, 2)
        rows.append(f"{offer['machine']},{offer['gpu']},{offer['gpus']},{price},{offer['country']}")
    return "\n".join(rows) + "\n"


@pytest.mark.shipped_data
def test_a_new_snapshot_and_a_new_model_pass_gpumem_check(tmp_path: Path):
    project = tmp_path / "project"
    for name in ("catalogs", "content", "templates", "translations"):
        shutil.copytree(REPO / name, project / name)
    catalogs = project / "catalogs"
    (tmp_path / "export.csv").write_text(export_of_today(catalogs))
    taken = datetime.now(UTC) - timedelta(hours=1)
    gpumem = [sys.executable, "-m", "gpumem", "--project", str(project)]
    imported = subprocess.run(
        [*gpumem, "prices", "import", str(tmp_path / "export.csv"), "--taken-at", taken.strftime("%Y-%m-%dT%H:%M:00Z")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    snapshot = catalogs / "prices" / taken.strftime("%Y-%m-%dT%H-%MZ.yaml")
    assert (imported.returncode, imported.stdout, imported.stderr) == (0, f"wrote {snapshot}\n", "")
    models = catalogs / "models.yaml"
    shipped = models.read_text()
    first = shipped.split("\n  - id: ")[1]
    models.write_text(shipped + "  - id: routine-test-model" + first[first.index("\n") :].rstrip("\n") + "\n")
    checked = subprocess.run([*gpumem, "check"], capture_output=True, text=True, timeout=120)
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr
    models_count, gpus = len(yaml.safe_load(shipped)["models"]) + 1, len(yaml.safe_load((catalogs / "gpus.yaml").read_text())["gpus"])
    offers = yaml.safe_load(snapshot.read_text())["offers"]
    machines, rented = len(offers), sum(offer["gpus"] for offer in offers)
    assert checked.stdout == f"ok: {models_count} models, {gpus} GPUs, snapshot {snapshot.stem} ({machines} machines, {rented} GPUs)\n"
