// Copy buttons: a <button class="copy"> copies the command of its .launch block, then says so (the
// data-done text of the block that holds them) for two seconds. The command stays selectable text without
// this script; the button is hidden until the script shows it, and stays hidden where the page has no
// clipboard access.
"use strict";
document.querySelectorAll("button.copy").forEach((button) => {
  const source = button.closest(".launch")?.querySelector("code");
  const done = button.closest("[data-done]")?.dataset.done;
  if (!source || !done || !navigator.clipboard) return;
  const label = button.textContent;
  button.hidden = false;
  button.addEventListener("click", () => {
    navigator.clipboard.writeText(source.textContent).then(() => {
      button.textContent = done;
      setTimeout(() => {
        button.textContent = label;
      }, 2000);
    });
  });
});
