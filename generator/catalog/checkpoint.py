"""What a local checkpoint stores: each tensor's dtype, element count and bytes, read from the files'
headers and never from their weights.

safetensors files are read through the `safetensors` library (`safe_open`: the header's dtypes and
shapes, no tensor loaded), GGUF files through the `gguf` package (`GGUFReader` maps the file and
parses its header and tensor infos; the data stays on disk). A `model.safetensors.index.json`
names its shards: their headers are read when they lie beside it, and its `metadata.total_size`
gives the bytes when they do not. Nothing here is written by hand but the walk between those
files and the table of bits per safetensors dtype, which the library does not export.

Pure reading: a problem raises Invalid naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpumem.catalog.validate import Invalid

INDEX = "model.safetensors.index.json"

# Bits per element of each safetensors dtype, as the format's own Dtype::bitsize gives them
# (safetensors/src/tensor.rs of https://github.com/huggingface/safetensors, in the release pyproject.toml admits).
DTYPE_BITS = {
    "F4": 4,
    "F6_E3M2": 6,
    "F6_E2M3": 6,
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "I64": 64,
    "U64": 64,
    "F64": 64,
}
# The weight format a checkpoint is in when its largest share of bytes has one of these dtypes; packed
# integers (AWQ, GPTQ, MXFP4 blocks) say nothing alone: the config's quantization_config does.
DTYPE_FORMATS = {"BF16": "bf16", "F16": "fp16", "F32": "fp32", "F8_E4M3": "fp8"}
# GGUF's general.file_type (gguf-py's LlamaFileType) for the GGUF formats of rules.yaml.
GGUF_FORMATS = {
    "MOSTLY_Q8_0": "q8_0",
    "MOSTLY_Q6_K": "q6_k",
    "MOSTLY_Q5_K_M": "q5_k_m",
    "MOSTLY_Q4_K_M": "q4_k_m",
    "MOSTLY_Q4_0": "q4_0",
    "MOSTLY_Q3_K_M": "q3_k_m",
    "MOSTLY_Q2_K": "q2_k",
    "MOSTLY_MXFP4_MOE": "gguf_mxfp4",
}


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str  # safetensors' dtype name, or GGUF's tensor type (Q4_K, F32...)
    elements: int
    bytes: int


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's tensors (none when only an index's total is known) and its bytes in all."""

    path: Path
    tensors: tuple[Tensor, ...]
    bytes: int
    format: str | None  # the weight format its headers show, or None (packed integers, an index alone)
    named: int = 0  # tensors an index names, when their shards are not here

    @property
    def dtypes(self) -> dict[str, tuple[int, int]]:
        """Tensors and bytes per dtype, the largest share first (ties by name)."""
        found: dict[str, tuple[int, int]] = {}
        for tensor in self.tensors:
            count, size = found.get(tensor.dtype, (0, 0))
            found[tensor.dtype] = (count + 1, size + tensor.bytes)
        return dict(sorted(found.items(), key=lambda item: (-item[1][1], item[0])))

    @property
    def elements(self) -> int:
        return sum(tensor.elements for tensor in self.tensors)


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint at `path`: a .safetensors or .gguf file, a safetensors index, or a folder holding one."""
    if path.is_dir():
        return read_checkpoint(_in_folder(path))
    if not path.is_file():
        raise Invalid(f"{path}: no such file or folder")
    if path.name.endswith(".safetensors.index.json") or path.suffix == ".json":
        return _index(path)
    if path.suffix == ".gguf":
        return _gguf(path)
    if path.suffix == ".safetensors":
        tensors = tuple(_safetensors(path))
        if not tensors:
            raise Invalid(f"{path}: its header names no tensor")
        return _weighed(path, tensors)
    raise Invalid(f"{path}: expected a .safetensors or .gguf file, or a {INDEX}")


def _in_folder(folder: Path) -> Path:
    """The file of a folder that describes its checkpoint: the index, the one .safetensors, or the one .gguf."""
    if (folder / INDEX).is_file():
        return folder / INDEX
    for pattern in ("*.safetensors", "*.gguf"):
        found = sorted(folder.glob(pattern))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(item.name for item in found)
            raise Invalid(f"{folder}: {len(found)} {pattern[1:]} files and no {INDEX} ({names}): pass one file")
    raise Invalid(f"{folder}: no {INDEX}, .safetensors or .gguf file")


def _safetensors(path: Path) -> Iterable[Tensor]:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as file:
            for name in file.keys():  # noqa: SIM118 (a safe_open handle is not a mapping)
                part = file.get_slice(name)
                dtype, shape = part.get_dtype(), part.get_shape()
                if dtype not in DTYPE_BITS:
                    raise Invalid(f"{path}: {name}: dtype {dtype} is not one gpumem sizes (expected one of {', '.join(DTYPE_BITS)})")
                elements = 1
                for size in shape:
                    elements *= size
                yield Tensor(name, dtype, elements, -(-elements * DTYPE_BITS[dtype] // 8))  # sub-byte dtypes packed
    except SafetensorError as error:
        raise Invalid(f"{path}: not a safetensors file ({error})") from None


def _weighed(path: Path, tensors: tuple[Tensor, ...]) -> Checkpoint:
    """safetensors tensors as a checkpoint, in the format of the dtype holding the most bytes if it names one."""
    checkpoint = Checkpoint(path, tensors, sum(t.bytes for t in tensors), None)
    largest = next(iter(checkpoint.dtypes), None)
    return dataclasses.replace(checkpoint, format=DTYPE_FORMATS.get(largest or ""))


def _index(path: Path) -> Checkpoint:
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Invalid(f"{path}: not a readable JSON index ({error})") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map or not all(isinstance(v, str) for v in weight_map.values()):
        raise Invalid(f"{path}: weight_map: expected the tensors' shard files, got {json.dumps(weight_map)[:80]}")
    shards = sorted(set(weight_map.values()))
    elsewhere = [shard for shard in shards if "/" in shard or shard.startswith(".")]
    if elsewhere:
        raise Invalid(f"{path}: weight_map: expected shard files beside the index, got {elsewhere[0]}")
    if all((path.parent / shard).is_file() for shard in shards):
        tensors = tuple(tensor for shard in shards for tensor in _safetensors(path.parent / shard))
        missing = sorted(set(weight_map) - {tensor.name for tensor in tensors})
        if missing:
            raise Invalid(f"{path}: weight_map: {missing[0]} is in no shard ({weight_map[missing[0]]} lacks it)")
        return _weighed(path, tensors)
    metadata = index.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        absent = next(shard for shard in shards if not (path.parent / shard).is_file())
        got = json.dumps(total)
        raise Invalid(f"{path}: metadata.total_size: expected the checkpoint's bytes, got {got}, and {absent} is not beside it")
    return Checkpoint(path, (), total, None, named=len(weight_map))


def _gguf(path: Path) -> Checkpoint:
    from gguf import GGUFReader, LlamaFileType

    try:
        reader = GGUFReader(path)
    except (ValueError, OSError, IndexError, KeyError) as error:  # what gguf-py raises on a file cut short or mistyped
        raise Invalid(f"{path}: not a GGUF file ({error})") from None
    field = reader.get_field("general.file_type")
    if field is None:
        raise Invalid(f"{path}: general.file_type: expected the file's quantization, got nothing")
    kind = int(field.contents())
    try:
        name = LlamaFileType(kind).name
    except ValueError:  # a type newer than this gguf package
        name = str(kind)
    if name not in GGUF_FORMATS:
        raise Invalid(f"{path}: general.file_type: {name} is not a GGUF type gpumem counts (expected one of {', '.join(GGUF_FORMATS)})")
    tensors = tuple(Tensor(t.name, t.tensor_type.name, int(t.n_elements), int(t.n_bytes)) for t in reader.tensors)
    if not tensors:
        raise Invalid(f"{path}: its header names no tensor")
    return Checkpoint(path, tensors, sum(t.bytes for t in tensors), GGUF_FORMATS[name])
