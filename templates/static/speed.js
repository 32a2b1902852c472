// Speed and cost per token: generator/speed.py, operation for operation, on a calculator state (its model) and a
// GPU of the build's JSON; every constant comes from that JSON. The memory parts are calculator.js's (deployment.py).
(function () {
  "use strict";

  function memory() { return window.gpumemCalculator; }

  // The tensor rate a format's matrix products run at: the first of its precisions the GPU has (each calculator format
  // runs on its own engine, so compute_precision.by_engine, for measured runs of another, never applies here).
  function computePrecision(data, weights, gpu) {
    var rates = data.speed.computePrecision[weights] || [];
    for (var i = 0; i < rates.length; i++) if (Object.prototype.hasOwnProperty.call(gpu.tflops, rates[i])) return rates[i];
    return "bf16";
  }

  // Efficiency.bandwidth: HBM stacks or GDDR chips.
  function bandwidthShare(efficiency, gpu) {
    return /^HBM/i.test(gpu.memoryType) ? efficiency.bandwidthHbm : efficiency.bandwidthGddr;
  }

  // One direction of the GPU-to-GPU path: the link, or PCIe when a bridge joins fewer cards than used.
  function linkBytesPerS(data, gpu, gpus) {
    var link = gpu.link;
    if (link.kind === "nvlink-bridge" && gpus > link.gpus) return data.speed.pcieGbS[gpu.pcieGen] * 1e9 / 2;
    return link.gbS * 1e9 / 2;
  }

  function touchedExpertFraction(arch, tokens) {
    var experts = arch.experts;
    if (!experts) return 1;
    return 1 - Math.pow(1 - experts.active / experts.count, tokens);
  }

  function weightBytesRead(data, s, fmt, tokens) {
    var total = memory().weightsBytes(data, s, fmt);
    if (!s.arch.experts) return total;
    var experts = fmt.fileType ? memory().gguf(data, s, fmt)[1]
      : memory().expertParams(data, s.arch, fmt.padTo) * fmt.bits / data.deployment.bitsPerByte;
    return total - experts * (1 - touchedExpertFraction(s.arch, tokens));
  }

  function matmulFlopsPerToken(s) {
    var active = (s.active || s.params) - s.vision;
    var lookup = s.arch.tied ? 0 : s.arch.vocab * s.arch.hidden;
    return 2 * (active * 1e9 - lookup);
  }

  // speed.attention_flops_per_token: full layers attend over the context, windowed ones over at most their window,
  // a hybrid's state layers and MLP-only blocks over nothing.
  function attentionFlopsPerToken(arch, context) {
    var a = arch.attention, width = a.kind === "mla" ? a.rank : arch.headDim;
    var local = memory().windowed(a) ? a.slidingLayers : 0, windowed = local ? local * Math.min(context, a.window) : 0;
    return 4 * arch.heads * width * ((memory().attentionLayers(arch) - local) * context + windowed);
  }

  // speed.py's link_path: "link" (the engine's own all-reduce) for a GPU link and for two PCIe cards with peer
  // access, "pcie" (NCCL's) for other PCIe cards and a bridge joining fewer cards than used.
  function linkPath(gpu, gpus) {
    var link = gpu.link;
    return link.kind === "pcie" && !(gpus === 2 && link.p2p) || link.kind === "nvlink-bridge" && gpus > link.gpus ? "pcie" : "link";
  }

  // speed.blocks: residual blocks, two a layer, one where a layer is a single mixer (Nemotron-H).
  function blocks(arch) {
    return arch.layers * (arch.blocksPerLayer || 2);
  }

  // speed.allreduces: one a residual block, and one more an attention layer whose q and k norms span every head.
  function allreduces(arch) {
    return blocks(arch) + (arch.attention.qkNormLayer ? memory().attentionLayers(arch) : 0);
  }

  function allreduceS(data, s, gpu, gpus, tokens, runtime) {
    if (gpus === 1) return 0;
    var size = tokens * s.arch.hidden * data.speed.activationBytes;
    var ring = 2 * (gpus - 1) / gpus * size / linkBytesPerS(data, gpu, gpus);
    return blocks(s.arch) * ring + allreduces(s.arch) * data.speed.efficiency[runtime].allreduceS[linkPath(gpu, gpus)];
  }

  // Python's round() of a context (never negative): half to even.
  function roundHalfEven(value) {
    var floor = Math.floor(value);
    return value - floor === 0.5 ? floor + floor % 2 : Math.round(value);
  }

  // speed.quantized_kernels: llama.cpp's MMQ on GGUF types, vLLM's mixed-precision kernels on AWQ and GPTQ.
  function quantizedKernels(data, s, fmt) {
    return fmt.runtime === "llama.cpp" || data.speed.mixedPrecision.indexOf(s.weights) >= 0;
  }

  // speed.fixed_s: the time per layer (Efficiency.layer_overhead, with the quantized kernels' own when they run, and a
  // mixture of experts' own), counted in two-block layers.
  function layerOverhead(data, s, fmt, efficiency) {
    var perLayer = efficiency.layerOverheadS + (quantizedKernels(data, s, fmt) ? efficiency.layerOverheadQuantizedS : 0)
      + (s.arch.experts && efficiency.layerOverheadMoeS || 0);
    return blocks(s.arch) / 2 * perLayer;
  }

  function decodeStep(data, s, fmt, kv, gpu, gpus, batch, context, runtime) {
    var efficiency = data.speed.efficiency[runtime];
    var split = runtime === "llama.cpp" ? 1 : gpus;
    var cache = memory().kvCache(data, s.arch, kv, roundHalfEven(context), batch, split, runtime);
    var read = weightBytesRead(data, s, fmt, batch) / split + cache;
    var flops = batch * (matmulFlopsPerToken(s) + attentionFlopsPerToken(s.arch, context)) / split;
    var rate = gpu.tflops[computePrecision(data, s.weights, gpu)] * 1e12;
    var link = runtime === "llama.cpp" ? 0 : allreduceS(data, s, gpu, gpus, batch, runtime);
    var step = { memory: read / (gpu.bandwidth * 1e12 * bandwidthShare(efficiency, gpu)), compute: flops / (rate * efficiency.compute),
      link: link, overhead: layerOverhead(data, s, fmt, efficiency) };
    step.seconds = Math.max(step.memory, step.compute) + step.link + step.overhead;
    return step;
  }

  // speed.prefill_chunk: llama.cpp's micro-batch, vLLM's max_num_batched_tokens for the card (0: one pass).
  function prefillChunk(data, runtime, gpu, gpuId) {
    if (runtime === "llama.cpp") return data.deployment.llamacppBatch;
    return runtime === "vllm" ? memory().batchDefaults(data, gpu.runtimeBytes, gpuId).tokens : 0;
  }

  // speed.prefill_step: the prompt's FLOPs, or one weight read per pass, plus the link and each pass's fixed costs.
  function prefillS(data, s, fmt, gpu, gpus, prompt, runtime, chunk) {
    if (prompt === 0) return 0;
    var efficiency = data.speed.efficiency[runtime];
    var split = runtime === "llama.cpp" ? 1 : gpus, passes = chunk ? Math.ceil(prompt / chunk) : 1;
    var flops = prompt * (matmulFlopsPerToken(s) + attentionFlopsPerToken(s.arch, prompt / 2)) / split;
    var rate = gpu.tflops[computePrecision(data, s.weights, gpu)] * 1e12;
    // Efficiency.prefill_share: MoE grouped GEMMs, else the engine's quantized kernels, else a dense GEMM
    var share = s.active ? efficiency.prefillMoe : quantizedKernels(data, s, fmt) ? efficiency.prefillQuantized : efficiency.prefill;
    var compute = flops / (rate * share);
    var read = passes * memory().weightsBytes(data, s, fmt) / split / (gpu.bandwidth * 1e12 * bandwidthShare(efficiency, gpu));
    var link = 0;
    if (runtime !== "llama.cpp" && gpus > 1) {
      link = allreduceS(data, s, gpu, gpus, prompt, runtime)
        + (passes - 1) * allreduces(s.arch) * efficiency.allreduceS[linkPath(gpu, gpus)];
    }
    return Math.max(compute, read) + link + passes * layerOverhead(data, s, fmt, efficiency);
  }

  function perMillion(data, price, tokensPerS) {
    if (price === null || price === undefined || !tokensPerS) return null;
    return price / (tokensPerS * data.speed.secondsPerHour) * data.speed.million;
  }

  // speed.speed: a state's model on `gpus` x the GPU gpuId serving s.batch requests of s.prompt + s.output tokens.
  function speed(data, s, gpuId, gpus, price) {
    var fmt = data.weightFormats[s.weights], kv = memory().byName(data.kvFormats, s.kv);
    var gpu = memory().gpuOf(data, gpuId);
    var runtime = fmt.runtime, context = s.prompt + s.output / 2;
    var step = decodeStep(data, s, fmt, kv, gpu, gpus, s.batch, context, runtime);
    var prefill = prefillS(data, s, fmt, gpu, gpus, s.prompt, runtime, prefillChunk(data, runtime, gpu, gpuId));
    var round = s.batch * prefill + s.output * step.seconds;
    var aggregate = round ? s.batch * s.output / round : 0;
    var prefillRate = prefill ? s.prompt / prefill : 0;
    var measured = data.speed.measured[runtime] || [];
    return { decode: 1 / step.seconds, aggregate: aggregate, ttft: prefill + step.seconds, prefillRate: prefillRate, step: step,
      outputCost: perMillion(data, price, aggregate), inputCost: perMillion(data, price, prefillRate),
      unmeasured: measured.indexOf(gpuId) < 0 };
  }

  // Serving.rows in compute_calculator.py: each fit with its speed, in the order s.sort names (ties keep the price order).
  function rows(data, s, fits) {
    var found = fits.map(function (fit) {
      var timed = fit.weights && fit.weights !== s.weights ? Object.assign({}, s, { weights: fit.weights }) : s;  // a stand-in's
      return { fit: fit, speed: speed(data, timed, fit.gpu, fit.count, fit.price) };
    });
    if (s.sort === "speed") found.sort(function (x, y) { return y.speed.aggregate - x.speed.aggregate; });
    if (s.sort === "cost") found.sort(function (x, y) { return x.speed.outputCost - y.speed.outputCost; });
    return found;
  }

  window.gpumemSpeed = { speed: speed, rows: rows };
})();
