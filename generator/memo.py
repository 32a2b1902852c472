"""What a build computes before rendering, kept for the next build: the validated catalog, every
page's figures and the compiled translations, the outcome of reading and checking the catalogs,
the snapshots and the translations, and of the engines.

None of that reads the content's Markdown or the templates, so a build after a content or template
edit takes it from here instead of loading, validating and computing everything again (a content
edit then renders one page). It is keyed on the digest of all it depends on: every input file but
the Markdown and the templates (content/site.yaml included), this package's code, Python's and the
libraries' versions, a --prices file's path, and the day (price checks are dated). A build at an
earlier moment than the one that stored it computes again: a snapshot in the future is checked
against the clock, and only a later clock is sure to find none.

It is kept in this process (the preview rebuilds in one) and in the folder of compiled templates
(options.template_cache: this user's own, so what it reads was written by this user), as a pickle
replaced whole. Anything that goes wrong reading or writing it only costs the time it would save.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .fingerprint import dependency_versions, update_digest
from .options import keep

FILE = "computed.pickle"


@dataclass(frozen=True)
class Computed:
    """A build's validated catalog, its figures, its languages' compiled strings, and the moment
    they were checked at."""

    key: str
    catalog: Any  # records.Catalog (not imported: this module loads before the pipeline)
    figures: Any  # figures.SiteFigures
    messages: dict[str, bytes]  # by language, its .mo (render.compile_translations)
    checked_at: datetime


_held: list[Computed] = []  # the last one of this process


def _read(label: str) -> bool:
    """Whether the computed part of a build reads this input: all but the Markdown and the templates."""
    return not label.startswith("templates/") and not (label.startswith("content/") and label.endswith(".md"))


def computed_key(files: dict[str, bytes], prices: Path | None, now: datetime) -> str:
    """The digest of all the computed part of a build depends on (see the module docstring)."""
    digest = hashlib.sha256()
    for label, content in files.items():
        if _read(label):
            update_digest(digest, label, content)
    digest.update("|".join([*dependency_versions(), str(prices), now.date().isoformat()]).encode())
    return digest.hexdigest()


def recall(folder: Path | None, key: str, now: datetime) -> Computed | None:
    """What a build with this key computed, if one did, no later than `now`."""
    found = next((held for held in _held if held.key == key), None)
    if found is None and folder is not None:
        with contextlib.suppress(Exception):  # a missing, partial or foreign file: compute again
            with open(folder / FILE, "rb") as stream:
                loaded = pickle.load(stream)
            found = loaded if isinstance(loaded, Computed) and loaded.key == key else None
    if found is None or found.checked_at > now:
        return None
    _held[:] = [found]
    return found


def remember(folder: Path | None, computed: Computed) -> None:
    """Keep what a build computed, in this process and in the cache folder (replaced whole)."""
    _held[:] = [computed]
    if folder is None:
        return
    try:
        content = pickle.dumps(computed, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a figure that cannot be pickled: nothing is kept
        return
    keep(folder / FILE, content)
