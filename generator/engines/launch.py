"""The command that makes a "holds" true: `vllm serve` or `llama-server`, with every setting the sizing assumed.

Pure: takes the model, its weight and KV formats, the GPU count, the context and the requests a
recommendation holds, the engine settings and the pinned version (rules.yaml, engines); returns a typed
record with the argument list and its shell text. Hand-written because no library writes these two
command lines; shlex (standard library) quotes them.

vLLM's flags are its EngineArgs fields with dashes (argparse from the dataclass fields:
https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py#L959-L991):
--tensor-parallel-size, --max-model-len, --gpu-memory-utilization, --max-num-seqs,
--max-num-batched-tokens, --kv-cache-dtype, --quantization, --enforce-eager. Without --max-model-len vLLM
takes the model's native context and refuses to start when one request of it does not fit the KV
budget (vllm#10517), so every command sets it. A pre-quantized checkpoint carries its quantization in
its config and needs no --quantization; FP8 can also be made from the BF16 checkpoint at load time
(--quantization fp8, one of QuantizationMethods at
https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/quantization/__init__.py#L15-L49;
vLLM 0.33.0 has no bitsandbytes method, so NF4 has no command: the support table refuses it).

llama-server's flags as common/arg.cpp spells them at the pinned commit (https://github.com/ggml-org/llama.cpp/blob/0c1e57098/common/arg.cpp):
-m, -c (L1639; the context of all slots together, so L x S for S slots of L tokens: each slot gets
n_ctx / n_seq_max, src/llama-context.cpp#L292-L296), -ngl all (L2789-L2798: every layer and the output
layer on the GPUs, which also turns on the pipeline copies deployment.py counts; a number such as 99
would leave the layers past it of a larger model on the CPU), -fa on (L1754; the compute buffer
deployment.py counts assumes it, and a quantized V cache requires it), --parallel (L2544), --tensor-split
(L2831; equal shares, as the sizing gives each GPU its rounded-up share of layers) and --cache-type-k /
--cache-type-v (L2437-L2450).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from gpumem.records.catalog import Model
from gpumem.records.engines import RUNTIME_LABELS, KvFormat, WeightFormat

ALL_LAYERS = "all"  # llama.cpp's -ngl: every layer and the output layer go to the GPUs
# The KV formats vLLM stores on request, by their --kv-cache-dtype values (CacheDType,
# https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/cache.py#L44-L67); BF16 is the default, "auto".
KV_CACHE_DTYPES = ("fp8", "nvfp4")

# Formats vLLM can make from the BF16 checkpoint at load time, and the --quantization value that does it.
ON_THE_FLY = {"fp8": "fp8"}


@dataclass(frozen=True)
class Workload:
    """What a recommendation holds: the GPUs, the tokens per request and the requests at once."""

    gpus: int
    context: int
    requests: int


@dataclass(frozen=True)
class Settings:
    """The engine settings the sizing assumed beyond vLLM's defaults (None: the default, left off the command)."""

    utilization: float
    batch_tokens: int | None = None
    eager: bool = False
    sequences: int | None = None  # request slots; None: as many as the requests held


@dataclass(frozen=True)
class Launch:
    """One launch command: the engine, its pinned version, the argument list and what the reader must supply."""

    engine: str  # vllm | llama.cpp
    version: str
    argv: tuple[str, ...]
    download: str = ""  # llama.cpp: the repository the GGUF file comes from
    missing: str = ""  # what the catalog does not name and the reader must supply ("" when nothing)

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def label(self) -> str:
        """The engine's name as pages write it."""
        return RUNTIME_LABELS[self.engine]


def placeholder(model: Model, fmt: WeightFormat) -> str:
    """What stands in the command for a checkpoint the catalog does not name."""
    kind = "file" if fmt.runtime == "llama.cpp" else "checkpoint"
    return f"<{fmt.label} {kind} of {model.name}>"


def launch(model: Model, fmt: WeightFormat, kv: KvFormat, work: Workload, settings: Settings, version: str) -> Launch:
    """The command for this model in this format, holding `work` at `settings`."""
    if fmt.runtime == "llama.cpp":
        return _llama_server(model, fmt, kv, work, version)
    return _vllm_serve(model, fmt, kv, work, settings, version)


def _vllm_serve(model: Model, fmt: WeightFormat, kv: KvFormat, work: Workload, settings: Settings, version: str) -> Launch:
    own = model.repos.get(fmt.name)
    quantization = None
    if own is not None:
        repo, missing = own.repo, ""
    elif fmt.name in ON_THE_FLY and "bf16" in model.repos:
        repo, missing, quantization = model.repos["bf16"].repo, "", ON_THE_FLY[fmt.name]
    else:
        repo = placeholder(model, fmt)
        missing = repo
    argv = ["vllm", "serve", repo]
    argv += ["--tensor-parallel-size", str(work.gpus), "--max-model-len", str(work.context)]
    argv += ["--gpu-memory-utilization", f"{settings.utilization:g}", "--max-num-seqs", str(settings.sequences or work.requests)]
    if settings.batch_tokens is not None:
        argv += ["--max-num-batched-tokens", str(settings.batch_tokens)]
    if kv.name in KV_CACHE_DTYPES:
        argv += ["--kv-cache-dtype", kv.name]
    if quantization is not None:
        argv += ["--quantization", quantization]
    if settings.eager:
        argv.append("--enforce-eager")
    return Launch("vllm", version, tuple(argv), missing=missing)


def _llama_server(model: Model, fmt: WeightFormat, kv: KvFormat, work: Workload, version: str) -> Launch:
    own = model.repos.get(fmt.name)
    file = own.file if own is not None and own.file else placeholder(model, fmt)
    argv = ["llama-server", "-m", file, "-c", str(work.context * work.requests), "-ngl", ALL_LAYERS, "-fa", "on"]
    argv += ["--parallel", str(work.requests)]
    if work.gpus > 1:
        argv += ["--tensor-split", ",".join(["1"] * work.gpus)]
    if kv.runtime == "llama.cpp":
        argv += ["--cache-type-k", kv.name, "--cache-type-v", kv.name]
    missing = "" if own is not None and own.file else file
    return Launch("llama.cpp", version, tuple(argv), download=own.repo if own is not None else "", missing=missing)
