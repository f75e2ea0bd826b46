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
