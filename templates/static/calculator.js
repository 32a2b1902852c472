// GPU-memory calculator: serving as generator/deployment.py and sizing.py, fine-tuning as training.py (training.js,
// loaded when a reader picks a fine-tuning mode), a config.json counted as hf_config.py (config.js, loaded when a reader
// pastes one); every constant comes from the build's JSON.
(function () {
  "use strict";

  var ARCH = ["params", "layers", "heads", "kv_heads", "head_dim", "hidden", "vocab", "tied", "intermediate",
    "experts", "experts_active", "expert_width"];
  var TRAINING = ["seq", "micro_batch", "checkpointing", "flash_attention", "optimizer", "precision", "lora_rank", "lora_targets",
    "zero", "offload", "fp32_unquantized"];
  var LORA = ["lora_rank", "lora_targets"], QLORA = ["fp32_unquantized"];
  var FIELDS = ["model"].concat(ARCH, ["mode", "weights", "kv", "gpus", "batch", "context", "prompt", "output", "sort"], TRAINING);
  var FULL = { kind: "full", window: 0, slidingLayers: 0, latent: 0 };  // full attention: every layer caches every token
  var PARTS = ["weights", "kv_cache", "gradients", "optimizer", "overhead", "activations", "dequantized"];  // their index is their colour class
  var SIZES = ["hidden", "vocab", "intermediate", "gpus"];  // read by both engines, unlike the old rule of thumb
  var MODES = ["serve", "full", "lora", "qlora"], SWITCHES = ["on", "off"];

  // The order of sizing.deployment_fits: price per hour, then fewer GPUs, then the GPU id.
  function cheapestFirst(x, y) {
    return x.price - y.price || x.count - y.count || (x.gpu < y.gpu ? -1 : x.gpu > y.gpu ? 1 : 0);
  }

  // Serving: deployment.py, operation for operation.

  function byName(list, name) {
    for (var i = 0; i < list.length; i++) if (list[i].name === name) return list[i];
    return null;
  }

  // memory.full_layer_kv: the full-attention layers' KV heads and head size, Gemma 4's own or the model's.
  function fullLayerKv(arch) {
    return [arch.attention.globalKvHeads || arch.kvHeads, arch.attention.globalHeadDim || arch.headDim];
  }

  function validTensorParallel(arch, gpus) {
    return arch.heads % gpus === 0 && [arch.kvHeads, fullLayerKv(arch)[0]].every(function (n) { return n % gpus === 0 || gpus % n === 0; });
  }

  function kvElements(arch, gpus, full) {
    if (arch.attention.kind === "mla") return arch.attention.latent;
    var dims = full ? fullLayerKv(arch) : [arch.kvHeads, arch.headDim];
    return 2 * Math.max(1, dims[0] / gpus) * dims[1];
  }

  // deployment.kv_bytes_per_token_layer: keys and values in the KV format (a full-attention layer's when `full`), and
  // DSA's indexer key, whole on every GPU.
  function kvLayerBytes(arch, kv, gpus, full) {
    return kvElements(arch, gpus, full) * kv.bytes + (arch.attention.indexBytes || 0);
  }

  function windowed(a) { return (a.kind === "sliding" || a.kind === "chunked") && a.slidingLayers > 0; }

  // Architecture.attention_layers: all but a hybrid's state layers and MLP-only blocks (Nemotron-H's: no cache at all).
  function attentionLayers(arch) {
    return arch.layers - (arch.state ? arch.state.layers + (arch.state.mlpLayers || 0) : 0);
  }

  // deployment.gpu_cache_share's slots of full-attention, windowed and state layers (layer_counts, layer_slots,
  // group_size): vLLM groups the kinds present by the smallest count (the largest under 1.5 times it), pads each kind's
  // last group and keeps every layer on every GPU; llama.cpp gives each GPU whole layers, the busiest its rounded-up share.
  function cacheSlots(data, arch, runtime, gpus) {
    var state = arch.state ? arch.state.layers : 0, local = windowed(arch.attention) ? arch.attention.slidingLayers : 0;
    var counts = [attentionLayers(arch) - local, local, state], present = counts.filter(Boolean);
    var small = Math.min.apply(null, present), large = Math.max.apply(null, present);
    var group = present.length < 2 || large < data.deployment.hybridGroupRatio * small ? large : small;
    return counts.map(function (n) { return runtime === "llama.cpp" ? Math.ceil(n / gpus) : Math.ceil(n / group) * group; });
  }

  function embeddingParams(arch) {
    return arch.vocab * arch.hidden * (arch.tied ? 1 : 2);
  }

  function expertParams(data, arch, padTo) {
    var experts = arch.experts;
    if (!experts) return 0;
    var width = experts.intermediate;
    if (padTo) width = Math.ceil(width / padTo) * padTo;
    var moeLayers = arch.layers - experts.denseLayers;
    var matrices = experts.projections || data.counting.gatedMatrices;  // an ungated expert has 2 (Nemotron-H)
    return moeLayers * experts.count * matrices * (experts.width || arch.hidden) * width;
  }

  // deployment.weights_bytes: the whole model's weights as a format stores them.
  // The value a preset gives for this weight format: its checkpoint's bytes, or the parameters it keeps at 16 bits.
  function ofFormat(data, table, fmt) {
    var name = table && Object.keys(table).filter(function (key) { return data.weightFormats[key] === fmt; })[0];
    return name ? table[name] : 0;
  }

  function weightsBytes(data, s, fmt) {
    var dep = data.deployment, params = s.params * 1e9, given = ofFormat(data, s.checkpoints, fmt);
    if (given) return given;  // a published checkpoint's bytes
    if (fmt.fileType) return gguf(data, s, fmt)[0] + Math.round(s.vision * 1e9) * dep.sixteenBitBytes;
    if (fmt.scope === "all") return params * fmt.bits / dep.bitsPerByte;
    if (fmt.scope === "experts") {
      var quantized = expertParams(data, s.arch, fmt.padTo);
      var rest = params - expertParams(data, s.arch, 0);
      return quantized * fmt.bits / dep.bitsPerByte + rest * dep.sixteenBitBytes;
    }
    var kept = embeddingParams(s.arch) + s.vision * 1e9 + ofFormat(data, s.kept, fmt);
    return (params - kept) * fmt.bits / dep.bitsPerByte + kept * dep.sixteenBitBytes;
  }

  // engines/gguf.py: a GGUF file's bytes and its routed experts', the preset's (while the form keeps its parameters)
  // or config.js's count (loaded for any other model before a result is shown).
  function gguf(data, s, fmt) {
    var given = ofFormat(data, s.gguf, fmt);
    return given ? [].concat(given) : window.gpumemConfig.ggufBytes(data, s, fmt);
  }

  // llamacpp.padded and sliding_cells: llama.cpp pads its caches to whole blocks of cells; a sliding-window cache
  // holds the window plus one micro-batch.
  function padCells(data, cells) {
    var pad = data.deployment.cellPad;
    return Math.ceil(cells / pad) * pad;
  }

  function slidingCells(data, arch, context) {
    return padCells(data, Math.min(padCells(data, context), arch.attention.window + data.deployment.llamacppBatch));
  }

  // llamacpp.compute_bytes for llamacpp.server_graph: the compute buffer llama-server reserves (-fa on) on the GPU
  // holding the output layer, the larger of a layer's live tensors and the output's, with pipeline copies on several GPUs.
  function computeBytes(data, arch, context, requests, gpus) {
    var dep = data.deployment, a = arch.attention, copies = gpus > 1 ? dep.llamacppCopies : 1;
    var tokens = Math.min(context * requests, dep.llamacppBatch), cells = padCells(data, context);
    if (windowed(a)) cells += slidingCells(data, arch, context);
    var query = arch.heads * arch.headDim, output = query, projections;
    if (a.kind === "mla") {
      query = arch.heads * a.latent;
      output = arch.heads * a.rank;
      projections = arch.hidden + query + a.latent;
    } else {
      projections = arch.hidden + query + 2 * arch.kvHeads * arch.headDim;
    }
    var e = arch.experts, tensors = dep.feedForwardTensors, ffn = !e || e.denseLayers ? tensors * arch.intermediate : 0;
    if (e) ffn = Math.max(ffn, tensors * e.active * e.intermediate, e.active * (e.intermediate + arch.hidden));
    var hidden = tokens * arch.hidden * dep.f32Bytes, mask = cells * tokens * dep.f16Bytes;
    var layer = tokens * Math.max(projections, query + output, ffn) * dep.f32Bytes;
    var out = Math.min(requests, tokens) * (arch.vocab + arch.hidden) * dep.f32Bytes;
    var kept = copies > 1 ? copies * (mask + hidden) : 0;
    return Math.max((kept || mask) + hidden + layer, kept + out);
  }

  function runtimeBytes(data, arch, fmt, gpus, batch, tokens, sequences) {
    var dep = data.deployment;
    if (fmt.runtime === "llama.cpp") return dep.nonTorchBytes + computeBytes(data, arch, tokens, sequences, gpus);
    var nonTorch = dep.nonTorchBytes + (gpus > 1 ? dep.parallelBytes : 0);
    var activation = dep.activationBytes + dep.samplerBytes * batch.sequences * arch.vocab;
    return nonTorch + activation;
  }

  function batchDefaults(data, cardBytes, gpuId) {
    var dep = data.deployment;
    if (cardBytes >= dep.hugeCardBytes) return dep.hugeBatch;
    var large = cardBytes >= dep.largeCardBytes && dep.largeCardExceptions.indexOf(gpuId) < 0;
    return large ? dep.largeBatch : dep.smallBatch;
  }

  // deployment.graph_bytes_per_gpu: vLLM's CUDA-graph estimate (none with --enforce-eager, none for llama.cpp).
  function graphBytes(data, fmt, batch) {
    return fmt.runtime !== "vllm" || batch.cudaGraphs === false ? 0 : data.deployment.cudaGraphBytes;
  }

  // deployment.reserved_tokens: what a sliding-window layer reserves beside its window (vLLM's steps in flight,
  // llama.cpp's micro-batch).
  function reservedTokens(data, fmt, batch) {
    var dep = data.deployment;
    return fmt.runtime === "llama.cpp" ? dep.llamacppBatch : dep.inFlightBatches * batch.tokens;
  }

  // deployment.state_bytes_per_gpu and block_tokens: vLLM's attention block for a hybrid, the smallest multiple of the
  // alignment (paging: [pages per request and state layer, alignment]) whose page holds one layer's state on one GPU,
  // in the model's dtype (the recurrent part in its own when given); 1, no rounding, without a state or paging.
  function stateBytes(data, arch, gpus) {
    var s = arch.state, dtype = data.deployment.stateBytes;
    return (s.conv * dtype + s.recurrent * (s.recurrentBytes || dtype)) / gpus;
  }

  function blockTokens(data, arch, kv, gpus, paging) {
    if (!paging) return 1;  // the callers page a hybrid's state alone
    return paging[1] * Math.ceil(stateBytes(data, arch, gpus) / (paging[1] * kvLayerBytes(arch, kv, gpus)));
  }

  // deployment.state_cache_bytes_per_gpu: a hybrid's state layers for `sequences` requests, whatever their length: on
  // vLLM paging[0] pages of one block each per layer slot, on llama.cpp one F32 state; unpaged, the state itself.
  function stateCache(data, arch, kv, sequences, gpus, runtime, paging) {
    var s = arch.state, slots = cacheSlots(data, arch, runtime, gpus)[2];
    if (!s) return 0;
    if (runtime === "llama.cpp") return slots * ((s.conv + s.recurrent) * data.deployment.f32Bytes) * sequences;
    if (!paging) return slots * stateBytes(data, arch, gpus) * sequences;
    return slots * paging[0] * (blockTokens(data, arch, kv, gpus, paging) * kvLayerBytes(arch, kv, gpus)) * sequences;
  }

  // deployment.kv_cache_bytes_per_gpu: `sequences` requests of `tokens` tokens and their state. A windowed layer holds
  // its window (sliding_tokens), or what the runtime reserves when batchTokens is given: vLLM the last window - 1 tokens
  // (a chunked layer its whole chunk) and the tokens in flight, llama.cpp its cells. vLLM rounds a hybrid's attention
  // tokens up to whole blocks; paging: deployment.Paging, none (the state itself, unrounded) unless given.
  function kvCache(data, arch, kv, tokens, sequences, gpus, runtime, batchTokens, paging) {
    var slots = cacheSlots(data, arch, runtime, gpus), a = arch.attention, held = 0, llama = runtime === "llama.cpp";
    if (slots[1]) {
      held = llama && batchTokens ? slidingCells(data, arch, tokens)
        : Math.min(tokens, batchTokens ? (a.kind === "chunked" ? a.window : a.window - 1) + batchTokens : a.window);
    }
    var block = llama ? 1 : blockTokens(data, arch, kv, gpus, paging);
    var split = llama ? 1 : gpus, full = slots[0] * block * Math.ceil(tokens / block), local = slots[1] * block * Math.ceil(held / block);
    var attention = kvLayerBytes(arch, kv, split, true) * full + kvLayerBytes(arch, kv, split) * local;
    return attention * sequences + stateCache(data, arch, kv, sequences, gpus, runtime, paging);
  }

  // Mirrors deployment.deployment: bytes, the whole model's weights and every per-GPU part.
  function deploymentNeed(data, s, fmt, kv, gpus, tokens, sequences, batch) {
    var weights = weightsBytes(data, s, fmt), arch = s.arch, slots = cacheSlots(data, arch, fmt.runtime, gpus);
    var split = fmt.runtime === "llama.cpp" ? 1 : gpus;  // llama.cpp keeps whole layers, every KV head
    var need = { gpus: gpus, weights: weights, weightsPerGpu: weights / gpus,
      kvPerToken: kvLayerBytes(arch, kv, split, true) * slots[0] + kvLayerBytes(arch, kv, split) * slots[1],
      kv: kvCache(data, arch, kv, tokens, sequences, gpus, fmt.runtime, reservedTokens(data, fmt, batch),
        arch.state && data.deployment.statePaging[arch.state.kind]),
      runtime: runtimeBytes(data, arch, fmt, gpus, batch, tokens, sequences), graph: graphBytes(data, fmt, batch) };
    need.perGpu = need.weightsPerGpu + need.runtime + need.graph + need.kv;
    return need;
  }

  // A GPU on offer: its row of data.gpus with the names of data.gpuFields (the keys are written once), or null.
  function gpuOf(data, id) {
    var row = has(data.gpus, id) ? data.gpus[id] : null, gpu = {};
    if (!row) return null;
    data.gpuFields.forEach(function (name, i) { if (i < row.length) gpu[name] = row[i]; });
    return gpu;
  }

  // sizing.offered_configurations: n GPUs of one kind for each n of `counts` some machine holds, at n x its lowest
  // price; `card`: the bytes each card holds.
  function offered(data, counts) {
    var found = [];
    Object.keys(data.machines).forEach(function (id) {
      var gpu = gpuOf(data, id);
      counts.forEach(function (n) {
        var prices = data.machines[id].filter(function (m) { return m[0] >= n; }).map(function (m) { return m[1]; });
        if (prices.length && gpu) {
          found.push({ gpu: id, name: gpu.name, count: n, price: n * Math.min.apply(null, prices), card: gpu.runtimeBytes });
        }
      });
    });
    return found;
  }

  // Mirrors engines/support.py: why an engine cannot run a format on a GPU (null: it can, or no table or capability).
  function refusal(data, engineName, kind, name, gpuId) {
    var gpu = gpuOf(data, gpuId), has = gpu && data.support ? gpu.capability : "";
    var reach = has ? get(get(data.support[kind], engineName, {}), name, null) : undefined;
    if (reach === undefined) return null;
    var parts = reach === null ? [""] : reach.split(" "), needs = parts[0];
    var targets = parts[1] === "*" ? data.support.targets.split(" ") : parts.slice(1);  // "*": the targets most formats share
    var amd = has.indexOf("gfx") === 0;  // NVIDIA's "major.minor" has one digit after the point: it compares as a number
    if (reach !== null && (amd ? targets.indexOf(has) >= 0 : needs !== "" && +has >= +needs)) return null;
    // why: the sentence that says it (the format runs nowhere; from a capability; or not here, however)
    var why = reach !== null && !needs && !targets.length ? "nowhere" : reach === null || !needs || amd ? "other" : "needs";
    return { engine: engineName, kind: kind, format: name, gpu: gpuId, has: has, needs: needs, why: why };
  }

  // support.serving: the asked weights on their engine, else the llama.cpp format that stands in, else refused.
  function served(data, weights, kvName, gpuId) {
    var runs = function (name) {
      var runtime = data.weightFormats[name].runtime;
      return refusal(data, runtime, "weights", name, gpuId) || refusal(data, runtime, "kv", kvName, gpuId);
    };
    var why = runs(weights), alt = why ? get(data.support.equivalents, weights, "") : "";
    if (why && why.kind === "weights" && alt && !runs(alt)) return { weights: alt, refusal: why, runs: true };
    return { weights: weights, refusal: why, runs: !why };
  }

  // Mirrors sizing.deployment_fits: single machines that hold it, cheapest first, comfortable or tight; and into
  // `refused`, support.left_out: each GPU on offer no engine runs the formats on, once.
  function deploymentFits(data, s, asked, kv, refused) {
    var dep = data.deployment, found = [];
    offered(data, data.gpuCounts).forEach(function (c) {
      var use = served(data, s.weights, kv.name, c.gpu), fmt = data.weightFormats[use.weights];
      if (!use.runs && !refused.some(function (r) { return r.gpu === c.gpu; })) refused.push(Object.assign({ name: c.name }, use.refusal));
      if (!use.runs || (fmt.runtime === "vllm" && !validTensorParallel(s.arch, c.count))) return;
      var card = c.card, batch = batchDefaults(data, card, c.gpu);
      var need = deploymentNeed(data, s, fmt, kv, c.count, s.context, s.batch, batch);
      var budget = dep.utilization * card;
      if (need.perGpu >= budget) return;
      var roomy = deploymentNeed(data, s, fmt, kv, c.count, s.context, s.batch + data.comfortableRequests, batch);
      found.push({ gpu: c.gpu, name: c.name, count: c.count, price: c.price, weights: use.weights,
        need: need.perGpu, budget: budget, tight: roomy.perGpu >= budget });
    });
    return found.sort(cheapestFirst);
  }

  // shlex.join: an argument of other characters than these is single-quoted.
  function shellQuote(arg) {
    return arg !== "" && !/[^\w@%+=:,.\/-]/.test(arg) ? arg : "'" + arg.replace(/'/g, "'\"'\"'") + "'";
  }

  // Mirrors engines/launch.launch: the command that makes the fit true on the pinned engine version.
  function launchCommand(data, s, fmt, kv) {
    var preset = s.model !== "custom" ? presetOf(data, s.model) : null;
    var repos = (preset && preset.repos) || {}, own = has(repos, s.weights) ? repos[s.weights] : null;
    var name = preset ? preset.name : "custom", kind = fmt.runtime === "llama.cpp" ? "file" : "checkpoint";
    var holder = "<" + fmt.label + " " + kind + " of " + name + ">", argv, missing = "", download = "";
    if (fmt.runtime === "llama.cpp") {
      var file = own && own[1] ? own[1] : holder;
      argv = ["llama-server", "-m", file, "-c", String(s.context * s.batch), "-ngl", data.launchAllLayers, "-fa", "on", "--parallel", String(s.batch)];
      if (s.gpus > 1) argv.push("--tensor-split", Array(s.gpus).fill("1").join(","));
      if (kv.runtime === "llama.cpp") argv.push("--cache-type-k", kv.name, "--cache-type-v", kv.name);
      missing = own && own[1] ? "" : file;
      download = own ? own[0] : "";
    } else {
      var repo = holder, quantization = null;
      if (own) repo = own[0];
      else if (has(data.launchOnTheFly, s.weights) && has(repos, "bf16")) { repo = repos.bf16[0]; quantization = data.launchOnTheFly[s.weights]; }
      else missing = holder;
      argv = ["vllm", "serve", repo, "--tensor-parallel-size", String(s.gpus), "--max-model-len", String(s.context),
        "--gpu-memory-utilization", String(data.deployment.utilization), "--max-num-seqs", String(s.batch)];
      if (data.launchKvCacheDtypes.indexOf(kv.name) >= 0) argv.push("--kv-cache-dtype", kv.name);
      if (quantization) argv.push("--quantization", quantization);
    }
    return { engine: fmt.runtime, version: data.engines[fmt.runtime] || "", argv: argv, text: argv.map(shellQuote).join(" "),
      missing: missing, download: download };
  }

  // Serving: the need on the chosen GPUs (vLLM's large-card batch, as gpumem estimate) and the fits.
  function serve(data, s) {
    var fmt = data.weightFormats[s.weights], kv = byName(data.kvFormats, s.kv);
    var need = deploymentNeed(data, s, fmt, kv, s.gpus, s.context, s.batch, data.deployment.largeBatch);
    need.total = need.perGpu * s.gpus / 1e9;
    need.runtimeName = fmt.runtime;
    need.validCounts = fmt.runtime === "vllm"
      ? data.gpuCounts.filter(function (n) { return validTensorParallel(s.arch, n); }) : data.gpuCounts;
    need.refused = [];
    need.fits = deploymentFits(data, s, fmt, kv, need.refused);
    need.refused.sort(function (x, y) { return x.gpu < y.gpu ? -1 : 1; });  // by id (each once), as Python
    need.launch = launchCommand(data, s, fmt, kv);
    return need;
  }

  // Helpers of config.js (a pasted config.json's counting and a link's extra=, loaded when a reader pastes or a link
  // carries extra=).

  function isDict(value) { return value !== null && typeof value === "object" && !Array.isArray(value); }
  function has(object, name) { return Object.prototype.hasOwnProperty.call(object, name); }
  function get(object, name, fallback) { return has(object, name) ? object[name] : fallback; }

  // Reads one field: a number written with "." or "," as decimal mark, no grouping.
  function parseNumber(text) {
    var clean = String(text == null ? "" : text).trim().replace(",", ".");
    if (clean === "") return { error: "empty" };
    if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(clean)) return { error: "number" };
    var value = Number(clean);
    if (!isFinite(value)) return { error: "large" };
    return { value: value };
  }

  var LIMITS = { params: "max_params_b", layers: "max_layers", heads: "max_heads", kv_heads: "max_heads",
    head_dim: "max_head_dim", batch: "max_batch", context: "max_context", hidden: "max_hidden", vocab: "max_vocab",
    intermediate: "max_intermediate", gpus: "max_gpus", experts: "max_experts", experts_active: "max_experts",
    expert_width: "max_intermediate", seq: "max_context", micro_batch: "max_batch", lora_rank: "max_hidden",
    prompt: "max_context", output: "max_context" };

  function checkNumber(data, raw, field, errors, values, zero) {
    var parsed = parseNumber(raw[field]);
    var limit = data.limits[LIMITS[field]];
    if (parsed.error) { errors[field] = [parsed.error]; return; }
    var v = parsed.value;
    if (v < 0 || (v === 0 && !zero)) errors[field] = ["positive"];
    else if (field !== "params" && Math.floor(v) !== v) errors[field] = ["whole"];
    else if (v > limit) errors[field] = ["max", limit];
    else values[field] = v;
  }

  // A raw state checked: {state} or {errors: {field: [key, values]}}. `pasted`: what a config.json says beyond the fields.
  function validate(data, raw, pasted) {
    var errors = {}, values = {}, filled = withEstimates(data, raw);
    raw = filled.raw;
    var serving = raw.mode === "serve";
    ["params", "layers", "heads", "kv_heads", "head_dim"].concat(serving ? ["batch", "context", "prompt", "output"] : [], SIZES).forEach(function (field) {
      if (filled.waiting.indexOf(field) < 0) checkNumber(data, raw, field, errors, values, false);
    });
    if (serving) checkLengths(values, errors);
    checkNumber(data, raw, "experts", errors, values, true);
    if (values.experts) {
      checkNumber(data, raw, "experts_active", errors, values, false);
      checkNumber(data, raw, "expert_width", errors, values, false);
      if (values.experts_active > values.experts) errors.experts_active = ["atMost", values.experts];
    }
    if (["0", "1"].indexOf(raw.tied) < 0) errors.tied = ["choice"];
    // training.js: loaded before the page validates a fine-tuning mode
    var tuning = MODES.indexOf(raw.mode) > 0 ? window.gpumemTraining.settings(data, raw, errors, values) : null;
    if (values.heads && values.kv_heads && values.heads % values.kv_heads !== 0) errors.kv_heads = ["divide", values.heads];
    if (MODES.indexOf(raw.mode) < 0) errors.mode = ["choice"];
    if (serving && data.sorts.indexOf(raw.sort) < 0) errors.sort = ["choice"];
    var fmt = has(data.weightFormats, raw.weights) ? data.weightFormats[raw.weights] : null, kv = byName(data.kvFormats, raw.kv);
    if (!fmt) errors.weights = ["choice"];
    if (!kv) errors.kv = ["choice"];
    if (serving && fmt && kv && kv.runtime !== fmt.runtime && data.deployment.kvAnyRuntime.indexOf(kv.name) < 0) {
      var usable = data.kvFormats.filter(function (o) { return o.runtime === fmt.runtime || data.deployment.kvAnyRuntime.indexOf(o.name) >= 0; });
      var runtimes = data.deployment.runtimeNames;
      errors.kv = ["kvRuntime", { kv: kv.label, kv_runtime: runtimes[kv.runtime], weights: fmt.label, runtime: runtimes[fmt.runtime],
        usable: usable.map(function (o) { return o.label; }) }];
    }
    var preset = raw.model !== "custom" ? presetOf(data, raw.model) : null;
    var extra = preset ? { attention: preset.attention || FULL, vision: preset.vision || 0, experts: preset.experts || null,
      state: preset.state || null, blocks: preset.blocks } : (pasted && pasted.extra) || { attention: FULL, vision: 0, experts: null, state: null };
    // config.js: loaded whenever a paste or a link's extra= sets `pasted`
    var refused = !preset && pasted ? pasted.error || (values.layers && window.gpumemConfig.against(extra, values.layers)) : null;
    if (refused) errors.extra = ["extra", { problem: { error: refused } }];
    var experts = null;
    if (values.experts) {
      var moe = extra.experts || {};
      experts = { count: values.experts, active: values.experts_active, intermediate: values.expert_width,
        shared: moe.shared || 0, denseLayers: moe.denseLayers || 0, projections: moe.projections || 0, width: moe.width || 0 };
    }
    var arch = { layers: values.layers, heads: values.heads, kvHeads: values.kv_heads, headDim: values.head_dim,
      attention: extra.attention, hidden: values.hidden, vocab: values.vocab, tied: raw.tied === "1",
      intermediate: values.intermediate, experts: experts, state: extra.state, blocksPerLayer: extra.blocks || 2 };
    if (serving && fmt && fmt.runtime === "vllm" && values.gpus && values.heads && values.kv_heads && !errors.kv_heads &&
        !validTensorParallel(arch, values.gpus)) {
      var counts = data.gpuCounts.filter(function (n) { return validTensorParallel(arch, n); });
      errors.gpus = ["tensorParallel", { heads: values.heads, kv_heads: values.kv_heads, gpus: values.gpus, counts: counts }];
    }
    var own = preset && values.params === preset.params;
    var state = { model: raw.model, mode: raw.mode, weights: raw.weights, kv: raw.kv, params: values.params,
      vision: extra.vision, batch: values.batch, context: values.context, gpus: values.gpus, arch: arch, training: tuning,
      active: preset && preset.active || null, prompt: values.prompt, output: values.output, sort: raw.sort,
      estimated: filled.estimated, checkpoints: own ? published(preset, 0) : null, kept: own ? published(preset, 1) : null,
      gguf: own ? preset.gguf : null };
    if (tuning && !Object.keys(errors).length) {
      var declined = window.gpumemTraining.check(data, state, tuning);  // training.check: a run no trainer would start
      if (declined) errors[declined[0]] = [declined[1], declined[2]];
    }
    if (Object.keys(errors).length) return { errors: errors };
    return { state: state };
  }

  // The fine-tuning fields that are choices, and their values, in a training mode (readLink's, and training.js's).
  function trainingChoices(data, mode) {
    var tr = data.training;
    var choices = { checkpointing: tr.checkpointing, flash_attention: SWITCHES, optimizer: Object.keys(tr.optimizers),
      precision: Object.keys(tr.precisions), zero: tr.zero.map(String), offload: SWITCHES };
    if (mode !== "full") choices.lora_targets = Object.keys(tr.targets);
    if (mode === "qlora") choices.fp32_unquantized = SWITCHES;
    return choices;
  }

  // Serving's prompt and output lengths within the context (gpumem estimate --speed refuses them beyond it too).
  function checkLengths(values, errors) {
    if (!values.prompt || !values.output || !values.context || values.prompt + values.output <= values.context) return;
    errors.prompt = ["lengths", { prompt: values.prompt, output: values.output, context: values.context }];
  }

  // A parameter count alone: engines/architecture.py's estimated_fields, operation for operation, on data.estimate
  // (the rule fitted over the catalog's dense models at build time).
  var ESTIMATED = ["layers", "heads", "kv_heads", "head_dim", "hidden", "vocab", "intermediate"];
  var EXPERT_FIELDS = ["experts", "experts_active", "expert_width"];

  function nearest(value) { return Math.max(1, Math.round(value)); }

  function estimatedFields(rule, params, given) {
    var headDim = given.head_dim || rule.headDim;
    var hiddenGuess = given.hidden || rule.hidden[0] * Math.pow(params, rule.hidden[1]);
    var heads = given.heads || rule.kvHeads * nearest(hiddenGuess / (headDim * rule.kvHeads));
    var hidden = given.hidden || heads * headDim, kvHeads = given.kv_heads;
    for (var n = Math.min(heads, rule.kvHeads); !kvHeads; n--) if (heads % n === 0) kvHeads = n;
    return { layers: given.layers || nearest(rule.layers[0] * Math.pow(params, rule.layers[1])), heads: heads, kv_heads: kvHeads,
      head_dim: headDim, hidden: hidden, vocab: given.vocab || rule.vocab,
      intermediate: given.intermediate || nearest(rule.mlpRatio * hidden / headDim) * headDim };
  }

  function blank(value) { return String(value === null || value === undefined ? "" : value).trim() === ""; }

  // A custom model's empty architecture fields filled from its parameter count ({raw, estimated: {field: value}}),
  // the fields given kept (and followed); `waiting`: those left empty while the parameter count is refused (its own
  // field says why); an empty expert count is a dense model.
  function withEstimates(data, raw) {
    var empty = ESTIMATED.filter(function (f) { return blank(raw[f]); }), params = parseNumber(raw.params);
    var out = Object.assign({}, raw), custom = raw.model === "custom";
    EXPERT_FIELDS.forEach(function (f) { if (blank(raw[f])) out[f] = "0"; });
    if (!custom || !empty.length || !data.estimate) return { raw: out, estimated: null, waiting: [] };
    if (params.error || !(params.value > 0) || params.value > data.limits.max_params_b) return { raw: out, estimated: null, waiting: empty };
    var given = {};
    ESTIMATED.forEach(function (f) {
      var v = parseNumber(raw[f]).value;
      if (v > 0 && Math.floor(v) === v && v <= data.limits[LIMITS[f]]) given[f] = v;
    });
    var fields = estimatedFields(data.estimate, params.value, given), estimated = {};
    empty.forEach(function (f) { out[f] = String(fields[f]); estimated[f] = fields[f]; });
    return { raw: out, estimated: estimated, waiting: [] };
  }

  // What models.yaml gives of a preset's published checkpoints, by format (deployment.weights_bytes), from each repos
  // row's repository and file, then its bytes (which = 0) and the parameters it keeps at 16 bits (1): they hold while the
  // form keeps the preset's parameters.
  function published(preset, which) {
    var found = {}, repos = preset.repos || {};
    Object.keys(repos).forEach(function (name) { var value = repos[name].slice(2)[which]; if (value) found[name] = value; });
    return found;
  }

  // A pasted model's experts as extra= carries them: what the fields cannot say (models.yaml's experts block).
  function moeExtra(e) {
    var moe = { shared: e.shared, denseLayers: e.denseLayers };
    if (e.projections) moe.projections = e.projections;
    if (e.width) moe.width = e.width;
    return moe;
  }

  // A preset from its row (the page's own in the build's JSON, the others fetched): the fields data.modelFields names,
  // then what only some models have.
  function presetOf(data, id) {
    var row = null;
    for (var i = 0; i < data.models.length && !row; i++) if (data.models[i][0] === id) row = data.models[i];
    if (!row && has(fetched, id)) row = fetched[id];
    if (!row) return null;
    var preset = Object.assign({}, row[data.modelFields.length]);
    data.modelFields.forEach(function (name, j) { preset[name] = row[j]; });
    return preset;
  }

  // Every preset but the page's own is a file of the site (figures/calculator_data.preset_files), fetched once, when a
  // reader or a link names its model: assets/presets.<digest>/<id>.json, beside the list of every model's id and name.
  var fetched = {}, pending = {};
  var PRESET_ID = /^[a-z\d][a-z\d._-]*$/;  // a catalog id (catalog/validate.py's SLUG): anything else is no preset

  function presetsAt() { return document.getElementById("calculator").getAttribute("data-presets"); }

  function getJson(url) {
    return fetch(url).then(function (response) {
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.json();
    });
  }

  // A preset's row, as its file holds it.
  function remember(row) {
    if (!Array.isArray(row) || typeof row[0] !== "string") throw new Error("not a preset");
    fetched[row[0]] = row;
    return row;
  }

  // A promise of a catalog model's preset row, fetched once; null where `list` (a promise of the preset list) says
  // the id is no catalog model's. It fails when the site does not answer, and a later call asks again.
  function loadPreset(id, list) {
    if (has(fetched, id)) return Promise.resolve(fetched[id]);
    if (!PRESET_ID.test(id)) return Promise.resolve(null);
    if (!has(pending, id)) {
      pending[id] = getJson(presetsAt() + "/" + id + ".json").then(remember).catch(function (error) {
        delete pending[id];
        return (list || Promise.reject(error)).then(function (rows) {
          if (rows.some(function (row) { return row[0] === id; })) throw error;
          return null;
        });
      });
    }
    return pending[id];
  }

  function presetFields(preset) {
    var e = preset.experts;
    return { params: preset.params, layers: preset.layers, heads: preset.heads, kv_heads: preset.kvHeads, head_dim: preset.headDim,
      hidden: preset.hidden, vocab: preset.vocab, tied: preset.tied ? 1 : 0, intermediate: preset.intermediate,
      experts: e ? e.count : 0, experts_active: e ? e.active : 0, expert_width: e ? e.intermediate : 0 };
  }

  // The raw state a URL query describes, and a notice {key, name (the parameter), value (the link's), used (instead),
  // more (words)} for every value it names that the page cannot honour as given: an unknown model, choice or parameter, an
  // earlier calculator's weights=int4, a preset's number changed (a custom model), prompt + output beyond the context.
  // Numbers out of bounds stay in their field, which says why it refuses them. `pairs`: the query's [name, value]
  // pairs (a URLSearchParams' entries), the first of a name counting.
  function readLink(data, pairs) {
    var raw = {}, notices = [], d = data.defaults, given = {}, t = data.training.defaults;
    function note(key, name, used, more) {
      notices.push({ key: key, name: name, value: raw[name], used: used, more: more || {} });
      raw[name] = used;
    }
    pairs.forEach(function (pair) { if (!has(given, pair[0])) given[pair[0]] = pair[1]; });
    FIELDS.forEach(function (f) { raw[f] = has(given, f) ? given[f] : null; });
    raw.model = raw.model || (raw.params !== null ? "custom" : d.model);
    var preset = presetOf(data, raw.model);
    if (raw.model !== "custom" && !preset) note(raw.params !== null ? "modelCustom" : "model", "model", raw.params !== null ? "custom" : d.model);
    preset = presetOf(data, raw.model);
    if (preset) {
      var fields = presetFields(preset), changed = ARCH.filter(function (f) {
        return raw[f] !== null && Number(raw[f]) !== fields[f] && (f !== "tied" || ["0", "1"].indexOf(raw[f]) >= 0);  // else a choice's notice
      });
      changed.forEach(function (f) { note("presetChanged", f, raw[f], { model: { model: preset.id }, preset: fields[f] }); });
      ARCH.forEach(function (f) { if (raw[f] === null) raw[f] = String(fields[f]); });
      if (changed.length) raw.model = "custom";
    }
    if (has(data.oldWeights, raw.weights)) note("oldWeights", "weights", data.oldWeights[raw.weights]);
    var choices = { mode: [MODES, d.mode], weights: [Object.keys(data.weightFormats), preset ? preset.release : d.weights],
      kv: [data.kvFormats.map(function (o) { return o.name; }), d.kv], sort: [data.sorts, d.sort], tied: [["0", "1"], "0"] };
    ["mode", "weights", "kv", "sort", "tied"].forEach(function (f) { linkChoice(raw, f, choices[f], note); });
    ["gpus", "batch", "context", "prompt", "output"].forEach(function (f) { if (raw[f] === null) raw[f] = String(d[f]); });
    if (raw.mode === "serve") linkLengths(data, raw, note);
    var training = MODES.indexOf(raw.mode) > 0 ? trainingChoices(data, raw.mode) : {};
    TRAINING.forEach(function (f) {
      var fallback = f === "precision" ? precisionOf(data, raw.mode) : String(t[f]);
      if (has(training, f)) linkChoice(raw, f, [training[f], fallback], note);
      if (raw[f] === null) raw[f] = fallback;
    });
    EXPERT_FIELDS.forEach(function (f) { if (raw[f] === null) raw[f] = "0"; });
    ARCH.forEach(function (f) { if (raw[f] === null) raw[f] = ""; });
    Object.keys(given).forEach(function (f) {
      if (FIELDS.indexOf(f) < 0 && f !== "extra") notices.push({ key: "unknown", name: f, value: given[f], used: "", more: {} });
    });
    return { raw: raw, notices: notices };
  }

  // One choice of a link: [the values the form offers, its default], the default when the link names none.
  function linkChoice(raw, f, choice, note) {
    if (raw[f] === null) raw[f] = choice[1];
    else if (choice[0].indexOf(raw[f]) < 0) note("choice", f, choice[1]);
  }

  // A link's prompt + output beyond its context: the prompt shortened to what the context leaves after the output.
  function linkLengths(data, raw, note) {
    var values = {}, errors = {};
    ["prompt", "output", "context"].forEach(function (f) { checkNumber(data, raw, f, errors, values, false); });
    if (Object.keys(errors).length || values.output >= values.context) return;
    checkLengths(values, errors);
    if (errors.prompt) note("lengths", "prompt", String(values.context - values.output), errors.prompt[1]);
  }

  // The precision a mode opens with (gpumem estimate's default for the method; the first method's while serving).
  function precisionOf(data, mode) {
    var by = data.training.defaults.precision;
    return by[mode] || by[MODES[1]];
  }

  // Whether a field counts in a mode: compute_calculator.applies (the others are hidden and left out of links).
  function applies(field, mode) {
    if (mode === "serve") return TRAINING.indexOf(field) < 0;
    if (LORA.indexOf(field) >= 0) return mode !== "full";
    if (QLORA.indexOf(field) >= 0) return mode === "qlora";
    return ["model", "mode", "gpus"].concat(ARCH, TRAINING).indexOf(field) >= 0;
  }

  function toQuery(raw, pasted) {
    var params = new URLSearchParams();
    FIELDS.forEach(function (f) { if (applies(f, raw.mode)) params.set(f, raw[f]); });
    if (pasted && raw.model === "custom") params.set("extra", pasted.extra ? JSON.stringify(pasted.extra) : pasted.text);
    return params.toString();
  }

  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, name) { return values[name]; });
  }

  // An error [key, values] in the page's words (text: #calculator-messages): numbers written by `show` (the page's
  // number format), lists joined, and a nested error or a shown config value ({error}, {shown}) worded in turn.
  function errorText(text, error, show) {
    var values = typeof error[1] === "number" ? { limit: error[1] } : error[1];
    return fill(text.errors[error[0]], worded(text, values || {}, show));
  }

  function worded(text, values, show) {
    var out = {}, one = function (v) { return typeof v === "number" ? show(v) : v; };
    Object.keys(values).forEach(function (key) {
      var v = values[key];
      if (Array.isArray(v)) out[key] = v.map(one).join(", ");
      else if (isDict(v) && v.error) out[key] = errorText(text, v.error, show);
      else if (isDict(v) && v.shown) out[key] = fill(text.shown[v.shown], worded(text, v.values || {}, show));
      else out[key] = one(v);
    });
    return out;
  }

  // Page wiring: read the form, show the result, keep the URL in step.
  function start(root) {
    var data = JSON.parse(document.getElementById("calculator-data").textContent);
    var text = JSON.parse(document.getElementById("calculator-messages").textContent);
    var lang = document.documentElement.lang;
    // The page's number formats: digits always grouped, rounded half to even as the build's figures are.
    var format = function (options) {
      return new Intl.NumberFormat(lang, Object.assign({ useGrouping: "always", roundingMode: "halfEven" }, options));
    };
    var number = format({ maximumFractionDigits: 1 }), rate = format({ maximumFractionDigits: data.digits.seconds });
    var money = format({ style: "currency", currency: data.currency });
    var perMillion = format({ style: "currency", currency: data.currency, minimumFractionDigits: data.digits.perMillion,
      maximumFractionDigits: data.digits.perMillion });
    var find = function (selector) { return root.querySelector(selector); };  // the calculator's own element
    var form = find("form");
    var gb = function (v) { return fill(text.gb, { value: number.format(v) }); };
    var coefficient = format({ maximumFractionDigits: data.digits.rule });

    function field(name) { return form.elements[name]; }

    // The architecture's fields, folded on a phone (opened for a custom model, a pasted config.json or an error in
    // them), open on a desk, where the result stays in view beside the inputs (calculator.css's two columns).
    var arch = find("#calc-arch");
    if (matchMedia("(min-width: 64rem)").matches) arch.open = true;

    // Each field's error line gets its id and describes its field here: the page carries them bare (they are empty
    // until the script finds an error), which keeps it light.
    FIELDS.concat("config").forEach(function (f) {
      var box = field(f).closest(".field");  // none for sort, a hidden field the table's headings set
      box = box && box.querySelector(".field-error");
      if (!box) return;
      box.id = "calc-" + f + "-error";
      field(f).setAttribute("aria-describedby", box.id);
    });

    function readForm() {
      var raw = {};
      FIELDS.forEach(function (f) { raw[f] = field(f).value; });
      return raw;
    }

    function writeForm(raw) {
      FIELDS.forEach(function (f) { field(f).value = raw[f]; });
    }

    function message(error) {
      return errorText(text, error, number.format);
    }

    // Each field's error, and the config box's: a link's extra= that cannot be used, else what the paste found.
    function showErrors(errors) {
      FIELDS.forEach(function (f) {
        var box = document.getElementById("calc-" + f + "-error");
        var error = errors[f];
        if (box) box.textContent = error ? message(error) : f === "model" ? listProblem : "";
        field(f).setAttribute("aria-invalid", error ? "true" : "false");
      });
      var config = errors.extra || pasteError;
      find("#calc-config-error").textContent = config ? message(config) : "";
      field("config").setAttribute("aria-invalid", config ? "true" : "false");
      if (config || ARCH.some(function (f) { return errors[f]; })) arch.open = true;
    }

    function element(tag, content, attributes) {
      var node = document.createElement(tag);
      Object.keys(attributes || {}).forEach(function (name) { node.setAttribute(name, attributes[name]); });
      node.textContent = content;
      return node;
    }

    function result(tag, name, value) {
      return element(tag, gb(value), { "data-result": name, "data-value": String(value) });
    }

    function render() {
      var raw = readForm();
      FIELDS.forEach(function (f) {
        var on = applies(f, raw.mode), box = field(f).closest(".field");
        if (box) box.hidden = !on;
        field(f).disabled = !on;
      });
      find("#calc-training").hidden = MODES.indexOf(raw.mode) < 1;
      if (blocked && blocked.id !== raw.model) unblock();  // the reader chose another model meanwhile
      if (blocked) return say(blocked.message);
      if (MODES.indexOf(raw.mode) > 0 && !window.gpumemTraining) return say(training());
      history.replaceState(null, "", "?" + toQuery(raw, pasted));
      find("#calc-link").value = location.href;
      var checked = validate(data, raw, pasted);
      showErrors(checked.errors || {});
      showNotices();
      showEstimate(raw, checked.state);
      if (checked.errors) return say(text.invalid);
      if (!checked.state.gguf && !counter) return load(raw.model, function () {}, loadConfig());  // config.js counts its GGUF files
      root.classList.remove("invalid");
      var total = find('[data-result="total-gb"]');
      var summary = find("#calc-summary");
      var s = checked.state;
      summary.textContent = "";
      summary.hidden = false;
      find("#calc-sorting").hidden = s.mode !== "serve" || !data.speed;
      if (s.mode === "serve") renderServe(s, total, summary);
      else renderTraining(s, total, summary);
    }

    // A message in place of the result: the bar, the parts and the list are hidden meanwhile (style.css's .invalid).
    function say(words) {
      var total = find('[data-result="total-gb"]');
      total.textContent = words;
      total.removeAttribute("data-value");
      find("#calc-summary").hidden = true;
      root.classList.add("invalid");
    }

    // The presets: the list of every model fills the choice once fetched; a model whose preset the page lacks shows
    // "loading" until its file comes, or that it could not be loaded (never another model's figures).
    var list = getJson(presetsAt() + ".json"), names = {}, listProblem = "", blocked = null;
    var results = find("#calc-results");
    list.then(function (rows) {
      var select = field("model"), chosen = select.value, items = document.createDocumentFragment();
      items.appendChild(select.options[0]);  // "custom", in the page's language
      rows.forEach(function (row) { names[row[0]] = row[1]; items.appendChild(new Option(row[1], row[0])); });
      select.textContent = "";
      select.appendChild(items);
      select.value = chosen;
    }, function () {
      listProblem = text.listFailed;
      document.getElementById("calc-model-error").textContent = listProblem;
    });

    function nameOf(id) { return has(names, id) ? names[id] : id; }

    function unblock() {
      blocked = null;
      results.removeAttribute("aria-busy");
    }

    // Fetches a model's preset (or waits for `loading`: config.js for a link's extra=, id "custom"), saying so meanwhile
    // and on failure (text.loading, text.failed; with words "extra", text.extraLoading, text.extraFailed), then `then()`
    // and a new result, unless the reader chose another model.
    function load(id, then, loading, words) {
      var says = function (key) { blocked = { id: id, message: fill(text[key], { model: nameOf(id) }) }; };
      says(words ? words + "Loading" : "loading");
      results.setAttribute("aria-busy", "true");
      render();
      (loading || loadPreset(id, list)).then(function () {
        if (!blocked || blocked.id !== id) return;
        unblock();
        then();
        render();
      }, function () {
        if (!blocked || blocked.id !== id) return;
        unblock();
        says(words ? words + "Failed" : "failed");
        render();
      });
    }

    // training.js, loaded when a fine-tuning mode is first shown: what the result says meanwhile, or after a failed load
    // until the reader chooses the mode again (changed() then forgets the failure, and this asks again).
    var tuning = null;
    function training() {
      if (!tuning) {
        tuning = text.trainingLoading;
        var done = function (failed) {
          tuning = failed ? text.trainingFailed : null;
          if (!blocked) results.removeAttribute("aria-busy");
          render();
        };
        loadScript("data-training").then(function () { done(false); }, function () { done(true); });
      }
      if (tuning === text.trainingLoading) results.setAttribute("aria-busy", "true");
      return tuning;
    }

    function applyPreset(id) {
      var preset = presetOf(data, id);
      if (!preset) return;
      var fields = presetFields(preset);
      ARCH.forEach(function (f) { field(f).value = String(fields[f]); });
      field("weights").value = preset.release;
      archOf = id;
    }

    // The state a link describes written into the form (a preset fetched before the list came gets its option), with
    // its notices (readLink), each shown until the reader changes the field it names.
    function openLink() {
      var link = readLink(data, Array.from(new URLSearchParams(location.search))), raw = link.raw, select = field("model");
      var changed = link.notices.filter(function (n) { return n.key === "presetChanged"; });
      var paramsOnly = changed.length && changed.every(function (n) { return n.name === "params"; });
      archOf = raw.model !== "custom" ? raw.model : paramsOnly ? changed[0].more.model.model : null;
      var given = new URLSearchParams(location.search).get("extra");
      pasted = null;
      if (!Array.prototype.some.call(select.options, function (o) { return o.value === raw.model; })) {
        select.appendChild(new Option(nameOf(raw.model), raw.model));
      }
      writeForm(raw);
      if (raw.model === "custom") arch.open = true;
      keepNotices(link.notices);
      if (raw.model !== "custom" || given === null) return;
      load("custom", function () {  // config.js checks extra=
        pasted = counter.extraOf(data, given);
        if (pasted.error) pasted.text = given;  // the link keeps the value it could not honour, named on the page
      }, loadConfig(), "extra");
    }

    // Not `notices = link.notices` among openLink's declarations: the minifier made that a declaration of its own.
    function keepNotices(list) { notices = list; }

    // A choice's words as the form shows them (an option's text), else the value itself, a number in the page's format.
    function shownChoice(name, value) {
      if (name === "sort") return text.columns[data.sorts.indexOf(value) + 1];
      var options = field(name).options || [];
      for (var i = 0; i < options.length; i++) if (options[i].value === value) return options[i].textContent;
      return name === "model" ? nameOf(value) : /^\d+$/.test(value) ? number.format(Number(value)) : value;
    }

    function shownNumber(v) { return Number.isInteger(v) ? number.format(v) : coefficient.format(v); }

    // The link's notices (readLink), each until the reader changes the field it names (the context and output too,
    // for the prompt's).
    function showNotices() {
      var box = find("#calc-notices");
      box.textContent = "";
      notices.forEach(function (n) {
        var values = { name: n.name, value: n.value, used: n.used && shownChoice(n.name, n.used) };
        Object.keys(n.more).forEach(function (key) {
          var v = n.more[key];
          values[key] = isDict(v) ? shownChoice("model", v.model) : shownNumber(v);
        });
        box.appendChild(element("li", fill(text.notices[n.key], values)));
      });
      box.hidden = !notices.length;
    }

    function settle(name) {
      notices = notices.filter(function (n) {
        return n.name !== name && !(n.key === "lengths" && /^(output|context)$/.test(name)) && !(name === "model" && n.key === "presetChanged");
      });
    }

    // Beside the result: what the parameter count estimated and by which rule, or that the fields are still a preset's.
    function showEstimate(raw, state) {
      var box = find("#calc-estimated"), estimated = state && state.estimated, r = data.estimate, words = "";
      if (estimated) {
        words = fill(text.estimated, { models: number.format(r.models), layers: powerLaw(r.layers), hidden: powerLaw(r.hidden),
          fields: Object.keys(estimated).map(function (f) {
            return field(f).closest("label").firstChild.textContent.trim() + " " + number.format(estimated[f]);
          }).join(", ") });
      } else if (raw.model === "custom" && archOf) {
        words = fill(text.presetArch, { model: shownChoice("model", archOf) });
      }
      box.textContent = words;
      box.hidden = !words;
    }

    function powerLaw(rule) { return coefficient.format(rule[0]) + " × P^" + coefficient.format(rule[1]); }

    // Either mode's total over its GPUs, and the summary's first line: the bytes per GPU.
    function renderTotal(s, perGpu, total, summary) {
      var all = perGpu * s.gpus / 1e9;
      total.textContent = gb(all);
      total.setAttribute("data-value", String(all));
      var first = element("li", fill(text.perGpu, { count: number.format(s.gpus) }) + " ");
      first.appendChild(result("strong", "per-gpu-gb", perGpu / 1e9));
      summary.appendChild(first);
    }

    function renderServe(s, total, summary) {
      var need = serve(data, s);
      renderTotal(s, need.perGpu, total, summary);
      var second = element("li", text.wholeWeights + " ");
      second.appendChild(result("span", "weights-gb", need.weights / 1e9));
      summary.appendChild(second);
      renderParts([["weights", "weights-per-gpu-gb", need.weightsPerGpu], ["kv_cache", "kv-gb", need.kv],
        ["overhead", "runtime-gb", need.runtime + need.graph]], need.perGpu / 1e9);
      var found = data.speed ? window.gpumemSpeed.rows(data, s, need.fits).map(function (row) {
        return Object.assign({ speed: row.speed }, row.fit);
      }) : need.fits;
      renderList(data.speed ? "serve" : "plain", found, speedCells, claimOf(s), s.sort);
      renderLegend(rulesFor({ more: number.format(data.comfortableRequests), tokens: number.format(s.context) }));
      find("#calc-order").textContent = fill(text.orders[s.sort], { requests: number.format(s.batch) });
      find("#calc-lengths").textContent = fill(text.lengths, { prompt: number.format(s.prompt), output: number.format(s.output) });
      var counts = find("#calc-counts");
      counts.textContent = need.runtimeName === "vllm"
        ? fill(text.countsVllm, { heads: number.format(s.arch.heads), kv_heads: number.format(s.arch.kvHeads),
          counts: need.validCounts.map(String).join(", ") })
        : text.countsLlamacpp;
      find("#calc-note").textContent = [text.serveNote].concat(refusedText(need.refused)).join(" ");
      var launch = find("#calc-launch");
      if (launch) {
        launch.hidden = false;
        find("#calc-launch-code").textContent = need.launch.text;
        find("#calc-launch-engine").textContent = fill(text.launchEngine, {
          engine: data.deployment.runtimeNames[need.launch.engine], version: need.launch.version });
      }
    }

    // Why the GPUs left out are (engines/support.py): a sentence per format and reason, naming them, after the note.
    function refusedText(refused) {
      var groups = {};
      refused.forEach(function (r) { (groups[r.kind + r.why] = groups[r.kind + r.why] || { r: r, names: [] }).names.push(r.name); });
      return Object.keys(groups).map(function (key) {
        var r = groups[key].r, label = r.kind === "weights" ? data.weightFormats[r.format].label : byName(data.kvFormats, r.format).label;
        return fill(text.refusal[r.why], { engine: data.deployment.runtimeNames[r.engine], needs: r.needs,
          gpus: groups[key].names.join(", "), format: fill(text.refusal[r.kind], { label: label }) });
      });
    }

    function segment(index, value, whole) {
      var span = document.createElement("span");
      span.className = "part-" + index;
      span.style.width = (100 * value / whole).toFixed(2) + "%";  // as part_width in render.py
      return span;
    }

    // Fine-tuning: the run's parts per GPU (training.js) and the configurations of that many GPUs that hold it.
    function renderTraining(s, total, summary) {
      var run = window.gpumemTraining.train(data, s, s.training);
      renderTotal(s, run.perGpu, total, summary);
      renderParts(run.parts, run.perGpu / 1e9, { overhead: "cuda" });
      renderList("train", run.fits, function (c) { return [gb(c.card / 1e9)]; });
      renderLegend(text.trainRules);
      find("#calc-counts").textContent = fill(text.trainCounts, { count: number.format(s.gpus) });
      find("#calc-note").textContent = text.trainNote;
      var launch = find("#calc-launch");
      if (launch) launch.hidden = true;
    }

    // The parts list and bar: [part, data-result, bytes] per GPU, out of `whole` GB; `relabel`: labels not the part's.
    function renderParts(parts, whole, relabel) {
      var list = find("#calc-parts"), bar = find("#calc-bar"), labels = [];
      list.textContent = "";
      bar.textContent = "";
      parts.forEach(function (part) {
        var value = part[2] / 1e9, label = text.serveParts[(relabel || {})[part[0]] || part[0]], index = PARTS.indexOf(part[0]);
        var item = element("li", label + " ", { "class": "part-" + index });
        item.appendChild(result("span", part[1], value));
        list.appendChild(item);
        labels.push(label + " " + gb(value));
        bar.appendChild(segment(index, value, whole));
      });
      bar.setAttribute("aria-label", labels.join(text.semicolon + " "));
    }

    // The marketplace's page renting c.count × c.gpu (Marketplace.rent in records.py).
    function rentLink(c, claim) {
      var template = root.getAttribute("data-rent-url");  // content/site.yaml's marketplace.rent_url
      var address = template.replace("{gpu}", encodeURIComponent(c.gpu)).replace("{count}", String(c.count));
      var attributes = claim ? { "class": "rent", "data-holds": claim, href: address } : { "class": "rent", href: address };
      return element("a", text.rent, attributes);  // in the order rows.rent_link writes them
    }

    // Serving's rules at the chosen context: comfortable holds a few more requests, tight does not.
    function rulesFor(values) {
      return { tight: fill(text.tightRule, values), comfortable: fill(text.comfortableRule, values) };
    }

    // A configuration's speed and cost per million tokens (serving), in the columns after its price.
    function speedCells(c) {
      var v = c.speed;
      return v ? [number.format(v.aggregate) + (v.unmeasured ? "*" : ""), perMillion.format(v.outputCost), number.format(v.decode), rate.format(v.ttft),
        perMillion.format(v.inputCost)] : [];
    }

    // What a catalog model's serving rows claim their configurations hold (verdicts.serving_claim); none for a custom model.
    function claimOf(s) {
      return s.model === "custom" ? "" : ["serve", s.model, s.weights, s.kv, s.context, s.batch].join(":");
    }

    // The table's headings for `columns` (text.columns: serve, plain or train), written again only when they change,
    // so a heading's button keeps the focus; serving's price, speed and cost headings sort (the form's sort field,
    // the one order the link, the rows and speed.js's rows() follow), each in Python's one direction.
    var heads = "", DIRECTIONS = { price: "ascending", speed: "descending", cost: "ascending" };
    function labels(columns) {
      var all = text.columns, rent = all[all.length - 1];
      return columns === "serve" ? all : columns === "plain" ? [all[0], all[1], rent] : [all[0], all[1], text.memoryColumn, rent];
    }
    function renderHeads(columns, sort) {
      var row = find("thead tr"), key = function (i) { return columns === "serve" && data.sorts[i - 1]; };
      if (heads !== columns) {
        heads = columns;
        row.textContent = "";
        labels(columns).forEach(function (label, i) {
          var cell = row.appendChild(element("th", key(i) ? "" : label, i === 1 || key(i) ? { "class": "key" } : {}));
          if (key(i)) cell.appendChild(element("button", label, { type: "button", "data-sort": key(i) }));
        });
      }
      Array.prototype.forEach.call(row.cells, function (cell, i) {
        if (key(i) === sort) cell.setAttribute("aria-sort", DIRECTIONS[sort]);
        else cell.removeAttribute("aria-sort");
      });
    }

    // A row per configuration found: its GPUs and tag, its price per hour, `cells(c)` (speed and cost, or memory per
    // card) and its rent link (with the workload it holds, `claim`), or the row saying none; the brief above the
    // result names the first one.
    function renderList(columns, found, cells, claim, sort) {
      var list = find("#calc-options"), rows = document.createDocumentFragment(), first = found[0];
      renderHeads(columns, sort);
      if (!found.length) rows.appendChild(element("tr", "")).appendChild(element("td", text.none, { colspan: String(labels(columns).length) }));
      found.forEach(function (c) {
        var tag = c.tight ? "tight" : "comfortable", row = element("tr", ""), head = row.appendChild(element("th", number.format(c.count) + " × " + c.name + " "));
        head.appendChild(element("span", text[tag], { "class": tag }));
        [money.format(c.price)].concat(cells(c)).forEach(function (value) { row.appendChild(element("td", value)); });
        row.appendChild(element("td", "")).appendChild(rentLink(c, claim));
        rows.appendChild(row);
      });
      list.textContent = "";
      list.appendChild(rows);  // one change to the page, not one per row
      var values = first && { count: number.format(first.count), gpu: first.name, price: money.format(first.price) };
      find("#calc-best").textContent = !first ? text.none
        : first.speed ? fill(text.bestLine, Object.assign(values, { speed: number.format(first.speed.aggregate) })) : fill(text.fitOption, values);
      shorten();
    }

    // Under the table: what comfortable and tight mean here.
    function renderLegend(rules) {
      var legend = find("#calc-legend");
      legend.textContent = "";
      ["comfortable", "tight"].forEach(function (tag, i) {
        legend.appendChild(element("span", text[tag], { "class": tag }));
        legend.appendChild(document.createTextNode(" " + rules[tag] + (i ? "" : text.semicolon + " ")));
      });
    }

    // The cheapest configurations only, and a button that shows every one.
    function shorten() {
      var items = find("#calc-options").rows, more = find("#calc-more");
      var shown = data.shownConfigurations;
      Array.prototype.forEach.call(items, function (item, index) { item.hidden = index >= shown; });
      more.hidden = items.length <= shown;
      more.textContent = fill(text.more, { count: number.format(items.length) });
    }

    // A script the page names in an attribute (data-config: config.js, the counting of a config.json, when a reader
    // first pastes; data-training: training.js, when a fine-tuning mode is first chosen), loaded once: a promise per
    // script, asked again after a failed load.
    var scripts = {};
    function loadScript(attribute) {
      scripts[attribute] = scripts[attribute] || new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = root.getAttribute(attribute);
        script.onload = resolve;
        script.onerror = function () { delete scripts[attribute]; script.remove(); reject(); };
        document.head.appendChild(script);
      });
      return scripts[attribute];
    }

    // config.js with the counting data it reads (data-config-data) and the messages only it shows (data-config-words,
    // in the page's language), loaded together once; asked again after a failed load.
    var counter = null, reading = null;
    function loadConfig() {
      if (reading) return reading;
      var files = [getJson(root.getAttribute("data-config-data") + ".json"), getJson(root.getAttribute("data-config-words"))];
      reading = Promise.all([loadScript("data-config")].concat(files)).then(function (got) {
        window.gpumemConfig.know(got[1]);
        Object.assign(text.errors, got[2].errors);
        text.shown = got[2].shown;
        counter = window.gpumemConfig;
      }, function (error) {
        reading = null;
        throw error;
      });
      return reading;
    }

    // A pasted config.json fills the fields (what they cannot say is kept aside); render shows its error.
    function paste() {
      var source = field("config").value.trim(), error = null;
      if (source) {
        var parsed = null;
        try { parsed = JSON.parse(source); } catch (e) { error = ["json", {}]; }
        if (!error && !counter) {
          pasteError = null;
          results.setAttribute("aria-busy", "true");
          var done = function () { results.removeAttribute("aria-busy"); render(); };
          return loadConfig().then(function () { paste(); done(); }, function () { pasteError = ["configFailed", {}]; done(); });
        }
        if (!error) {
          var counted = counter.countConfig(data, parsed);
          if (counted.error) error = counted.error;
          else {
            var a = counted.arch, fields = presetFields(Object.assign({}, a, { params: counted.params / 1e9 + counted.vision / 1e9 }));
            ARCH.forEach(function (f) { field(f).value = String(fields[f]); });
            field("model").value = "custom";
            archOf = null;
            field("weights").value = counted.release;
            var experts = a.experts && moeExtra(a.experts);
            pasted = { extra: { attention: a.attention, vision: counted.vision / 1e9, experts: experts, state: a.state } };
            if (a.blocksPerLayer === 1) pasted.extra.blocks = 1;
          }
        }
      }
      pasteError = error;
    }

    var pasted = null, pasteError = null, notices = [], archOf = field("model").value !== "custom" ? field("model").value : null;
    function changed(event) {
      var name = event.target.name;
      settle(name);
      if (name !== "params" && ARCH.indexOf(name) >= 0) archOf = null;
      if (name === "config" || field("model").value === "custom") arch.open = true;
      if (name === "config") {
        if (blocked && blocked.id === "custom") unblock();  // a paste in place of the link's extra=
        paste();
      } else if (name === "model") {
        pasted = null;
        var id = field("model").value;
        if (id !== "custom" && !presetOf(data, id)) return load(id, function () { applyPreset(id); });
        applyPreset(id);
      } else if (ARCH.indexOf(name) >= 0) {
        field("model").value = "custom";
      } else if (name === "mode" && MODES.indexOf(field("mode").value) > 0) {
        field("precision").value = precisionOf(data, field("mode").value);
        if (tuning === text.trainingFailed) tuning = null;  // chosen again: asked again
      }
      render();
    }
    form.addEventListener("input", changed);
    // A sorting heading sets the form's sort field (the link's sort=) and shows the rows in its order.
    find("thead").addEventListener("click", function (event) {
      var button = event.target.closest("button");
      if (!button) return;
      field("sort").value = button.getAttribute("data-sort");
      settle("sort");
      render();
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    find("#calc-copy").addEventListener("click", function () {
      var link = find("#calc-link"), status = find("#calc-copied");
      link.select();
      var done = function () { status.textContent = text.copied; };
      if (navigator.clipboard) navigator.clipboard.writeText(link.value).then(done, function () { document.execCommand("copy"); done(); });
      else { document.execCommand("copy"); done(); }
    });
    find("#calc-more").addEventListener("click", function () {
      var items = find("#calc-options").rows;
      Array.prototype.forEach.call(items, function (item) { item.hidden = false; });
      this.hidden = true;
      if (items[data.shownConfigurations]) items[data.shownConfigurations].querySelector("a").focus();
    });
    // The page's own rows, the build's: their headings get their buttons, the rows their "Show all".
    renderHeads(field("mode").value !== "serve" ? "train" : data.speed ? "serve" : "plain", field("sort").value);
    shorten();
    var linked = new URLSearchParams(location.search).get("model");
    if (linked && linked !== "custom" && !presetOf(data, linked) && PRESET_ID.test(linked)) {
      var named = field("model").appendChild(new Option(nameOf(linked), linked));  // the link's choice while it loads
      field("model").value = linked;
      load(linked, function () {
        named.remove();
        openLink();
      });
    } else if (location.search) {
      openLink();
      render();
    }
  }

  window.gpumemCalculator = { serve: serve, validate: validate, readLink: readLink, toQuery: toQuery,
    estimatedFields: estimatedFields,
    errorText: errorText,
    isDict: isDict, has: has, get: get, full: FULL,
    weightsBytes: weightsBytes, gguf: gguf, batchDefaults: batchDefaults, expertParams: expertParams, embeddingParams: embeddingParams, gpuOf: gpuOf, offered: offered,
    windowed: windowed, attentionLayers: attentionLayers,
    checkNumber: checkNumber, trainingChoices: trainingChoices, switches: SWITCHES, kvCache: kvCache, byName: byName, remember: remember,
    loadPreset: loadPreset };
  var root = document.getElementById("calculator");
  if (root) start(root);
})();
