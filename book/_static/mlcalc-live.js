// Live calculators on the static site (only pages with widgets load this; see _config.yml).
//
// 1. At first paint every calculator's chart is drawn with vega-embed from the Vega-Lite spec
//    stored in its Output widget's state (also from file://: this is a classic script).
// 2. Python (Pyodide's core and the pure wheel of mlcalc, both served by the site) starts in a Web
//    Worker (mlcalc-worker.mjs) as the page starts: mlcalc-boot.js, the page's first script, creates it
//    and this script adopts it. The worker restores a memory snapshot of Python with mlcalc imported
//    (made at `make book`), else starts Python cold. Until it answers, a changed calculator's outputs
//    are dimmed (never shown as if they were for the new values).
// 3. On a control change the calculator's control values are collected by key from the embedded
//    widget models, mlcalc.live.run_widgets_json runs in the worker (the same compute and view as
//    in Jupyter: no formula here), and the text, the inline message and the chart are written back.
// Where Python cannot run (file://, no Worker or WebAssembly, the worker failed to start) each
// calculator says it is a snapshot, its controls are disabled, and it says how to get a live one.
// 4. Links: the page address holds the values a reader changed (?plan.train.deadline_days=30&...).
//    Python writes that query after each computation (mlcalc.live.replace_query) and the page puts it
//    in the address with history.replaceState; a page opened with such a query starts Python at once
//    and asks it (mlcalc.live.open_widgets) for the values to set and their result. This script only
//    carries the strings: it never reads a value out of the query.
//
// It reaches into @jupyter-widgets/html-manager (create_view, model.views, BoxView.children_views):
// those are internals, so scripts/fetch_vendor.sh pins html-manager's version.
(function () {
  "use strict";
  var VEGALITE = "application/vnd.vegalite.v5+json";
  var here = document.currentScript && document.currentScript.src;
  var staticRoot = here ? here.slice(0, here.lastIndexOf("/") + 1) : "_static/";
  var TIMEOUT_MS = 20000; // a single computation that takes longer restarts the worker
  // A worker that neither began nor finished a computation in this time while one waits is dead
  // (a computation begins within milliseconds when the worker is idle): it is restarted, the reader is
  // told, and the waiting changes are sent to the new one.
  var DEAD_AFTER_MS = 2500;
  var PASTE_MAX_BYTES = 65536; // mlcalc reads at most 64 KiB of pasted text: a longer paste never travels
  var STALE_AFTER_MS = 120; // outputs dim if a result takes longer than this
  var options = window.mlcalcLiveOptions || {};
  var LOAD_TIMEOUT_MS = options.loadTimeoutMs || 120000; // Python not ready by then: a snapshot, said so
  if (options.deadAfterMs) DEAD_AFTER_MS = options.deadAfterMs;

  var live = (window.mlcalcLive = {
    state: "idle", // idle | loading | live | snapshot
    reason: "", // why a snapshot
    calculators: [],
    history: ["idle"], // the states this page went through (tests read it)
    timings: { start: null, ready: null, script: performance.now() }, // script: when this script began to run
    restarts: 0, // workers started again after one died (tests read it)
    addressPending: false, // a change's page address is still to be written (tests wait for it)
    inPlace: true, // a chart's rows change in place where they can (false: replaced; to compare the two)
    templates: true, // a chart of a known structure takes its compiled template (false: compiled; to compare)
    // charts' specs taken from a checked template (placed: of those, read from the template's places alone), or
    // compiled (tests read it)
    compiles: { template: 0, compiled: 0, placed: 0 },
    notice: "", // what the reader was last told about Python itself (a restart)
    // The warm-up (warmUp below; tests read it): state waiting | running | done | off, the keys computed, the
    // slices the worker skipped for a reader's message, the ms of Python spent.
    warm: { state: options.warm === false ? "off" : "waiting", done: [], skipped: 0, ms: 0, slices: 0 },
    lastChange: 0, // when the reader last changed a value (performance.now(); 0: never)
  });
  function setState(state) {
    live.state = state;
    live.history.push(state);
  }

  function cannotRun() {
    if (location.protocol === "file:") {
      return "this page was opened from a file (file://), where browsers do not start Python";
    }
    if (typeof Worker === "undefined" || typeof WebAssembly !== "object") {
      return "this browser cannot run Python (it lacks Web Workers or WebAssembly)";
    }
    return "";
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function addStyle() {
    var css =
      ".mlcalc-status{order:-1;font-size:.85em;margin:0 0 .35em 0;padding:.15em .5em;border-radius:4px;width:fit-content}" +
      ".mlcalc-status:empty{display:none}" +
      ".mlcalc-status-loading{background:#fff7e0;color:#6b4e00}" +
      ".mlcalc-status-live{background:#e8f5e9;color:#1b5e20}" +
      ".mlcalc-status-snapshot{background:#fdecea;color:#7f1d1d;border:1px solid #f5c2c0}" +
      ".mlcalc-status code{font-size:.95em}" +
      ".mlcalc-view-chart .mlcalc-chart{width:100%}" +
      ".mlcalc-view-chart.mlcalc-drawn .jp-OutputArea{display:none}" +
      ".mlcalc-stale{opacity:.45;transition:opacity .1s}" +
      ".mlcalc-error{color:#b00020}" +
      ".mlcalc-anchor{margin-left:.5em;font-size:.85em;text-decoration:none;opacity:.6}" +
      ".mlcalc-anchor:hover{opacity:1}" +
      ".mlcalc-export{display:flex;gap:.5em;margin:.3em 0}" +
      ".mlcalc-export button{font-size:.85em;padding:.15em .6em;border:1px solid #999;border-radius:4px;background:#f6f6f6;cursor:pointer}" +
      ".mlcalc-export:empty{display:none}";
    var style = document.createElement("style");
    style.textContent = css;
    document.head.appendChild(style);
  }

  // ---------------------------------------------------------------- the worker (Python)

  var engine = null;

  function Engine() {
    this.worker = null;
    this.pending = {}; // id -> {resolve, timer, message, began}
    this.nextId = 1;
    this.ready = null;
    this.heard = 0; // when the worker last sent anything
    this.watch = null; // the timer that looks for a dead worker
  }

  // The worker mlcalc-boot.js started with the page (once), with what it sent meanwhile.
  function bootWorker() {
    var boot = window.mlcalcBoot;
    if (!boot || !boot.worker || boot.adopted) return null;
    boot.adopted = true;
    return boot;
  }

  var WORKER_SCRIPT = "the site's worker script (_static/mlcalc-worker.mjs)";

  Engine.prototype.start = function () {
    var self = this;
    if (this.ready) return this.ready;
    this.ready = new Promise(function (resolve, reject) {
      var worker;
      var boot = bootWorker();
      try {
        worker = boot ? boot.worker : new Worker(staticRoot + "mlcalc-worker.mjs" + (options.snapshot === false ? "?snapshot=0" : ""), { type: "module" });
      } catch (err) {
        reject(new Error("the worker did not start (" + err + ")"));
        return;
      }
      self.worker = worker;
      self.heard = performance.now();
      var isReady = false;
      var slow = setTimeout(function () {
        reject(new Error("Python did not start within " + Math.round(LOAD_TIMEOUT_MS / 1000) + " s"));
      }, LOAD_TIMEOUT_MS);
      worker.onmessage = function (event) {
        if (self.worker !== worker) return; // an old worker, replaced
        self.heard = performance.now();
        var msg = event.data || {};
        if (msg.ready) {
          clearTimeout(slow);
          isReady = true;
          live.timings.worker = msg.timings;
          return resolve();
        }
        if (msg.failed) {
          clearTimeout(slow);
          return reject(new Error(msg.failed));
        }
        var job = self.pending[msg.id];
        if (!job) return;
        if (msg.started) {
          job.began = performance.now();
          // TIMEOUT_MS is a computation's own time: counted from when it began (a change sent while the warm-up's
          // slice or another change ran waited for it; a worker silent meanwhile is the watchdog's).
          clearTimeout(job.timer);
          job.timer = setTimeout(job.expire, TIMEOUT_MS);
          return;
        }
        delete self.pending[msg.id];
        clearTimeout(job.timer);
        if (msg.warmed || msg.skipped) return job.resolve(msg); // the warm-up's (no result: nothing is shown)
        if (job.timing) {
          job.timing.began = job.began;
          job.timing.received = performance.now();
          job.timing.python = msg.python;
        }
        if (msg.fatal) {
          job.resolve({ ok: false, error: "the calculation failed in the browser (" + msg.fatal + "); Python restarts for the next change" });
          self.restart();
        } else {
          var result;
          try {
            result = JSON.parse(msg.result);
          } catch (err) {
            result = { ok: false, error: "the result could not be read (" + err + ")" };
          }
          job.resolve(result);
        }
      };
      worker.onerror = function (event) {
        if (event && event.preventDefault) event.preventDefault();
        if (self.worker !== worker) return;
        if (!isReady) {
          // An error event with no message before Python ran: the script itself did not load.
          clearTimeout(slow);
          reject(new Error(event && event.message ? "the worker failed (" + event.message + ")"
            : "could not load " + WORKER_SCRIPT + ": it is missing, blocked or not served as JavaScript"));
          return;
        }
        self.died("Python stopped in the browser (" + ((event && event.message) || "no reason given") + ")");
      };
      if (boot) {
        // What the worker sent before this script ran (the handlers above replaced mlcalc-boot.js's).
        live.timings.boot = boot.started;
        boot.events.splice(0).forEach(function (e) { (e.type === "error" ? worker.onerror : worker.onmessage)(e.event); });
      }
    });
    return this.ready;
  };

  // The worker died (an error after it started, or silence while a computation waits): a new one
  // starts, the reader is told, and the changes that waited are sent to it.
  Engine.prototype.died = function (why) {
    this.suspect = false;
    var waiting = this.pending;
    this.pending = {};
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.ready = null;
    live.restarts += 1;
    var t0 = performance.now();
    tell("restarting", why + ": it is starting again...");
    var self = this;
    this.start().then(function () {
      tell("restarted", why + "; it was started again (" + ((performance.now() - t0) / 1000).toFixed(1) +
        " s) and the last change recomputed.");
      Object.keys(waiting).forEach(function (id) {
        var job = waiting[id];
        clearTimeout(job.timer);
        if (job.message.warm) job.resolve({ skipped: true }); // the warm-up is not sent again
        else self.send(job.message, job.resolve);
      });
    }, function (err) {
      Object.keys(waiting).forEach(function (id) {
        clearTimeout(waiting[id].timer);
        waiting[id].resolve({ ok: false, error: why + "; it could not be started again: " + err.message });
      });
      goSnapshot(why + "; it could not be started again: " + err.message);
    });
  };

  // Every so often while a computation waits: a worker that has sent nothing since it was asked
  // (no "started", no result) is dead. A busy one sent "started" and gets TIMEOUT_MS.
  Engine.prototype.watchdog = function () {
    var self = this;
    if (this.watch) return;
    this.watch = setInterval(function () {
      var ids = Object.keys(self.pending);
      if (!ids.length) {
        clearInterval(self.watch);
        self.watch = null;
        return;
      }
      var now = performance.now();
      var busy = ids.some(function (id) { return self.pending[id].began; });
      var oldest = Math.min.apply(null, ids.map(function (id) { return self.pending[id].sent; }));
      // Seen twice in a row (a page busy for seconds may run this before the worker's queued answer).
      var silent = !busy && now - Math.max(oldest, self.heard) > DEAD_AFTER_MS;
      if (silent && self.suspect) self.died("Python in the browser stopped answering");
      self.suspect = silent;
    }, 250);
  };

  Engine.prototype.failAll = function (message) {
    var pending = this.pending;
    this.pending = {};
    Object.keys(pending).forEach(function (id) {
      clearTimeout(pending[id].timer);
      pending[id].resolve({ ok: false, error: message });
    });
  };

  // A fresh worker (after a fatal error or a computation that never returned).
  Engine.prototype.restart = function () {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.ready = null;
    live.restarts += 1;
    this.failAll("Python was restarted in the browser; change a value again");
  };

  Engine.prototype.send = function (message, resolve, timing) {
    var self = this;
    var id = this.nextId++;
    var expire = function () {
      if (!self.pending[id]) return;
      delete self.pending[id];
      resolve({ ok: false, error: "this input took longer than " + TIMEOUT_MS / 1000 + " s to compute; Python restarts for the next change" });
      self.restart();
    };
    var timer = setTimeout(expire, TIMEOUT_MS);
    this.pending[id] = { resolve: resolve, timer: timer, expire: expire, message: message, sent: performance.now(), began: 0, timing: timing };
    if (timing) timing.sent = this.pending[id].sent;
    this.worker.postMessage(Object.assign({}, message, { id: id }));
    this.watchdog();
  };

  // One computation: {key, values, changed} (and, for the address, the page's own values `initial`
  // and its query `search`), or {open: true, key, initial, search} for a page opened from a link.
  // `timing`, if given, gets when the message was sent, when Python began and when its answer came
  // (performance.now() ms) and `python`: the ms the call took in the worker.
  Engine.prototype.run = function (key, values, changed, extra, timing) {
    var self = this;
    return this.start().then(function () {
      return new Promise(function (resolve) {
        self.send(Object.assign({ key: key, values: values, changed: changed || "" }, extra || {}), resolve, timing);
      });
    });
  };

  function startEngine() {
    if (live.state === "snapshot") return Promise.reject(new Error(live.reason));
    if (!engine) engine = new Engine();
    if (live.state === "idle") {
      setState("loading");
      live.timings.start = window.mlcalcBoot && !window.mlcalcBoot.adopted ? window.mlcalcBoot.started : performance.now();
      live.calculators.forEach(function (c) { c.showStatus(); });
    }
    return engine.start().then(
      function () {
        if (live.state !== "live") {
          setState("live");
          live.timings.ready = performance.now();
          live.calculators.forEach(function (c) { c.showStatus(); });
          warmSoon(0);
        }
      },
      function (err) {
        if (live.state !== "live") goSnapshot("the live calculators could not start: " + err.message);
        throw err;
      }
    );
  }

  // What the reader is told about Python itself (a restart), on every calculator's status line.
  function tell(kind, text) {
    live.notice = text;
    live.noticeKind = kind;
    live.calculators.forEach(function (c) { c.showStatus(); });
  }

  // ---------------------------------------------------------------- the warm-up

  // Once Python is live, each calculator of the page is computed once in the worker, at the values it shows (the
  // page's own, drawn at the build). The answer is not shown (the page shows it already), but the worker has then
  // paid that calculator's first-run costs (data files read, modules imported), remembers what it computed (the
  // training planner's search of the model the page opens with: going back to it is quick) and has run the page's
  // own code before the reader's first change. It never stands in a reader's way:
  // - one calculator per slice (one computation), sent only while no computation waits in the worker and, after
  //   a reader's change, once no value has changed for WARM_QUIET_MS; a change sent while a slice still waits in
  //   the worker goes first and that slice is dropped (mlcalc-worker.mjs); a change that comes while a slice runs
  //   waits for that one slice;
  // - a calculator the reader changed, or that a link opened, is not warmed (its own change computes it);
  // - its answer is never shown, so the page shows only the page's own results or the reader's changes';
  // - bounded: each calculator of the page at most once (again only if its slice was dropped for a reader's
  //   message), and no slice begins once WARM_BUDGET_MS of Python were spent on it; a slice is one computation,
  //   bounded like any by TIMEOUT_MS. `mlcalcLiveOptions.warm = false` turns it off.
  var WARM_QUIET_MS = 1000;
  var WARM_BUDGET_MS = 5000;
  var warmTimer = null;
  var warmBusy = false;
  function warmSoon(ms) {
    if (live.warm.state === "off") return;
    if (live.warm.state === "done") live.warm.state = "waiting"; // (a calculator connected since: looked at again)
    clearTimeout(warmTimer);
    warmTimer = setTimeout(warmNext, ms || 0);
  }
  function warmNext() {
    warmTimer = null;
    var w = live.warm;
    if (w.state === "off" || warmBusy || live.state !== "live" || !engine || !engine.worker) return;
    var next = live.calculators.filter(function (c) { return !c.unsupported && !c.warmed && !c.requested; })[0];
    if (!next || w.ms >= WARM_BUDGET_MS) {
      w.state = "done";
      return;
    }
    var wait = live.lastChange ? live.lastChange + WARM_QUIET_MS - performance.now() : 0;
    if (Object.keys(engine.pending).length) wait = Math.max(wait, 50); // a computation waits: after it
    if (wait > 0) {
      w.state = "waiting";
      warmSoon(wait);
      return;
    }
    w.state = "running";
    next.warmed = true;
    var values = next.values();
    if (next.oversized(values)) return warmSoon(0); // a paste over what mlcalc reads never travels
    warmBusy = true;
    engine.send({ warm: true, key: next.key, values: values, initial: next.initial, search: location.search }, function (msg) {
      warmBusy = false;
      w.slices += 1;
      if (msg && msg.warmed) {
        w.done.push(next.key);
        w.ms += msg.python || 0;
      } else if (msg && msg.skipped) {
        w.skipped += 1;
        next.warmed = false; // dropped for a reader's message: again later, unless the reader changed it
      }
      warmSoon(0);
    });
  }

  function goSnapshot(reason) {
    setState("snapshot");
    live.reason = reason;
    live.calculators.forEach(function (c) { c.toSnapshot(); });
  }

  // The page address after a change (Python wrote its query), put there once the changes pause (ADDRESS_AFTER_MS
  // after the last one): each history.replaceState made the browser commit a navigation and fetch the favicon again,
  // 10-16 ms of CPU a change between the browser and the page on the 2-core machine (Chrome trace, 2026-11-27), which
  // the next change's drawing then waited for. The last change's address wins; `live.addressPending` is true until it
  // is written (the tests wait for it); the anchor link writes it at once.
  var ADDRESS_AFTER_MS = 300;
  var address = null;
  var addressTimer = null;
  function writeAddress(search, id) {
    live.addressPending = true;
    address = { search: search, hash: id ? "#" + id : null };
    clearTimeout(addressTimer);
    addressTimer = setTimeout(flushAddress, ADDRESS_AFTER_MS);
  }
  function flushAddress() {
    clearTimeout(addressTimer);
    var a = address;
    address = null;
    if (a && a.search !== location.search) history.replaceState(history.state, "", location.pathname + a.search + (a.hash || location.hash));
    live.addressPending = false;
  }
  window.addEventListener("pagehide", flushAddress);

  // The theme's Font Awesome script draws the page's icons as SVG and then watches every change to the page for
  // new ones: each chart redrawn made it search the new SVG (10-15 ms of a change on the 2-core machine, measured
  // 2026-11-27). The page's icons are drawn by the time a reader uses a calculator, and a calculator adds none:
  // from then on it stops watching.
  var iconsQuiet = false;
  function quietIcons() {
    if (iconsQuiet) return;
    iconsQuiet = true;
    try {
      if (window.FontAwesome && typeof window.FontAwesome.noAuto === "function") window.FontAwesome.noAuto();
    } catch (err) { /* the icons keep being watched: slower, not wrong */ }
  }

  // ---------------------------------------------------------------- one calculator

  function classes(model) {
    return (model && model.get && model.get("_dom_classes")) || [];
  }

  function withClass(models, name) {
    return (models || []).filter(function (m) { return classes(m).indexOf(name) >= 0; })[0];
  }

  // Whether the page address names calculator `key` (a parameter "<key>.<control>"): only to start
  // Python at once, or to say a snapshot cannot show the link's values. Python reads the values.
  function linksTo(key) {
    if (!key || !location.search) return false;
    try {
      var prefix = key + ".";
      return Array.from(new URLSearchParams(location.search).keys()).some(function (k) { return k.indexOf(prefix) === 0; });
    } catch (err) {
      return false;
    }
  }

  function viewsOf(model) {
    return Promise.all(Object.keys(model.views || {}).map(function (k) { return model.views[k]; }));
  }

  function Calculator(view) {
    var self = this;
    this.view = view;
    this.el = view.el;
    this.model = view.model;
    var key = classes(this.model).filter(function (c) { return c.indexOf("mlcalc-calc-") === 0; })[0];
    this.key = key ? key.slice("mlcalc-calc-".length) : "";
    var children = this.model.get("children") || [];
    var box = withClass(children, "mlcalc-controls");
    this.message = withClass(children, "mlcalc-message");
    this.text = withClass(children, "mlcalc-view-text");
    this.chart = withClass(children, "mlcalc-view-chart");
    this.controls = {};
    ((box && box.get("children")) || []).forEach(function (m) {
      var k = classes(m).filter(function (c) { return c.indexOf("mlcalc-ctl-") === 0; })[0];
      if (k) self.controls[k.slice("mlcalc-ctl-".length)] = m;
    });
    this.requested = 0; // changes asked for
    this.shown = 0; // changes whose result is on screen (text, message and chart)
    this.last = null; // the last result shown {ok, text, html, chart} or {ok: false, error}
    this.lastValues = null;
    this.spec = null; // the Vega-Lite spec on screen
    this.touched = false;
    this.initial = this.values();
    this.status = document.createElement("div");
    this.status.className = "mlcalc-status";
    this.status.setAttribute("role", "status");
    this.el.insertBefore(this.status, this.el.firstChild);
    // An anchor per calculator (#calc-plan-train): a link to it, and where a shared link scrolls to.
    var id = "calc-" + this.key.replace(/[^A-Za-z0-9_-]/g, "-");
    for (var n = 2; this.key && document.getElementById(id); n++) id = "calc-" + this.key.replace(/[^A-Za-z0-9_-]/g, "-") + "-" + n;
    if (this.key) {
      this.el.id = id;
      var anchor = document.createElement("a");
      anchor.className = "mlcalc-anchor";
      anchor.href = "#" + id;
      anchor.textContent = "# link to this calculator";
      anchor.title = "A link to this calculator with the values it shows";
      anchor.addEventListener("click", function (event) {
        event.preventDefault();
        flushAddress();
        history.replaceState(history.state, "", location.pathname + location.search + "#" + id);
        self.el.scrollIntoView();
      });
      this.el.insertBefore(anchor, this.status.nextSibling);
    }
    // Copy and download buttons for an export (a calculator with an "export" control: the plan).
    this.exportBox = document.createElement("div");
    this.exportBox.className = "mlcalc-export";
    if (this.controls.export) this.el.appendChild(this.exportBox);

    Object.keys(this.controls).forEach(function (k) {
      var m = self.controls[k];
      m.on("change:value change:index", function () { self.changed(k); });
    });
    // First touch starts Python (before the change itself arrives).
    ["pointerdown", "focusin", "keydown"].forEach(function (type) {
      self.el.addEventListener(type, function () { self.touch(); }, { passive: true });
    });
    this.chartView().then(function (el) {
      var stored = (self.chart && self.chart.get("outputs")) || [];
      var spec = stored.length && stored[0].data ? stored[0].data[VEGALITE] : null;
      if (spec && !self.spec) return self.draw(spec, 0);
    }).catch(function (err) { console.warn("mlcalc: chart not drawn:", err); });
    this.unsupported = !this.key || !this.text || !this.message ? "this calculator is not connected to the site's Python yet" : "";
    this.linked = linksTo(this.key); // opened from a link that holds values for this calculator
    if (live.state === "snapshot" || this.unsupported) this.toSnapshot();
    else {
      this.showStatus();
      if (this.linked) this.open();
    }
    this.scrollIfLinked();
  }

  // A page opened at this calculator's anchor, or from a link with values for it: scrolled to it once
  // it is drawn (the browser cannot: the widgets are drawn after the page loaded), and again once its
  // result is in (charts above it may have grown meanwhile), unless the reader has scrolled since.
  Calculator.prototype.scrollIfLinked = function () {
    var self = this;
    var target = location.hash ? location.hash.slice(1) : "";
    var mine = target ? target === this.el.id : this.linked && !live.scrolledTo;
    if (!mine || (live.scrolledTo && live.scrolledTo !== this)) return;
    live.scrolledTo = this;
    var scroll = function () { if (!live.readerScrolled) self.el.scrollIntoView({ block: "start" }); };
    requestAnimationFrame(scroll);
    this.el.addEventListener("mlcalc:shown", function again() { self.el.removeEventListener("mlcalc:shown", again); setTimeout(scroll, 50); });
    ["wheel", "touchmove", "keydown"].forEach(function (type) {
      window.addEventListener(type, function () { live.readerScrolled = true; }, { passive: true, once: true });
    });
  };

  // The export in a result's text (the plan as Markdown or JSON), or "" when it shows none. The export's
  // link is made absolute (this page's address): the copied or downloaded text reopens the plan anywhere.
  function exportOf(text, anchorId) {
    var lines = String(text || "").split("\n");
    var abs = function (query) { return new URL(location.pathname + query, location.href).href + (anchorId ? "#" + anchorId : ""); };
    var start = lines.indexOf("{");
    if (start >= 0) {
      var end = lines.indexOf("}", start);
      try {
        var obj = JSON.parse(lines.slice(start, end + 1).join("\n"));
        if (obj.reopen && typeof obj.reopen.query === "string") obj.reopen.url = abs(obj.reopen.query);
        return { text: JSON.stringify(obj, null, 1) + "\n", name: "plan.json", type: "application/json" };
      } catch (err) {
        return null;
      }
    }
    start = lines.findIndex(function (l) { return l.indexOf("# ") === 0; });
    if (start < 0) return null;
    var stop = start;
    for (var i = start; i < lines.length; i++) {
      if (lines[i].indexOf("| ") === 0) stop = i;
      else if (stop > start && lines[stop].indexOf("| ") === 0) break;
    }
    var md = lines.slice(start, stop + 1).join("\n");
    var q = /`(\?[^`\s]+)`/.exec(md);
    if (q) md = md.replace(q[0], "<" + abs(q[1]) + ">");
    return { text: md + "\n", name: "plan.md", type: "text/markdown" };
  }

  Calculator.prototype.showExport = function (result) {
    var box = this.exportBox;
    var self = this;
    var exp = result && result.ok && this.controls.export ? exportOf(result.text, this.el.id) : null;
    this.exported = exp;
    box.textContent = "";
    if (!exp) return;
    var copy = document.createElement("button");
    copy.type = "button";
    copy.className = "mlcalc-copy";
    copy.textContent = "Copy " + (exp.type === "application/json" ? "JSON" : "Markdown");
    copy.addEventListener("click", function () {
      var done = function () { copy.textContent = "Copied"; setTimeout(function () { copy.textContent = "Copy again"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(self.exported.text).then(done, function () { fallbackCopy(self.exported.text); done(); });
      } else {
        fallbackCopy(self.exported.text);
        done();
      }
    });
    var download = document.createElement("button");
    download.type = "button";
    download.className = "mlcalc-download";
    download.textContent = "Download " + exp.name;
    download.addEventListener("click", function () {
      var url = URL.createObjectURL(new Blob([self.exported.text], { type: self.exported.type }));
      var a = document.createElement("a");
      a.href = url;
      a.download = self.exported.name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
    });
    box.appendChild(copy);
    box.appendChild(download);
  };

  // Copying where the clipboard API is missing (a page served over plain http on a room's network).
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (err) { /* nothing more to try */ }
    area.remove();
  }

  function isChoice(model) {
    var name = model.get("_model_name");
    return name === "DropdownModel" || name === "ToggleButtonsModel" || name === "RadioButtonsModel";
  }

  // Control values by key, as the models hold them (a choice as its option's index).
  Calculator.prototype.values = function () {
    var out = {};
    var self = this;
    Object.keys(this.controls).forEach(function (k) {
      var m = self.controls[k];
      out[k] = isChoice(m) ? m.get("index") : m.get("value");
    });
    return out;
  };

  Calculator.prototype.touch = function () {
    if (this.touched || live.state === "snapshot" || this.unsupported) return;
    this.touched = true;
    quietIcons();
    startEngine().catch(function () {});
  };

  Calculator.prototype.showStatus = function () {
    var s = this.status;
    if (this.unsupported) return;
    if (live.state === "loading") {
      s.className = "mlcalc-status mlcalc-status-loading";
      s.textContent = "Loading live calculators...";
    } else if (live.state === "live" && live.noticeKind === "restarting") {
      s.className = "mlcalc-status mlcalc-status-loading";
      s.textContent = live.notice;
    } else if (live.state === "live") {
      s.className = "mlcalc-status mlcalc-status-live";
      s.textContent = "Live: recomputed in your browser as you change a value." + (live.notice ? " " + live.notice : "");
    } else if (live.state === "idle") {
      s.className = "mlcalc-status";
      s.textContent = "";
    }
  };

  Calculator.prototype.toSnapshot = function () {
    var self = this;
    this.status.className = "mlcalc-status mlcalc-status-snapshot";
    this.status.innerHTML =
      (this.linked // (a snapshot comes only before Python ever ran: the link's values were never set)
        ? "<b>This link holds values for this calculator that need the live site:</b> what is shown below is the page's own values, not the link's. "
        : "") +
      "<b>Snapshot:</b> the results below were computed for the values shown, and the controls are off: " +
      escapeHtml(this.unsupported || live.reason) + ". For a live calculator, serve the site (<code>make serve</code>, " +
      "then open <code>http://127.0.0.1:8000/</code>) or run the notebook in JupyterLab (<code>make lab</code>" +
      (document.querySelector('a[href*="mybinder.org"], a[href*="colab.research.google.com"]') ? ", or a launch button at the top of the page" : "") +
      ").";
    (function disable(model) {
      if (!model || !model.attributes) return;
      if (Object.prototype.hasOwnProperty.call(model.attributes, "disabled")) model.set("disabled", true);
      (model.get("children") || []).forEach(disable);
    })(this.model);
    // A change made before Python failed is undone: the output never disagrees with the controls.
    if (this.requested !== this.shown) this.restoreShown();
  };

  // Back to the values the shown results were computed for (the page's own, or the last live ones).
  Calculator.prototype.restoreShown = function () {
    var self = this;
    var shown = this.last ? this.last.values : this.initial;
    Object.keys(this.controls).forEach(function (k) {
      var m = self.controls[k];
      m.set(isChoice(m) ? "index" : "value", shown[k]);
    });
    this.setStale(false);
    this.message.set("value", "");
  };

  Calculator.prototype.markShown = function (seq) {
    if (!seq || seq <= this.shown) return;
    this.shown = seq;
    if (this.timing && this.timing.seq === seq) this.timing.shown = performance.now();
    this.el.dispatchEvent(new CustomEvent("mlcalc:shown", { detail: seq }));
  };

  Calculator.prototype.setStale = function (stale) {
    [this.text, this.chart].forEach(function (m) {
      if (!m) return;
      var cls = classes(m).filter(function (c) { return c !== "mlcalc-stale"; });
      if (stale) cls = cls.concat(["mlcalc-stale"]);
      m.set("_dom_classes", cls);
    });
  };

  Calculator.prototype.changed = function (key) {
    var self = this;
    if (live.state === "snapshot" || this.unsupported || this.applying) return;
    quietIcons();
    live.lastChange = performance.now(); // the warm-up waits for a pause
    var seq = ++this.requested;
    var values = this.values();
    this.lastChange = { changed: key || "", values: values };
    // Where this change's time goes (the benchmark reads it): changed -> sent -> began -> received
    // (Python's own ms in `python`) -> applied (text written) -> shown (chart drawn).
    var timing = (this.timing = { seq: seq, changed: performance.now() });
    // A pasted text over what mlcalc reads is refused here, before it travels to Python.
    var big = this.oversized(values);
    if (big) {
      this.apply({ ok: false, error: big }, values, seq);
      return;
    }
    // Until its result is in, the output is dimmed: at once while Python is still starting (the
    // page never shows a result as if it were for values it was not computed for), after a short
    // wait once live (a quick result then replaces it without a flash).
    var staleTimer = null;
    if (live.state === "live") staleTimer = setTimeout(function () { if (self.shown < seq) self.setStale(true); }, STALE_AFTER_MS);
    else this.setStale(true);
    startEngine()
      .then(function () { return engine.run(self.key, values, key, { initial: self.initial, search: location.search }, timing); })
      .then(function (result) {
        if (seq !== self.requested) return null; // a newer change is on its way
        timing.parsed = performance.now();
        // The address follows the values (Python wrote the query; no new history entry per change).
        // The query was built from the address when the change was sent: if two calculators of the
        // page change within the same computation, the later write drops the earlier one's values
        // until that calculator changes again (rare: a reader changes one control at a time).
        if (result && typeof result.search === "string") writeAddress(result.search, self.el.id);
        return self.apply(result, values, seq);
      })
      .catch(function (err) {
        if (seq === self.requested && live.state !== "snapshot") {
          return self.apply({ ok: false, error: String((err && err.message) || err) }, values, seq);
        }
      })
      .then(function () { clearTimeout(staleTimer); });
  };

  // Opened from a link: Python reads the query and answers with the values to set and their result.
  // A bad parameter gets the usual inline message; the page's own values (and results) stay.
  Calculator.prototype.open = function () {
    var self = this;
    var seq = ++this.requested;
    var values = this.initial;
    startEngine()
      .then(function () { return engine.run(self.key, null, "", { open: true, initial: values, search: location.search }); })
      .then(function (result) {
        if (seq !== self.requested) return null; // the reader changed a value meanwhile
        return Promise.resolve(self.apply(result, values, seq)).then(function () {
          // A parameter Python refused: the page's own result stays, for the values still shown.
          if (!(result && result.ok) && !(result && result.controls && Object.keys(result.controls).length)) self.setStale(false);
        });
      })
      .catch(function () {}); // Python did not start: the calculator became a snapshot and says so
  };

  // The message for a text control holding more than mlcalc reads (PASTE_MAX_BYTES of UTF-8), or "".
  Calculator.prototype.oversized = function (values) {
    var self = this;
    var out = "";
    Object.keys(values).forEach(function (k) {
      var v = values[k];
      if (out || typeof v !== "string" || v.length * 3 <= PASTE_MAX_BYTES) return;
      var bytes = new TextEncoder().encode(v).length;
      if (bytes <= PASTE_MAX_BYTES) return;
      var label = self.controls[k].get("description") || k;
      out = label + ": the pasted text is " + (bytes / 1024).toFixed(1) + " KiB; at most " + PASTE_MAX_BYTES / 1024 +
        " KiB (" + PASTE_MAX_BYTES.toLocaleString("en-US") + " bytes) is read. Paste only the lines of the result table.";
    });
    return out;
  };

  Calculator.prototype.apply = function (result, values, seq) {
    var self = this;
    // Linked controls (a preset's numbers, a control that follows another) and controls the values
    // make irrelevant: the calculator's own rules, run in Python, applied here as Jupyter applies them.
    var moved = (result && result.controls) || {};
    if (Object.keys(moved).length) {
      values = Object.assign({}, values, moved);
      this.applying = true;
      try {
        Object.keys(moved).forEach(function (k) {
          var m = self.controls[k];
          if (m) m.set(isChoice(m) ? "index" : "value", moved[k]);
        });
      } finally {
        this.applying = false;
      }
    }
    if (result && Array.isArray(result.inactive)) {
      Object.keys(this.controls).forEach(function (k) {
        var off = result.inactive.indexOf(k) >= 0;
        if (self.controls[k].get("disabled") !== off) self.controls[k].set("disabled", off);
      });
    }
    this.lastValues = values;
    if (!result || !result.ok) {
      var error = (result && result.error) || "this input could not be computed";
      this.message.set("value", '<div class="mlcalc-error" role="alert"><b>Check the input:</b> ' + escapeHtml(error) + "</div>");
      this.setStale(true);
      this.last = { ok: false, error: error, values: values };
      this.showExport(null);
      this.markShown(seq);
      return null;
    }
    // A link with some bad parameters: the rest of it is shown, and the message says which were left out.
    this.message.set("value", result.notice ? '<div class="mlcalc-error" role="alert"><b>Check the link:</b> ' + escapeHtml(result.notice) + "</div>" : "");
    this.text.set("value", result.html);
    if (this.timing && this.timing.seq === seq) this.timing.text = performance.now();
    this.last = { ok: true, text: result.text, html: result.html, chart: result.chart, values: values, notice: result.notice || "" };
    this.showExport(result);
    return this.draw(result.chart, seq).then(function () {
      if (seq === self.requested && self.spec === result.chart) self.setStale(false);
    });
  };

  Calculator.prototype.chartView = function () {
    if (!this.chart) return Promise.resolve(null);
    var chart = this.chart;
    var view = this.view;
    // The chart's view exists once the calculator's box has made its children.
    var made = view.children_views && view.children_views.views ? Promise.all(view.children_views.views) : Promise.resolve();
    return made.then(function () { return viewsOf(chart); }).then(function (views) { return views.length ? views[0].el : null; });
  };

  // Draws are queued one after the other; a draw for a result that a newer one follows is skipped.
  Calculator.prototype.draw = function (spec, seq) {
    var self = this;
    this.drawing = (this.drawing || Promise.resolve()).then(function () {
      if (seq && seq !== self.requested) return null;
      if (!seq && self.spec) return null; // the first paint came after a live result
      return self.drawNow(spec, seq);
    });
    return this.drawing;
  };

  // The compiled Vega spec with its inline data and its own values (title, parameters, literal scale domains and
  // ranges) taken out: two specs with the same shape differ only in those, so the chart on screen takes them in place.
  // The fields a Vega-Lite spec puts on a scale (x, y, colour ...), not just into text or a tooltip.
  function scaleFields(vl, out) {
    out = out || {};
    if (!vl || typeof vl !== "object") return out;
    var enc = vl.encoding || {};
    Object.keys(enc).forEach(function (channel) {
      if (["text", "tooltip", "href", "description", "url"].indexOf(channel) >= 0) return;
      [].concat(enc[channel]).forEach(function (def) {
        if (def && typeof def.field === "string") out[def.field] = true;
      });
    });
    ["layer", "hconcat", "vconcat", "concat"].forEach(function (k) {
      (vl[k] || []).forEach(function (sub) { scaleFields(sub, out); });
    });
    if (vl.spec) scaleFields(vl.spec, out);
    return out;
  }

  // A chart is handed the width of its column, and that is all: how it fits (title and axis titles
  // wrapped, legend columns, which side a label goes) is written into its spec by mlcalc.charts, as Vega
  // expressions on its parameter "column". Only the drawing changes: the spec, what the page and the tests
  // compare with CPython, does not.
  function handColumn(vl, column) {
    if (!(column > 0)) return;
    var width = Math.floor(column);
    if (typeof vl.width === "number" && width < vl.width) vl.width = width;
    vl.params = (vl.params || []).map(function (p) {
      return p.name === "column" && width < p.value ? Object.assign({}, p, { value: width }) : p;
    });
  }

  // The values a chart of mlcalc.charts takes in place, without a new view: its parameters named mlcalc_* (its
  // title's text, axis titles, tick values, where bars start ...: what Python writes there changes with the
  // controls, the structure does not), and the literal domains and ranges of its scales (an axis's range fixed by
  // mlcalc, a fixed list of categories and their colours: Vega reads a scale's domain or range from a signal too)
  // and the literal entries of its legends.
  function isOwnSignal(sg) {
    return /^mlcalc_/.test(sg.name) && Object.prototype.hasOwnProperty.call(sg, "value") && !sg.update && !sg.on && !sg.bind;
  }

  function literalList(list) {
    return Array.isArray(list) && list.every(function (x) { return x === null || typeof x !== "object"; });
  }

  function splitVega(vg, fields) {
    var data = {};
    var copy = JSON.parse(JSON.stringify(vg));
    var simple = true;
    (copy.data || []).forEach(function (d) {
      if (Object.prototype.hasOwnProperty.call(d, "values")) {
        if (d.format && d.format.parse) simple = false; // parsed values: no in-place update
        data[d.name] = d.values;
        d.values = [];
      }
    });
    var signals = {};
    (copy.signals || []).forEach(function (sg) { if (isOwnSignal(sg)) signals[sg.name] = sg.value; });
    // A literal of the spec (owner[key]) made a signal of that name, which the chart on screen takes in place.
    function toSignal(owner, key, name) {
      signals[name] = owner[key];
      owner[key] = { signal: name };
      copy.signals = (copy.signals || []).concat([{ name: name, value: signals[name] }]);
    }
    if (!Object.prototype.hasOwnProperty.call(signals, "mlcalc_title") && copy.title &&
        (typeof copy.title.text === "string" || Array.isArray(copy.title.text))) {
      toSignal(copy.title, "text", "mlcalc_title"); // another chart's literal title
    }
    // Only numbers and text labels may change in place: the categories on a scale stay the same and
    // in the same order (Vega keeps the order it first saw them in, so new ones would get other
    // colours or places than in a fresh chart) -- unless every category scale's order is its own: a
    // sorted domain (Vega-Lite's default for a nominal field) or a fixed list, the same whatever the
    // data's order; then new categories get the places and colours a fresh chart gives them.
    var labels = {};
    var ordered = orderFree(copy);
    Object.keys(data).forEach(function (name) { labels[name] = labelsOf(data[name], fields); });
    (copy.scales || []).forEach(function (sc, i) {
      ["domain", "range"].forEach(function (part) {
        if (literalList(sc[part])) toSignal(sc, part, "mlcalc_" + part + "_" + i);
      });
    });
    // A legend's literal list of entries (Vega-Lite writes a fixed domain's there too) likewise.
    (copy.legends || []).forEach(function (lg, i) {
      if (literalList(lg.values)) toSignal(lg, "values", "mlcalc_legend_" + i);
    });
    // The structure: the spec with those values blanked (their names stay: a chart with other parameters is another).
    var rest = Object.assign({}, copy, { signals: (copy.signals || []).map(function (sg) {
      return Object.prototype.hasOwnProperty.call(signals, sg.name) ? { name: sg.name } : sg;
    }) });
    // Compared by content, not by the order of keys (the page's own spec, stored sorted, and Python's live one).
    // (frame is stableJson([rest]) and shape stableJson([rest]) or stableJson([rest, labels]): rest written once.)
    var frame = simple ? "[" + stableJson(rest) + "]" : null;
    return { spec: copy, data: data, signals: signals, ordered: ordered,
             shape: simple ? (ordered ? frame : frame.slice(0, -1) + "," + stableJson(labels) + "]") : null, frame: frame };
  }

  // A data set's rows with only their fields that are not numbers (those on a scale, if `fields`).
  function labelsOf(rows, fields) {
    return rows.map(function (row) {
      var out = {};
      Object.keys(row).forEach(function (k) {
        if (typeof row[k] !== "number" && (!fields || fields[k])) out[k] = row[k];
      });
      return out;
    });
  }

  // JSON with every object's keys sorted: two specs that differ only in the order of their keys read the same.
  // (Written into one list of pieces, joined once: the recursion's own strings and lists were most of a change's
  // allocation in the page's script.)
  function stableJson(x) {
    var out = [];
    stableInto(x, out);
    return out.join("");
  }
  function stableInto(x, out) {
    if (Array.isArray(x)) {
      out.push("[");
      for (var i = 0; i < x.length; i++) {
        if (i) out.push(",");
        stableInto(x[i], out);
      }
      out.push("]");
    } else if (x && typeof x === "object") {
      var keys = Object.keys(x).sort();
      out.push("{");
      for (var j = 0; j < keys.length; j++) {
        out.push(j ? "," : "", JSON.stringify(keys[j]), ":");
        stableInto(x[keys[j]], out);
      }
      out.push("}");
    } else {
      out.push(x === undefined ? "null" : JSON.stringify(x));
    }
  }

  // Whether every discrete scale of a compiled Vega spec (its groups' included) orders its domain by itself:
  // a fixed list, or a domain from the data with a sort. Any other (a domain in the data's order, a signal) is not.
  function orderFree(vg) {
    var free = true;
    (function walk(node) {
      if (!free || !node || typeof node !== "object") return;
      (node.scales || []).forEach(function (sc) {
        if (["ordinal", "band", "point"].indexOf(sc.type) < 0) return;
        var d = sc.domain;
        if (!(Array.isArray(d) || (d && typeof d === "object" && !d.signal && d.sort))) free = false;
      });
      (node.marks || []).forEach(walk);
    })(vg);
    return free;
  }

  // Compiled Vega-Lite specs by their structure, the last COMPILED_KEPT: the spec with each inline data set's rows
  // replaced by a placeholder (one per distinct set of rows: Vega-Lite merges data sets whose rows are equal, and
  // so it merges their placeholders). Compiling reads the structure, not the rows (their types come from the
  // encoding), so a change that brings only new rows is not compiled again: its rows take the
  // places of their placeholders in the compiled spec. (The browser tests compare the chart drawn with a fresh one.)
  var COMPILED_KEPT = 32;
  var ROWS = "__mlcalc_rows";
  var compiled = new Map();
  // An inline data set's rows as their placeholder: one per distinct set of rows (``sets`` in first-seen order,
  // ``seen`` their index by text), as Vega-Lite merges data sets whose rows are equal.
  function rowsMark(v, sets, seen) {
    var text = JSON.stringify(v);
    if (!Object.prototype.hasOwnProperty.call(seen, text)) {
      seen[text] = sets.length;
      sets.push(v);
    }
    var mark = {};
    mark[ROWS] = seen[text];
    return [mark];
  }
  function compileExact(vl) {
    var sets = [];
    var seen = {};
    var skeleton = (function strip(node, key) {
      if (Array.isArray(node)) return node.map(function (x) { return strip(x, key); });
      if (!node || typeof node !== "object") return node;
      var out = {};
      Object.keys(node).forEach(function (k) {
        var v = node[k];
        if (key === "data" && k === "values" && Array.isArray(v)) {
          out[k] = rowsMark(v, sets, seen);
        } else {
          out[k] = strip(v, k);
        }
      });
      return out;
    })(vl, "");
    var key = JSON.stringify(skeleton);
    var hit = compiled.get(key);
    if (hit) {
      compiled.delete(key); // most recent last
    } else {
      hit = window.vegaLite.compile(skeleton).spec;
    }
    compiled.set(key, hit);
    if (compiled.size > COMPILED_KEPT) compiled.delete(compiled.keys().next().value);
    var filled = {};
    var vg = Object.assign({}, hit, { data: (hit.data || []).map(function (d) {
      var v = d.values;
      var at = Array.isArray(v) && v.length === 1 && v[0] && typeof v[0] === "object" ? v[0][ROWS] : undefined;
      if (typeof at !== "number") return d;
      filled[at] = true;
      return Object.assign({}, d, { values: sets[at] });
    }) });
    // Every set of rows found its place (Vega-Lite puts inline data at the top): else compiled as it is.
    return Object.keys(filled).length === sets.length ? vg : window.vegaLite.compile(vl).spec;
  }

  // Compiled templates, the last COMPILED_KEPT: a chart's spec with its rows and its own values (the values of its
  // mlcalc_* parameters: title, axis titles, tick values ...; the literal domains and ranges of its scales) replaced
  // by placeholders. A reader's change usually brings new values in the same structure (a title with another
  // number, an axis to another maximum): that spec was compiled again on every change with new values (5-15 ms of
  // a change on the 2-core machine, 2026-11-27), while its template is compiled once. Numbers are placed by their
  // order within their list (a placeholder has its number's sign, and the placeholders' order is the numbers': Vega-Lite
  // reads a domain's ends, e.g. whether it holds zero); zero stays itself; how the x axis's ends compare with the y
  // axis's is not the structure (the catalogue's dtypes order them differently). A scale's literal list of two or more texts (its
  // categories, their colours) is one placeholder whatever its length: a change that brings more or fewer categories
  // (the catalogue's vendors with a figure for a dtype) keeps the structure. A template is used only after it was checked:
  // compiled and filled with the values of the spec it was made from, it must equal that spec compiled (checked
  // off the change path, once per template); a placeholder that Vega-Lite writes into anything else (an
  // expression's text) makes the spec compile as it is.
  var templates = new Map(); // structure -> {compiled, ok} (ok: false = compile such specs as they are)
  var PLACED_TEXT = "\u2063mlcalc\u2063";
  var PLACED_LIST = "\u2063mlcalcs\u2063"; // a scale's literal list of two or more texts, whatever its length
  var PLACED_NUMBER = 7e-291; // placeholders of numbers: +-PLACED_NUMBER * (1 + rank), values no chart holds

  function textList(list) {
    return Array.isArray(list) && list.length >= 2 && list.every(function (x) { return typeof x === "string"; });
  }

  function literalScalars(list) {
    return Array.isArray(list) && list.every(function (x) { return typeof x === "number" || typeof x === "string"; });
  }

  function templateOf(vl) {
    var sets = [], seenRows = {}, texts = [], seenTexts = {}, lists = [], seenLists = {}, numbers = {}, placedLists = {};
    var slots = 0;
    // The places of the chart's own values: a literal domain or range of a scale, an mlcalc_* parameter's value.
    function eachOwn(node, key, top) {
      if (Array.isArray(node)) return node.map(function (x) { return eachOwn(x, key, false); });
      if (!node || typeof node !== "object") return node;
      // Visited in the order of their names (placeholders are numbered in the order they are met: the page's stored
      // spec, its keys sorted, and Python's of the same chart number them alike), kept in the spec's own order.
      var keys = Object.keys(node);
      var done = {};
      keys.slice().sort().forEach(function (k) {
        var v = node[k];
        if (key === "data" && k === "values" && Array.isArray(v)) done[k] = rowsMark(v, sets, seenRows);
        else if (key === "scale" && (k === "domain" || k === "range") && textList(v)) done[k] = [placeList(v)];
        else if (key === "scale" && (k === "domain" || k === "range") && literalScalars(v)) done[k] = placeValues(v);
        else if (top && k === "params" && Array.isArray(v)) {
          done[k] = v.map(function (p) {
            if (!p || typeof p !== "object" || !/^mlcalc_/.test(p.name) || !Object.prototype.hasOwnProperty.call(p, "value")) {
              return eachOwn(p, k, false);
            }
            return Object.assign({}, p, { value: placeValues([p.value])[0] });
          });
        } else done[k] = eachOwn(v, k, false);
      });
      var out = {};
      keys.forEach(function (k) { out[k] = done[k]; });
      return out;
    }
    // A scale's list of categories or colours: one placeholder whatever its length (Vega-Lite copies such a list
    // as it is; the template's check, made with a list of two or more, would see it do otherwise).
    function placeList(v) {
      var text = JSON.stringify(v);
      if (!Object.prototype.hasOwnProperty.call(seenLists, text)) {
        seenLists[text] = lists.length;
        lists.push(v);
      }
      return PLACED_LIST + seenLists[text];
    }
    // The values of one list (a scale's domain or range) or one parameter: each number by its sign and its rank
    // among the list's own numbers (a domain's ends keep their order and signs; how one list's numbers compare
    // with another's is not the chart's structure), each list its own placeholders (the same list, the same ones).
    function placeValues(list) {
      var text = JSON.stringify(list);
      if (Object.prototype.hasOwnProperty.call(placedLists, text)) return placedLists[text].slice();
      var sizes = [];
      list.forEach(function (x) {
        if (typeof x === "number" && x !== 0 && isFinite(x) && sizes.indexOf(Math.abs(x)) < 0) sizes.push(Math.abs(x));
      });
      sizes.sort(function (a, b) { return a - b; });
      var out = list.map(function (x) {
        if (typeof x === "number") {
          if (x === 0 || !isFinite(x)) return x;
          var placed = (x < 0 ? -1 : 1) * PLACED_NUMBER * (1 + slots + sizes.indexOf(Math.abs(x)));
          numbers[String(placed)] = x;
          return placed;
        }
        // A text, or a parameter's list (tick values: one value, its length is not the chart's structure).
        if (typeof x !== "string" && !Array.isArray(x)) return x;
        var t = JSON.stringify(x);
        if (!Object.prototype.hasOwnProperty.call(seenTexts, t)) {
          seenTexts[t] = texts.length;
          texts.push(x);
        }
        return PLACED_TEXT + seenTexts[t];
      });
      slots += sizes.length;
      placedLists[text] = out;
      return out.slice();
    }
    var skeleton = eachOwn(vl, "", true);
    return { skeleton: skeleton, sets: sets, texts: texts, lists: lists, numbers: numbers };
  }

  // Which of a template's placeholders a walk found (rows, texts, lists, numbers), and whether it found them all.
  function placesSeen() { return { rows: {}, texts: {}, lists: {}, numbers: {} }; }
  function allPlaced(t, seen) {
    var count = function (o) { return Object.keys(o).length; };
    return count(seen.rows) === t.sets.length && count(seen.texts) === t.texts.length &&
      count(seen.lists) === t.lists.length && count(seen.numbers) === count(t.numbers);
  }

  // A walk that puts a template's rows, texts, lists and numbers (templateOf) in their placeholders' places, marking
  // each one it finds in `seen`. `copy`: a new value throughout (a list placed as a copy, an object's fields walked);
  // else the values the template holds, and an object met calls `onObject` and stays as it is.
  function placer(t, seen, copy, onObject) {
    return function put(node) {
      if (typeof node === "number") {
        if (node !== 0 && Math.abs(node) < 1e-280 && Object.prototype.hasOwnProperty.call(t.numbers, String(node))) {
          seen.numbers[String(node)] = true;
          return t.numbers[String(node)];
        }
        return node;
      }
      if (typeof node === "string") {
        if (node.indexOf(PLACED_TEXT) === 0) {
          var j = +node.slice(PLACED_TEXT.length);
          if (j >= 0 && j < t.texts.length) {
            seen.texts[j] = true;
            return t.texts[j];
          }
        }
        return node;
      }
      if (Array.isArray(node)) {
        if (node.length === 1 && node[0] && typeof node[0] === "object" && typeof node[0][ROWS] === "number") {
          seen.rows[node[0][ROWS]] = true;
          return t.sets[node[0][ROWS]];
        }
        if (node.length === 1 && typeof node[0] === "string" && node[0].indexOf(PLACED_LIST) === 0) {
          var at = +node[0].slice(PLACED_LIST.length);
          if (at >= 0 && at < t.lists.length) {
            seen.lists[at] = true;
            return copy ? t.lists[at].slice() : t.lists[at];
          }
        }
        return node.map(put);
      }
      if (!node || typeof node !== "object") return node;
      if (!copy) {
        if (onObject) onObject();
        return node;
      }
      var out = {};
      Object.keys(node).forEach(function (k) { out[k] = put(node[k]); });
      return out;
    };
  }

  // A compiled template with a spec's rows and values in their places (a copy), or null if one of them found no
  // place, or (`check`) a placeholder is left over: Vega-Lite wrote it into something else. (Specs of one structure
  // have the same placeholders in the same places: the template's check holds for them all.)
  function fillTemplate(vg, t, check) {
    var seen = placesSeen();
    var filled = placer(t, seen, true)(vg);
    if (!allPlaced(t, seen)) return null;
    if (check) {
      var text = JSON.stringify(filled);
      if (text.indexOf(PLACED_TEXT) >= 0 || text.indexOf(PLACED_LIST) >= 0 || Object.keys(t.numbers).some(function (p) { return text.indexOf(p) >= 0; })) return null;
    }
    return filled;
  }

  // Checks a template off the change path (when the page is idle, at the latest after a second).
  var checks = [];
  function checkLater(job) {
    checks.push(job);
    if (checks.length > 1) return;
    var run = function () {
      var next = checks.shift();
      try { if (next) next(); } catch (err) { /* the template stays unchecked: specs of its structure compile as they are */ }
      if (checks.length) later(run);
    };
    later(run);
  }
  function later(fn) {
    if (typeof window.requestIdleCallback === "function") window.requestIdleCallback(fn, { timeout: 1000 });
    else setTimeout(fn, 50);
  }

  function compileVegaLite(vl) {
    if (live.templates === false) return compileExact(vl);
    var t = templateOf(vl);
    return compileTemplated(vl, t, templateEntry(t));
  }

  // The template entry of a spec's structure (most recent last), or null.
  function templateEntry(t) {
    t.key = stableJson(t.skeleton); // the order of keys does not change what Vega-Lite compiles
    var entry = templates.get(t.key);
    if (entry) {
      templates.delete(t.key); // most recent last
      templates.set(t.key, entry);
    }
    return entry || null;
  }

  function compileTemplated(vl, t, entry) {
    if (entry) {
      var filled = entry.ok ? fillTemplate(entry.compiled, t, false) : null;
      if (filled) {
        live.compiles.template += 1;
        return filled;
      }
      live.compiles.compiled += 1;
      return compileExact(vl);
    }
    live.compiles.compiled += 1;
    var vg = compileExact(vl);
    entry = { compiled: null, ok: false, frame: null };
    templates.set(t.key, entry);
    if (templates.size > COMPILED_KEPT) templates.delete(templates.keys().next().value);
    checkLater(function () {
      var compiledTemplate = window.vegaLite.compile(t.skeleton).spec;
      var filled = fillTemplate(compiledTemplate, t, true);
      entry.compiled = compiledTemplate;
      entry.ok = !!filled && stableJson(filled) === stableJson(vg);
      if (entry.ok) templateFrame(entry, t);
    });
    return vg;
  }

  // A checked template's structure as splitVega writes it (frame), kept when every placeholder of the template lies in
  // what splitVega takes out (its data, its own signals' values, its scales' literal lists, its legends' and its title's
  // text): then every spec that fills it has that same frame, and its parts can be read from the template's places
  // alone (placeParts), without the whole compiled spec filled, copied and written out again on each change.
  function templateFrame(entry, t) {
    var p = splitVega(entry.compiled, null);
    if (!p.frame) return;
    var f = p.frame;
    if (f.indexOf(PLACED_TEXT) >= 0 || f.indexOf(PLACED_LIST) >= 0 || f.indexOf(ROWS) >= 0 || /e-2[89]\d/.test(f)) return;
    if (Object.keys(t.numbers).some(function (n) { return f.indexOf(n) >= 0; })) return;
    entry.frame = f;
    entry.ordered = p.ordered;
  }

  // A copy as the JSON round trip of splitVega makes one (-0 becomes 0), of a value that holds no object but a list.
  function jsonCopy(x) {
    if (x === null || typeof x !== "object") return typeof x === "number" && x === 0 ? 0 : x;
    return JSON.parse(JSON.stringify(x));
  }

  // What splitVega(fillTemplate(entry.compiled, t)) gives for an update (the rows, the own values, the structure's text),
  // read from the places of the template's placeholders only; null where one of them is not where it was (the caller
  // then fills and splits the whole spec). `full()` gives the whole of it (a new view needs the spec).
  function placeParts(entry, t, fields) {
    var vg = entry.compiled;
    var seen = placesSeen();
    var ok = true;
    // an object among the values taken out is not what the frame was checked for
    var put = placer(t, seen, false, function () { ok = false; });
    var data = {};
    var signals = {};
    (vg.data || []).forEach(function (d) {
      if (!Object.prototype.hasOwnProperty.call(d, "values")) return;
      var v = d.values;
      var placed = Array.isArray(v) && v.length === 1 && v[0] && typeof v[0] === "object" && typeof v[0][ROWS] === "number";
      if (!Array.isArray(v)) {
        ok = false;
        return;
      }
      if (placed) seen.rows[v[0][ROWS]] = true;
      // each row copied (Vega keeps the rows it is given as its own and changes them later: the result's stay as they
      // came), a field's value as the JSON round trip copies it; rows of the template itself (Vega-Lite's) filled
      data[d.name] = (placed ? t.sets[v[0][ROWS]] : v).map(function (row) {
        if (!row || typeof row !== "object" || Array.isArray(row)) return jsonCopy(placed ? row : put(row));
        var copy = {};
        for (var k in row) {
          if (Object.prototype.hasOwnProperty.call(row, k)) copy[k] = jsonCopy(placed ? row[k] : put(row[k]));
        }
        return copy;
      });
    });
    (vg.signals || []).forEach(function (sg) { if (isOwnSignal(sg)) signals[sg.name] = jsonCopy(put(sg.value)); });
    if (!Object.prototype.hasOwnProperty.call(signals, "mlcalc_title") && vg.title &&
        (typeof vg.title.text === "string" || Array.isArray(vg.title.text))) {
      signals.mlcalc_title = jsonCopy(put(vg.title.text));
    }
    (vg.scales || []).forEach(function (sc, i) {
      ["domain", "range"].forEach(function (part) {
        if (!literalList(sc[part])) return;
        var v = put(sc[part]);
        if (!literalList(v)) ok = false;
        signals["mlcalc_" + part + "_" + i] = jsonCopy(v);
      });
    });
    (vg.legends || []).forEach(function (lg, i) {
      if (!literalList(lg.values)) return;
      var v = put(lg.values);
      if (!literalList(v)) ok = false;
      signals["mlcalc_legend_" + i] = jsonCopy(v);
    });
    if (!ok || !allPlaced(t, seen)) return null;
    var shape = entry.frame;
    if (!entry.ordered) {
      var labels = {};
      Object.keys(data).forEach(function (name) { labels[name] = labelsOf(data[name], fields); });
      shape = entry.frame.slice(0, -1) + "," + stableJson(labels) + "]";
    }
    return { spec: null, data: data, signals: signals, ordered: entry.ordered, shape: shape, frame: entry.frame,
             full: function () { return splitVega(fillTemplate(entry.compiled, t, false), fields); } };
  }

  // A chart's parts for drawing (splitVega's): from its checked template's places where it can (placeParts), else
  // compiled (or filled from its template) and split.
  function chartParts(vl) {
    var fields = scaleFields(vl);
    if (live.templates === false) return splitVega(compileExact(vl), fields);
    var t = templateOf(vl);
    var entry = templateEntry(t);
    var parts = entry && entry.ok && entry.frame ? placeParts(entry, t, fields) : null;
    if (parts) {
      live.compiles.template += 1;
      live.compiles.placed += 1;
      return parts;
    }
    return splitVega(compileTemplated(vl, t, entry), fields);
  }

  // A data set's new rows into the chart on screen; returns the rows the chart then holds (`drawn`: the rows given to
  // Vega, which keeps them as its tuples). Each held row with the same fields as the new row at its
  // place takes that row's values in place (Vega's modify: the marks keep their SVG elements and only what changed is
  // written; removing every row and inserting the new ones made the renderer drop and make every element again: 3-5
  // ms of a 64-box schedule); held rows beyond the new ones are removed, new rows beyond the held ones inserted after
  // them (the rows keep the new rows' order: a fresh chart's). Rows of other fields: all replaced. (Which charts may
  // change in place is splitVega's: one whose category scales keep the data's order changes only numbers and keeps
  // its labels, and so its rows; one whose category scales order themselves may change its rows and their count.)
  function changeRows(view, name, rows, drawn) {
    var cs = window.vega.changeset();
    var keys = keysOf(rows);
    var held = drawn ? drawn.mlcalcKeys : null;
    var n = Math.min(rows.length, drawn ? drawn.length : 0);
    var same = live.inPlace !== false && n > 0 && Array.isArray(held) && held.length === drawn.length &&
      window.vega.tupleid(drawn[0]) != null;
    for (var j = 0; same && j < n; j++) same = held[j] === keys[j];
    if (!same) {
      view.change(name, cs.remove(window.vega.truthy).insert(rows));
      rows.mlcalcKeys = keys;
      return rows;
    }
    var changed = false;
    for (var i = 0; i < n; i++) {
      var row = rows[i];
      var t = drawn[i];
      for (var k in row) {
        if (t[k] !== row[k]) {
          cs.modify(t, k, row[k]);
          changed = true;
        }
      }
    }
    if (drawn.length === rows.length) {
      if (changed) view.change(name, cs);
      return drawn;
    }
    if (drawn.length > n) cs.remove(drawn.slice(n));
    if (rows.length > n) cs.insert(rows.slice(n));
    view.change(name, cs);
    var now = drawn.slice(0, n).concat(rows.slice(n));
    now.mlcalcKeys = keys;
    return now;
  }

  // The fields of each row as one text a row (kept on the rows drawn as `mlcalcKeys`: a row and a held row with the
  // same text can change in place). In the order of their names: the page's stored rows (keys sorted) and Python's
  // have the same fields in another order.
  function keysOf(rows) {
    var out = new Array(rows.length);
    var last = null;
    for (var i = 0; i < rows.length; i++) {
      // a row with the fields of the row before it (most rows of a chart) shares its text: not listed, sorted and joined
      out[i] = last && sameFields(rows[i], last) ? out[i - 1] : Object.keys(rows[i]).sort().join("\u0001");
      last = rows[i];
    }
    return out;
  }
  function sameFields(a, b) {
    var n = 0;
    var k;
    for (k in a) {
      if (!Object.prototype.hasOwnProperty.call(a, k)) continue;
      if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
      n += 1;
    }
    for (k in b) {
      if (Object.prototype.hasOwnProperty.call(b, k)) n -= 1;
    }
    return n === 0;
  }

  // The width of the chart's column, as a ResizeObserver last saw it (read from the layout only the first time:
  // reading it after the text changed would make the browser lay the page out once more before the chart is drawn).
  Calculator.prototype.columnWidth = function (el) {
    var self = this;
    if (this.columnEl !== el || typeof ResizeObserver !== "function") {
      this.columnEl = el;
      this.column = el.getBoundingClientRect().width;
      if (typeof ResizeObserver === "function") {
        if (this.columnWatch) this.columnWatch.disconnect();
        this.columnWatch = new ResizeObserver(function (entries) {
          var box = entries[entries.length - 1];
          var size = box.borderBoxSize && box.borderBoxSize[0];
          self.column = size ? size.inlineSize : box.target.getBoundingClientRect().width;
        });
        this.columnWatch.observe(el);
      }
    }
    return this.column;
  };

  Calculator.prototype.drawNow = function (spec, seq) {
    var self = this;
    return this.chartView().then(function (el) {
      if (!el) return;
      var box = el.querySelector(":scope > .mlcalc-chart");
      if (!spec) {
        if (box) box.remove();
        el.classList.remove("mlcalc-drawn");
        if (self.embedded) self.embedded.finalize();
        self.embedded = null;
        self.spec = null;
        self.markShown(seq);
        return;
      }
      if (!box) {
        box = document.createElement("div");
        box.className = "mlcalc-chart";
        el.appendChild(box);
      }
      if (typeof window.vegaEmbed !== "function" || !window.vegaLite || !window.vega) throw new Error("Vega is not loaded");
      // The spec names Vega-Lite v5 (what JupyterLab renders); the site's Vega-Lite 6 draws it the same.
      var vl = Object.assign({}, spec);
      delete vl.$schema;
      // Drawn to the width of its column (a phone's is narrower than the spec's 520 px).
      handColumn(vl, self.columnWidth(el));
      var parts = chartParts(vl);
      var timing = self.timing && self.timing.seq === seq ? self.timing : null;
      if (timing) timing.compiled = performance.now();
      var done;
      if (self.embedded && parts.shape && parts.shape === self.shape) {
        if (timing) timing.chartHow = "update";
        // Same chart, new numbers: change its data and title in place (no new Vega view).
        self.updates = (self.updates || 0) + 1;
        var view = self.embedded.view;
        var drawnRows = self.drawnRows || {};
        Object.keys(parts.data).forEach(function (name) {
          var held = drawnRows[name];
          parts.data[name] = changeRows(view, name, parts.data[name], held);
          if (held && held.length && parts.data[name][0] === held[0]) self.inPlace = (self.inPlace || 0) + 1; // (the tests read it)
        });
        Object.keys(parts.signals).forEach(function (name) { view.signal(name, parts.signals[name]); });
        done = view.runAsync().then(function () { return self.embedded; });
      } else if (self.embedded && parts.frame && parts.frame === self.frame) {
        // Same chart, other categories on a scale that keeps the data's order: emptied first, then filled
        // (two passes of its dataflow, one paint), it takes them in their order, as a new chart would.
        if (timing) timing.chartHow = "emptied and filled";
        self.updates = (self.updates || 0) + 1;
        var again = self.embedded.view;
        Object.keys(parts.data).forEach(function (name) {
          again.change(name, window.vega.changeset().remove(window.vega.truthy));
        });
        done = again.runAsync().then(function () {
          Object.keys(parts.data).forEach(function (name) {
            again.change(name, window.vega.changeset().insert(parts.data[name]));
          });
          Object.keys(parts.signals).forEach(function (name) { again.signal(name, parts.signals[name]); });
          return again.runAsync();
        }).then(function () { return self.embedded; });
      } else {
        if (!parts.spec) parts = parts.full(); // (read from its template's places: the whole spec for a new view)
        var vg = Object.assign({}, parts.spec, {
          data: (parts.spec.data || []).map(function (d) {
            return Object.prototype.hasOwnProperty.call(parts.data, d.name) ? Object.assign({}, d, { values: parts.data[d.name] }) : d;
          }),
        });
        self.redraws = (self.redraws || 0) + 1;
        if (timing) timing.chartHow = "new view";
        done = window.vegaEmbed(box, vg, { mode: "vega", actions: false, renderer: "svg", tooltip: true }).then(function (res) {
          if (self.embedded && self.embedded !== res) self.embedded.finalize();
          return res;
        });
      }
      return done.then(function (res) {
        self.embedded = res;
        self.shape = parts.shape;
        self.frame = parts.frame;
        self.drawnRows = parts.data; // the rows the chart holds (Vega's own tuples: see changeRows)
        Object.keys(parts.data).forEach(function (name) {
          var rows = parts.data[name];
          if (!Array.isArray(rows.mlcalcKeys)) rows.mlcalcKeys = keysOf(rows);
        });
        self.spec = spec;
        box.mlcalcSpec = spec;
        el.classList.add("mlcalc-drawn");
        self.markShown(seq);
      });
    }).catch(function (err) {
      // The chart on screen is not the result's: say so rather than show it as current.
      if (self.chart) self.setStale(true);
      self.markShown(seq);
      console.warn("mlcalc: chart not drawn:", err);
    });
  };

  // ---------------------------------------------------------------- wiring

  function onView(view) {
    if (!view || !view.model || classes(view.model).indexOf("mlcalc-calculator") < 0 || view.__mlcalc) return;
    view.__mlcalc = true;
    var calc = new Calculator(view);
    live.calculators.push(calc);
    if (live.state === "live") warmSoon(0); // connected after Python was live: warmed too
  }

  function hook(htmlmanager) {
    var proto = htmlmanager && htmlmanager.HTMLManager && htmlmanager.HTMLManager.prototype;
    if (!proto || proto.__mlcalc) return;
    proto.__mlcalc = true;
    var create = proto.create_view;
    proto.create_view = function () {
      var made = create.apply(this, arguments);
      Promise.resolve(made).then(function (view) {
        try {
          onView(view);
        } catch (err) {
          console.warn("mlcalc: calculator not connected:", err);
        }
      }, function () {});
      return made;
    };
  }

  // For tests: the data each chart on screen draws, against its spec's (mismatches; [] when they agree).
  live.checkRendered = function (i) {
    var c = live.calculators[i];
    if (!c.spec) return c.embedded ? ["a chart is drawn, the result has none"] : [];
    if (!c.embedded) return ["no chart drawn"];
    var vl = Object.assign({}, c.spec);
    delete vl.$schema;
    var chartEl = c.el.querySelector(".mlcalc-view-chart");
    handColumn(vl, chartEl ? chartEl.getBoundingClientRect().width : 0);
    var parts = splitVega(window.vegaLite.compile(vl).spec, scaleFields(vl));
    var problems = [];
    Object.keys(parts.data).forEach(function (name) {
      var expected = parts.data[name];
      var pool = expected.map(function (row) { return JSON.stringify(row); });
      var drawn = c.embedded.view.data(name);
      drawn.forEach(function (tuple) {
        var row = expected[0] ? Object.keys(expected[0]) : [];
        var projected = {};
        row.forEach(function (k) { projected[k] = tuple[k] === undefined ? null : tuple[k]; });
        var at = pool.indexOf(JSON.stringify(projected));
        if (at < 0) problems.push(name + ": drawn row not in the result: " + JSON.stringify(projected));
        else pool.splice(at, 1);
      });
      var complete = expected.filter(function (row) {
        return Object.keys(row).every(function (k) { return row[k] !== null; });
      }).length;
      if (drawn.length < complete) problems.push(name + ": " + drawn.length + " rows drawn of " + complete);
    });
    Object.keys(parts.signals).forEach(function (name) {
      var shown = c.embedded.view.signal(name);
      if (stableJson(shown) !== stableJson(parts.signals[name])) problems.push(name + " " + JSON.stringify(shown));
    });
    return problems;
  };

  // For tests: the domain of every scale of the chart on screen against a fresh chart of the same spec (a chart
  // whose numbers and categories changed in place must order and colour them as a new one would); [] if equal.
  live.checkScales = function (i) {
    var c = live.calculators[i];
    if (!c.spec || !c.embedded) return Promise.resolve([]);
    var vl = Object.assign({}, c.spec);
    delete vl.$schema;
    var chartEl = c.el.querySelector(".mlcalc-view-chart");
    handColumn(vl, chartEl ? chartEl.getBoundingClientRect().width : 0);
    var vg = window.vegaLite.compile(vl).spec;
    var fresh = new window.vega.View(window.vega.parse(vg), { renderer: "none" });
    return fresh.runAsync().then(function () {
      var problems = [];
      (vg.scales || []).forEach(function (sc) {
        var shown = JSON.stringify(c.embedded.view.scale(sc.name).domain());
        var expected = JSON.stringify(fresh.scale(sc.name).domain());
        if (shown !== expected) problems.push("scale " + sc.name + ": " + shown + ", a fresh chart: " + expected);
      });
      fresh.finalize();
      return problems;
    });
  };

  // For tests: a Vega-Lite spec compiled as a chart of the page compiles it (its template, once checked), and the
  // templates' checks still waiting, run now.
  live.compile = function (vl) { return compileVegaLite(vl); };
  // For tests: a chart's parts as a change takes them (read from its template's places where its checked template
  // allows: `placed`), against the parts of the spec compiled by Vega-Lite (`same`: rows, own values and structure equal).
  live.parts = function (vl) {
    var before = live.compiles.placed;
    var got = chartParts(vl);
    var exact = splitVega(window.vegaLite.compile(vl).spec, scaleFields(vl));
    var pick = function (p) { return stableJson({ data: p.data, signals: p.signals, shape: p.shape, frame: p.frame }); };
    return { placed: live.compiles.placed > before, same: pick(got) === pick(exact) };
  };
  live.checkTemplates = function () {
    while (checks.length) checks.shift()();
    return Array.from(templates.values()).map(function (e) { return e.ok; });
  };

  // For tests: the worker (to kill it as a crash would).
  live.engine = function () { return engine; };

  // For tests and the benchmark: one computation in the worker, as a calculator makes it.
  live.run = function (key, values, changed) {
    return startEngine().then(function () { return engine.run(key, values, changed); });
  };

  addStyle();
  var reason = cannotRun();
  if (reason) {
    setState("snapshot");
    live.reason = reason;
  } else {
    // Python starts now (mlcalc-boot.js already created its worker as the page started), not when a
    // calculator comes into view: by the time a reader reaches one it is live.
    startEngine().catch(function () {});
  }
  if (window.require) window.require(["@jupyter-widgets/html-manager"], hook);
})();
