// The first script of a page with calculators (book/_ext/mlcalc_site.py puts it first in <head>):
// it starts the site's Python (book/_static/mlcalc-worker.mjs, a Web Worker) as the page starts, so
// Pyodide loads while the page's other scripts (about 9 MB: the widget manager, Vega, MathJax) load
// and run. mlcalc-live.js adopts this worker and the messages it sent meanwhile (window.mlcalcBoot).
// Where no worker can start (file://, no Worker or WebAssembly) it does nothing: mlcalc-live.js says why.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  if (!here || location.protocol === "file:" || typeof Worker === "undefined" || typeof WebAssembly !== "object") return;
  var options = window.mlcalcLiveOptions || {};
  var boot = (window.mlcalcBoot = { started: performance.now(), events: [], worker: null, error: "" });
  var url = here.slice(0, here.lastIndexOf("/") + 1) + "mlcalc-worker.mjs" + (options.snapshot === false ? "?snapshot=0" : "");
  boot.url = url;
  try {
    boot.worker = new Worker(url, { type: "module" });
  } catch (err) {
    boot.error = String(err);
    return;
  }
  boot.worker.onmessage = function (event) { boot.events.push({ type: "message", event: event }); };
  boot.worker.onerror = function (event) {
    if (event && event.preventDefault) event.preventDefault();
    boot.events.push({ type: "error", event: event });
  };
})();
