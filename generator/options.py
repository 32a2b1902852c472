"""What a build reads and writes, and what it returns: light enough to load before the pipeline,
so the no-change check starts at once."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# No input of a build comes near this; a larger file is a mistake (or /dev/zero), not a catalog.
MAX_FILE_BYTES = 20_000_000


@dataclass(frozen=True)
class Options:
    """Where a build reads and writes: a project folder (templates/ and translations/ always,
    catalogs/ and content/ unless pointed elsewhere) and the output folder."""

    project: Path
    catalogs: Path
    content: Path
    out: Path
    host: Path  # the pass-through folder: the host's own files, copied into every build (output/hosting.py)
    prices: Path | None = None
    strict: bool = False
    force: bool = False
    jobs: int = 1

    @property
    def templates(self) -> Path:
        return self.project / "templates"

    @property
    def translations(self) -> Path:
        return self.project / "translations"

    @property
    def static(self) -> Path:
        return self.templates / "static"

    @property
    def sources(self) -> dict[str, Path]:
        """The folders a build reads, by their role (the no-change check's labels, the preview's watch)."""
        folders = {"catalogs": self.catalogs, "content": self.content, "templates": self.templates, "translations": self.translations}
        return {**folders, "host": self.host}


def project_options(
    project: Path | None = None,
    *,
    catalogs: Path | None = None,
    content: Path | None = None,
    out: Path | None = None,
    host: Path | None = None,
    **rest: Any,
) -> Options:
    """Options for a project folder (default: the current one), with any folder pointed elsewhere."""
    root = (project or Path.cwd()).absolute()
    return Options(root, catalogs or root / "catalogs", content or root / "content", out or root / "site", host or root / "host", **rest)


def template_cache(project: Path) -> Path | None:
    """A folder of this user's own for compiled templates (GPUMEM_CACHE, else the XDG cache), one per
    project; None when it cannot be made, and the build compiles everything as before."""
    base = os.environ.get("GPUMEM_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpumem")
    folder = Path(base) / hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError:
        return None
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        return None  # compiled code is run as it is read: only from a folder no one else can write
    return folder


def parallel_jobs() -> int:
    """Rendering processes worth starting: two where fork exists and two CPUs are ours, else one.

    Measured: two forked renderers take a 5-language build from 1.01 s to 0.58 s
    on 2 cores and gain nothing on 1; without fork (Windows) a spawned process would re-import
    everything and cost more than it saves.
    """
    if not hasattr(os, "fork"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(2, cpus)


@dataclass(frozen=True)
class WriteSummary:
    """What a write did, counted against the site it replaced."""

    written: int
    unchanged: int
    removed: int
    notes: tuple[str, ...] = ()  # what the writer did besides the build: a killed build's folder reused
    pages: int = 0  # the HTML files of the site


@dataclass(frozen=True)
class BuildResult:
    summary: WriteSummary
    seconds: float
    warnings: tuple[str, ...]
    pages: int
    rendered: int = 0  # of the pages: how many were rendered (the preview keeps the others from its last build)


def built_line(result: BuildResult) -> str:
    """What `gpumem build` prints when it is done."""
    summary = result.summary
    files = f"{summary.written} file{'s' if summary.written != 1 else ''} written"
    return (
        f"{result.pages} pages, {result.rendered} rendered; {files}, {summary.unchanged} unchanged, "
        f"{summary.removed} removed in {result.seconds:.2f} s"
    )
