// The training engine, generator/training.py operation for operation: a fine-tuning run's peak bytes per GPU
// by part, and the configurations whose cards hold it (compute_training.holding). Every constant comes from the
// build's JSON (data.training, data.deployment, data.weightFormats); and the checks of the fine-tuning fields.
// calculator.js loads it when a reader or a link picks a fine-tuning mode; what it shares with serving (weight bytes,
// the configurations on offer, a number field's check) is calculator.js's, on window.gpumemCalculator.
(function () {
  "use strict";

  var calc = window.gpumemCalculator, weightsBytes = calc.weightsBytes, embeddingParams = calc.embeddingParams;

  // training.targets_of: a preset's modules, the routed experts only where there are some.
  function targetsOf(data, preset, arch) {
    return data.training.targets[preset].filter(function (m) { return m !== "experts" || arch.experts; });
  }

  // training.matrices: [d_in, d_out, how many] of the named modules' linear layers over all layers.
  function matrices(data, arch, modules) {
    var attention = arch.heads * arch.headDim, kv = arch.kvHeads * arch.headDim, h = arch.hidden;
    var experts = arch.experts, moeLayers = experts ? arch.layers - experts.denseLayers : 0;
    var mlps = [[arch.intermediate, arch.layers - moeLayers]];
    if (experts && experts.shared) mlps.push([experts.intermediate, moeLayers * experts.shared]);
    var shapes = {
      q: [[h, attention, arch.layers]], k: [[h, kv, arch.layers]], v: [[h, kv, arch.layers]], o: [[attention, h, arch.layers]],
      gate: mlps.map(function (m) { return [h, m[0], m[1]]; }),
      up: mlps.map(function (m) { return [h, m[0], m[1]]; }),
      down: mlps.map(function (m) { return [m[0], h, m[1]]; }),
      experts: experts ? [[h, experts.intermediate, data.counting.gatedMatrices * moeLayers * experts.count]] : []
    };
    var found = [];
    modules.forEach(function (m) {
      shapes[m].forEach(function (shape) { if (shape[2] && shape[0] && shape[1]) found.push(shape); });
    });
    return found;
  }

  function loraParams(data, arch, rank, modules) {
    return matrices(data, arch, modules).reduce(function (sum, m) { return sum + rank * (m[0] + m[1]) * m[2]; }, 0);
  }

  // training._factored_elements: Adafactor's row and column statistics per matrix; vectors stay whole.
  function factoredElements(data, s, t) {
    var arch = s.arch, sum = function (list, f) { return list.reduce(function (total, m) { return total + f(m); }, 0); };
    if (t.method !== "full") {
      var targeted = matrices(data, arch, t.targets);
      var shapes = targeted.map(function (m) { return [m[0], t.rank, m[2]]; })
        .concat(targeted.map(function (m) { return [t.rank, m[1], m[2]]; }));
      return sum(shapes, function (m) { return (m[0] + m[1]) * m[2]; });
    }
    var linear = matrices(data, arch, data.training.targets.all);
    var inMatrices = sum(linear, function (m) { return m[0] * m[1] * m[2]; }) + embeddingParams(arch);
    var vectors = s.params * 1e9 - inMatrices;
    var tables = (arch.vocab + arch.hidden) * (arch.tied ? 1 : 2);
    return sum(linear, function (m) { return (m[0] + m[1]) * m[2]; }) + tables + Math.max(vectors, 0);
  }

  // The fine-tuning fields checked into the training engine's settings (gpumem estimate's flags), as calculator.js's
  // validate checks the others: errors into `errors`, the numbers into `values`.
  function settings(data, raw, errors, values) {
    var lora = raw.mode !== "full", on = calc.switches[0];
    ["seq", "micro_batch"].concat(lora ? ["lora_rank"] : []).forEach(function (field) {
      calc.checkNumber(data, raw, field, errors, values, false);
    });
    var choices = calc.trainingChoices(data, raw.mode);
    Object.keys(choices).forEach(function (field) { if (choices[field].indexOf(raw[field]) < 0) errors[field] = ["choice"]; });
    return { method: raw.mode, seq: values.seq, microBatch: values.micro_batch, checkpointing: raw.checkpointing,
      flash: raw.flash_attention === on, optimizer: raw.optimizer, precision: raw.precision, rank: lora ? values.lora_rank : 0,
      targetPreset: raw.lora_targets, zero: Number(raw.zero), offload: raw.offload === on,
      fp32Unquantized: raw.mode === "qlora" && raw.fp32_unquantized === on };
  }

  // The settings completed with the model's (its GPUs, the modules the targets name), then training.check, for the
  // settings a form can get wrong: [field, message key, values], or null.
  function check(data, s, t) {
    t.gpus = s.gpus;
    t.targets = t.method === "full" ? [] : targetsOf(data, t.targetPreset, s.arch);
    var precision = data.training.precisions[t.precision], optimizer = data.training.optimizers[t.optimizer];
    if (t.zero && t.gpus === 1) return ["zero", "zeroOneGpu", { stage: t.zero }];
    if (t.method === "full") return null;
    if (t.offload && optimizer[2]) return ["offload", "pagedOffload", { optimizer: t.optimizer }];
    if (t.method === "qlora" && precision[2]) return ["precision", "qloraMaster", {}];
    if (t.rank > s.arch.hidden) return ["lora_rank", "rankHidden", { rank: t.rank, hidden: s.arch.hidden }];
    return null;
  }

  // training.activations_bytes: every layer's activations, or each layer's input plus one layer; the logits.
  function activationsBytes(tr, arch, t, wide) {
    var tokens = t.seq * t.microBatch;
    var layer = tokens * arch.hidden * (tr.layerBytes + (wide - 1) * tr.normBytes);
    if (!t.flash) layer += arch.heads * t.seq * t.seq * t.microBatch * tr.scoreBytes;
    var kept = t.checkpointing === "full" ? arch.layers * tokens * arch.hidden * tr.checkpointBytes * wide + layer : arch.layers * layer;
    return kept + tokens * arch.vocab * tr.logitBytes;
  }

  // training.dequantized_bytes: QLoRA's 16-bit copies of 4-bit weights, dequantizedLayers layers' linear weights.
  function dequantizedBytes(data, arch, t) {
    var tr = data.training, formats = data.weightFormats, sixteen = formats.bf16.bits;
    if (formats[tr.base[t.method]].bits >= sixteen) return 0;
    var layer = matrices(data, arch, tr.targets.all).reduce(function (sum, m) { return sum + m[0] * m[1] * m[2]; }, 0) / arch.layers;
    return tr.dequantizedLayers * layer * sixteen / data.deployment.bitsPerByte;
  }

  // training.training: peak bytes per GPU of one run (s: the model, t: the run's settings, checked).
  function need(data, s, t) {
    var tr = data.training, formats = data.weightFormats, arch = s.arch, gpus = t.gpus;
    var precision = tr.precisions[t.precision], optimizer = tr.optimizers[t.optimizer];
    var widening = formats.fp32.bits / formats.bf16.bits;
    var base = weightsBytes(data, s, formats[tr.base[t.method]]), trainable, weights;
    if (t.method === "full") {
      trainable = s.params * 1e9;
      weights = trainable * precision[0];
    } else {
      trainable = loraParams(data, arch, t.rank, t.targets);
      weights = base + trainable * precision[0];
      if (t.fp32Unquantized) {
        weights += (embeddingParams(arch) + s.vision * 1e9) * formats.bf16.bits / data.deployment.bitsPerByte * (widening - 1);
      }
    }
    var stateBytes = optimizer[1] || precision[3];
    var elements = optimizer[3] ? factoredElements(data, s, t) : trainable;
    var optimizerBytes = trainable * precision[2] + elements * optimizer[0] * stateBytes;
    var gradients = trainable * precision[1];
    if (t.zero >= 1) optimizerBytes /= gpus;
    if (t.zero >= 2) gradients /= gpus;
    if (t.zero >= 3) {
      var gathered = Math.min(tr.gatheredLayers, arch.layers) * base / arch.layers;
      weights = weights / gpus + gathered * (1 - 1 / gpus);
    }
    var run = { gpus: gpus, trainable: trainable, weights: weights, gradients: gradients,
      optimizer: t.offload ? 0 : optimizerBytes,
      activations: activationsBytes(tr, arch, t, t.fp32Unquantized ? widening : 1),
      dequantized: dequantizedBytes(data, arch, t),
      runtime: data.deployment.nonTorchBytes + (gpus > 1 ? data.deployment.parallelBytes : 0) };
    run.perGpu = run.weights + run.gradients + run.optimizer + run.activations + run.dequantized + run.runtime;
    // Training.allocated_bytes_per_gpu, reserve_bytes_per_gpu and footprint_bytes_per_gpu (the training fit rule)
    var allocated = run.perGpu - run.runtime - (optimizer[2] ? run.optimizer : 0);
    run.reserve = allocated * tr.allocatorReserve;
    run.footprint = run.perGpu + run.reserve;
    return run;
  }

  // The configurations of t.gpus GPUs, then compute_training.holding: those whose cards hold the footprint,
  // cheapest first, each tight (compute_training.is_tight) when it leaves less than comfortableFree of the card.
  function fits(data, footprint, gpus) {
    var free = data.training.comfortableFree;
    var found = calc.offered(data, [gpus]).filter(function (c) { return footprint <= c.card; });
    found.forEach(function (c) { c.tight = c.card - footprint < free * c.card; });
    return found.sort(function (x, y) { return x.price - y.price || (x.gpu < y.gpu ? -1 : x.gpu > y.gpu ? 1 : 0); });
  }

  // The run for a calculator state whose settings check() passed: the parts per GPU, as the page lists them
  // ([part, data-result, bytes]; QLoRA's dequantized copies only where there are some), and the fits.
  function train(data, s, t) {
    var run = need(data, s, t);
    run.parts = [["weights", "weights-per-gpu-gb", run.weights], ["gradients", "gradients-gb", run.gradients],
      ["optimizer", "optimizer-gb", run.optimizer], ["activations", "activations-gb", run.activations],
      ["dequantized", "dequantized-gb", run.dequantized], ["overhead", "runtime-gb", run.runtime]]
      .filter(function (p) { return p[2] || p[0] !== "dequantized"; });
    run.fits = fits(data, run.footprint, t.gpus);
    return run;
  }

  window.gpumemTraining = { settings: settings, check: check, train: train };
})();
