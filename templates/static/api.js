// "Self-hosting or an API?": the self-hosted cost per million output tokens at the reader's utilisation.
// Every figure comes from #api-data (the build's compute_api.py): full is the cost at 100 % utilisation,
// api the cheapest API's cost per million output tokens at the same load.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("api-data").textContent);
  var words = JSON.parse(document.getElementById("api-messages").textContent);
  var form = document.getElementById("api-form");
  var input = document.getElementById("api-utilisation");
  var error = document.getElementById("api-utilisation-error");
  var money = new Intl.NumberFormat(document.documentElement.lang, {
    style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2
  });

  // The price per hour over the tokens of the hours the configuration is busy: full / utilisation.
  function cost(full, utilisation) {
    return full / utilisation;
  }

  function utilisation() {
    var text = input.value.trim();
    var percent = Number(text);
    return text !== "" && isFinite(percent) && percent > 0 && percent <= 100 ? percent / 100 : null;
  }

  function update() {
    var share = utilisation();
    error.textContent = share === null ? words.invalid : "";
    document.querySelectorAll("[data-api-model]").forEach(function (cell) {
      var row = data.models[cell.getAttribute("data-api-model")];
      if (share === null || !row) {
        cell.textContent = "—";
        cell.removeAttribute("data-usd");
        return;
      }
      var usd = cost(row.full, share);
      cell.setAttribute("data-usd", String(usd));
      cell.textContent = money.format(usd) + " (" + (usd < row.api ? words.cheaper : words.dearer) + ")";
    });
  }

  form.hidden = false;
  document.querySelectorAll(".api-yours").forEach(function (cell) { cell.hidden = false; });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  input.addEventListener("input", update);
  window.gpumemApi = { cost: cost };
  update();
})();
