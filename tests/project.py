"""Where the tests find the project's code and their own fixture data.

Tests read templates, translations and content from this repository, but catalogs and the
price snapshot from tests/fixtures/catalogs: a frozen copy, so importing a newer snapshot or
adding a model to catalogs/ (the daily routine) never changes what a test expects.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gpumem.options import Options, project_options

REPO = Path(__file__).resolve().parent.parent
CATALOGS = REPO / "tests" / "fixtures" / "catalogs"


def fixture_options(**changes: Any) -> Options:
    """Options for this repository's project with the fixture catalogs."""
    return project_options(REPO, **{"catalogs": CATALOGS, **changes})


def published(site: Path, name: str) -> Path:
    """The file a build published for templates/static/<name>: assets/<stem>.<digest><suffix>."""
    stem, dot, suffix = name.rpartition(".")
    found = sorted((site / "assets").glob(f"{stem}.{'[0-9a-f]' * 10}{dot}{suffix}"))
    assert len(found) == 1, (name, found)
    return found[0]


def copy_project(root: Path, catalogs: Path = CATALOGS) -> Path:
    """A whole project folder under root: the fixture catalogs (or `catalogs`) and the project's content,
    templates and translations, to change and build."""
    shutil.copytree(catalogs, root / "catalogs")
    for name in ("content", "templates", "translations"):
        shutil.copytree(REPO / name, root / name)
    return root
