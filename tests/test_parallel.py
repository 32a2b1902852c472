"""Rendering shared among forked processes through one queue (pages/parallel.py)."""

from __future__ import annotations

import os

import pytest

from gpumem.errors import BuildError
from gpumem.pages.parallel import in_parallel, render_pages, units_of
from gpumem.pages.routes import Page

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked renderers exist only where fork does")


def page(key: str, lang: str, subject: str = "") -> Page:
    return Page(key, lang, f"{lang}/{key}/{subject + '/' if subject else ''}", f"{key}.html", (), subject)


PAGES = [
    page("home", "en"),
    page("model", "en", "llama"),
    page("model", "en", "qwen"),
    page("gpu", "en", "h100"),
    page("home", "de"),
    page("model", "de", "llama"),
    page("model", "de", "qwen"),
    page("gpu", "de", "h100"),
]


def test_a_subjects_pages_are_one_unit_and_the_other_pages_come_first():
    assert units_of(PAGES, 100) == [(0,), (4,), (1, 5), (2, 6), (3, 7)]


def test_units_past_what_the_queue_holds_are_joined_two_by_two():
    assert units_of(PAGES, 4) == [(0, 4), (1, 5, 2, 6), (3, 7)]
    assert units_of(PAGES, 2) == [(0, 4, 1, 5, 2, 6), (3, 7)]


def rendered(p: Page) -> bytes:
    if p.output == "de/home/index.html":
        raise BuildError(["content/de/home.md:3: template: no such name"])
    if p.output == "en/gpu/h100/index.html":
        raise KeyError("h100")
    return p.output.encode()


def test_two_processes_give_what_one_gives_in_the_pages_order():
    expected = (
        {p.output: p.output.encode() for p in PAGES if p.output not in ("de/home/index.html", "en/gpu/h100/index.html")},
        ["templates/gpu.html: en/gpu/h100/index.html: KeyError: 'h100'", "content/de/home.md:3: template: no such name"],
    )
    assert render_pages(PAGES, rendered) == expected
    for jobs in (2, 3):
        files, problems = in_parallel(PAGES, rendered, jobs)
        assert (list(files.items()), problems) == (list(expected[0].items()), expected[1])


def test_a_child_that_dies_is_reported_and_its_pages_are_missing():
    parent = os.getpid()
    taken, told = os.pipe()
    waited = []

    def dying(p: Page) -> bytes:
        if os.getpid() != parent:  # the child says it took a unit, then dies without a word
            os.write(told, b"x")
            os._exit(3)
        if not waited:  # the parent's first page waits until the child has taken one of its own
            waited.append(os.read(taken, 1))
        return p.output.encode()

    try:
        files, problems = in_parallel(PAGES, dying, 2)
    finally:
        os.close(taken)
        os.close(told)
    assert problems == ["a rendering process failed: no result (EOFError)"]
    assert 0 < len(files) < len(PAGES)
    assert set(files) < {p.output for p in PAGES}
