"""Stage 3: one verdict per configuration. A rule-of-thumb cell (the original guides' tables, their
FAQ and worked examples) sizes a need with the guides' rule and names the smallest configuration
that holds it; whether that configuration really holds is decided by the deployment model (serving)
or the training engine (fine-tuning), at the page's stated setting, as everywhere else on the site.

A cell keeps its rule-of-thumb figure; its verdict says whether the configuration it names holds,
at which shorter setting it would, and the cheapest configuration that holds at the page's setting,
which is where its rent link goes. Pure: records in, records out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpumem.engines.sizing import Configuration, deployment_fits
from gpumem.figures.training import tuning_row, tuning_rules
from gpumem.records.catalog import Catalog, Model
from gpumem.records.engines import WeightFormat

SHORTEST_SEQUENCE = 256  # the shortest training sequence a verdict offers as "holds at"


@dataclass(frozen=True)
class Verdict:
    """What the engines say of a configuration a rule-of-thumb cell names, at the page's setting.

    `tokens` is the setting: the context served (one request) or the training sequence length.
    When the named configuration does not hold there, `holds_at` is the longest setting of the
    rules' ladder at which it does (None: at none), and `instead` the cheapest configuration on
    offer that holds at `tokens` (None: nothing on offer does).
    """

    kind: str  # "serving" (the deployment model) or "training" (the training engine)
    claim: str  # the workload a rent link says its configuration holds (serving_claim, training_claim)
    named: Configuration
    tokens: int
    holds: bool
    holds_at: int | None = None
    instead: Configuration | None = None

    @property
    def rent(self) -> Configuration | None:
        """The configuration a rent link may point to: the named one when it holds, else the one that does."""
        return self.named if self.holds else self.instead


def serving_claim(model: Model, fmt: WeightFormat, kv: str, tokens: int, requests: int) -> str:
    """What a rent link of a serving figure claims its configuration holds, as its data-holds attribute
    carries it: `serve:<model>:<weight format>:<KV format>:<tokens>:<requests>` (tests/test_rent_links.py)."""
    return f"serve:{model.id}:{fmt.name}:{kv}:{tokens}:{requests}"


def training_claim(model: Model, method: str, seq: int, micro_batch: int) -> str:
    """What a rent link of a fine-tuning figure claims: `train:<model>:<method>:<sequence>:<micro-batch>`."""
    return f"train:{model.id}:{method}:{seq}:{micro_batch}"


def rule_format(catalog: Catalog, precision: str) -> WeightFormat:
    """The storage format a rule-of-thumb precision is served in: the first of the model pages' formats
    (rules.yaml model_formats) with that many bits per weight (4-bit: AWQ), else the format of the precision's name."""
    rules = catalog.rules
    assert rules.deployment is not None
    formats = rules.deployment.weight_formats
    named = [formats[name] for name in rules.model_formats if name in formats]
    return next((fmt for fmt in named if rule_precision(fmt) == precision), None) or formats[precision]


def rule_precision(fmt: WeightFormat) -> str:
    """The rule-of-thumb precision a format compares with: 32, 16, 8 or 4 bits per weight."""
    return "fp32" if fmt.bits >= 24 else "bf16" if fmt.bits >= 12 else "fp8" if fmt.bits >= 6 else "int4"


def _serving_holds(
    catalog: Catalog, model: Model, fmt: WeightFormat, tokens: int, requests: int, configurations: Iterable[Configuration]
) -> tuple[Configuration, ...]:
    """The configurations that hold `requests` requests of `tokens` tokens, cheapest first (the deployment model)."""
    rules = catalog.rules.deployment
    assert rules is not None
    kv = rules.kv_formats["bf16"]
    fits = deployment_fits(
        rules, model, fmt, kv, tokens, requests, configurations, catalog.rules.comfortable_requests, catalog.rules.support
    )
    return tuple(fit.configuration for fit in fits)


def serving_verdict(
    catalog: Catalog,
    model: Model,
    precision: str,
    tokens: int,
    requests: int,
    named: Configuration | None,
    offered: Iterable[Configuration],
) -> Verdict | None:
    """Whether `named` serves `requests` requests of `tokens` tokens of `model` at a rule-of-thumb
    precision (in its rule_format); if not, at which shorter context it would and what holds. None
    when the cell names no configuration."""
    if named is None:
        return None
    fmt = rule_format(catalog, precision)
    claim = serving_claim(model, fmt, "bf16", tokens, requests)
    if _serving_holds(catalog, model, fmt, tokens, requests, (named,)):
        return Verdict("serving", claim, named, tokens, True)
    shorter = [t for t in sorted(catalog.rules.model_contexts, reverse=True) if t < tokens]
    holds_at = next((t for t in shorter if _serving_holds(catalog, model, fmt, t, requests, (named,))), None)
    cheapest = _serving_holds(catalog, model, fmt, tokens, requests, offered)
    return Verdict("serving", claim, named, tokens, False, holds_at, cheapest[0] if cheapest else None)


def training_verdict(
    catalog: Catalog, model: Model, method: str, named: Configuration | None, offered: Iterable[Configuration]
) -> Verdict | None:
    """Whether `named` holds the pages' run of `method` (micro-batch 1); if not, at which shorter
    sequence it would (halving down to SHORTEST_SEQUENCE) and the cheapest configuration that holds it.
    None when the cell names no configuration or rules.yaml states no training setting."""
    setting = tuning_rules(catalog)
    if named is None or setting is None:
        return None
    claim = training_claim(model, method, setting.seq, 1)
    if _training_holds_at(catalog, model, method, named, setting.seq):
        return Verdict("training", claim, named, setting.seq, True)
    shorter = (setting.seq >> halving for halving in range(1, setting.seq.bit_length()))
    holds_at = next((seq for seq in shorter if seq >= SHORTEST_SEQUENCE and _training_holds_at(catalog, model, method, named, seq)), None)
    cheapest = tuning_row(model, method, 1, catalog, tuple(offered)).cheapest
    return Verdict("training", claim, named, setting.seq, False, holds_at, cheapest.configuration if cheapest else None)


def _training_holds_at(catalog: Catalog, model: Model, method: str, named: Configuration, seq: int) -> bool:
    """Whether `named` holds the pages' run of `method` (micro-batch 1) at a sequence length of `seq` tokens."""
    training = catalog.rules.training
    assert training is not None and training.pages is not None  # tuning_rules checked them
    if seq != training.pages.seq:
        catalog = replace(catalog, rules=replace(catalog.rules, training=replace(training, pages=replace(training.pages, seq=seq))))
    return bool(tuning_row(model, method, 1, catalog, (named,)).held)
