"""Layer 2 of the memory model: what vLLM or llama.cpp allocate on each GPU, in bytes.

Pure arithmetic on records (models, weight and KV formats, runtime constants from
rules.yaml); no files, no formatting. Layer 1, the rule of thumb the original guides
teach, stays in engines/memory.py.

The budget is vLLM's: on every GPU, weights + the runtime (non-torch memory and the
activation peak of the profiling run) + the CUDA-graph memory estimate + the KV cache must fit
within gpu_memory_utilization x the card's memory as CUDA reports it. The terms follow the engine
versions rules.yaml pins (`engines:`); each function cites the file it follows, at the commit read
(vLLM read in its 0.33.0 wheel from PyPI, cited at the tag v0.33.0 with line ranges).

A build asks for the same deployment again and again (a model page's tables, its GPUs' pages, the
speed figures: 38,858 calls for 4,303 distinct arguments), so `deployment` and
`kv_cache_bytes_per_gpu` are remembered (functools.cache). Their arguments are frozen records,
values: the same arguments give the same answer for ever, so a cache at module level is correct;
`forget` empties it, which each build does first (figures.site_figures) so that a long-running
preview does not keep every catalog it has seen.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpumem.engines import gguf, llamacpp, memory
from gpumem.records.catalog import NON_EXPERTS, Architecture, Model
from gpumem.records.engines import DeploymentRules, KvFormat, WeightFormat

GIB = 2**30


def embedding_params(arch: Architecture) -> int:
    """Token embeddings plus the output head (lm_head) unless it shares the embeddings' weights."""
    return arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2)


def expert_params(arch: Architecture, pad_to: int = 0) -> int:
    """Routed experts' weights (their projections: gate, up and down, or up and down), with the width a kernel pads
    them to."""
    experts = arch.experts
    if experts is None:
        return 0
    width = experts.intermediate
    if pad_to:
        width = math.ceil(width / pad_to) * pad_to
    moe_layers = arch.layers - experts.dense_layers
    return moe_layers * experts.count * experts.projections * (experts.width or arch.hidden) * width


def weights_bytes(model: Model, fmt: WeightFormat) -> float:
    """The whole model's weights as the format stores them.

    `all` formats (16/32-bit) store every parameter alike; `tensors` formats (GGUF) type each tensor as
    llama.cpp's quantizer does (engines/gguf.py), a vision tower (its mmproj file) at 16 bits; `linear`
    formats (FP8, INT8, AWQ, GPTQ, NF4) quantize the linear
    layers and keep embeddings, the output head and a vision tower at 16 bits; `experts`
    formats (MXFP4) quantize only the routed experts. A release that keeps more at 16 bits says so (`repos`, `kept`:
    NVIDIA's NVFP4 checkpoints leave the attention and the routers unquantized). A checkpoint whose headers were read
    (`model.weighed`), or whose bytes the catalog gives (`repos`, `bytes`), weighs what they say.
    """
    if model.weighed is not None and model.weighed.format == fmt.name:
        return float(model.weighed.bytes)
    repo = model.repos.get(fmt.name)
    if repo is not None and repo.bytes:
        return float(repo.bytes)
    params = model.params_b * 1e9
    sixteen_bit = 2.0
    if fmt.scope == "tensors":
        vision = round(model.vision_params_b * 1e9)
        return gguf.file_bytes(model.arch, fmt.file_type, round(params) - vision) + vision * sixteen_bit
    if fmt.scope == "all":
        return params * fmt.bits / 8
    if fmt.scope == "experts":
        quantized = expert_params(model.arch, fmt.pad_to)
        rest = params - expert_params(model.arch)
        return quantized * fmt.bits / 8 + rest * sixteen_bit
    kept = embedding_params(model.arch) + model.vision_params_b * 1e9 + kept_params(model, repo.kept if repo else ())
    return (params - kept) * fmt.bits / 8 + kept * sixteen_bit


def kept_params(model: Model, parts: tuple[str, ...]) -> int:
    """Parameters of the parts a release keeps at 16 bits (records.catalog.KEPT_PARTS): every attention layer's query,
    key, value and output projections (grouped-query attention; the catalog refuses it for MLA), and each MoE layer's
    router; or every parameter outside the routed experts, the embeddings and a vision tower (non_experts, which the
    catalog takes alone). The calculator's presets carry this count (figures/calculator_data.repo_row)."""
    arch = model.arch
    if NON_EXPERTS in parts:
        vision = round(model.vision_params_b * 1e9)
        return round(model.params_b * 1e9) - vision - embedding_params(arch) - expert_params(arch)
    kept = 0
    if "attention" in parts:
        kept += arch.attention_layers * (2 * arch.hidden * arch.heads * arch.head_dim + 2 * arch.hidden * arch.kv_heads * arch.head_dim)
    if "router" in parts and arch.experts:
        kept += (arch.layers - arch.experts.dense_layers) * arch.hidden * arch.experts.count
    return kept


def valid_tensor_parallel(arch: Architecture, gpus: int) -> bool:
    """vLLM's check: heads split evenly, and each kind of layer's KV heads split evenly or are replicated whole
    (Gemma4Attention asserts it for its full layers' own KV heads too,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/gemma4.py#L383-L392)."""
    return arch.heads % gpus == 0 and all(n % gpus == 0 or gpus % n == 0 for n in (arch.kv_heads, memory.full_layer_kv(arch)[0]))


def valid_gpu_counts(arch: Architecture, counts: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in counts if valid_tensor_parallel(arch, n))


def kv_heads_per_gpu(arch: Architecture, gpus: int, full: bool = False) -> float:
    """KV heads each GPU holds (a full-attention layer's, when `full`): split, or one replicated head each when
    there are more GPUs than heads."""
    return max(1.0, (memory.full_layer_kv(arch)[0] if full else arch.kv_heads) / gpus)


def kv_elements_per_token_layer(arch: Architecture, gpus: int, full: bool = False) -> float:
    """Cache elements one layer (a full-attention one, when `full`: Gemma 4's own dimensions) keeps per token on one
    GPU; MLA's latent is whole on every GPU."""
    if arch.attention.kind == "mla":
        return arch.attention.kv_lora_rank + arch.attention.qk_rope_head_dim
    return 2 * kv_heads_per_gpu(arch, gpus, full) * (memory.full_layer_kv(arch)[1] if full else arch.head_dim)


def kv_bytes_per_token_layer(arch: Architecture, kv: KvFormat, gpus: int, full: bool = False) -> float:
    """Bytes one attention layer keeps per token on one GPU: its keys and values in the KV format, and DSA's
    indexer key, 8-bit values and a 4-byte scale per 128, whole on every GPU (DeepseekV32IndexerCache,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/deepseek_v2.py#L638-L665 and
    #L726-L736; vLLM puts it in the layers' one group, UniformTypeKVCacheSpecs, so it costs its own bytes)."""
    return kv_elements_per_token_layer(arch, gpus, full) * kv.bytes + arch.attention.index_bytes


def layer_slots(arch: Architecture, runtime: str) -> tuple[int, int, int]:
    """Cache slots of full-attention, windowed (sliding or chunked) and state layers.

    llama.cpp keeps one slot per layer. vLLM's hybrid allocator groups the layers of each
    kind into groups of one size (the smallest count, or the largest when it is under
    1.5 times the smallest) and pads the last group of each kind: Gemma 3 27B's 10 full and 52
    sliding layers take 10 + 60 slots, Qwen3-Next's 12 full and 36 Gated DeltaNet layers 12 + 36
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/kv_cache_planning.py#L521-L542).
    """
    counts = layer_counts(arch)
    if runtime != "vllm":
        return counts
    group = group_size(arch)
    full, local, state = (math.ceil(n / group) * group for n in counts)
    return full, local, state


def layer_counts(arch: Architecture) -> tuple[int, int, int]:
    """The model's full-attention, windowed and state layers."""
    local = arch.attention.sliding_layers if arch.attention.windowed else 0
    state = arch.state.layers if arch.state else 0
    return arch.attention_layers - local, local, state


def group_size(arch: Architecture) -> int:
    """The layers in each of vLLM's cache groups (see layer_slots): one group of all layers when they are of one kind."""
    present = [n for n in layer_counts(arch) if n]
    small, large = min(present), max(present)
    return large if len(present) < 2 or large < 1.5 * small else small


def gpu_cache_share(arch: Architecture, kv: KvFormat, runtime: str, gpus: int) -> tuple[tuple[float, float], tuple[int, int, int]]:
    """What one GPU of `gpus` caches: the bytes per token of a full-attention and of a windowed layer (one figure
    twice but for Gemma 4), and the full, windowed and state layer slots.

    vLLM's tensor parallelism splits the KV heads (and a state layer's heads) and keeps every layer on every GPU.
    llama.cpp's default split mode, LLAMA_SPLIT_MODE_LAYER ("split layers and KV across GPUs", llama.h; common/common.h sets
    `split_mode = LLAMA_SPLIT_MODE_LAYER`, https://github.com/ggml-org/llama.cpp/blob/0c1e57098/common/common.h#L485),
    gives each GPU whole layers with all their KV heads: on equal cards the busiest holds the rounded-up share of each kind of layer.
    """
    slots = layer_slots(arch, runtime)
    split = 1 if runtime == "llama.cpp" else gpus
    per_token = kv_bytes_per_token_layer(arch, kv, split, full=True), kv_bytes_per_token_layer(arch, kv, split)
    if runtime != "llama.cpp":
        return per_token, slots
    full, local, state = (math.ceil(n / gpus) for n in slots)
    return per_token, (full, local, state)


def kv_bytes_per_token_per_gpu(arch: Architecture, kv: KvFormat, gpus: int, runtime: str = "vllm") -> float:
    """Cache bytes per token on one GPU while every attention layer grows (how vLLM counts its cache in tokens)."""
    (full_token, local_token), (full, local, _) = gpu_cache_share(arch, kv, runtime, gpus)
    return full_token * full + local_token * local


def sliding_tokens(arch: Architecture, tokens: int, batch_tokens: int = 0, runtime: str = "vllm") -> int:
    """Tokens a sliding-window or chunked layer holds for one request of `tokens` tokens.

    Without `batch_tokens`, the window (what the layer reads). With it, what the runtime reserves per
    request. vLLM: the last window - 1 computed tokens plus the tokens in flight (reserved_tokens), never
    more than the request (SlidingWindowSpec.max_admission_blocks_per_request, `min(sliding_window - 1 +
    max_in_flight_tokens, max_model_len)`,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/kv_cache_interface.py#L917-L944; the block
    it adds for a window that starts inside a block, 16 tokens, is left out); a chunked layer its whole chunk
    plus the tokens in flight (ChunkedLocalAttentionSpec, `min(attention_chunk_size + max_in_flight_tokens,
    max_model_len)`, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/kv_cache_interface.py#L861-L881, the
    hybrid allocator on by default, VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/envs.py#L1931-L1933). llama.cpp: the window plus
    one micro-batch of `batch_tokens`, padded to 256 cells (llamacpp.sliding_cells).
    """
    if runtime == "llama.cpp" and batch_tokens:
        return llamacpp.sliding_cells(arch, tokens, batch_tokens)
    if not batch_tokens:
        return min(tokens, arch.attention.window)
    kept = arch.attention.window if arch.attention.kind == "chunked" else arch.attention.window - 1
    return min(tokens, kept + batch_tokens)


@dataclass(frozen=True)
class Paging:
    """How vLLM pages a hybrid's state: pages each request holds per state layer, and the tokens the attention
    block size is a multiple of. STATE_ITSELF, the default, pages nothing: one state of its own size, and the
    attention layers' tokens unrounded, as a decode step reads them (the speed engine)."""

    blocks: int = 1
    alignment: int = 1


STATE_ITSELF = Paging()


def state_paging(rules: DeploymentRules, arch: Architecture) -> Paging:
    """vLLM's paging of this model's state (rules.yaml deployment.runtime: state_blocks, state_alignment)."""
    if arch.state is None:
        return STATE_ITSELF
    return Paging(rules.state_blocks, rules.state_alignment[arch.state.kind])


def state_bytes_per_gpu(arch: Architecture, gpus: int, runtime: str) -> float:
    """One state layer's state for one sequence on one GPU: vLLM keeps it in the model's dtype (the recurrent
    part in the config's mamba_ssm_dtype when given) and splits its heads; llama.cpp in F32, whole."""
    state = arch.state
    if state is None:
        return 0.0
    if runtime == "llama.cpp":
        return (state.conv + state.recurrent) * llamacpp.F32_BYTES
    return memory.state_layer_bytes(state) / gpus


def block_tokens(arch: Architecture, kv: KvFormat, gpus: int, paging: Paging) -> int:
    """vLLM's attention block size for a hybrid: the smallest multiple of the alignment whose page, that many
    tokens of one attention layer, holds one layer's state; 1 (no rounding) without a state or paging."""
    if arch.state is None or paging == STATE_ITSELF:
        return 1
    per_token = kv_bytes_per_token_layer(arch, kv, gpus)
    return paging.alignment * math.ceil(state_bytes_per_gpu(arch, gpus, "vllm") / (paging.alignment * per_token))


def state_cache_bytes_per_gpu(arch: Architecture, kv: KvFormat, sequences: int, gpus: int, runtime: str, paging: Paging) -> float:
    """What a hybrid's state layers hold on one GPU for `sequences` requests, whatever their length: vLLM
    `paging.blocks` pages of one attention block each per state layer slot, llama.cpp one F32 state, and unpaged
    (STATE_ITSELF) the state itself (0 without a state)."""
    if arch.state is None:
        return 0.0
    _, (_, _, state) = gpu_cache_share(arch, kv, runtime, gpus)
    if runtime == "llama.cpp" or paging == STATE_ITSELF:
        return state * state_bytes_per_gpu(arch, 1 if runtime == "llama.cpp" else gpus, runtime) * sequences
    page = block_tokens(arch, kv, gpus, paging) * kv_bytes_per_token_layer(arch, kv, gpus)
    return state * paging.blocks * page * sequences


@functools.cache
def kv_cache_bytes_per_gpu(
    arch: Architecture,
    kv: KvFormat,
    tokens: int,
    sequences: int,
    gpus: int,
    runtime: str = "vllm",
    batch_tokens: int = 0,
    paging: Paging = STATE_ITSELF,
) -> float:
    """Cache of `sequences` requests of `tokens` tokens on one GPU; sliding-window layers hold their window,
    or vLLM's reservation when `batch_tokens` (max_num_batched_tokens) is given (see sliding_tokens). A hybrid's
    requests each hold their state (state_cache_bytes_per_gpu), and vLLM rounds its attention layers' tokens up
    to whole blocks of the hybrid's block size (block_tokens)."""
    (full_token, local_token), (full, local, _) = gpu_cache_share(arch, kv, runtime, gpus)
    held = sliding_tokens(arch, tokens, batch_tokens, runtime) if local else 0
    if arch.state is not None and runtime != "llama.cpp":
        block = block_tokens(arch, kv, gpus, paging)
        tokens, held = block * math.ceil(tokens / block), block * math.ceil(held / block)
    attention = (full_token * full * tokens + local_token * local * held) * sequences
    return attention + state_cache_bytes_per_gpu(arch, kv, sequences, gpus, runtime, paging)


VLLM_BLOCK = 16  # vLLM's default block size in tokens (CacheConfig.block_size), which a hybrid raises (block_tokens)


def concurrency(
    arch: Architecture, kv: KvFormat, free: float, gpus: int, max_model_len: int, batch_tokens: int, paging: Paging = STATE_ITSELF
) -> float:
    """The requests of max_model_len tokens vLLM's cache holds at once, as its start-up log prints them ("Maximum
    concurrency for ... tokens per request"): whole blocks of every group's layers fill `free` bytes, each request
    takes the blocks of every group, a state group its `paging.blocks` (get_max_concurrency_for_kv_cache_config and
    get_kv_cache_config_from_groups,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/kv_cache_utils.py#L1061-L1093,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/kv_cache_planning.py#L642-L670)."""
    group = group_size(arch)
    full, local, state = (slots // group for slots in layer_slots(arch, "vllm"))
    if arch.state:
        full_block = local_block = block_tokens(arch, kv, gpus, paging)
        page = full_block * kv_bytes_per_token_layer(arch, kv, gpus)
    else:
        full_block, local_block, page = page_blocks(arch, kv, gpus)
    num_blocks = free // (group * page)
    local_tokens = sliding_tokens(arch, max_model_len, batch_tokens) if local else 0
    per_request = full * math.ceil(max_model_len / full_block) + local * math.ceil(local_tokens / local_block) + state * paging.blocks
    return num_blocks / per_request


def page_blocks(arch: Architecture, kv: KvFormat, gpus: int) -> tuple[int, int, float]:
    """vLLM's blocks of full-attention and windowed layers, in tokens, and their one page size in bytes. Every page
    holds VLLM_BLOCK tokens of the kind that caches most per token; where the two kinds differ (Gemma 4), the
    other's block grows to fill the same page when its page divides it, else its page is padded
    (unify_kv_cache_spec_page_size,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/kv_cache_planning.py#L346-L405)."""
    full, local, _ = layer_counts(arch)
    full_size, local_size = (VLLM_BLOCK * kv_bytes_per_token_layer(arch, kv, gpus, kind) for kind in (True, False))
    page = max(size for size, layers in ((full_size, full), (local_size, local)) if layers)
    full_block, local_block = (VLLM_BLOCK * int(page // size) if page % size == 0 else VLLM_BLOCK for size in (full_size, local_size))
    return full_block, local_block, page


@functools.cache
def longest_context(
    arch: Architecture, kv: KvFormat, free: float, limit: int, runtime: str = "vllm", batch_tokens: int = 0, paging: Paging = STATE_ITSELF
) -> int:
    """The longest context up to `limit` whose cache for one request on one GPU fits `free` bytes
    (at least 1): kv_cache_bytes_per_gpu's own arithmetic, searched by halves (its per-token factor worked out
    once when the model keeps no state)."""
    full, local, _ = layer_slots(arch, runtime)
    full_token, local_token = kv_bytes_per_token_layer(arch, kv, 1, full=True), kv_bytes_per_token_layer(arch, kv, 1)

    def held(tokens: int) -> float:
        if arch.state is not None:
            return kv_cache_bytes_per_gpu(arch, kv, tokens, 1, 1, runtime, batch_tokens, paging)
        return full_token * full * tokens + (local_token * local * sliding_tokens(arch, tokens, batch_tokens, runtime) if local else 0)

    low, high = 1, limit
    while low < high:
        middle = (low + high + 1) // 2
        if held(middle) <= free:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Batch:
    """vLLM's engine settings for a card: tokens per step (max_num_batched_tokens) and request slots
    (max_num_seqs), which its profiling run uses both, and whether it captures CUDA graphs (not with
    --enforce-eager)."""

    tokens: int
    sequences: int
    cuda_graphs: bool = True


@dataclass(frozen=True)
class Settings:
    """Engine settings a reader gives (vllm serve's --max-num-batched-tokens, --max-num-seqs and
    --enforce-eager, as gpumem estimate takes them); None keeps vLLM's default for the card."""

    tokens: int | None = None
    sequences: int | None = None
    eager: bool = False

    def applied(self, batch: Batch) -> Batch:
        return Batch(self.tokens or batch.tokens, self.sequences or batch.sequences, batch.cuda_graphs and not self.eager)


DEFAULTS = Settings()  # vLLM's defaults for every card


def reserved_tokens(rules: DeploymentRules, fmt: WeightFormat, batch: Batch) -> int:
    """The tokens a sliding-window layer reserves for beside its window (see sliding_tokens). vLLM: every
    step scheduled but not yet settled may hold a whole max_num_batched_tokens, and vLLM keeps
    `in_flight_batches` of them with async scheduling, on by default (VllmConfig.max_in_flight_tokens and
    max_concurrent_batches, https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/vllm.py#L587-L608).
    llama.cpp: one micro-batch (n_ubatch)."""
    if fmt.runtime == "llama.cpp":
        return rules.llamacpp_batch
    return rules.in_flight_batches * batch.tokens


def batch_defaults(rules: DeploymentRules, card_bytes: float, gpu_id: str) -> Batch:
    """vLLM's defaults for `vllm serve` (EngineArgs.get_batch_defaults, OPENAI_API_SERVER): the largest on
    cards of 160 GiB and more, larger on cards of 70 GiB and more except the A100s
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py#L2940-L3006)."""
    if card_bytes >= rules.huge_card_gib * GIB:
        return Batch(rules.huge_batch_tokens, rules.huge_batch_sequences)
    if card_bytes >= rules.large_card_gib * GIB and gpu_id not in rules.large_card_exceptions:
        return Batch(rules.large_batch_tokens, rules.large_batch_sequences)
    return Batch(rules.small_batch_tokens, rules.small_batch_sequences)


def runtime_bytes_per_gpu(
    rules: DeploymentRules, arch: Architecture, fmt: WeightFormat, gpus: int, batch: Batch, tokens: int, sequences: int
) -> float:
    """Memory the runtime takes besides weights and KV cache on each GPU, serving `sequences` requests of
    `tokens` tokens.

    vLLM: non-torch memory (CUDA context, and NCCL buffers when several GPUs talk) plus the
    activation peak of its profiling run, whose largest part is the sampler's logits for
    every request slot over the whole vocabulary. llama.cpp: the CUDA context and the compute buffer of the
    GPU holding the output layer (llamacpp.compute_bytes, for the graph llama-server reserves with -fa on),
    with its 4 pipeline copies on several GPUs; no NCCL buffers, which ggml sets up only for its tensor split
    mode, not the layer split the launch command uses
    (https://github.com/ggml-org/llama.cpp/blob/0c1e57098/ggml/src/ggml-cuda/ggml-cuda.cu#L957-L962).
    """
    if fmt.runtime == "llama.cpp":
        copies = rules.llamacpp_copies if gpus > 1 else 1
        graph = llamacpp.server_graph(tokens, sequences, rules.llamacpp_batch, copies)
        return rules.non_torch_bytes + llamacpp.compute_bytes(arch, graph)
    non_torch = rules.non_torch_bytes + (rules.parallel_bytes if gpus > 1 else 0.0)
    activation = rules.activation_bytes + rules.sampler_bytes * batch.sequences * arch.vocab
    return non_torch + activation


def graph_bytes_per_gpu(rules: DeploymentRules, fmt: WeightFormat, batch: Batch) -> float:
    """vLLM's CUDA-graph memory estimate, which it subtracts from the KV budget since v0.21
    (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by default,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/worker/gpu_worker.py#L702-L756; logs print
    "CUDA graph memory profiling is enabled (default since v0.21.0)" and "Estimated CUDA graph memory: 0.36 GiB total"): a constant
    from public logs (rules.yaml deployment.runtime.cuda_graph_gib), 0 with --enforce-eager, 0 for llama.cpp.
    """
    if fmt.runtime != "vllm" or not batch.cuda_graphs:
        return 0.0
    return rules.cuda_graph_bytes


@dataclass(frozen=True)
class Deployment:
    """One workload on n GPUs: the whole model's weights and every per-GPU part, in bytes."""

    gpus: int
    weights_bytes: float
    weights_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    kv_cache_bytes_per_gpu: float
    runtime_bytes_per_gpu: float
    graph_bytes_per_gpu: float = 0.0
    state_bytes_per_gpu: float = 0.0  # the part of the cache a hybrid's state layers hold, whatever the context

    @property
    def total_bytes_per_gpu(self) -> float:
        return self.weights_bytes_per_gpu + self.runtime_bytes_per_gpu + self.graph_bytes_per_gpu + self.kv_cache_bytes_per_gpu


@functools.cache
def deployment(
    rules: DeploymentRules,
    model: Model,
    fmt: WeightFormat,
    kv: KvFormat,
    gpus: int,
    tokens: int,
    sequences: int,
    batch: Batch,
) -> Deployment:
    """Per-GPU memory of serving `sequences` requests of `tokens` tokens on `gpus` GPUs."""
    weights = weights_bytes(model, fmt)
    reserved = reserved_tokens(rules, fmt, batch)
    paging = state_paging(rules, model.arch)
    return Deployment(
        gpus=gpus,
        weights_bytes=weights,
        weights_bytes_per_gpu=weights / gpus,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu(model.arch, kv, gpus, fmt.runtime),
        kv_cache_bytes_per_gpu=kv_cache_bytes_per_gpu(model.arch, kv, tokens, sequences, gpus, fmt.runtime, reserved, paging),
        runtime_bytes_per_gpu=runtime_bytes_per_gpu(rules, model.arch, fmt, gpus, batch, tokens, sequences),
        graph_bytes_per_gpu=graph_bytes_per_gpu(rules, fmt, batch),
        state_bytes_per_gpu=state_cache_bytes_per_gpu(model.arch, kv, sequences, gpus, fmt.runtime, paging),
    )


def budget_bytes(rules: DeploymentRules, card_bytes: float, utilization: float | None = None) -> float:
    """What vLLM lets itself use of one card: gpu_memory_utilization (0.92 by default, CacheConfig in
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/cache.py#L215)
    x the memory CUDA reports."""
    return (rules.utilization if utilization is None else utilization) * card_bytes


def startup_refusal(need: Deployment, sequences: int, rules: DeploymentRules, card_bytes: float, utilization: float | None = None) -> float:
    """What vLLM's start-up check compares: the KV memory left on one GPU once weights, runtime and graphs
    are taken, against one request of max_model_len (_check_enough_kv_cache_memory in
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/kv_cache_planning.py#L50-L89,
    which refuses to start with "To serve at least one request with the model's max seq len (...), ... GiB KV
    cache is needed, which is larger than the available KV cache memory (... GiB)", vllm#10517). Returns the
    bytes missing for one request, 0 when vLLM starts."""
    available = (
        budget_bytes(rules, card_bytes, utilization) - need.weights_bytes_per_gpu - need.runtime_bytes_per_gpu - need.graph_bytes_per_gpu
    )
    one_request = need.kv_cache_bytes_per_gpu / max(sequences, 1)
    return max(0.0, one_request - available)


def fits(need: Deployment, rules: DeploymentRules, card_bytes: float) -> bool:
    return need.total_bytes_per_gpu <= budget_bytes(rules, card_bytes)


def forget() -> None:
    """Empty the remembered calls (see the module's docstring)."""
    for remembered in (deployment, kv_cache_bytes_per_gpu, longest_context, llamacpp.compute_bytes, gguf.file_bytes, gguf.expert_bytes):
        remembered.cache_clear()
