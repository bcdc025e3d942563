// A Pyodide memory snapshot of the interpreter the site's worker starts: Pyodide's core with the wheel
// of mlcalc unpacked and its calculators imported (book/_static/mlcalc-worker.mjs restores it with
// loadPyodide({_loadSnapshot}) instead of starting Python and importing again: several times faster).
// Made at `make book` (scripts/build_wheel.sh) with Node from the same Pyodide files the site serves.
//   node scripts/make_snapshot.mjs <pyodide folder> <mlcalc.whl> <out snapshot> <out meta.json>
// The snapshot holds the heap, not the file system: the worker writes the wheel's other files again after
// a restore (the record's "rewrite": the data files mlcalc reads when first needed, modules not yet imported). It is bound to this Pyodide build and this wheel: the meta
// file records both (Pyodide's version and the wheel's SHA-256), and the worker starts cold (as without a
// snapshot) when either differs. _makeSnapshot/_loadSnapshot are private options: Pyodide's version is pinned.
import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, wheelPath, outPath, metaPath] = process.argv.slice(2);
if (!metaPath) {
  console.error("usage: node scripts/make_snapshot.mjs <pyodide folder> <mlcalc.whl> <out snapshot> <out meta.json>");
  process.exit(2);
}
const indexURL = resolve(dir) + "/";
const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
const started = Date.now();
// PYTHONOPTIMIZE=2 (as python -OO): no docstrings in the heap. The site's Python never reads one, and with them
// `import mlcalc` filled the 30 MiB a snapshot restores into to within tens of kB (31.53-31.66 MB at its peak, over it
// on some runs: every page then started cold). The worker starts Python with the same setting on both of its paths.
const ENV = { HOME: "/home/pyodide", PYTHONOPTIMIZE: "2" };
const wheel = new Uint8Array(readFileSync(wheelPath));
// Compiling a module from source takes several times its final size in passing (its syntax tree), and the heap a
// snapshot is made of never shrinks: what counts is its peak, not what the modules keep. So the mlcalc modules the site
// imports are compiled first, in a Pyodide of their own that is then dropped, and the snapshot's Python only reads
// their bytecode (as python -OO caches it; "unchecked-hash" files, valid whatever the source files' times); and the
// standard library's modules they bring in (source in Pyodide's zip, compiled at import) are imported first, while the
// heap is emptiest. Measured 2026-11-27 (serving_record split off, no html import): either alone left the peak at
// 29.3 MB of the 31.46 MB, both 27.2 MB. The bytecode files are not in the snapshot (nor in the wheel): a module the
// browser imports later is compiled there from its source, as before.
const { bytecode, stdlib } = await compileWheel();
const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true, env: ENV, stdout: () => {}, stderr: (s) => console.error(s) });
const HEAP_AT_START = pyodide._module.HEAP8.length; // what a restore has room for (30 MiB)
// Into site-packages (a path in the heap's sys.path; the default, the working directory, is file-system state).
const sitePackages = sitePackagesOf(pyodide);
pyodide.unpackArchive(wheel, "wheel", { extractDir: sitePackages });
for (const [path, bytes] of bytecode) {
  pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  pyodide.FS.writeFile(path, bytes);
}
pyodide.FS.writeFile("/tmp/mlcalc.whl", wheel); // (read after the snapshot: the file system is not in it)
// What the worker's Python needs for any page: every calculator registered, the bridge imported. The core
// modules first, one at a time with a collection between: Pyodide restores a snapshot only into the memory
// it starts with (30 MiB; a larger heap fails with "RangeError: offset is out of bounds" and the page starts
// cold), and importing everything in one nested import grew the heap to 36 MiB where this order keeps 30.
for (const name of [...stdlib, ...LEAVES()]) pyodide.runPython(`import ${name}, gc\ngc.collect()`);
pyodide.runPython(IMPORTS());
const startBytes = HEAP_AT_START;
// Opt-in (MLCALC_SNAPSHOT_WARM=1): every calculator run once with its defaults (mlcalc.warm) before the snapshot.
// Off by default: it grows the heap past the 30 MiB Pyodide restores into (37.7 MB), and _loadSnapshot then fails
// ("RangeError: offset is out of bounds"), so the site started cold on every page (measured 2026-11-26).
const warm = process.env.MLCALC_SNAPSHOT_WARM === "1" ? JSON.parse(pyodide.runPython(WARM())) : null;
// The heap's peak: the top of what Python's allocator took from the heap (sbrk only grows), against the heap a restore
// has room for. Printed every time (build_wheel.sh shows it) and recorded in the meta file (tests/scripts/test_snapshot.py).
const peak = typeof pyodide._module._sbrk === "function" ? pyodide._module._sbrk(0) // (Pyodide 314.0.7 exports it)
  : pyodide._module.HEAP8.length;
const heapLine = `import mlcalc's heap peaked at ${mb(peak)} MB of the ${mb(startBytes)} MB (30 MiB) a snapshot restores ` +
                 `into: ${mb(startBytes - peak)} MB to spare`;
if (pyodide._module.HEAP8.length > startBytes) {
  console.error(
    `NO SNAPSHOT: the heap grew from ${startBytes} to ${pyodide._module.HEAP8.length} bytes (${mb(peak)} MB at its ` +
    `peak) while importing what the site's worker imports at start; Pyodide restores a snapshot only into the memory ` +
    `it starts with, ${startBytes} bytes (30 MiB), so every page would start Python cold.\n` +
    "The fix: keep code a page does not need at start (records, checks, measured-run readers, big tables) out of the " +
    "modules imported at start (LEAVES() and IMPORTS() in scripts/make_snapshot.mjs): put it in a module of its own, imported inside the " +
    "function that needs it (as mlcalc/serving_record.py, mlcalc/decode_profile.py), then run " +
    "`bash scripts/build_wheel.sh` again and read the margin it prints.");
  process.exit(1);
}
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(outPath, snapshot);
// The wheel's files the worker writes again after a restore: all but the modules already imported (their
// code is in the heap): the data files mlcalc reads when first needed, modules imported later, metadata.
const files = JSON.parse(pyodide.runPython(`
import json, sys, sysconfig, zipfile
import mlcalc, os
site = os.path.dirname(os.path.dirname(mlcalc.__file__))
loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
names = [n for n in zipfile.ZipFile("/tmp/mlcalc.whl").namelist() if not n.endswith("/")]
json.dumps({"site_packages": site, "rewrite": [n for n in names if f"{site}/{n}" not in loaded],
            "imported": sum(f"{site}/{n}" in loaded for n in names)})
`));
const meta = {
  pyodide: pyodide.version,
  wheel_sha256: createHash("sha256").update(wheel).digest("hex"),
  // this script's own hash: a snapshot made by another version of it (e.g. without the warm-up) is made again
  maker_sha256: createHash("sha256").update(readFileSync(new URL(import.meta.url))).digest("hex"),
  file: "mlcalc.snapshot",
  bytes: snapshot.length,
  site_packages: files.site_packages,
  modules_in_snapshot: files.imported,
  rewrite: files.rewrite,
  imports: IMPORTS(),
  heap_limit_bytes: startBytes,
  heap_peak_bytes: peak,
  warmed: warm ? { calculators: Object.keys(warm).length, seconds: +Object.values(warm).reduce((a, b) => a + b, 0).toFixed(2) } : null,
};
writeFileSync(metaPath, JSON.stringify(meta, null, 1) + "\n");
console.log(`made a Pyodide ${pyodide.version} snapshot of ${(snapshot.length / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s` +
            (warm ? ` (every calculator run once first: ${meta.warmed.seconds} s)` : "") + `; ${heapLine}`);
process.exit(0);

function mb(bytes) {
  return (bytes / 1e6).toFixed(2);
}

function sitePackagesOf(py) {
  return "/" + py.runPython("import sysconfig\nsysconfig.get_paths()['purelib']").replace(/^\/+/, "");
}

// In a Pyodide that is then dropped, the site's imports run once from source: [path, bytes] of each mlcalc module they
// import, compiled as python -OO caches it, and the standard library's modules they bring in, in the order they came.
async function compileWheel() {
  const py = await loadPyodide({ indexURL, env: ENV, stdout: () => {}, stderr: (s) => console.error(s) });
  const site = sitePackagesOf(py);
  py.unpackArchive(wheel, "wheel", { extractDir: site });
  py.runPython(`import sys\n_before = set(sys.modules)`);
  for (const name of LEAVES()) py.runPython(`import ${name}`);
  py.runPython(IMPORTS());
  // (ipaddress, which urllib.parse imports, put 1.1 MB on the peak when it came late, in mlcalc.live)
  const found = JSON.parse(py.runPython(`
new = [m for m in sys.modules if m not in _before]
import importlib.util, json, py_compile
json.dumps({"stdlib": [m for m in new if m.split(".")[0] != "mlcalc"],
            "pyc": [py_compile.compile(f, importlib.util.cache_from_source(f, optimization=2), doraise=True, optimize=2,
                                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                    for f in (getattr(sys.modules[m], "__file__", None) for m in new if m.split(".")[0] == "mlcalc")
                    if f and f.endswith(".py")]})`));
  return { bytecode: found.pyc.map((path) => [path, py.FS.readFile(path)]), stdlib: found.stdlib };
}

function WARM() {
  return "import json, mlcalc.warm\njson.dumps(mlcalc.warm.warm())";
}

// Imported leaf-first before IMPORTS() (see above); a module missing here is still imported by IMPORTS().
function LEAVES() {
  return ["mlcalc._check", "mlcalc.accelerators", "mlcalc.memory", "mlcalc.network", "mlcalc.steptime",
          "mlcalc.serving", "mlcalc.plan", "mlcalc.calc", "mlcalc.charts"];
}

function IMPORTS() {
  return "import mlcalc.calculators, mlcalc.live";
}
