"""Typed records passed between the pipeline's stages: what the catalogs and the site describe (models, GPUs,
the snapshot's offers, other prices, rules.yaml's own constants) and the validated catalog that holds them. The
engines' constants, rules.yaml's deployment, training and speed blocks, are records/engines.py's."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from gpumem.records.engines import DeploymentRules, EnginePin, SpeedRules, SupportRules, TrainingRules


@dataclass(frozen=True)
class Attention:
    """How a model's attention layers keep keys and values: full, sliding-window, chunked local (Llama 4: a
    layer attends within its chunk of `window` tokens) or MLA, whose sparse variant (DeepSeek's DSA) also
    caches an indexer key of `index_bytes` per token and layer."""

    kind: str = "full"
    window: int = 0
    sliding_layers: int = 0  # the layers of a sliding or chunked kind that keep `window` tokens; the others keep all
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    index_bytes: int = 0
    q_lora_rank: int = 0  # MLA: the queries' low rank, 0 where they are projected directly (DeepSeek-V2-Lite)
    v_head_dim: int = 0  # MLA: each head's value width (its key width is head_dim)
    fused_qkv: bool = False  # one query-key-value matrix, as llama.cpp converts Phi-3 and Phi-4 (engines/gguf.FUSED_QKV)
    # Gemma 4: the full-attention layers' own KV heads and head size beside a sliding kind's (num_global_key_value_heads,
    # global_head_dim), 0 where they are the model's kv_heads and head_dim
    global_kv_heads: int = 0
    global_head_dim: int = 0
    # "per_layer": one RMSNorm over every head's queries and another over every head's keys (MiniMax M2's qk_norm_type),
    # which tensor parallelism must all-reduce (engines/speed.allreduces); "" where there is none or it is per head
    qk_norm: str = ""

    @property
    def windowed(self) -> bool:
        return self.kind in ("sliding", "chunked") and self.sliding_layers > 0


# The state layers a hybrid can have: Qwen3-Next's and Qwen3.5's Gated DeltaNet, Nemotron-H's Mamba-2, Kimi
# Linear's KDA, MiniMax's lightning attention.
STATE_KINDS = ("gated-deltanet", "mamba2", "kda", "lightning")
# Their own names, which every language writes alike.
STATE_NAMES = {"gated-deltanet": "Gated DeltaNet", "mamba2": "Mamba-2", "kda": "Kimi Delta Attention", "lightning": "Lightning Attention"}


@dataclass(frozen=True)
class State:
    """Linear-attention or recurrent layers (Gated DeltaNet, Mamba-2, KDA, lightning attention): each keeps a
    fixed state per sequence, a convolution's last inputs and a recurrent matrix, instead of keys and values
    per token. Elements are the whole layer's, before a tensor-parallel split."""

    kind: str
    layers: int
    conv: int  # elements of one layer's convolution state per sequence
    recurrent: int  # elements of one layer's recurrent state per sequence
    recurrent_bytes: int = 0  # bytes per recurrent element when the config fixes its dtype (mamba_ssm_dtype), else 0
    mlp_layers: int = 0  # further layers with neither attention nor a state: an MLP or MoE block alone (Nemotron-H's - and E)


FULL_ATTENTION = Attention()


@dataclass(frozen=True)
class Experts:
    """A mixture-of-experts block: routed experts per layer, how many a token uses, their width."""

    count: int
    active: int
    intermediate: int
    shared: int = 0
    dense_layers: int = 0  # leading layers with a dense MLP instead (DeepSeek's first_k_dense_replace)
    projections: int = 3  # matrices per expert: gate, up and down; 2 for an ungated one (Nemotron-H's squared ReLU)
    width: int = 0  # the width an expert reads and writes: 0 for the hidden size, else a latent one (moe_latent_size)


@dataclass(frozen=True)
class Architecture:
    """The numbers of a transformer that decide its key-value cache, its GPU split and what a
    runtime allocates for it (0 where a custom model does not say)."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    attention: Attention = FULL_ATTENTION
    hidden: int = 0
    vocab: int = 0
    tied_embeddings: bool = False
    intermediate: int = 0
    experts: Experts | None = None
    state: State | None = None
    blocks_per_layer: int = 2  # residual blocks: attention (or a state) then an MLP; 1 where a layer is one mixer (Nemotron-H)

    @property
    def attention_layers(self) -> int:
        """The layers that cache keys and values per token (all but a hybrid's state layers and MLP-only blocks)."""
        return self.layers - (self.state.layers + self.state.mlp_layers if self.state else 0)


# What a licence lets a reader do, in the words the pages translate: an open-source licence
# (Apache 2.0, MIT: use, change and sell), or the developer's own terms (Llama, Gemma, Qwen,
# DeepSeek: conditions on use and redistribution that a reader must read).
LICENSE_KINDS = ("open-source", "custom")


@dataclass(frozen=True)
class License:
    """A model's licence: its own name (shown as written), its kind (translated) and its text."""

    name: str
    kind: str  # one of LICENSE_KINDS
    url: str


@dataclass(frozen=True)
class Repo:
    """Where a model's checkpoint in one weight format is published (models.yaml, repos)."""

    format: str  # a weight format of rules.yaml
    repo: str  # the Hugging Face repository, owner/name
    source: str  # the page that shows it is this model in this format
    file: str = ""  # GGUF: the file to download from the repository
    bytes: int = 0  # the checkpoint's exact bytes (its index's metadata.total_size), 0 when not given
    kept: tuple[str, ...] = ()  # parts the checkpoint keeps at 16 bits beyond its format's own (KEPT_PARTS)


# The parts of a model a quantized release can keep at 16 bits (its quantization config's ignore list names them):
# the attention layers' projections, the MoE routers, or everything but the routed experts (NVIDIA's NVFP4 releases
# of Qwen3.5 leave attention, linear attention and shared experts unquantized).
NON_EXPERTS = "non_experts"  # holds the others, so a list names it alone (catalog/models.py)
KEPT_PARTS = ("attention", "router", NON_EXPERTS)


@dataclass(frozen=True)
class Weighed:
    """A checkpoint's exact bytes in one weight format, read from its headers (`--checkpoint`)."""

    format: str  # a weight format of rules.yaml
    bytes: int


@dataclass(frozen=True)
class Model:
    """One catalog model."""

    id: str
    name: str
    family: str
    size_label: str
    params_b: float
    active_params_b: float | None
    native_context: int
    arch: Architecture
    license: License | None  # None only in a draft from a config.json (`gpumem models add`)
    source: str
    notes: str = ""
    release: str = "bf16"  # the weight format of the official checkpoint
    vision_params_b: float = 0.0  # a vision tower, kept at 16 bits by quantized formats
    mtp_params_b: float = 0.0  # multi-token prediction layers in the checkpoint, which vLLM loads only to speculate
    repos: dict[str, Repo] = field(default_factory=dict)  # by weight format: where each checkpoint is published
    weighed: Weighed | None = None  # the bytes of a checkpoint the reader has, in its format (gpumem estimate)

    def __hash__(self) -> int:
        """The id's hash: equal models have one id, and an engine's remembered call (engines/deployment.py)
        hashes its model each time, which the generated hash of every field makes cost more than
        the arithmetic it saves."""
        return hash(self.id)

    @property
    def is_moe(self) -> bool:
        return self.active_params_b is not None

    @property
    def hidden(self) -> int:
        return self.arch.hidden


@dataclass(frozen=True)
class FormFactor:
    """How a GPU is built: a PCIe card (its generation and slots), an SXM or OAM module, or a superchip."""

    kind: str  # pcie | sxm | oam | superchip
    pcie_gen: int = 0  # the host link's PCIe generation, 0 where the vendor gives none (superchips)
    slots: int = 0  # PCIe cards only


@dataclass(frozen=True)
class Link:
    """The GPU-to-GPU link: its kind, generation and bandwidth per GPU in GB/s, both directions summed."""

    kind: str  # nvlink | nvlink-bridge | infinity-fabric | pcie
    generation: str
    gb_s: float
    gpus: int = 0  # how many GPUs a bridge joins; 0 for a switched fabric or PCIe
    p2p: bool | None = None  # PCIe cards: whether two of them reach each other's memory (None: not known)
    p2p_source: str = ""


@dataclass(frozen=True)
class Gpu:
    """One catalog GPU."""

    id: str
    name: str
    full_name: str
    vendor: str
    segment: str
    memory_gb: float
    memory_type: str
    bandwidth_tb_s: float
    form_factor: FormFactor
    link: Link
    fp8: bool
    year: int
    aliases: tuple[str, ...]
    source: str
    # NVIDIA's CUDA compute capability ("8.6") or AMD's gfx target ("gfx942"): what an engine's kernels check.
    compute_capability: str = ""
    capability_source: str = ""
    visible_bytes: float = 0.0  # total memory as CUDA or ROCm report it; 0 when no log was found
    visible_source: str = ""
    # Dense tensor throughput per precision (bf16, fp8, fp4 in TFLOPS; int8 in TOPS), no sparsity.
    dense_tflops: dict[str, float] = field(default_factory=dict)
    throughput_source: str = ""
    notes: str = ""  # never shown

    @property
    def runtime_bytes(self) -> float:
        """The memory a runtime budgets from: the reported total, else the vendor's GB read as GiB
        (what HBM parts show: NVIDIA's "80 GB" H100 reports 79.2 GiB)."""
        return self.visible_bytes or self.memory_gb * 2**30


@dataclass(frozen=True)
class SizeClass:
    """A row of the guide tables: a nominal size and its representative model."""

    label: str
    size_b: float
    model: str


@dataclass(frozen=True)
class Rules:
    """Every constant of the memory math and the GPU choice (catalogs/rules.yaml)."""

    precisions: dict[str, float]
    kv_precisions: dict[str, float]
    serving_margin: float
    runtime_overhead: float
    runtime_overhead_low: float
    full_bytes: float
    full_parts: dict[str, float]
    full_example_params_b: float
    full_hf_bytes: float
    full_hf_parts: dict[str, float]
    lora_base_precision: str
    lora_margin: float
    lora_paper_reduction: float
    qlora_bytes: float
    qlora_base_precision: str
    qlora_example_params_b: float
    qlora_example_gpu_gb: float
    gpu_counts: tuple[int, ...]
    min_free_fraction: float
    comfortable_requests: int
    fit_context: int
    size_classes: tuple[SizeClass, ...]
    model_contexts: tuple[int, ...]
    page_requests: int
    card_sizes_gb: tuple[float, ...]
    weights_table_sizes_b: tuple[float, ...]
    chart_contexts: tuple[int, ...]
    model_formats: tuple[str, ...]
    example_model: str
    example_size_b: float
    heads_gpu: str
    tight_model: str
    mla_model: str
    small_model: str
    long_conversations: int
    busy_requests: int
    busy_context: int
    small_context: int
    serving_precisions: tuple[str, ...]
    fine_tuning_methods: tuple[str, ...]
    min_price_per_gpu_hour: float
    max_price_per_gpu_hour: float
    max_gpus_per_machine: int
    max_clock_skew_minutes: float
    facts: dict[str, tuple[float, float]] = field(default_factory=dict)
    calculator_limits: dict[str, float] = field(default_factory=dict)
    calculator_defaults: dict[str, Any] = field(default_factory=dict)
    calculator_old_weights: dict[str, str] = field(default_factory=dict)  # an earlier calculator's weights= -> the format now
    sources: dict[str, str] = field(default_factory=dict)
    deployment: DeploymentRules | None = None
    speed: SpeedRules | None = None
    price_examples: tuple[str, ...] = ()  # GPUs whose lowest price the main guide quotes
    consumer_gpu: str = ""  # the card the main guide checks fine-tuning against
    price_check_max_age_days: int = 0  # a price check older than this (before the snapshot) is not compared
    references: dict[str, str] = field(default_factory=dict)  # a cited address -> the name readers know it by
    training: TrainingRules | None = None
    support: SupportRules | None = None  # which GPUs each engine runs each format on (rules.yaml, support)
    api_page: ApiPageRules | None = None  # the page "Self-hosting or an API?" (rules.yaml, api_page)
    engines: dict[str, EnginePin] = field(default_factory=dict)  # the pinned engine versions (rules.yaml, engines)


@dataclass(frozen=True)
class Offer:
    """One machine on the marketplace: n GPUs of one model at a price per GPU-hour."""

    machine: str
    gpu: str
    gpus: int
    price_per_gpu_hour: float
    country: str
    form_factor: str
    interconnect: str


@dataclass(frozen=True)
class Snapshot:
    """The marketplace's offers at one moment."""

    name: str
    taken_at: datetime
    currency: str
    source: str
    offers: tuple[Offer, ...]

    @property
    def gpu_count(self) -> int:
        return sum(offer.gpus for offer in self.offers)


@dataclass(frozen=True)
class PriceCheck:
    """Another provider's price for one GPU, checked by hand on a date (catalogs/price_checks.yaml)."""

    provider: str
    gpu: str
    usd_per_gpu_hour: float
    checked_on: date
    url: str
    note: str = ""


@dataclass(frozen=True)
class ApiPrice:
    """A provider's published price per million tokens of an open model, seen on a date (catalogs/apis.yaml)."""

    provider: str
    model: str
    input_usd_per_million: float
    output_usd_per_million: float
    date: date
    source: str
    quantization: str = ""  # the weight format the provider serves, when it says


@dataclass(frozen=True)
class ApiPageRules:
    """The page "Self-hosting or an API?" (rules.yaml, api_page): the load its costs are estimated at,
    the utilisations its table shows, and the plausible range of an API price per million tokens."""

    concurrency: int
    prompt_tokens: int
    output_tokens: int
    utilisations: tuple[float, ...]
    min_usd_per_million: float
    max_usd_per_million: float
    stale_after_days: int = 0  # a price seen longer before the GPU snapshot is marked as possibly out of date (0: never)


@dataclass(frozen=True)
class Catalog:
    """Everything a build reads, validated."""

    models: tuple[Model, ...]
    gpus: tuple[Gpu, ...]
    rules: Rules
    snapshot: Snapshot
    earlier_snapshots: tuple[str, ...] = ()
    # Measured serving memory (catalogs/measurements/): the points as written and each config.json.
    measured_points: tuple[dict[str, Any], ...] = ()
    measured_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    price_checks: tuple[PriceCheck, ...] = ()  # other providers' dated prices (catalogs/price_checks.yaml)
    api_prices: tuple[ApiPrice, ...] = ()  # API prices per million tokens of the same open models (catalogs/apis.yaml)

    def model(self, model_id: str) -> Model:
        return next(m for m in self.models if m.id == model_id)

    def gpu(self, gpu_id: str) -> Gpu:
        return next(g for g in self.gpus if g.id == gpu_id)


@dataclass(frozen=True)
class Language:
    """One language of the site."""

    code: str
    name: str


@dataclass(frozen=True)
class Marketplace:
    """Who rents the GPUs (content/site.yaml, marketplace): its name, home page and the address
    that rents a configuration, a template of {gpu} (the catalog's GPU id) and {count}."""

    name: str
    home_url: str
    rent_url: str

    def rent(self, gpu: str, count: int) -> str:
        """The address that rents `count` × the GPU `gpu` (the id percent-encoded, though ids are slugs)."""
        return self.rent_url.replace("{gpu}", urllib.parse.quote(gpu, safe="")).replace("{count}", str(int(count)))


@dataclass(frozen=True)
class Site:
    """The site configuration (content/site.yaml): languages, base URL, routes and the marketplace."""

    base_url: str
    languages: tuple[Language, ...]
    routes: dict[str, dict[str, str]]
    stale_after_days: float
    route_lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (page key, language) -> line
    marketplace: Marketplace = Marketplace("", "", "")  # read_site always sets it; tests of routes alone need none

    @property
    def base_path(self) -> str:
        """The path part of the base URL, '/' for a site served from a host's root."""
        rest = self.base_url.split("://", 1)[-1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
