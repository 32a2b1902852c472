// GPU-memory calculator: the same arithmetic as generator/memory.py and the sizing rule of
// generator/sizing.py, reading every constant from the build's JSON (no constant lives here).
(function () {
  "use strict";

  var FIELDS = ["model", "params", "layers", "heads", "kv_heads", "head_dim", "mode", "weights", "kv", "batch", "context"];
  var ARCH = ["params", "layers", "heads", "kv_heads", "head_dim"];

  function kvCacheBytes(arch, kvBytes, tokens, sequences) {
    var a = arch.attention;
    var perLayer = a.kind === "mla" ? a.latent : 2 * arch.kvHeads * arch.headDim;
    var layerTokens = a.kind === "sliding"
      ? (arch.layers - a.slidingLayers) * tokens + a.slidingLayers * Math.min(tokens, a.window)
      : arch.layers * tokens;
    return perLayer * kvBytes * layerTokens * sequences;
  }

  // Mirrors memory.memory_need: parts in GB, in the same order and with the same operations.
  function compute(data, s) {
    var parts = { weights: 0, kv_cache: 0, gradients: 0, optimizer: 0, overhead: 0 };
    if (s.mode === "serve") {
      parts.weights = s.params * data.precisions[s.weights];
      parts.kv_cache = kvCacheBytes(s.arch, data.kvPrecisions[s.kv], s.context, s.batch) / 1e9;
      parts.overhead = (parts.weights + parts.kv_cache) * data.runtimeOverhead;
    } else if (s.mode === "full") {
      parts.weights = s.params * data.fullParts.weights;
      parts.gradients = s.params * data.fullParts.gradients;
      parts.optimizer = s.params * data.fullParts.optimizer;
    } else if (s.mode === "lora") {
      parts.weights = s.params * data.precisions[data.loraBase];
      parts.optimizer = parts.weights * data.loraMargin;
    } else {
      parts.weights = s.params * data.precisions[data.qloraBase];
      parts.optimizer = s.params * data.qloraBytes - parts.weights;
    }
    parts.total = parts.weights + parts.kv_cache + parts.gradients + parts.optimizer + parts.overhead;
    return parts;
  }

  // Mirrors compute.calculator_choices: configurations that hold the need, smallest first.
  function choices(data, s, need) {
    var extra = 0;
    if (s.mode === "serve") {
      extra = kvCacheBytes(s.arch, data.kvPrecisions[s.kv], s.context, data.comfortableRequests) / 1e9 * (1 + data.runtimeOverhead);
    }
    return data.configurations.filter(function (c) {
      return c.memory * c.count >= need && (s.mode !== "serve" || s.arch.heads % c.count === 0);
    }).map(function (c) {
      var memory = c.memory * c.count;
      return { gpu: c.gpu, name: c.name, count: c.count, memory: memory, price: c.price,
        tight: memory - need < Math.max(data.minFreeFraction * memory, extra) };
    });
  }

  function validCounts(data, heads) {
    return data.gpuCounts.filter(function (n) { return heads % n === 0; });
  }

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
    head_dim: "max_head_dim", batch: "max_batch", context: "max_context" };

  // Every field of a raw state checked: returns {state} or {errors: {field: [key, limit]}}.
  function validate(data, raw) {
    var errors = {}, values = {};
    Object.keys(LIMITS).forEach(function (field) {
      var parsed = parseNumber(raw[field]);
      var limit = data.limits[LIMITS[field]];
      if (parsed.error) { errors[field] = [parsed.error]; return; }
      var v = parsed.value;
      if (v <= 0) errors[field] = ["positive"];
      else if (field !== "params" && Math.floor(v) !== v) errors[field] = ["whole"];
      else if (v > limit) errors[field] = ["max", limit];
      else values[field] = v;
    });
    if (values.heads && values.kv_heads && values.heads % values.kv_heads !== 0) errors.kv_heads = ["divide", values.heads];
    ["mode", "weights", "kv"].forEach(function (field) {
      var known = field === "mode" ? ["serve", "full", "lora", "qlora"] : Object.keys(field === "kv" ? data.kvPrecisions : data.precisions);
      if (known.indexOf(raw[field]) < 0) errors[field] = ["choice"];
    });
    if (Object.keys(errors).length) return { errors: errors };
    var preset = presetOf(data, raw.model);
    var attention = preset && raw.model !== "custom" ? preset.attention : { kind: "full", window: 0, slidingLayers: 0, latent: 0 };
    return { state: { model: raw.model, mode: raw.mode, weights: raw.weights, kv: raw.kv, params: values.params,
      batch: values.batch, context: values.context,
      arch: { layers: values.layers, heads: values.heads, kvHeads: values.kv_heads, headDim: values.head_dim, attention: attention } } };
  }

  function presetOf(data, id) {
    for (var i = 0; i < data.models.length; i++) if (data.models[i].id === id) return data.models[i];
    return null;
  }

  function presetFields(preset) {
    return { params: preset.params, layers: preset.layers, heads: preset.heads, kv_heads: preset.kvHeads, head_dim: preset.headDim };
  }

  // The raw state a URL query describes; a preset whose numbers were changed becomes custom.
  function fromQuery(data, query) {
    var params = new URLSearchParams(query), raw = {};
    var d = data.defaults;
    FIELDS.forEach(function (f) { raw[f] = params.has(f) ? params.get(f) : null; });
    raw.model = raw.model || (params.has("params") ? "custom" : d.model);
    var preset = presetOf(data, raw.model);
    if (raw.model !== "custom" && !preset) raw.model = "custom";
    if (preset) {
      var fields = presetFields(preset);
      ARCH.forEach(function (f) {
        if (raw[f] === null) raw[f] = String(fields[f]);
        else if (Number(raw[f]) !== fields[f]) raw.model = "custom";
      });
    }
    ["mode", "weights", "kv", "batch", "context"].forEach(function (f) { if (raw[f] === null) raw[f] = String(d[f]); });
    ARCH.forEach(function (f) { if (raw[f] === null) raw[f] = ""; });
    return raw;
  }

  function toQuery(raw) {
    var params = new URLSearchParams();
    FIELDS.forEach(function (f) { params.set(f, raw[f]); });
    return params.toString();
  }

  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, name) { return values[name]; });
  }

  // Page wiring: read the form, show the result, keep the URL in step.
  function start(root) {
    var data = JSON.parse(document.getElementById("calculator-data").textContent);
    var text = JSON.parse(document.getElementById("calculator-messages").textContent);
    var lang = document.documentElement.lang;
    var number = new Intl.NumberFormat(lang, { useGrouping: "always", maximumFractionDigits: 1, roundingMode: "halfEven" });
    var money = new Intl.NumberFormat(lang, { style: "currency", currency: data.currency, useGrouping: "always", roundingMode: "halfEven" });
    var form = root.querySelector("form");
    var gb = function (v) { return fill(text.gb, { value: number.format(v) }); };

    function field(name) { return form.elements[name]; }

    function readForm() {
      var raw = {};
      FIELDS.forEach(function (f) { raw[f] = field(f).value; });
      return raw;
    }

    function writeForm(raw) {
      FIELDS.forEach(function (f) { field(f).value = raw[f]; });
    }

    function showErrors(errors) {
      FIELDS.forEach(function (f) {
        var box = document.getElementById("calc-" + f + "-error");
        var error = errors[f];
        if (box) box.textContent = error ? fill(text.errors[error[0]], { limit: error[1] ? number.format(error[1]) : "" }) : "";
        field(f).setAttribute("aria-invalid", error ? "true" : "false");
      });
    }

    function render() {
      var raw = readForm();
      history.replaceState(null, "", "?" + toQuery(raw));
      root.querySelector("#calc-link").value = location.href;
      var checked = validate(data, raw);
      showErrors(checked.errors || {});
      var total = root.querySelector('[data-result="total-gb"]');
      root.classList.toggle("invalid", !!checked.errors);
      if (checked.errors) {
        total.textContent = text.invalid;
        total.removeAttribute("data-value");
        return;
      }
      var s = checked.state, need = compute(data, s);
      total.textContent = gb(need.total);
      total.setAttribute("data-value", String(need.total));
      renderParts(need, s.mode);
      renderChoices(choices(data, s, need.total));
      var counts = validCounts(data, s.arch.heads).map(function (n) { return number.format(n); });
      root.querySelector("#calc-counts").textContent = fill(text.counts, { heads: number.format(s.arch.heads), counts: counts.join(", ") });
      root.querySelector("#calc-note").textContent = s.mode === "serve" ? text.serveNote : text.trainNote;
    }

    function renderParts(need, mode) {
      var list = root.querySelector("#calc-parts"), bar = root.querySelector("#calc-bar");
      list.textContent = "";
      bar.textContent = "";
      ["weights", "kv_cache", "gradients", "optimizer", "overhead"].forEach(function (part, index) {
        if (!need[part]) return;
        var label = part === "optimizer" && mode !== "full" ? text.parts.adapters : text.parts[part];
        var item = document.createElement("li");
        item.className = "part-" + index;
        item.textContent = label + ": " + gb(need[part]);
        list.appendChild(item);
        var segment = document.createElement("span");
        segment.className = "part-" + index;
        segment.style.width = (100 * need[part] / need.total).toFixed(2) + "%";  // as part_width in render.py
        bar.appendChild(segment);
      });
      bar.setAttribute("aria-label", Array.prototype.map.call(list.children, function (li) { return li.textContent; }).join("; "));
    }

    function renderChoices(found) {
      var list = root.querySelector("#calc-options");
      list.textContent = "";
      if (!found.length) {
        var none = document.createElement("li");
        none.textContent = text.none;
        list.appendChild(none);
        return;
      }
      found.forEach(function (c) {
        var item = document.createElement("li");
        var price = c.count === 1 ? fill(text.perGpuHour, { price: money.format(c.price) })
          : fill(text.perHour, { price: money.format(c.price), each: money.format(c.price / c.count) });
        item.textContent = fill(text.option, { count: number.format(c.count), gpu: c.name, memory: gb(c.memory), price: price });
        var flag = document.createElement("span");
        flag.className = c.tight ? "tight" : "comfortable";
        flag.textContent = c.tight ? text.tight : text.comfortable;
        item.appendChild(document.createTextNode(" "));
        item.appendChild(flag);
        list.appendChild(item);
      });
    }

    form.addEventListener("input", function (event) {
      var name = event.target.name;
      if (name === "model" && field("model").value !== "custom") {
        var fields = presetFields(presetOf(data, field("model").value));
        ARCH.forEach(function (f) { field(f).value = String(fields[f]); });
      } else if (ARCH.indexOf(name) >= 0) {
        field("model").value = "custom";
      }
      render();
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    root.querySelector("#calc-copy").addEventListener("click", function () {
      var link = root.querySelector("#calc-link"), status = root.querySelector("#calc-copied");
      link.select();
      var done = function () { status.textContent = text.copied; };
      if (navigator.clipboard) navigator.clipboard.writeText(link.value).then(done, function () { document.execCommand("copy"); done(); });
      else { document.execCommand("copy"); done(); }
    });
    if (location.search) {
      writeForm(fromQuery(data, location.search));
      render();
    }
  }

  window.gpumemCalculator = { compute: compute, choices: choices, validate: validate, fromQuery: fromQuery, validCounts: validCounts };
  var root = document.getElementById("calculator");
  if (root) start(root);
})();
