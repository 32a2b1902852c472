// Copy buttons: a <button data-copy="ID"> copies the text of the element with that id, then says so
// (its data-done text) for two seconds. The command stays selectable text without this script; the
// button is hidden until the script shows it, and stays hidden where the page has no clipboard access.
"use strict";
document.querySelectorAll("button[data-copy]").forEach((button) => {
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  const label = button.textContent;
  button.hidden = false;
  button.addEventListener("click", () => {
    navigator.clipboard.writeText(source.textContent).then(() => {
      button.textContent = button.dataset.done;
      setTimeout(() => {
        button.textContent = label;
      }, 2000);
    });
  });
});
