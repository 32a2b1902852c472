"""The preview's writer (serve.py): the preview builds into a temporary folder of its own, which no
one else writes or uploads, so it needs neither the lock nor the staged swap of write.py: each
changed file is replaced where it stands, and the marker is the same as a build's."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .errors import BuildError
from .folder_ops import write_atomically
from .marker import MARKER, WriteSummary, ancestors, checked_files, count_pages, error_reason, manifest_bytes, read_manifest, read_regular


def write_in_place(out_dir: Path, files: dict[str, bytes], fingerprint: str = "", facts: dict[str, object] | None = None) -> WriteSummary:
    """The preview's writer (serve.py): a temporary folder of its own, which no one else writes or
    uploads, so each changed file is replaced where it stands (written beside it, then renamed over
    it) instead of a whole new tree being staged and swapped in; files the last build wrote and this
    one does not go, with the folders they leave empty; the marker comes last."""
    root = Path(os.path.realpath(out_dir))
    targets = checked_files(files, root)
    previous = read_manifest(root, str(out_dir / MARKER)) if root.is_dir() else None
    recorded = previous.files if previous else {}
    written = 0
    try:
        for relative, content in targets.items():
            path = root / relative
            if relative in recorded and read_regular(path) == content:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, content)
            written += 1
        gone = sorted(set(recorded) - set(targets))
        for relative in gone:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / relative)
        for folder in sorted(ancestors(gone) - ancestors(targets), key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(root / folder)  # only when empty
        write_atomically(root / MARKER, manifest_bytes(targets, fingerprint, facts))
    except OSError as error:
        raise BuildError(
            [f"{error.filename or out_dir}: cannot write: {error_reason(error)}"], "the preview may be partly updated."
        ) from None
    return WriteSummary(written, len(targets) - written, len(gone), (), count_pages(targets))
