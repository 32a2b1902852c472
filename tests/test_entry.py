"""The `gpumem` command's entry: a plain `build` whose folder is up to date answers before click
and the pipeline load; every other command line goes to click, which reads it as before."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem.build import build, project_options
from gpumem.entry import plain_build

from .conftest import NOW
from .project import CATALOGS, REPO, copy_project

LIBRARIES = ("click", "jinja2", "babel", "markdown", "yaml")


def test_a_plain_build_command_line_is_read_as_click_reads_it(tmp_path: Path):
    assert plain_build(["build"]) == {"strict": False}
    got = plain_build(
        [
            "--project",
            str(tmp_path),
            "build",
            "--out=site2",
            "--catalogs",
            "c",
            "--content=t",
            "--prices",
            "p.yaml",
            "--strict",
            "--jobs",
            "2",
        ]
    )
    assert got == {
        "strict": True,
        "project": tmp_path,
        "out": Path("site2"),
        "catalogs": Path("c"),
        "content": Path("t"),
        "prices": Path("p.yaml"),
    }
    assert plain_build(["--project=" + str(tmp_path), "build", "--out", "a", "--out", "b", "--jobs=64"]) == {
        "strict": False,
        "project": tmp_path,
        "out": Path("b"),
    }


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["check"],
        ["--help"],
        ["build", "--help"],
        ["build", "--force"],
        ["build", "build"],
        ["build", "--out"],
        ["build", "--out="],
        ["build", "--jobs", "0"],
        ["build", "--jobs", "65"],
        ["build", "--jobs", "two"],
        ["build", "--strict=yes"],
        ["build", "--", "x"],
        ["build", "--project", "x"],
        ["--out", "site", "build"],
        ["--project", "README.md", "build"],
        ["--project", "/no/such/folder", "build"],
        ["prices", "diff", "a", "b"],
    ],
)
def test_any_other_command_line_is_left_to_click(args: list[str], monkeypatch):
    monkeypatch.chdir(REPO)
    assert plain_build(args) is None


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """A command in a fresh interpreter that reports which libraries it loaded, on its last line."""
    code = (
        "import sys; sys.argv = ['gpumem', *sys.argv[1:]]\n"
        "from gpumem.entry import main\n"
        "try:\n    main()\n"
        f"finally:\n    print('loaded:', *[n for n in {LIBRARIES!r} if n in sys.modules], flush=True)\n"
    )
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_an_up_to_date_folder_is_answered_without_click_or_the_pipeline(tmp_path: Path):
    copy_project(tmp_path)
    build(project_options(tmp_path), now=NOW)
    quick = run("--project", str(tmp_path), "build")
    assert quick.returncode == 0, quick.stderr
    said, loaded = quick.stdout.splitlines()
    assert loaded == "loaded:"
    assert said.startswith("337 pages, 0 rendered; 0 files written, 348 unchanged, 0 removed in 0.")
    assert quick.stderr.startswith("warning: price snapshot 2026-10-31T16-52Z is ")
    forced = run("--project", str(tmp_path), "build", "--force")
    assert forced.returncode == 0, forced.stderr
    said, loaded = forced.stdout.splitlines()
    assert loaded == "loaded: click jinja2 babel markdown yaml"
    assert said.startswith("337 pages, 337 rendered; 0 files written, 348 unchanged, 0 removed in ")
    assert forced.stderr == quick.stderr


def test_a_build_error_is_shown_as_before(tmp_path: Path):
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    (tmp_path / "catalogs/gpus.yaml").write_text("gpus: [\n")
    failed = run("--project", str(REPO), "build", "--catalogs", str(tmp_path / "catalogs"), "--out", str(tmp_path / "site"))
    assert failed.returncode == 1
    assert failed.stdout == "loaded: jinja2 babel markdown yaml\n"  # a plain build goes on without click
    assert failed.stderr.splitlines()[-1] == "1 problem found; nothing was written."
    assert not (tmp_path / "site").exists()


def test_the_command_ends_with_main_s_exit_code_and_all_it_wrote(tmp_path: Path):
    """`python -m gpumem` (entry.command) ends the process at once after main(): the exit code is
    still main's (click's 2 for a usage error, 1 for a build error) and what it printed is all there."""
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    (tmp_path / "catalogs/gpus.yaml").write_text("gpus: [\n")

    def gpumem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gpumem", "--project", str(REPO), *args], capture_output=True, text=True, timeout=120)

    usage = gpumem("nosuch")
    assert (usage.returncode, usage.stdout, usage.stderr.splitlines()[-1]) == (2, "", "Error: No such command 'nosuch'.")
    failed = gpumem("build", "--catalogs", str(tmp_path / "catalogs"), "--out", str(tmp_path / "site"))
    assert (failed.returncode, failed.stdout, failed.stderr.splitlines()[-1]) == (1, "", "1 problem found; nothing was written.")
    helped = gpumem("--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("Usage: python -m gpumem [OPTIONS] COMMAND [ARGS]...")
    assert helped.stdout.rstrip().endswith("serve     Preview the site on 127.0.0.1, rebuilding when a source file...")
