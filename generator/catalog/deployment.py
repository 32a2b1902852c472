"""rules.yaml's deployment block (weight and KV formats, the runtime's own memory, its batch defaults) and its
engines block (the engine versions those figures follow)."""

from __future__ import annotations

import re
from typing import Any

from gpumem.catalog.validate import Entry, Invalid, at_most, citation, describe, fraction, one_of, positive_int, positive_number, slug, text
from gpumem.engines import gguf
from gpumem.engines.deployment import GIB
from gpumem.records.catalog import STATE_KINDS
from gpumem.records.engines import DeploymentRules, EnginePin, KvFormat, WeightFormat

COMMIT = re.compile(r"[0-9a-f]{7,40}")  # a commit id, whole or abbreviated as a release records it
SCOPES = ("all", "linear", "experts", "tensors")
RUNTIMES = ("vllm", "llama.cpp")
RUNTIME_FIELDS = (
    "utilization",
    "non_torch_gib",
    "parallel_gib",
    "activation_gib",
    "sampler_bytes",
    "cuda_graph_gib",
    "llamacpp_batch",
    "llamacpp_copies",
    "source",
)
BATCH_FIELDS = ("huge_card_gib", "large_card_gib", "large_card_exceptions", "huge", "large", "small", "in_flight", "source")


def _alignments(value: Any) -> dict[str, int]:
    """Tokens a hybrid's block size is a multiple of, for each state kind the catalog knows."""
    if not isinstance(value, dict) or set(value) != set(STATE_KINDS):
        raise Invalid(f"expected a mapping of each state kind ({', '.join(STATE_KINDS)}) to its tokens, got {describe(value)}")
    return {kind: at_most(positive_int, 100_000)(value[kind]) for kind in STATE_KINDS}


def read_deployment(top: Entry, sources: dict[str, str]) -> DeploymentRules | None:
    """The deployment block of rules.yaml, every constant with its source."""
    section = top.section("deployment")
    if section is None:
        return None
    section.check_keys(("weight_formats", "kv_formats", "runtime", "state", "batch"))
    weights = named_table(section, "weight_formats", _weight_format, sources)
    kvs = named_table(section, "kv_formats", _kv_format, sources)
    runtime, state, batch = section.section("runtime"), section.section("state"), section.section("batch")
    values: dict[str, Any] = {}
    if runtime is not None:
        runtime.check_keys(RUNTIME_FIELDS)
        sources["deployment.runtime"] = runtime.get("source", citation) or ""
        values.update(
            utilization=runtime.get("utilization", fraction),
            non_torch_bytes=_gib(runtime.get("non_torch_gib", at_most(positive_number, 1_000))),
            parallel_bytes=_gib(runtime.get("parallel_gib", at_most(positive_number, 1_000))),
            activation_bytes=_gib(runtime.get("activation_gib", at_most(positive_number, 1_000))),
            sampler_bytes=runtime.get("sampler_bytes", at_most(positive_number, 1_000)),
            cuda_graph_bytes=_gib(runtime.get("cuda_graph_gib", at_most(positive_number, 1_000))),
            llamacpp_batch=runtime.get("llamacpp_batch", at_most(positive_int, 1_000_000)),
            llamacpp_copies=runtime.get("llamacpp_copies", at_most(positive_int, 64)),
        )
    if state is not None:
        state.check_keys(("blocks", "alignment", "source"))
        sources["deployment.state"] = state.get("source", citation) or ""
        values.update(state_blocks=state.get("blocks", at_most(positive_int, 64)), state_alignment=state.get("alignment", _alignments))
    if batch is not None:
        batch.check_keys(BATCH_FIELDS)
        sources["deployment.batch"] = batch.get("source", citation) or ""
        values.update(huge_card_gib=batch.get("huge_card_gib", at_most(positive_number, 100_000)))
        values.update(large_card_gib=batch.get("large_card_gib", at_most(positive_number, 100_000)))
        values.update(in_flight_batches=batch.get("in_flight", at_most(positive_int, 64)))
        values.update(large_card_exceptions=tuple(batch.get("large_card_exceptions", _slugs, default=()) or ()))
        for size in ("huge", "large", "small"):
            limits = batch.section(size)
            if limits is not None:
                limits.check_keys(("tokens", "sequences"))
                values[f"{size}_batch_tokens"] = limits.get("tokens", at_most(positive_int, 10_000_000))
                values[f"{size}_batch_sequences"] = limits.get("sequences", at_most(positive_int, 1_000_000))
                batch.failed = batch.failed or limits.failed
    parts = [s for s in (runtime, state, batch) if s is not None]
    section.failed = section.failed or any(part.failed for part in parts)
    top.failed = top.failed or section.failed
    if section.failed or weights is None or kvs is None or any(v is None for v in values.values()):
        return None  # every missing or wrong value was reported where it stands
    return DeploymentRules(weight_formats=weights, kv_formats=kvs, **values)


def read_engines(top: Entry, sources: dict[str, str]) -> dict[str, EnginePin] | None:
    """The engines block: one pinned version per runtime, each with its commit and why it is that version."""
    section = top.section("engines")
    if section is None:
        return None
    section.check_keys(RUNTIMES)
    pins = {}
    for name in RUNTIMES:
        entry = section.section(name)
        if entry is None:
            continue
        entry.check_keys(("version", "commit", "source"))
        version, commit = entry.get("version", text), entry.get("commit", _commit)
        sources[f"engines.{name}"] = entry.get("source", citation) or ""
        section.failed = section.failed or entry.failed
        if version is not None and commit is not None and not entry.failed:
            pins[name] = EnginePin(name, version, commit, sources[f"engines.{name}"])
    top.failed = top.failed or section.failed
    return None if section.failed else pins


def _commit(value: Any) -> str:
    if not isinstance(value, str) or not COMMIT.fullmatch(value):
        raise Invalid(f"expected a commit of 7 to 40 lowercase hex digits, got {describe(value)}")
    return value


def _gib(value: float | None) -> float | None:
    return None if value is None else value * GIB


def _slugs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return (slug(value),)
    return tuple(slug(item) for item in value)


def named_table(section: Entry, name: str, read: Any, sources: dict[str, str], block: str = "deployment") -> dict[str, Any] | None:
    """A table of named entries, each read by `read` from its own mapping with a source."""
    table = section.section(name)
    if table is None:
        return None
    found = {}
    for key in table.data:
        entry = table.section(str(key))
        if entry is None:
            continue
        value = read(entry, slug(key) if isinstance(key, str) else str(key))
        sources[f"{block}.{name}.{key}"] = entry.get("source", citation) or ""
        table.failed = table.failed or entry.failed
        if value is not None and not entry.failed:
            found[str(key)] = value
    section.failed = section.failed or table.failed
    return None if table.failed else found


def _weight_format(entry: Entry, name: str) -> WeightFormat | None:
    entry.check_keys(("label", "bits", "scope", "runtime", "pad_to", "file_type", "source"))
    scope = entry.get("scope", one_of(SCOPES, "scope"))
    values = dict(
        label=entry.get("label", text),
        bits=entry.get("bits", at_most(positive_number, 64)),
        scope=scope,
        runtime=entry.get("runtime", one_of(RUNTIMES, "runtime")),
        pad_to=entry.get("pad_to", at_most(positive_int, 65_536), required=False, default=0),
        file_type=entry.get("file_type", one_of(gguf.FILE_TYPES, "GGUF file type"), required=scope == "tensors", default=""),
    )
    if values["file_type"] and scope != "tensors":
        entry.report(entry.data.line_of("file_type"), "file_type", f"only a format of scope tensors has one (this one's is {scope})")
    return None if entry.failed else WeightFormat(name=name, **values)


def _kv_format(entry: Entry, name: str) -> KvFormat | None:
    entry.check_keys(("label", "bytes", "runtime", "source"))
    values = dict(
        label=entry.get("label", text),
        bytes=entry.get("bytes", at_most(positive_number, 16)),
        runtime=entry.get("runtime", one_of(RUNTIMES, "runtime")),
    )
    return None if entry.failed else KvFormat(name=name, **values)
