"""The live book: every chapter notebook runs in a real JupyterLab, and its calculator reacts.

A JupyterLab server is started on 127.0.0.1 (on a throw-away copy of notebooks/), and
headless Chromium opens each notebook (in one JupyterLab page, as a reader opens one after another: class
LabPage), runs all cells with JupyterLab's own "Run All",
checks that no cell raised, then changes a control of the first calculator (the first
dropdown or number box, as a reader would) and waits for its output area to change.
That is the end-to-end proof that the calculators are interactive.
"""

from __future__ import annotations

import contextlib
import pathlib

import pytest

from tests.conftest import LIVE_ALL, ONE_PER_PART, ROOT, SCREENSHOTS, chapter_notebooks

# One chapter per part runs in `make test` (a real JupyterLab costs ~13 s a notebook on 2 cores, and
# every calculator runs the same shell); MLCALC_LIVE_ALL=1 runs every chapter. `make bench` changes
# every calculator in JupyterLab anyway, timing each.


def live_notebooks() -> list[pathlib.Path]:
    every = chapter_notebooks()
    if LIVE_ALL:
        return every
    return [p for p in every if str(p.relative_to(ROOT / "notebooks").with_suffix("")) in ONE_PER_PART]


# Bounds (seconds) that keep the test finite on a busy 2-core CI machine.
OPEN_TIMEOUT_S = 90
RUN_ALL_TIMEOUT_S = 180
CHANGE_TIMEOUT_S = 20

# JupyterLab is ready: the notebook is open and its kernel idle (with a path: that notebook is the one shown).
LAB_READY = """(path) => {
  const app = window.jupyterapp;
  const w = app && app.shell && app.shell.currentWidget;
  const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(w && w.content && w.context && w.context.isReady && (!path || w.context.path === path)
            && kernel && kernel.status === 'idle');
}"""

# Open a notebook in the running JupyterLab, as the file browser does.
OPEN_IN_LAB = """(path) => window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'}).then(() => true)"""

# Close every document of the main area without asking to save (the server's copy is thrown away).
CLOSE_ALL = """() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose(); }"""

# Run every cell with JupyterLab's command; resolves to {ok, errors} (or a timeout).
RUN_ALL = """async (timeoutMs) => {
  const app = window.jupyterapp;
  const timeout = new Promise(resolve => setTimeout(() => resolve('timeout'), timeoutMs));
  const ok = await Promise.race([app.commands.execute('notebook:run-all-cells'), timeout]);
  const errors = [];
  for (const cell of app.shell.currentWidget.content.widgets) {
    if (cell.model.type !== 'code') continue;
    const outputs = cell.model.outputs;
    for (let i = 0; i < outputs.length; i++) {
      const out = outputs.get(i).toJSON();
      if (out.output_type === 'error') errors.push(out.ename + ': ' + out.evalue);
    }
  }
  return {ok: ok === true, timedOut: ok === 'timeout', errors};
}"""

# What a calculator shows: the text of its output areas and views (the shell's text/table HTML),
# their images and charts (JupyterLab draws the Vega-Lite output itself, as SVG or canvas).
SIGNATURE = """(calc) => Array.from(calc.querySelectorAll('.widget-output, .mlcalc-view-text')).map(o =>
  o.innerText.trim() + '|' + Array.from(o.querySelectorAll('img')).map(i => i.src.length + ':' + i.src.slice(-120)).join(',')
  + '|' + Array.from(o.querySelectorAll('svg')).map(s => s.innerHTML.length + ':' + s.textContent.slice(0, 400)).join(',')
).join('||')"""

# A chart of the new shell (a Vega-Lite output in the Output widget) drawn natively by JupyterLab.
CHARTS = """(calc) => Array.from(calc.querySelectorAll('.mlcalc-view-chart')).map(o =>
  o.querySelectorAll('svg .mark-rect, svg .mark-rule, svg .mark-line, svg .mark-symbol, svg .mark-area, svg .mark-text, canvas').length)"""

ERROR_TEXT = """(calc) => Array.from(calc.querySelectorAll('.mlcalc-error')).map(e => e.innerText).join(' ')"""


def candidate_changes(control) -> list[tuple[str, object]]:
    """New values to try for a control, the likeliest to be valid first."""
    tag = control.evaluate("el => el.tagName.toLowerCase()")
    if tag == "select":
        current = control.evaluate("el => el.selectedIndex")
        n = control.evaluate("el => el.options.length")
        return [("index", k) for k in [*range(current + 1, n), *range(0, current)]]
    value = float(control.input_value() or 0)
    values = [value * 2, value / 2, value + 1, value - 1] if value else [1, 2]
    return [("number", v) for v in values]


def apply_change(control, kind: str, value) -> None:
    if kind == "index":
        control.select_option(index=value)
    else:
        text = f"{value:g}" if float(value) != int(value) else str(int(value))
        control.fill(text)
        control.press("Enter")


def open_and_run(page, lab, notebook: pathlib.Path) -> dict:
    page.goto(lab.lab_url(notebook), wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_S * 1000)
    page.wait_for_function(LAB_READY, timeout=OPEN_TIMEOUT_S * 1000, polling=250)
    return page.evaluate(RUN_ALL, RUN_ALL_TIMEOUT_S * 1000)


class LabPage:
    """One JupyterLab page that this file's notebooks open in, one after another, as a reader opens them from the
    file browser. Loading JupyterLab costs Chromium 5-7 CPU-s a page (its scripts run again each time, served
    from the HTTP cache or not), opening a notebook in the running lab 1-2 (measured 2026-11-27, load ~10).
    The first test, and the test after one that failed, load JupyterLab afresh on the notebook's URL (?reset)."""

    def __init__(self, context, lab) -> None:
        self.context, self.lab, self.page = context, lab, None
        self.errors: list[str] = []

    def open(self, notebook: pathlib.Path):
        """The page with `notebook` open and its kernel idle; page errors from here on go to self.errors."""
        self.errors = []
        path = notebook.relative_to(ROOT).as_posix()
        if self.page is None:
            self.page = self.context.new_page()
            self.page.on("pageerror", lambda e: self.errors.append(str(e)))
            self.page.goto(self.lab.lab_url(notebook), wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_S * 1000)
        else:
            self.page.evaluate(OPEN_IN_LAB, path)
        self.page.wait_for_function(LAB_READY, arg=path, timeout=OPEN_TIMEOUT_S * 1000, polling=250)
        return self.page

    def close(self, passed: bool) -> None:
        """Close the notebook and shut its kernel down; after a failure, the page itself (the next test loads
        JupyterLab afresh)."""
        if self.page is not None:
            try:
                if not passed:
                    raise RuntimeError
                self.page.evaluate(CLOSE_ALL)
            except Exception:  # noqa: BLE001 - a failed test or a page that no longer answers: start afresh
                with contextlib.suppress(Exception):
                    self.page.close()
                self.page = None
        self.lab.shutdown_kernels()


@pytest.fixture(scope="module")
def lab_page(browser, jupyter_lab):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield LabPage(context, jupyter_lab)
    finally:
        context.close()


def change_first_calculator(page) -> dict:
    """Change the first dropdown or number box of the first calculator until its output changes."""
    calc = page.locator(".jp-Notebook .mlcalc-calculator").first
    calc.wait_for(state="visible", timeout=CHANGE_TIMEOUT_S * 1000)
    calc.scroll_into_view_if_needed()
    page.wait_for_function(f"(c) => ({SIGNATURE})(c).length > 2", arg=calc.element_handle(), timeout=CHANGE_TIMEOUT_S * 1000)
    controls = calc.locator("select, input[type=number]")
    tried = []
    for i in range(min(controls.count(), 3)):
        control = controls.nth(i)
        for kind, value in candidate_changes(control)[:4]:
            before = calc.evaluate(SIGNATURE)
            apply_change(control, kind, value)
            try:
                page.wait_for_function(
                    f"([c, before]) => ({SIGNATURE})(c) !== before",
                    arg=[calc.element_handle(), before],
                    timeout=CHANGE_TIMEOUT_S * 1000 / 4,
                    polling=50,
                )
                return {"control": i, "kind": kind, "value": value, "tried": tried}
            except Exception:  # noqa: BLE001 - Playwright's TimeoutError: try the next value
                tried.append((i, kind, value, calc.evaluate(ERROR_TEXT)))
    raise AssertionError(f"no change of a dropdown or number box changed the calculator's output: {tried}")


@pytest.mark.live
@pytest.mark.browser
@pytest.mark.parametrize("notebook", live_notebooks(), ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_notebook_runs_live_and_its_calculator_reacts(lab_page, notebook):
    passed = False
    try:
        page = lab_page.open(notebook)
        page_errors = lab_page.errors
        result = page.evaluate(RUN_ALL, RUN_ALL_TIMEOUT_S * 1000)
        assert not result["timedOut"], f"Run All did not finish within {RUN_ALL_TIMEOUT_S} s"
        assert result["errors"] == [] and result["ok"], f"cells raised: {result['errors']}"
        if page.locator(".jp-Notebook .mlcalc-calculator").count() == 0:
            assert "application/vnd.jupyter.widget-view+json" not in notebook.read_text(), "the notebook stores widgets but none rendered in JupyterLab"
            passed = True
            return
        calc = page.locator(".jp-Notebook .mlcalc-calculator").first
        calc.wait_for(state="visible", timeout=CHANGE_TIMEOUT_S * 1000)
        # The view's text is shown; a calculator whose view has a chart (its Output widget holds one
        # output) draws it: JupyterLab renders application/vnd.vegalite.v5+json itself.
        calc.scroll_into_view_if_needed()
        page.wait_for_function("(c) => (c.querySelector('.mlcalc-view-text') || {}).textContent", arg=calc.element_handle(),
                               timeout=CHANGE_TIMEOUT_S * 1000)
        if calc.locator(".mlcalc-view-chart .jp-OutputArea-child").count():
            page.wait_for_function(f"(c) => ({CHARTS})(c).some(n => n > 0)", arg=calc.element_handle(),
                                   timeout=CHANGE_TIMEOUT_S * 1000)
        changed = change_first_calculator(page)
        assert changed["kind"] in ("index", "number")
        assert page_errors == [], page_errors
        passed = True
    finally:
        # What JupyterLab showed at the end, kept as a build artifact (also when the test failed).
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = "live__" + str(notebook.relative_to(ROOT / "notebooks").with_suffix("")).replace("/", "__")
        with contextlib.suppress(Exception):
            lab_page.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
        lab_page.close(passed)


# A chapter whose exercises hide their answers in dropdowns and whose first cells hold calculators.
FIRST_LOOK = ROOT / "notebooks" / "memory" / "serving.ipynb"


@pytest.mark.live
@pytest.mark.browser
def test_first_look_in_jupyterlab_before_run_all(lab_page):
    # Opened and not yet run (as a learner first sees it): the book's MyST markup is rendered
    # (jupyterlab-myst), answers stay folded until asked for, and each calculator cell shows a
    # readable snapshot (its text and table), not the JSON rows of its chart.
    passed = False
    try:
        page = lab_page.open(FIRST_LOOK)
        # JupyterLab renders cells lazily as they scroll in: render them all
        page.evaluate("""async () => {
          const nb = window.jupyterapp.shell.currentWidget.content;
          for (let i = 0; i < nb.widgets.length; i++) { nb.activeCellIndex = i; nb.scrollToCell(nb.widgets[i]);
            await new Promise(r => setTimeout(r, 20)); }
        }""")
        page.wait_for_function("document.querySelectorAll('.jp-Notebook .mlcalc-snapshot').length > 0", timeout=30_000)
        outputs = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-Notebook .jp-OutputArea-output'))
            .map(o => o.innerText)""")
        assert outputs and not any('{"' in text for text in outputs), [t[:200] for t in outputs if '{"' in t][:3]
        assert page.locator(".jp-Notebook .mlcalc-snapshot").first.is_visible()
        # The answers of the exercises: a folded dropdown, its text hidden until clicked (jupyterlab-myst
        # renders markdown cells asynchronously: slow on a busy machine)
        page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content;
          nb.widgets.forEach(c => { if (c.model.type === 'markdown') c.rendered = true; }); }""")
        page.wait_for_function("document.querySelectorAll('.jp-Notebook details').length > 0", timeout=60_000)
        answers = page.locator(".jp-Notebook details")
        assert answers.count() >= 1, "the {dropdown} answers are not rendered as dropdowns (is jupyterlab-myst installed?)"
        first = answers.first
        hidden_text = first.evaluate("d => d.open ? 'open' : ''")
        assert hidden_text == "", "an answer is shown unfolded"
        # what the rendered markdown cells show (jupyterlab-myst draws them in a .myst element; an
        # editor's source is not what a reader reads)
        raw = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownCell .myst'))
            .map(e => e.innerText).join('\\n')""")
        assert raw and "```{dropdown}" not in raw and "{ref}`" not in raw
        passed = True
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            lab_page.page.screenshot(path=str(SCREENSHOTS / "live__first_look.png"))
        lab_page.close(passed)
