"""The engines' constants as typed records: rules.yaml's deployment block (the weight and KV-cache formats and
what the runtime allocates), its training block and its speed block, read by catalog/deployment.py, catalog/training.py
and catalog/speed.py, and passed as they are to engines/deployment.py, engines/training.py and engines/speed.py."""

from __future__ import annotations

from dataclasses import dataclass, field

RUNTIME_LABELS = {"vllm": "vLLM", "llama.cpp": "llama.cpp"}  # each runtime's name as pages and commands write it
# Every engine the speed engine is calibrated on (rules.yaml speed.efficiency), named as pages write it.
ENGINE_LABELS = {**RUNTIME_LABELS, "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM"}


@dataclass(frozen=True)
class EnginePin:
    """One engine version the deployment figures and launch commands follow (rules.yaml, engines)."""

    name: str  # vllm | llama.cpp
    version: str  # a release ("0.33.0") or a build tag
    commit: str  # 7 to 40 hex digits
    source: str  # why this commit is that version

    @property
    def label(self) -> str:
        """The engine's name as pages write it."""
        return RUNTIME_LABELS[self.name]

    @property
    def label_version(self) -> str:
        """Its name and version: "vLLM 0.33.0"."""
        return f"{self.label} {self.version}"


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its weights (rules.yaml, deployment.weight_formats)."""

    name: str
    label: str
    bits: float  # per quantized weight, scales and zero points included (GGUF: a Llama-3-8B file's average)
    scope: str  # all | linear | experts: which weights take `bits` (the others stay at 16 bits); tensors: GGUF, per tensor
    runtime: str  # vllm | llama.cpp
    pad_to: int = 0  # the runtime pads the experts' intermediate width to a multiple of this
    file_type: str = ""  # scope tensors: llama.cpp's file type (engines/gguf.FILE_TYPES), which types each tensor


@dataclass(frozen=True)
class KvFormat:
    """How a runtime stores the key-value cache (rules.yaml, deployment.kv_formats)."""

    name: str
    label: str
    bytes: float  # per element
    runtime: str


@dataclass(frozen=True)
class DeploymentRules:
    """The runtime's constants: its memory budget, its own memory and its scheduler defaults.

    Hashable, as the engines' remembered calls need (engines/deployment.py): the two tables are compared
    but left out of the hash, so equal rules still hash alike.
    """

    weight_formats: dict[str, WeightFormat] = field(hash=False)
    kv_formats: dict[str, KvFormat] = field(hash=False)
    utilization: float
    non_torch_bytes: float
    parallel_bytes: float
    activation_bytes: float
    sampler_bytes: float
    llamacpp_batch: int
    large_card_gib: float
    large_card_exceptions: tuple[str, ...]
    large_batch_tokens: int
    large_batch_sequences: int
    small_batch_tokens: int
    small_batch_sequences: int
    huge_card_gib: float
    huge_batch_tokens: int
    huge_batch_sequences: int
    cuda_graph_bytes: float  # vLLM's CUDA-graph memory estimate, taken from the KV budget since v0.21
    llamacpp_copies: int  # llama.cpp's pipeline copies of its compute buffers on several GPUs
    in_flight_batches: int  # vLLM's steps scheduled but not settled (async scheduling): what sliding layers reserve for
    state_blocks: int  # vLLM's state pages per request and state layer (prefix caching's align mode)
    state_alignment: dict[str, int] = field(hash=False)  # tokens a hybrid's block size is a multiple of, per state kind


@dataclass(frozen=True)
class TrainingPrecision:
    """Bytes per trainable parameter of one mixed-precision convention (rules.yaml, training.precisions)."""

    name: str
    weights: float  # the trainable weights as the forward pass reads them (and an FP32 copy where counted here)
    gradients: float
    master: float  # an FP32 master copy kept with the optimizer states (ZeRO's convention)
    states: float  # one optimizer state element, unless the optimizer fixes its own


@dataclass(frozen=True)
class TrainingOptimizer:
    """One optimizer's states per trainable parameter (rules.yaml, training.optimizers)."""

    name: str
    states: int  # state tensors per parameter: 2 for Adam (momentum, variance), 1 for SGD's momentum
    state_bytes: float  # bytes per state element; 0 = the precision's
    paged: bool = False  # states in CUDA unified memory, which torch's counters do not see
    factored: bool = False  # Adafactor: one row and one column vector per matrix instead of a full state


@dataclass(frozen=True)
class TrainingRules:
    """The training engine's constants (rules.yaml, training)."""

    precisions: dict[str, TrainingPrecision]
    optimizers: dict[str, TrainingOptimizer]
    base_formats: dict[str, str]  # method -> weight format of the frozen or trained base
    layer_bytes: float  # activations one layer stores per token and hidden unit, 16-bit, no recomputation
    score_bytes: float  # per head and token pair when the attention scores are stored (no FlashAttention)
    checkpoint_bytes: float  # per token and hidden unit of each layer's input kept by full checkpointing
    norm_bytes: float  # the part of layer_bytes that is the norms' inputs (copies of the residual stream)
    logit_bytes: float  # per token and vocabulary entry: the FP32 logits and the loss's log-probabilities
    gathered_layers: int  # layers whose full weights ZeRO-3 / FSDP gather at once (the current and the prefetched)
    dequantized_layers: float  # QLoRA: layers' worth of 16-bit weights bitsandbytes' 4-bit layers hold at the peak
    fit: TrainingFit | None = None  # when a card holds a run, and when it holds it comfortably (rules.yaml, training_fit)
    defaults: TrainingDefaults | None = None  # what `gpumem estimate --mode` assumes for a flag left out
    pages: TrainingPages | None = None  # the setting the model pages and the fine-tuning guide state
    run: TrainingRun | None = None  # the run the fine-tuning guide prices


@dataclass(frozen=True)
class TrainingFit:
    """The training fit rule (rules.yaml, training_fit): a card holds a run when the peak, the caching
    allocator's reserve on top of what torch allocates, and the CUDA context fit its memory; it holds it
    comfortably when that leaves at least `comfortable_free` of the memory free."""

    allocator_reserve: float  # reserved / allocated - 1, the caching allocator's blocks beyond live tensors
    comfortable_free: float  # the fraction of the card's memory a comfortable fit leaves free


@dataclass(frozen=True)
class TrainingDefaults:
    """The setting `gpumem estimate --mode` assumes (rules.yaml, training.defaults)."""

    seq: int
    micro_batch: int
    lora_rank: int
    lora_targets: str
    precision: dict[str, str]  # by method


@dataclass(frozen=True)
class TrainingPages:
    """The typical setting every model page's "Fine-tune it" section states (rules.yaml, training.pages)."""

    seq: int
    micro_batches: tuple[int, ...]
    checkpointing: str
    flash_attention: bool
    optimizer: str
    lora_rank: int
    lora_targets: str


@dataclass(frozen=True)
class TrainingRun:
    """The fine-tuning guide's model and the run it prices (rules.yaml, training.run)."""

    model: str
    tokens: float
    flops_per_token_per_param: float  # forward and backward: 6 N per token (arXiv:2001.08361)
    mfu: float  # model FLOPs utilisation: the share of the GPU's dense BF16 throughput a run achieves


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the datasheet peaks an engine reaches: memory bandwidth (GDDR and HBM cards apart),
    and dense throughput in decode and in prefill; and the fixed time it spends per layer."""

    bandwidth_gddr: float
    bandwidth_hbm: float
    compute: float
    prefill: float
    prefill_moe: float  # a mixture of experts' prefill: grouped expert GEMMs run below a dense GEMM
    prefill_quantized: float  # the prefill of weights the engine's own quantized kernels multiply (engines/speed.py)
    layer_overhead_s: float = 0.0  # fixed time per layer and forward pass: kernel launches and synchronisation
    layer_overhead_quantized_s: float = 0.0  # and what the engine's quantized kernels add to it
    layer_overhead_moe_s: float = 0.0  # and what a mixture of experts' layer adds: routing and the grouped expert kernels
    allreduce_link_s: float = 0.0  # fixed cost of the engine's own all-reduce: NVLink, Infinity Fabric, two P2P PCIe cards
    allreduce_pcie_s: float = 0.0  # and of NCCL's over PCIe (speed.link_path)

    def bandwidth(self, memory_type: str) -> float:
        """The fraction of a card's bandwidth reached, by its memory: HBM stacks or GDDR chips."""
        return self.bandwidth_hbm if memory_type.upper().startswith("HBM") else self.bandwidth_gddr

    def prefill_share(self, moe: bool, quantized: bool) -> float:
        """The fraction of the tensor rate a prompt's matrix products reach: a mixture of experts' grouped GEMMs,
        else the engine's quantized kernels (speed.quantized_kernels), else a dense 16-bit or FP8 GEMM."""
        return self.prefill_moe if moe else self.prefill_quantized if quantized else self.prefill

    def layer_overhead(self, quantized: bool, moe: bool) -> float:
        """The fixed time per layer and forward pass, with the quantized kernels' own when they multiply the weights,
        and a mixture of experts' own (engines/speed.fixed_s)."""
        return self.layer_overhead_s + (self.layer_overhead_quantized_s if quantized else 0.0) + (self.layer_overhead_moe_s if moe else 0.0)

    def allreduce(self, path: str) -> float:
        """The fixed cost of one all-reduce on a path: "link" or "pcie" (engines/speed.link_path)."""
        return self.allreduce_pcie_s if path == "pcie" else self.allreduce_link_s


@dataclass(frozen=True)
class SpeedPages:
    """The load the pages state their speed figures at (rules.yaml, speed.pages)."""

    prompt_tokens: int
    output_tokens: int
    busy_requests: int  # "busy load": requests running at once; "one request" is 1
    kv_format: str
    guide_formats: tuple[str, ...]  # the inference guide's columns, weight formats by name


@dataclass(frozen=True)
class SpeedCheck:
    """One engine against published measurements of one kind, each predicted without its source (rules.yaml,
    speed.calibration)."""

    points: int
    within: int
    bound: float
    mean_error: float
    worst_error: float


@dataclass(frozen=True)
class SpeedCalibration:
    """What the pages say about the speed engine's error: each engine's checks (decode, aggregate) on the
    measurements of a source left out of its fit."""

    engines: dict[str, dict[str, SpeedCheck]]
    measured: dict[str, frozenset[str]]  # by engine: the GPUs (catalog ids) it has a measured decode or aggregate run on

    def check(self, engine: str, name: str) -> SpeedCheck | None:
        return self.engines.get(engine, {}).get(name)

    @staticmethod
    def label(engine: str) -> str:
        """An engine's name as pages write it."""
        return ENGINE_LABELS[engine]

    def unmeasured(self, engine: str, gpu: str) -> bool:
        """Whether a figure of this engine on this GPU rests on the fit alone, with no run of its own."""
        return gpu not in self.measured.get(engine, frozenset())


@dataclass(frozen=True)
class SpeedRules:
    """The speed engine's constants (rules.yaml, speed)."""

    efficiency: dict[str, Efficiency]  # by engine: vllm, sglang, tensorrt-llm, llama.cpp
    compute_precision: dict[str, tuple[str, ...]]  # weight format -> tensor rates tried in order, else bf16
    pcie_gb_s: dict[int, float]  # PCIe generation -> x16 GB/s, both directions summed
    activation_bytes: float  # bytes per hidden-state element in a tensor-parallel all-reduce
    pages: SpeedPages | None = None  # the pages' load; None: the site shows no speed figure

    label = staticmethod(SpeedCalibration.label)  # an engine's name as pages write it

    def unmeasured(self, engine: str, gpu: str) -> bool:
        """Whether a figure of this engine on this GPU rests on the fit alone (never, without a calibration)."""
        return self.calibration is not None and self.calibration.unmeasured(engine, gpu)

    calibration: SpeedCalibration | None = None
    # engine -> weight format -> tensor rates, where the engine's kernels differ from compute_precision's
    engine_precision: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Reach:
    """Where one engine runs one weight or KV format (rules.yaml, support): the capabilities as written."""

    nvidia: str  # the lowest CUDA compute capability, "8.9"; "" when no NVIDIA GPU runs it
    amd: tuple[str, ...]  # the gfx targets that run it
    source: str
    fallback_below: str = ""  # below this capability the engine runs the format through `fallback_via`
    fallback_via: str = ""


@dataclass(frozen=True)
class SupportRules:
    """Which GPUs each engine runs each format on (rules.yaml, support); engines/support.py decides with it."""

    engines: dict[str, EnginePin]  # the pinned versions the table was read at (rules.yaml, engines)
    weights: dict[str, dict[str, Reach]]  # engine -> weight format -> where it runs; a format not listed is not loaded
    kv: dict[str, dict[str, Reach]]  # engine -> KV-cache format -> where it runs
    equivalents: dict[str, str]  # weight format -> the llama.cpp format that stands in where its own engine cannot
