"""The calculators live on the static site: Python (Pyodide + the mlcalc wheel) in the reader's browser.

The built site is served on 127.0.0.1 and no other host can be reached. On every page with
calculators, each calculator's every control is changed once through its widget (a number box is
typed into, a slider moved with the keyboard, a dropdown or toggle picked, a box ticked), and what
the page then shows (the text, the inline message, the chart's spec) must equal what CPython's
mlcalc computes for the values the controls hold. The list of calculators and their controls comes
from the registry (mlcalc.calc.REGISTRY) and the built pages, so converted calculators are covered
as soon as they land. Also: bad values typed on the site, hostile values sent to the worker, the
snapshot state from file://, and no request, page error or console error anywhere.

Python in the page: on one chapter per part (conftest.ONE_PER_PART; MLCALC_LIVE_ALL=1: every page)
the page runs the real thing, Pyodide in its Web Worker. On the other pages a stand-in for the
worker answers each message with CPython's mlcalc.live, the same functions the worker calls: those
pages check what the page does with the values and results (the wiring of every calculator, its
controls, messages and charts) without paying Pyodide's start (5-10 s a page on 2 busy cores).
That Pyodide computes every calculator as CPython does is checked once for all of them, in one page
(test_pyodide_computes_every_calculator_like_cpython).
"""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.conftest import HTML, LIVE_ALL, ONE_PER_PART, NetworkWatch, disk_profile, toc_docnames, use_cpython_worker
from tests.site.test_layout import LIVE_SITE_LAPTOP, check_page

from mlcalc.calc import get
from mlcalc import live as mlive
from mlcalc.calc import REGISTRY
from mlcalc.live import controls_after, run_widgets, widget_state, widget_values

LIVE_TIMEOUT_MS = 90_000  # Pyodide's start on a busy 2-core machine (about 2-3 s when idle)
CHANGE_TIMEOUT_MS = 15_000


def _calculator_keys(docname: str) -> list[str]:
    """The calculators a built page stores, by key (the new shell's DOM class mlcalc-calc-<key>)."""
    path = HTML / f"{docname}.html"
    if not path.exists():
        return []
    return re.findall(r'"_dom_classes": \["mlcalc-calculator", "mlcalc-calc-([\w.]+)"\]', path.read_text())


def _pages_with_calculators() -> list[str]:
    # The pages are known only after the build; collect from the toc and skip pages without any.
    return [d for d in toc_docnames() if d.startswith("notebooks/")]


@pytest.fixture(scope="module")
def live_context(browser, site_url, tmp_path_factory):
    """One browser profile for every page, on disk (conftest.disk_profile): its caches keep Pyodide and the chapter's
    scripts between pages, fetched once and compiled once (V8's code cache). An incognito context (browser.new_context)
    keeps no compiled code and no file over ~6 MB (the 31.5 MB snapshot, the 9.6 MB runtime). Other hosts cannot be
    reached (conftest.OFFLINE_ARGS: an intercepting route would turn the cache off); any request for one is recorded
    and fails the page's test."""
    context = disk_profile(browser, tmp_path_factory.mktemp("chromium-live"), viewport={"width": 1280, "height": 900})
    outside: list[str] = []
    context.on("request", lambda r: r.url.startswith((site_url + "/", "data:", "blob:")) or outside.append(r.url))
    context.outside = outside
    yield context
    context.close()


def _real_pyodide(docname: str) -> bool:
    return LIVE_ALL or docname.removeprefix("notebooks/") in ONE_PER_PART


def _watch(page, site_url) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    page.on("request", lambda r: r.url.startswith((site_url + "/", "data:", "blob:"))
            or problems.append(f"request outside 127.0.0.1: {r.url}"))
    return problems


CALC = "(i) => window.mlcalcLive.calculators[i]"
STATE = f"""(i) => {{ const c = ({CALC})(i); const box = c.el.querySelector('.mlcalc-view-chart .mlcalc-chart');
  return {{requested: c.requested, shown: c.shown, values: c.values(), last: c.last, key: c.key,
          text: c.el.querySelector('.mlcalc-view-text').innerText,
          message: c.el.querySelector('.mlcalc-message').innerText.trim(),
          spec: box ? box.mlcalcSpec : null, svg: box ? box.querySelectorAll('svg').length : 0,
          stale: c.el.querySelectorAll('.mlcalc-stale').length, change: c.lastChange || null,
          disabled: Object.keys(c.controls).filter(k => c.controls[k].get('disabled')),
          rendered: window.mlcalcLive.checkRendered(i)}}; }}"""


LIGHT = f"(i) => {{ const c = ({CALC})(i); return {{requested: c.requested, values: c.values()}}; }}"


def _wait_shown(page, i: int, before: int) -> bool:
    try:
        page.wait_for_function(
            f"([i, before]) => {{ const c = ({CALC})(i); return c.requested > before && c.shown === c.requested; }}",
            arg=[i, before], timeout=CHANGE_TIMEOUT_MS, polling=20)
        return True
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: the control did not change
        return False


def _expected(key: str, values: dict) -> dict:
    """What CPython's mlcalc shows for the widget values the page holds (the same translation as the worker)."""
    return json.loads(json.dumps(run_widgets(key, values)))


def _check_parity(page, i: int, where: str) -> dict:
    state = page.evaluate(STATE, i)
    change = state["change"]
    if change:
        # Linked controls moved as the Jupyter shell moves them; irrelevant controls are disabled.
        after, inactive = controls_after(state["key"], change["changed"], widget_values(state["key"], change["values"]))
        assert state["values"] == widget_state(state["key"], after), f"{where}: linked controls differ from CPython"
        assert sorted(state["disabled"]) == inactive, f"{where}: disabled controls differ from CPython"
    expected = _expected(state["key"], state["values"])
    last = state["last"]
    assert last is not None, f"{where}: nothing computed"
    assert last["values"] == state["values"], f"{where}: the output is for other values than the controls show"
    if expected["ok"]:
        assert last["ok"], f"{where}: the page shows an error, CPython computes: {last.get('error')}"
        assert last["html"] == expected["html"], f"{where}: text differs from CPython"
        assert state["message"] == "", f"{where}: a message is left over: {state['message']}"
        for line in expected["text"].splitlines()[:3]:
            assert line.split(" | ")[0].strip() in state["text"], f"{where}: {line!r} not on the page"
        assert state["spec"] == expected["chart"], f"{where}: chart differs from CPython"
        if expected["chart"] is not None:
            assert state["svg"] >= 1, f"{where}: chart not drawn"
        # What the chart on screen draws (its Vega view's data and title) is the result's, its scales as a new chart's.
        assert state["rendered"] == [], where
        assert page.evaluate("(i) => window.mlcalcLive.checkScales(i)", i) == [], where
        assert state["stale"] == 0, f"{where}: output still marked stale"
    else:
        assert not last["ok"], f"{where}: CPython says {expected['error']!r}, the page shows a result"
        assert expected["error"] in state["message"] and "Check the input" in state["message"], state["message"]
    return {"text": state["text"], "spec": json.dumps(state["spec"], sort_keys=True), "ok": expected["ok"]}


ATTEMPTS = 3  # ways to change one control (the next option, the next but one, back the other way ...)


def _change(page, calc_el, i: int, control, values: dict, attempt: int = 0, to=None) -> bool:
    """Change one control through its widget, as a reader would (``to``: set this value instead).

    False when this attempt would give the value the control already holds (nothing to wait for)."""
    el = calc_el.locator(f".mlcalc-ctl-{control.key}")
    value = values[control.key]
    kind = control.kind
    if kind in ("number", "int"):
        if to is not None:
            new = to
        elif kind == "int":
            new = [value * 2, value + 1, max(value // 2, 1)][attempt] if value else attempt + 1
        else:
            new = float(f"{[value * 1.5, value / 2, value * 4][attempt]:.3g}") if value else float(attempt + 1)
        if new == value:
            return False
        box = el.locator("input")
        box.fill(str(int(new)) if float(new).is_integer() else repr(float(new)))
        box.press("Enter")
    elif kind in ("slider", "int_slider", "log_slider"):
        handle = el.locator(".noUi-handle")
        handle.focus()
        if to is not None:  # back where it was: the key that moved it, the other way
            handle.press(to)
        else:
            key = "ArrowRight" if attempt != 1 else "ArrowLeft"
            at = math.log10(value) if kind == "log_slider" and value > 0 else value
            if (key == "ArrowRight" and at >= control.max) or (key == "ArrowLeft" and at <= control.min):
                return False  # at that end already
            handle.press(key)
    elif kind in ("choice", "toggle"):
        n = len(control.options)
        index = to if to is not None else (value + 1 + attempt) % n
        if index == value:
            return False
        if kind == "choice":
            el.locator("select").select_option(index=index)
        else:
            el.locator("button").nth(index).click()
    elif kind == "check":
        el.locator("input[type=checkbox]").click()
    else:  # text
        text = to if to is not None else value.rstrip() + "\n" * (attempt + 1)
        if text == value:
            return False
        area = el.locator("textarea")
        area.fill(text)
        area.blur()
    return True


def _goto_live(page, site_url, docname: str) -> int:
    page.goto(f"{site_url}/{docname}.html", wait_until="domcontentloaded", timeout=60_000)
    n = len(_calculator_keys(docname))
    page.wait_for_function(f"() => window.mlcalcLive && window.mlcalcLive.calculators.length >= {n}",
                           timeout=60_000, polling=100)
    page.locator(".mlcalc-calculator").first.scroll_into_view_if_needed()
    page.wait_for_function("() => ['live', 'snapshot'].includes(window.mlcalcLive.state)", timeout=LIVE_TIMEOUT_MS,
                           polling=100)
    # The page's warm-up done (or never started: a snapshot): a change then waits for no warm-up slice (changes made
    # while it runs: test_a_change_made_while_the_warm_up_runs_gets_its_own_answer).
    page.wait_for_function("() => window.mlcalcLive.state === 'snapshot' || ['done', 'off'].includes(window.mlcalcLive.warm.state)",
                           timeout=LIVE_TIMEOUT_MS, polling=100)
    return page.evaluate("() => window.mlcalcLive.calculators.filter(c => !c.unsupported).length")


@pytest.mark.browser
@pytest.mark.parametrize("docname", _pages_with_calculators())
def test_every_calculator_recomputes_in_the_page_like_cpython(live_context, site_url, docname):
    keys = _calculator_keys(docname)
    page = live_context.new_page()
    real = _real_pyodide(docname)
    if not real:
        use_cpython_worker(page)
    problems = _watch(page, site_url)
    network = NetworkWatch(page)  # before the page's first request: check_page waits for a quiet network
    try:
        if not keys:  # nothing to change: the page's 1280 px pass of tests/site/test_layout.py only
            page.goto(f"{site_url}/{docname}.html", wait_until="load", timeout=30_000)
            check_page(page, network, docname, "laptop")
        else:
            _goto_live(page, site_url, docname)
            # This load is also the chapter's 1280 px pass of tests/site/test_layout.py (its LIVE_SITE_LAPTOP), made
            # before any control changes: the same width, the same stand-in worker (or Pyodide), one load, not two.
            check_page(page, network, docname, "laptop")
            live = page.evaluate("() => ({state: mlcalcLive.state, reason: mlcalcLive.reason, history: mlcalcLive.history,"
                                 " standin: !!(mlcalcLive.timings.worker || {}).standin})")
            assert live["state"] == "live", live["reason"]
            assert live["history"][:3] == ["idle", "loading", "live"], live["history"]
            assert live["standin"] == (not real), "Pyodide runs on one page per part, the stand-in elsewhere"
            calcs = page.evaluate("() => mlcalcLive.calculators.map(c => c.key)")
            assert sorted(calcs) == sorted(keys), "every calculator on the page is connected"
            elements = page.locator(".mlcalc-calculator")
            for i, key in enumerate(calcs):
                calc = get(key)
                calc_el = elements.nth(i)
                calc_el.scroll_into_view_if_needed()
                assert "Live" in calc_el.locator(".mlcalc-status").inner_text()
                first = page.evaluate(STATE, i)
                seen = {(first["text"], json.dumps(first["spec"], sort_keys=True))}  # what the page was built with
                # One control of each kind (the first of that kind; a greyed-out one waits for another pass).
                kinds: dict[str, list] = {}
                for c in calc.controls:
                    kinds.setdefault(c.kind, []).append(c)
                pending = [cs[0] for cs in kinds.values()]
                for _ in range(3):  # a control greyed out now may come back once another one changed
                    later = []
                    for control in pending:
                        where = f"{key}: {control.key} ({control.kind})"
                        if page.evaluate(f"([i, k]) => ({CALC})(i).controls[k].get('disabled')", [i, control.key]):
                            later.append(control)
                            continue
                        original = page.evaluate(LIGHT, i)["values"][control.key]
                        changed = False
                        for attempt in range(ATTEMPTS):
                            state = page.evaluate(LIGHT, i)
                            if not _change(page, calc_el, i, control, state["values"], attempt):
                                continue  # that way gives the value it has: the next way
                            if not _wait_shown(page, i, state["requested"]):
                                continue  # that did not change the value (a slider at its end): the next way
                            changed = True
                            shown = _check_parity(page, i, f"{where} #{attempt}")
                            seen.add((shown["text"], shown["spec"]))
                            assert not shown["ok"] or shown["text"].strip(), f"{where}: empty text"
                            if shown["ok"]:
                                break
                            # The message was shown as in Jupyter; back to the value it had, then the next way.
                            state = page.evaluate(LIGHT, i)
                            back = (["ArrowLeft", "ArrowRight", "ArrowLeft"][attempt] if control.kind.endswith("slider")
                                    else original)
                            if control.kind == "check" or state["values"][control.key] != original:
                                _change(page, calc_el, i, control, state["values"], to=back)
                                assert _wait_shown(page, i, state["requested"]), f"{where}: could not set it back"
                                _check_parity(page, i, f"{where} (set back)")
                            if control.kind == "check":
                                break
                        assert changed, f"{where}: changing it through its widget changed nothing"
                    pending = later
                assert len(seen) >= 2 or len(calc.controls) < 2, f"{key}: no change of a control changed its output"
    finally:
        page.close()
    assert problems == [], "\n".join(problems)
    assert live_context.outside == [], live_context.outside
    if not keys:
        pytest.skip("no calculator of the new shell on this page (its 1280 px layout checked)")


def test_the_chapters_1280_px_layout_pass_is_made_here():
    """tests/site/test_layout.py leaves the chapters' 1280 px pass to the test above (one page load, not two): the pages
    it leaves are the pages that test opens."""
    assert sorted(LIVE_SITE_LAPTOP) == sorted(_pages_with_calculators()) and LIVE_SITE_LAPTOP


def _changed_values(key: str) -> list[dict]:
    """Widget values for one calculator: its defaults, then one control of each kind changed (as the
    page tests change them: a number x 1.5, a count x 2, the next option, a box ticked, one slider step)."""
    calc = REGISTRY[key]
    base = mlive.widget_state(key, calc.values({}))
    out = [dict(base)]
    kinds: dict[str, object] = {}
    for c in calc.controls:
        kinds.setdefault(c.kind, c)
    for c in kinds.values():
        v = base[c.key]
        if c.kind in ("choice", "toggle"):
            new = (v + 1) % len(c.options)
        elif c.kind == "check":
            new = not v
        elif c.kind == "int":
            new = v * 2 if v else 1
        elif c.kind == "number":
            new = float(f"{v * 1.5:.3g}") if v else 1.0
        elif c.kind.endswith("slider"):
            step = c.step or (1 if c.kind == "int_slider" else (c.max - c.min) / 100)
            new = v + step if v + step <= c.max else v - step
        else:  # text
            new = v.rstrip() + "\n"
        out.append(dict(base, **{c.key: new}))
    return out


@pytest.mark.browser
def test_pyodide_computes_every_calculator_like_cpython(live_context, site_url):
    """Every registered calculator, at its defaults and with one control of each kind changed, computed by
    Pyodide in the site's worker, equals CPython's result (text, HTML, chart, message, linked controls)."""
    page = live_context.new_page()
    problems = _watch(page, site_url)
    cases = []
    for key in sorted(REGISTRY):
        base, *variants = _changed_values(key)
        cases.append((key, base, ""))
        cases += [(key, v, next(k for k in v if v[k] != base[k])) for v in variants if v != base]
    try:
        _goto_live(page, site_url, "notebooks/start/how-many-gpus")
        assert page.evaluate("() => !(mlcalcLive.timings.worker || {}).standin"), "the real worker runs here"
        got = page.evaluate("""async (cases) => { const out = [];
            for (const [k, v, c] of cases) out.push(await window.mlcalcLive.run(k, v, c));
            return out; }""", cases)
    finally:
        page.close()
    assert len(got) == len(cases) and len(cases) >= 2 * len(REGISTRY)
    for (key, values, changed), result in zip(cases, got):
        expected = json.loads(json.dumps(run_widgets(key, values, changed)))
        assert result == expected, f"{key} {changed or '(defaults)'}: Pyodide and CPython differ"
        assert expected["ok"] or changed, f"{key}: its defaults give an error: {expected.get('error')}"
    assert problems == [], "\n".join(problems)


def _each_control_changed(key: str) -> list[dict]:
    """Widget values for one calculator: its defaults, then each control changed alone (as _changed_values changes
    one of each kind): several value sets of one chart's structure."""
    calc = REGISTRY[key]
    base = mlive.widget_state(key, calc.values({}))
    out = [dict(base)]
    for c in calc.controls:
        v = base[c.key]
        if c.kind in ("choice", "toggle"):
            new = (v + 1) % len(c.options)
        elif c.kind == "check":
            new = not v
        elif c.kind == "int":
            new = v * 2 if v else 1
        elif c.kind == "number":
            new = float(f"{v * 1.5:.3g}") if v else 1.0
        else:  # sliders, text: _changed_values's page tests change them
            continue
        out.append(dict(base, **{c.key: new}))
    return out


_STABLE = """function stable(x) {
  if (Array.isArray(x)) return "[" + x.map(stable).join(",") + "]";
  if (x && typeof x === "object") return "{" + Object.keys(x).sort().map(k => JSON.stringify(k) + ":" + stable(x[k])).join(",") + "}";
  return x === undefined ? "null" : JSON.stringify(x);
}"""


@pytest.mark.browser
def test_a_chart_taken_from_its_template_is_the_chart_compiled(live_context, site_url):
    """A chart's Vega spec taken from its checked template (its structure compiled once, this spec's rows and values
    put in their places) equals the spec compiled by Vega-Lite, for every calculator's chart at its defaults and
    with each control changed; and most of them do come from a template (the page compiles fewer specs). The parts a
    change draws (rows, own values, the structure's text), read from the template's places without the whole spec
    filled and copied, equal those of the spec compiled, and most charts (the catalogue's and the collective's
    among them) are read so."""
    import mlcalc.calculators  # noqa: F401  (registers every calculator)

    specs = []
    for key in sorted(REGISTRY):
        for values in _each_control_changed(key):
            result = run_widgets(key, values)
            if result.get("ok") and result.get("chart"):
                specs.append([key, json.loads(json.dumps(result["chart"]))])
    page = live_context.new_page()
    # Python in the page plays no part here (the specs come from CPython above, the page compiles them): the stand-in
    # worker answers the page's own start, which would otherwise start Pyodide beside the compiles.
    use_cpython_worker(page)
    problems = _watch(page, site_url)
    try:
        page.goto(f"{site_url}/notebooks/start/how-many-gpus.html", wait_until="load", timeout=60_000)
        page.wait_for_function("() => window.mlcalcLive && window.vegaLite", timeout=60_000, polling=100)
        out = page.evaluate("(specs) => {" + _STABLE + """
            const live = window.mlcalcLive, differ = [];
            const before = Object.assign({}, live.compiles);
            for (const [key, spec0] of specs) {
              const spec = Object.assign({}, spec0);
              delete spec.$schema;
              const got = stable(live.compile(spec));
              live.checkTemplates();
              if (got !== stable(window.vegaLite.compile(spec).spec)) differ.push(key);
            }
            const counts = {template: live.compiles.template - before.template, compiled: live.compiles.compiled - before.compiled};
            // Each spec again, its template checked (the page keeps the last 32: made again here): the parts a change
            // draws (rows, own values, structure), read from the template's places alone where it allows, equal those
            // of the spec compiled by Vega-Lite.
            const partsDiffer = [], placed = [], untemplated = [];
            for (const [key, spec0] of specs) {
              const spec = Object.assign({}, spec0);
              delete spec.$schema;
              live.compile(spec);
              live.checkTemplates();
              const templated = live.compiles.template;
              live.compile(spec);
              if (live.compiles.template === templated && !untemplated.includes(key)) untemplated.push(key);
              const p = live.parts(spec);
              if (!p.same) partsDiffer.push(key);
              if (p.placed) placed.push(key);
            }
            return {differ, ...counts, partsDiffer, placed, untemplated};
        }""", specs)
    finally:
        page.close()
    assert len(specs) > 100
    assert out["differ"] == [], f"taken from a template, these charts differ from their compiled spec: {out['differ']}"
    assert out["template"] + out["compiled"] == len(specs)
    assert out["template"] > len(specs) / 2, out
    assert out["partsDiffer"] == [], f"read from their template's places, these charts' parts differ: {out['partsDiffer']}"
    assert len(out["placed"]) > len(specs) / 2, (len(out["placed"]), len(specs))
    # Every chart, its template checked, comes from it: a chart whose template fails its check is compiled by Vega-Lite
    # on every change (network.step_comm's and network.layout's stacked bars were, 2026-11-27: Vega-Lite wrote their
    # colour domain into a stack's sort expression, where no placeholder is placed; 20-120 ms of the page's first
    # changes on the loaded 2-core machine).
    assert out["untemplated"] == [], f"these charts are compiled on every change: {out['untemplated']}"
    # the two slowest changes of the bench (2026-11-27) take their parts from their template's places
    assert {"accelerators.catalogue", "network.collective"} <= set(out["placed"])
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
def test_a_chart_whose_rows_and_categories_change_keeps_its_view_and_compiles_nothing(live_context, site_url):
    """The catalogue's chart for another dtype has other rows, more or fewer of them, and other vendors (its colour
    scale's categories): the same structure. From the page's own chart on, no such change compiles a Vega-Lite spec
    (each fills the template the page's chart made and checked) or makes a new Vega view (the rows change in the view
    on screen, those it held kept where their fields match), and each draws what CPython computes (data and scales
    as a fresh chart's). A change back to the page's values fills the same template: the page's stored spec (its
    keys sorted) and Python's numbers its placeholders alike."""
    docname = "notebooks/accelerators/catalogue"
    key = "accelerators.catalogue"
    calc = get(key)
    base = widget_state(key, calc.values({}))
    dtype = next(c for c in calc.controls if c.key == "dtype")

    def shape(index: int) -> tuple[int, int]:
        layer = run_widgets(key, dict(base, dtype=index))["chart"]["layer"][0]
        return len(layer["data"]["values"]), len(layer["encoding"]["color"]["scale"]["domain"])

    shapes = {i: shape(i) for i in range(len(dtype.options))}
    # fewer rows and vendors, then fewer still, then back to the page's (more rows and vendors), then fewer again
    fewer = next(i for i in shapes if shapes[i][0] < shapes[base["dtype"]][0] and shapes[i][1] < shapes[base["dtype"]][1])
    fewest = next(i for i in shapes if shapes[i][0] < shapes[fewer][0] and 2 <= shapes[i][1] != shapes[fewer][1])
    page = live_context.new_page()
    use_cpython_worker(page)  # what the page does with the results; Pyodide plays no part
    problems = _watch(page, site_url)
    try:
        _goto_live(page, site_url, docname)
        i = page.evaluate(f"() => mlcalcLive.calculators.findIndex(c => c.key === {key!r})")
        assert i >= 0
        calc_el = page.locator(".mlcalc-calculator").nth(i)
        calc_el.scroll_into_view_if_needed()
        # the templates the page's charts made, checked now (a reader's first change comes later than that)
        assert all(page.evaluate("() => mlcalcLive.checkTemplates()"))
        count = "(i) => { const c = mlcalcLive.calculators[i]; return {compiled: mlcalcLive.compiles.compiled, " \
                "redraws: c.redraws || 0, updates: c.updates || 0, inPlace: c.inPlace || 0}; }"
        before = page.evaluate(count, i)
        # (the last change modifies rows the one before inserted)
        for n, index in enumerate((fewer, fewest, base["dtype"], fewer)):
            state = page.evaluate(LIGHT, i)
            assert _change(page, calc_el, i, dtype, state["values"], to=index)
            assert _wait_shown(page, i, state["requested"]), f"dtype {index}: not shown"
            _check_parity(page, i, f"dtype {dtype.options[index][0]} ({shapes[index][0]} rows, {shapes[index][1]} vendors)")
            now = page.evaluate(count, i)
            assert now["compiled"] == before["compiled"], f"dtype {index}: a spec was compiled"
            assert now["redraws"] == before["redraws"], f"dtype {index}: a new Vega view was made"
            assert now["updates"] == before["updates"] + n + 1
            assert now["inPlace"] == before["inPlace"] + 2 * (n + 1), f"the rows held were not kept: {before} -> {now}"
    finally:
        page.close()
    assert problems == [], "\n".join(problems)


def test_every_kind_of_control_is_changed_on_some_page(strict_build):
    """Every kind of control the registered calculators use sits on some built page, where the page
    test above changes the first control of each kind of every calculator (and fails if it cannot)."""
    from mlcalc.calc import REGISTRY

    assert strict_build.returncode == 0
    used = {c.kind for calc in REGISTRY.values() for c in calc.controls}
    on_pages = {c.kind for d in _pages_with_calculators() for key in _calculator_keys(d) for c in get(key).controls}
    assert used - on_pages == set()


@pytest.mark.browser
def test_bad_input_shows_the_inline_message_and_the_calculator_keeps_working(live_context, site_url):
    docname = "notebooks/start/how-many-gpus"
    page = live_context.new_page()
    problems = _watch(page, site_url)
    try:
        _goto_live(page, site_url, docname)
        calc_el = page.locator(".mlcalc-calculator").first
        box = calc_el.locator(".mlcalc-ctl-n_params_billion input")
        before = page.evaluate(STATE, 0)
        box.fill("-3")
        box.press("Enter")
        assert _wait_shown(page, 0, before["requested"])
        state = page.evaluate(STATE, 0)
        # The same words as in Jupyter (CalcWidget): "Check the input: <the ValueError's own words>".
        assert state["message"].startswith("Check the input:") and "params (billions)=-3.0" in state["message"]
        assert state["stale"] >= 1, "the last result stays, marked stale"
        _check_parity(page, 0, "params=-3")
        # Hostile values straight to the worker: it answers each with a message, and survives.
        hostile = [{"n_params_billion": "abc"}, {"n_params_billion": None}, {"n_params_billion": 1e308}, {"nope": 1},
                   {"accelerator": 10**9}, {"n_params_billion": [1, [2, {"x": None}]]}, {"mode": -1}, {"headroom": "NaN"}]
        for values in hostile:
            out = page.evaluate("([k, v]) => window.mlcalcLive.run(k, v)", ["memory.gpu_count", values])
            assert set(out) >= {"ok"}, out
            if not out["ok"]:
                assert out["error"] and "Traceback" not in out["error"], out
        out = page.evaluate("() => window.mlcalcLive.run('no.such.calculator', {})")
        assert not out["ok"] and "not allowed" in out["error"]
        # ... and the calculator works again with a good value.
        before = page.evaluate(STATE, 0)
        box.fill("405")
        box.press("Enter")
        assert _wait_shown(page, 0, before["requested"])
        state = _check_parity(page, 0, "params=405")
        assert state["ok"] and "to train" in state["text"]
        assert page.evaluate(STATE, 0)["message"] == ""
    finally:
        page.close()
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
def test_prose_pages_load_no_python(live_context, site_url):
    """Pages without calculators load neither Pyodide nor the wheel nor Vega."""
    page = live_context.new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    try:
        for docname in [d for d in toc_docnames() if not d.startswith("notebooks/")][:3]:
            page.goto(f"{site_url}/{docname}.html", wait_until="load")
            page.wait_for_timeout(300)
    finally:
        page.close()
    heavy = [u for u in fetched if re.search(r"pyodide|mlcalc\.whl|vega|mlcalc-live|mlcalc-worker", u)]
    assert heavy == []


@pytest.mark.browser
def test_from_a_file_the_page_is_a_visible_snapshot(browser, strict_build):
    """Opened from disk (file://) no worker can start: each calculator says so, its controls are off."""
    assert strict_build.returncode == 0
    docname = "notebooks/start/how-many-gpus"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    try:
        page.goto((HTML / f"{docname}.html").as_uri(), wait_until="load")
        page.wait_for_function("() => window.mlcalcLive && window.mlcalcLive.calculators.length >= 1", timeout=30_000)
        calc_el = page.locator(".mlcalc-calculator").first
        calc_el.scroll_into_view_if_needed()
        page.wait_for_function("() => document.querySelector('.mlcalc-view-chart svg')", timeout=30_000)
        state = page.evaluate("() => ({state: mlcalcLive.state, history: mlcalcLive.history})")
        status = calc_el.locator(".mlcalc-status").inner_text()
        disabled = calc_el.evaluate("c => Array.from(c.querySelectorAll('input, select, button, textarea')).map(e => e.disabled)")
        text = calc_el.locator(".mlcalc-view-text").inner_text()
    finally:
        context.close()
    assert state["state"] == "snapshot" and "loading" not in state["history"], state
    assert "Snapshot" in status and "make serve" in status and "make lab" in status, status
    assert disabled and all(disabled), "controls stay enabled in the snapshot"
    assert "At least" in text, "the stored result is shown"
    assert errors == [], errors


@pytest.mark.browser
def test_when_python_cannot_start_the_calculators_become_visible_snapshots(browser, site_url):
    """Pyodide's runtime missing (a broken deployment): each calculator says so, controls off, no page error."""
    docname = "notebooks/start/how-many-gpus"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda r: r.abort() if "pyodide.asm.wasm" in r.request.url or not r.request.url.startswith(site_url)
                  else r.continue_())
    context.add_init_script("window.mlcalcLiveOptions = {loadTimeoutMs: 15000};")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        _goto_live(page, site_url, docname)
        calc_el = page.locator(".mlcalc-calculator").first
        state = page.evaluate("() => ({state: mlcalcLive.state, reason: mlcalcLive.reason})")
        status = calc_el.locator(".mlcalc-status").inner_text()
        disabled = calc_el.evaluate("c => Array.from(c.querySelectorAll('input, select, button, textarea')).map(e => e.disabled)")
    finally:
        context.close()
    assert state["state"] == "snapshot" and "could not start" in state["reason"], state  # (or "did not start within")
    assert "Snapshot" in status and "make serve" in status
    assert disabled and all(disabled)
    assert errors == [], errors


# --------------------------------------------------------------------------- starting, faults and recovery

# Installed in the page before anything else: every frame, a calculator whose result is not for the
# values its controls show must be dimmed (stale); otherwise the page shows a wrong result as current.
_DISAGREE_WATCH = """(() => {
  window.__mlcalcDisagree = [];
  const look = () => {
    const live = window.mlcalcLive;
    (live ? live.calculators : []).forEach((c, i) => {
      const stale = c.el.querySelectorAll('.mlcalc-stale').length > 0;
      const pending = c.requested !== c.shown;
      const other = c.last && JSON.stringify(c.last.values) !== JSON.stringify(c.values());
      // while Python starts, a change waits for it: dimmed; at any time, a result for other values: dimmed
      if (!stale && live.state !== 'snapshot' && ((pending && live.state !== 'live') || (!pending && other)))
        window.__mlcalcDisagree.push({i, state: live.state, requested: c.requested, shown: c.shown});
    });
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();"""

START_PAGE = "notebooks/start/how-many-gpus"


def _first_number_box(page) -> str:
    return page.evaluate("""() => { const c = mlcalcLive.calculators[0];
      return Object.keys(c.controls).find(k => ['FloatTextModel', 'BoundedFloatTextModel', 'IntTextModel',
        'BoundedIntTextModel'].includes(c.controls[k].get('_model_name'))); }""")


@pytest.mark.browser
@pytest.mark.parametrize("how", ["snapshot", "cold"])
def test_the_snapshot_and_the_cold_start_both_reach_live_and_never_show_a_wrong_result(live_context, site_url, how):
    """Python restored from the memory snapshot made at the build, and started cold (the fallback), both
    make the chapter live; a value changed while Python starts dims the output until its result is in.
    ("Cold" is Python's start without the snapshot, not the browser's cache: the page is opened in the shared profile,
    as a returning reader's browser opens it. An incognito context fetched and compiled Pyodide's 41 MB again for each.)"""
    meta = HTML / "_static" / "vendor" / "mlcalc" / "snapshot.json"
    if how == "snapshot" and not meta.exists():
        pytest.fail("the build made no Pyodide snapshot (scripts/build_wheel.sh needs Node.js)")
    page = live_context.new_page()
    if how == "cold":  # this page's option only (an init script of the page, not of the shared context)
        page.add_init_script("window.mlcalcLiveOptions = {snapshot: false};")
    page.add_init_script(_DISAGREE_WATCH)
    problems = _watch(page, site_url)
    try:
        page.goto(f"{site_url}/{START_PAGE}.html", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_function("() => window.mlcalcLive && mlcalcLive.calculators.length >= 1", timeout=60_000, polling=20)
        early = page.evaluate("() => mlcalcLive.state")
        control = _first_number_box(page)
        box = page.locator(f".mlcalc-calculator .mlcalc-ctl-{control} input").first
        box.fill("123")
        box.press("Enter")
        page.wait_for_function("() => mlcalcLive.state === 'live' && mlcalcLive.calculators[0].shown === mlcalcLive.calculators[0].requested"
                               " && mlcalcLive.calculators[0].requested > 0", timeout=LIVE_TIMEOUT_MS, polling=50)
        worker = page.evaluate("() => mlcalcLive.timings.worker")
        disagree = page.evaluate("() => window.__mlcalcDisagree")
        _check_parity(page, 0, f"{START_PAGE} ({how})")
    finally:
        page.close()
    assert worker["how"] == how, worker
    # Python starts as the page starts: restored from the snapshot it can be live before the widgets are
    # drawn (the widget manager waits for the page's load event); started cold it is still loading.
    assert early in (("loading", "live") if how == "snapshot" else ("loading",)), early
    assert disagree == [], disagree[:5]
    assert problems == [], problems


# Installed in the page before anything else: a reader's change made the moment the warm-up sends its first slice
# (the change reaches the worker as that slice is about to run, or has just begun), and another calculator's change
# the moment the worker says its slice began (the change waits for it).
_CHANGE_DURING_WARM = """(() => {
  window.__mlcalcWarm = {sent: [], changed: []};
  const change = (key) => {
    const live = window.mlcalcLive;
    const i = live.calculators.findIndex(c => c.key === key && !c.requested);
    if (i < 0) return;
    const c = live.calculators[i];
    const k = Object.keys(c.controls).find(k => ['FloatTextModel', 'BoundedFloatTextModel'].includes(
      c.controls[k].get('_model_name')) && !c.controls[k].get('disabled'));
    c.controls[k].set('value', c.controls[k].get('value') + 1);
    window.__mlcalcWarm.changed.push(i);
  };
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (msg, ...rest) {
    const out = post.call(this, msg, ...rest);
    if (msg && msg.warm) {
      const w = window.__mlcalcWarm;
      w.sent.push(msg.key);
      if (w.sent.length === 1) queueMicrotask(() => change(msg.key));  // queued behind the slice
      if (w.sent.length === 2 && !this.__watched) {  // once that slice began in the worker
        this.__watched = true;
        this.addEventListener('message', (e) => {
          if (e.data && e.data.id === msg.id && e.data.started) change(msg.key);
        });
      }
    }
    return out;
  };
})();"""


@pytest.mark.browser
def test_a_change_made_while_the_warm_up_runs_gets_its_own_answer(live_context, site_url):
    """Once live, the page's worker computes each calculator at the values it shows (the warm-up). Reader's
    changes made as a warm-up slice is sent and while one runs get the answer for their values, the warm-up's
    answers are never shown, and no frame shows a result that disagrees with its controls. A slice that a
    reader's message reaches the worker behind is dropped (the worker's own check, messages sent back to back)."""
    page = live_context.new_page()  # the shared profile: Pyodide from its cache (the warm-up is the same)
    page.add_init_script(_DISAGREE_WATCH)
    page.add_init_script(_CHANGE_DURING_WARM)
    problems = _watch(page, site_url)
    keys = _calculator_keys(START_PAGE)
    assert len(keys) >= 2, keys
    try:
        page.goto(f"{site_url}/{START_PAGE}.html", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_function(
            f"""() => {{ const l = window.mlcalcLive; return l && l.state === 'live' && l.calculators.length >= {len(keys)}
              && l.warm.state === 'done' && window.__mlcalcWarm.changed.length === 2
              && l.calculators.every(c => c.shown === c.requested); }}""", timeout=LIVE_TIMEOUT_MS, polling=50)
        warm = page.evaluate("() => ({...mlcalcLive.warm, sent: window.__mlcalcWarm.sent, changed: window.__mlcalcWarm.changed})")
        keys = page.evaluate("() => mlcalcLive.calculators.map(c => c.key)")  # in the order they were connected
        disagree = page.evaluate("() => window.__mlcalcDisagree")
        first, second = warm["changed"]
        for i in (first, second):
            _check_parity(page, i, f"{START_PAGE} #{i} changed during the warm-up")
        others = [i for i in range(len(keys)) if i not in (first, second)]
        for i in others:  # not changed: still the page's own result, nothing from the warm-up shown
            state = page.evaluate(STATE, i)
            assert state["last"] is None and state["requested"] == 0, state
            for line in _expected(state["key"], state["values"])["text"].splitlines()[:3]:
                assert line.split(" | ")[0].strip() in state["text"], f"#{i}: {line!r} not on the page"
        # In the worker: a warm-up slice with a reader's message waiting behind it (sent while the worker computed
        # another) is dropped, the message answered.
        replies = page.evaluate("""(key) => new Promise((resolve) => {
          const c = mlcalcLive.calculators.find(c => c.key === key);
          const w = mlcalcLive.engine().worker, got = {};
          w.addEventListener('message', (e) => {
            const d = e.data || {};
            if (d.id >= 1e9 && !d.started) got[d.id] = d;
            if (got[1e9] && got[1e9 + 1]) resolve([got[1e9], JSON.parse(got[1e9 + 1].result).ok]);
          });
          w.postMessage({id: 1e9 - 1, key, values: c.values(), changed: ''});
          w.postMessage({id: 1e9, warm: true, key, values: c.values(), initial: c.initial, search: ''});
          w.postMessage({id: 1e9 + 1, key, values: c.values(), changed: ''});
        })""", keys[first])
    finally:
        page.close()
    assert replies[0] == {"id": 1e9, "skipped": True} and replies[1] is True, replies
    # Each slice sent was computed or dropped; the second changed calculator's slice ran before its change.
    assert len(warm["sent"]) == len(warm["done"]) + warm["skipped"], warm
    assert keys[second] in warm["done"] and len(warm["done"]) <= len(keys), warm
    assert disagree == [], disagree[:5]
    assert problems == [], problems


@pytest.mark.browser
def test_a_dead_worker_is_restarted_and_the_reader_is_told(live_context, site_url):
    """The worker killed (as a crash or the browser would): the next change restarts Python, says so on
    the calculator, and is computed as CPython computes it; the page keeps working."""
    page = live_context.new_page()  # the shared profile: Pyodide (and its restart) from its cache
    problems = _watch(page, site_url)
    try:
        _goto_live(page, site_url, START_PAGE)
        page.evaluate("() => mlcalcLive.engine().worker.terminate()")
        control = _first_number_box(page)
        box = page.locator(f".mlcalc-calculator .mlcalc-ctl-{control} input").first
        before = page.evaluate(LIGHT, 0)["requested"]
        box.fill("77")
        box.press("Enter")
        page.wait_for_function(f"() => mlcalcLive.calculators[0].requested > {before} && mlcalcLive.calculators[0].shown"
                               " === mlcalcLive.calculators[0].requested", timeout=LIVE_TIMEOUT_MS, polling=50)
        status = page.locator(".mlcalc-calculator .mlcalc-status").first.inner_text()
        restarts = page.evaluate("() => mlcalcLive.restarts")
        _check_parity(page, 0, f"{START_PAGE} after a restart")
        # and the next change goes straight through
        before = page.evaluate(LIGHT, 0)["requested"]
        box.fill("88")
        box.press("Enter")
        assert _wait_shown(page, 0, before)
        _check_parity(page, 0, f"{START_PAGE} after a restart, again")
    finally:
        page.close()
    assert restarts == 1, restarts
    assert "stopped answering" in status and "started again" in status, status
    assert problems == [], problems


@pytest.mark.browser
@pytest.mark.parametrize("blocked, named", [("pyodide.asm.wasm", "Pyodide's WebAssembly runtime"),
                                            ("mlcalc.whl", "the wheel of mlcalc"),
                                            ("pyodide.mjs", "Pyodide's loader")])
def test_a_blocked_pyodide_or_wheel_is_named_and_the_page_recovers(live_context, site_url, blocked, named):
    # Only this page's requests for the blocked file are intercepted, and only until the reload: an interception turns
    # the HTTP cache off while it lasts, so the reload starts Pyodide from the shared context's cache.
    page = live_context.new_page()
    page.route(lambda url: url.split("?")[0].endswith("/" + blocked), lambda r: r.abort())
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        _goto_live(page, site_url, START_PAGE)
        state = page.evaluate("() => ({state: mlcalcLive.state, reason: mlcalcLive.reason})")
        status = page.locator(".mlcalc-calculator .mlcalc-status").first.inner_text()
        page.unroute_all()
        page.reload(wait_until="domcontentloaded")
        page.wait_for_function("() => window.mlcalcLive && mlcalcLive.state === 'live'", timeout=LIVE_TIMEOUT_MS, polling=100)
    finally:
        page.close()
    assert state["state"] == "snapshot" and named in state["reason"] and blocked in state["reason"], state
    assert named in status and "Snapshot" in status, status
    assert errors == [], errors


@pytest.mark.browser
def test_a_paste_over_64_kib_is_refused_in_the_page_before_it_travels(browser, site_url):
    docname = "notebooks/hardware/your-own-numbers"
    if "measured.pasted" not in _calculator_keys(docname):
        pytest.skip("no paste calculator on the page")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    use_cpython_worker(page)
    sent: list[int] = []
    page.add_init_script("""(() => { const W = window.Worker; window.Worker = function (u, o) { const w = new W(u, o);
      const post = w.postMessage.bind(w); w.postMessage = (m) => { (window.__sent = window.__sent || []).push(JSON.stringify(m).length); post(m); };
      return w; }; })();""")
    try:
        _goto_live(page, site_url, docname)
        i = page.evaluate("() => mlcalcLive.calculators.findIndex(c => c.key === 'measured.pasted')")
        before = page.evaluate(LIGHT, i)["requested"]
        area = page.locator(".mlcalc-calc-measured\\.pasted textarea").first
        area.fill("# nccl-tests\n" + "x" * 70_000)
        area.blur()
        page.wait_for_function(f"() => mlcalcLive.calculators[{i}].shown > {before}", timeout=CHANGE_TIMEOUT_MS)
        state = page.evaluate(STATE, i)
        sent = page.evaluate("() => window.__sent || []")
    finally:
        page.close()
    assert "64 KiB" in state["message"] and "KiB" in state["message"], state["message"]
    assert state["stale"] > 0, "the output for the old text is not dimmed"
    assert all(n < 65_536 for n in sent), sent
