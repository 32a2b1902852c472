"""The training engine: peak memory per GPU while fine-tuning a model, in bytes.

Pure arithmetic on records, beside the serving engine (engines/deployment.py), whose weight formats
store the base: 16-bit for full fine-tuning and LoRA, NF4 with double quantization for QLoRA.
Every constant comes from rules.yaml's `training` block, each with its source:

- trainable parameters: every weight (full), or LoRA's r x (d_in + d_out) per targeted matrix,
  counted from the architecture (arXiv:2106.09685);
- per trainable parameter: weights, gradients, an FP32 master copy and the optimizer's states,
  by the precision convention (ZeRO's 16 bytes, arXiv:1910.02054, or Hugging Face's 18);
- activations: Korthikanti et al. (arXiv:2205.05198, section 4), 34 s b h + 5 a s^2 b bytes per
  layer at 16 bits without recomputation, without the s^2 scores when FlashAttention computes
  them on the fly, and 2 s b h per layer plus one layer's working set with full checkpointing;
  plus the FP32 logits over the vocabulary and the loss's log-probabilities;
- sharding: ZeRO-1 divides the optimizer states over the GPUs, ZeRO-2 also the gradients, ZeRO-3
  (and FSDP's full shard) also the weights, gathering whole layers as it goes;
- QLoRA: bitsandbytes' 4-bit layers dequantize their weight to a fresh 16-bit tensor for the matmul
  of the forward pass, of its recomputation and of the backward pass (MatMul4Bit in
  bitsandbytes/autograd/_functions.py); the peak holds a few layers' worth of those copies, a count
  (training.quantized.dequantized_layers) sized on the enforced QLoRA points;
- the CUDA context and libraries, as measured for the serving runtime (deployment.runtime);
- beside the peak, the caching allocator's reserve (training_fit.allocator_reserve): torch keeps freed
  blocks for reuse, so what it reserves exceeds what it allocates, and a card must hold both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from gpumem.engines.deployment import embedding_params, weights_bytes
from gpumem.records.catalog import Architecture, Model
from gpumem.records.engines import DeploymentRules, TrainingRules

METHODS = ("full", "lora", "qlora")
CHECKPOINTING = ("none", "full")
ZERO_STAGES = (0, 1, 2, 3)
MODULES = ("q", "k", "v", "o", "gate", "up", "down", "experts")
TARGETS = {
    "attn": ("q", "k", "v", "o"),
    "attn_mlp": ("q", "k", "v", "o", "gate", "up", "down"),
    "all": MODULES,
}


class FlagDefaults(TypedDict):
    checkpointing: str
    flash_attention: str
    optimizer: str
    zero: int
    offload_optimizer: bool


# What a setting rules.yaml's training.defaults leaves out means when not given (gpumem estimate and the calculator).
FLAG_DEFAULTS: FlagDefaults = {
    "checkpointing": "full",
    "flash_attention": "on",
    "optimizer": "adamw",
    "zero": 0,
    "offload_optimizer": False,
}


class TrainingError(ValueError):
    """A combination of settings no trainer runs, said in one sentence."""


def targets_of(preset: str, arch: Architecture) -> tuple[str, ...]:
    """The modules a named preset targets on this model: `all` takes the routed experts only where there are some."""
    if preset not in TARGETS:
        raise TrainingError(f"unknown LoRA targets {preset!r}: expected one of {', '.join(TARGETS)}")
    return tuple(module for module in TARGETS[preset] if module != "experts" or arch.experts is not None)


@dataclass(frozen=True)
class TrainingSetup:
    """One fine-tuning run: the method, the batch, the optimizer and how the GPUs share it."""

    method: str
    seq: int
    micro_batch: int = 1
    checkpointing: str = "full"
    flash_attention: bool = True
    optimizer: str = "adamw"
    precision: str = "mixed"
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()
    zero: int = 0  # 0: data parallel (every GPU holds everything); 3 also stands for FSDP's full shard
    gpus: int = 1
    offload_optimizer: bool = False  # optimizer states (and an FP32 master copy) in CPU memory
    fp32_unquantized: bool = False  # QLoRA: embeddings, norms and head cast to FP32 (PEFT's prepare_model_for_kbit_training)


@dataclass(frozen=True)
class Training:
    """Peak memory of one run on each GPU, by part, in bytes."""

    gpus: int
    trainable_params: float
    weights_bytes_per_gpu: float
    gradients_bytes_per_gpu: float
    optimizer_bytes_per_gpu: float
    activations_bytes_per_gpu: float
    runtime_bytes_per_gpu: float
    paged_optimizer: bool  # the optimizer's states live in unified memory, unseen by torch's counters
    dequantized_bytes_per_gpu: float = 0.0  # QLoRA: the 16-bit copies of 4-bit weights alive at the peak
    allocator_reserve: float = 0.0  # reserved / allocated - 1 (training_fit), 0 without a fit rule

    @property
    def total_bytes_per_gpu(self) -> float:
        """The peak: what torch allocates, the paged optimizer states and the CUDA context."""
        return (
            self.weights_bytes_per_gpu
            + self.gradients_bytes_per_gpu
            + self.optimizer_bytes_per_gpu
            + self.activations_bytes_per_gpu
            + self.dequantized_bytes_per_gpu
            + self.runtime_bytes_per_gpu
        )

    @property
    def allocated_bytes_per_gpu(self) -> float:
        """What torch's allocator counts: the peak without the CUDA context and paged optimizer states."""
        paged = self.optimizer_bytes_per_gpu if self.paged_optimizer else 0.0
        return self.total_bytes_per_gpu - self.runtime_bytes_per_gpu - paged

    @property
    def reserve_bytes_per_gpu(self) -> float:
        """The caching allocator's blocks beyond the live tensors, at the peak."""
        return self.allocated_bytes_per_gpu * self.allocator_reserve

    @property
    def footprint_bytes_per_gpu(self) -> float:
        """What a card must hold: the peak and the allocator's reserve (the training fit rule)."""
        return self.total_bytes_per_gpu + self.reserve_bytes_per_gpu


def matrices(arch: Architecture, modules: tuple[str, ...]) -> list[tuple[int, int, int]]:
    """The linear layers of the named modules over all layers, as (d_in, d_out, how many).

    q and o are heads x head_dim wide, k and v kv_heads x head_dim (MLA is counted with the same
    shapes); gate, up and down are the dense MLPs' and the shared experts'; `experts` the routed ones.
    """
    attention, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    experts = arch.experts
    moe_layers = arch.layers - experts.dense_layers if experts else 0
    dense_layers = arch.layers - moe_layers
    # (width, how many MLPs of that width) of the MLPs `gate`, `up` and `down` name
    mlps = [(arch.intermediate, dense_layers)]
    if experts and experts.shared:
        mlps.append((experts.intermediate, moe_layers * experts.shared))
    shapes = {
        "q": [(arch.hidden, attention, arch.layers)],
        "k": [(arch.hidden, kv, arch.layers)],
        "v": [(arch.hidden, kv, arch.layers)],
        "o": [(attention, arch.hidden, arch.layers)],
        "gate": [(arch.hidden, width, count) for width, count in mlps],
        "up": [(arch.hidden, width, count) for width, count in mlps],
        "down": [(width, arch.hidden, count) for width, count in mlps],
        "experts": [(arch.hidden, experts.intermediate, 3 * moe_layers * experts.count)] if experts else [],
    }
    return [shape for module in modules for shape in shapes[module] if shape[2] and shape[0] and shape[1]]


def lora_params(arch: Architecture, rank: int, modules: tuple[str, ...]) -> int:
    """LoRA's A (d_in x r) and B (r x d_out) for every targeted matrix."""
    return sum(rank * (d_in + d_out) * count for d_in, d_out, count in matrices(arch, modules))


def _factored_elements(model: Model, setup: TrainingSetup) -> float:
    """Adafactor's states: a row and a column vector per matrix (arXiv:1804.04235); vectors stay whole."""
    arch = model.arch
    if setup.method != "full":
        shapes = [(d_in, setup.lora_rank, n) for d_in, _, n in matrices(arch, setup.lora_targets)]
        shapes += [(setup.lora_rank, d_out, n) for _, d_out, n in matrices(arch, setup.lora_targets)]
        return sum((a + b) * n for a, b, n in shapes)
    linear = matrices(arch, MODULES)
    in_matrices = sum(a * b * n for a, b, n in linear) + embedding_params(arch)
    vectors = model.params_b * 1e9 - in_matrices
    tables = (arch.vocab + arch.hidden) * (1 if arch.tied_embeddings else 2)
    return sum((a + b) * n for a, b, n in linear) + tables + max(vectors, 0.0)


def check(model: Model, setup: TrainingSetup, rules: TrainingRules) -> None:
    """Refuse a run no trainer would start, naming the setting to change."""
    if setup.method not in METHODS:
        raise TrainingError(f"unknown method {setup.method!r}: expected one of {', '.join(METHODS)}")
    for name in ("seq", "micro_batch", "gpus"):
        if getattr(setup, name) < 1:
            raise TrainingError(f"{name} must be at least 1, got {getattr(setup, name)}")
    if setup.optimizer not in rules.optimizers:
        raise TrainingError(f"unknown optimizer {setup.optimizer!r}: expected one of {', '.join(rules.optimizers)}")
    if setup.precision not in rules.precisions:
        raise TrainingError(f"unknown precision {setup.precision!r}: expected one of {', '.join(rules.precisions)}")
    if setup.checkpointing not in CHECKPOINTING:
        raise TrainingError(f"unknown checkpointing {setup.checkpointing!r}: expected none or full")
    if setup.zero not in ZERO_STAGES:
        raise TrainingError(f"unknown ZeRO stage {setup.zero}: expected 0, 1, 2 or 3")
    if setup.zero and setup.gpus == 1:
        raise TrainingError(f"ZeRO-{setup.zero} on one GPU shards nothing: train on 2 GPUs or more, or without ZeRO")
    if setup.fp32_unquantized and setup.method != "qlora":
        raise TrainingError("only QLoRA has unquantized weights to keep in FP32 beside a 4-bit base")
    if setup.method == "full":
        if setup.lora_rank or setup.lora_targets:
            raise TrainingError("full fine-tuning trains every weight: a LoRA rank or LoRA targets apply only to lora and qlora")
        return
    if setup.offload_optimizer and rules.optimizers[setup.optimizer].paged:
        raise TrainingError(f"{setup.optimizer} already pages its states to CPU memory: do not also offload them")
    if setup.method == "qlora" and rules.precisions[setup.precision].master:
        raise TrainingError(
            "QLoRA keeps its base in 4 bits and trains adapters only: "
            "an FP32 master copy of the weights is full fine-tuning's setting (use bf16 precision)"
        )
    if not setup.lora_targets or any(module not in MODULES for module in setup.lora_targets):
        raise TrainingError(f"LoRA targets must be among {', '.join(MODULES)}, got {', '.join(setup.lora_targets) or 'none'}")
    if not 1 <= setup.lora_rank <= model.arch.hidden:
        raise TrainingError(f"LoRA rank {setup.lora_rank} is outside 1 to the hidden size ({model.arch.hidden:,})")
    if "experts" in setup.lora_targets and model.arch.experts is None:
        raise TrainingError(f"{model.name} has no routed experts for LoRA to target")


def fp32_widening(deployment: DeploymentRules) -> float:
    """How much wider an FP32 element is than a 16-bit one (deployment.weight_formats: 32 and 16 bits)."""
    return deployment.weight_formats["fp32"].bits / deployment.weight_formats["bf16"].bits


def activations_bytes(arch: Architecture, setup: TrainingSetup, rules: TrainingRules, wide: float = 1.0) -> float:
    """What the backward pass needs kept: every layer's activations, or with full checkpointing each
    layer's input plus one layer recomputed at a time; and the logits over the vocabulary.

    With the embeddings in FP32 (fp32_unquantized) the residual stream between layers is FP32 too,
    so its copies (each layer's checkpointed input, the norms' inputs) are `wide` times their 16-bit bytes.
    """
    tokens = setup.seq * setup.micro_batch
    layer = tokens * arch.hidden * (rules.layer_bytes + (wide - 1) * rules.norm_bytes)
    if not setup.flash_attention:
        layer += arch.heads * setup.seq * setup.seq * setup.micro_batch * rules.score_bytes
    if setup.checkpointing == "full":
        kept = arch.layers * tokens * arch.hidden * rules.checkpoint_bytes * wide + layer
    else:
        kept = arch.layers * layer
    return kept + tokens * arch.vocab * rules.logit_bytes


def dequantized_bytes(arch: Architecture, setup: TrainingSetup, rules: TrainingRules, deployment: DeploymentRules) -> float:
    """QLoRA's 16-bit copies of 4-bit weights alive at the peak: `dequantized_layers` layers' linear weights.

    MatMul4Bit's forward computes linear(A, dequantize_4bit(B).to(A.dtype)) and its backward
    grad_output @ dequantize_4bit(B).to(grad_output.dtype): each matmul makes a whole 16-bit copy of
    its weight (and a second one when the quantization state's dtype is not the compute dtype). The
    copies are freed after the matmul, but the recomputed forward, the backward and (under FSDP) the
    prefetched layer overlap, so how many layers' worth coexist is measured, not derived.
    """
    sixteen = deployment.weight_formats["bf16"].bits
    if deployment.weight_formats[rules.base_formats[setup.method]].bits >= sixteen:
        return 0.0  # a 16-bit base is read as it is
    layer = sum(d_in * d_out * count for d_in, d_out, count in matrices(arch, MODULES)) / arch.layers
    return rules.dequantized_layers * layer * sixteen / 8


def training(model: Model, setup: TrainingSetup, rules: TrainingRules, deployment: DeploymentRules) -> Training:
    """Peak memory per GPU of one fine-tuning run."""
    check(model, setup, rules)
    precision, optimizer = rules.precisions[setup.precision], rules.optimizers[setup.optimizer]
    gpus, arch = setup.gpus, model.arch
    base = weights_bytes(model, deployment.weight_formats[rules.base_formats[setup.method]])
    if setup.method == "full":
        trainable = model.params_b * 1e9  # a vision tower included
        weights = trainable * precision.weights
    else:
        trainable = float(lora_params(arch, setup.lora_rank, setup.lora_targets))
        weights = base + trainable * precision.weights
        if setup.fp32_unquantized:  # what the 4-bit format keeps at 16 bits goes to 32
            weights += (
                (embedding_params(arch) + model.vision_params_b * 1e9)
                * deployment.weight_formats["bf16"].bits
                / 8
                * (fp32_widening(deployment) - 1)
            )
    state_bytes = optimizer.state_bytes or precision.states
    elements = _factored_elements(model, setup) if optimizer.factored else trainable
    optimizer_bytes = trainable * precision.master + elements * optimizer.states * state_bytes
    gradients = trainable * precision.gradients
    if setup.zero >= 1:
        optimizer_bytes /= gpus
    if setup.zero >= 2:
        gradients /= gpus
    if setup.zero >= 3:
        gathered = min(rules.gathered_layers, arch.layers) * base / arch.layers
        weights = weights / gpus + gathered * (1 - 1 / gpus)
    runtime = deployment.non_torch_bytes + (deployment.parallel_bytes if gpus > 1 else 0.0)
    return Training(
        gpus=gpus,
        trainable_params=trainable,
        weights_bytes_per_gpu=weights,
        gradients_bytes_per_gpu=gradients,
        optimizer_bytes_per_gpu=0.0 if setup.offload_optimizer else optimizer_bytes,
        activations_bytes_per_gpu=activations_bytes(arch, setup, rules, fp32_widening(deployment) if setup.fp32_unquantized else 1.0),
        runtime_bytes_per_gpu=runtime,
        paged_optimizer=optimizer.paged,
        dequantized_bytes_per_gpu=dequantized_bytes(arch, setup, rules, deployment),
        allocator_reserve=rules.fit.allocator_reserve if rules.fit else 0.0,
    )
