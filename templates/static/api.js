// "Self-hosting or an API?": the self-hosted cost per million output tokens at the reader's volume, given as a
// utilisation, as output tokens a day or as requests a day with their lengths (the figure typed last counts).
// Every figure comes from #api-data (figures/apis.py's script_data): per model, full is the cost at 100 %
// utilisation, day the output tokens it makes in 24 h at the page's load, apis each API's [input, output] prices.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("api-data").textContent);
  var words = JSON.parse(document.getElementById("api-messages").textContent);
  var form = document.getElementById("api-form");
  var error = document.getElementById("api-error");
  var fields = {};
  ["utilisation", "tokens", "requests", "prompt", "output"].forEach(function (name) {
    fields[name] = document.getElementById("api-" + name);
  });
  var mode = "utilisation";
  var lang = document.documentElement.lang;
  var money = new Intl.NumberFormat(lang, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 });
  var percent = new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 });

  // The copies of a configuration a utilisation takes, each rented all day, over the tokens asked: apis.py's volume_cost.
  function needed(utilisation) {
    return Math.max(1, Math.ceil(utilisation));
  }
  function volumeCost(full, utilisation) {
    return full * needed(utilisation) / utilisation;
  }
  // The least an API charges per million output tokens of requests of these lengths: apis.py's cheapest_api_cost.
  function cheapestApi(apis, prompt, output) {
    return Math.min.apply(null, apis.map(function (p) { return p[1] + p[0] * prompt / output; }));
  }

  function positive(name) {
    var text = fields[name].value.trim();
    var value = Number(text);
    return text !== "" && isFinite(value) && value > 0 ? value : null;
  }

  // The reader's volume: {share} (a utilisation of every configuration) or {tokens} a day, and the lengths the APIs are priced at.
  function volume() {
    if (mode === "utilisation") {
      var share = positive("utilisation");
      return share !== null && share <= 100 ? { share: share / 100, prompt: data.prompt, output: data.output } : null;
    }
    if (mode === "tokens") {
      var tokens = positive("tokens");
      return tokens === null ? null : { tokens: tokens, prompt: data.prompt, output: data.output };
    }
    var requests = positive("requests"), prompt = positive("prompt"), output = positive("output");
    return requests === null || prompt === null || output === null ? null : { tokens: requests * output, prompt: prompt, output: output };
  }

  function update() {
    var asked = volume();
    error.textContent = asked === null ? words[mode] : "";
    document.querySelectorAll("[data-api-model]").forEach(function (cell) {
      var row = data.models[cell.getAttribute("data-api-model")];
      if (asked === null || !row) {
        cell.textContent = "—";
        cell.removeAttribute("data-usd");
        return;
      }
      var share = asked.share !== undefined ? asked.share : asked.tokens / row.day;
      var usd = volumeCost(row.full, share);
      var count = needed(share);
      var load = count === 1 ? words.busy.replace("{share}", percent.format(share))
        : words.copies.replace("{count}", String(count)).replace("{share}", percent.format(share / count));
      var api = cheapestApi(row.apis, asked.prompt, asked.output);
      cell.setAttribute("data-usd", String(usd));
      var verdict = usd < api ? words.cheaper : words.dearer;
      cell.textContent = money.format(usd) + " (" + words.pair.replace("{load}", load).replace("{verdict}", verdict) + ")";
    });
  }

  form.hidden = false;
  document.querySelectorAll(".api-yours").forEach(function (cell) { cell.hidden = false; });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  Object.keys(fields).forEach(function (name) {
    fields[name].addEventListener("input", function () {
      mode = name === "prompt" || name === "output" ? "requests" : name;
      ["utilisation", "tokens", "requests"].forEach(function (other) {
        if (other !== mode) { fields[other].value = ""; }
      });
      update();
    });
  });
  window.gpumemApi = { volumeCost: volumeCost, needed: needed, cheapestApi: cheapestApi };
  update();
})();
