"""The layouts compiled into Jinja's bytecode cache by a forked process while a build reads its
inputs and computes its figures, so that the pages find them compiled when rendering starts.

Compiling every layout costs a cold build about half a second of one CPU (Jinja's lexer, parser
and code generator), and gathering the inputs and computing the figures as much again (ten times
that with ten times the catalog): on two CPUs the two run side by side. Jinja writes a compiled
template to its cache as a whole file, renamed into place, so the build's own renderer reads a
template either complete or not at all (then compiles it itself, as without this). Nothing is
forked where there is no fork (Windows), no cache folder, or one rendering process asked for.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


class CompilingAhead:
    """A forked process compiling every layout into the cache; `wait` until it is done."""

    def __init__(self, templates: Path, translations: Path, cache: Path | None, jobs: int) -> None:
        self.pid = 0
        if cache is None or jobs < 2 or not hasattr(os, "fork"):
            return
        self.pid = os.fork()
        if self.pid == 0:  # the child compiles, and always leaves here without running the parent's exit code
            try:
                from gpumem.pages.render import Renderer

                Renderer(templates, translations, (), cache).compile_all()
            finally:
                os._exit(0)
        self._reaper = weakref.finalize(self, _reap, self.pid)  # a build that fails before it waits

    def wait(self) -> None:
        """Until every layout is in the cache (or the child failed: the renderer compiles what is missing)."""
        if self.pid:
            self._reaper()
            self.pid = 0
