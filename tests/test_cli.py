"""The `gpumem` command: one click group. `--jobs` is obeyed, `gh-deploy` builds and publishes, and
exit codes are click's (2 for a usage error, 1 for a build error)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpumem.cli.main import main

from .conftest import tree
from .project import CATALOGS, REPO, copy_project
from .test_hosting import git, repository  # noqa: F401 - a fixture


def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes forked from here on."""
    children: list[int] = []
    fork = os.fork

    def counted() -> int:
        pid = fork()
        if pid:
            children.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return children


def test_jobs_1_renders_in_this_process_and_jobs_2_forks_a_renderer_and_a_compiler(tmp_path, monkeypatch):
    copy_project(tmp_path)
    children = forks(monkeypatch)
    alone = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--jobs", "1"])
    assert (alone.exit_code, children) == (0, []), alone.output
    assert re.fullmatch(r"347 pages, 347 rendered; 755 files written, 0 unchanged, 0 removed in \d+\.\d\d s\n", alone.stdout)
    two = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--jobs", "2", "--force"])
    assert (two.exit_code, len(children)) == (0, 2), two.output  # a renderer, and the layouts compiled ahead (pages/compile_ahead.py)
    assert re.fullmatch(r"347 pages, 347 rendered; 0 files written, 755 unchanged, 0 removed in \d+\.\d\d s\n", two.stdout)


def test_a_build_invoked_in_a_process_that_goes_on_leaves_the_garbage_collector_on(tmp_path):
    """Only `gpumem` itself (cli.main.run, which ends with os._exit) turns the collector off for good."""
    import gc

    copy_project(tmp_path)
    assert gc.isenabled()
    done = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--jobs", "1"])
    assert (done.exit_code, gc.isenabled()) == (0, True), done.output


def test_gh_deploy_builds_the_site_and_pushes_it_to_the_branch(repository, tmp_path):  # noqa: F811 - the fixture
    copy_project(repository)
    done = CliRunner().invoke(main, ["--project", str(repository), "gh-deploy", "--message", "Site of today"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[1:] == [f"published {repository / 'site'} to origin gh-pages"]
    branch = git("ls-tree", "-r", "--name-only", "gh-pages", cwd=tmp_path / "remote.git").split()
    assert branch == sorted([*tree(repository / "site"), ".nojekyll"])
    assert git("log", "--format=%s", "gh-pages", cwd=tmp_path / "remote.git") == "Site of today\n"


def test_exit_codes_and_help_are_click_s(tmp_path: Path):
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    (tmp_path / "catalogs/gpus.yaml").write_text("gpus: [\n")

    def gpumem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gpumem", "--project", str(REPO), *args], capture_output=True, text=True, timeout=120)

    usage = gpumem("nosuch")
    assert (usage.returncode, usage.stdout, usage.stderr.splitlines()[-1]) == (2, "", "Error: No such command 'nosuch'.")
    failed = gpumem("build", "--catalogs", str(tmp_path / "catalogs"), "--out", str(tmp_path / "site"))
    assert (failed.returncode, failed.stdout, failed.stderr.splitlines()[-1]) == (1, "", "1 problem found; nothing was written.")
    assert not (tmp_path / "site").exists()
    helped = gpumem("--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("Usage: python -m gpumem [OPTIONS] COMMAND [ARGS]...")
    assert [line.split()[0] for line in helped.stdout.split("Commands:\n")[1].splitlines()] == [
        "build",
        "check",
        "estimate",
        "gh-deploy",
        "models",
        "prices",
        "serve",
    ]


@pytest.fixture
def loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project copy as the working folder, with `loop`, a symbolic link to a link back to it."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to("back")
    (tmp_path / "back").symlink_to("loop")
    return tmp_path


LOOP = "cannot read: Too many levels of symbolic links"


@pytest.mark.parametrize(
    "args, lines",
    [
        (["build", "--prices", "loop"], [f"loop: {LOOP}"]),
        (["--project", "loop", "build"], [f"loop: {LOOP}"]),
        (["--project", "loop", "check"], [f"loop: {LOOP}"]),
        (["check", "--catalogs", "loop", "--content", "back"], [f"loop: {LOOP}", f"back: {LOOP}"]),
        (["build", "--prices", "catalogs/prices"], ["catalogs/prices: not a regular file"]),
        (["serve", "--prices", "catalogs/prices"], ["catalogs/prices: not a regular file"]),
        (["serve", "--port", "99999"], ["--port: expected a port number from 0 to 65535, got 99999"]),
    ],
)
def test_paths_and_a_port_that_cannot_be_used_are_messages_with_exit_code_1(loop, args, lines):
    done = CliRunner().invoke(main, args)
    assert (done.exit_code, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [*lines, f"{len(lines)} problem{'s' if len(lines) > 1 else ''} found; nothing was written."]
    assert not (loop / "site").exists()


def test_a_templates_folder_that_is_a_loop_is_named_as_the_project_s(loop):
    shutil.rmtree(loop / "templates")
    (loop / "templates").symlink_to("templates")
    done = CliRunner().invoke(main, ["check"])
    assert (done.exit_code, done.stderr) == (1, f"templates: {LOOP}\n1 problem found; nothing was written.\n")
