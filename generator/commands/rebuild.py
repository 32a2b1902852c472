"""`gpumem build` as the command runs it: the no-change check first, and the pipeline (commands/build.py,
with Jinja, Babel and the engines) imported only when that check finds work."""

from __future__ import annotations

from collections.abc import Callable

from gpumem.options import BuildResult, Options
from gpumem.output.fingerprint import fingerprint, read_inputs, unchanged


def build_if_changed(options: Options, report: Callable[[str], None]) -> BuildResult:
    """`gpumem build`: the no-change check, and only when it finds work is the pipeline imported,
    the build going on from the inputs that check read and hashed. A BuildError is the caller's to
    show; `report` hears what the writer did besides the build."""
    read = read_inputs(options)
    result = unchanged(options, stamp=fingerprint(options, read))
    if result is None:
        from gpumem.commands.build import build  # the pipeline, imported only when there is work for it

        result = build(options, report=report, checked=True, read=read)
    return result
