"""The speed engine: tokens per second and cost per million tokens from a roofline model.

Pure arithmetic on records (a model, its weight and KV formats, a GPU configuration and a
load), beside the memory engine in engines/deployment.py; no files, no formatting. Each decode step
reads every GPU's share of the weights (for a mixture of experts, only the experts the batch
touches) and the KV cache of every running request, and does two FLOPs per active parameter
per token: its time is the larger of bytes over bandwidth and FLOPs over dense throughput,
each times the fraction of the datasheet peak the engine reaches (rules.yaml, speed), plus
the tensor-parallel all-reduces over the GPU-to-GPU link. Prefill is the prompt's FLOPs over
dense throughput, in passes of the engine's chunk (prefill_chunk): each pass reads the weights and
pays the fixed costs again. llama.cpp splits layers across GPUs instead: they take turns, so its
step reads the whole model at one GPU's bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpumem.engines import gguf
from gpumem.engines.deployment import batch_defaults, expert_params, kv_cache_bytes_per_gpu, weights_bytes
from gpumem.records.catalog import Architecture, Gpu, Model
from gpumem.records.engines import DeploymentRules, Efficiency, KvFormat, SpeedRules, WeightFormat

SECONDS_PER_HOUR = 3600
MILLION = 1e6
# The load `gpumem estimate --speed` and the calculator assume when none is given: each request's prompt and output tokens.
DEFAULT_PROMPT = 1000
DEFAULT_OUTPUT = 1000


@dataclass(frozen=True)
class Load:
    """What the configuration serves: requests running at once, and each one's prompt and output lengths."""

    concurrency: int
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Step:
    """One decode step on one GPU: its parts in seconds (the larger of memory and compute, plus the link
    and the engine's fixed time per layer)."""

    memory_s: float
    compute_s: float
    link_s: float
    overhead_s: float = 0.0

    @property
    def seconds(self) -> float:
        return max(self.memory_s, self.compute_s) + self.link_s + self.overhead_s


@dataclass(frozen=True)
class Speed:
    """A configuration's speed under a load, and its cost when it has a price.

    decode_tokens_per_s_per_request is one decode step's rate (what ITL or llama-bench tgN measure);
    ttft_s is one prompt's prefill plus the first step, without waiting behind other requests; the
    input-token cost divides the price by the prompt tokens the configuration prefills in an hour.
    """

    decode_tokens_per_s_per_request: float
    aggregate_tokens_per_s: float
    ttft_s: float
    prefill_tokens_per_s: float
    step: Step
    usd_per_million_output_tokens: float | None = None
    usd_per_million_input_tokens: float | None = None


def compute_precision(rules: SpeedRules, fmt: WeightFormat, gpu: Gpu, runtime: str = "") -> str:
    """The tensor rate a format's matrix products run at on an engine: the first of its precisions the GPU has, the
    engine's own where rules.yaml gives them (compute_precision.by_engine), else bf16."""
    rates = rules.engine_precision.get(runtime, {}).get(fmt.name) or rules.compute_precision.get(fmt.name, ())
    for precision in rates:
        if precision in gpu.dense_tflops:
            return precision
    return "bf16"


MIXED_PRECISION = ("awq", "gptq")  # 4-bit weights vLLM multiplies with 16-bit activations in its W4A16 kernels


def quantized_kernels(fmt: WeightFormat) -> bool:
    """Whether the engine multiplies these weights in its own quantized kernels: llama.cpp's MMQ takes every GGUF type
    on NVIDIA GPUs from Turing on and on CDNA3, in int8 tensor-core tiles (ggml_cuda_should_use_mmq,
    https://github.com/ggml-org/llama.cpp/blob/0c1e57098/ggml/src/ggml-cuda/mmq.cu#L318-L373); vLLM runs AWQ and GPTQ
    checkpoints in its mixed-precision kernels, Machete on Hopper and Marlin elsewhere (choose_mp_linear_kernel,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/kernels/linear/__init__.py#L538-L548)."""
    return fmt.runtime == "llama.cpp" or fmt.name in MIXED_PRECISION


def link_path(gpu: Gpu, gpus: int) -> str:
    """Which all-reduce joins `gpus` cards: "link", the engine's own over NVLink, an NVLink bridge or Infinity Fabric,
    and over two PCIe cards known to reach each other's memory; else "pcie", NCCL's over PCIe (PCIe cards, and a
    bridge joining fewer cards than used). vLLM's custom all-reduce needs peer access and, without NVLink, at most
    two GPUs (CustomAllreduce.__init__, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/distributed/device_communicators/custom_all_reduce.py#L253-L290);
    the same kernel runs over either wire, so two such PCIe cards take the link's fixed cost. Two such runs are
    measured (tests/measurements/speed.yaml) and they bracket it: 2 x RTX PRO 6000 (four points of one source), fitted
    apart, came out 26 µs against the link's 15 and NCCL's 21 over PCIe, while 2 x L40S decodes 10 % faster than the
    figure at the link's cost. A card whose peer access is not known (gpus.yaml link.p2p) gets NCCL's."""
    link = gpu.link
    if link.kind == "pcie" and gpus == 2 and link.p2p:
        return "link"
    return "pcie" if link.kind == "pcie" or (link.kind == "nvlink-bridge" and gpus > link.gpus) else "link"


def link_bytes_per_s(rules: SpeedRules, gpu: Gpu, gpus: int) -> float:
    """One direction of the GPU-to-GPU path: the link, or PCIe when a bridge joins fewer cards than used."""
    link = gpu.link
    if link.kind == "nvlink-bridge" and gpus > link.gpus:
        return rules.pcie_gb_s[gpu.form_factor.pcie_gen] * 1e9 / 2
    return link.gb_s * 1e9 / 2


def touched_expert_fraction(arch: Architecture, tokens: int) -> float:
    """Expected share of a layer's routed experts that `tokens` tokens use, each picking `active` of `count`."""
    experts = arch.experts
    if experts is None:
        return 1.0
    return 1 - (1 - experts.active / experts.count) ** tokens


def weight_bytes_read(model: Model, fmt: WeightFormat, tokens: int) -> float:
    """Weights one step reads in all: everything, less the routed experts no token of the batch uses."""
    total = weights_bytes(model, fmt)
    if model.arch.experts is None:
        return total
    if fmt.scope == "tensors":
        experts = float(gguf.expert_bytes(model.arch, fmt.file_type))
    else:
        experts = expert_params(model.arch, fmt.pad_to) * fmt.bits / 8
    return total - experts * (1 - touched_expert_fraction(model.arch, tokens))


def matmul_flops_per_token(model: Model) -> float:
    """Two FLOPs per active parameter, the input embedding (a lookup) left out."""
    active = (model.active_params_b or model.params_b) - model.vision_params_b
    lookup = 0 if model.arch.tied_embeddings else model.arch.vocab * model.arch.hidden
    return 2 * (active * 1e9 - lookup)


def attention_flops_per_token(arch: Architecture, context: float) -> float:
    """Scores and weighted sum over the cached tokens in each attention layer (MLA attends over its latent): `context`
    of them in a full layer, at most its window in a sliding or chunked one; a hybrid's state layers and MLP-only
    blocks attend over nothing."""
    width = arch.attention.kv_lora_rank if arch.attention.kind == "mla" else arch.head_dim
    local = arch.attention.sliding_layers if arch.attention.windowed else 0
    seen = (arch.attention_layers - local) * context + local * min(context, arch.attention.window)
    return 4 * arch.heads * width * seen


def blocks(arch: Architecture) -> int:
    """Residual blocks in all, one all-reduce each under tensor parallelism: two a layer (attention, or a state, then
    the MLP), or one where every layer is a single mixer, as Nemotron-H's decoder layers are (one norm and one mixer
    each: https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/nemotron_h.py#L278-L545)."""
    return arch.layers * arch.blocks_per_layer


def allreduces(arch: Architecture) -> int:
    """All-reduces one forward pass makes under tensor parallelism: one per residual block (blocks), and one more in
    each attention layer whose q and k norms span every head (Attention.qk_norm "per_layer"): MiniMax M2 norms the
    whole of q and of k, so each GPU's share of the sums of squares is all-reduced, q's and k's in one call, before the
    norm applies (MiniMaxM2Attention, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/minimax_m2.py#L215-L241;
    _minimax_qk_norm_fusion, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/minimax_rms_norm/rms_norm_tp.py#L209-L253).
    Its few bytes take no ring time, only the all-reduce's fixed cost."""
    return blocks(arch) + (arch.attention_layers if arch.attention.qk_norm == "per_layer" else 0)


def fixed_s(efficiency: Efficiency, arch: Architecture, quantized: bool) -> float:
    """The engine's fixed time of one forward pass: its time per layer, counted in two-block layers, and in a mixture
    of experts each layer's own. Its MoE block runs more kernels than a dense MLP: the router's product and top-k,
    then sorting the tokens by expert, two grouped expert products, the activation between them and the weighted sum
    (fused_experts_impl, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/fused_moe.py#L1786-L1867).
    Counted over every two-block layer, a few dense ones (DeepSeek's first three) included."""
    return blocks(arch) / 2 * efficiency.layer_overhead(quantized, arch.experts is not None)


def allreduce_s(rules: SpeedRules, model: Model, gpu: Gpu, gpus: int, tokens: int, runtime: str) -> float:
    """One all-reduce of the tokens' hidden states per residual block (blocks), ring algorithm, and every all-reduce
    (allreduces) with the engine's fixed cost on its path (a link or PCIe)."""
    if gpus == 1:
        return 0.0
    size = tokens * model.arch.hidden * rules.activation_bytes
    ring = 2 * (gpus - 1) / gpus * size / link_bytes_per_s(rules, gpu, gpus)
    return blocks(model.arch) * ring + allreduces(model.arch) * rules.efficiency[runtime].allreduce(link_path(gpu, gpus))


def decode_step(
    rules: SpeedRules, model: Model, fmt: WeightFormat, kv: KvFormat, gpu: Gpu, gpus: int, batch: int, context: float, runtime: str
) -> Step:
    """One decode step of `batch` requests each `context` tokens deep on `gpus` GPUs, per GPU."""
    efficiency = rules.efficiency[runtime]
    split = 1 if runtime == "llama.cpp" else gpus  # llama.cpp's GPUs take turns over their layers
    cache = kv_cache_bytes_per_gpu(model.arch, kv, round(context), batch, split, runtime)
    read = weight_bytes_read(model, fmt, batch) / split + cache
    flops = batch * (matmul_flops_per_token(model) + attention_flops_per_token(model.arch, context)) / split
    rate = gpu.dense_tflops[compute_precision(rules, fmt, gpu, runtime)] * 1e12
    link = 0.0 if runtime == "llama.cpp" else allreduce_s(rules, model, gpu, gpus, batch, runtime)
    return Step(
        memory_s=read / (gpu.bandwidth_tb_s * 1e12 * efficiency.bandwidth(gpu.memory_type)),
        compute_s=flops / (rate * efficiency.compute),
        link_s=link,
        overhead_s=fixed_s(efficiency, model.arch, quantized_kernels(fmt)),
    )


def prefill_chunk(rules: DeploymentRules, runtime: str, gpu: Gpu) -> int:
    """Prompt tokens one forward pass takes: llama.cpp's micro-batch (n_ubatch); vLLM's max_num_batched_tokens for the
    card (batch_defaults), as chunked prefill is on by default and the scheduler cuts a prompt to that step budget
    (SchedulerConfig.enable_chunked_prefill, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/scheduler.py#L134,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py#L3044-L3048); 0, the whole prompt in one
    pass, for SGLang and TensorRT-LLM: the site launches neither."""
    if runtime == "llama.cpp":
        return rules.llamacpp_batch
    if runtime == "vllm":
        return batch_defaults(rules, gpu.runtime_bytes, gpu.id).tokens
    return 0


def passes(prompt: int, chunk: int) -> int:
    """Forward passes a prompt takes in chunks of `chunk` tokens (one when 0)."""
    return math.ceil(prompt / chunk) if chunk and prompt else 1


def prefill_step(
    rules: SpeedRules, model: Model, fmt: WeightFormat, gpu: Gpu, gpus: int, prompt: int, runtime: str, chunk: int = 0
) -> Step:
    """One prompt's prefill, in the parts of a step: its FLOPs (causal attention over half the prompt on average)
    over dense throughput, or reading the weights once per pass if that takes longer, plus the link and the time per
    layer of every pass."""
    efficiency = rules.efficiency[runtime]
    split = 1 if runtime == "llama.cpp" else gpus
    times = passes(prompt, chunk)
    flops = prompt * (matmul_flops_per_token(model) + attention_flops_per_token(model.arch, prompt / 2)) / split
    rate = gpu.dense_tflops[compute_precision(rules, fmt, gpu, runtime)] * 1e12
    compute = flops / (rate * efficiency.prefill_share(model.is_moe, quantized_kernels(fmt)))
    memory = times * weights_bytes(model, fmt) / split / (gpu.bandwidth_tb_s * 1e12 * efficiency.bandwidth(gpu.memory_type))
    link = 0.0
    if runtime != "llama.cpp" and gpus > 1:  # the ring carries the prompt once; every pass pays the fixed cost
        fixed = allreduces(model.arch) * efficiency.allreduce(link_path(gpu, gpus))
        link = allreduce_s(rules, model, gpu, gpus, prompt, runtime) + (times - 1) * fixed
    overhead = times * fixed_s(efficiency, model.arch, quantized_kernels(fmt))
    return Step(memory_s=memory, compute_s=compute, link_s=link, overhead_s=overhead)


def prefill_s(rules: SpeedRules, model: Model, fmt: WeightFormat, gpu: Gpu, gpus: int, prompt: int, runtime: str, chunk: int = 0) -> float:
    """One prompt's prefill in seconds (none without a prompt)."""
    return prefill_step(rules, model, fmt, gpu, gpus, prompt, runtime, chunk).seconds if prompt else 0.0


def speed(
    rules: SpeedRules,
    model: Model,
    fmt: WeightFormat,
    kv: KvFormat,
    gpu: Gpu,
    gpus: int,
    load: Load,
    price_per_hour: float | None = None,
    runtime: str = "",
    chunk: int = 0,
) -> Speed:
    """Tokens per second of a load on `gpus` x `gpu`, and US$ per million tokens at the configuration's price.

    Decode runs at the load's average depth (prompt plus half the output). The aggregate counts the
    prefills the running requests need between them: a round of `concurrency` requests takes their
    prefills plus `output_tokens` decode steps. The runtime is the format's unless another engine
    ran it (a measured point of SGLang or TensorRT-LLM takes that engine's factors); `chunk` is its prefill chunk
    (prefill_chunk), 0 for the prompt in one pass.
    """
    runtime = runtime or fmt.runtime
    context = load.prompt_tokens + load.output_tokens / 2
    step = decode_step(rules, model, fmt, kv, gpu, gpus, load.concurrency, context, runtime)
    prefill = prefill_s(rules, model, fmt, gpu, gpus, load.prompt_tokens, runtime, chunk)
    round_s = load.concurrency * prefill + load.output_tokens * step.seconds
    aggregate = load.concurrency * load.output_tokens / round_s if round_s else 0.0
    prefill_rate = load.prompt_tokens / prefill if prefill else 0.0
    return Speed(
        decode_tokens_per_s_per_request=1 / step.seconds,
        aggregate_tokens_per_s=aggregate,
        ttft_s=prefill + step.seconds,
        prefill_tokens_per_s=prefill_rate,
        step=step,
        usd_per_million_output_tokens=_per_million(price_per_hour, aggregate),
        usd_per_million_input_tokens=_per_million(price_per_hour, prefill_rate),
    )


def served(
    rules: SpeedRules,
    deployment: DeploymentRules,
    model: Model,
    fmt: WeightFormat,
    kv: KvFormat,
    gpu: Gpu,
    gpus: int,
    load: Load,
    price_per_hour: float | None = None,
    runtime: str = "",
) -> Speed:
    """speed() as the engine runs by default on the card, prompts cut to its prefill chunk (prefill_chunk): what the
    pages, the calculator, `gpumem estimate --speed` and the measured points' checks show."""
    runtime = runtime or fmt.runtime
    return speed(rules, model, fmt, kv, gpu, gpus, load, price_per_hour, runtime, prefill_chunk(deployment, runtime, gpu))


def _per_million(price_per_hour: float | None, tokens_per_s: float) -> float | None:
    """The configuration's price per hour over the tokens it makes in an hour, per million."""
    if price_per_hour is None or not tokens_per_s:
        return None
    return price_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * MILLION
