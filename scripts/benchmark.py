"""Measure how fast the book is for its readers, and write the figures to benchmarks/results.json.

    python scripts/benchmark.py                 # everything (about 10 minutes on 2 cores)
    python scripts/benchmark.py --only widgets  # one part: widgets, lab, build, pages, site
    python scripts/benchmark.py --only site --html _build/html   # the site part on a site already built

What it measures (a benchmark, not a test: it fails only if something does not work):

widgets  Widget update latency in Python: every CalcWidget subclass in mlcalc.widgets is
         built with its defaults, its first dropdown or number control is switched back and
         forth between two valid values, and each switch (compute + view: the text, the table
         and the Vega-Lite chart's spec, written into the widgets) is timed; median and 90th
         percentile per calculator.
lab      The same in the browser, on a live JupyterLab: each chapter notebook is opened and
         run; for each calculator on it, the first dropdown or number box is switched back
         and forth and the time from the change event to the last change of its output
         area in the page (kernel round trip and redraw included) is timed.
build    A clean build of the whole book (jupyter-book build -W -n --keep-going into a
         temporary copy of the repository; it renders the notebooks' committed outputs, which
         nbval checks), then a rebuild with no change.
pages    For each page of that build, served on localhost and loaded in headless Chromium
         with an empty cache: the bytes the browser loads, and the time until every widget
         is rendered and every formula typeset (median of three loads). The bytes of the
         in-browser Python (Pyodide and the mlcalc wheel, loaded only once a calculator is in
         view) are counted apart.
site     The live calculators on the static site, served on localhost as `make serve` serves it
         (scripts/serve.py: gzip, cache headers): for each page with calculators, from navigation
         (empty cache) to live (Python ready in the page's worker), median of --loads, and from
         navigation to live on the next chapter in the same browser (its HTTP cache warm: a reader's
         next page). Beside each page, in the same run, a bare Pyodide page served by the same
         server: a page that starts Pyodide cold in a worker, loads the same mlcalc wheel and imports
         it, and nothing else (empty cache, then again with the cache warm); the ratios of the medians
         are what the README's Speed section shows. Then for each calculator,
         its first control that takes a valid other value is switched back and forth through its
         widget model, and the time from the change to the redrawn output (result from the worker,
         text written, chart drawn by vega-embed, next frame painted) is timed: median and p90.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import gzip
import http.server
import io
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TARGET_WIDGET_MS = 100.0
TARGET_SITE_LIVE_S = 3.0
TARGET_SITE_CHANGE_P90_MS = 50.0
# Navigation to live against a bare Pyodide page measured in the same run (issue 21): the first chapter
# at most 1.2x it, the next chapter at most 1.0x (the snapshot should make it faster than bare).
TARGET_SITE_FIRST_RATIO = 1.2
TARGET_SITE_NEXT_RATIO = 1.0
TARGET_CLEAN_BUILD_S = 180.0
TARGET_REBUILD_S = 10.0


# --- machine ---------------------------------------------------------------------------


def machine() -> dict:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gib = 0.0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gib = int(line.split()[1]) * 1024 / 2**30
    chromium = ""
    with contextlib.suppress(Exception):
        chromium = subprocess.run(
            [os.environ.get("CHROMIUM", "/usr/bin/chromium"), "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_gib, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "chromium": chromium,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _summary(samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered), 1), "p90_ms": round(p90, 1), "n": len(ordered)}


# --- widgets, in Python ----------------------------------------------------------------


def calculator_classes() -> list[type]:
    """Every calculator widget: the classes :mod:`mlcalc.widgets` makes from the registry, by calculator key."""
    import mlcalc.widgets as pkg

    found = [getattr(pkg, name) for name in pkg.__all__ if getattr(getattr(pkg, name), "calc", None) is not None]
    return sorted(found, key=lambda c: c.calc.key)


def _alternatives(control) -> list:
    """Other valid-looking values for a control: options of a dropdown, nearby numbers."""
    import ipywidgets as w

    value = control.value
    if isinstance(control, (w.Dropdown, w.ToggleButtons, w.RadioButtons, w.Select)):
        values = [v[1] if isinstance(v, tuple) else v for v in control.options]
        return [v for v in values if v != value]
    if isinstance(control, w.Checkbox):
        return [not value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = getattr(control, "min", None), getattr(control, "max", None)
        step = getattr(control, "step", None) or 1
        cands = [value * 2, value / 2, value + step, value - step] if value else [1, 2]
        if isinstance(value, int):
            cands = [int(round(c)) for c in cands]
        return [c for c in cands if c != value and (lo is None or c >= lo) and (hi is None or c <= hi)]
    return []


def _controls_in_order(calc) -> list:
    import ipywidgets as w

    preferred = (w.Dropdown, w.FloatText, w.IntText, w.BoundedFloatText, w.BoundedIntText)
    inputs = list(calc._controls.values()) if hasattr(calc, "_controls") else list(calc._inputs)
    return [c for c in inputs if isinstance(c, preferred)] + [c for c in inputs if not isinstance(c, preferred)]


def bench_widgets_python(repeats: int) -> dict:
    results = {}
    sink = io.StringIO()
    for cls in calculator_classes():
        name = f"{cls.calc.key.split('.', 1)[0]}.{cls.__name__}"
        try:
            with contextlib.redirect_stdout(sink):
                calc = cls()
        except TypeError as err:
            results[name] = {"error": f"cannot be built with its defaults: {err}"}
            continue
        chosen = None
        for control in _controls_in_order(calc):
            original = control.value
            for alt in _alternatives(control):
                with contextlib.redirect_stdout(sink):
                    control.value = alt
                ok = calc.last_error == ""
                with contextlib.redirect_stdout(sink):
                    control.value = original
                if ok:
                    chosen = (control, original, alt)
                    break
            if chosen:
                break
        if not chosen:
            results[name] = {"error": "no control could be changed to a valid value"}
            continue
        control, a, b = chosen
        samples = []
        for i in range(repeats):
            new = b if i % 2 == 0 else a
            with contextlib.redirect_stdout(sink):
                t0 = time.perf_counter()
                control.value = new
                samples.append((time.perf_counter() - t0) * 1000)
            sink.seek(0)
            sink.truncate()
        desc = getattr(control, "description", "") or type(control).__name__
        results[name] = {"control": desc, "values": [repr(a), repr(b)], **_summary(samples)}
        calc.close()
    return results


# --- widgets, in the browser on a live JupyterLab ----------------------------------------

# Switch control `index` of calculator `calc` to `value`; resolve to the ms from the change
# event to the last mutation of the calculator's output area (or null if nothing changed).
_TIMED_CHANGE = """async ([calc, index, kind, value, timeoutMs]) => {
  const sig = () => Array.from(calc.querySelectorAll('.widget-output, .mlcalc-view-text')).map(o =>
      o.innerText + '|' + Array.from(o.querySelectorAll('img')).map(i => i.src.length + i.src.slice(-120)).join(',')
      + '|' + Array.from(o.querySelectorAll('svg')).map(s => s.innerHTML.length + s.textContent.slice(0, 400)).join(',')).join('||');
  const control = kind === 'click' ? calc.querySelectorAll('.widget-toggle-buttons button')[value]
                                   : calc.querySelectorAll('select, input[type=number]')[index];
  const before = sig();
  let last = 0;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(calc, {childList: true, subtree: true, characterData: true, attributes: true});
  const t0 = performance.now();
  if (kind === 'click') {
    control.click();
  } else {
    if (kind === 'index') { control.selectedIndex = value; } else { control.value = String(value); }
    control.dispatchEvent(new Event('change', {bubbles: true}));
  }
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  while (sig() === before) {
    if (performance.now() - t0 > timeoutMs) { observer.disconnect(); return null; }
    await sleep(2);
  }
  // The output has changed; wait until it has been quiet for 300 ms (the redraw is complete).
  while (performance.now() - last < 300) { await sleep(20); }
  observer.disconnect();
  return last - t0;
}"""


def _toggle_latency(page, calc, handle, repeats: int) -> dict | None:
    """For a calculator with no dropdown or number box: click between two buttons of its first toggle group."""
    group = calc.evaluate("""c => {
      const all = Array.from(c.querySelectorAll('.widget-toggle-buttons button'));
      if (!all.length) return null;
      const first = all[0].closest('.widget-toggle-buttons');
      const mine = all.map((b, i) => [b, i]).filter(([b]) => b.closest('.widget-toggle-buttons') === first);
      const active = mine.find(([b]) => b.classList.contains('mod-active'));
      const other = mine.find(([b]) => !b.classList.contains('mod-active'));
      return active && other ? {active: active[1], other: other[1], label: other[0].innerText} : null;
    }""")
    if not group:
        return None
    samples = []
    for r in range(repeats):
        ms = page.evaluate(_TIMED_CHANGE, [handle, 0, "click", group["other"] if r % 2 == 0 else group["active"], 15_000])
        if ms is not None:
            samples.append(ms)
    return {"control": f"toggle button ({group['label'].strip()})", **_summary(samples)} if samples else None


def bench_widgets_lab(repeats: int, match: str = "") -> dict:
    from playwright.sync_api import sync_playwright

    from conftest import CHROMIUM, CHROMIUM_ARGS, JupyterLab, chapter_notebooks
    from test_live_jupyter import candidate_changes, open_and_run

    results = {}
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="mlcalc-bench-lab-"))
    lab = JupyterLab(workdir)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for notebook in [nb for nb in chapter_notebooks() if match in str(nb)]:
                rel = str(notebook.relative_to(ROOT / "notebooks"))
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                try:
                    run = open_and_run(page, lab, notebook)
                    if not run["ok"]:
                        results[rel] = {"error": f"Run All failed: {run['errors']}"}
                        continue
                    # Top-level calculators only (a calculator inside another is measured with it).
                    calcs = page.locator(".jp-Notebook .mlcalc-calculator:not(.mlcalc-calculator .mlcalc-calculator)")
                    for k in range(calcs.count()):
                        calc = calcs.nth(k)
                        calc.scroll_into_view_if_needed()
                        handle = calc.element_handle()
                        controls = calc.locator("select, input[type=number]")
                        entry = {"error": "no dropdown or number box"}
                        for i in range(min(controls.count(), 3)):
                            control = controls.nth(i)
                            original = ("index", control.evaluate("el => el.selectedIndex")) if control.evaluate(
                                "el => el.tagName") == "SELECT" else ("number", control.input_value())
                            for kind, value in candidate_changes(control)[:4]:
                                first = page.evaluate(_TIMED_CHANGE, [handle, i, kind, value, 15_000])
                                if first is None or calc.evaluate(
                                        "c => Array.from(c.querySelectorAll('.mlcalc-error')).some(e => e.innerText.trim())"):
                                    page.evaluate(_TIMED_CHANGE, [handle, i, original[0], original[1], 5_000])
                                    continue
                                samples = [first]
                                for r in range(1, repeats):
                                    kv = original if r % 2 == 1 else (kind, value)
                                    ms = page.evaluate(_TIMED_CHANGE, [handle, i, kv[0], kv[1], 15_000])
                                    if ms is not None:
                                        samples.append(ms)
                                label = control.evaluate(
                                    "el => (el.closest('.widget-inline-hbox') || el.parentElement).innerText.split('\\n')[0]")
                                entry = {"control": label.strip(), **_summary(samples)}
                                break
                            if "median_ms" in entry:
                                break
                        if "median_ms" not in entry:
                            entry = _toggle_latency(page, calc, handle, repeats) or entry
                        results[f"{rel} #{k + 1}"] = entry
                finally:
                    context.close()
                    lab.shutdown_kernels()
            browser.close()
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


# --- build ------------------------------------------------------------------------------


def _copy_repository(dest: pathlib.Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for raw in files:
        if not raw:
            continue
        rel = pathlib.Path(raw.decode())
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # The site's third-party scripts (a build input fetched once, not part of the timing).
    vendor = ROOT / "_vendor"
    if vendor.exists():
        (dest / "_vendor").symlink_to(vendor.resolve())


def run_build(cmd: list[str], workdir: pathlib.Path, env: dict) -> tuple[float, int, list[tuple[float, str]]]:
    """Run a build; return seconds, return code, and its output lines with the second each arrived."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = [(round(time.perf_counter() - t0, 1), line.rstrip()) for line in proc.stdout]
    proc.wait()
    return time.perf_counter() - t0, proc.returncode, lines


def execution(lines: list[tuple[float, str]]) -> dict:
    """Seconds spent executing notebooks (as reported), and the longest gap between two output lines."""
    executed = [float(x) for _, line in lines for x in re.findall(r"Executed notebook in ([0-9.]+) seconds", line)]
    gaps = [(b[0] - a[0], a[1][:160]) for a, b in zip(lines, lines[1:])]
    gap = max(gaps, default=(0.0, ""))
    return {"notebooks_s": round(sum(executed), 1), "slowest_notebook_s": max(executed, default=0.0),
            "longest_silence_s": round(gap[0], 1), "silence_after": gap[1]}


def bench_fresh_clones(n: int, log_dir: pathlib.Path | None = None) -> dict:
    """``n`` clean strict builds one after another, each from a fresh ``git clone`` of this checkout's HEAD
    (the newcomer's path: the build-stall soak test). Same venv; _vendor (fetched once) is linked in."""
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    runs = []
    for i in range(n):
        with tempfile.TemporaryDirectory(prefix="mlcalc-fresh-clone-") as tmp:
            clone = pathlib.Path(tmp) / "repo"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True)  # the same commit every time
            if (ROOT / "_vendor").exists():
                (clone / "_vendor").symlink_to((ROOT / "_vendor").resolve())
            cmd = [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", ".", "-W", "-n", "--keep-going"]
            seconds, code, lines = run_build(cmd, clone, dict(os.environ, PYTHONPATH=str(clone)))
            run = {"seconds": round(seconds, 1), "ok": code == 0, **execution(lines),
                   "load_average": [round(x, 2) for x in os.getloadavg()]}
            runs.append(run)
            print(f"fresh clone {i + 1}/{n}: {run['seconds']} s, ok={run['ok']}, longest silence "
                  f"{run['longest_silence_s']} s, slowest notebook {run['slowest_notebook_s']} s", flush=True)
            if log_dir is not None:
                log_dir.mkdir(parents=True, exist_ok=True)
                (log_dir / f"build-{i + 1}.log").write_text("\n".join(f"{t:7.1f} {line}" for t, line in lines) + "\n")
    return {"runs": runs, "all_ok": all(r["ok"] for r in runs),
            "longest_silence_s": max(r["longest_silence_s"] for r in runs),
            "slowest_notebook_s": max(r["slowest_notebook_s"] for r in runs)}


def bench_build(workdir: pathlib.Path, runs_wanted: int = 2) -> dict:
    """Clean builds (``runs`` of them, _build removed before each), then one rebuild with no change."""
    _copy_repository(workdir)
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(workdir), "-W", "-n", "--keep-going"]
    env = dict(os.environ, PYTHONPATH=str(workdir))

    def build() -> tuple[float, int, list[tuple[float, str]]]:
        return run_build(cmd, workdir, env)

    out: dict = {}
    runs = []
    for _ in range(runs_wanted):
        shutil.rmtree(workdir / "_build", ignore_errors=True)
        seconds, code, lines = build()
        runs.append({"seconds": round(seconds, 1), **execution(lines)})
        if code != 0:
            out["clean_build"] = {"seconds": round(seconds, 1), "ok": False, "runs": runs,
                                  "log_tail": "\n".join(line for _, line in lines[-40:])}
            return out
    out["clean_build"] = {"seconds": statistics.median(r["seconds"] for r in runs), "ok": True, "runs": runs}
    seconds, code, _ = build()
    out["no_change_rebuild"] = {"seconds": round(seconds, 1), "ok": code == 0}
    out["pages"] = len([p for p in (workdir / "_build" / "html").rglob("*.html") if "_static" not in p.parts])
    out["notebooks"] = len(list((workdir / "notebooks").rglob("*.ipynb")))
    return out


# --- pages ------------------------------------------------------------------------------

_READY = """() => {
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  const rendered = views.filter(s => s.previousElementSibling && s.previousElementSibling.classList.contains('widget-subarea')
                                     && s.previousElementSibling.children.length > 0).length;
  const math = Array.from(document.querySelectorAll('.math'));
  const typeset = math.filter(m => m.querySelector('mjx-container')).length;
  return rendered === views.length && typeset === math.length ? {t: performance.now(), views: views.length} : false;
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


def bench_pages(html_dir: pathlib.Path, loads: int) -> dict:
    from playwright.sync_api import sync_playwright

    from conftest import CHROMIUM, CHROMIUM_ARGS, toc_docnames

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    results = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for docname in toc_docnames():
                weights, weights_gz, python_gz, ready_ms, load_ms, views = [], [], [], [], [], 0
                for _ in range(loads):
                    context = browser.new_context(viewport={"width": 1280, "height": 900})  # empty cache
                    page = context.new_page()
                    sizes: list[int] = []
                    gzipped: list[int] = []
                    python: list[int] = []

                    def finished(req, sizes=sizes, gzipped=gzipped, python=python):
                        with contextlib.suppress(Exception):
                            s = req.sizes()
                            sizes.append(s["responseBodySize"] + s["responseHeadersSize"])
                            body = req.response().body()
                            kind = req.response().headers.get("content-type", "")
                            textual = any(t in kind for t in ("text", "javascript", "json", "svg", "xml"))
                            size = (len(gzip.compress(body, 6)) if textual or req.url.endswith((".wasm", ".whl", ".zip")) else len(body))
                            gzipped.append(size + s["responseHeadersSize"])
                            if re.search(r"/vendor/(pyodide|mlcalc)/|mlcalc-worker", req.url):
                                python.append(size + s["responseHeadersSize"])

                    page.on("requestfinished", finished)
                    page.goto(f"{base}/{docname}.html", wait_until="load", timeout=60_000)
                    ready = page.wait_for_function(_READY, timeout=60_000, polling=20).json_value()
                    page.wait_for_load_state("networkidle", timeout=60_000)
                    nav = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
                    weights.append(sum(sizes))
                    weights_gz.append(sum(gzipped) - sum(python))
                    python_gz.append(sum(python))
                    ready_ms.append(ready["t"])
                    load_ms.append(nav)
                    views = ready["views"]
                    context.close()
                results[docname] = {
                    "bytes": int(statistics.median(weights)),  # as served here (no compression)
                    "bytes_gzip": int(statistics.median(weights_gz)),  # text compressed as a web server would
                    "python_bytes_gzip": int(statistics.median(python_gz)),  # Pyodide + wheel, if a calculator was in view
                    "widgets": views,
                    "load_event_ms": round(statistics.median(load_ms)),
                    "widgets_and_math_ready_ms": round(statistics.median(ready_ms)),
                }
            browser.close()
    finally:
        server.shutdown()
    return results


# --- the live calculators on the static site ---------------------------------------------

# Scroll the first calculator's place into view as soon as the page is parsed (before the widgets
# are drawn), as a reader who opens a link to it would.
_SCROLL_TO_FIRST = """() => {
  const ids = new Set();
  document.querySelectorAll('script[type="application/vnd.jupyter.widget-state+json"]').forEach(t => {
    const state = JSON.parse(t.textContent).state || {};
    for (const [id, m] of Object.entries(state)) if (((m.state || {})._dom_classes || []).includes('mlcalc-calculator')) ids.add(id);
  });
  for (const t of document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')) {
    if (ids.has(JSON.parse(t.textContent).model_id)) { t.parentElement.scrollIntoView(); return true; }
  }
  return false;
}"""

# One change of calculator i's control `key` to `value` through its widget model; resolves to the ms
# from the change to the next painted frame after the output is redrawn (null if nothing came back).
_SITE_CHANGE = """async ([i, key, value, timeoutMs]) => {
  const c = window.mlcalcLive.calculators[i];
  const m = c.controls[key];
  const choice = ['DropdownModel', 'ToggleButtonsModel', 'RadioButtonsModel'].includes(m.get('_model_name'));
  const before = c.requested;
  let resolveShown;
  const shown = new Promise(r => { resolveShown = r; });
  const onShown = () => { if (c.requested > before && c.shown === c.requested) resolveShown(true); };
  c.el.addEventListener('mlcalc:shown', onShown);
  const t0 = performance.now();
  m.set(choice ? 'index' : 'value', value);
  if (c.requested === before) { c.el.removeEventListener('mlcalc:shown', onShown); return null; }
  const done = await Promise.race([shown, new Promise(r => setTimeout(() => r(false), timeoutMs))]);
  c.el.removeEventListener('mlcalc:shown', onShown);
  if (!done) return null;
  await new Promise(r => requestAnimationFrame(() => r()));
  const end = performance.now();
  const t = c.timing || {};
  // Where the time went (the page's own marks, mlcalc-live.js): Python in the worker; the messages to and
  // from it (the answer's JSON parsed included); the text written; the chart drawn; the next frame painted.
  const parts = t.received && t.parsed && t.shown && typeof t.python === "number" ? {
    python: t.python, message: (t.received - t.changed) - t.python + (t.parsed - t.received),
    text: (t.text || t.parsed) - t.parsed, chart: t.shown - (t.text || t.parsed), paint: end - t.shown,
    compile: t.compiled ? t.compiled - (t.text || t.parsed) : 0} : null;
  return {ms: end - t0, ok: !!(c.last && c.last.ok), parts, chart: t.chartHow || "none"};
}"""


def _site_alternatives(control, value) -> list:
    """Other values for a control of a Calc, as its widget model holds them (a choice as an index)."""
    if control.kind in ("choice", "toggle"):
        return [i for i in range(len(control.options)) if i != value]
    if control.kind == "check":
        return [not value]
    if control.kind in ("number", "int", "slider", "int_slider", "log_slider"):
        lo = 10 ** control.min if control.kind == "log_slider" and control.min is not None else control.min
        hi = 10 ** control.max if control.kind == "log_slider" and control.max is not None else control.max
        step = control.step or (1 if control.kind in ("int", "int_slider") else 0.1)
        cands = [value * 2, value / 2, value + step, value - step] if value else [1, 2]
        if control.kind in ("int", "int_slider"):
            cands = [int(round(c)) for c in cands]
        return [c for c in cands if c != value and (lo is None or c >= lo) and (hi is None or c <= hi)]
    return []


# The bare Pyodide page the site is measured beside: Pyodide started cold in a module worker, the same
# mlcalc wheel loaded and imported, nothing else on the page (written next to the site while measured).
_BARE_HTML = """<!doctype html><meta charset="utf-8"><title>bare Pyodide</title>
<script>const w = new Worker("worker.mjs", {type: "module"});
w.onmessage = (e) => { window.bareReady = performance.now(); window.bareError = e.data.error || ""; };</script>"""
_BARE_WORKER = """import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";
try {
  const py = await loadPyodide({ indexURL: new URL("../vendor/pyodide/", import.meta.url).href });
  const whl = await (await fetch(new URL("../vendor/mlcalc/mlcalc.whl", import.meta.url))).arrayBuffer();
  py.unpackArchive(whl, "wheel");
  py.runPython("import mlcalc.calculators, mlcalc.live");
  postMessage({ ready: true });
} catch (err) { postMessage({ error: String(err) }); }"""


def _bare_load(browser, base: str) -> tuple[float, float]:
    """Navigation to Python ready on the bare page: empty cache, then again (cache warm), ms."""
    from conftest import disk_profile

    profile = tempfile.TemporaryDirectory(prefix="mlcalc-bench-profile-")
    context = disk_profile(browser, profile.name, viewport={"width": 1280, "height": 900})
    page = context.pages[0] if context.pages else context.new_page()
    out = []
    try:
        for _ in range(2):
            page.goto(f"{base}/_static/bench-bare/index.html", wait_until="domcontentloaded", timeout=60_000)
            page.wait_for_function("() => window.bareReady", timeout=120_000, polling=20)
            if page.evaluate("() => window.bareError"):
                raise RuntimeError(page.evaluate("() => window.bareError"))
            out.append(page.evaluate("() => window.bareReady"))
    finally:
        context.close()
        profile.cleanup()
    return out[0], out[1]


def bench_site(html_dir: pathlib.Path, loads: int, repeats: int, match: str = "") -> dict:
    from playwright.sync_api import sync_playwright

    from conftest import CHROMIUM, CHROMIUM_ARGS, OFFLINE_ARGS, disk_profile, toc_docnames
    from mlcalc.calc import get

    sys.path.insert(0, str(ROOT / "scripts"))
    import serve  # the server of `make serve`: gzip and cache headers

    bare_dir = html_dir / "_static" / "bench-bare"
    bare_dir.mkdir(parents=True, exist_ok=True)
    (bare_dir / "index.html").write_text(_BARE_HTML)
    (bare_dir / "worker.mjs").write_text(_BARE_WORKER)
    server = serve.make_server(str(html_dir), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pages, calculators, bare = {}, {}, {"first_ms": [], "next_ms": []}
    docnames = [d for d in toc_docnames() if match in d and 'mlcalc-calc-' in (html_dir / f"{d}.html").read_text()]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + OFFLINE_ARGS)
            for n, docname in enumerate(docnames):
                following = docnames[(n + 1) % len(docnames)]
                live_ms, warm_ms, worker, how = [], [], {}, set()
                for load in range(loads):
                    # the bare page, in the same minute (the machine's load changes over a run)
                    first, again = _bare_load(browser, base)
                    bare["first_ms"].append(round(first))
                    bare["next_ms"].append(round(again))
                    # An empty profile on disk: its HTTP cache then keeps the snapshot and the runtime for the next
                    # chapter, and V8 its code cache, as a reader's browser does. (Before 2026-11-28 an incognito
                    # context with context.route("**/*"), which turns Chromium's HTTP cache off: every "next chapter"
                    # fetched all of it again, so the warm column measured a second empty cache.) Only 127.0.0.1 is
                    # reachable (conftest.OFFLINE_ARGS, given to the browser's launch).
                    profile = tempfile.TemporaryDirectory(prefix="mlcalc-bench-profile-")
                    context = disk_profile(browser, profile.name, viewport={"width": 1280, "height": 900})
                    page = context.pages[0] if context.pages else context.new_page()
                    try:
                        # This chapter with an empty cache, then the next chapter in the same browser (a
                        # reader's next page: the site's scripts, Pyodide and its snapshot from the HTTP cache).
                        for cache, doc in (("cold", docname), ("warm", following)):
                            page.goto(f"{base}/{doc}.html", wait_until="domcontentloaded", timeout=60_000)
                            page.wait_for_function("() => window.mlcalcLive && ['live', 'snapshot'].includes(mlcalcLive.state)",
                                                   timeout=120_000, polling=20)
                            live = page.evaluate("() => ({state: mlcalcLive.state, reason: mlcalcLive.reason, t: mlcalcLive.timings})")
                            if live["state"] != "live":
                                pages[docname] = {"error": live["reason"]}
                                break
                            (live_ms if cache == "cold" else warm_ms).append(live["t"]["ready"])
                            worker = live["t"].get("worker") or {}
                            how.add(worker.get("how", "?"))
                        if docname in pages:
                            break
                        if load == loads - 1 and repeats > 0:
                            page.goto(f"{base}/{docname}.html", wait_until="domcontentloaded", timeout=60_000)
                            page.wait_for_function("() => window.mlcalcLive && mlcalcLive.state === 'live' && mlcalcLive.calculators.length",
                                                   timeout=120_000, polling=20)
                            calculators.update(_site_changes(page, docname, repeats, get))
                    finally:
                        context.close()
                        profile.cleanup()
                if live_ms:
                    pages[docname] = {"navigation_to_live_ms": round(statistics.median(live_ms)), "loads": len(live_ms),
                                      "all_ms": [round(x) for x in live_ms],
                                      "warm_cache_navigation_to_live_ms": round(statistics.median(warm_ms)) if warm_ms else None,
                                      "next_chapter": following, "python_started_by": sorted(how),
                                      "pyodide_ready_in_worker_ms": round(worker.get("imported", 0) - worker.get("start", 0))}
            browser.close()
    finally:
        server.shutdown()
        shutil.rmtree(bare_dir, ignore_errors=True)
    bare["first_median_ms"] = round(statistics.median(bare["first_ms"])) if bare["first_ms"] else None
    bare["next_median_ms"] = round(statistics.median(bare["next_ms"])) if bare["next_ms"] else None
    return {"pages": pages, "calculators": calculators, "bare_pyodide": bare,
            "served_by": "scripts/serve.py (make serve: gzip, cache headers)",
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def _site_changes(page, docname: str, repeats: int, get) -> dict:
    out = {}
    keys = page.evaluate("() => mlcalcLive.calculators.map(c => c.unsupported ? '' : c.key)")
    for i, key in enumerate(keys):
        name = f"{docname.split('notebooks/', 1)[-1]} #{i + 1} {key}"
        if not key:
            out[name] = {"error": "not connected (older shell)"}
            continue
        page.locator(".mlcalc-calculator").nth(i).scroll_into_view_if_needed()
        values = page.evaluate("(i) => mlcalcLive.calculators[i].values()", i)
        entry = {"error": "no control took a valid other value"}
        for control in get(key).controls:
            original = values[control.key]
            for alt in _site_alternatives(control, original)[:4]:
                first = page.evaluate(_SITE_CHANGE, [i, control.key, alt, 15_000])
                if not first or not first["ok"]:
                    page.evaluate(_SITE_CHANGE, [i, control.key, original, 15_000])
                    continue
                samples, parts, how = [first["ms"]], [first["parts"]], [first["chart"]]
                for r in range(1, repeats):
                    done = page.evaluate(_SITE_CHANGE, [i, control.key, original if r % 2 else alt, 15_000])
                    if done:
                        samples.append(done["ms"])
                        parts.append(done["parts"])
                        how.append(done["chart"])
                entry = {"control": f"{control.label} ({control.kind})", **_summary(samples),
                         "samples_ms": [round(x, 1) for x in samples],
                         "chart_drawn_as": {h: how.count(h) for h in sorted(set(how))}}
                parts = [x for x in parts if x]
                if parts:  # each part's median and p90 over the changes (they do not add up to the whole's p90)
                    entry["parts_ms"] = {k: {"median": _summary([x[k] for x in parts])["median_ms"],
                                             "p90": _summary([x[k] for x in parts])["p90_ms"]} for k in parts[0]}
                break
            if "median_ms" in entry:
                break
        out[name] = entry
    return out


# --- report -----------------------------------------------------------------------------


def _latency_line(label: str, rows: dict) -> str:
    ok = {k: v for k, v in rows.items() if "median_ms" in v}
    if not ok:
        return f"| {label} | no calculator measured | {TARGET_WIDGET_MS:.0f} ms |"
    medians = sorted(v["median_ms"] for v in ok.values())
    worst = max(ok, key=lambda k: ok[k]["median_ms"])
    within = sum(m <= TARGET_WIDGET_MS for m in medians)
    def ms(x: float) -> str:  # sub-millisecond medians keep a decimal (not "0 ms")
        return f"{x:.1f}" if x < 10 else f"{x:.0f}"

    return (f"| {label} | median {ms(statistics.median(medians))} ms over {len(ok)} calculators; "
            f"{within} of {len(ok)} within target; slowest {ms(ok[worst]['median_ms'])} ms ({worst}) | {TARGET_WIDGET_MS:.0f} ms |")


def headline(results: dict) -> str:
    """The summary table of the README."""
    lines = ["| what | measured | target |", "|---|---|---|"]
    if "widgets_python" in results:
        lines.append(_latency_line("widget update in Python (compute + view, chart spec included)", results["widgets_python"]))
    if "widgets_lab" in results:
        lines.append(_latency_line("widget update in JupyterLab (change -> output redrawn in the page)", results["widgets_lab"]))
    if "build" in results:
        b = results["build"]
        runs = [r["seconds"] if isinstance(r, dict) else r for r in b["clean_build"].get("runs", [])]
        runs_text = f" (median of {len(runs)} runs: {', '.join(f'{x:.0f}' for x in runs)} s)" if len(runs) > 1 else ""
        lines.append(f"| clean build of the whole book ({b['notebooks']} notebooks, {b['pages']} pages) | "
                     f"{b['clean_build']['seconds']:.0f} s{runs_text} | {TARGET_CLEAN_BUILD_S:.0f} s |")
        lines.append(f"| rebuild with no change | {b['no_change_rebuild']['seconds']:.1f} s | {TARGET_REBUILD_S:.0f} s |")
    if "pages" in results:
        chapters = {k: v for k, v in results["pages"].items() if v["widgets"]}
        if chapters:
            raw = statistics.median(v["bytes"] for v in chapters.values()) / 1e6
            gz = statistics.median(v.get("bytes_gzip", v["bytes"]) for v in chapters.values()) / 1e6
            ready = [v["widgets_and_math_ready_ms"] for v in chapters.values()]
            lines.append(f"| page weight of a chapter (median of {len(chapters)}) | {raw:.1f} MB as served here, {gz:.1f} MB gzipped | |")
            lines.append(f"| time until a chapter's widgets and math are rendered (localhost, empty cache) | median {statistics.median(ready) / 1e3:.1f} s, at most {max(ready) / 1e3:.1f} s | |")
            python = [v["python_bytes_gzip"] for v in chapters.values() if v.get("python_bytes_gzip")]
            if python:
                lines.append(f"| in-browser Python a chapter adds once a calculator is in view (Pyodide + mlcalc wheel) | {statistics.median(python) / 1e6:.1f} MB gzipped | |")
        prose = {k: v for k, v in results["pages"].items() if not v["widgets"]}
        if prose:
            gz = statistics.median(v.get("bytes_gzip", v["bytes"]) for v in prose.values()) / 1e6
            lines.append(f"| page weight of a prose page (median of {len(prose)}) | {gz:.1f} MB gzipped | |")
    if "site" in results:
        bare = results["site"].get("bare_pyodide") or {}
        for label, field, bare_field, target in (
                ("first chapter, empty cache", "navigation_to_live_ms", "first_median_ms", TARGET_SITE_FIRST_RATIO),
                ("next chapter, cache warm", "warm_cache_navigation_to_live_ms", "next_median_ms", TARGET_SITE_NEXT_RATIO)):
            live = [v[field] for v in results["site"]["pages"].values() if v.get(field)]
            if live:
                ratio = ""
                if bare.get(bare_field):
                    ratio = (f"; {statistics.median(live) / bare[bare_field]:.2f}x a bare Pyodide page "
                             f"({bare[bare_field] / 1e3:.1f} s, same run)")
                lines.append(f"| site: navigation to live calculators ({label}, {len(live)} pages) | median "
                             f"{statistics.median(live) / 1e3:.1f} s, at most {max(live) / 1e3:.1f} s{ratio} | "
                             f"<= {target}x bare |")
        ok = {k: v for k, v in results["site"]["calculators"].items() if "p90_ms" in v}
        if ok:
            p90 = sorted(v["p90_ms"] for v in ok.values())
            worst = max(ok, key=lambda k: ok[k]["p90_ms"])
            within = sum(x <= TARGET_SITE_CHANGE_P90_MS for x in p90)
            lines.append(f"| site: change -> output redrawn in the page (p90 per calculator) | median p90 {statistics.median(p90):.0f} ms over "
                         f"{len(ok)} calculators; {within} of {len(ok)} within target; slowest {ok[worst]['p90_ms']:.0f} ms ({worst}) | "
                         f"{TARGET_SITE_CHANGE_P90_MS:.0f} ms |")
    return "\n".join(lines)


def markdown(results: dict) -> str:
    lines = []
    m = results["machine"]
    lines.append(f"Measured {results['date']} (commit {results.get('commit', '?')}) on {m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB), "
                 f"{m['os']}, Python {m['python']}, {m['chromium']}; load average at start {m['load_average_at_start']}"
                 f", at end {m.get('load_average_at_end', '?')}.")
    if results.get("earlier_parts_date"):
        site = results.get("site") or {}
        lines.append("")
        lines.append(f"Measured in parts: the site (live calculators) {site.get('date', results['date'])}, load average at its end "
                     f"{site.get('load_average_at_end', '?')}; the other parts {results['earlier_parts_date']} (commit "
                     f"{results.get('earlier_parts_commit', '?')}).")
    lines += ["", headline(results)]
    if "widgets_python" in results:
        lines += ["", "| calculator (Python: compute + view) | control | median ms | p90 ms |", "|---|---|---:|---:|"]
        for name, r in results["widgets_python"].items():
            if "median_ms" in r:
                lines.append(f"| `{name}` | {r['control']} | {r['median_ms']} | {r['p90_ms']} |")
            else:
                lines.append(f"| `{name}` | {r.get('error')} | | |")
    if "widgets_lab" in results:
        lines += ["", "| calculator in JupyterLab (change -> output redrawn) | control | median ms | p90 ms |", "|---|---|---:|---:|"]
        for name, r in results["widgets_lab"].items():
            if "median_ms" in r:
                lines.append(f"| {name} | {r['control']} | {r['median_ms']} | {r['p90_ms']} |")
            else:
                lines.append(f"| {name} | {r.get('error')} | | |")
    if "site" in results:
        lines += ["", "| calculator on the site (change -> redrawn) | control | median ms | p90 ms "
                  "| median ms of its parts: Python / messages / text / chart / paint |", "|---|---|---:|---:|---|"]
        for name, r in results["site"]["calculators"].items():
            if "median_ms" in r:
                parts = r.get("parts_ms") or {}
                split = " / ".join(f"{parts[k]['median']:.0f}" for k in ("python", "message", "text", "chart", "paint")
                                   if k in parts) if parts else ""
                lines.append(f"| {name} | {r['control']} | {r['median_ms']} | {r['p90_ms']} | {split} |")
            else:
                lines.append(f"| {name} | {r.get('error')} | | | |")
        lines += ["", "| page (site) | navigation to live ms, empty cache | next chapter (cache warm) | Python from |", "|---|---:|---:|---|"]
        for name, r in results["site"]["pages"].items():
            lines.append(f"| {name} | {r.get('navigation_to_live_ms', r.get('error'))} | {r.get('warm_cache_navigation_to_live_ms', '')} "
                         f"| {', '.join(r.get('python_started_by', []))} |")
        bare = results["site"].get("bare_pyodide") or {}
        if bare.get("first_ms"):
            lines.append(f"| bare Pyodide page (cold start, same wheel, imported) | {bare['first_median_ms']} | {bare['next_median_ms']} | cold |")
    if "pages" in results:
        lines += ["", "| page (static site, empty cache) | widgets | kB loaded | kB gzipped | load event ms | widgets + math ready ms |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, r in results["pages"].items():
            gz = f"{r['bytes_gzip'] / 1e3:,.0f}" if "bytes_gzip" in r else ""
            lines.append(f"| {name} | {r['widgets']} | {r['bytes'] / 1e3:,.0f} | {gz} | {r['load_event_ms']} | {r['widgets_and_math_ready_ms']} |")
    return "\n".join(lines)


README_START, README_END = "<!-- benchmark:start (scripts/benchmark.py --readme writes this part) -->", "<!-- benchmark:end -->"


def update_readme(readme: pathlib.Path, results: dict) -> None:
    """Replace the README's text between the two benchmark markers with the tables of these results."""
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        raise SystemExit(f"{readme} has no benchmark markers: add the lines\n{README_START}\n{README_END}")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    details = markdown(results).split("\n\n", 2)
    body = [details[0], "", details[1], "", "<details><summary>Every calculator and every page</summary>", "",
            details[2] if len(details) > 2 else "", "", "</details>"]
    readme.write_text(head + README_START + "\n" + "\n".join(body) + "\n" + README_END + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=["widgets", "lab", "build", "pages", "site"],
                        help="run only these parts (repeatable); pages and site need build (or --html)")
    parser.add_argument("--html", type=pathlib.Path, help="pages/site parts: measure this built site instead of a fresh build")
    parser.add_argument("--site-repeats", type=int, default=11, help="value changes per calculator (site)")
    parser.add_argument("--repeats", type=int, default=15, help="value changes per calculator (Python)")
    parser.add_argument("--lab-repeats", type=int, default=7, help="value changes per calculator (JupyterLab)")
    parser.add_argument("--match", default="", help="JupyterLab part: only notebooks whose path contains this")
    parser.add_argument("--builds", type=int, default=2, help="clean builds (the median is reported)")
    parser.add_argument("--loads", type=int, default=3, help="loads per page")
    parser.add_argument("--fresh-clones", type=int, metavar="N",
                        help="only this: N clean builds, each from a fresh git clone (the build-stall soak test)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results.json")
    parser.add_argument("--report", type=pathlib.Path, metavar="JSON", help="only print the tables of an earlier run")
    parser.add_argument("--readme", type=pathlib.Path, metavar="README",
                        help="also write the tables into README between the benchmark markers")
    args = parser.parse_args(argv)
    if args.report:
        results = json.loads(args.report.read_text())
        print(markdown(results))
        if args.readme:
            update_readme(args.readme, results)
        return 0
    if args.fresh_clones:
        out = args.out if args.out != parser.get_default("out") else ROOT / "benchmarks" / "fresh-clones.json"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
        soak = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "commit": commit.strip(), "machine": machine(),
                **bench_fresh_clones(args.fresh_clones, ROOT / "_build" / "fresh-clone-logs")}
        out.write_text(json.dumps(soak, indent=1) + "\n")
        print(f"written to {out}")
        return 0 if soak["all_ok"] else 1
    parts = args.only or ["widgets", "lab", "build", "pages", "site"]
    if ("pages" in parts or "site" in parts) and "build" not in parts and not args.html:
        parts.append("build")

    # One part measured again (--only): the other parts of the last run are kept, each with its date.
    earlier = json.loads(args.out.read_text()) if args.only and args.out.exists() else {}
    if earlier:
        earlier["earlier_parts_date"] = earlier.get("earlier_parts_date") or earlier.get("date")
        earlier["earlier_parts_commit"] = earlier.get("earlier_parts_commit") or earlier.get("commit")
    results: dict = {
        **earlier,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "machine": machine(),
        "targets": {"widget_update_ms": TARGET_WIDGET_MS, "clean_build_s": TARGET_CLEAN_BUILD_S, "no_change_rebuild_s": TARGET_REBUILD_S},
    }
    if "widgets" in parts:
        print("widgets (Python) ...", flush=True)
        results["widgets_python"] = bench_widgets_python(args.repeats)
    if "lab" in parts:
        print("widgets (JupyterLab) ...", flush=True)
        results["widgets_lab"] = bench_widgets_lab(args.lab_repeats, args.match)
    def site_parts(html: pathlib.Path) -> None:
        if "pages" in parts:
            print("pages ...", flush=True)
            results["pages"] = bench_pages(html, args.loads)
        if "site" in parts:
            print("site (live calculators) ...", flush=True)
            results["site"] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                               **bench_site(html, args.loads, args.site_repeats, args.match)}

    if "build" in parts:
        with tempfile.TemporaryDirectory(prefix="mlcalc-bench-build-") as tmp:
            print("clean build and no-change rebuild ...", flush=True)
            results["build"] = bench_build(pathlib.Path(tmp), args.builds)
            if results["build"]["clean_build"]["ok"] and not args.html:
                site_parts(pathlib.Path(tmp) / "_build" / "html")
    if args.html:
        site_parts(args.html.resolve())
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(markdown(results))
    print(f"\nwritten to {args.out}")
    if args.readme:
        update_readme(args.readme, results)
        print(f"tables written into {args.readme}")
    failed = [k for k, v in results.get("build", {}).items() if isinstance(v, dict) and not v.get("ok", True)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
