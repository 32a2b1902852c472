"""Stage 2: turn parsed YAML into typed records, reporting every problem at once."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .errors import Problems
from .load import ContentPage, LineDict, parse_yaml, read_text
from .records import (
    LICENSE_KINDS,
    Architecture,
    Attention,
    Experts,
    Language,
    License,
    Marketplace,
    Model,
    Offer,
    Rules,
    Site,
    SizeClass,
    Snapshot,
)


class Invalid(Exception):
    """A value that does not fit its field; the text says what was expected."""


def describe(value: Any) -> str:
    return "nothing" if value is None else repr(value)


# Past these a number is a typo, not a model or a GPU, and would overflow the arithmetic.
LARGEST_NUMBER = 1e12
# Names, labels and ids are short; prose (notes, answers) is longer but still bounded, so one
# runaway value cannot turn into a gigabyte of pages.
TEXT_CHARACTERS = 300
CITATION_CHARACTERS = 2_000
PROSE_CHARACTERS = 20_000
CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Invalid(f"expected a positive integer, got {describe(value)}")
    return value


def _real(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise Invalid(f"expected a positive number, got {describe(value)}")
    return value


def _within(number: Any, limit: float, value: Any) -> Any:
    if not number <= limit:
        shown = (
            f"{value:.3g}"
            if isinstance(value, float)
            else describe(value)
            if len(str(value)) <= 20
            else f"a {len(str(value))}-digit number"
        )
        raise Invalid(f"expected at most {limit:,g}, got {shown}")
    return number


def positive_int(value: Any) -> int:
    return _within(_whole(value), LARGEST_NUMBER, value)


def positive_number(value: Any) -> float:
    return float(_within(_real(value), LARGEST_NUMBER, value))


def at_most(kind: Callable[[Any], Any], limit: float) -> Callable[[Any], Any]:
    """A positive integer or number no larger than a limit that no real entry comes near."""
    base: Callable[[Any], Any] = _whole if kind is positive_int else _real

    def check(value: Any) -> Any:
        return kind(_within(base(value), limit, value))

    check.expectation = _EXPECTATIONS.get(kind, "")  # type: ignore[attr-defined]
    return check


def fraction(value: Any) -> float:
    number = positive_number(value)
    if number >= 1:
        raise Invalid(f"expected a fraction between 0 and 1, got {describe(value)}")
    return number


def _line(value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {describe(value)}")
    if len(value) > limit:
        raise Invalid(f"expected at most {limit:,} characters, got {len(value):,}")
    if CONTROL.search(value):
        raise Invalid(f"expected one line of text without control characters, got {describe(value)}")
    return value.strip()


def text(value: Any) -> str:
    """One line of text: a name, a label, an id of the outside world."""
    return _line(value, TEXT_CHARACTERS)


def citation(value: Any) -> str:
    """Where a figure comes from: one line, which may be long (several sources joined)."""
    return _line(value, CITATION_CHARACTERS)


def prose(value: Any) -> str:
    """Text that may run over several lines: notes, a question's answer."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {describe(value)}")
    if len(value) > PROSE_CHARACTERS:
        raise Invalid(f"expected at most {PROSE_CHARACTERS:,} characters, got {len(value):,}")
    return value.strip()


SLUG = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def slug(value: Any) -> str:
    if not isinstance(value, str) or not SLUG.fullmatch(value):
        shown = describe(value) if not isinstance(value, str) or len(value) <= 80 else f"{value[:60]!r}… ({len(value):,} characters)"
        raise Invalid(f"expected an id of at most 64 lowercase letters, digits, '.', '-' or '_', got {shown}")
    return value


def url(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 2_000 or not re.fullmatch(r"https?://\S+", value):
        raise Invalid(f"expected a URL starting with https://, got {describe(value)}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {describe(value)}")
    return value


def text_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise Invalid(f"expected a list of names, got {describe(value)}")
    return tuple(text(item) for item in value)


def utc_time(value: Any) -> datetime:
    """A time with its zone (YAML may already have parsed it); naive YAML times are UTC."""
    expected = "expected a UTC time like 2026-10-31T16:52:00Z"
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise Invalid(f"{expected}, got {describe(value)}") from None
    else:
        raise Invalid(f"{expected}, got {describe(value)}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-23:59 is past the last representable UTC moment
        raise Invalid(f"{expected}, got {describe(value)} (out of range once converted to UTC)") from None


def one_of(names: Iterable[str], what: str) -> Callable[[Any], str]:
    choices = sorted(names)

    def check(value: Any) -> str:
        if value not in choices:
            listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
            raise Invalid(f"unknown {what} {describe(value)} (expected {listed})")
        return value

    return check


class Entry:
    """Reads the fields of one YAML mapping and reports each problem with its line."""

    def __init__(self, problems: Problems, path: str, data: LineDict, ident: str, prefix: str = "") -> None:
        self.problems, self.path, self.data, self.ident, self.prefix = problems, path, data, ident, prefix
        self.failed = False
        for key, line in data.duplicate_keys:
            self.report(line, key, "given twice in the same entry")

    def report(self, line: int, name: Any, message: str) -> None:
        self.failed = True
        self.problems.add(self.path, line, self.ident, f"{self.prefix}{name}", message)

    def get(self, name: str, kind: Callable[[Any], Any], *, required: bool = True, default: Any = None) -> Any:
        if name not in self.data:
            if required:
                expected = _expectation(kind)
                self.report(self.data.line, name, f"missing field{expected}")
            return default
        try:
            return kind(self.data[name])
        except Invalid as error:
            self.report(self.data.line_of(name), name, str(error))
            return default

    def section(self, name: str, *, required: bool = True) -> Entry | None:
        """A nested mapping, read with the same id and a dotted field name."""
        value = self.data.get(name)
        if isinstance(value, LineDict):
            child = Entry(self.problems, self.path, value, self.ident, f"{self.prefix}{name}.")
            return child
        if name in self.data:
            self.report(self.data.line_of(name), name, f"expected a mapping of fields, got {describe(value)}")
        elif required:
            self.report(self.data.line, name, "missing field")
        self.failed = True
        return None

    def check_keys(self, known: Iterable[str]) -> None:
        known = list(known)
        for key in self.data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (expected one of: {', '.join(known)})"
                self.report(self.data.line_of(key), key, f"unknown field{hint}")


_EXPECTATIONS: dict[Callable[[Any], Any], str] = {
    positive_int: " (expected a positive integer)",
    positive_number: " (expected a positive number)",
    fraction: " (expected a fraction between 0 and 1)",
    text: " (expected text)",
    prose: " (expected text)",
    citation: " (expected text)",
    slug: " (expected an id)",
    url: " (expected a URL)",
    boolean: " (expected true or false)",
    text_list: " (expected a list of names)",
    utc_time: " (expected a UTC time like 2026-10-31T16:52:00Z)",
}


def read_list_file(path: Path, label: str, problems: Problems, key: str, noun: str) -> tuple[Entry, LineDict, Any] | None:
    """A catalog file holding one list under `key` (price checks, API prices): its file entry, its
    mapping and what stands under `key`; None when the file is missing, unreadable or not a mapping."""
    if not path.exists():
        return None
    found = read_text(path, label, problems)
    data = parse_yaml(found, label, problems) if found is not None else None
    if data is None:
        return None
    if not isinstance(data, LineDict):
        problems.add_raw(f"{label}:1: {noun}: expected a mapping with a '{key}' list", label, 1)
        return None
    top = Entry(problems, label, data, "file")
    top.check_keys((key,))
    return top, data, data.get(key)


def _expectation(kind: Callable[[Any], Any]) -> str:
    return getattr(kind, "expectation", None) or _EXPECTATIONS.get(kind, "")


def entries(data: Any, key: str, path: str, problems: Problems) -> list[tuple[LineDict, str]]:
    """The mappings listed under a file's top-level key, each with the id it reports under."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: {key}: expected a mapping with a '{key}' list")
        return []
    for extra in data:
        if extra != key:
            problems.add(path, data.line_of(extra), "file", str(extra), f"unknown field (expected only '{key}')")
    items = data.get(key)
    if not isinstance(items, list) or not items:
        problems.add(path, data.line_of(key), "file", key, f"expected a non-empty list, got {describe(items)}")
        return []
    found = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            problems.add(path, data.line_of(key), f"entry {index}", key, f"expected a mapping of fields, got {describe(item)}")
            continue
        given = item.get("id")
        ident = given if isinstance(given, str) and given.isprintable() and 0 < len(given) <= 64 else f"entry {index}"
        found.append((item, ident))
    return found


def unique(entry: Entry, name: str, value: Any, seen: dict[Any, int]) -> None:
    """Report a value that an earlier entry of the same file already used."""
    if value is None:
        return
    if value in seen:
        entry.report(entry.data.line_of(name), name, f"duplicate {name} {describe(value)} (first on line {seen[value]})")
    else:
        seen[value] = entry.data.line_of(name)


# The largest model a catalog may hold, in billions of parameters (today's largest are near 2,000).
MAX_PARAMS_B = 100_000
MODEL_FIELDS = (
    "id name family size_label params_b active_params_b layers hidden heads kv_heads head_dim native_context attention "
    "vocab tied_embeddings intermediate experts vision_params_b release license source notes"
).split()
EXPERT_FIELDS = ("count", "active", "intermediate", "shared", "dense_layers")
ATTENTION_FIELDS = {
    "full": ("kind",),
    "sliding": ("kind", "window", "sliding_layers"),
    "mla": ("kind", "kv_lora_rank", "qk_rope_head_dim"),
}


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
        )
        shape = dict(
            head_dim=entry.get("head_dim", at_most(positive_int, 4_096)),
            hidden=entry.get("hidden", at_most(positive_int, 1_000_000)),
            vocab=entry.get("vocab", at_most(positive_int, 10_000_000)),
            tied_embeddings=entry.get("tied_embeddings", boolean),
            intermediate=entry.get("intermediate", at_most(positive_int, 10_000_000)),
            experts=read_experts(entry, layers, active is not None),
        )
        if not entry.failed:
            arch = Architecture(layers, heads, kv_heads, attention=attention, **shape)
            models.append(Model(id=model_id, params_b=params, active_params_b=active, arch=arch, **fields))
    return tuple(models)


LICENSE_FIELDS = ("name", "kind", "url")


def license_name(value: Any) -> str:
    """A licence's own name, shown on every page as written: no note in brackets beside it."""
    name = text(value)
    if re.search(r"[()\[\]]", name):
        raise Invalid(f"expected the licence's name alone (a note about it belongs in the entry's notes), got {describe(value)}")
    return name


_EXPECTATIONS[license_name] = " (expected text)"


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
    )
    entry.failed = entry.failed or section.failed
    return None if section.failed else Experts(count, active, dense_layers=dense, **numbers)


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
    section.check_keys(ATTENTION_FIELDS[kind])
    numbers = {name: section.get(name, at_most(positive_int, 100_000_000)) for name in ATTENTION_FIELDS[kind][1:]}
    sliding = numbers.get("sliding_layers")
    if sliding and layers and sliding > layers:
        section.report(section.data.line_of("sliding_layers"), "sliding_layers", f"{sliding} is more than layers ({layers})")
    entry.failed = entry.failed or section.failed
    return Attention(kind=kind, **{k: v or 0 for k, v in numbers.items()})


def number_list(kind: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    """A non-empty list of positive numbers of one kind, sorted and without repeats."""

    def check(value: Any) -> tuple:
        if not isinstance(value, list) or not value:
            raise Invalid(f"expected a list of numbers, got {describe(value)}")
        return tuple(sorted({kind(item) for item in value}))

    return check


# Every single-valued field of Rules: where it stands in rules.yaml (block, key) and what it is.
# "precision", "model" and "gpu" name kinds that depend on the other catalogs.
RULE_FIELDS: tuple[tuple[str, str, str, Any], ...] = (
    ("serving_margin", "serving.margin", "value", fraction),
    ("runtime_overhead", "serving.runtime_overhead", "value", fraction),
    ("runtime_overhead_low", "serving.runtime_overhead", "low", fraction),
    ("full_bytes", "fine_tuning.full", "bytes_per_param", positive_number),
    ("full_example_params_b", "fine_tuning.full", "example_params_b", positive_number),
    ("full_hf_bytes", "fine_tuning.full_hf", "bytes_per_param", positive_number),
    ("lora_base_precision", "fine_tuning.lora", "base_precision", "precision"),
    ("lora_margin", "fine_tuning.lora", "margin", fraction),
    ("lora_paper_reduction", "fine_tuning.lora", "paper_reduction", positive_number),
    ("qlora_bytes", "fine_tuning.qlora", "bytes_per_param", positive_number),
    ("qlora_base_precision", "fine_tuning.qlora", "base_precision", "precision"),
    ("qlora_example_params_b", "fine_tuning.qlora", "example_params_b", positive_number),
    ("qlora_example_gpu_gb", "fine_tuning.qlora", "example_gpu_gb", positive_number),
    ("gpu_counts", "gpu_counts", "values", number_list(positive_int)),
    ("min_free_fraction", "fit", "min_free_fraction", fraction),
    ("comfortable_requests", "fit", "comfortable_requests", positive_int),
    ("fit_context", "fit", "context", positive_int),
    ("model_contexts", "pages", "model_contexts", number_list(positive_int)),
    ("page_requests", "pages", "concurrent_requests", positive_int),
    ("card_sizes_gb", "pages", "card_sizes_gb", number_list(positive_number)),
    ("weights_table_sizes_b", "pages", "weights_table_sizes_b", number_list(positive_number)),
    ("chart_contexts", "pages", "chart_contexts", number_list(positive_int)),
    ("model_formats", "pages", "model_formats", text_list),
    ("example_model", "guides", "example_model", "model"),
    ("example_size_b", "guides", "example_size_b", positive_number),
    ("heads_gpu", "guides", "heads_gpu", "gpu"),
    ("tight_model", "guides", "tight_model", "model"),
    ("mla_model", "guides", "mla_model", "model"),
    ("small_model", "guides", "small_model", "model"),
    ("long_conversations", "guides", "long_conversations", positive_int),
    ("busy_requests", "guides", "busy_requests", positive_int),
    ("busy_context", "guides", "busy_context", positive_int),
    ("small_context", "guides", "small_context", positive_int),
    ("price_examples", "guides", "price_examples", "gpus"),
    ("consumer_gpu", "guides", "consumer_gpu", "gpu"),
    ("min_price_per_gpu_hour", "prices.bounds", "min_per_gpu_hour", positive_number),
    ("max_price_per_gpu_hour", "prices.bounds", "max_per_gpu_hour", positive_number),
    ("max_gpus_per_machine", "prices.bounds", "max_gpus_per_machine", positive_int),
    ("max_clock_skew_minutes", "prices.clock", "max_skew_minutes", positive_number),
    ("price_check_max_age_days", "prices.checks", "max_age_days", positive_int),
)
LIMITS = ("max_params_b", "max_layers", "max_heads", "max_head_dim", "max_batch", "max_context")
# Keys a block holds besides its RULE_FIELDS and its source.
EXTRA_KEYS = {"fine_tuning.full": ("parts",), "fine_tuning.full_hf": ("parts",), "calculator": ("defaults", *LIMITS)}
RULE_SECTIONS = (
    "precisions kv_precisions serving fine_tuning gpu_counts fit size_classes "
    "serving_precisions fine_tuning_methods pages guides facts calculator prices deployment training speed api_page references"
).split()


def read_rules(data: Any, path: str, problems: Problems, model_ids: set[str] | None, gpu_ids: set[str] | None = None) -> Rules | None:
    """rules.yaml: every constant with its source; names it refers to must exist."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: rules: expected a mapping of sections")
        return None
    from .read_apis import read_api_page
    from .read_deployment import read_deployment  # it reads with this module's Entry
    from .read_speed import read_speed
    from .read_training import read_training

    top = Entry(problems, path, data, "rules")
    top.check_keys(RULE_SECTIONS)
    sources: dict[str, str] = {}
    precisions = _byte_table(top, "precisions", sources)
    kv_precisions = _byte_table(top, "kv_precisions", sources)
    blocks = _rule_blocks(top, sources)
    kinds: dict[str, Callable[[Any], Any]] = {
        "precision": one_of(precisions or (), "precision"),
        "model": _known(model_ids, "model", "models.yaml"),
        "gpu": _known(gpu_ids, "GPU", "gpus.yaml"),
        "gpus": _known_list(gpu_ids, "GPU", "gpus.yaml"),
    }
    values: dict[str, Any] = {
        field: block.get(key, kinds.get(kind, kind)) if (block := blocks.get(where)) else None for field, where, key, kind in RULE_FIELDS
    }
    calculator = blocks.get("calculator")
    values.update(
        full_parts=_parts(blocks["fine_tuning.full"]) if "fine_tuning.full" in blocks else None,
        full_hf_parts=_parts(blocks["fine_tuning.full_hf"]) if "fine_tuning.full_hf" in blocks else None,
        size_classes=_size_classes(top, model_ids),
        serving_precisions=_name_list(top, "serving_precisions", precisions or (), "precision"),
        fine_tuning_methods=_name_list(top, "fine_tuning_methods", ("qlora", "lora", "full"), "method"),
        facts=_facts(top, sources),
        calculator_limits={name: calculator.get(name, positive_number) for name in LIMITS} if calculator else None,
        calculator_defaults=_calculator_defaults(calculator, precisions or {}, kv_precisions or {}, kinds["model"]) if calculator else None,
        deployment=read_deployment(top, sources),
    )
    training = read_training(top, sources, values["deployment"].weight_formats if values["deployment"] else None, model_ids)
    known = values["deployment"].weight_formats if values["deployment"] else {}
    api_page = read_api_page(top, sources) if "api_page" in data else None
    kv_known = values["deployment"].kv_formats if values["deployment"] else {}
    values["speed"] = read_speed(top, sources, set(known), set(kv_known)) if "speed" in data else None
    values["references"] = _references(top, sources)  # after every block, so every source is known
    for name in values["model_formats"] or ():
        if known and name not in known:
            top.report(
                data["pages"].line_of("model_formats"),
                "pages.model_formats",
                f"unknown weight format {name!r} (not in deployment.weight_formats)",
            )
    if precisions is None or kv_precisions is None or top.failed or any(value is None for value in values.values()):
        return None
    if any(value is None for value in values["calculator_limits"].values()):
        return None
    if ("training" in data and training is None) or ("api_page" in data and api_page is None):
        return None
    return Rules(precisions=precisions, kv_precisions=kv_precisions, sources=sources, training=training, api_page=api_page, **values)


def _rule_blocks(top: Entry, sources: dict[str, str]) -> dict[str, Entry]:
    """The blocks RULE_FIELDS read from, by dotted name, each checked for unknown keys."""
    keys: dict[str, list[str]] = {}
    for _, where, key, _ in RULE_FIELDS:
        keys.setdefault(where, []).append(key)
    for where, extra in EXTRA_KEYS.items():
        keys.setdefault(where, []).extend(extra)
    containers = {where.split(".")[0] for where in keys if "." in where}
    parents = {name: _section(top, name) for name in sorted(containers)}
    for name, container in parents.items():
        container.check_keys([where.split(".")[1] for where in keys if where.startswith(name + ".")])
    blocks = {}
    for where, names in keys.items():
        outer, _, name = where.rpartition(".")
        block = _sourced(parents[outer] if outer else top, name, (*names, "source"), sources)
        if block is not None:
            blocks[where] = block
    top.failed = top.failed or any(p.failed for p in parents.values()) or any(b.failed for b in blocks.values())
    return blocks


def _calculator_defaults(
    calculator: Entry, precisions: Iterable[str], kv_precisions: Iterable[str], known_model: Callable[[Any], str]
) -> dict[str, Any] | None:
    """The state the calculator opens with: a catalog model, a mode, precisions and sizes."""
    section = calculator.section("defaults")
    if section is None:
        return None
    section.check_keys(("model", "mode", "weights", "kv", "batch", "context"))
    defaults = {
        "model": section.get("model", known_model),
        "mode": section.get("mode", one_of(("serve", "full", "lora", "qlora"), "mode")),
        "weights": section.get("weights", one_of(precisions, "precision")),
        "kv": section.get("kv", one_of(kv_precisions, "KV precision")),
        "batch": section.get("batch", positive_int),
        "context": section.get("context", positive_int),
    }
    calculator.failed = calculator.failed or section.failed
    return None if section.failed else defaults


def _facts(top: Entry, sources: dict[str, str]) -> dict[str, tuple[float, float]] | None:
    """Published ranges: each a low and a high value with its source."""
    section = top.section("facts")
    if section is None:
        return None
    facts = {}
    for name in section.data:
        block = _sourced(section, str(name), ("low", "high", "source"), sources)
        if block is None:
            continue
        low, high = block.get("low", positive_number), block.get("high", positive_number)
        if low is not None and high is not None and low > high:
            block.report(block.data.line_of("low"), "low", f"{low} is more than high ({high})")
        elif low is not None and high is not None:
            facts[str(name)] = (low, high)
    top.failed = top.failed or section.failed
    return None if section.failed else facts


def _references(top: Entry, sources: dict[str, str]) -> dict[str, str] | None:
    """The names readers know the cited papers and pages by, each address cited by some source."""
    from .compute_methodology import links_in  # the same reading of addresses as the pages' links

    if "references" not in top.data:
        return {}
    section = top.section("references")
    if section is None:
        return None
    cited = {link.url for text in sources.values() for link in links_in(text)}
    names = {}
    for address in section.data:
        line = section.data.line_of(address)
        try:
            found = url(address)
        except Invalid as error:
            section.report(line, address, str(error))
            continue
        if found not in cited:
            section.report(line, address, "cited by no source of this file (write the address or arXiv number in a source first)")
            continue
        name = section.get(address, text)
        if name is not None:
            names[found] = name
    top.failed = top.failed or section.failed
    return None if section.failed else names


def _known(ids: set[str] | None, what: str, where: str) -> Callable[[Any], str]:
    """An id that another catalog file must declare."""

    def check(value: Any) -> str:
        ident = slug(value)
        if ids is not None and ident not in ids:
            raise Invalid(f"unknown {what} {describe(ident)} (not in {where})")
        return ident

    return check


def _known_list(ids: set[str] | None, what: str, where: str) -> Callable[[Any], tuple[str, ...]]:
    """A non-empty list of ids that another catalog file must declare, in the order given, without repeats."""
    known = _known(ids, what, where)

    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise Invalid(f"expected a list of {what} ids, got {describe(value)}")
        found = tuple(known(item) for item in value)
        if len(set(found)) != len(found):
            raise Invalid(f"expected each {what} once, got {describe(value)}")
        return found

    return check


def _section(parent: Entry, name: str) -> Entry:
    section = parent.section(name)
    return section if section is not None else Entry(parent.problems, parent.path, LineDict(), parent.ident, name + ".")


def _sourced(parent: Entry, name: str, fields: tuple[str, ...], sources: dict[str, str]) -> Entry | None:
    """A constant's block: its fields and a source, which is recorded by name."""
    section = parent.section(name)
    if section is None:
        return None
    section.check_keys(fields)
    source = section.get("source", citation)
    if source:
        sources[f"{parent.prefix}{name}"] = source
    return section


def _byte_table(top: Entry, name: str, sources: dict[str, str]) -> dict[str, float] | None:
    """A precisions block: bytes per parameter (or element) for each named precision, with sources."""
    section = top.section(name)
    if section is None:
        return None
    table = {}
    for precision in section.data:
        block = _sourced(section, str(precision), ("bytes", "source"), sources)
        value = block.get("bytes", positive_number) if block else None
        if value is not None:
            table[str(precision)] = value
    top.failed = top.failed or section.failed
    return table if not section.failed else None


def _parts(section: Entry) -> dict[str, float] | None:
    """The parts of a fine-tuning bytes-per-parameter figure, which must add up to it."""
    parts = section.section("parts")
    if parts is None:
        return None
    parts.check_keys(("weights", "gradients", "optimizer"))
    values = {name: parts.get(name, positive_number) for name in ("weights", "gradients", "optimizer")}
    total = section.data.get("bytes_per_param")
    if not parts.failed and isinstance(total, (int, float)) and sum(values.values()) != total:
        parts.report(parts.data.line, "", f"parts add up to {sum(values.values())}, not bytes_per_param ({total})")
    section.failed = section.failed or parts.failed
    return None if parts.failed else values


def _name_list(top: Entry, name: str, known: Iterable[str], what: str) -> tuple[str, ...] | None:
    """A list of names that must each be defined elsewhere (a precision, a method)."""
    values = top.data.get(name)
    if not isinstance(values, list) or not values:
        top.report(top.data.line_of(name), name, f"expected a list of {what} names, got {describe(values)}")
        return None
    check = one_of(known, what)
    names = []
    for value in values:
        try:
            names.append(check(value))
        except Invalid as error:
            top.report(top.data.line_of(name), name, str(error))
    return tuple(names) if len(names) == len(values) else None


def _size_classes(top: Entry, model_ids: set[str] | None) -> tuple[SizeClass, ...] | None:
    """The guide tables' rows: a label, a nominal size and a representative catalog model."""
    items = top.data.get("size_classes")
    if not isinstance(items, list) or not items:
        top.report(top.data.line_of("size_classes"), "size_classes", f"expected a list of size classes, got {describe(items)}")
        return None
    classes = []
    for item in items:
        if not isinstance(item, LineDict):
            top.report(top.data.line_of("size_classes"), "size_classes", f"expected a mapping, got {describe(item)}")
            continue
        entry = Entry(top.problems, top.path, item, f"size class {item.get('label', '?')}", "size_classes.")
        entry.check_keys(("label", "size_b", "model"))
        label, size, model = entry.get("label", text), entry.get("size_b", positive_number), entry.get("model", slug)
        if model and model_ids is not None and model not in model_ids:
            entry.report(item.line_of("model"), "model", f"unknown model {describe(model)} (not in models.yaml)")
        if entry.failed:
            top.failed = True
        else:
            classes.append(SizeClass(label, size, model))
    return tuple(classes) if not top.failed else None


OFFER_FIELDS = ("machine", "gpu", "gpus", "price_per_gpu_hour", "country", "form_factor", "interconnect")
SNAPSHOT_FIELDS = ("taken_at", "currency", "source", "offers")
# The longest machine id, GPU name, country, form factor or interconnect a snapshot or an export
# may give: real ones are a few characters, and every page and error message repeats them.
MAX_TEXT = 100
# Characters that are not plain text on one line: controls (tab, line feed, escape), invisible
# formatting (bidirectional overrides, zero-width joiners), lone surrogates and line separators.
NOT_PLAIN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
# No marketplace export predates this; a time before it is a clock at zero or a typo.
EARLIEST_TAKEN_AT = datetime(2000, 1, 1, tzinfo=UTC)


def shown(value: Any) -> str:
    """A value as a message quotes it: on one line and short, never a whole list, mapping or huge number."""
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:30]!r}… ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of {len(str(value)) if value.bit_length() < 10000 else 'thousands of'} digits"
    return describe(value)


def line_text(value: Any) -> str:
    """One line of plain text of at most MAX_TEXT characters: a machine id, a GPU name, a country."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {shown(value)}")
    value = value.strip()
    if len(value) > MAX_TEXT:
        raise Invalid(f"expected at most {MAX_TEXT} characters, got {len(value):,}: {value[:20]!r}…")
    bad = next((c for c in value if unicodedata.category(c) in NOT_PLAIN), None)
    if bad is not None:
        raise Invalid(f"expected one line of plain text, got a control character (U+{ord(bad):04X}) in {shown(value)}")
    return value


def time_text(moment: datetime) -> str:
    """A UTC moment as messages and snapshots write it: 2026-10-31T16:52:00Z."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def taken_at_time(value: Any) -> datetime:
    """When a snapshot or an export was taken: a UTC time, not before 2000."""
    if not isinstance(value, (str, datetime)) or (isinstance(value, str) and len(value) > MAX_TEXT):
        raise Invalid(f"expected a UTC time like 2026-10-31T16:52:00Z, got {shown(value)}")
    moment = utc_time(value)
    if moment < EARLIEST_TAKEN_AT:
        raise Invalid(f"{time_text(moment)} is before {EARLIEST_TAKEN_AT.year}: no export was taken then (a clock at zero?)")
    return moment


def in_the_future(moment: datetime, now: datetime, rules: Rules) -> str | None:
    """Why a taken_at is refused as in the future, or None when it is not beyond the allowed clock skew."""
    if moment <= now + timedelta(minutes=rules.max_clock_skew_minutes):
        return None
    return (
        f"{time_text(moment)} is in the future: the clock says {time_text(now)}, and at most "
        f"{rules.max_clock_skew_minutes:g} minutes of clock skew are allowed (prices.clock in rules.yaml)"
    )


def bounded_price(value: Any, rules: Rules | None, written: str | None = None) -> float:
    """A price per GPU-hour within prices.bounds of rules.yaml; `written` is how the export wrote it."""
    shown_as = written or shown(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise Invalid(f"expected a positive number, got {shown_as}")
    if rules is not None and not value <= rules.max_price_per_gpu_hour:
        raise Invalid(
            f"{shown_as} is more than {rules.max_price_per_gpu_hour:g} per GPU-hour, the most a GPU rents for (prices.bounds in rules.yaml)"
        )
    if rules is not None and value < rules.min_price_per_gpu_hour:
        raise Invalid(
            f"{shown_as} is less than {rules.min_price_per_gpu_hour:g} per GPU-hour, the least a GPU rents for "
            "(prices.bounds in rules.yaml)"
        )
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits, when there are no rules to bound it
        number = float("inf")
    if number == float("inf"):
        raise Invalid(f"expected a finite number, got {shown_as}")
    return number


def bounded_gpus(value: Any, rules: Rules | None, written: str | None = None) -> int:
    """The GPUs of one machine: a positive integer within prices.bounds of rules.yaml."""
    shown_as = written or shown(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Invalid(f"expected a positive integer, got {shown_as}")
    if rules is not None and value > rules.max_gpus_per_machine:
        raise Invalid(
            f"{shown_as} GPUs is more than {rules.max_gpus_per_machine} in one machine, the most a machine holds "
            "(prices.bounds in rules.yaml)"
        )
    return value


_EXPECTATIONS.update({line_text: _EXPECTATIONS[text], taken_at_time: _EXPECTATIONS[utc_time]})


def read_snapshot(
    data: Any, path: str, name: str, problems: Problems, gpu_ids: set[str] | None, rules: Rules | None = None
) -> Snapshot | None:
    """A price snapshot: when it was taken and its offers, each on a known GPU and, with the
    rules, within their price and machine-size bounds. Whether taken_at is in the future or agrees
    with the file name is for the caller, which knows the clock and the other snapshots."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: snapshot: expected a mapping with taken_at, currency, source and offers")
        return None
    top = Entry(problems, path, data, "snapshot")
    top.check_keys(SNAPSHOT_FIELDS)
    taken_at = top.get("taken_at", taken_at_time)
    currency = top.get("currency", _currency)
    source = top.get("source", text)
    items = data.get("offers")
    if "offers" in data and (items is None or items == []):
        top.report(data.line_of("offers"), "offers", "no offers (a snapshot needs at least one)")
        items = []
    elif "offers" not in data:
        top.report(data.line, "offers", "missing field (expected a list of offers)")
        items = []
    elif not isinstance(items, list):
        top.report(data.line_of("offers"), "offers", f"expected a list of offers, got {shown(items)}")
        items = []
    offers: list[Offer] = []
    seen: dict[Any, int] = {}
    for index, item in enumerate(items, start=1):
        offer = _read_offer(item, index, top, seen, gpu_ids, rules)
        if offer:
            offers.append(offer)
    if top.failed or len(offers) != len(items):
        return None
    return Snapshot(name=name, taken_at=taken_at, currency=currency, source=source, offers=tuple(offers))


def _read_offer(item: Any, index: int, top: Entry, seen: dict[Any, int], gpu_ids: set[str] | None, rules: Rules | None) -> Offer | None:
    """One offer of a snapshot: a machine on a known GPU, with counts and prices within bounds."""
    if not isinstance(item, LineDict):
        top.report(top.data.line_of("offers"), f"offers[{index}]", f"expected a mapping, got {shown(item)}")
        return None
    try:
        ident = line_text(item.get("machine"))
    except Invalid:
        ident = f"offer {index}"
    entry = Entry(top.problems, top.path, item, ident)
    entry.check_keys(OFFER_FIELDS)
    machine = entry.get("machine", line_text)
    unique(entry, "machine", machine, seen)
    gpu = entry.get("gpu", line_text)
    if gpu and gpu_ids is not None and gpu not in gpu_ids:
        entry.report(item.line_of("gpu"), "gpu", f"unknown GPU {describe(gpu)} (not in gpus.yaml)")
    fields = dict(
        gpus=entry.get("gpus", (lambda value: bounded_gpus(value, rules)) if "gpus" in item else positive_int),
        price_per_gpu_hour=entry.get(
            "price_per_gpu_hour", (lambda value: bounded_price(value, rules)) if "price_per_gpu_hour" in item else positive_number
        ),
        country=entry.get("country", line_text),
        form_factor=entry.get("form_factor", line_text),
        interconnect=entry.get("interconnect", line_text),
    )
    if entry.failed:
        top.failed = True
        return None
    return Offer(machine=machine, gpu=gpu, **fields)


def _currency(value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"^[A-Z]{3}$", value):
        raise Invalid(f"expected a three-letter currency code like USD, got {describe(value)}")
    return value


SITE_FIELDS = ("base_url", "languages", "stale_after_days", "routes", "marketplace")
RENT_PLACEHOLDERS = ("{gpu}", "{count}")


def rent_template(value: Any) -> str:
    """The address that rents a configuration: an http(s) URL holding {gpu} and {count}, and no other placeholder."""
    address = url(value)
    for found in re.findall(r"\{[^{}]*\}|[{}]", address):
        if found not in RENT_PLACEHOLDERS:
            raise Invalid(f"unknown placeholder {found!r} in {describe(address)} (expected only {{gpu}} and {{count}})")
    missing = [name for name in RENT_PLACEHOLDERS if name not in address]
    if missing:
        raise Invalid(f"expected a URL with {' and '.join(missing)} where the GPU and the count go, got {describe(address)}")
    return address


rent_template.expectation = " (expected a URL with {gpu} and {count})"  # type: ignore[attr-defined]


def read_marketplace(top: Entry) -> Marketplace | None:
    """site.yaml's marketplace: name, home_url and rent_url (a template of {gpu} and {count})."""
    entry = top.section("marketplace")
    if entry is None:
        return None
    entry.check_keys(("name", "home_url", "rent_url"))
    found = Marketplace(entry.get("name", text), entry.get("home_url", url), entry.get("rent_url", rent_template))
    top.failed = top.failed or entry.failed
    return None if entry.failed else found


def read_site(data: Any, path: str, problems: Problems, page_keys: Iterable[str]) -> Site | None:
    """content/site.yaml: base URL, languages and each page's path per language."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: site: expected a mapping of settings")
        return None
    top = Entry(problems, path, data, "site")
    top.check_keys(SITE_FIELDS)
    base_url = top.get("base_url", url)
    if base_url and not base_url.endswith("/"):
        top.report(data.line_of("base_url"), "base_url", f"expected a URL ending with '/', got {describe(base_url)}")
    stale = top.get("stale_after_days", positive_number, required=False, default=7.0)
    marketplace = read_marketplace(top)
    languages: list[Language] = []
    for item in data.get("languages") or []:
        if not isinstance(item, LineDict):
            top.report(data.line_of("languages"), "languages", f"expected a mapping with code and name, got {describe(item)}")
            continue
        entry = Entry(problems, path, item, "site", "languages.")
        entry.check_keys(("code", "name"))
        code, name = entry.get("code", locale_code), entry.get("name", text)
        if code and code.lower() in (language.code.lower() for language in languages):
            entry.report(item.line_of("code"), "code", f"language {describe(code)} is listed twice")
        top.failed = top.failed or entry.failed
        if code and name and not entry.failed:
            languages.append(Language(code, name))
    if not languages:
        top.report(data.line_of("languages"), "languages", "expected a list of languages with code and name")
    codes = [language.code for language in languages]
    routes_entry = top.section("routes")
    routes: dict[str, dict[str, str]] = {}
    route_lines: dict[tuple[str, str], int] = {}
    if routes_entry is not None:
        routes_entry.check_keys(page_keys)
        for key in page_keys:
            route = routes_entry.section(key)
            if route is None:
                continue
            route.check_keys(codes)
            paths = {code: route.get(code, _route_path) for code in codes}
            routes[key] = {code: value for code, value in paths.items() if value is not None}
            route_lines.update({(key, code): route.data.line_of(code) for code in routes[key]})
            for code, value in routes[key].items():
                other = next((k for k in routes if k != key and routes[k].get(code) == value), None)
                if other is not None:
                    route.report(route.data.line_of(code), code, f"path {describe(value)} is also the path of routes.{other}.{code}")
            routes_entry.failed = routes_entry.failed or route.failed
        top.failed = top.failed or routes_entry.failed
    if top.failed or marketplace is None:
        return None
    return Site(base_url, tuple(languages), routes, stale, route_lines, marketplace)


def locale_code(value: Any) -> str:
    """A language code Babel knows (es, en, pt-BR...), for its number, date and plural rules."""
    from babel import Locale, UnknownLocaleError

    code = text(value)
    try:
        Locale.parse(code.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        raise Invalid(f"unknown language code {describe(value)} (expected one Babel knows, like es or pt-BR)") from None
    return code


def _route_path(value: Any) -> str:
    """A page's path below its language folder: '' for the language's home, else slugs joined by '/'."""
    if value == "":
        return ""
    if not isinstance(value, str) or not all(SLUG.fullmatch(part) for part in value.split("/")):
        raise Invalid(f"expected a path of lowercase slugs joined by '/', got {describe(value)}")
    return value


def check_front_matter(page: ContentPage, key: str, problems: Problems) -> bool:
    """A content page's front matter: title and description text, and FAQ items of q and a."""
    entry = Entry(problems, page.path, page.meta, key)
    entry.check_keys(("title", "description", "faq"))
    entry.get("title", text)
    entry.get("description", prose)
    items = page.meta.get("faq", [])
    if not isinstance(items, list):
        entry.report(page.meta.line_of("faq"), "faq", f"expected a list of questions (q) and answers (a), got {describe(items)}")
        return False
    for index, item in enumerate(items, start=1):
        if not isinstance(item, LineDict):
            entry.report(page.meta.line_of("faq"), f"faq[{index}]", f"expected a mapping with q and a, got {describe(item)}")
            continue
        question = Entry(problems, page.path, item, key, f"faq[{index}].")
        question.check_keys(("q", "a"))
        question.get("q", text)
        question.get("a", prose)
        entry.failed = entry.failed or question.failed
    return not entry.failed
