"""Shared fixtures: a copy of the project's inputs to break, and a browser on Debian's Chromium."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpumem.build import Options
from gpumem.serve import served

from .project import CATALOGS, REPO, fixture_options

# Builds in tests pretend it is the day after the demo snapshot, so it is never stale.
NOW = datetime(2026, 11, 1, tzinfo=UTC)
SNAPSHOT = "2026-10-31T16-52Z.yaml"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """A writable copy of the fixture catalogs and the project's content under tmp_path."""
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    shutil.copytree(REPO / "content", tmp_path / "content")
    return tmp_path


def options_for(root: Path, **changes) -> Options:
    """Options reading the copy under root and writing root/site."""
    return fixture_options(**{"catalogs": root / "catalogs", "content": root / "content", "out": root / "site", **changes})


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    """Replace text in a file, failing loudly when the text is not there."""
    text = path.read_text()
    assert text.count(old) >= count, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root, by its relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def line_of(path: Path, text: str) -> int:
    """The 1-based line where text first appears."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": "/usr/bin/chromium",
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
    }


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project with the fixture catalogs, built once into a temporary folder."""
    from gpumem.build import build

    out = tmp_path_factory.mktemp("built") / "site"
    build(fixture_options(out=out), now=NOW)
    return out


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1 for the browser tests."""
    with served(built_site) as origin:
        yield origin


# Modules that need Chromium, Java or subprocesses of long builds: left out of the fast part
# (`pytest -m "not slow"`), which the daily-routine test runs in a copy of the project.
SLOW_MODULES = {"test_quality", "test_calculator", "test_lighthouse", "test_injection", "test_browser", "test_routine", "test_serve"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.module.__name__.rpartition(".")[2] in SLOW_MODULES or "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
