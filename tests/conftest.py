"""Shared fixtures: the strict build of the book, and the built site served on localhost."""

from __future__ import annotations

import functools
import http.server
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest

from mlcalc import live as mlive

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import handout  # scripts/handout.py: the one reader of _toc.yml

ROOT = pathlib.Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Flags that keep Chromium quiet on a closed network (see shared TOOLCHAIN notes).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The tests' browser reaches 127.0.0.1 and nothing else: every other host name fails to resolve, so a page that
# needs another host fails its test (each page's request listener names the request). Blocking here, rather than
# by intercepting every request (Playwright's context.route), keeps Chromium's HTTP cache on: an interception
# turns it off, and a page would fetch and compile its scripts again (a chapter's 9 MB of them; Pyodide's 41 MB).
OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]


# One chapter per part: the pages whose live tests run on the real thing in `make test` (JupyterLab
# in tests/site/test_live_jupyter.py, Pyodide in tests/site/test_live_site.py); MLCALC_LIVE_ALL=1 runs every page.
ONE_PER_PART = ("start/how-many-gpus", "accelerators/training-cost", "memory/serving", "network/collectives",
                "storage/checkpoints", "hardware/your-own-numbers", "facility/power-and-energy", "plan/training-plan")
LIVE_ALL = bool(os.environ.get("MLCALC_LIVE_ALL"))


def toc_docnames() -> list[str]:
    """Every page of the book, in reading order, from _toc.yml (root first), without suffix."""
    return handout.toc_docnames()


def chapter_notebooks() -> list[pathlib.Path]:
    """The chapter notebooks: every notebooks/**/*.ipynb (checkpoints aside)."""
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def widget_view_count(cell) -> int:
    """How many widget views a stored code cell displays."""
    return sum(
        1
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    )


def _build() -> subprocess.CompletedProcess:
    # make test sets MLCALC_WHEEL_BUILT=1: its prerequisite made the wheel from this checkout just before
    # (the Makefile's rule for it names every source of the wheel); making it again here took a pip wheel
    # and two hashes on the way to the first browser test.
    if not (os.environ.get("MLCALC_WHEEL_BUILT") == "1" and (ROOT / "_vendor" / "vendor" / "mlcalc" / "mlcalc.whl").exists()):
        wheel = subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh")], cwd=ROOT, capture_output=True,
                               text=True, env=dict(os.environ, PYTHON=sys.executable))
        if wheel.returncode != 0:
            return wheel
    if os.environ.get("MLCALC_SITE_BUILT") == "1" and (HTML / "index.html").exists():
        # the wheel and the Pyodide snapshot made with it (scripts/build_wheel.sh)
        shutil.copytree(ROOT / "_vendor" / "vendor" / "mlcalc", HTML / "_static" / "vendor" / "mlcalc", dirs_exist_ok=True)
        return subprocess.CompletedProcess(["(site already built)"], 0, "", "")
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    return subprocess.run(
        [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(ROOT), "-W", "-n", "--keep-going"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="session")
def strict_build(tmp_path_factory) -> subprocess.CompletedProcess:
    """Build the book as the README does, strictly (-W -n --keep-going); return the finished process.

    The wheel of mlcalc the site's calculators run is rebuilt first (as make book does), so the page
    never runs an older mlcalc than the one under test (under make test, its prerequisite has just made it). MLCALC_SITE_BUILT=1 tests the site already
    in _build/html instead (quicker while working on the site's scripts; CI never sets it).

    With pytest-xdist (make test runs three workers) the first worker that needs the site builds it,
    under a lock, and records the outcome; the others read the record: one build per run.
    """
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    record = shared / "strict-build.json"
    with FileLock(str(shared / "strict-build.lock")):
        if record.exists():
            done = json.loads(record.read_text())
            return subprocess.CompletedProcess(done["args"], done["returncode"], done["stdout"], done["stderr"])
        proc = _build()
        record.write_text(json.dumps({"args": [str(a) for a in proc.args], "returncode": proc.returncode,
                                      "stdout": proc.stdout, "stderr": proc.stderr}))
        return proc


# The stand-in for the site's worker (book/_static/mlcalc-worker.mjs): the same messages, answered by
# CPython through a function the test exposes to the page. Other workers are left alone.
_STANDIN_WORKER = """(() => {
  const RealWorker = window.Worker;
  window.Worker = function (url, options) {
    if (!String(url).includes('mlcalc-worker')) return new RealWorker(url, options);
    const self = this;
    setTimeout(() => self.onmessage && self.onmessage({data: {ready: true, timings: {standin: true}}}), 0);
    this.postMessage = (msg) => window.__mlcalcCPython(JSON.stringify(msg))
      .then((out) => self.onmessage && self.onmessage({data: JSON.parse(out)}));
    this.terminate = () => {};
  };
})();"""


def _cpython_worker(message: str) -> str:
    """What the site's worker answers, computed by CPython (its onmessage, line for line)."""
    msg = json.loads(message)
    page = json.dumps(msg.get("initial") or {})
    if msg.get("open"):
        result = mlive.open_widgets_json(str(msg.get("key")), str(msg.get("search") or ""), page)
    else:
        result = mlive.run_widgets_json(str(msg.get("key")), json.dumps(msg.get("values") or {}),
                                        str(msg.get("changed") or ""), page if msg.get("initial") else "",
                                        str(msg.get("search") or ""))
    if msg.get("warm"):  # the page's warm-up: computed, the answer not sent back
        return json.dumps({"id": msg.get("id"), "warmed": True, "python": 0})
    return json.dumps({"id": msg.get("id"), "result": result})


def use_cpython_worker(page) -> None:
    """Answer the page's calculators with CPython (mlcalc.live) instead of starting Pyodide: for the tests
    of what the page does with results (tests/site/test_live_site.py) and of its layout once live."""
    page.expose_function("__mlcalcCPython", _cpython_worker)
    page.add_init_script(_STANDIN_WORKER)


@pytest.fixture(scope="session")
def site_url(strict_build):
    """The built site served over HTTP on a free localhost port."""
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed, so there is no site to test:\n" + strict_build.stdout[-3000:])
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (never a downloaded browser), reaching 127.0.0.1 only (OFFLINE_ARGS)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run 'apt-get install -y chromium' (make test does this as root)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + OFFLINE_ARGS)
        yield browser
        browser.close()


def disk_profile(browser, directory, **options):
    """A browser context whose profile is on disk in `directory`: its own Chromium, launched as `browser` was (the same
    flags: only 127.0.0.1 reachable). Unlike the incognito contexts of browser.new_context, it keeps compiled scripts
    (V8's code cache) and files of any size in its HTTP cache, as a reader's browser does, so a test that opens many
    pages of the site compiles a chapter's scripts once (measured 2026-11-27: a chapter's load 2.6-3.0 CPU-s in an
    incognito context, 1.7-2.0 from a profile on disk)."""
    return browser.browser_type.launch_persistent_context(directory, executable_path=CHROMIUM,
                                                         args=CHROMIUM_ARGS + OFFLINE_ARGS, **options)


class NetworkWatch:
    """The requests a page has in flight, kept from its own events ('request', then 'requestfinished' or
    'requestfailed'; a redirect finishes one request and starts the next), and a wait for what Playwright's "networkidle"
    load state means: no request in flight for half a second. Attach it before the page's first navigation.

    Playwright's own state is unreliable here (1.65.2; microsoft/playwright issue 42598, closed without a fix): once
    "networkidle" has been recorded, a request that starts and finishes does not re-arm its 500 ms timer; the next
    lifecycle event (domcontentloaded) recomputes the state, finds the frame not idle and removes it, and only a request
    started after that brings it back. A chapter opened from a warm disk cache (disk_profile) does exactly this: every
    file is served at once, the parser then runs embed-amd.js (4.3 MB) for over 500 ms with no request open, so
    "networkidle" fires before DOMContentLoaded; the search scripts and MathJax's fonts are then fetched and finished
    before DOMContentLoaded, and nothing is fetched after it (the profile already holds the favicon, which an incognito
    context fetches after the load event, re-arming the timer), so wait_for_load_state("networkidle") never returned,
    with nothing in flight. Seen 2026-11-27 on notebooks/memory/serving with the CPU slowed 4x (CDP): 5 stalls in 6
    runs from a disk profile (Playwright's log: "networkidle" before "domcontentloaded", none after), none in 3 with
    this wait, none from an incognito context."""

    clock = staticmethod(time.monotonic)

    def __init__(self, page) -> None:
        self.page = page
        self.inflight: dict = {}  # request -> its URL
        self.changed = self.clock()
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, request) -> None:
        self.inflight[request] = request.url
        self.changed = self.clock()

    def _ended(self, request) -> None:
        self.inflight.pop(request, None)
        self.changed = self.clock()

    def wait_until_quiet(self, quiet_s: float = 0.5, timeout_s: float = 30.0) -> None:
        """Return once no request has been in flight for `quiet_s` (events are delivered in order with each round trip
        to Playwright's driver, so the quiet is counted from when this process saw the last one: never shorter)."""
        deadline = self.clock() + timeout_s
        while self.inflight or self.clock() - self.changed < quiet_s:
            if self.clock() > deadline:
                raise TimeoutError(f"the page's network was not quiet for {quiet_s} s within {timeout_s} s; in flight: "
                                   + (", ".join(sorted(self.inflight.values())) or "nothing (a request ended just now)"))
            self.page.wait_for_timeout(100)


def pytest_configure(config):
    config.addinivalue_line("markers", "live: drives a real JupyterLab server in headless Chromium")
    config.addinivalue_line("markers", "build: needs the strict build of the book (added to every test that uses it)")


_BUILD_FIXTURES = {"strict_build", "site_url", "browser", "jupyter_lab"}


def pytest_collection_modifyitems(config, items):
    """Mark every test that needs the built book or a browser, so `make check` can leave them out."""
    for item in items:
        if _BUILD_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.build)


# Under pytest-xdist (make test runs three workers) every test goes to whichever worker is free, except
# the tests that must share one process, in order: a notebook's nbval cells (one kernel runs them
# all) and the files below (one JupyterLab server for the live-Jupyter tests). xdist's own
# "loadgroup" cannot do this with pytest 9.2 (it renames node ids through an attribute pytest no
# longer reads), so the grouping is this scheduler's.
_ONE_WORKER = {"tests/site/test_live_jupyter.py"}
# Files whose tests of one calculator share what they compute in one process (an lru_cache per state):
# their tests are grouped by the calculator's key, so the states two tests have in common are computed once.
_ONE_WORKER_PER_PARAM = {"tests/calculators/test_glance.py"}
# Files whose tests read every accuracy family (mlcalc.accuracy.cases, lru-cached per process: 5.8 CPU-s, 3.3 of them
# the MLPerf rate search): one worker runs them all, so the families are computed once a run, not once a worker.
_ONE_WORKER_TOGETHER = {"tests/core/test_accuracy.py": "accuracy families", "tests/core/test_mlperf.py": "accuracy families"}
# Files whose tests share one browser profile on disk (conftest.disk_profile; test_layout.py: one per width): its
# Chromium starts and its caches fill (Pyodide fetched and compiled, a chapter's scripts) on the first page of each
# worker that runs any of them. Spread test by test over three workers, each filled its own: test_live_url.py in one
# process 41.9 CPU-s (cputree, site built, load ~3), in three 55.2 (the three runs' 62.2 less two processes' start
# and collection, 3.5 each). Each of these scopes goes to one worker.
_ONE_PROFILE = {"tests/site/test_live_url.py": "", "tests/site/test_layout.py": "width"}
# The browser tests, the slowest per test first (one-process run, 2026-11-27: the handout print 41 s; test_live_url
# 14 s a test; test_live_site 8 s; test_layout 4 s); the rest of tests/site after them (most read the built HTML).
# (test_live_url.py and test_layout.py now go as groups, _ONE_PROFILE: the largest groups first, before these.)
_BROWSER_FIRST = ("tests/site/test_handout.py", "tests/site/test_live_url.py", "tests/site/test_live_site.py",
                  "tests/site/test_layout.py", "tests/site/", "tests/calculators/test_exercises.py::test_exercises_grade_on_the_live_site")


def _dispatch_rank(scope: str, size: int) -> tuple[int, int, int]:
    """Where a scope goes in the queue (lowest first; ties keep the collection order). A long chain must start early
    and short tests come last, where they fill the workers' ends (in the order xdist gave, the one-worker
    test_live_jupyter.py chain began after every larger notebook, and ended its run alone):
    1. test_live_jupyter.py: the longest chain of one worker (9 notebooks in one JupyterLab, 100-150 s); its
       fixture starts the strict build, which every browser test waits for;
    2. the notebooks, the most cells first: they need no build, so the other workers run them while it builds;
    3. the other groups of tests, the largest first;
    4. the browser tests, the slowest per test first (_BROWSER_FIRST);
    5. every other test (a unit test: milliseconds to a few seconds), in the collection order."""
    path = scope.split("::", 1)[0]
    if scope in _ONE_WORKER:
        return (0, -size, 0)
    if path.endswith(".ipynb"):
        return (1, -size, 0)
    if size > 1:
        return (2, -size, 0)
    for i, head in enumerate(_BROWSER_FIRST):
        if scope.startswith(head):
            return (3, i, 0)
    return (4, 0, 0)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class _Scheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in _ONE_WORKER_PER_PARAM and nodeid.endswith("]"):
                return path + "::[" + nodeid.split("[", 1)[1]
            if path in _ONE_WORKER_TOGETHER:
                return _ONE_WORKER_TOGETHER[path]
            if path in _ONE_PROFILE:  # test_layout.py: the phone pages, and the rest (at 1280 px)
                return path + ("::phone" if _ONE_PROFILE[path] and nodeid.endswith("-phone]") else "")
            return path if path.endswith(".ipynb") or path in _ONE_WORKER else nodeid

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first call: xdist's schedule() has just filled the queue
                self.ordered = True
                queue = sorted(self.workqueue.items(), key=lambda kv: _dispatch_rank(kv[0], len(kv[1])))
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

    return _Scheduling(config, log)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterLab:
    """A JupyterLab server on localhost, serving a throw-away copy of notebooks/."""

    def __init__(self, workdir: pathlib.Path, startup_timeout_s: float = 60.0) -> None:
        self.workdir = workdir
        shutil.copytree(ROOT / "notebooks", workdir / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        self.token = os.urandom(12).hex()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        jupyter = pathlib.Path(sys.executable).with_name("jupyter")
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            JUPYTER_CONFIG_DIR=str(workdir / "config"),
            JUPYTERLAB_SETTINGS_DIR=str(workdir / "settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(workdir / "workspaces"),
            JUPYTER_RUNTIME_DIR=str(workdir / "runtime"),
        )
        # No news toast (it would ask to fetch from the internet) in a fresh settings folder.
        notification = workdir / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notification.parent.mkdir(parents=True, exist_ok=True)
        notification.write_text(json.dumps({"fetchNews": "false"}))
        self.log = workdir / "server.log"
        self.proc = subprocess.Popen(
            [
                str(jupyter if jupyter.exists() else shutil.which("jupyter")), "lab", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={workdir}",
                "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells through lab's own commands
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=workdir, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + startup_timeout_s
        while True:
            try:
                self.api("GET", "status")
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("JupyterLab did not start:\n" + self.log.read_text()[-3000:]) from None
                time.sleep(0.25)

    def api(self, method: str, path: str):
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def lab_url(self, notebook: pathlib.Path) -> str:
        rel = notebook.relative_to(ROOT).as_posix()
        return f"{self.url}/lab/tree/{rel}?token={self.token}&reset"

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "sessions") or []:
            self.api("DELETE", f"sessions/{session['id']}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


@pytest.fixture(scope="session")
def jupyter_lab(strict_build):
    """A real JupyterLab server on 127.0.0.1 (its own copy of the notebooks: autosave never touches the repository).

    It starts after the strict build: with ipykernel 7, builds that ran while this server was
    up (or just after it) sometimes sat idle for 300 s in a notebook (ipykernel issue 1554).
    """
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="mlcalc-lab-"))
    lab = JupyterLab(workdir)
    try:
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


def _property_cases() -> int:
    mod = sys.modules.get("tests.core.test_properties")
    return int(getattr(mod, "CASES", {}).get("n", 0)) if mod is not None else 0


_WORKER_CASES: dict[str, int] = {}


def pytest_sessionfinish(session):
    """Under pytest-xdist, a worker hands its count of generated cases to the controller."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["property_cases"] = _property_cases()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _WORKER_CASES[str(getattr(node, "gateway", node).id)] = int(getattr(node, "workeroutput", {}).get("property_cases", 0))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """How many generated cases the property tests ran (tests/core/test_properties.py), over every worker."""
    n = _property_cases() + sum(_WORKER_CASES.values())
    if n:
        terminalreporter.write_line(f"property tests: {n} generated cases")
