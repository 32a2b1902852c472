"""Every page's figures, computed once per build from the catalog and its snapshot.

The figures of one model's or one GPU's pages (its page, its speed table, its fine-tuning table)
are computed the first time a page asks for them (Subjects): the pages are rendered by several
processes (pages/parallel.py), which each compute only the subjects they render. They are most of
the figures' time (0.13 of 0.18 s, 1.27 of 1.44 s with ten times the catalog).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from gpumem.catalog.links import Citations, citations
from gpumem.catalog.price_checks import Comparison, compare_prices
from gpumem.engines import deployment as engine
from gpumem.engines import sizing
from gpumem.figures.apis import ApiGuide, api_guide
from gpumem.figures.calculator import CalculatorPage, calculator_page
from gpumem.figures.calculator_data import PresetFiles, calculator_data, counting_file, preset_files
from gpumem.figures.guides import MainGuide, SizingGuide, VramGuide, main_guide, sizing_guide, vram_guide
from gpumem.figures.index import GpusIndex, ModelsIndex, gpus_index, models_index
from gpumem.figures.measured import Row, Summary, rows, summaries
from gpumem.figures.methodology import MethodologyPage, methodology_page
from gpumem.figures.shared import Shop
from gpumem.figures.speed import GpuSpeed, InferenceGuide, ModelSpeed, gpu_speed, inference_guide, model_speed
from gpumem.figures.subjects import GpuPage, ModelPage, PricesPage, gpu_page, model_page, prices_page
from gpumem.figures.training import FinetuneGuide, ModelTuning, finetune_guide, model_tuning
from gpumem.records.catalog import Catalog

Figure = TypeVar("Figure")


class Subjects(Mapping[str, Figure]):
    """A figure per subject id, computed when first asked for and then kept (pure, so the same
    whenever and in whichever process it is computed)."""

    def __init__(self, ids: Iterable[str], compute: Callable[[str], Figure]) -> None:
        self._ids = tuple(ids)
        self._compute = compute
        self._known: dict[str, Figure] = {}

    def __getitem__(self, key: str) -> Figure:
        if key not in self._known:
            if key not in self._ids:
                raise KeyError(key)
            self._known[key] = self._compute(key)
        return self._known[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


@dataclass(frozen=True)
class SiteFigures:
    """Every figure of every page, computed once per build for all languages."""

    shop: Shop
    main: MainGuide
    vram: VramGuide
    sizing: SizingGuide
    calculator: CalculatorPage
    prices: PricesPage
    models: Mapping[str, ModelPage]
    gpus: Mapping[str, GpuPage]
    calculator_json: str
    models_index: ModelsIndex  # the index pages: every model and every GPU in one table
    gpus_index: GpusIndex
    measured: tuple[Row, ...] = ()  # the deployment model against measured logs (methodology page)
    measured_summary: tuple[Summary, ...] = ()
    method: MethodologyPage | None = None  # the methodology page: both layers' constants, sources, measured checks
    citations: Citations = field(default_factory=lambda: Citations({}))  # per rules.yaml block: what its "Source:" line links
    price_checks: tuple[Comparison, ...] = ()  # other providers' dated prices against the snapshot's lowest
    tuning: Mapping[str, ModelTuning | None] = field(default_factory=dict)  # each model page's "Fine-tune it" table
    finetune: FinetuneGuide | None = None  # the guide "The best GPU to fine-tune" rules.yaml's training.run model
    api: ApiGuide | None = None  # the page "Self-hosting or an API?": API prices against the cheapest configuration per token
    model_speed: Mapping[str, ModelSpeed | None] = field(default_factory=dict)  # each model page's speed and cost table
    gpu_speed: Mapping[str, GpuSpeed | None] = field(default_factory=dict)  # each GPU page's speed table
    infer: InferenceGuide | None = None  # the guide "The best GPU for LLM inference"
    calculator_presets: PresetFiles = field(default_factory=PresetFiles)  # every model's preset, fetched by the calculator
    calculator_counting: PresetFiles = field(default_factory=PresetFiles)  # what config.js reads, fetched with it


def site_figures(catalog: Catalog) -> SiteFigures:
    """Every page's figures, computed once from the catalog and its snapshot."""
    engine.forget()  # remembered within this build only
    sizing.forget()
    shop = Shop(catalog)
    deployment = catalog.rules.deployment
    limits = catalog.rules.calculator_limits
    checks = rows(list(catalog.measured_points), catalog.measured_configs, deployment, limits) if deployment else ()
    model_of = {m.id: m for m in catalog.models}
    gpu_of = {g.id: g for g in catalog.gpus}
    models = Subjects(list(model_of), lambda key: model_page(catalog, shop, model_of[key]))
    gpus = Subjects(list(gpu_of), lambda key: gpu_page(catalog, shop, gpu_of[key]))
    return SiteFigures(
        shop=shop,
        main=main_guide(catalog, shop),
        vram=vram_guide(catalog, shop),
        sizing=sizing_guide(catalog, shop),
        calculator=calculator_page(catalog, shop),
        prices=prices_page(catalog, shop),
        models=models,
        gpus=gpus,
        calculator_json=json.dumps(calculator_data(catalog, shop), sort_keys=True, separators=(",", ":")),
        measured=checks,
        measured_summary=summaries(checks),
        method=methodology_page(catalog, checks, summaries(checks)),
        citations=citations(catalog.rules),
        price_checks=compare_prices(
            catalog.price_checks, catalog.gpus, catalog.snapshot, shop.markets, catalog.rules.price_check_max_age_days
        ),
        models_index=models_index(catalog, shop),
        gpus_index=gpus_index(catalog.gpus, shop.markets),
        tuning=Subjects(list(model_of), lambda key: model_tuning(catalog, model_of[key], shop.configurations)),
        api=api_guide(catalog, shop.configurations),
        finetune=finetune_guide(
            catalog, shop.configurations, {g.id: g.dense_tflops["bf16"] for g in catalog.gpus if "bf16" in g.dense_tflops}
        ),
        model_speed=Subjects(list(model_of), lambda key: model_speed(catalog, models[key])),
        gpu_speed=Subjects(list(gpu_of), lambda key: gpu_speed(catalog, gpus[key])),
        infer=inference_guide(catalog, shop.configurations),
        calculator_presets=preset_files(catalog),
        calculator_counting=counting_file(),
    )
