"""`gpumem estimate --checkpoint`: a local checkpoint read from its headers (catalog/checkpoint.py),
checked against the model it is said to be, and written out as text and JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpumem.catalog.checkpoint import Checkpoint, read_checkpoint
from gpumem.catalog.models import HF_PAGE
from gpumem.catalog.validate import Invalid
from gpumem.errors import BuildError
from gpumem.records.catalog import Model

# How far an unpacked checkpoint's element count may stray from the model's parameters: FP8
# checkpoints add their scales (one per output channel or block of 128 x 128, under 1 %), and a
# checkpoint may store a tied embedding once or twice.
ELEMENTS_SLACK = 0.02


def weighed_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint --checkpoint names, read from its headers, or a BuildError naming the file and field."""
    try:
        return read_checkpoint(path)
    except Invalid as error:
        raise BuildError([f"--checkpoint: {error}"]) from None


def checkpoint_text(checkpoint: Checkpoint) -> str:
    """What the checkpoint's headers gave: its tensors by dtype, or an index's total alone."""
    if not checkpoint.tensors:
        return f"{checkpoint.bytes:,} bytes ({checkpoint.named:,} tensors; their shards are not beside the index: its metadata.total_size)"
    parts = ", ".join(f"{dtype} {count:,} ({size:,} bytes)" for dtype, (count, size) in checkpoint.dtypes.items())
    return f"{checkpoint.bytes:,} bytes in {len(checkpoint.tensors):,} tensors of {checkpoint.elements:,} elements: {parts}"


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    dtypes = {dtype: {"tensors": count, "bytes": size} for dtype, (count, size) in checkpoint.dtypes.items()}
    tensors = len(checkpoint.tensors) or checkpoint.named
    return {"path": str(checkpoint.path), "bytes": checkpoint.bytes, "tensors": tensors, "elements": checkpoint.elements, "dtypes": dtypes}


def checkpoint_problems(checkpoint: Checkpoint | None, model: Model, weights: str) -> list[str]:
    """Where the checkpoint cannot be the one asked for: another format than --weights, or a count of
    weights that is not the model's (packed integers and an index alone give no count)."""
    if checkpoint is None or checkpoint.format is None:
        return []
    if weights != checkpoint.format:
        return [f"--weights: {weights} is not the checkpoint's format: the headers of {checkpoint.path} show {checkpoint.format}"]
    params = round(model.params_b * 1e9)
    if checkpoint.tensors and abs(checkpoint.elements - params) > ELEMENTS_SLACK * params:
        said = f"{checkpoint.path} holds {checkpoint.elements:,} weights and {model.name} has {params:,}"
        return [f"--checkpoint: {said}: the checkpoint of another model? (at most {ELEMENTS_SLACK:.0%} apart)"]
    return []


def checkpoint_repos(checkpoint: Checkpoint, model: Model, source: str | None, kept: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """`gpumem models add --checkpoint`: the draft's repos entry for the checkpoint's format, with its bytes;
    the repository is the one --source names on Hugging Face, else left to fill."""
    fmt = checkpoint.format or model.release
    problems = checkpoint_problems(checkpoint, model, fmt)
    if problems:
        raise BuildError(problems)
    page = HF_PAGE.fullmatch(source or "")
    entry: dict[str, Any] = {"repo": page.group(1) if page else "TODO: owner/name on Hugging Face"}
    if checkpoint.path.suffix == ".gguf":
        entry["file"] = checkpoint.path.name
    entry["bytes"] = checkpoint.bytes
    if kept:
        entry["kept"] = list(kept)
    entry["source"] = source or "TODO: the page of the checkpoint's files"
    return {fmt: entry}
