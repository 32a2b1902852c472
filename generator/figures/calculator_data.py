"""The calculator's JSON: what its scripts (calculator.js, speed.js, training.js) read of the rules, the presets,
the GPUs and the configurations on offer, as rows whose field names are written once, and the engines' constants
the scripts port. The page carries its own model's preset alone; every model's preset is a small file of its own
(preset_files), which the script fetches from the site when a reader or a link names the model, so the page
weighs the same at any catalog size."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from gpumem.catalog import config_fields, hf_config, hf_gemma4, hf_hybrid, hf_mla
from gpumem.engines import architecture, deployment, gguf, launch, llamacpp, memory
from gpumem.engines.sizing import Configuration
from gpumem.engines.speed import DEFAULT_OUTPUT, DEFAULT_PROMPT, MILLION, MIXED_PRECISION, SECONDS_PER_HOUR
from gpumem.figures.calculator import SORTS, SPEED_DIGITS, default_gpus
from gpumem.figures.calculator_training import machines, training_data
from gpumem.figures.shared import Shop
from gpumem.records.catalog import STATE_KINDS, Catalog, Experts, Gpu, Model, Repo, State
from gpumem.records.engines import RUNTIME_LABELS, Reach, SpeedRules, SupportRules, WeightFormat

# The KV formats every runtime takes, whatever the weights (as gpumem estimate checks them).
KV_ANY_RUNTIME = ("bf16", "fp32")
# deployment.layer_slots: vLLM groups sliding and full layers by the larger count under 1.5 x the smaller.
HYBRID_GROUP_RATIO = 1.5
# hf_config.count's constants of the architectures it counts, for the script's config.json reader.
COUNTING = {
    "gatedMatrices": 3,  # gate, up and down projections of a gated MLP or expert
    "fourNorms": 4,  # Gemma's norms per layer (two elsewhere)
    "channels": 3,  # RGB channels of a vision tower's patch embedding
    "attentionMatrices": 4,  # q, k, v and output projections of a vision layer
    "gemma3Pattern": 6,  # Gemma 3's sliding_window_pattern default: one global layer in six
    "defaultContext": 4096,  # max_position_embeddings when a config omits it
    "mixtralActive": 2,  # Mixtral's num_experts_per_tok default
    "fullAttentionInterval": 4,  # Qwen3-Next's full_attention_interval default: one full-attention layer in four
    "convKernel": 4,  # linear_conv_kernel_dim's and Nemotron-H's conv_kernel default
    "temporalPatch": 2,  # Qwen3.5's vision temporal_patch_size default
    "spatialMerge": 2,  # Qwen3.5's vision spatial_merge_size default
    "nopeInterval": hf_hybrid.NOPE_INTERVAL,
    "indexQuantBlock": hf_mla.INDEX_QUANT_BLOCK,
    "kdaRecurrentBytes": hf_hybrid.KDA_RECURRENT_BYTES,
    "indexScaleBytes": 4,  # the indexer key's scale per block (hf_mla.mla)
}
# With its script, the calculator lists this many configurations (the cheapest) and a button shows the rest.
SHOWN_CONFIGURATIONS = 5
RELEASE_METHODS = {"fp8": "fp8", "mxfp4": "mxfp4", "awq": "awq", "gptq": "gptq", "bitsandbytes": "nf4"}
MODELOPT_ALGOS = {"NVFP4": "nvfp4", "FP8": "fp8"}  # hf_config._release: NVIDIA ModelOpt's quant_algo
# Decimals the calculator shows the estimate's rule with (16.71 x P^0.352).
ESTIMATE_DIGITS = 3
# A preset's numbers in the calculator's JSON, one row per model in this order (the keys are written once).
MODEL_FIELDS = ("id", "params", "layers", "heads", "kvHeads", "headDim", "hidden", "vocab", "intermediate", "release")
# A GPU on offer in the calculator's JSON, a row in this order (the last left out when unknown).
GPU_FIELDS = ("name", "runtimeBytes", "bandwidth", "memoryType", "tflops", "link", "capability", "pcieGen")


def calculator_data(catalog: Catalog, shop: Shop) -> dict:
    """What the calculator's JavaScript reads: rules, presets, GPUs and configurations on offer."""
    rules = catalog.rules
    dep = rules.deployment
    assert dep is not None  # validated with the catalogs
    models = [model_row(catalog.model(rules.calculator_defaults["model"]), dep.weight_formats)]  # the page's own: the others are fetched
    offered = sorted(shop.configurations, key=Configuration.order)
    large_card = dep.large_card_gib * deployment.GIB
    return shortest_numbers(
        {
            "gpuCounts": list(rules.gpu_counts),
            "comfortableRequests": rules.comfortable_requests,
            "shownConfigurations": SHOWN_CONFIGURATIONS,
            "limits": {
                **rules.calculator_limits,
                "max_gpus": rules.max_gpus_per_machine,
                "max_state": state_bound(rules.calculator_limits),
            },
            "defaults": {
                **rules.calculator_defaults,
                "gpus": default_gpus(catalog),
                "prompt": DEFAULT_PROMPT,
                "output": DEFAULT_OUTPUT,
                "sort": SORTS[0],
            },
            "sorts": list(SORTS),
            "oldWeights": rules.calculator_old_weights,
            "estimate": estimate_data(architecture.catalog_rule(catalog.models)),
            "digits": {**SPEED_DIGITS, "rule": ESTIMATE_DIGITS},
            "currency": catalog.snapshot.currency,
            "modelFields": list(MODEL_FIELDS),
            "models": models,
            "gpuFields": list(GPU_FIELDS),
            "gpus": {c.gpu.id: gpu_row(c.gpu) for c in offered},
            "machines": machines(catalog),
            "weightFormats": {
                f.name: {  # a GGUF file type names its scope, tensors, and needs no bits (engines/gguf.py)
                    "label": f.label,
                    "runtime": f.runtime,
                    **({"fileType": f.file_type} if f.file_type else {"bits": f.bits, "scope": f.scope}),
                    **({"padTo": f.pad_to} if f.pad_to else {}),
                }
                for f in dep.weight_formats.values()
            },
            "kvFormats": [{"name": k.name, "label": k.label, "bytes": k.bytes, "runtime": k.runtime} for k in dep.kv_formats.values()],
            "deployment": {
                "utilization": dep.utilization,
                "nonTorchBytes": dep.non_torch_bytes,
                "parallelBytes": dep.parallel_bytes,
                "activationBytes": dep.activation_bytes,
                "samplerBytes": dep.sampler_bytes,
                "llamacppBatch": dep.llamacpp_batch,
                "llamacppCopies": dep.llamacpp_copies,
                "cudaGraphBytes": dep.cuda_graph_bytes,
                "hugeCardBytes": dep.huge_card_gib * deployment.GIB,
                "hugeBatch": {"tokens": dep.huge_batch_tokens, "sequences": dep.huge_batch_sequences},
                "inFlightBatches": dep.in_flight_batches,
                "f32Bytes": llamacpp.F32_BYTES,
                "f16Bytes": llamacpp.F16_BYTES,
                "cellPad": llamacpp.CELL_PAD,
                "feedForwardTensors": llamacpp.FEED_FORWARD_TENSORS,
                "largeCardBytes": large_card,
                "largeCardExceptions": list(dep.large_card_exceptions),
                "largeBatch": {"tokens": dep.large_batch_tokens, "sequences": dep.large_batch_sequences},
                "smallBatch": {"tokens": dep.small_batch_tokens, "sequences": dep.small_batch_sequences},
                "bitsPerByte": 8,
                "sixteenBitBytes": 2,
                "hybridGroupRatio": HYBRID_GROUP_RATIO,
                "stateBytes": memory.STATE_BYTES,
                "statePaging": {
                    kind: [dep.state_blocks, tokens] for kind, tokens in dep.state_alignment.items()
                },  # deployment.state_paging
                "kvAnyRuntime": list(KV_ANY_RUNTIME),
                "runtimeNames": RUNTIME_LABELS,
            },
            "engines": {name: pin.version for name, pin in rules.engines.items()},
            "launchOnTheFly": dict(launch.ON_THE_FLY),
            "launchKvCacheDtypes": list(launch.KV_CACHE_DTYPES),
            "launchAllLayers": launch.ALL_LAYERS,
            **({"support": support_data(rules.support)} if rules.support else {}),
            "training": training_data(catalog),
            "speed": speed_data(rules.speed, {fmt.runtime for fmt in dep.weight_formats.values()}),
            "counting": {"gatedMatrices": COUNTING["gatedMatrices"]},  # the engines' share; config.js's: counting_file
        }
    )


def state_bound(limits: dict[str, float]) -> int:
    """The most elements a config.json's counts give one state layer's convolution or recurrent state (hf_hybrid:
    three projections of max_heads heads of max_head_dim over a kernel of max_head_dim, or heads x two head dims):
    what a link's extra= may carry."""
    return int(3 * limits["max_heads"] * limits["max_head_dim"] ** 2)


def counting_file() -> PresetFiles:
    """What config.js alone reads (a pasted config.json's counting, a link's extra=), published apart as
    assets/config-data.<digest>.json with the messages only it shows (pages/site.py's config_data), which the
    calculator fetches with config.js: the page does not carry them."""
    counting = {
        **COUNTING,
        "architectures": list(hf_config.ARCHITECTURES),
        "mla": list(hf_config.MLA),
        "deepseekMoe": list(hf_config.DEEPSEEK_MOE),
        "sparseMla": list(hf_mla.SPARSE_MLA),
        "stateDtypes": hf_hybrid.STATE_DTYPES,
        "nemotronStateDtype": hf_hybrid.NEMOTRON_STATE_DTYPE,
        "stateKinds": list(STATE_KINDS),
        "qkvBias": list(hf_config.QKV_BIAS),
        "qkNorm": list(hf_config.QK_NORM),
        "fourNormKinds": list(hf_config.FOUR_NORMS),
        "releaseMethods": RELEASE_METHODS,
        "modeloptAlgos": MODELOPT_ALGOS,
        "fieldLimits": config_fields.FIELD_LIMITS,
        "layerTypes": list(config_fields.LAYER_TYPES),
        "shownDigits": config_fields.SHOWN_DIGITS,
        "shownBelow": 10**config_fields.SHOWN_DIGITS,
        "shownCharacters": config_fields.SHOWN_CHARACTERS,
        "gguf": {
            "blocks": gguf.BLOCKS,
            "defaults": gguf.FILE_TYPES,
            "fallback": gguf.FALLBACK,
            "seventyB": gguf.SEVENTY_B_LAYERS,
            "unlaid": list(gguf.UNLAID),
        },
        "fusedQkv": list(gguf.FUSED_QKV),
        "gemma4": {
            "headDim": hf_gemma4.HEAD_DIM,
            "globalHeadDim": hf_gemma4.GLOBAL_HEAD_DIM,
            "slidingWindow": hf_gemma4.SLIDING_WINDOW,
            "perLayerInput": hf_gemma4.PER_LAYER_INPUT,
            "pattern": hf_gemma4.PATTERN,
        },
    }
    return PresetFiles(compact_json(counting).encode())


def estimate_data(rule: architecture.ShapeRule | None) -> dict | None:
    """The rule as calculator.js's estimatedFields reads it (None: a catalog too small to fit it, and no estimate)."""
    if rule is None:
        return None
    return {
        "layers": list(rule.layers),
        "hidden": list(rule.hidden),
        "headDim": rule.head_dim,
        "kvHeads": rule.kv_heads,
        "vocab": rule.vocab,
        "mlpRatio": rule.mlp_ratio,
        "models": rule.models,
    }


@dataclass(frozen=True)
class PresetFiles:
    """Every model's preset as the calculator fetches it: `index` lists each model's id and name in the catalog's
    order (the preset list), `files` holds one `<id>.json` per model, its model_row (pages/assets.py names them).
    counting_file is one too, its index the counting data (pages/site.py adds a file of messages per language)."""

    index: bytes = b"[]"
    files: dict[str, bytes] = field(default_factory=dict)


def compact_json(value: object) -> str:
    """JSON as the calculator's data is written: sorted keys, no spaces, whole floats as integers."""
    return json.dumps(shortest_numbers(value), sort_keys=True, separators=(",", ":"))


def preset_files(catalog: Catalog) -> PresetFiles:
    """The preset list and one preset file per catalog model."""
    index = compact_json([[m.id, m.name] for m in catalog.models]).encode()
    formats = catalog.rules.deployment.weight_formats
    return PresetFiles(index, {f"{m.id}.json": compact_json(model_row(m, formats)).encode() for m in catalog.models})


def repo_row(repo: Repo, model: Model) -> list:
    """A published checkpoint as the calculator reads it: repository, GGUF file, then its bytes and the parameters it
    keeps at 16 bits (deployment.kept_params) when the catalog gives them (0 bytes before kept ones, when not given)."""
    row: list = [repo.repo, repo.file]
    if repo.bytes or repo.kept:
        row.append(repo.bytes)
    if repo.kept:
        row.append(deployment.kept_params(model, repo.kept))
    return row


def model_row(m: Model, formats: Mapping[str, WeightFormat]) -> list:
    """A preset as the script reads it: its MODEL_FIELDS in order, then what only some models have (an active
    parameter count, tied embeddings, attention other than full, experts, a hybrid's state, a vision tower) as one
    object, if any; and, by GGUF format, its file's bytes (and its routed experts', for a mixture of experts: the
    script counts them itself, in config.js, for any other model)."""
    a = m.arch.attention
    row: list = [m.id, m.params_b, m.arch.layers, m.arch.heads, m.arch.kv_heads, m.arch.head_dim, m.arch.hidden, m.arch.vocab]
    row += [m.arch.intermediate, m.release]
    extra: dict = {"name": m.name}
    if m.repos:  # where each format is published, for the launch command (engines/launch.py), and its bytes if given
        extra["repos"] = {name: repo_row(r, m) for name, r in m.repos.items()}
    if m.active_params_b is not None:
        extra["active"] = m.active_params_b
    # Left out when they say nothing: untied embeddings, full attention, no experts, no vision tower (the script's defaults).
    if m.arch.tied_embeddings:
        extra["tied"] = True
    if a.kind != "full" or a.fused_qkv or a.global_head_dim or a.qk_norm:
        extra["attention"] = {
            "kind": a.kind,
            "window": a.window,
            "slidingLayers": a.sliding_layers,
            "latent": a.kv_lora_rank + a.qk_rope_head_dim,
            **({"rank": a.kv_lora_rank, "vDim": a.v_head_dim} if a.kind == "mla" else {}),  # rank: the width MLA attends over (speed.js)
            **({"qLora": a.q_lora_rank} if a.q_lora_rank else {}),
            **({"fused": 1} if a.fused_qkv else {}),
            **({"qkNormLayer": 1} if a.qk_norm else {}),  # its q and k norms all-reduced (speed.js allreduces)
            **({"indexBytes": a.index_bytes} if a.index_bytes else {}),
            **({"globalKvHeads": a.global_kv_heads} if a.global_kv_heads else {}),  # Gemma 4's, with K = V (engines/gguf.py)
            **({"globalHeadDim": a.global_head_dim} if a.global_head_dim else {}),
        }
    if m.arch.experts:
        extra["experts"] = experts_data(m.arch.experts)
    if m.arch.blocks_per_layer != 2:
        extra["blocks"] = m.arch.blocks_per_layer
    if m.arch.state:
        extra["state"] = state_data(m.arch.state)
    if m.vision_params_b:
        extra["vision"] = m.vision_params_b
    text = round(m.params_b * 1e9) - round(m.vision_params_b * 1e9)
    files = {name: gguf.file_bytes(m.arch, f.file_type, text) for name, f in formats.items() if f.scope == "tensors"}
    experts = {name: [files[name], gguf.expert_bytes(m.arch, formats[name].file_type)] for name in files} if m.arch.experts else {}
    extra["gguf"] = {**files, **experts}
    return row + [extra] if extra else row


def shortest_numbers(value):
    """The data with every whole float written as an integer (8.0 as 8: the same number in JavaScript, two bytes fewer)."""
    if isinstance(value, dict):
        return {key: shortest_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shortest_numbers(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def gpu_row(gpu: Gpu) -> list:
    """A GPU on offer as the scripts read it, its GPU_FIELDS in order: the name, the bytes the runtime sees, and what
    the speed engine reads (bandwidth in TB/s, memory kind, dense TFLOPS, the link), what the support table reads (the
    compute capability) and the PCIe generation, if known."""
    link = {
        "kind": gpu.link.kind,
        "gbS": gpu.link.gb_s,
        **({"gpus": gpu.link.gpus} if gpu.link.gpus else {}),
        **({"p2p": 1} if gpu.link.p2p else {}),
    }
    row = [gpu.name, gpu.runtime_bytes, gpu.bandwidth_tb_s, gpu.memory_type, gpu.dense_tflops, link, gpu.compute_capability]
    return row + [gpu.form_factor.pcie_gen] if gpu.form_factor.pcie_gen else row


def support_data(table: SupportRules) -> dict:
    """engines/support.py's table as calculator.js mirrors it (the engines by deployment.runtimeNames): per engine and
    format one string, the lowest NVIDIA capability ("" for none) then the AMD targets, separated by spaces, "*" for
    the targets most formats share (`targets`); each GPU's capability is in its row."""
    every = [r.amd for rows in (table.weights, table.kv) for formats in rows.values() for r in formats.values() if r.amd]
    shared = max(sorted(set(every)), key=every.count, default=())  # sorted: the same choice on a tie, every build

    def reaches(rows: dict[str, dict[str, Reach]]) -> dict:
        def one(r: Reach) -> str:
            return " ".join((r.nvidia, "*")) if shared and r.amd == shared else " ".join((r.nvidia, *r.amd))

        return {engine: {name: one(r) for name, r in formats.items()} for engine, formats in rows.items()}

    return {
        "targets": " ".join(shared),
        "weights": reaches(table.weights),
        "kv": reaches(table.kv),
        "equivalents": table.equivalents,
    }


def speed_data(rules: SpeedRules | None, runtimes: Collection[str]) -> dict | None:
    """rules.yaml's speed block for speed.js, the factors of the engines the formats run on (None without one:
    the calculator then shows no speeds)."""
    if rules is None:
        return None
    efficiency = {
        runtime: {
            "bandwidthGddr": e.bandwidth_gddr,
            "bandwidthHbm": e.bandwidth_hbm,
            "compute": e.compute,
            "prefill": e.prefill,
            "prefillMoe": e.prefill_moe,
            "prefillQuantized": e.prefill_quantized,
            "layerOverheadS": e.layer_overhead_s,
            "layerOverheadQuantizedS": e.layer_overhead_quantized_s,
            # left out where none is fitted: llama.cpp has no MoE runs measured and splits layers without all-reduces
            **({"layerOverheadMoeS": e.layer_overhead_moe_s} if e.layer_overhead_moe_s else {}),
            **({"allreduceS": {"link": e.allreduce_link_s, "pcie": e.allreduce_pcie_s}} if e.allreduce_link_s + e.allreduce_pcie_s else {}),
        }
        for runtime, e in rules.efficiency.items()
        if runtime in runtimes
    }
    return {
        "efficiency": efficiency,
        "computePrecision": {name: list(rates) for name, rates in rules.compute_precision.items()},
        "mixedPrecision": list(MIXED_PRECISION),
        # by engine, the GPUs it has a measured run on: a figure elsewhere is marked (calibration.unmeasured)
        "measured": {runtime: sorted(gpus) for runtime, gpus in rules.calibration.measured.items() if runtime in runtimes}
        if rules.calibration
        else {},
        "pcieGbS": {str(gen): gb_s for gen, gb_s in rules.pcie_gb_s.items()},
        "activationBytes": rules.activation_bytes,
        "secondsPerHour": SECONDS_PER_HOUR,
        "million": MILLION,
    }


def state_data(state: State | None) -> dict | None:
    """A hybrid's state layers as the scripts read them (the recurrent dtype left out when the model's own)."""
    if state is None:
        return None
    found = {"kind": state.kind, "layers": state.layers, "conv": state.conv, "recurrent": state.recurrent}
    found |= {"recurrentBytes": state.recurrent_bytes} if state.recurrent_bytes else {}
    return found | ({"mlpLayers": state.mlp_layers} if state.mlp_layers else {})


def experts_data(experts: Experts | None) -> dict | None:
    if experts is None:
        return None
    return {
        "count": experts.count,
        "active": experts.active,
        "intermediate": experts.intermediate,
        "shared": experts.shared,
        "denseLayers": experts.dense_layers,
        **({"projections": experts.projections} if experts.projections != 3 else {}),  # Nemotron-H's ungated experts
        **({"width": experts.width} if experts.width else {}),
    }
