// Index tables: sort by a column heading, filter rows by name. The tables are complete without it.
// A cell sorts by its data-value (the raw number) when it has one, else by its text; cells
// without a value go last either way. The filter matches each row's first two cells (the name, and
// the family or vendor) and says when no row is left.
"use strict";
document.querySelectorAll("table.sortable").forEach((table) => {
  const body = table.tBodies[0];
  const headings = Array.from(table.tHead.rows[0].cells);
  const key = (row, column) => {
    const cell = row.cells[column];
    return cell.dataset.value === undefined ? cell.textContent.trim() : Number(cell.dataset.value);
  };
  const compare = (a, b) => (typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b), document.documentElement.lang, { numeric: true }));
  headings.forEach((heading, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.append(...heading.childNodes);
    heading.append(button);
    button.addEventListener("click", () => {
      const order = heading.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      headings.forEach((other) => other.removeAttribute("aria-sort"));
      heading.setAttribute("aria-sort", order > 0 ? "ascending" : "descending");
      const rows = Array.from(body.rows).map((row) => [key(row, column), row]);
      const blank = (value) => value === "" || value === "—";
      rows.sort(([a], [b]) => (blank(a) || blank(b) ? blank(a) - blank(b) : order * compare(a, b)));
      body.append(...rows.map(([, row]) => row));
    });
  });
});
document.querySelectorAll("input[data-filter]").forEach((input) => {
  const rows = Array.from(document.getElementById(input.dataset.filter).tBodies[0].rows);
  input.addEventListener("input", () => {
    const words = input.value.toLocaleLowerCase().split(/\s+/).filter(Boolean);
    rows.forEach((row) => {
      const text = `${row.cells[0].textContent} ${row.cells[1].textContent}`.toLocaleLowerCase();
      row.hidden = !words.every((word) => text.includes(word));
    });
    document.getElementById(input.dataset.filter + "-none").hidden = rows.some((row) => !row.hidden);
  });
  input.closest("[hidden]").hidden = false;
});
