"""The `gpumem` command: a build whose output folder is already up to date answers here, before
click and the pipeline are imported (a third of a no-change rebuild's time), and any other plain
build goes on from here on the inputs it read for that check, without click; everything else, and
every command line this reading does not take as plainly valid, goes to click (cli.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from .options import BuildResult, Options

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
    if found is None:
        from .cli import main as commands

        commands()
        return
    from .errors import BuildError
    from .options import built_line, parallel_jobs, project_options

    project = found.pop("project", None)
    options = project_options(project, **{"jobs": parallel_jobs(), **found})  # type: ignore[arg-type]
    try:  # shown as click shows a build's errors and an interrupt for the other commands
        result = run_build(options, _say)
    except BuildError as error:
        _say(error.message)
        sys.exit(1)
    except KeyboardInterrupt:
        _say("Aborted!")
        sys.exit(1)
    for warning in result.warnings:
        _say(warning)
    print(built_line(result))


def run_build(options: Options, report: Callable[[str], None]) -> BuildResult:
    """`gpumem build`, from here and from cli.py: the no-change check, and only when it finds work
    is the pipeline imported, the build going on from the inputs that check read and hashed. A
    BuildError is the caller's to show; `report` hears what the writer did besides the build."""
    from .fingerprint import fingerprint, read_inputs, unchanged

    read = read_inputs(options)
    result = unchanged(options, stamp=fingerprint(options, read))
    if result is None:
        from .build import build

        result = build(options, report=report, checked=True, read=read)
    return result


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def command() -> None:
    """`gpumem` and `python -m gpumem`: main(), after which the process ends at once, its output
    flushed, without freeing the build's objects one by one (some 50 ms after a build); the exit
    code is main's."""
    try:
        main()
        code = 0
    except SystemExit as done:
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
