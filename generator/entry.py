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
    from .fingerprint import fingerprint, read_inputs, unchanged
    from .options import built_line, parallel_jobs, project_options

    project = found.pop("project", None)
    options = project_options(project, **{"jobs": parallel_jobs(), **found})  # type: ignore[arg-type]
    read = read_inputs(options)
    result = unchanged(options, stamp=fingerprint(options, read))
    if result is None:  # the build itself, as `gpumem build` runs it (cli.py), on the inputs read once
        result = _build(options, read)
    for warning in result.warnings:
        print(warning, file=sys.stderr, flush=True)
    print(built_line(result))


def _build(options: Options, read: dict[str, bytes]) -> BuildResult:
    """The build, with its errors, its writer's notes and an interrupt shown as click shows them
    for the other commands: on stderr, exit code 1, no traceback."""
    from .build import build
    from .errors import BuildError

    def say(note: str) -> None:
        print(note, file=sys.stderr, flush=True)

    try:
        return build(options, report=say, checked=True, read=read)
    except BuildError as error:
        say(error.message)
    except KeyboardInterrupt:
        say("Aborted!")
    sys.exit(1)


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
