// A <details data-fold-narrow open> (the audit trail's filters) stays open on a desktop and
// starts folded on a phone's width, where it would fill the screen; its summary opens it.
window.addEventListener("DOMContentLoaded", () => {
  if (!window.matchMedia("(max-width: 760px)").matches) return;
  for (const details of document.querySelectorAll("details[data-fold-narrow]")) {
    details.open = false;
  }
});
