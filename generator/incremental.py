"""What a page read of the snapshot's figures, so that a new snapshot renders only the pages it changes.

A page's key (fingerprint.page_keys) covers every input but the price snapshots. What a page takes
from a snapshot it takes through the objects built from it (the catalog, the snapshot, the figures
and their groups), which its template sees through `Watched` stand-ins that note each value read:
`figures.models["llama-3.1-8b"]`, or a whole value when the page walks it (`snapshot.offers`). A
later build looks those values up again in its own figures; when every one digests as before (and
the key is the same), the page's template would read the same values, take the same branches and
write the same bytes, so the last build's page is kept.

Nearly every page also states when the snapshot was taken ("Prices from the … snapshot of
31 Oct 2026, 16:52 UTC: 619 GPUs on 188 machines."). Those words change with every snapshot but
no page's figures depend on them, so pages are rendered with a placeholder for each (`stamp.line`,
`stamp.date`…) and `finalize` sets the language's words in, noting where; the next build takes
them out again (`unstamp`) and sets the new ones in, without rendering the page.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import re
from collections.abc import Iterator, Mapping
from typing import Any

from markupsafe import Markup, escape

# The stamp's pieces, each rendered per language by templates/_stamp.html from the snapshot.
PIECES = ("line", "date", "time", "gpus", "machines", "gpu_models")
# A piece's placeholder: private-use characters around its name, which no text escapes or changes.
SENTINEL = re.compile(("\ue000(" + "|".join(PIECES) + ")\ue001").encode())
STAMP_PIECE = re.compile(r"<(\w+)>(.*?)</\1>", re.S)
# The objects a page reads snapshot figures through; everything else in its context is price-free.
WATCHED = ("catalog", "snapshot", "figures", "shop", "guide", "vram", "sizing", "calc", "method", "tune", "api", "infer")
# What the stamp's words are made of: a page that cannot take them as placeholders depends on these.
STAMP_SOURCES = (("snapshot", "taken_at"), ("snapshot", "offers"))
MISSING = "\0missing"

Read = tuple[str, ...]  # what a page read: (object,), (object, attribute) or (object, attribute, key)


def stamp_texts(rendered: str) -> dict[str, Markup]:
    """The pieces of templates/_stamp.html as rendered for one language."""
    return {name: Markup(text.strip()) for name, text in STAMP_PIECE.findall(rendered) if name in PIECES}


def substitutable(texts: Mapping[str, Markup]) -> bool:
    """Whether every piece reads the same as HTML text and as plain text (JSON-LD takes answers as
    plain text), so one placeholder serves both; otherwise pages are rendered with the words."""
    return all(len(texts.get(piece, "")) > 0 and Markup(texts[piece]).unescape() == str(texts[piece]) for piece in PIECES)


class StampWords:
    """`stamp.date` and the other pieces as a page's template writes them: placeholders, or the
    words themselves (then noted as read from the snapshot) when they cannot be placeholders."""

    def __init__(self, texts: Mapping[str, Markup], placeholders: bool, log: set[Read]) -> None:
        self._texts, self._placeholders, self._log = texts, placeholders, log

    def __getattr__(self, piece: str) -> Markup:
        if piece not in PIECES:
            raise AttributeError(piece)
        if self._placeholders:
            return Markup(f"\ue000{piece}\ue001")
        self._log.update(STAMP_SOURCES)
        return self._texts[piece]


def finalize(page: bytes, texts: Mapping[str, Markup]) -> tuple[bytes, list[tuple[int, str]]]:
    """A rendered page with the stamp's words in place of its placeholders, and where each went."""
    out, places, start = bytearray(), [], 0
    for match in SENTINEL.finditer(page):
        out += page[start : match.start()]
        piece = match.group(1).decode()
        places.append((len(out), piece))
        out += str(texts[piece]).encode()
        start = match.end()
    out += page[start:]
    return bytes(out), places


def unstamp(page: bytes, places: Any, texts: Mapping[str, str]) -> bytes | None:
    """The page as rendered, before finalize set in `texts` at `places`; None when it does not hold
    those words there (then it is rendered again)."""
    if not isinstance(places, list):
        return None
    out = bytearray(page)
    for place in reversed(places):
        if not (isinstance(place, list | tuple) and len(place) == 2 and isinstance(place[0], int) and place[1] in texts):
            return None
        offset, piece = place
        words = str(texts[piece]).encode()
        if out[offset : offset + len(words)] != words:
            return None
        out[offset : offset + len(words)] = f"\ue000{piece}\ue001".encode()
    return bytes(out)


class WatchedMapping(Mapping[Any, Any]):
    """A dict of figures whose entries are noted one by one as they are read (a model's figures),
    and whole when the page walks it."""

    def __init__(self, path: Read, target: dict[Any, Any], log: set[Read]) -> None:
        self._path, self._target, self._log = path, target, log

    def _entry(self, key: Any) -> None:
        self._log.add((*self._path, key) if isinstance(key, str) else self._path)

    def __getitem__(self, key: Any) -> Any:
        self._entry(key)
        return self._target[key]

    def __contains__(self, key: object) -> bool:
        self._entry(key)
        return key in self._target

    def get(self, key: Any, default: Any = None) -> Any:
        self._entry(key)
        return self._target.get(key, default)

    def __iter__(self) -> Iterator[Any]:
        self._log.add(self._path)
        return iter(self._target)

    def __len__(self) -> int:
        self._log.add(self._path)
        return len(self._target)


class Watched:
    """An object whose attributes a page reads are noted: a dict attribute entry by entry
    (WatchedMapping), anything else whole."""

    def __init__(self, name: str, target: object, log: set[Read]) -> None:
        self._name, self._target, self._log = name, target, log

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        value = getattr(self._target, attribute)
        if type(value) is dict:
            return WatchedMapping((self._name, attribute), value, self._log)
        self._log.add((self._name, attribute))
        return value

    def __html__(self) -> str:  # written out whole: the page depends on all of it
        self._log.add((self._name,))
        return str(escape(str(self._target)))


_STAND_INS: dict[type, type[Watched]] = {}


def _stand_in(kind: type) -> type[Watched]:
    """Watched under the name of the class it stands in for, so a template's error names that class."""
    if kind not in _STAND_INS:
        _STAND_INS[kind] = type(kind.__name__, (Watched,), {"__module__": kind.__module__, "__qualname__": kind.__qualname__})
    return _STAND_INS[kind]


def watched(common: Mapping[str, Any], log: set[Read]) -> dict[str, Any]:
    """A page's stand-ins for the objects it reads snapshot figures through."""
    return {name: _stand_in(type(common[name]))(name, common[name], log) for name in WATCHED if name in common}


def canonical_bytes(value: Any) -> bytes:
    """A value pickled without the pickler's memo, so its bytes do not depend on which of its equal
    parts happen to be one object (a build's own figures and the memo's copy of them digest alike)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True  # no memo: every part written out where it stands
    pickler.dump(value)
    return buffer.getvalue()


class Values:
    """Digests of what pages read, looked up in one build's objects (each value pickled once)."""

    def __init__(self, roots: Mapping[str, Any]) -> None:
        self.roots = roots
        self._digests: dict[Read, bytes] = {}

    def _digest(self, path: Read) -> bytes:
        if path not in self._digests:
            try:
                value = self.roots[path[0]]
                if len(path) > 1:
                    value = getattr(value, path[1])
                if len(path) > 2:
                    value = value[path[2]] if path[2] in value else MISSING
                self._digests[path] = hashlib.sha256(canonical_bytes(value)).digest()
            except Exception:  # noqa: BLE001 - a value that no longer exists or cannot be pickled: changed
                self._digests[path] = b"\0changed"
        return self._digests[path]

    def digest(self, paths: list[Read]) -> str:
        """One digest of every value at `paths` (sorted), the paths included."""
        total = hashlib.sha256()
        for path in paths:
            total.update(repr(path).encode() + self._digest(path))
        return total.hexdigest()


def read_paths(recorded: Any) -> list[Read] | None:
    """Paths as the marker's JSON holds them (lists of strings), or None when they are not."""
    if not isinstance(recorded, list):
        return None
    paths = []
    for item in recorded:
        if not (isinstance(item, list) and 1 <= len(item) <= 3 and all(isinstance(part, str) for part in item)):
            return None
        paths.append(tuple(item))
    return paths
