// The site's Python: Pyodide's core and the pure wheel of mlcalc, both served by the site
// (fetched from npm / built from the checkout at `make book`), in a Web Worker off the main thread.
//
// Started as the page starts (book/_static/mlcalc-boot.js, the first script of a page with calculators).
// Two ways to a running interpreter:
//   snapshot  a Pyodide memory snapshot of the interpreter with mlcalc imported, made at `make book`
//             (scripts/make_snapshot.mjs), restored with loadPyodide({_loadSnapshot}): several times
//             faster than starting Python and importing. Taken only when its record (snapshot.json)
//             names this Pyodide and the SHA-256 of the wheel the site serves (kept in step with it).
//   cold      Pyodide started and mlcalc imported here: the fallback (no snapshot, another wheel, a
//             restore that fails), and what `?snapshot=0` on this script's address asks for (tests).
// Either way the wheel is unpacked into Python's file system: a snapshot holds the heap, not the
// files, and mlcalc reads its data files (mlcalc/data/*.json) when first needed.
//
// Messages in: {id, key, values, changed[, initial, search]} (a change; with the page's own values
// and its query, the answer also holds the new query) or {id, open: true, key, initial, search} (a page
// opened from a link) or {id, warm: true, key, values, initial, search} (the page's warm-up: a calculator
// computed at the values it shows, the answer not sent back); out: {ready, timings} | {failed: reason} |
// {id, started} (a computation began: the page tells a busy worker from a dead one) | {id, result: JSON
// text, python: ms in Python} | {id, warmed: true, python: ms} | {id, skipped: true} (a warm-up message
// that a reader's message overtook: not computed) | {id, fatal: reason} (the page then starts a fresh
// worker). Python never raises here: mlcalc.live turns every error into {"ok": false, "error": ...}.
//
// The warm-up yields to the reader: a warm-up message waits WARM_YIELD_MS before it runs, and is skipped if
// any other message arrived meanwhile (a change sent just after it is computed first, and the warm-up slice
// is dropped, not run after it). (A zero-delay timer was seen to run before a message already sent.)
const WARM_YIELD_MS = 20;
const base = new URL("./", import.meta.url);
const params = new URL(self.location.href).searchParams;
const FILES = {
  loader: ["vendor/pyodide/pyodide.mjs", "Pyodide's loader"],
  runtime: ["vendor/pyodide/pyodide.asm.mjs", "Pyodide's runtime script"],
  wasm: ["vendor/pyodide/pyodide.asm.wasm", "Pyodide's WebAssembly runtime"],
  stdlib: ["vendor/pyodide/python_stdlib.zip", "Python's standard library for Pyodide"],
  lock: ["vendor/pyodide/pyodide-lock.json", "Pyodide's package list"],
  wheel: ["vendor/mlcalc/mlcalc.whl", "the wheel of mlcalc"],
};
const url = (name) => new URL(FILES[name][0], base).href;
const where = (name) => `${FILES[name][1]} (_static/${FILES[name][0]})`;

let runWidgetsJson = null;
let openWidgetsJson = null;
// Milliseconds on this worker's clock; origin (its performance.timeOrigin) puts them on the page's clock.
const timings = { how: "cold", origin: performance.timeOrigin };

// What could not be loaded, named: each file Python needs, asked for again (only after a failure).
async function missing(names) {
  const out = [];
  for (const name of names) {
    try {
      const r = await fetch(url(name), { method: "HEAD", cache: "no-store" });
      if (!r.ok) out.push(`${where(name)}: HTTP ${r.status}`);
    } catch (err) {
      out.push(`${where(name)}: blocked or unreachable`);
    }
  }
  return out;
}

async function failure(err, names) {
  const gone = await missing(names);
  const reason = String((err && err.message) || err).split("\n")[0].slice(0, 300);
  return new Error(gone.length ? `could not load ${gone.join("; ")}` : reason);
}

// The page is told once why Python did not start.
let reported = false;
function fail(err) {
  if (reported) return;
  reported = true;
  self.postMessage({ failed: String((err && err.message) || err) });
}

// A failure inside Pyodide's loader that rejects nothing we await (a file it fetches itself, blocked)
// still reaches the page, with the file named.
self.addEventListener("unhandledrejection", (event) => {
  event.preventDefault(); // reported to the page as a message, not as an uncaught error
  if (!runWidgetsJson) failure(event.reason, Object.keys(FILES)).then(fail);
});

async function bytes(name) {
  let r;
  try {
    r = await fetch(url(name));
  } catch (err) {
    throw new Error(`could not load ${where(name)}: blocked or unreachable`);
  }
  if (!r.ok) throw new Error(`could not load ${where(name)}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// The files of a zip archive (the wheel), inflated by the browser (DecompressionStream): {name: bytes}.
// After a restore they are written into Python's file system from here: Pyodide's unpackArchive would
// run Python's zipfile, whose code the restored interpreter has not run yet (about a second more).
async function unzip(buf) {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let end = buf.length - 22;
  while (end >= 0 && v.getUint32(end, true) !== 0x06054b50) end--;
  if (end < 0) throw new Error("the wheel is not a zip archive");
  const count = v.getUint16(end + 10, true);
  let p = v.getUint32(end + 16, true);
  const names = new TextDecoder();
  const jobs = [];
  for (let i = 0; i < count; i++) {
    if (v.getUint32(p, true) !== 0x02014b50) throw new Error("the wheel's zip directory is damaged");
    const method = v.getUint16(p + 10, true);
    const size = v.getUint32(p + 20, true);
    const nameLength = v.getUint16(p + 28, true);
    const local = v.getUint32(p + 42, true);
    const name = names.decode(buf.subarray(p + 46, p + 46 + nameLength));
    p += 46 + nameLength + v.getUint16(p + 30, true) + v.getUint16(p + 32, true);
    if (name.endsWith("/")) continue;
    const start = local + 30 + v.getUint16(local + 26, true) + v.getUint16(local + 28, true);
    const data = buf.subarray(start, start + size);
    if (method === 0) jobs.push(Promise.resolve([name, data]));
    else if (method === 8) {
      const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
      jobs.push(new Response(stream).arrayBuffer().then((b) => [name, new Uint8Array(b)]));
    } else throw new Error(`${name}: zip method ${method}`);
  }
  return Object.fromEntries(await Promise.all(jobs));
}

// The snapshot and its record, or null (then Python starts cold). Never throws. The snapshot's bytes are a promise:
// their fetch starts as soon as the record names the file (the wheel's digest is checked meanwhile), and Pyodide's
// runtime (pyodide.asm.wasm, fetched and compiled) loads while they arrive (loadPyodide awaits _loadSnapshot only
// before it instantiates). Before 2026-11-28 the runtime was asked for only once all 31.5 MB had come: measured on
// 2 busy cores, the wasm was fetched and compiled 0.15-0.65 s after the snapshot, on the path to live, every page.
async function snapshotFor(recordPromise, wheelPromise, version) {
  try {
    const record = await recordPromise;
    if (!record || record.pyodide !== version || !record.file) return null;
    const stop = new AbortController();
    const response = fetch(new URL(`vendor/mlcalc/${record.file}`, base), { signal: stop.signal });
    response.catch(() => {});
    const wheel = await wheelPromise;
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", wheel));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    if (hex !== record.wheel_sha256) { // made for another wheel: not this mlcalc
      stop.abort();
      return null;
    }
    const files = typeof DecompressionStream === "function" && Array.isArray(record.rewrite) ? unzip(wheel).catch(() => null) : null;
    const bytes = response.then(async (r) => {
      if (!r.ok) throw new Error(`the snapshot (_static/vendor/mlcalc/${record.file}): HTTP ${r.status}`);
      const out = new Uint8Array(await r.arrayBuffer());
      timings.fetched = performance.now();
      return out;
    });
    bytes.catch(() => {}); // awaited by loadPyodide; a failure there starts Python cold
    return { bytes, record, files };
  } catch (err) {
    return null;
  }
}

const ready = (async () => {
  timings.start = performance.now();
  // The small files first, all at once: the loader, the wheel, the snapshot's record.
  const loaderPromise = import(url("loader"));
  loaderPromise.catch(() => {}); // awaited below
  const wheelPromise = bytes("wheel");
  wheelPromise.catch(() => {}); // awaited below; a failure is reported there
  const recordPromise = params.get("snapshot") === "0" ? Promise.resolve(null)
    : fetch(new URL("vendor/mlcalc/snapshot.json", base)).then((r) => (r.ok ? r.json() : null)).catch(() => null);
  let pyodideModule;
  try {
    pyodideModule = await loaderPromise;
  } catch (err) {
    throw await failure(err, ["loader"]);
  }
  timings.loader = performance.now();
  const { loadPyodide, version } = pyodideModule;
  // As scripts/make_snapshot.mjs starts the Python it snapshots: PYTHONOPTIMIZE=2 keeps docstrings out of the heap.
  const config = { indexURL: new URL("vendor/pyodide/", base).href, stdout: () => {}, stderr: () => {},
                   env: { HOME: "/home/pyodide", PYTHONOPTIMIZE: "2" } };
  // Without the wheel there is nothing to run: its failure is reported at once, before Python loads.
  const [snapshot] = await Promise.all([snapshotFor(recordPromise, wheelPromise, version), wheelPromise]);
  timings.checked = performance.now();
  let pyodide = null;
  if (snapshot) {
    try {
      pyodide = await loadPyodide({ ...config, _loadSnapshot: snapshot.bytes });
      timings.how = "snapshot";
    } catch (err) {
      timings.snapshotError = String((err && err.message) || err).slice(0, 200);
      pyodide = null; // a snapshot that does not restore (or did not come): start cold
    }
  }
  if (!pyodide) {
    try {
      pyodide = await loadPyodide(config);
    } catch (err) {
      throw await failure(err, ["runtime", "wasm", "stdlib", "lock"]);
    }
  }
  timings.pyodide = performance.now();
  const files = timings.how === "snapshot" ? await snapshot.files : null;
  if (files) {
    // The wheel's files the snapshot's heap does not hold (its record lists them), written from here.
    const site = snapshot.record.site_packages;
    for (const name of snapshot.record.rewrite) {
      const data = files[name];
      if (!data) continue;
      const path = `${site}/${name}`;
      pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      pyodide.FS.writeFile(path, data);
    }
  } else {
    pyodide.unpackArchive(await wheelPromise, "wheel");
  }
  timings.wheel = performance.now();
  // After a restore the modules are already imported (these lines only look them up).
  runWidgetsJson = pyodide.runPython("import mlcalc.calculators, mlcalc.live\nmlcalc.live.run_widgets_json");
  openWidgetsJson = pyodide.runPython("mlcalc.live.open_widgets_json");
  timings.imported = performance.now();
})();

ready.then(
  () => self.postMessage({ ready: true, timings }),
  fail,
);

let readerMessages = 0; // messages that are not the warm-up's, as they arrive

self.onmessage = async (event) => {
  const { id, key, values, changed, initial, search, open, warm } = event.data || {};
  if (!warm) readerMessages += 1;
  const seen = readerMessages;
  try {
    await ready;
  } catch (err) {
    self.postMessage({ id, fatal: String((err && err.message) || err) });
    return;
  }
  if (warm) {
    await new Promise((resolve) => setTimeout(resolve, WARM_YIELD_MS)); // a message sent meanwhile goes first
    if (readerMessages !== seen) {
      self.postMessage({ id, skipped: true });
      return;
    }
  }
  self.postMessage({ id, started: true });
  try {
    const page = JSON.stringify(initial || {});
    const t0 = performance.now();
    const result = open
      ? openWidgetsJson(String(key), String(search || ""), page)
      : runWidgetsJson(String(key), JSON.stringify(values || {}), String(changed || ""), initial ? page : "", String(search || ""));
    // python: ms the call took in Python here (the page's benchmark splits a change's time with it)
    if (warm) self.postMessage({ id, warmed: true, python: performance.now() - t0 });
    else self.postMessage({ id, result, python: performance.now() - t0 });
  } catch (err) {
    // Only a broken interpreter gets here (Python itself catches everything).
    self.postMessage({ id, fatal: String((err && err.message) || err) });
  }
};
