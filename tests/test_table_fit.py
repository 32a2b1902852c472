"""Issue 25, part 2: tables that fit the screen. At a desk (1280 px) every deciding column of a table (its
<th class="key">, marked in the templates) lies inside the viewport without scrolling; on a phone (390 px) it does,
or the table's box scrolls and its caption's hint says so. No caption runs past the window's edge. In five
languages, on the models index, a model page, a GPU page, the self-hosting guide and the inference guide."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser

# The English pages; each one's four other languages are its rel=alternate links.
PAGES = (
    "/en/models/",
    "/en/models/llama-3.1-70b/",
    "/en/gpus/h100-sxm/",
    "/en/guides/self-hosting-vs-api/",
    "/en/guides/best-gpu-llm-inference/",
)
LANGUAGES = ("es", "en", "pt", "fr", "de")

# Per table: its caption (without the hint), the hint's state, the caption's right edge, and per deciding column
# its heading and whether its cell lies inside both the viewport and the table's box (which may scroll). Read after
# two frames: the hint's scroll-state container query is resolved from the scroll state of the frame before (on a
# loaded machine the first frame could come after the load event; read at once, the hint was seen hidden).
TABLES = """async () => (await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done))),
[...document.querySelectorAll('main table')].map(table => {
  const box = table.closest('.table-wrap'), frame = box.getBoundingClientRect();
  const left = Math.max(0, frame.left + box.clientLeft), right = Math.min(innerWidth, frame.left + box.clientLeft + box.clientWidth);
  const caption = table.caption, hint = caption.querySelector('small'), shown = hint && hint.getBoundingClientRect();
  const cue = !!shown && getComputedStyle(hint).display !== 'none' && shown.width > 0 && shown.right <= innerWidth
    && box.scrollWidth > box.clientWidth && getComputedStyle(box).backgroundImage.includes('gradient');
  const keys = [...table.querySelectorAll('th.key')].map(th => {
    const cell = th.getBoundingClientRect();
    return [th.textContent.trim(), cell.width > 0 && cell.left >= left - 0.5 && cell.right <= right + 0.5];
  });
  const text = [...caption.childNodes].filter(node => node !== hint).map(node => node.textContent).join('').trim();
  return {caption: text, keys, cue, captionRight: caption.getBoundingClientRect().right};
}))"""


def table_problems(tables: list[dict], where: str, width: int) -> list[str]:
    """What a page's tables do wrong at this width: a deciding column out of sight (without the cue, on a phone),
    a table that marks none, a caption past the window's edge."""
    problems = []
    for table in tables:
        name = f"{where}: table «{table['caption']}»"
        if not table["keys"]:
            problems.append(f"{name} marks no deciding column")
        if table["captionRight"] > width + 0.5:
            problems.append(f"{name}: its caption runs past the window's edge, to {table['captionRight']:.0f} px")
        for heading, inside in table["keys"]:
            if inside:
                continue
            if width > 640:
                problems.append(f"{name}: column «{heading}» lies outside the viewport")
            elif not table["cue"]:
                problems.append(f"{name}: column «{heading}» lies outside the viewport without a cue")
    return problems


def test_every_deciding_column_is_in_view_or_signalled(browser: Browser, site_url: str):
    problems = []
    for width, height in ((390, 844), (1280, 900)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        for english in PAGES:
            page.goto(f"{site_url}{english}")
            links = dict(
                page.eval_on_selector_all(
                    "link[rel=alternate][hreflang]", "links => links.map(l => [l.hreflang, new URL(l.href).pathname])"
                )
            )
            for lang in LANGUAGES:
                path = links[lang]
                page.goto(f"{site_url}{path}")
                tables = page.evaluate(TABLES)
                assert tables, path
                problems += table_problems(tables, f"{width} px, {path}", width)
        context.close()
    assert problems == [], "\n".join(problems)


def test_the_problems_are_named_by_page_table_and_column():
    """The messages the browser test gives (the test above cannot be seen failing on a layout that fits)."""
    tables = [
        {"caption": "Speed", "keys": [["Per million", False], ["Price", True]], "cue": False, "captionRight": 380},
        {"caption": "Fits", "keys": [["BF16", False]], "cue": True, "captionRight": 400},
        {"caption": "Plain", "keys": [], "cue": False, "captionRight": 10},
    ]
    assert table_problems(tables, "390 px, /en/x/", 390) == [
        "390 px, /en/x/: table «Speed»: column «Per million» lies outside the viewport without a cue",
        "390 px, /en/x/: table «Fits»: its caption runs past the window's edge, to 400 px",
        "390 px, /en/x/: table «Plain» marks no deciding column",
    ]
    assert table_problems(tables[:2], "1280 px, /en/x/", 1280) == [
        "1280 px, /en/x/: table «Speed»: column «Per million» lies outside the viewport",
        "1280 px, /en/x/: table «Fits»: column «BF16» lies outside the viewport",
    ]


HINTS = {"es": "Deslizar →", "en": "Scroll →", "pt": "Deslizar →", "fr": "Défiler →", "de": "Scrollen →"}


def test_every_table_of_the_site_marks_its_deciding_columns_and_carries_the_hint(built_site: Path):
    """The mark the layout and the browser test key on is in the markup of every table, not guessed from its place."""
    unmarked, tables = [], 0
    for path in sorted(built_site.rglob("*.html")):
        html = path.read_text()
        lang = re.search(r'<html lang="([a-z]+)">', html).group(1)
        for table in re.findall(r"<table\b.*?</table>", html, re.S):
            tables += 1
            found = re.search(r"<caption[^>]*>(.*?)</caption>", table, re.S)
            if found is None and 'aria-labelledby="calc-options-heading"' in table:
                caption = "calculator configurations"  # labelled by its heading; its box shows its own scroll shadow
            elif found is None:
                unmarked.append(f"{path.relative_to(built_site)}: a table without a caption")
                continue
            else:
                caption = found.group(1)
            if found is not None and not caption.endswith(f" <small>{HINTS[lang]}</small>"):
                unmarked.append(f"{path.relative_to(built_site)}: «{caption}» has no hint")
            if not re.search(r'<th\b[^>]*\bclass="(?:[^"]* )?key\b', table):
                unmarked.append(f"{path.relative_to(built_site)}: «{caption}» marks no deciding column")
    assert unmarked == []
    assert tables > 1000
