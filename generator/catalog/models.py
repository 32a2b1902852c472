"""models.yaml: one typed Model per entry, with its licence, its experts and its attention as data."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from gpumem.catalog.validate import (
    Entry,
    Invalid,
    at_most,
    boolean,
    describe,
    entries,
    one_of,
    positive_int,
    positive_number,
    prose,
    slug,
    text,
    unique,
    url,
)
from gpumem.engines import gguf
from gpumem.errors import Problems
from gpumem.records.catalog import (
    KEPT_PARTS,
    LICENSE_KINDS,
    NON_EXPERTS,
    STATE_KINDS,
    Architecture,
    Attention,
    Experts,
    License,
    Model,
    Repo,
    State,
)

MAX_PARAMS_B = 100_000
MODEL_FIELDS = (
    "id name family size_label params_b active_params_b layers hidden heads kv_heads head_dim native_context attention "
    "vocab tied_embeddings intermediate blocks_per_layer experts state vision_params_b mtp_params_b release repos license source notes"
).split()
EXPERT_FIELDS = ("count", "active", "intermediate", "shared", "dense_layers", "projections", "width")
ATTENTION_FIELDS = {
    "full": ("kind", "global_kv_heads", "global_head_dim"),
    "sliding": ("kind", "window", "sliding_layers", "global_kv_heads", "global_head_dim"),
    "chunked": ("kind", "window", "sliding_layers"),
    "mla": ("kind", "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "v_head_dim", "index_bytes"),
}
# DSA's indexer: an MLA model without one caches the latent alone; DeepSeek-V2-Lite projects its queries directly.
# Gemma 4's full layers keep their own KV heads and head size beside its sliding layers'.
OPTIONAL_ATTENTION = ("index_bytes", "q_lora_rank", "global_kv_heads", "global_head_dim")
# Words beside the numbers: a config's qk_norm_type where its q and k norms span every head (MiniMax M2); per-head
# norms change no figure.
ATTENTION_WORDS = {"full": ("qk_norm",)}
QK_NORMS = ("per_layer",)
STATE_FIELDS = ("kind", "layers", "conv", "recurrent", "recurrent_bytes", "mlp_layers")


def read_models(data: Any, path: str, problems: Problems, formats: set[str] | None = None) -> tuple[Model, ...]:
    """models.yaml: one typed Model per entry; a release format must be one rules.yaml declares."""
    release = one_of(formats, "weight format") if formats else slug
    models: list[Model] = []
    seen: dict[Any, int] = {}
    for item, ident in entries(data, "models", path, problems):
        entry = Entry(problems, path, item, ident)
        entry.check_keys(MODEL_FIELDS)
        model_id = entry.get("id", slug)
        unique(entry, "id", model_id, seen)
        params = entry.get("params_b", at_most(positive_number, MAX_PARAMS_B))
        active = entry.get("active_params_b", at_most(positive_number, MAX_PARAMS_B), required=False)
        if params and active and active > params:
            entry.report(item.line_of("active_params_b"), "active_params_b", f"{active} is more than params_b ({params})")
        layers = entry.get("layers", at_most(positive_int, 1_000))
        heads = entry.get("heads", at_most(positive_int, 4_096))
        kv_heads = entry.get("kv_heads", at_most(positive_int, 4_096))
        if heads and kv_heads and heads % kv_heads:
            entry.report(item.line_of("kv_heads"), "kv_heads", f"{kv_heads} does not divide heads ({heads})")
        attention = read_attention(entry, layers)
        if item.get("family") in gguf.FUSED_QKV:
            attention = dataclasses.replace(attention, fused_qkv=True)
        fields = dict(
            name=entry.get("name", text),
            family=entry.get("family", text),
            size_label=entry.get("size_label", text),
            native_context=entry.get("native_context", at_most(positive_int, 100_000_000)),
            license=read_license(entry),
            source=entry.get("source", url),
            notes=entry.get("notes", prose, required=False, default=""),
            release=entry.get("release", release, required=False, default="bf16"),
            vision_params_b=entry.get("vision_params_b", at_most(positive_number, MAX_PARAMS_B), required=False, default=0.0),
            mtp_params_b=entry.get("mtp_params_b", at_most(positive_number, MAX_PARAMS_B), required=False, default=0.0),
        )
        shape = dict(
            head_dim=entry.get("head_dim", at_most(positive_int, 4_096)),
            hidden=entry.get("hidden", at_most(positive_int, 1_000_000)),
            vocab=entry.get("vocab", at_most(positive_int, 10_000_000)),
            tied_embeddings=entry.get("tied_embeddings", boolean),
            intermediate=entry.get("intermediate", at_most(positive_int, 10_000_000)),
            blocks_per_layer=entry.get("blocks_per_layer", _either(1, 2), required=False, default=2),
            experts=read_experts(entry, layers, active is not None),
            state=read_state(entry, layers),
        )
        fields["repos"] = read_repos(entry, formats, fields["release"], fields["source"])
        kept_attention = any("attention" in repo.kept for repo in fields["repos"].values())
        if kept_attention and attention.kind == "mla":
            entry.report(item.line_of("repos"), "repos", "kept: attention is counted for grouped-query attention, not MLA")
        if kept_attention and attention.global_head_dim:
            problem = "kept: attention is counted for layers of one size, not Gemma 4's full layers of their own"
            entry.report(item.line_of("repos"), "repos", problem)
        if shape["experts"] is None and any(NON_EXPERTS in repo.kept for repo in fields["repos"].values()):
            entry.report(item.line_of("repos"), "repos", "kept: non_experts is every weight but the routed experts, and the model has none")
        if not entry.failed:
            arch = Architecture(layers, heads, kv_heads, attention=attention, **shape)
            models.append(Model(id=model_id, params_b=params, active_params_b=active, arch=arch, **fields))
    return tuple(models)


LICENSE_FIELDS = ("name", "kind", "url")
REPO_FIELDS = ("repo", "file", "bytes", "kept", "source")
MAX_CHECKPOINT_BYTES = 10**15  # a petabyte: above the largest model the calculator takes, at 32 bits
HF_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
HF_PAGE = re.compile(r"https://huggingface\.co/([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(/.*)?")


def hf_repo(value: Any) -> str:
    if not isinstance(value, str) or not HF_REPO.fullmatch(value):
        raise Invalid(f"expected a Hugging Face repository as owner/name, got {describe(value)}")
    return value


def gguf_file(value: Any) -> str:
    name = text(value)
    if not name.endswith(".gguf") or "/" in name:
        raise Invalid(f"expected a GGUF file name ending in .gguf, got {describe(value)}")
    return name


def read_repos(entry: Entry, formats: set[str] | None, release: str | None, source: str | None) -> dict[str, Repo]:
    """Where each weight format of the model is published, each with its source. The release format's
    repository is the one the model's `source` (its config.json on Hugging Face) lives in, unless given."""
    found: dict[str, Repo] = {}
    if release and source and (page := HF_PAGE.fullmatch(source)):
        found[release] = Repo(release, page.group(1), source)
    section = entry.section("repos") if "repos" in entry.data else None
    if section is None:
        return found
    known = one_of(formats, "weight format") if formats else slug
    for key in section.data:
        try:
            name = known(key)
        except Invalid as error:
            section.report(section.data.line_of(key), str(key), str(error))
            section.failed = True
            continue
        item = section.section(str(key))
        if item is None:
            continue
        item.check_keys(REPO_FIELDS)
        repo, file = item.get("repo", hf_repo), item.get("file", gguf_file, required=False, default="")
        size = item.get("bytes", at_most(positive_int, MAX_CHECKPOINT_BYTES), required=False, default=0)
        kept = item.get("kept", _kept_parts, required=False, default=())
        where = item.get("source", url)
        section.failed = section.failed or item.failed
        if repo and where and not item.failed:
            found[name] = Repo(name, repo, where, file or "", size or 0, kept or ())
    entry.failed = entry.failed or section.failed
    return found


def _kept_parts(value: Any) -> tuple[str, ...]:
    """The parts a release keeps at 16 bits: a list of KEPT_PARTS, each once; non_experts (which holds the others) alone."""
    parts = [part for part in KEPT_PARTS if part != NON_EXPERTS]
    if (
        not isinstance(value, list)
        or not value
        or any(item not in KEPT_PARTS for item in value)
        or len(set(value)) < len(value)
        or (NON_EXPERTS in value and len(value) > 1)
    ):
        raise Invalid(f"expected a list of {' and '.join(parts)}, each once, or {NON_EXPERTS} alone, got {describe(value)}")
    return tuple(value)


def license_name(value: Any) -> str:
    """A licence's own name, shown on every page as written: no note in brackets beside it."""
    name = text(value)
    if re.search(r"[()\[\]]", name):
        raise Invalid(f"expected the licence's name alone (a note about it belongs in the entry's notes), got {describe(value)}")
    return name


license_name.expectation = " (expected text)"  # type: ignore[attr-defined]


def read_license(entry: Entry) -> License | None:
    """A model's licence: {name, kind, url}; notes about it belong in the entry's notes."""
    if "license" not in entry.data:
        entry.report(entry.data.line, "license", "missing field (expected name, kind and url)")
        return None
    section = entry.section("license")
    if section is None:
        return None
    section.check_keys(LICENSE_FIELDS)
    name = section.get("name", license_name)
    kind = section.get("kind", one_of(LICENSE_KINDS, "licence kind"))
    link = section.get("url", url)
    entry.failed = entry.failed or section.failed
    return None if section.failed else License(name, kind, link)


def read_experts(entry: Entry, layers: int | None, moe: bool) -> Experts | None:
    """A mixture-of-experts model's experts block (required exactly when active_params_b is given)."""
    if "experts" not in entry.data:
        if moe:
            entry.report(entry.data.line, "experts", "missing field (a model with active_params_b needs its experts block)")
        return None
    section = entry.section("experts")
    if section is None:
        return None
    if not moe:
        section.report(entry.data.line_of("experts"), "", "experts given, but no active_params_b")
    section.check_keys(EXPERT_FIELDS)
    count, active = section.get("count", at_most(positive_int, 100_000)), section.get("active", at_most(positive_int, 100_000))
    if count and active and active > count:
        section.report(section.data.line_of("active"), "active", f"{active} is more than count ({count})")
    dense = section.get("dense_layers", _whole_or_zero, required=False, default=0)
    if dense and layers and dense >= layers:
        section.report(section.data.line_of("dense_layers"), "dense_layers", f"{dense} leaves no MoE layer of {layers}")
    numbers = dict(
        intermediate=section.get("intermediate", at_most(positive_int, 10_000_000)),
        shared=section.get("shared", _whole_or_zero, required=False, default=0),
        projections=section.get("projections", _either(2, 3), required=False, default=3),
        width=section.get("width", _whole_or_zero, required=False, default=0),
    )
    entry.failed = entry.failed or section.failed
    return None if section.failed else Experts(count, active, dense_layers=dense, **numbers)


def _either(first: int, second: int, meanings: tuple[str, str] = ("", "")) -> Callable[[Any], int]:
    """One of two whole numbers, each named with its meaning when it has one."""
    named = [f"{n} ({meaning})" if meaning else str(n) for n, meaning in zip((first, second), meanings, strict=True)]

    def check(value: Any) -> int:
        if isinstance(value, bool) or value not in (first, second):
            raise Invalid(f"expected {named[0]} or {named[1]}, got {describe(value)}")
        return int(value)

    return check


def _whole_or_zero(value: Any) -> int:
    if value == 0 and not isinstance(value, bool):
        return 0
    return at_most(positive_int, 100_000)(value)


def read_attention(entry: Entry, layers: int | None) -> Attention:
    """The attention block: its kind and the numbers that kind needs."""
    section = entry.section("attention")
    if section is None:
        return Attention()
    kind = section.get("kind", one_of(ATTENTION_FIELDS, "attention kind"))
    if kind is None:
        entry.failed = True
        return Attention()
    section.check_keys(ATTENTION_FIELDS[kind] + ATTENTION_WORDS.get(kind, ()))
    numbers = {
        name: section.get(name, at_most(positive_int, 100_000_000), required=name not in OPTIONAL_ATTENTION)
        for name in ATTENTION_FIELDS[kind][1:]
    }
    norm = section.get("qk_norm", one_of(QK_NORMS, "qk_norm"), required=False, default="")  # a kind without it refuses the key
    sliding = numbers.get("sliding_layers")
    if sliding and layers and sliding > layers:
        section.report(section.data.line_of("sliding_layers"), "sliding_layers", f"{sliding} is more than layers ({layers})")
    entry.failed = entry.failed or section.failed
    return Attention(kind=kind, qk_norm=norm or "", **{k: v or 0 for k, v in numbers.items()})


def read_state(entry: Entry, layers: int | None) -> State | None:
    """A hybrid's state layers: their kind, how many, and one layer's convolution and recurrent state per sequence."""
    if "state" not in entry.data:
        return None
    section = entry.section("state")
    if section is None:
        return None
    section.check_keys(STATE_FIELDS)
    kind = section.get("kind", one_of(STATE_KINDS, "state kind"))
    count = section.get("layers", at_most(positive_int, 1_000))
    mlp = section.get("mlp_layers", _whole_or_zero, required=False, default=0)  # Nemotron-H's blocks without a mixer
    if count and layers and count + (mlp or 0) >= layers:
        if mlp:
            left = f"{count} state and {mlp} MLP-only layers leave no attention layer of {layers}"
            section.report(section.data.line_of("mlp_layers"), "mlp_layers", left)
        else:
            section.report(section.data.line_of("layers"), "layers", f"{count} leaves no attention layer of {layers}")
    conv = section.get("conv", at_most(positive_int, 10**9), required=False, default=0)  # lightning attention has none
    recurrent = section.get("recurrent", at_most(positive_int, 10**12))
    dtype = section.get("recurrent_bytes", _either(2, 4, ("16 bits", "32 bits")), required=False, default=0)
    entry.failed = entry.failed or section.failed
    return None if section.failed else State(kind, count, conv, recurrent, dtype or 0, mlp or 0)
