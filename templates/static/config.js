// A pasted config.json counted as catalog/hf_config.py counts it, operation for operation, its fields read as
// config_fields.py reads them, and a link's extra= (what a pasted config.json says beyond the fields) checked.
// calculator.js loads this script when a reader first pastes one or a link carries extra= (most never do, and the page
// keeps its weight); it reads calculator.js's helpers.
(function () {
  "use strict";

  var calc = window.gpumemCalculator, isDict = calc.isDict, has = calc.has, get = calc.get, FULL = calc.full;

  // What this script reads beyond the page's data.counting: assets/config-data.<digest>.json (calculator_data's
  // counting_file), which calculator.js fetches with this script and hands to know().
  var known = {};
  function know(counting) { known = counting; }
  function counting(data) { return Object.assign({}, data.counting, known); }

  function truthy(value) { return Array.isArray(value) ? value.length > 0 : isDict(value) ? Object.keys(value).length > 0 : !!value; }

  // config_fields.shown: JSON, long text cut, big numbers by size ({shown: key} is worded by the page's messages).
  function shown(k, value) {
    if (value === undefined || value === null) return { shown: "nothing" };
    if (typeof value === "boolean") return String(value);
    if (typeof value === "number") {
      var big = !isFinite(value) || Math.abs(value) >= k.shownBelow;
      return big ? { shown: "bigNumber", values: { digits: k.shownDigits } } : JSON.stringify(value);
    }
    if (typeof value === "string") {
      if (value.length <= k.shownCharacters) return JSON.stringify(value);
      return { shown: "longText", values: { start: JSON.stringify(value.slice(0, k.shownCharacters)), count: value.length } };
    }
    if (Array.isArray(value)) return { shown: "list", values: { count: value.length } };
    return { shown: "object" };
  }

  // config_fields.count_of: a JSON integer, `least` (1 unless given) or more, within its field's bound in data.limits
  // (the bound named in `limits`, a config.json's fieldLimits unless given).
  function fields(data, config, prefix, limits) {
    var k = counting(data);
    function count(name, fallback, least) {
      var value = get(config, name, fallback === undefined ? null : fallback), field = (prefix || "") + name;
      least = least === undefined ? 1 : least;
      // Infinity: a literal too large for a double (1e400), beyond every bound as config_fields.whole_number says.
      if (typeof value !== "number" || !(Number.isInteger(value) || value === Infinity) || value < least) {
        throw [least ? "integer" : "zeroOrMore", { field: field, value: shown(k, value) }];
      }
      var limit = data.limits[(limits || k.fieldLimits)[name]];
      if (value > limit) throw ["configMax", { field: field, limit: limit, value: shown(k, value) }];
      return value;
    }
    return {
      config: config,
      count: count,
      optional: function (name) { return get(config, name, null) === null ? 0 : count(name, undefined, 0); },
      get: function (name) { return get(config, name, null); }
    };
  }

  function countConfig(data, config) {
    try {
      return countChecked(data, config);
    } catch (error) {
      if (Array.isArray(error)) return { error: error };  // [message key, values]
      throw error;
    }
  }

  function countChecked(data, config) {
    var k = counting(data);
    if (!isDict(config)) throw ["object", {}];
    var kind = get(config, "model_type", null);
    if (k.architectures.indexOf(kind) < 0) {
      throw ["modelType", { value: shown(k, kind), list: k.architectures.join(", ") }];
    }
    if (isDict(config.text_config)) {
      var merged = {};
      Object.keys(config.text_config).forEach(function (key) { merged[key] = config.text_config[key]; });
      ["model_type", "quantization_config", "vision_config"].forEach(function (key) { merged[key] = get(config, key, null); });
      config = merged;
    }
    var f = fields(data, config);
    var hidden = f.count("hidden_size"), layers = f.count("num_hidden_layers"), vocab = f.count("vocab_size");
    var heads = f.count("num_attention_heads");
    var kvHeads = f.count("num_key_value_heads", heads);
    if (heads % kvHeads) throw ["kvDivide", { kv_heads: kvHeads, heads: heads }];
    var tied = get(config, "tie_word_embeddings", k.fourNormKinds.indexOf(kind) >= 0);
    if (typeof tied !== "boolean") throw ["configBoolean", { field: "tie_word_embeddings", value: shown(k, tied) }];
    var attentionParams, attention, headDim;
    if (kind.indexOf("deepseek") === 0) {
      var mla = countMla(f, hidden, heads);
      attentionParams = mla[0]; attention = mla[1]; headDim = mla[2];
    } else {
      headDim = f.count("head_dim", Math.floor(hidden / heads));
      attentionParams = hidden * heads * headDim * 2 + hidden * kvHeads * headDim * 2;
      if (k.qkvBias.indexOf(kind) >= 0) attentionParams += heads * headDim + 2 * kvHeads * headDim;
      if (kind === "gpt_oss") attentionParams += heads * headDim + 2 * kvHeads * headDim + hidden + heads;
      if (k.qkNorm.indexOf(kind) >= 0) attentionParams += 2 * headDim;
      attention = countWindow(k, f, kind, layers);
    }
    var norms = (k.fourNormKinds.indexOf(kind) >= 0 ? k.fourNorms : 2) * hidden;
    var mlp = countMlp(k, f, kind, hidden, layers), mlpWidth = mlp.pop();
    var embeddings = vocab * hidden * (tied ? 1 : 2);
    var params = embeddings + layers * (attentionParams + norms) + mlp[0] + hidden;
    var active = mlp[2] ? embeddings + layers * (attentionParams + norms) + mlp[1] + hidden : null;
    var arch = { layers: layers, heads: heads, kvHeads: kvHeads, headDim: headDim, attention: attention, hidden: hidden,
      vocab: vocab, tied: tied, intermediate: mlpWidth, experts: mlp[2] };
    var context = f.count("max_position_embeddings", k.defaultContext);
    var vision = countVision(data, get(config, "vision_config", null), hidden);
    if (params + vision > data.limits.max_params_b * 1e9) {
      throw ["paramsMax", { params: (params + vision) / 1e9, limit: data.limits.max_params_b }];
    }
    return { params: params, active: active, arch: arch, context: context, release: countRelease(k, config), vision: vision };
  }

  function countVision(data, vision, textHidden) {
    if (!isDict(vision)) return 0;
    var k = counting(data), f = fields(data, vision, "vision_config.");
    var width = f.count("hidden_size"), mlp = f.count("intermediate_size"), depth = f.count("num_hidden_layers");
    var patch = f.count("patch_size"), image = f.count("image_size");
    if (patch > image) throw ["patchSize", { patch: patch, image: image }];
    var side = Math.floor(image / patch);
    var patches = k.channels * patch * patch * width + width + side * side * width;
    var layer = k.attentionMatrices * (width * width + width) + 2 * width * mlp + mlp + width + k.attentionMatrices * width;
    var projector = width * textHidden + width;
    return patches + depth * layer + 2 * width + projector;
  }

  function countMla(f, hidden, heads) {
    var kvRank = f.count("kv_lora_rank");
    var rope = f.count("qk_rope_head_dim"), nope = f.count("qk_nope_head_dim"), value = f.count("v_head_dim");
    var queries;
    if (f.get("q_lora_rank") === null) {
      queries = hidden * heads * (nope + rope);
    } else {
      var qRank = f.count("q_lora_rank");
      queries = hidden * qRank + qRank + qRank * heads * (nope + rope);
    }
    var params = queries + hidden * (kvRank + rope) + kvRank + kvRank * heads * (nope + value) + heads * value * hidden;
    return [params, { kind: "mla", window: 0, slidingLayers: 0, latent: kvRank + rope, rank: kvRank }, nope + rope];
  }

  // config_fields.layer_types: one attention type per layer, when the config lists them.
  function layerTypes(k, f, layers) {
    var types = f.get("layer_types");
    if (types === null) return null;
    if (!Array.isArray(types) || types.some(function (item) { return k.layerTypes.indexOf(item) < 0; })) {
      throw ["layerTypes", { value: shown(k, types) }];
    }
    if (types.length !== layers) throw ["layerCount", { count: types.length, layers: layers }];
    return types;
  }

  function countWindow(k, f, kind, layers) {
    var full = FULL;
    var window = f.get("sliding_window"), types = layerTypes(k, f, layers), sliding;
    if (types !== null && truthy(window)) {
      sliding = types.filter(function (item) { return item === "sliding_attention"; }).length;
    } else if ((kind === "gemma2" || kind === "gpt_oss") && truthy(window)) {
      sliding = Math.floor(layers / 2) + (kind === "gpt_oss" ? layers % 2 : 0);
    } else if (kind === "gemma3" && truthy(window)) {
      var pattern = f.count("sliding_window_pattern", k.gemma3Pattern);
      sliding = layers - Math.floor(layers / pattern);
    } else {
      return full;
    }
    return sliding ? { kind: "sliding", window: f.count("sliding_window"), slidingLayers: sliding, latent: 0 } : full;
  }

  // Experts each token uses: at most the experts there are.
  function activeExperts(f, count, fallback) {
    var active = f.count("num_experts_per_tok", fallback);
    if (active > count) throw ["expertsActive", { active: active, count: count }];
    return active;
  }

  // [all layers' MLP parameters, those one token uses, the experts block, the dense width]
  function countMlp(k, f, kind, hidden, layers) {
    var m = k.gatedMatrices, dense;
    if (kind === "mixtral" || kind === "qwen3_moe" || kind === "gpt_oss") {
      var count = f.count(kind === "qwen3_moe" ? "num_experts" : "num_local_experts");
      var active = activeExperts(f, count, kind === "mixtral" ? k.mixtralActive : undefined);
      var width = f.count(kind === "qwen3_moe" ? "moe_intermediate_size" : "intermediate_size");
      var expert = m * hidden * width + (kind === "gpt_oss" ? 2 * width + hidden : 0);
      var router = hidden * count + (kind === "gpt_oss" ? count : 0);
      dense = f.count("intermediate_size", width);
      return [layers * (count * expert + router), layers * (active * expert + router),
        { count: count, active: active, intermediate: width, shared: 0, denseLayers: 0 }, dense];
    }
    dense = f.count("intermediate_size");
    if (kind.indexOf("deepseek") !== 0) return [layers * m * hidden * dense, layers * m * hidden * dense, null, dense];
    var routed = f.count("n_routed_experts"), used = activeExperts(f, routed, undefined);
    var moeWidth = f.count("moe_intermediate_size"), shared = f.optional("n_shared_experts");
    var firstDense = f.optional("first_k_dense_replace");
    if (firstDense >= layers) throw ["denseLayers", { dense: firstDense, layers: layers }];
    var moeLayers = layers - firstDense, one = m * hidden * moeWidth;
    var gate = hidden * routed + (kind === "deepseek_v3" ? routed : 0);
    var total = firstDense * m * hidden * dense + moeLayers * ((routed + shared) * one + gate);
    var token = firstDense * m * hidden * dense + moeLayers * ((used + shared) * one + gate);
    return [total, token, { count: routed, active: used, intermediate: moeWidth, shared: shared, denseLayers: firstDense }, dense];
  }

  function countRelease(k, config) {
    var quantization = get(config, "quantization_config", null);
    if (isDict(quantization)) {
      var method = String(get(quantization, "quant_method", "")).toLowerCase();
      return has(k.releaseMethods, method) ? k.releaseMethods[method] : "bf16";
    }
    return get(config, "torch_dtype", null) === "float16" ? "fp16" : "bf16";
  }

  // Links keep what a pasted config.json says beyond the fields (extra=, as JSON): {extra}, or {error} naming the value
  // that cannot be honoured (bounded as a config.json's counts are); null without one.
  var EXTRA_LIMITS = { window: "max_context", slidingLayers: "max_layers", latent: "max_hidden", rank: "max_hidden",
    shared: "max_experts", denseLayers: "max_layers" };

  function extraOf(data, text) {
    if (text === null || text === undefined) return null;
    var e;
    try { e = JSON.parse(text); } catch (error) { return { error: ["json", {}] }; }
    try {
      return { extra: checkedExtra(data, e) };
    } catch (error) {
      if (Array.isArray(error)) return { error: error };
      throw error;
    }
  }

  function checkedExtra(data, e) {
    var k = counting(data);
    if (!isDict(e) || !isDict(e.attention) || !(e.experts === null || isDict(e.experts))) throw ["extraShape", { value: shown(k, e) }];
    var a = e.attention, x = e.experts, kinds = ["full", "sliding", "mla"];
    if (kinds.indexOf(a.kind) < 0) throw ["extraKind", { kinds: kinds.map(function (kind) { return JSON.stringify(kind); }), value: shown(k, a.kind) }];
    var f = fields(data, a, "attention.", EXTRA_LIMITS), count = function (name) { return f.count(name, null, 0); };
    var attention = { kind: a.kind, window: count("window"), slidingLayers: count("slidingLayers"), latent: count("latent") };
    if (a.kind === "mla") attention.rank = count("rank");
    var vision = get(e, "vision", null), most = data.limits.max_params_b;
    if (typeof vision !== "number" || !(vision >= 0)) throw ["numberZeroOrMore", { field: "vision", value: shown(k, vision) }];
    if (vision > most) throw ["configMax", { field: "vision", limit: most, value: shown(k, vision) }];
    var moe = x && fields(data, x, "experts.", EXTRA_LIMITS);
    var experts = moe && { shared: moe.count("shared", null, 0), denseLayers: moe.count("denseLayers", null, 0) };
    return { attention: attention, vision: vision, experts: experts };
  }

  window.gpumemConfig = { countConfig: countConfig, extraOf: extraOf, know: know };
})();
