"""Every section heading a link to itself, and the list of a page's sections where its layout asks for one.

Both are done on a page's HTML once it is rendered, so the headings a layout writes and those a content file's
Markdown writes are treated alike. The HTML is the build's own: its headings are `<h2 id="…">` or `<h3 id="…">`,
ids from the layouts or from Markdown's toc extension, their text already escaped, which is what lets a pattern
read them. Hand-written: Markdown's toc extension links and lists only the headings it writes itself, and no
library we know rewrites rendered HTML this way without parsing and reserialising every page.
"""

from __future__ import annotations

import re

HEADING = re.compile(r'<(h[23]) id="([^"<>]+)">(.*?)</\1>', re.S)
TAG = re.compile(r"<[^>]+>")
# Where a layout wants the list of the page's sections: the marker inside the element that holds it.
CONTENTS = "<!--contents-->"
HOLDER = re.compile(r'<details class="contents">.*?</details>\n?', re.S)
FEWEST_SECTIONS = 3  # a shorter page is read at a glance and gets no list


def with_headings_linked(html: str) -> str:
    """The page with each h2 and h3 that has an id and no link inside made a link to itself, and the
    list of its h2 sections where the layout left the CONTENTS marker (the holder dropped on a short page)."""
    before, marker, after = html.partition(CONTENTS)
    if marker:
        sections = [(ident, TAG.sub("", inner).strip()) for tag, ident, inner in HEADING.findall(after) if tag == "h2"]
        if len(sections) >= FEWEST_SECTIONS:
            listed = "".join(f'<li><a href="#{ident}">{text}</a></li>' for ident, text in sections)
            html = f"{before}<ol>{listed}</ol>{after}"
        else:
            html = HOLDER.sub("", before + after, count=1)
    return HEADING.sub(_linked, html)


def _linked(heading: re.Match[str]) -> str:
    tag, ident, inner = heading.groups()
    if "<a " in inner:
        return heading.group(0)
    return f'<{tag} id="{ident}"><a href="#{ident}">{inner}</a></{tag}>'
