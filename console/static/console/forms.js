// A form marked data-busy="…" says so on its button while the server works (a link's source
// is asked before the link is made, which can take seconds), and cannot be sent twice.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const busy = form.dataset.busy;
  if (!busy || event.defaultPrevented) return;
  const button = event.submitter || form.querySelector("button[type=submit]");
  if (!button) return;
  // After this event, so the submission still carries the button's own name and value.
  setTimeout(() => {
    button.disabled = true;
    button.textContent = busy;
  }, 0);
});

// A "Copy" button (data-copy="#id") puts that element's text on the clipboard and says so.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.dataset.text ?? source.textContent.trim();
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    // No clipboard (an insecure origin, or refused): select it for Ctrl+C instead.
    window.getSelection().selectAllChildren(source);
    button.textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => { button.textContent = "Copy"; }, 2000);
});

// A filter's select (data-submit-on-change) applies as soon as it changes: a listener here, not
// an inline handler, which the Content-Security-Policy refuses.
document.addEventListener("change", (event) => {
  const field = event.target.closest("[data-submit-on-change]");
  if (field && field.form) field.form.submit();
});
