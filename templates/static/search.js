// The search page: the words typed are looked up in the Pagefind index the build wrote (pagefind/, one index per
// language: Pagefind picks the page's <html lang>), loaded on the first search. Each page found is listed with its
// title, its matching sections and an excerpt. Only Pagefind's <mark> tags are kept of an excerpt, as elements.
"use strict";
(() => {
  const form = document.querySelector("form.search");
  const input = form.querySelector("input");
  const status = document.getElementById("search-status");
  const list = document.getElementById("search-results");
  const SHOWN = 10;
  let loading = null;
  let asked = 0;

  const engine = () => {
    loading ??= import(form.dataset.bundle + "pagefind.js").then(async (pagefind) => {
      await pagefind.options({ baseUrl: form.dataset.bundle.replace(/pagefind\/$/, "") });
      return pagefind;
    });
    return loading;
  };

  const excerpt = (html) => {
    const paragraph = document.createElement("p");
    const holder = document.createElement("template");
    holder.innerHTML = html;
    holder.content.childNodes.forEach((node) => {
      if (node.nodeName === "MARK") {
        const mark = document.createElement("mark");
        mark.textContent = node.textContent;
        paragraph.append(mark);
      } else {
        paragraph.append(node.textContent);
      }
    });
    return paragraph;
  };

  const link = (url, text) => {
    const anchor = document.createElement("a");
    anchor.href = url;
    anchor.textContent = text;
    return anchor;
  };

  const item = (data) => {
    const entry = document.createElement("li");
    entry.append(link(data.url, data.meta.title || data.url), excerpt(data.excerpt));
    const sections = data.sub_results.filter((sub) => sub.url !== data.url && sub.url.includes("#"));
    if (sections.length) {
      const nested = document.createElement("ul");
      sections.slice(0, 3).forEach((sub) => {
        const row = document.createElement("li");
        row.append(link(sub.url, sub.title));
        nested.append(row);
      });
      entry.append(nested);
    }
    return entry;
  };

  const run = async () => {
    const words = input.value.trim();
    const mine = ++asked;
    if (!words) {
      status.textContent = "";
      list.replaceChildren();
      return;
    }
    try {
      const pagefind = await engine();
      const found = await pagefind.debouncedSearch(words, {}, 150);
      if (found === null || mine !== asked) return;
      const shown = await Promise.all(found.results.slice(0, SHOWN).map((result) => result.data()));
      if (mine !== asked) return;
      const count = found.results.length;
      status.textContent = count ? `${form.dataset.found} ${count.toLocaleString(document.documentElement.lang)}` : form.dataset.none;
      list.replaceChildren(...shown.map(item));
    } catch {
      status.textContent = form.dataset.failed;
    }
  };

  form.hidden = false;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  input.addEventListener("input", run);
  const given = new URLSearchParams(location.search).get("q");
  if (given) {
    input.value = given;
    run();
  }
})();
