"""The `gpumem` command: a build whose output folder is already up to date answers here, before
click and the pipeline are imported (a third of a no-change rebuild's time); everything else,
and every command line this reading does not take as plainly valid, goes to click (cli.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# `gpumem [--project DIR] build` and the build options the no-change check depends on; --force,
# --help or anything else is click's to read.
PATHS = {"--project": "project", "--catalogs": "catalogs", "--content": "content", "--prices": "prices", "--out": "out"}
BUILD_PATHS = ("--catalogs", "--content", "--prices", "--out")


def plain_build(args: list[str]) -> dict[str, object] | None:
    """The options of `[--project DIR] build [OPTIONS]` as click would read them, or None when the
    command line is anything else or anything click would refuse or read otherwise."""
    found: dict[str, object] = {"strict": False}
    command = False
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if word == "build" and not command:
            command = True
        elif name in PATHS and (name in BUILD_PATHS) == command:
            if not equals:
                if not rest:
                    return None
                value = rest.pop(0)
            if not value:
                return None  # click refuses an empty path for --project; let it say so
            found[PATHS[name]] = Path(value)
        elif word == "--strict" and command:
            found["strict"] = True
        elif name == "--jobs" and command:
            value = value if equals else (rest.pop(0) if rest else "")
            if not value.isdigit() or not 1 <= int(value) <= 64:
                return None
        else:
            return None
    project = found.get("project")
    if not command or (isinstance(project, Path) and not project.is_dir()):
        return None
    return found


def main() -> None:
    found = plain_build(sys.argv[1:])
    if found is not None:
        from .fingerprint import unchanged
        from .options import built_line, project_options

        project = found.pop("project", None)
        result = unchanged(project_options(project, **found))  # type: ignore[arg-type]
        if result is not None:
            for warning in result.warnings:
                print(warning, file=sys.stderr, flush=True)
            print(built_line(result))
            return
    from .cli import main as commands

    commands()
