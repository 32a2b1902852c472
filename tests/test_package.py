"""A real package: `pip install .` (not only -e) gives a gpumem that builds any project folder."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .project import CATALOGS, REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project installed as a regular (non-editable) package into a folder of its own."""
    target = tmp_path_factory.mktemp("installed")
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--disable-pip-version-check", "-q"]
    subprocess.run([*command, "--target", str(target), str(REPO)], check=True, capture_output=True, timeout=300)
    return target


def run_installed(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`gpumem ARGS` from the installed copy only: the editable install is not on the path first."""
    code = f"import sys; sys.path.insert(0, {str(installed)!r}); import gpumem.cli.main; print(gpumem.__file__, file=sys.stderr); gpumem.cli.main.main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_package_installs_under_its_own_name(installed):
    assert sorted(p.name for p in installed.iterdir() if not p.name.endswith(".dist-info") and p.name != "bin") == ["gpumem"]
    assert (installed / "gpumem/commands/build.py").is_file()
    assert (installed / "gpumem/engines/deployment.py").is_file()


def test_the_installed_command_builds_a_project_folder(installed, tmp_path):
    project = tmp_path / "my-guides"
    shutil.copytree(CATALOGS, project / "catalogs")
    for name in ("content", "templates", "translations"):
        shutil.copytree(REPO / name, project / name)
    done = run_installed(installed, project, "build")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == str(installed / "gpumem/__init__.py")
    assert done.stdout.startswith("347 pages, 347 rendered; 755 files written, 0 unchanged, 0 removed in ")
    assert (project / "site/es/guias/memoria-gpu/index.html").is_file()
    elsewhere = run_installed(installed, tmp_path, "--project", str(project), "check")
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert elsewhere.stdout == "ok: 28 models, 26 GPUs, snapshot 2026-10-31T16-52Z (188 machines, 619 GPUs)\n"


def test_a_folder_that_is_not_a_project_says_so(installed, tmp_path):
    done = run_installed(installed, tmp_path, "check")
    assert done.returncode == 1
    assert "catalogs/models.yaml: cannot read: No such file or directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_library_the_code_imports_is_declared():
    import tomllib

    declared = {
        d.split("<")[0].split(">")[0].split("=")[0].strip().lower()
        for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    modules = {
        "jinja2": "jinja2",
        "markdown": "markdown",
        "yaml": "pyyaml",
        "click": "click",
        "babel": "babel",
        "markupsafe": "markupsafe",
        "minify": "tdewolff-minify",
        "watchdog": "watchdog",
        "ghp_import": "ghp-import",
        "safetensors": "safetensors",
        "gguf": "gguf",
        "pagefind_bin": "pagefind-bin",
    }
    imported = set()
    for source in (REPO / "generator").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            imported |= {name.partition(".")[0] for name in names}
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "gpumem"}
    assert third_party == set(modules)
    assert {modules[m] for m in third_party} == declared
