"""Stage 5, the only code that touches the output folder."""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .errors import BuildError

MARKER = ".gpumem-site"


@dataclass(frozen=True)
class WriteSummary:
    written: int
    unchanged: int
    removed: int


def _target(root: Path, relative: str) -> Path:
    """The file's path, refusing anything that would land outside the output folder."""
    target = (root / relative).resolve()
    if root != target and root not in target.parents:
        raise BuildError([f"{relative}: refusing to write outside {root}"])
    return target


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _manifest(root: Path) -> dict:
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def up_to_date(out_dir: Path, fingerprint: str) -> WriteSummary | None:
    """The summary of a rebuild that would change nothing, or None when the folder needs a build.

    The folder is up to date when its manifest records this fingerprint of the inputs and every
    file it lists is there with the bytes it recorded; any other file is removed, as a build would.
    """
    root = out_dir.resolve()
    manifest = _manifest(root)
    if manifest.get("fingerprint") != fingerprint:
        return None
    recorded = manifest.get("files", {})
    for relative, digest in recorded.items():
        try:
            if _digest((root / relative).read_bytes()) != digest:
                return None
        except OSError:
            return None
    keep = {_target(root, relative) for relative in recorded}
    removed = _remove_others(root, {*keep, root / MARKER})
    return WriteSummary(0, len(recorded), removed)


def write_site(out_dir: Path, files: dict[str, bytes] | list[tuple[str, bytes]], fingerprint: str = "") -> WriteSummary:
    """Write every file whose bytes changed, and remove the files that no longer belong.

    Refuses a path given twice, and refuses to empty a folder it did not create. Records the
    inputs' fingerprint and each file's digest in the folder's marker, for up_to_date.
    """
    items = list(files.items()) if isinstance(files, dict) else list(files)
    seen: set[str] = set()
    for relative, _ in items:
        if relative in seen:
            raise BuildError([f"{relative}: written twice in one build"])
        seen.add(relative)
    root = out_dir.resolve()
    if root.exists() and not root.is_dir():
        raise BuildError([f"{out_dir}: not a folder; refusing to replace it"])
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        raise BuildError([f"{out_dir}: not empty and not a gpumem site (no {MARKER}); refusing to replace it"])
    targets = {_target(root, relative): content for relative, content in items}
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text(json.dumps({"fingerprint": "", "files": {}}), encoding="utf-8")
    # Creating files is slow on some disks (about 1 ms each here); a few threads overlap the waits.
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            changed = list(pool.map(_sync, targets.items()))
    except OSError as error:
        raise BuildError([f"{error.filename or out_dir}: cannot write: {error.strerror or error}"]) from None
    written = sum(changed)
    unchanged = len(changed) - written
    removed = _remove_others(root, {*targets, root / MARKER})
    manifest = {
        "about": "Built by gpumem: files here are replaced on every build.",
        "fingerprint": fingerprint,
        "files": {relative: _digest(content) for relative, content in sorted(items)},
    }
    (root / MARKER).write_text(json.dumps(manifest, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return WriteSummary(written, unchanged, removed)


def _sync(item: tuple[Path, bytes]) -> bool:
    """Write one file unless it already holds these bytes; True when written."""
    target, content = item
    try:
        if target.read_bytes() == content:
            return False
    except FileNotFoundError:  # a new file: nothing to replace atomically
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        return True
    temporary = target.with_name(target.name + ".tmp")  # an old file is replaced in one step
    temporary.write_bytes(content)
    os.replace(temporary, target)
    return True


def _remove_others(root: Path, keep: set[Path]) -> int:
    """Delete files that this build did not write, then folders left empty."""
    removed = 0
    for folder, _subfolders, names in os.walk(root, topdown=False):
        base = Path(folder)
        for name in names:
            path = base / name
            if path not in keep:
                path.unlink()
                removed += 1
        if base != root and not any(base.iterdir()):
            base.rmdir()
    return removed
