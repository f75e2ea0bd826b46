// The filter editors of a link's page (templates/links/_filters.html).
//
// Import: the console's forms take no files (console/middleware.py refuses them), so the browser
// reads the chosen file and sends its text with the editor's form, as if pasted; the server
// checks it as it checks pasted JSON. A file no filter list can be (too large, not text) is
// refused here, with a message on the editor.
//
// A request the console refuses before the editor can answer (a form too large, an expired
// CSRF token, a role that may not save) comes back as an error page HTMX does not swap in:
// its message is shown on the editor instead.
(function () {
  "use strict";
  if (window.isthmusFilterEditors) return; // the script tag comes again with each page part
  window.isthmusFilterEditors = true;

  var MAX_BYTES = 256 * 1024; // replication.core.filters.MAX_JSON

  function say(form, text) {
    var box = form.querySelector("[data-client-error]");
    if (!box) return;
    box.textContent = text;
    box.hidden = !text;
  }

  function size(bytes) {
    if (bytes >= 1024 * 1024) return (bytes / 1024 / 1024).toFixed(1) + " MB";
    return Math.ceil(bytes / 1024) + " KB";
  }

  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[type=file][data-import]")) return;
    var form = input.closest("form");
    var file = input.files && input.files[0];
    input.value = ""; // the same file may be chosen again
    if (!form || !file) return;
    say(form, "");
    if (file.size > MAX_BYTES) {
      say(form, file.name + " is " + size(file.size) + ": a filter file is at most 256 KB. Nothing was imported.");
      return;
    }
    file.arrayBuffer().then(function (buffer) {
      var text;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(buffer);
      } catch (e) {
        text = null;
      }
      if (text === null || text.indexOf("\u0000") !== -1) {
        say(form, file.name + " is not a text file (JSON is UTF-8 text). Nothing was imported.");
        return;
      }
      form.querySelector("input[name=imported]").value = text;
      form.querySelector("input[name=imported_name]").value = file.name;
      form.querySelector("[data-import-submit]").click();
    }, function () {
      say(form, file.name + " could not be read. Nothing was imported.");
    });
  });

  document.addEventListener("htmx:responseError", function (event) {
    var form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form.filter-editor");
    if (!form) return;
    var page = new DOMParser().parseFromString(event.detail.xhr.responseText || "", "text/html");
    var shown = page.querySelector("#refusal, .error, h1");
    var text = (shown ? shown.textContent : page.body ? page.body.textContent : "").replace(/\s+/g, " ").trim();
    say(form, "Refused (" + event.detail.xhr.status + "): " + (text || "the console said no more.").slice(0, 500));
  });
})();
