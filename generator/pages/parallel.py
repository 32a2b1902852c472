"""Pages rendered by several forked processes that take their work from one queue.

The work is cut into units: all the pages of one subject (a model's or a GPU's page in every
language), or one other page. The units' numbers are written into a pipe before the children are
forked; each process, the parent included, reads one number at a time (a pipe read of four bytes
is atomic), renders that unit and goes back for the next until the pipe is empty. Neither process
waits while the other still has work, as it did with a fixed share of the pages (one page costs
up to ten of another: the methodology page against a model's). A subject's pages stay together
because its figures are computed on first use (figures/site.py: the per-subject figures), so each
is computed once, by the process that renders it.

The queue is one write before any fork, so it must fit in a pipe (16 KiB on every system):
past 4,096 units, neighbouring units are joined. The outcome does not depend on which process
rendered what: files come back in the pages' order and problems in the order of the pages that
had them. Nothing here is in the standard library's multiprocessing: its pools pickle the work
function and its arguments for every task, where a forked child has the whole build's state already.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from gpumem.errors import BuildError
from gpumem.pages.routes import Page

Out = TypeVar("Out")  # what rendering a page gives
NUMBER = struct.Struct("<I")  # a unit's number in the queue
QUEUE_BYTES = 16384  # what every system's pipe holds before a write blocks (Linux: 65,536; macOS: 16,384)


def units_of(pages: Sequence[Page], most: int) -> list[tuple[int, ...]]:
    """The pages' indices cut into at most `most` units (what the queue's pipe holds): a subject's
    pages together, any other page alone, the other pages first (a content page costs more than a
    subject's page, and the queue is best ended with small units); past `most`, neighbouring units
    are joined two by two."""
    alone: list[tuple[int, ...]] = []
    subjects: dict[tuple[str, str], list[int]] = {}
    for index, page in enumerate(pages):
        if page.subject:
            subjects.setdefault((page.key, page.subject), []).append(index)
        else:
            alone.append((index,))
    units = alone + [tuple(indices) for indices in subjects.values()]
    while len(units) > most:
        units = [units[i] + units[i + 1] if i + 1 < len(units) else units[i] for i in range(0, len(units), 2)]
    return units


def render_pages(pages: Sequence[Page], render: Callable[[Page], Out]) -> tuple[dict[str, Out], list[str]]:
    """Render every page in this process; a page that fails is reported, and the others are still
    rendered, so one build lists every problem (a content file's error is reported once, not per page)."""
    files: dict[str, Out] = {}
    problems: list[str] = []
    for page in pages:
        files[page.output], found = _rendered(page, render)
        problems += found
    return {output: content for output, content in files.items() if content is not None}, problems


def _rendered(page: Page, render: Callable[[Page], Out]) -> Outcome:
    """One page's bytes and no problem, or None and what went wrong."""
    try:
        return render(page), []
    except BuildError as error:
        return None, list(error.lines)
    except Exception as error:  # noqa: BLE001 - a template that fails on some catalog value
        return None, [f"templates/{page.template}: {page.output}: {type(error).__name__}: {error}"]


def in_parallel(pages: Sequence[Page], render: Callable[[Page], Out], jobs: int) -> tuple[dict[str, Out], list[str]]:
    """Render pages in `jobs` processes (forked children and this one) that share one queue."""
    units = units_of(pages, QUEUE_BYTES // NUMBER.size)
    queue, feed = os.pipe()
    os.write(feed, b"".join(NUMBER.pack(number) for number in range(len(units))))
    os.close(feed)  # an empty queue then reads as its end
    children = []
    for _ in range(1, jobs):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child renders what it takes from the queue, sends it back and always leaves here
            try:
                os.close(reader)
                _send(lambda: _take(queue, units, pages, render), writer)
            finally:
                os._exit(0)
        os.close(writer)
        children.append((pid, reader))
    try:
        mine = _take(queue, units, pages, render)
    finally:
        os.close(queue)
        results = [_collect(pid, reader) for pid, reader in children]
    done, problems = dict(mine), []
    for kind, value in results:
        if kind == "ok":
            done.update(value)
        else:
            problems.append(f"a rendering process failed: {value}")
    return _in_order(pages, done, problems)


Outcome = tuple[Any, list[str]]  # a page's bytes (None if it failed) and its problems


def _take(queue: int, units: list[tuple[int, ...]], pages: Sequence[Page], render: Callable[[Page], Out]) -> dict[int, Outcome]:
    """Units from the queue until it is empty, each page's outcome by its index."""
    done: dict[int, Outcome] = {}
    while number := os.read(queue, NUMBER.size):
        for index in units[NUMBER.unpack(number)[0]]:
            done[index] = _rendered(pages[index], render)
    return done


def _in_order(pages: Sequence[Page], done: dict[int, Outcome], problems: list[str]) -> tuple[dict[str, Out], list[str]]:
    """Files in the pages' order and the pages' problems in that order, whoever rendered them."""
    files: dict[str, Out] = {}
    found: list[str] = []
    for index, page in enumerate(pages):
        if index in done:
            content, trouble = done[index]
            found += trouble
            if content is not None:
                files[page.output] = content
    return files, found + problems


def _send(work: Callable[[], Any], writer: int) -> None:
    """In a child: do the work and pickle the outcome (or the crash) into the pipe."""
    payload: tuple[str, Any]
    try:
        payload = ("ok", work())
    except BaseException:  # noqa: BLE001 - reported by the parent
        payload = ("crash", traceback.format_exc(limit=-1).strip().splitlines()[-1])
    with contextlib.suppress(OSError), os.fdopen(writer, "wb") as stream:
        pickle.dump(payload, stream, protocol=pickle.HIGHEST_PROTOCOL)


def _collect(pid: int, reader: int) -> tuple[str, Any]:
    """A child's outcome; a child that died without sending one is a crash, not a hang."""
    try:
        with os.fdopen(reader, "rb") as stream:
            outcome = pickle.load(stream)
    except (EOFError, pickle.UnpicklingError, OSError) as error:
        outcome = ("crash", f"no result ({type(error).__name__})")
    os.waitpid(pid, 0)
    return outcome
