// A pasted config.json counted as catalog/hf_config.py and hf_hybrid.py count it, operation for operation, its fields read as
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

  // Python's `item == number` for a list item: true and 1.0 equal 1, text never does.
  function equals(item, number) { return (typeof item === "number" || typeof item === "boolean") && +item === number; }

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
      data: data,
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
    var embeddings = vocab * hidden * (tied ? 1 : 2), params, active, attention, headDim, intermediate, experts, state = null;
    var hybrid = { qwen3_next: countQwen, qwen3_5: countQwen, qwen3_5_moe: countQwen, nemotron_h: countNemotron, llama4: countLlama4,
      kimi_linear: countKimi, minimax_m1: countMinimaxM1, gemma4: countGemma4 };
    if (has(hybrid, kind)) {
      var h = hybrid[kind](k, f, kind, hidden, layers, heads, kvHeads);
      attention = h.attention; state = h.state || null; experts = h.experts; headDim = h.headDim;
      params = embeddings + h.params + hidden;
      active = experts ? embeddings + h.active + hidden : null;
      intermediate = f.count("intermediate_size", experts ? experts.intermediate : undefined);
    } else {
      var attentionParams;
      if (k.mla.indexOf(kind) >= 0) {
        var mla = countMla(k, f, kind, hidden, heads);
        attentionParams = mla[0]; attention = mla[1]; headDim = mla[2];
      } else {
        headDim = f.count("head_dim", Math.floor(hidden / heads));
        attentionParams = hidden * heads * headDim * 2 + hidden * kvHeads * headDim * 2;
        var glm = kind === "glm4_moe";  // GLM-4.x: biases and q/k norms each behind its switch
        var bias = k.qkvBias.indexOf(kind) >= 0 || (glm && flag(k, config, "attention_bias", false));
        if (bias) attentionParams += heads * headDim + 2 * kvHeads * headDim;
        if (kind === "gpt_oss") attentionParams += heads * headDim + 2 * kvHeads * headDim + hidden + heads;
        if (k.qkNorm.indexOf(kind) >= 0 || (glm && flag(k, config, "use_qk_norm", false))) attentionParams += 2 * headDim;
        var spans = kind === "minimax_m2";  // q and k norms over every head, all-reduced under TP (speed.allreduces)
        if (spans) attentionParams += (heads + kvHeads) * headDim;
        attention = countWindow(k, f, kind, layers);
        if (k.fusedQkv.indexOf(kind) >= 0) attention = Object.assign({ fused: 1 }, attention);  // gguf.FUSED_QKV
        if (spans) attention = Object.assign({ qkNormLayer: 1 }, attention);
      }
      var norms = (k.fourNormKinds.indexOf(kind) >= 0 ? k.fourNorms : 2) * hidden;
      var mlp = countMlp(k, f, kind, hidden, layers);
      intermediate = mlp.pop(); experts = mlp[2];
      params = embeddings + layers * (attentionParams + norms) + mlp[0] + hidden;
      active = experts ? embeddings + layers * (attentionParams + norms) + mlp[1] + hidden : null;
    }
    var arch = { layers: layers, heads: heads, kvHeads: kvHeads, headDim: headDim, attention: attention, hidden: hidden,
      vocab: vocab, tied: tied, intermediate: intermediate, experts: experts, state: state };
    if (has(hybrid, kind) && h.blocksPerLayer) arch.blocksPerLayer = h.blocksPerLayer;  // Nemotron-H: one mixer a layer
    var context = f.count("max_position_embeddings", f.count("model_max_length", k.defaultContext));  // Kimi Linear: the second
    var tower = { qwen3_5: qwenVision, qwen3_5_moe: qwenVision, llama4: llama4Vision, gemma4: gemma4Vision };
    var vision = (has(tower, kind) ? tower[kind] : countVision)(data, get(config, "vision_config", null), hidden);
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

  // hf_config._mla: low-rank queries and a compressed key-value latent; DSA's lightning indexer caches a key beside it.
  function countMla(k, f, kind, hidden, heads) {
    var kvRank = f.count("kv_lora_rank");
    var rope = f.count("qk_rope_head_dim"), nope = f.count("qk_nope_head_dim"), value = f.count("v_head_dim");
    var queries, qRank = 0;
    if (f.get("q_lora_rank") === null) {
      queries = hidden * heads * (nope + rope);
    } else {
      qRank = f.count("q_lora_rank");
      queries = hidden * qRank + qRank + qRank * heads * (nope + rope);
    }
    var params = queries + hidden * (kvRank + rope) + kvRank + kvRank * heads * (nope + value) + heads * value * hidden;
    var attention = { kind: "mla", window: 0, slidingLayers: 0, latent: kvRank + rope, rank: kvRank, vDim: value };
    if (qRank) attention.qLora = qRank;
    if (k.sparseMla.indexOf(kind) >= 0) {
      var indexHeads = f.count("index_n_heads"), indexDim = f.count("index_head_dim");
      if (f.get("q_lora_rank") === null) throw ["indexerQueries", {}];
      params += f.count("q_lora_rank") * indexHeads * indexDim + hidden * indexDim + 2 * indexDim + hidden * indexHeads;
      attention.indexBytes = indexDim + Math.floor(indexDim / k.indexQuantBlock) * k.indexScaleBytes;
    }
    return [params, attention, nope + rope];
  }

  // config_fields.layer_types: one attention type per layer, when the config lists them (`kinds`: those a model
  // type has, refused in the words of message `key`; the sliding-window models' unless given).
  function layerTypes(k, f, layers, kinds, key) {
    var types = f.get("layer_types");
    if (types === null) return null;
    if (!Array.isArray(types) || types.some(function (item) { return (kinds || k.layerTypes).indexOf(item) < 0; })) {
      throw [key || "layerTypes", { value: shown(k, types) }];
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
    if (["mixtral", "qwen3_moe", "gpt_oss", "minimax_m2"].indexOf(kind) >= 0) {
      var count = f.count(kind === "qwen3_moe" ? "num_experts" : "num_local_experts");
      var active = activeExperts(f, count, kind === "mixtral" ? k.mixtralActive : undefined);
      var width = f.count(kind === "qwen3_moe" ? "moe_intermediate_size" : "intermediate_size");
      var expert = m * hidden * width + (kind === "gpt_oss" ? 2 * width + hidden : 0);
      var router = hidden * count + (kind === "gpt_oss" || kind === "minimax_m2" ? count : 0);  // a bias (MiniMax: score correction)
      dense = f.count("intermediate_size", width);
      return [layers * (count * expert + router), layers * (active * expert + router),
        { count: count, active: active, intermediate: width, shared: 0, denseLayers: 0 }, dense];
    }
    dense = f.count("intermediate_size");
    if (k.deepseekMoe.indexOf(kind) < 0) return [layers * m * hidden * dense, layers * m * hidden * dense, null, dense];
    var routed = f.count("n_routed_experts"), used = activeExperts(f, routed, undefined);
    var moeWidth = f.count("moe_intermediate_size"), shared = f.optional("n_shared_experts");
    var firstDense = f.optional("first_k_dense_replace");
    if (firstDense >= layers) throw ["denseLayers", { dense: firstDense, layers: layers }];
    var moeLayers = layers - firstDense, one = m * hidden * moeWidth;
    var gate = hidden * routed + (kind !== "deepseek_v2" ? routed : 0);  // V3 and its successors add a score-correction bias
    var total = firstDense * m * hidden * dense + moeLayers * ((routed + shared) * one + gate);
    var token = firstDense * m * hidden * dense + moeLayers * ((used + shared) * one + gate);
    return [total, token, { count: routed, active: used, intermediate: moeWidth, shared: shared, denseLayers: firstDense }, dense];
  }

  // hf_hybrid.py: hybrids of state layers (Gated DeltaNet, Mamba-2) and attention, and Llama 4's chunked local
  // attention, each an object of its parameters (all, and those one token uses), attention, state, experts and head size.
  function layered(headDim) {
    var counted = { params: 0, active: 0, headDim: headDim, attention: FULL, state: null, experts: null };
    counted.add = function (params, active) { counted.params += params; counted.active += active === undefined ? params : active; };
    return counted;
  }

  // hf_hybrid.gated_deltanet: one layer's parameters, and its convolution and recurrent state per sequence.
  function gatedDeltanet(k, f, hidden) {
    var keyHeads = f.count("linear_num_key_heads"), valueHeads = f.count("linear_num_value_heads");
    var keyDim = f.count("linear_key_head_dim"), valueDim = f.count("linear_value_head_dim");
    var kernel = f.count("linear_conv_kernel_dim", k.convKernel);
    if (valueHeads % keyHeads) throw ["linearDivide", { key_heads: keyHeads, value_heads: valueHeads }];
    var keys = keyHeads * keyDim, values = valueHeads * valueDim, conv = 2 * keys + values;
    var projections = hidden * (2 * keys + 2 * values) + hidden * 2 * valueHeads;
    var params = projections + conv * kernel + 2 * valueHeads + valueDim + values * hidden;
    return [params, (kernel - 1) * conv, valueHeads * valueDim * keyDim];
  }

  // hf_hybrid.qwen_layer_kinds: the config's layer_types, else one full-attention layer in every full_attention_interval.
  function qwenLayerKinds(k, f, layers) {
    var kinds = layerTypes(k, f, layers, ["linear_attention", "full_attention"], "linearLayerTypes");
    if (kinds !== null) return kinds;
    var interval = f.count("full_attention_interval", k.fullAttentionInterval);
    kinds = [];
    for (var index = 0; index < layers; index++) kinds.push((index + 1) % interval === 0 ? "full_attention" : "linear_attention");
    return kinds;
  }

  function countQwen(k, f, kind, hidden, layers, heads, kvHeads) {
    var m = k.gatedMatrices, counted = layered(f.count("head_dim", Math.floor(hidden / heads))), headDim = counted.headDim;
    var gate = kind === "qwen3_next" || truthy(get(f.config, "attn_output_gate", true)) ? 2 : 1;
    var attention = hidden * heads * headDim * gate + 2 * hidden * kvHeads * headDim + heads * headDim * hidden + 2 * headDim;
    var linear = gatedDeltanet(k, f, hidden), kinds = qwenLayerKinds(k, f, layers);
    var stateLayers = kinds.filter(function (item) { return item === "linear_attention"; }).length;
    if (!stateLayers) throw ["noLinearLayer", {}];
    kinds.forEach(function (item) { counted.add((item === "full_attention" ? attention : linear[0]) + 2 * hidden); });
    var dense = kind === "qwen3_5_moe" && f.get("intermediate_size") === null ? f.count("intermediate_size", 1) : f.count("intermediate_size");
    if (kind === "qwen3_5") {
      counted.add(layers * m * hidden * dense);
    } else {
      var count = f.count("num_experts"), active = activeExperts(f, count, undefined);
      var width = f.count("moe_intermediate_size"), shared = f.count("shared_expert_intermediate_size");
      var expert = m * hidden * width, fixed = hidden * count + m * hidden * shared + hidden;  // router, shared expert and its gate
      var only = f.get("mlp_only_layers");
      only = truthy(only) ? only : [];
      if (!Array.isArray(only)) throw ["mlpOnlyLayers", {}];
      var step = f.count("decoder_sparse_step", 1), moe = 0;
      for (var index = 0; index < layers; index++) {
        if (!only.some(function (item) { return equals(item, index); }) && (index + 1) % step === 0) {
          counted.add(count * expert + fixed, active * expert + fixed);
          moe++;
        }
      }
      counted.add((layers - moe) * m * hidden * dense);
      counted.experts = { count: count, active: active, intermediate: width, shared: shared ? 1 : 0, denseLayers: layers - moe };
    }
    var ssm = f.get("mamba_ssm_dtype"), bytes = typeof ssm === "string" && has(k.stateDtypes, ssm) ? k.stateDtypes[ssm] : 0;
    counted.state = { kind: "gated-deltanet", layers: stateLayers, conv: linear[1], recurrent: linear[2] };
    if (bytes) counted.state.recurrentBytes = bytes;
    return counted;
  }

  // hf_hybrid.nemotron_pattern and count_nemotron: one character a layer, M Mamba-2, * attention, - an MLP, E an MoE.
  function countNemotron(k, f, kind, hidden, layers, heads, kvHeads) {
    var counted = layered(f.count("head_dim", Math.floor(hidden / heads))), pattern = f.get("hybrid_override_pattern");
    counted.blocksPerLayer = 1;  // each layer one norm and one mixer
    if (typeof pattern !== "string" || !/^[M*E-]*$/.test(pattern)) throw ["hybridPattern", {}];
    if (pattern.length !== layers) throw ["hybridPatternCount", { count: pattern.length, layers: layers }];
    if (pattern.indexOf("M") < 0 || pattern.indexOf("*") < 0) throw ["hybridPatternKinds", {}];
    var mambaHeads = f.count("mamba_num_heads"), mambaDim = f.count("mamba_head_dim");
    var groups = f.count("n_groups"), size = f.count("ssm_state_size"), kernel = f.count("conv_kernel", k.convKernel);
    var inner = mambaHeads * mambaDim, conv = inner + 2 * groups * size;
    var bias = truthy(get(f.config, "use_conv_bias", true)) ? conv : 0;
    var mamba = hidden * (inner + conv + mambaHeads) + conv * kernel + bias + 3 * mambaHeads + inner + inner * hidden;
    var mixers = { "M": mamba, "*": 2 * hidden * heads * counted.headDim + 2 * hidden * kvHeads * counted.headDim };
    var count, active, expert, fixed, items = pattern.split("");
    if (pattern.indexOf("E") >= 0) {
      count = f.count("n_routed_experts");
      active = activeExperts(f, count, undefined);
      var width = f.count("moe_intermediate_size"), shared = f.count("moe_shared_expert_intermediate_size");
      var latent = f.get("moe_latent_size") !== null ? f.count("moe_latent_size") : hidden;  // experts in a latent width
      expert = 2 * latent * width;
      fixed = hidden * count + 2 * hidden * shared + (latent !== hidden ? 2 * hidden * latent : 0);
      var routed = items.filter(function (item) { return item === "E"; }).length;
      // ungated experts (an up and a down projection), in the latent width when there is one
      counted.experts = { count: count, active: active, intermediate: width, shared: 1, denseLayers: layers - routed, projections: 2 };
      if (latent !== hidden) counted.experts.width = latent;
    }
    mixers["-"] = 2 * hidden * f.count("intermediate_size");  // read for every other layer, as the count reads it
    items.forEach(function (item) {
      if (item === "E") counted.add(count * expert + fixed + hidden, active * expert + fixed + hidden);
      else counted.add(mixers[item] + hidden);
    });
    var count = function (kind) { return items.filter(function (item) { return item === kind; }).length; };
    var ssm = f.get("mamba_ssm_cache_dtype") === null ? k.nemotronStateDtype : f.get("mamba_ssm_cache_dtype");
    var bytes = typeof ssm === "string" && has(k.stateDtypes, ssm) ? k.stateDtypes[ssm] : 0;  // as Qwen's mamba_ssm_dtype
    counted.state = { kind: "mamba2", layers: count("M"), conv: (kernel - 1) * conv, recurrent: mambaHeads * mambaDim * size };
    if (bytes) counted.state.recurrentBytes = bytes;
    var mlpOnly = count("-") + count("E");  // blocks with neither attention nor a state
    if (mlpOnly) counted.state.mlpLayers = mlpOnly;
    return counted;
  }

  // hf_hybrid.count_llama4: chunked local attention in the RoPE layers (no_rope_layers, else every fourth global), an
  // MoE with a shared expert every interleave_moe_layer_step-th layer, a dense MLP of intermediate_size_mlp in the others.
  function countLlama4(k, f, kind, hidden, layers, heads, kvHeads) {
    var m = k.gatedMatrices, counted = layered(f.count("head_dim", Math.floor(hidden / heads))), headDim = counted.headDim;
    var rope = f.get("no_rope_layers");
    if (!truthy(rope)) {
      rope = [];
      for (var index = 0; index < layers; index++) rope.push((index + 1) % k.nopeInterval !== 0 ? 1 : 0);
    }
    if (!Array.isArray(rope) || rope.length !== layers || rope.some(function (item) { return !equals(item, 0) && !equals(item, 1); })) {
      throw ["noRopeLayers", { layers: layers }];
    }
    var chunk = f.count("attention_chunk_size");
    var attention = 2 * hidden * heads * headDim + 2 * hidden * kvHeads * headDim + 2 * hidden;  // and the two norms
    var count = f.count("num_local_experts"), active = activeExperts(f, count, 1);
    var width = f.count("intermediate_size"), step = f.count("interleave_moe_layer_step", 1);
    var dense = f.count("intermediate_size_mlp", width);
    var expert = m * hidden * width, fixed = hidden * count + m * hidden * width;  // the router and the shared expert
    for (var layer = 0; layer < layers; layer++) {
      counted.add(attention);
      if ((layer + 1) % step === 0) counted.add(count * expert + fixed, active * expert + fixed);
      else counted.add(m * hidden * dense);
    }
    var local = rope.reduce(function (sum, item) { return sum + item; }, 0);
    counted.experts = { count: count, active: active, intermediate: width, shared: 1, denseLayers: layers - Math.floor(layers / step) };
    if (local) counted.attention = { kind: "chunked", window: chunk, slidingLayers: local, latent: 0 };
    return counted;
  }

  // hf_hybrid.count_kimi: Kimi Delta Attention in linear_attn_config.kda_layers (from 1), MLA in the others, an MoE
  // with a shared expert after first_k_dense_replace dense layers; vLLM's KDA state, its recurrent part in FP32.
  function countKimi(k, f, kind, hidden, layers, heads, kvHeads) {
    var linear = f.get("linear_attn_config");
    if (!isDict(linear)) throw ["linearConfig", {}];
    var g = fields(f.data, linear, "linear_attn_config."), kda = get(linear, "kda_layers", null);
    var bad = function (item) { return typeof item !== "number" || item % 1 !== 0 || item < 1 || item > layers; };
    if (!Array.isArray(kda) || kda.some(bad) || kda.some(function (item, i) { return kda.indexOf(item) !== i; })) throw ["kdaLayers", { layers: layers }];
    if (!kda.length || kda.length === layers) throw ["kdaKinds", {}];
    var stateHeads = g.count("num_heads"), dim = g.count("head_dim"), kernel = g.count("short_conv_kernel_size", k.convKernel);
    var width = stateHeads * dim, m = k.gatedMatrices;
    var delta = 3 * hidden * width + 3 * width * kernel + stateHeads + 2 * (hidden * dim + dim * width) + width + hidden * stateHeads + dim + width * hidden;
    var mla = countMla(k, f, kind, hidden, heads), counted = layered(mla[2]);
    counted.attention = mla[1];
    counted.add(kda.length * delta + (layers - kda.length) * mla[0] + layers * 2 * hidden);
    var count = f.count("num_experts"), active = f.count("num_experts_per_token");
    if (active > count) throw ["expertsActiveToken", { active: active, count: count }];
    var expertWidth = f.count("moe_intermediate_size"), dense = Math.min(f.optional("first_k_dense_replace"), layers);
    var shared = f.optional("num_shared_experts"), expert = m * hidden * expertWidth;
    var fixed = hidden * count + count + m * hidden * expertWidth * shared;  // the router, its bias, the shared experts
    counted.add(dense * m * hidden * f.count("intermediate_size"));
    for (var layer = dense; layer < layers; layer++) counted.add(count * expert + fixed, active * expert + fixed);
    counted.experts = { count: count, active: active, intermediate: expertWidth, shared: shared ? 1 : 0, denseLayers: dense };
    counted.state = { kind: "kda", layers: kda.length, conv: (kernel - 1) * 3 * width, recurrent: stateHeads * dim * dim, recurrentBytes: k.kdaRecurrentBytes };
    return counted;
  }

  // hf_hybrid.count_minimax_m1: lightning attention where attn_type_list is 0, softmax attention where it is 1, an MoE
  // in every layer; vLLM's lightning state, heads x head dim x head dim in the model's dtype.
  function countMinimaxM1(k, f, kind, hidden, layers, heads, kvHeads) {
    var types = f.get("attn_type_list");
    if (!Array.isArray(types) || types.length !== layers || types.some(function (item) { return item !== 0 && item !== 1; })) {
      throw ["attnTypes", { layers: layers }];
    }
    if (types.indexOf(0) < 0 || types.indexOf(1) < 0) throw ["attnTypesKinds", {}];
    var counted = layered(f.count("head_dim", Math.floor(hidden / heads))), headDim = counted.headDim, width = heads * headDim;
    var lightning = 3 * hidden * width + width * hidden + hidden * width + width, softmax = 2 * hidden * width + 2 * hidden * kvHeads * headDim;
    var count = f.count("num_local_experts"), active = activeExperts(f, count, undefined), m = k.gatedMatrices;
    var expertWidth = f.count("intermediate_size"), expert = m * hidden * expertWidth, fixed = hidden * count;
    types.forEach(function (item) {
      counted.add((item ? softmax : lightning) + 2 * hidden);
      counted.add(count * expert + fixed, active * expert + fixed);
    });
    counted.experts = { count: count, active: active, intermediate: expertWidth, shared: 0, denseLayers: 0 };
    counted.state = { kind: "lightning", layers: types.filter(function (item) { return item === 0; }).length, conv: 0, recurrent: heads * headDim * headDim };
    return counted;
  }

  // hf_hybrid.qwen_vision: a 3-D patch embedding, learned positions, pre-norm blocks, a merger of patches into the text width.
  function qwenVision(data, vision, textHidden) {
    if (!isDict(vision)) return 0;
    var k = counting(data), f = fields(data, vision, "vision_config.");
    var width = f.count("hidden_size"), mlp = f.count("intermediate_size"), depth = f.count("depth");
    var patch = f.count("patch_size"), frames = f.count("temporal_patch_size", k.temporalPatch), channels = f.count("in_channels", k.channels);
    var merge = f.count("spatial_merge_size", k.spatialMerge), merged = width * merge * merge;
    var out = f.count("out_hidden_size", textHidden);
    var embedding = channels * frames * patch * patch * width + width + f.count("num_position_embeddings") * width;
    var block = 4 * width + (3 * width * width + 3 * width) + (width * width + width) + (width * mlp + mlp) + (mlp * width + width);
    var merger = 2 * width + merged * merged + merged + merged * out + out;
    return embedding + depth * block + merger;
  }

  // hf_hybrid.llama4_vision: an unfolded patch embedding, a class token and positions, encoder layers, a pixel-shuffle
  // adapter and the projection into the text width.
  function llama4Vision(data, vision, textHidden) {
    if (!isDict(vision)) return 0;
    var k = counting(data), f = fields(data, vision, "vision_config.");
    var width = f.count("hidden_size"), mlp = f.count("intermediate_size"), depth = f.count("num_hidden_layers");
    var patch = f.count("patch_size"), image = f.count("image_size"), channels = f.count("num_channels", k.channels);
    var projectIn = f.count("projector_input_dim"), projectOut = f.count("projector_output_dim"), output = f.count("vision_output_dim");
    if (patch > image) throw ["patchSize", { patch: patch, image: image }];
    var side = Math.floor(image / patch);
    var embedding = channels * patch * patch * width + width + (side * side + 1) * width + 4 * width;
    var layer = 4 * (width * width + width) + (width * mlp + mlp) + (mlp * width + width) + 4 * width;
    return embedding + depth * layer + mlp * projectIn + projectOut * projectOut + output * textHidden;
  }

  // config_fields.switch: a JSON boolean, `fallback` when left out.
  function flag(k, config, name, fallback) {
    var value = get(config, name, fallback);
    if (typeof value !== "boolean") throw ["configBoolean", { field: name, value: shown(k, value) }];
    return value;
  }

  // hf_gemma4.refuse: a feature the count leaves out, refused unless the config gives its neutral value.
  function gemma4Refuse(k, f, name, expected, fallback) {
    var value = get(f.config, name, fallback);
    if (value !== expected) throw ["gemma4Field", { field: name, expected: shown(k, expected), value: shown(k, value) }];
  }

  // hf_gemma4.count_gemma4: sliding layers beside full-attention layers of their own head size (and, with
  // attention_k_eq_v, their own KV heads and no v_proj), four norms and a dense MLP in every layer, and with
  // enable_moe_block a router, routed experts and three more norms beside it.
  function countGemma4(k, f, kind, hidden, layers, heads, kvHeads) {
    var g = k.gemma4, m = k.gatedMatrices;
    gemma4Refuse(k, f, "hidden_size_per_layer_input", 0, g.perLayerInput);
    gemma4Refuse(k, f, "num_kv_shared_layers", 0, 0);
    gemma4Refuse(k, f, "attention_bias", false, false);
    var headDim = f.count("head_dim", g.headDim), globalDim = f.count("global_head_dim", g.globalHeadDim);
    var kEqV = flag(k, f.config, "attention_k_eq_v", false);
    var globalKv = kEqV && f.get("num_global_key_value_heads") !== null ? f.count("num_global_key_value_heads", kvHeads) : kvHeads;
    if (heads % globalKv) throw ["globalKvDivide", { kv_heads: globalKv, heads: heads }];
    var sliding = 2 * hidden * heads * headDim + 2 * hidden * kvHeads * headDim + 2 * headDim;
    var full = 2 * hidden * heads * globalDim + (kEqV ? 1 : 2) * hidden * globalKv * globalDim + 2 * globalDim;
    var dense = m * hidden * f.count("intermediate_size"), experts = null, count, active, width, router;
    if (flag(k, f.config, "enable_moe_block", false)) {
      count = f.count("num_experts"); active = f.count("top_k_experts");
      if (active > count) throw ["topKExperts", { active: active, count: count }];
      width = f.count("moe_intermediate_size");
      router = hidden * count + hidden + count + 3 * hidden;  // proj, scale, per_expert_scale; and the three norms
      experts = { count: count, active: active, intermediate: width, shared: 0, denseLayers: 0 };
    }
    var types = layerTypes(k, f, layers), counted = layered(headDim);
    if (types === null) types = Array.from({ length: layers }, function (_, i) { return (i + 1) % g.pattern ? "sliding_attention" : "full_attention"; });
    types = types.slice(0, -1).concat(["full_attention"]);  // the last layer is always full
    types.forEach(function (item) {
      counted.add((item === "full_attention" ? full : sliding) + dense + 4 * hidden);
      if (experts) counted.add(router + count * m * hidden * width, router + active * m * hidden * width);
    });
    var local = types.filter(function (item) { return item === "sliding_attention"; }).length;
    var window = f.count("sliding_window", g.slidingWindow);
    if (f.get("use_bidirectional_attention") === "all") window = Math.floor(window / 2) + 1;
    var attention = local ? { kind: "sliding", window: window, slidingLayers: local, latent: 0 } : Object.assign({}, FULL);
    attention.globalHeadDim = globalDim;  // hf_gemma4: always; the full layers' own KV heads only with attention_k_eq_v
    if (kEqV) attention.globalKvHeads = globalKv;
    counted.attention = attention; counted.experts = experts;
    return counted;
  }

  // hf_gemma4.gemma4_vision: a patch projection, a two-axis table of positions, layers of attention with q and k
  // norms and a gated MLP without biases, and the embedder into the text width.
  function gemma4Vision(data, vision, textHidden) {
    if (!isDict(vision)) return 0;
    var k = counting(data), f = fields(data, vision, "vision_config.");
    var width = f.count("hidden_size"), mlp = f.count("intermediate_size"), depth = f.count("num_hidden_layers");
    var patch = f.count("patch_size"), positions = f.count("position_embedding_size"), headDim = f.count("head_dim");
    if (flag(k, vision, "attention_bias", false)) {
      throw ["gemma4Field", { field: "vision_config.attention_bias", expected: "false", value: "true" }];
    }
    var layer = 4 * width * width + 2 * headDim + 3 * width * mlp + 4 * width;
    return 3 * patch * patch * width + 2 * positions * width + depth * layer + width * textHidden;
  }

  function countRelease(k, config) {
    var quantization = get(config, "quantization_config", null);
    if (isDict(quantization)) {
      var method = String(get(quantization, "quant_method", "")).toLowerCase(), algo = String(get(quantization, "quant_algo", null));
      if (method === "modelopt") return has(k.modeloptAlgos, algo) ? k.modeloptAlgos[algo] : "bf16";  // ModelOpt names its algorithm apart
      return has(k.releaseMethods, method) ? k.releaseMethods[method] : "bf16";
    }
    return get(config, "torch_dtype", null) === "float16" ? "fp16" : "bf16";
  }

  // Links keep what a pasted config.json says beyond the fields (extra=, as JSON): {extra}, or {error} naming the value
  // that cannot be honoured (bounded as a config.json's counts are); null without one.
  var EXTRA_LIMITS = { window: "max_context", slidingLayers: "max_layers", latent: "max_hidden", rank: "max_hidden", vDim: "max_head_dim", qLora: "max_hidden", fused: "max_layers",
    indexBytes: "max_hidden", globalKvHeads: "max_heads", globalHeadDim: "max_head_dim", shared: "max_experts", denseLayers: "max_layers", layers: "max_layers", conv: "max_state",
    recurrent: "max_state", mlpLayers: "max_layers", projections: "max_layers", width: "max_hidden" };
  var PROJECTIONS = [0, 2, 3], BLOCKS = [1, 2];  // an expert's matrices (0: gated, 3), residual blocks a layer (models.yaml)
  var RECURRENT_BYTES = [0, 2, 4];  // the model's dtype, or 16 or 32 bits (models.yaml's state.recurrent_bytes)

  function quoted(list) { return list.map(function (item) { return JSON.stringify(item); }); }

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
    var optional = function (value) { return value === null || isDict(value); }, s = isDict(e) ? get(e, "state", null) : null;
    if (!isDict(e) || !isDict(e.attention) || !optional(e.experts) || !optional(s)) throw ["extraShape", { value: shown(k, e) }];
    var a = e.attention, x = e.experts, kinds = ["full", "sliding", "chunked", "mla"];
    if (kinds.indexOf(a.kind) < 0) throw ["extraKind", { kinds: quoted(kinds), value: shown(k, a.kind) }];
    var f = fields(data, a, "attention.", EXTRA_LIMITS), count = function (name) { return f.count(name, null, 0); };
    var attention = { kind: a.kind, window: count("window"), slidingLayers: count("slidingLayers"), latent: count("latent") };
    if (a.kind === "mla") { attention.rank = count("rank"); attention.vDim = count("vDim"); }
    ["qLora", "fused", "globalKvHeads", "globalHeadDim"].forEach(function (name) { var n = f.count(name, 0, 0); if (n) attention[name] = n; });
    var norm = get(a, "qkNormLayer", 0);  // 1: q and k normed over every head (models.yaml's qk_norm per_layer)
    if (norm !== 0 && norm !== 1) throw ["extraChoice", { field: "attention.qkNormLayer", kinds: [0, 1], value: shown(k, norm) }];
    if (norm) attention.qkNormLayer = 1;
    var index = a.kind === "mla" ? f.count("indexBytes", 0, 0) : 0;  // DSA's indexer key, left out without one
    if (index) attention.indexBytes = index;
    var vision = get(e, "vision", null), most = data.limits.max_params_b;
    if (typeof vision !== "number" || !(vision >= 0)) throw ["numberZeroOrMore", { field: "vision", value: shown(k, vision) }];
    if (vision > most) throw ["configMax", { field: "vision", limit: most, value: shown(k, vision) }];
    var moe = x && fields(data, x, "experts.", EXTRA_LIMITS);
    var experts = moe && { shared: moe.count("shared", null, 0), denseLayers: moe.count("denseLayers", null, 0) };
    if (moe) {
      var projections = moe.count("projections", 0, 0), width = moe.count("width", 0, 0);
      if (PROJECTIONS.indexOf(projections) < 0) throw ["extraChoice", { field: "experts.projections", kinds: PROJECTIONS, value: shown(k, projections) }];
      if (projections) experts.projections = projections;
      if (width) experts.width = width;
    }
    var checked = { attention: attention, vision: vision, experts: experts, state: s && checkedState(data, k, s) };
    var blocks = get(e, "blocks", 2);
    if (BLOCKS.indexOf(blocks) < 0) throw ["extraChoice", { field: "blocks", kinds: BLOCKS, value: shown(k, blocks) }];
    if (blocks === 1) checked.blocks = 1;
    return checked;
  }

  // A link's state layers: a kind the engines know, their count, one layer's state elements and its recurrent bytes.
  function checkedState(data, k, s) {
    if (k.stateKinds.indexOf(s.kind) < 0) throw ["extraChoice", { field: "state.kind", kinds: quoted(k.stateKinds), value: shown(k, s.kind) }];
    var f = fields(data, s, "state.", EXTRA_LIMITS), bytes = get(s, "recurrentBytes", 0);
    var state = { kind: s.kind, layers: f.count("layers"), conv: f.count("conv", 0, 0), recurrent: f.count("recurrent") };  // lightning: no conv
    if (RECURRENT_BYTES.indexOf(bytes) < 0) throw ["extraChoice", { field: "state.recurrentBytes", kinds: RECURRENT_BYTES, value: shown(k, bytes) }];
    if (bytes) state.recurrentBytes = bytes;
    var mlpOnly = f.count("mlpLayers", 0, 0);  // Nemotron-H's blocks without a mixer
    if (mlpOnly) state.mlpLayers = mlpOnly;
    return state;
  }

  // What extra= says against the layers the fields give: an error, never a silent replacement.
  function against(extra, layers) {
    var state = extra.state ? extra.state.layers + (extra.state.mlpLayers || 0) : 0;
    if (state >= layers) return ["leavesNoAttention", { field: extra.state.mlpLayers ? "state.mlpLayers" : "state.layers", value: state, layers: layers }];
    if (extra.attention.slidingLayers > layers - state) {
      return ["moreThanLayers", { field: "attention.slidingLayers", value: extra.attention.slidingLayers, layers: layers - state }];
    }
    if (extra.experts && extra.experts.denseLayers && extra.experts.denseLayers >= layers) {
      return ["leavesNoMoe", { field: "experts.denseLayers", value: extra.experts.denseLayers, layers: layers }];
    }
    return null;
  }

  // engines/gguf.py: a GGUF file's matrices, each in the type llama.cpp's quantizer gives it ([role, layer, row
  // length, rows, routed expert]), and [the file's bytes without a vision tower, its routed experts' bytes].
  function ggufBytes(data, s, fmt) {
    var g = counting(data).gguf, a = s.arch, h = a.hidden, at = a.attention, e = a.experts, list = [];
    var add = function (role, layer, row, rows, routed) { list.push([role, layer, row, rows, routed]); };
    var q = a.heads * a.headDim, kv = a.kvHeads * a.headDim, attention = a.layers - (a.state ? a.state.layers + (a.state.mlpLayers || 0) : 0);
    // gguf.gemma4: every layer's dense MLP, beside the experts too; the full layers spread evenly, the last one full
    var gemma4 = !!at.globalHeadDim, full = a.layers - (at.kind === "sliding" || at.kind === "chunked" ? at.slidingLayers : 0);
    add(a.tied ? "output" : "token_embd", -1, h, a.vocab);  // tied embeddings take the output head's rule
    if (!a.tied) add("output", -1, h, a.vocab);
    for (var l = 0; l < (a.state && g.unlaid.indexOf(a.state.kind) >= 0 ? 0 : a.layers); l++) {
      if (l < attention && at.kind === "mla") {
        if (at.qLora) { add("other", l, h, at.qLora); add("other", l, at.qLora, q); } else add("attn_q", l, h, q);
        add("other", l, h, at.latent);
        add("other", l, a.headDim - at.latent + at.rank, at.rank * a.heads);
        add("other", l, at.rank, at.vDim * a.heads);
        add("attn_output", l, a.heads * at.vDim, h);
      } else if (l < attention) {
        var lq = q, lkv = kv, shared = false;  // gguf.full_layer: Gemma 4's full layers at their own shapes, without attn_v where K = V
        if (gemma4 && (l + 1) * full % a.layers < full) {
          lq = a.heads * at.globalHeadDim; lkv = (at.globalKvHeads || a.kvHeads) * at.globalHeadDim; shared = !!at.globalKvHeads;
        }
        if (at.fused) add("attn_v", l, h, lq + 2 * lkv);
        else { add("attn_q", l, h, lq); add("attn_k", l, h, lkv); if (!shared) add("attn_v", l, h, lkv); }
        add("attn_output", l, lq, h);
      }
      var width = e && l >= e.denseLayers ? e.intermediate * e.count : 0;
      if (!width || gemma4) { add("ffn_gate", l, h, a.intermediate); add("ffn_up", l, h, a.intermediate); add("ffn_down", l, a.intermediate, h); }
      if (!width) continue;
      add("float", l, h, e.count); add("ffn_gate", l, h, width, 1); add("ffn_up", l, h, width, 1); add("ffn_down", l, e.intermediate, h * e.count, 1);
      if (e.shared) { width = e.intermediate * e.shared; add("ffn_gate", l, h, width); add("ffn_up", l, h, width); add("ffn_down", l, width, h); }
    }
    var type = fmt.fileType, base = g.defaults[type], eight = e && e.count === 8, index = 0, total = 0, experts = 0, counted = 0;
    var more = function (i, n) { return i < Math.floor(n / 8) || i >= Math.floor(7 * n / 8) || (i - Math.floor(n / 8)) % 3 === 2; };
    var values = list.filter(function (t) { return t[0] === "attn_v"; }).length, k4m = type === "Q4_K_M" || type === "Q5_K_M";
    var seventy = a.layers === g.seventyB && a.heads !== a.kvHeads && !e;
    var typeOf = function (t) {
      var role = t[0], kind = base;
      if (role === "float") kind = "F32";
      else if (role === "output") kind = t[2] % g.blocks[kind][0] || kind === "Q8_0" ? "Q8_0" : "Q6_K";
      else if (role === "attn_v") {
        if (type === "Q2_K") kind = a.heads / a.kvHeads >= 4 ? "Q4_K" : "Q3_K";
        else if (type === "Q3_K_M") kind = index < 2 ? "Q5_K" : "Q4_K";
        else if (k4m && more(index, values)) kind = "Q6_K";
        if (seventy && (kind === "Q3_K" || kind === "Q4_K")) kind = "Q5_K";
        if (eight) kind = "Q8_0";
        index++;
      } else if (role === "attn_k" && eight) kind = "Q8_0";
      else if (role === "ffn_down") {
        if (type === "Q2_K") kind = "Q3_K";
        else if (type === "Q3_K_M") kind = t[1] < Math.floor(a.layers / 16) ? "Q5_K" : "Q4_K";
        else if (k4m && more(t[1], a.layers)) kind = "Q6_K";
      } else if (role === "attn_output") {
        if (eight) kind = ["Q2_K", "Q3_K_M", "Q4_K_M"].indexOf(type) >= 0 ? "Q5_K" : kind;
        else kind = type === "Q2_K" ? "Q3_K" : type === "Q3_K_M" ? "Q4_K" : kind;
      }
      if (t[2] % g.blocks[kind][0]) kind = g.fallback[kind] || kind;
      return t[2] % g.blocks[kind][0] ? "F16" : kind;
    };
    list.forEach(function (t) {
      var block = g.blocks[typeOf(t)], bytes = t[3] * Math.floor(t[2] / block[0]) * block[1];
      total += bytes; counted += t[2] * t[3]; if (t[4]) experts += bytes;
    });
    // a hybrid's: projections from the hidden size, mostly (gguf.file_bytes)
    var rest = Math.max(0, Math.round(s.params * 1e9) - Math.round(s.vision * 1e9) - counted), r = g.blocks[a.state ? typeOf(["other", -1, h, 0]) : "F32"];
    return [total + Math.floor(rest * r[1] / r[0]), experts];
  }

  window.gpumemConfig = { countConfig: countConfig, extraOf: extraOf, know: know, against: against, ggufBytes: ggufBytes };
})();
