"""rules.yaml: every constant with its source, read into one Rules; the names it refers to must
exist in the other catalogs. The deployment, training, speed and API page blocks have readers of their own."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpumem.catalog.apis import read_api_page
from gpumem.catalog.deployment import read_deployment, read_engines
from gpumem.catalog.links import links_in  # the same reading of addresses as the pages' links
from gpumem.catalog.load import LineDict
from gpumem.catalog.speed import read_speed
from gpumem.catalog.support import read_support
from gpumem.catalog.training import read_training
from gpumem.catalog.validate import (
    Entry,
    Invalid,
    citation,
    describe,
    fraction,
    known_id,
    number_list,
    one_of,
    positive_int,
    positive_number,
    slug,
    text,
    text_list,
    url,
)
from gpumem.errors import Problems
from gpumem.records.catalog import Rules, SizeClass

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
# The calculator's bounds, which a config.json's counts keep too (catalog/config_fields.py).
LIMITS = ("max_params_b max_layers max_heads max_head_dim max_batch max_context max_hidden max_vocab max_intermediate max_experts").split()
# Keys a block holds besides its RULE_FIELDS and its source.
EXTRA_KEYS = {"fine_tuning.full": ("parts",), "fine_tuning.full_hf": ("parts",), "calculator": ("defaults", "old_weights", *LIMITS)}
RULE_SECTIONS = (
    "precisions kv_precisions serving fine_tuning gpu_counts fit training_fit size_classes serving_precisions "
    "fine_tuning_methods pages guides facts calculator prices deployment training speed api_page support references engines"
).split()


def read_rules(data: Any, path: str, problems: Problems, model_ids: set[str] | None, gpu_ids: set[str] | None = None) -> Rules | None:
    """rules.yaml: every constant with its source; names it refers to must exist."""
    if not isinstance(data, LineDict):
        problems.add_raw(f"{path}:1: rules: expected a mapping of sections")
        return None
    top = Entry(problems, path, data, "rules")
    top.check_keys(RULE_SECTIONS)
    sources: dict[str, str] = {}
    precisions = _byte_table(top, "precisions", sources)
    kv_precisions = _byte_table(top, "kv_precisions", sources)
    blocks = _rule_blocks(top, sources)
    kinds: dict[str, Callable[[Any], Any]] = {
        "precision": one_of(precisions or (), "precision"),
        "model": known_id(model_ids, "model", "models.yaml"),
        "gpu": known_id(gpu_ids, "GPU", "gpus.yaml"),
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
    # The old links' formats are checked against the deployment block's, which must have been read first.
    values["calculator_old_weights"] = _old_weights(calculator, known) if calculator and values["deployment"] else None
    api_page = read_api_page(top, sources) if "api_page" in data else None
    kv_known = values["deployment"].kv_formats if values["deployment"] else {}
    values["speed"] = read_speed(top, sources, set(known), set(kv_known)) if "speed" in data and values["deployment"] else None
    engines = read_engines(top, sources) if "engines" in data else None
    support = read_support(top, sources, values["deployment"], engines) if "support" in data else None
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
    if ("training" in data and training is None) or ("api_page" in data and api_page is None) or ("support" in data and support is None):
        return None
    if "engines" in data and engines is None:
        return None
    return Rules(
        precisions=precisions,
        kv_precisions=kv_precisions,
        sources=sources,
        training=training,
        api_page=api_page,
        engines=engines or {},
        support=support,
        **values,
    )


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


def _old_weights(calculator: Entry, known: Iterable[str]) -> dict[str, str] | None:
    """Weight formats an earlier calculator's links name, each with the format such a link opens now (the reason is
    in the calculator block's source: the methodology page, at its budget, lists one row per block)."""
    if "old_weights" not in calculator.data:
        return {}
    section = calculator.section("old_weights")
    if section is None:
        return None
    names = one_of(known, "weight format")
    found = {str(name): section.get(str(name), names) for name in section.data}
    calculator.failed = calculator.failed or section.failed
    return None if section.failed else found


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


def _known_list(ids: set[str] | None, what: str, where: str) -> Callable[[Any], tuple[str, ...]]:
    """A non-empty list of ids that another catalog file must declare, in the order given, without repeats."""
    known = known_id(ids, what, where)

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
