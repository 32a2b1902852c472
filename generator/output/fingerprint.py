"""The no-change check: a digest of every file a build reads, taken before the pipeline is loaded.

A build's output depends on its input files, this package's code, the libraries it declares and
Python, and on the clock only through checks (a snapshot in the future, an old snapshot's
warning). So a live version whose record (output/versions.py, in the hidden folder beside the output,
not in the published site) holds the same digest, built at a time whose checks still hold, and
whose files are as recorded, is the site this build would write: the build stops there, without
importing Jinja, Babel or YAML. Only click and this module's few imports are loaded before it.

The preview keeps its last build in memory (build.Session) and renders again only the pages whose
key (page_keys) changed, and computes the figures again only when their key (computed_key) did.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpumem.catalog.files import input_tree
from gpumem.catalog.files import label as shown
from gpumem.errors import BuildError
from gpumem.options import MAX_FILE_BYTES, BuildResult, Options
from gpumem.output.versions import Output

CODE = Path(__file__).resolve().parent.parent  # this package's own code (every stage), part of the fingerprint
SKIPPED = ("__pycache__",)
SKIPPED_SUFFIXES = (".pyc", ".mo")
FOLDER = b"\0a folder"
REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9._-]+")


def input_files(options: Options) -> list[tuple[str, Path | None]]:
    """Every entry a build may read (catalog/files.py: through links, as the loaders read), labelled
    by its folder's role and its path below it; a folder's label ends in '/' and has no path to
    read, so that a folder where a file is expected (a snapshot's name, say) is an input too."""
    folders = {**options.sources, "code": CODE}
    named: list[tuple[str, Path | None]] = [("snapshot", options.prices)] if options.prices is not None else []
    for role, folder in folders.items():
        for item in input_tree(folder, SKIPPED):
            if item.kind != "file":
                named.append((f"{role}/{item.relative}/", None))
            elif item.path.suffix not in SKIPPED_SUFFIXES:
                named.append((f"{role}/{item.relative}", item.path))
    return named


@functools.cache
def dependency_versions() -> tuple[str, ...]:
    """name=version of Python and of every library gpumem declares (a new release may render otherwise).

    Read from the distributions' folder names on sys.path (`jinja2-3.1.6.dist-info`) and gpumem's own
    METADATA, as importlib.metadata finds them but some 25 ms sooner, which is a quarter of a
    no-change rebuild; importlib.metadata answers where that reading finds nothing to go on."""
    found = _distributions()
    own = found.get("gpumem")
    declared = _declared(own[1]) if own else None
    if declared is None:
        return _dependency_versions_slowly()
    names = sorted({_normal(name) for name in declared})
    return (f"python={sys.version}", *(f"{name}={found[name][0] if name in found else 'absent'}" for name in names))


def _normal(name: str) -> str:
    """A distribution's name as its folder spells it (PEP 503, with underscores)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _distributions() -> dict[str, tuple[str, Path]]:
    """Each distribution's version and .dist-info folder, the first on sys.path winning."""
    found: dict[str, tuple[str, Path]] = {}
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info") and "-" in name:
                project, _, version = name.removesuffix(".dist-info").partition("-")
                found.setdefault(_normal(project), (version, Path(entry or ".", name)))
    return found


def _declared(info: Path) -> list[str] | None:
    """The libraries a .dist-info folder's METADATA requires outside extras; None when unreadable."""
    try:
        text = (info / "METADATA").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    head = text.split("\n\n", 1)[0]
    requirements = [line.removeprefix("Requires-Dist:").strip() for line in head.splitlines() if line.startswith("Requires-Dist:")]
    return [match.group(0) for item in requirements if "extra ==" not in item if (match := REQUIREMENT_NAME.match(item))]


def _dependency_versions_slowly() -> tuple[str, ...]:
    """dependency_versions by importlib.metadata (a source folder not installed: Python's alone)."""
    import importlib.metadata

    try:
        declared = importlib.metadata.requires("gpumem") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source folder, not installed
        declared = []
    names = sorted({_normal(match.group(0)) for item in declared if "extra ==" not in item if (match := REQUIREMENT_NAME.match(item))})
    return (f"python={sys.version}", *(f"{name}={_version(name)}" for name in names))


def _version(name: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def refuse_output_among_inputs(options: Options) -> None:
    """A BuildError when the output path is a folder a build reads or lies in one: its versions, its
    records and the lock beside it would be read as inputs (published as assets, below
    templates/static/), and no build would ever find nothing changed."""
    given = Path(options.out).absolute()
    out = Path(os.path.realpath(given.parent)) / given.name
    for folder in [*options.sources.values(), CODE]:
        real = Path(os.path.realpath(folder))
        if real == out or real in out.parents:
            where = "a folder a build reads" if real == out else f"inside {shown(folder)}, which a build reads"
            raise BuildError([f"{shown(options.out)}: {where}; put the output outside every input folder"])


def read_inputs(options: Options) -> dict[str, bytes]:
    """Every input file's bytes by its label (input_files), once the output is known to lie outside them."""
    refuse_output_among_inputs(options)
    return {label: _bounded_bytes(path) if path is not None else FOLDER for label, path in input_files(options)}


def update_digest(digest: Any, label: str, content: bytes) -> None:
    digest.update(f"{label}\0{len(content)}\0".encode() + content)


def fingerprint(options: Options, files: dict[str, bytes] | None = None) -> str:
    """A digest of everything the output can depend on but the clock (see the module docstring)."""
    digest = hashlib.sha256()
    for label, content in (files if files is not None else read_inputs(options)).items():
        update_digest(digest, label, content)
    digest.update("|".join(dependency_versions()).encode())
    return digest.hexdigest()


def _own(label: str) -> bool:
    """Inputs that only some pages read: a language's strings, a page's Markdown."""
    return label.startswith("translations/") or (label.startswith("content/") and label.endswith(".md"))


def computed_key(files: dict[str, bytes], prices: Path | None, now: datetime) -> str:
    """The digest of all the figures, the catalog and the compiled strings depend on: every input
    but the Markdown and the templates, the code, the libraries, --prices and the day (price
    checks are dated)."""
    digest = hashlib.sha256()
    for label, content in files.items():
        if not label.startswith("templates/") and not (label.startswith("content/") and label.endswith(".md")):
            update_digest(digest, label, content)
    digest.update("|".join([*dependency_versions(), str(prices), now.date().isoformat()]).encode())
    return digest.hexdigest()


def page_keys(files: dict[str, bytes], pages: Iterable[tuple[str, str, str]], day: str) -> dict[str, str]:
    """For each page (its output, its language, its content file's label or ""), a digest of all
    that its rendering reads: every input but other languages' strings and other pages' Markdown,
    and the day. A page whose key is the one it had is the same page: editing one content file
    renders one page again (build.Session)."""
    shared = hashlib.sha256(day.encode())
    for label, content in files.items():
        if not _own(label):
            update_digest(shared, label, content)
    shared.update("|".join(dependency_versions()).encode())
    strings: dict[str, bytes] = {}
    keys = {}
    for output, lang, content_label in pages:
        if lang not in strings:  # "": every language's (the language choice, the sitemap)
            language = hashlib.sha256()
            for label in sorted(label for label in files if label.startswith(f"translations/{lang}/" if lang else "translations/")):
                update_digest(language, label, files[label])
            strings[lang] = language.digest()
        digest = hashlib.sha256(shared.digest() + strings[lang])
        update_digest(digest, output, files.get(content_label, b"\0none") if content_label else b"")
        keys[output] = digest.hexdigest()
    return keys


def _bounded_bytes(path: Path) -> bytes:
    """An input file's bytes, at most one past the loader's limit; a mark for anything else (a
    device, a pipe, a missing file), whose problem the build that follows reports."""
    try:  # non-blocking: a pipe is never waited on
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return b"\0not a readable regular file"
    with os.fdopen(fd, "rb") as stream:
        return stream.read(MAX_FILE_BYTES + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b"\0not a readable regular file"


def clock(now: datetime | None) -> str:
    """A UTC time as records hold it (whole seconds, so the text sorts as the time does)."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stale_warning(snapshot: str, taken_at: datetime, stale_after_days: float, now: datetime) -> str | None:
    """The warning for a snapshot older than stale_after_days (content/site.yaml), or None."""
    days = (now - taken_at).total_seconds() / 86400
    if days <= stale_after_days:
        return None
    return (
        f"warning: price snapshot {snapshot} is {days:.0f} days old "
        f"(older than stale_after_days = {stale_after_days:g}); import a newer one"
    )


def clock_facts(not_before: datetime, snapshot: str, taken_at: datetime, stale_after_days: float) -> dict[str, object]:
    """What the no-change check needs to know of the inputs besides their bytes: from when no
    snapshot is in the future any more, and what makes the snapshot old."""
    return {"not_before": clock(not_before), "snapshot": snapshot, "taken_at": clock(taken_at), "stale_after_days": stale_after_days}


def _still_holds(facts: dict[str, object], now: datetime, strict: bool, warnings: list[str]) -> bool:
    """Whether a build now from the inputs these facts describe gives the same outcome; its warnings."""
    not_before, snapshot, taken_at, days = (facts.get(key) for key in ("not_before", "snapshot", "taken_at", "stale_after_days"))
    if not (isinstance(not_before, str) and isinstance(snapshot, str) and isinstance(taken_at, str)):
        return False
    if not isinstance(days, (int, float)) or clock(now) < not_before:
        return False
    warning = stale_warning(snapshot, datetime.fromisoformat(taken_at), days, now)
    if warning is not None and strict:
        return False  # the build says it is an error
    warnings.extend([warning] if warning else [])
    return True


def unchanged(options: Options, now: datetime | None = None, stamp: str | None = None) -> BuildResult | None:
    """The result of a build that finds the output's live version built from these inputs (whose
    fingerprint is `stamp`, when the caller has taken it), whose checks of the clock still hold;
    None when it has to build (or --force says so)."""
    if options.force:
        return None
    started = time.perf_counter()
    stamp, moment = stamp or fingerprint(options), now or datetime.now(UTC)
    warnings: list[str] = []
    summary = Output(options.out).published(stamp, lambda facts: _still_holds(facts, moment, options.strict, warnings))
    if summary is None:
        return None
    return BuildResult(summary, time.perf_counter() - started, tuple(warnings), summary.pages)
