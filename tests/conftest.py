"""Shared fixtures: a copy of the project's inputs to break, and a browser on Debian's Chromium; the guard
that fails a test reading the production catalogs/ (guard/catalog_guard.py)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

from gpumem.commands.serve import served
from gpumem.options import Options

from .guard.catalog_guard import Guard
from .javascript import Scripts
from .project import CATALOGS, REPO, fixture_options

# Hypothesis's per-example deadline (200 ms) is a timing assert: on a loaded machine an example can take
# longer without anything being wrong, so no example has one. The number of examples stays each test's own.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")

# Builds in tests pretend it is the day after the demo snapshot, so it is never stale.
NOW = datetime(2026, 11, 1, tzinfo=UTC)
SNAPSHOT = "2026-10-31T16-52Z.yaml"


# Made at import, before any test or subprocess runs: every Python process of the session is watched.
GUARD = Guard(str(REPO / "catalogs"), tempfile.mkstemp(prefix="gpumem-guard-", suffix=".log")[1])


def production_catalogs_untouched(item: pytest.Item) -> None:
    """Fail item if it (or a subprocess of it) read the production catalogs/ since the last look, unless it
    checks the shipped data."""
    touched = GUARD.take()
    if touched and item.get_closest_marker("shipped_data") is None:
        pytest.fail(
            f"{item.nodeid} read the production catalogs: {named(touched)}. Tests read tests/fixtures/catalogs; "
            "mark a test that checks the shipped data @pytest.mark.shipped_data",
            pytrace=False,
        )


def named(paths: list[str], shown: int = 3) -> str:
    """The first paths, and how many more."""
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """The test body and its fixtures' setup: a read of catalogs/ fails the test itself."""
    yield
    production_catalogs_untouched(item)


@pytest.fixture(autouse=True)
def production_catalogs_untouched_in_teardown(request: pytest.FixtureRequest) -> Iterator[None]:
    """What the fixtures' teardown read: checked after them (autouse fixtures are torn down last)."""
    yield
    production_catalogs_untouched(request.node)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Test modules read nothing of catalogs/ at import either."""
    touched = GUARD.take()
    if touched:
        raise pytest.UsageError(f"collecting the tests read the production catalogs: {named(touched)}")


def pytest_unconfigure(config: pytest.Config) -> None:
    Path(GUARD.log).unlink(missing_ok=True)


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
    from gpumem.commands.build import build

    out = tmp_path_factory.mktemp("built") / "site"
    build(fixture_options(out=out), now=NOW)
    return out


@pytest.fixture(scope="session")
def scripts(built_site: Path) -> Scripts:
    """The calculator scripts built_site published, in QuickJS: the engines' agreement without a browser."""
    return Scripts(built_site)


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1 for the browser tests."""
    with served(built_site) as origin:
        yield origin


# The slow tier (`pytest -m slow`): modules that run Java (the Nu validator), Lighthouse, `gpumem serve` or
# `kill -9` of real builds, and every test that opens Chromium (a Playwright fixture). The fast tier
# (`pytest -m "not slow"`) computes and builds only; `-n 2` (pytest-xdist) runs it on both cores, each worker
# with a guard of its own.
SLOW_MODULES = {"test_quality", "test_lighthouse", "test_injection", "test_browser", "test_serve", "test_write_safety"}
BROWSER_FIXTURES = {"page", "context", "browser", "browser_type", "launch_browser", "new_context"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        shadowing = BROWSER_FIXTURES & set(getattr(getattr(item, "callspec", None), "params", ()))
        if shadowing:  # the parameter would replace the fixture and still put the test in the slow tier, with a browser
            raise pytest.UsageError(f"{item.nodeid}: a parameter named {', '.join(sorted(shadowing))} shadows a Playwright fixture")
        if item.module.__name__.rpartition(".")[2] in SLOW_MODULES or BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    # The slow tier first (a stable sort: each module's tests keep their order): its long tests (kill -9,
    # Lighthouse, the Nu validator) start early, and a session of both tiers ends on the fast tier's short ones.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
