"""Every rent link on every built page, in every language, points to a configuration that the engines
say holds the workload it stands for: one verdict per configuration across the site.

A link that stands for a workload carries it as data-holds (figures/verdicts.py serving_claim and
training_claim): `serve:<model>:<format>:<KV format>:<tokens>:<requests>` or
`train:<model>:<method>:<sequence>:<micro-batch>`. This test reads the built HTML, not the figures
the pages were made from, and asks the deployment model (engines/sizing.deployment_fits, with the support table) or the
training engine (figures/training.tuning_row) again for the configuration the link rents.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections import Counter
from pathlib import Path

from gpumem.catalog.inputs import load_catalog
from gpumem.engines.sizing import deployment_fits
from gpumem.figures.shared import Shop
from gpumem.figures.training import tuning_row

from .project import CATALOGS

LINK = re.compile(r'<a class="rent"( data-holds="([^"]*)")? href="([^"]+)">')


def links(site: Path) -> list[tuple[str, str, str, int]]:
    """Every rent link of the site: (page, its claim or "", GPU id, count)."""
    found = []
    for page in sorted(site.rglob("*.html")):
        for _, claim, href in LINK.findall(page.read_text()):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(href.replace("&amp;", "&")).query)
            found.append((str(page.relative_to(site)), claim, query["gpu"][0], int(query["count"][0])))
    return found


def holds(catalog, shop: Shop, claim: str, gpu: str, count: int) -> bool:
    """Whether the engines say `count` × `gpu`, as the snapshot offers it, holds the claimed workload."""
    offered = [c for c in shop.configurations if c.gpu.id == gpu and c.count == count]
    if not offered:
        return False
    kind, model_id, what, *rest = claim.split(":")
    model = catalog.model(model_id)
    rules = catalog.rules
    if kind == "serve":
        kv, tokens, requests = rest[0], int(rest[1]), int(rest[2])
        fmt, kv_format = rules.deployment.weight_formats[what], rules.deployment.kv_formats[kv]
        return bool(deployment_fits(rules.deployment, model, fmt, kv_format, tokens, requests, offered, 0, rules.support))
    seq, micro_batch = int(rest[0]), int(rest[1])
    training = dataclasses.replace(rules.training, pages=dataclasses.replace(rules.training.pages, seq=seq))
    at_seq = dataclasses.replace(catalog, rules=dataclasses.replace(rules, training=training))
    return bool(tuning_row(model, what, micro_batch, at_seq, offered).held)


def test_every_rent_link_of_a_workload_holds_it_by_the_engines(built_site):
    catalog = load_catalog(CATALOGS)
    shop = Shop(catalog)
    found = links(built_site)
    claimed = [link for link in found if link[1]]
    wrong = [link for link in claimed if not holds(catalog, shop, *link[1:])]
    assert wrong == []
    kinds = Counter(claim.split(":")[0] for _, claim, _, _ in claimed)
    assert dict(kinds) == {"serve": 4140, "train": 470}  # the calculator's first rows among them, 44 a language
    languages = Counter(page.split("/")[0] for page, _, _, _ in claimed)
    assert len(set(languages.values())) == 1 and sorted(languages) == ["de", "en", "es", "fr", "pt"]


def test_the_rent_links_without_a_workload_are_a_gpu_s_cards_and_the_calculator_s_rows(built_site):
    """The links that stand for no workload: a GPU page's card or the nearest card on offer (26 GPU
    pages a language) and the sizing guide's three cards. The calculator's rows claim the workload of
    its form (test_calculator_links.py checks the script's rows claim the same)."""
    unclaimed = [(page, gpu, count) for page, claim, gpu, count in links(built_site) if not claim]
    where = Counter(page.split("/")[1] for page, _, _ in unclaimed)
    assert dict(where) == {
        "gpus": 104, "gpu": 26, "guides": 6, "guias": 6, "ratgeber": 3,
    }  # fmt: skip
    sizing = [(page, gpu, count) for page, gpu, count in unclaimed if "sizing" in page or "dimension" in page]
    assert {(gpu, count) for _, gpu, count in sizing} == {("rtx-3090", 1), ("l40s", 1), ("rtx-pro-6000-blackwell", 1)}


def test_a_link_that_claims_too_much_is_caught():
    """The check itself: 1 × RTX 3090 does not hold Llama 3.1 70B in BF16, and does hold Llama 3.1 8B in AWQ."""
    catalog = load_catalog(CATALOGS)
    shop = Shop(catalog)
    assert not holds(catalog, shop, "serve:llama-3.1-70b:bf16:bf16:8192:1", "rtx-3090", 1)
    assert holds(catalog, shop, "serve:llama-3.1-8b:awq:bf16:8192:1", "rtx-3090", 1)
    assert not holds(catalog, shop, "serve:llama-3.1-8b:awq:bf16:8192:1", "rtx-3090", 3)  # no such machine on offer
    assert not holds(catalog, shop, "train:llama-3.1-8b:lora:4096:1", "rtx-3090", 1)
    assert holds(catalog, shop, "train:llama-3.1-8b:lora:4096:1", "rtx-3090", 2)
