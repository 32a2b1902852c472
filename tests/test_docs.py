"""The documentation holds together: README.md stays a short front door, every relative link in it and
in docs/ reaches a file and a heading, and each generated table says which command writes it.

Links and headings are read from the HTML that Python-Markdown makes of each file, so code spans and
fenced blocks are never mistaken for links. Anchors follow GitHub's rule for heading ids (lower case,
punctuation dropped, spaces as hyphens, a repeated id numbered), written out here because it is the
rule readers click on and no installed library implements it.
"""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import markdown
import pytest

from .measurements import compare, speed_table, training
from .measurements.generated import DOCS, END, Generated
from .project import REPO

README_LIMIT = 6144
GENERATED = (compare.DOC, training.DOC, speed_table.DOC)


class Reader(HTMLParser):
    """The hrefs of a page's links and the text of its headings."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.headings: list[str] = []
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"] or "")
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)


def read(path: Path) -> Reader:
    reader = Reader()
    reader.feed(markdown.markdown(path.read_text(), extensions=["tables", "fenced_code"]))
    return reader


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    """The ids GitHub gives the file's headings."""
    found: set[str] = set()
    for heading in read(path).headings:
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        number, unique = 0, slug
        while unique in found:
            number += 1
            unique = f"{slug}-{number}"
        found.add(unique)
    return frozenset(found)


def broken_links(path: Path, root: Path) -> list[str]:
    """Every relative link of a Markdown file that misses its file, leaves root, or misses its heading."""
    problems = []
    for href in read(path).hrefs:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            continue
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not target.is_relative_to(root) or not target.exists():
            problems.append(f"{path.relative_to(root)}: {href}: no such file")
        elif parts.fragment and (target.suffix != ".md" or parts.fragment not in anchors(target)):
            problems.append(f"{path.relative_to(root)}: {href}: no such heading")
    return problems


def documents() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_the_readme_is_a_front_door():
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size:,} bytes, over {README_LIMIT:,}: move the detail into docs/"


def test_the_readme_starts_with_the_build_and_test_commands():
    first = (REPO / "README.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["bash scripts/build", "bash scripts/test"]


@pytest.mark.parametrize("path", documents(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_reaches_a_file_and_a_heading(path: Path):
    assert broken_links(path, REPO) == []


def test_a_missing_file_or_heading_is_reported(tmp_path: Path):
    (tmp_path / "guide.md").write_text("# Adding a model\n\n## What to check\n\n## What to check\n")
    page = tmp_path / "index.md"
    page.write_text(
        "[ok](guide.md#what-to-check-1) [gone](missing.md) [no heading](guide.md#prices) [up](../x.md) "
        "[web](https://example.org/) `[code](missing.md)` [self](#index)\n\n# Index\n"
    )
    assert broken_links(page, tmp_path) == [
        "index.md: missing.md: no such file",
        "index.md: guide.md#prices: no such heading",
        "index.md: ../x.md: no such file",
    ]


def test_anchors_follow_githubs_rule(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# `records/`: the typed records\n\n## Other providers' prices\n\n## I want to…\n\n## Notes\n\n## Notes\n")
    assert anchors(page) == {"records-the-typed-records", "other-providers-prices", "i-want-to", "notes", "notes-1"}


def test_every_measurement_file_is_generated_and_says_by_what():
    assert sorted(path.name for path in DOCS.glob("*.md")) == sorted(doc.name for doc in GENERATED)
    for doc in GENERATED:
        header = doc.path.read_text().splitlines()[0]
        assert f"`{doc.command}`" in header, f"{doc.path.relative_to(REPO)}: its first line must name {doc.command}"


def test_writing_a_table_keeps_the_text_around_it(tmp_path: Path):
    doc = Generated("table.md", "tests.measurements.compare")
    text = f"# Title\n\nProse.\n\n{doc.begin}\n| old |\n{END}\nAfter.\n"
    assert doc.rewritten(text, "| new |\n| rows |") == f"# Title\n\nProse.\n\n{doc.begin}\n| new |\n| rows |\n{END}\nAfter.\n"
    assert doc.split(f"{doc.begin}\n{END}\n") == ("", "", "\n")


def test_a_file_without_its_markers_is_refused():
    doc = Generated("serving-memory.md", "tests.measurements.compare")
    with pytest.raises(SystemExit) as refused:
        doc.rewritten("# Title\n\nno block\n", "| new |")
    assert str(refused.value) == (
        "docs/measurements/serving-memory.md: no generated block: it needs the lines "
        "'<!-- generated by .venv/bin/python -m tests.measurements.compare --write: edit the text above, not the table -->' "
        "and '<!-- end of the generated table -->'"
    )
