"""The site's search index: Pagefind (the maintained static-search tool, its binary from the pagefind-bin wheel)
run once per build over a short text of every page, its files joined to the site's under `pagefind/`.

What is indexed: each page's title, its description and its section headings (h2 and h3, with their ids, so a
result can point at a section), one document per page in the page's language; Pagefind keeps one index per
`<html lang>`. The search page and the not-found pages are left out. Not the pages' tables and prose: they carry
the snapshot's prices and the engines' figures, so indexing them would make every price import run Pagefind again
and grow the index with numbers no one searches for, while what readers look up (a model, a GPU, a guide's
section) is in the titles and headings. The documents are written to a temporary folder and indexed there, not in
the pages themselves, so no page carries a byte for the index (`data-pagefind-body` would cost every page, the
heaviest of them some 110 bytes under its 40 KB budget).

Same documents, same files: the files are kept by the digest of the documents and the binary's version (in the
cache folder beside Jinja's compiled templates, and in the preview's process), so Pagefind runs only when a title,
a description or a heading changed. Pagefind writes its languages in pagefind-entry.json in the order of a hash
map; they are written back sorted, which makes the index the same bytes for the same documents.
"""

from __future__ import annotations

import functools
import hashlib
import html
import io
import json
import os
import re
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpumem.errors import BuildError

FOLDER = "pagefind"  # where the index is published, below the site's root
KEPT = 4  # indexes kept in the cache folder, the last used
ENTRY = "pagefind-entry.json"
# Pagefind writes its own interfaces too; the site's search page has its own script (templates/static/search.js),
# so they are not published.
UNUSED = re.compile(r"pagefind-(?:ui|modular-ui|component-ui|highlight)\.(?:js|css)$")
TITLE = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
DESCRIPTION = re.compile(r'<meta name="description" content="([^"]*)">')
HEADING = re.compile(r'<(h[23]) id="([^"<>]+)">(.*?)</\1>', re.S)
TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Indexed:
    """A page to index: the file it is written to, its language and its rendered HTML."""

    output: str
    lang: str
    html: bytes


@dataclass
class SearchIndex:
    """Builds the index, keeping what it made: each page's document by the bytes it was made from (the preview
    hands back the same bytes for a page it did not render again) and the last index by its documents' digest."""

    cache: Path | None = None  # a folder of this user's own (options.template_cache), or None
    documents: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    last: tuple[str, dict[str, bytes]] | None = None

    def files(self, pages: Iterable[Indexed]) -> dict[str, bytes]:
        """The index's files, by their path below the site's root (pagefind/…)."""
        documents = {page.output: self._document(page) for page in pages}
        self.documents = {output: self.documents[output] for output in documents}
        key = digest(documents)
        if self.last is None or self.last[0] != key:
            self.last = (key, self._cached(key) or self._indexed(key, documents))
        return self.last[1]

    def _document(self, page: Indexed) -> str:
        known = self.documents.get(page.output)
        if known is not None and known[0] is page.html:
            return known[1]
        made = document(page.lang, page.html.decode())
        self.documents[page.output] = (page.html, made)
        return made

    def _cached(self, key: str) -> dict[str, bytes] | None:
        if self.cache is None:
            return None
        path = self.cache / f"search-{key}.zip"
        try:
            with zipfile.ZipFile(path) as archive:
                files = {f"{FOLDER}/{name}": archive.read(name) for name in archive.namelist()}
            os.utime(path)  # used: the last to go
        except (OSError, zipfile.BadZipFile, KeyError):
            return None
        return files

    def _indexed(self, key: str, documents: dict[str, str]) -> dict[str, bytes]:
        files = run_pagefind(documents)
        if self.cache is not None:
            keep(self.cache, key, files)
        return files


def document(lang: str, page: str) -> str:
    """What Pagefind reads of a page: its title, description and section headings, in its language."""
    title = TITLE.search(page)
    described = DESCRIPTION.search(page)
    parts = [f'<!doctype html><html lang="{lang}"><head><title>{_text(title.group(1)) if title else ""}</title></head><body>']
    if title:
        parts.append(f"<h1>{_text(title.group(1))}</h1>")
    if described:
        parts.append(f"<p>{described.group(1)}</p>")
    parts += [f'<{tag} id="{ident}">{_text(inner)}</{tag}>' for tag, ident, inner in HEADING.findall(page)]
    parts.append("</body></html>")
    return "".join(parts)


def _text(inner: str) -> str:
    """A heading's HTML as escaped text: its tags dropped (the link to itself), its entities kept."""
    return html.escape(html.unescape(TAG.sub("", inner)).strip(), quote=False)


def digest(documents: dict[str, str]) -> str:
    """The documents' digest and the binary's version: what the index is made from."""
    summed = hashlib.sha256(version().encode())
    for output in sorted(documents):
        summed.update(f"\0{output}\0{documents[output]}".encode())
    return summed.hexdigest()[:32]


def executable() -> Path:
    """The Pagefind binary the pagefind-bin wheel installs."""
    from pagefind_bin import get_executable

    return Path(get_executable())


@functools.cache
def version() -> str:
    from importlib.metadata import version as installed

    return f"pagefind-bin={installed('pagefind-bin')}"


def run_pagefind(documents: dict[str, str]) -> dict[str, bytes]:
    """Index the documents in a temporary folder of their own; the files Pagefind writes, entry sorted.

    Pagefind reads a pagefind.yml, .toml or .json in its working folder and PAGEFIND_* variables: it runs in the
    empty temporary folder, without those variables, so nothing but its arguments configures it."""
    with tempfile.TemporaryDirectory(prefix="gpumem-search-") as folder:
        root = Path(folder)
        site, out = root / "site", root / "out"
        for output in sorted(documents):
            path = site / output
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(documents[output], encoding="utf-8")
        environment = {name: value for name, value in os.environ.items() if not name.startswith("PAGEFIND_")}
        try:
            command = [str(executable()), "--site", str(site), "--output-path", str(out), "--silent"]
            ran = subprocess.run(command, cwd=root, env=environment, capture_output=True, text=True, check=False)
        except (ImportError, OSError) as error:  # no wheel, or none with a binary for this machine
            raise BuildError([f"search index: cannot run Pagefind ({error}); `bash scripts/setup` installs pagefind-bin"]) from None
        if ran.returncode != 0:
            said = (ran.stderr or ran.stdout).strip()
            raise BuildError([f"search index: pagefind exited with {ran.returncode}: {said}"])
        files = {
            f"{FOLDER}/{path.relative_to(out).as_posix()}": path.read_bytes()
            for path in sorted(out.rglob("*"))
            if path.is_file() and not UNUSED.search(path.name)
        }
    files[f"{FOLDER}/{ENTRY}"] = sorted_entry(files[f"{FOLDER}/{ENTRY}"])
    return files


def sorted_entry(raw: bytes) -> bytes:
    """pagefind-entry.json with its languages in the order of their codes, compact as Pagefind writes it."""
    entry = json.loads(raw)
    entry["languages"] = dict(sorted(entry["languages"].items()))
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()


def keep(cache: Path, key: str, files: dict[str, bytes]) -> None:
    """The index in the cache as one archive named by its key, written whole (a temporary file renamed), beside the
    KEPT last used (builds that alternate between two sets of pages, say two branches, each find theirs); a failure
    only costs the next build a run of Pagefind."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(files):
            archive.writestr(zipfile.ZipInfo(name.removeprefix(f"{FOLDER}/"), (1980, 1, 1, 0, 0, 0)), files[name])
    try:
        with tempfile.NamedTemporaryFile(dir=cache, prefix=".search-", delete=False) as temporary:
            temporary.write(buffer.getvalue())
        os.replace(temporary.name, cache / f"search-{key}.zip")
        archives = sorted(cache.glob("search-*.zip"), key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for old in archives[KEPT:]:
            old.unlink()
    except OSError:
        pass
