// The site's Python: Pyodide's core and the pure wheel of mlcalc, both served by the site
// (fetched from npm / built from the checkout at `make book`), in a Web Worker off the main thread.
// Messages in: {id, key, values, changed[, initial, search]} (a change; with the page's own values
// and its query, the answer also holds the new query) or {id, open: true, key, initial, search} (a page
// opened from a link); out: {ready} | {failed: reason} | {id, result: JSON text} |
// {id, fatal: reason} (the page then starts a fresh worker). Python never raises here:
// mlcalc.live.run_widgets_json turns every error into {"ok": false, "error": ...}.
import { loadPyodide } from "./vendor/pyodide/pyodide.mjs";

const base = new URL("./", import.meta.url);
let runWidgetsJson = null;
let openWidgetsJson = null;

const timings = {};
// A failure inside Pyodide's loader that rejects nothing we await still reaches the page.
self.addEventListener("unhandledrejection", (event) => {
  event.preventDefault(); // reported to the page as a message, not as an uncaught error
  if (!runWidgetsJson) self.postMessage({ failed: String((event.reason && event.reason.message) || event.reason) });
});
const ready = (async () => {
  timings.start = performance.now();
  const pyodide = await loadPyodide({
    indexURL: new URL("vendor/pyodide/", base).href,
    stdout: () => {},
    stderr: () => {},
  });
  timings.pyodide = performance.now();
  const wheel = await fetch(new URL("vendor/mlcalc/mlcalc.whl", base));
  if (!wheel.ok) throw new Error(`mlcalc.whl: HTTP ${wheel.status}`);
  pyodide.unpackArchive(await wheel.arrayBuffer(), "wheel");
  timings.wheel = performance.now();
  runWidgetsJson = pyodide.runPython("import mlcalc.calculators, mlcalc.live\nmlcalc.live.run_widgets_json");
  openWidgetsJson = pyodide.runPython("mlcalc.live.open_widgets_json");
  timings.imported = performance.now();
})();

ready.then(
  () => self.postMessage({ ready: true, timings }),
  (err) => self.postMessage({ failed: String((err && err.message) || err) }),
);

self.onmessage = async (event) => {
  const { id, key, values, changed, initial, search, open } = event.data || {};
  try {
    await ready;
  } catch (err) {
    self.postMessage({ id, fatal: String((err && err.message) || err) });
    return;
  }
  try {
    const page = JSON.stringify(initial || {});
    const result = open
      ? openWidgetsJson(String(key), String(search || ""), page)
      : runWidgetsJson(String(key), JSON.stringify(values || {}), String(changed || ""), initial ? page : "", String(search || ""));
    self.postMessage({ id, result });
  } catch (err) {
    // Only a broken interpreter gets here (Python itself catches everything).
    self.postMessage({ id, fatal: String((err && err.message) || err) });
  }
};
