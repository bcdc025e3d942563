"""Every page reads cleanly on a laptop (1280 px) and a phone (390 px).

Each page of the built site is opened in Debian's Chromium at both widths, served on 127.0.0.1
(no other host can be reached), once its widgets and math have rendered. It fails on:

- horizontal overflow of the page (anything that makes the page wider than the screen);
- content cut off by a box that neither wraps it nor scrolls (code, outputs, equations, tables, charts
  must wrap or scroll inside themselves);
- controls of width zero (a slider collapsed to a bare handle, a box squeezed to nothing) or cut off
  by their calculator, labels and buttons whose text is cut;
- charts wider than their column, chart text under 11 px, a legend drawn over an axis title (Vega),
  text cut off by a chart's edge (an axis title, a point's label or a title past any side of its SVG).

The laptop pass also checks what a reader sees first (it was a separate page load): every widget,
figure and equation rendered, no image broken, every calculator with controls and an output, nothing
fetched from outside the site, no console or page error, no failed request. Screenshots of failing pages
go to artifacts/layout/; MLCALC_SCREENSHOTS=1 also keeps a full-page screenshot of every page (laptop) in
artifacts/screenshots/, a gallery to look through (off by default: a tall page's full-page screenshot cost
more than the rest of its test, 37% of the laptop pass's CPU).
A chapter's laptop pass is made on the page load of tests/site/test_live_site.py's recompute test (check_page).
"""

from __future__ import annotations

import pytest

import os

from tests.conftest import HTML, ROOT, SCREENSHOTS, NetworkWatch, disk_profile, toc_docnames, use_cpython_worker

PAGES = toc_docnames()
WIDTHS = {"laptop": 1280, "phone": 390}
SHOTS = ROOT / "artifacts" / "layout"
GALLERY = os.environ.get("MLCALC_SCREENSHOTS") == "1"

_IMAGES = """() => Array.from(document.images).filter(i => i.getBoundingClientRect().width > 0 || i.closest('.mlcalc-calculator'))
  .map(i => ({src: i.src.slice(0, 80), ok: i.complete && i.naturalWidth > 0}))"""

_CALCULATORS = """() => Array.from(document.querySelectorAll('.mlcalc-calculator')).map(c => ({
  controls: c.querySelectorAll('input, select, button, textarea').length,
  output: Array.from(c.querySelectorAll('.widget-output, .mlcalc-view-text')).map(o => o.innerText.trim().length + o.querySelectorAll('img, svg').length).reduce((a, b) => a + b, 0),
}))"""

_READY = """() => {
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  const rendered = views.filter(s => s.previousElementSibling && s.previousElementSibling.classList.contains('widget-subarea')
                                     && s.previousElementSibling.children.length > 0).length;
  const math = Array.from(document.querySelectorAll('.math'));
  const typeset = math.filter(m => m.querySelector('mjx-container')).length;
  return rendered === views.length && typeset === math.length;
}"""

# Returns a list of problems, each a short description with the element's path.
_PROBLEMS = r"""() => {
  const W = document.documentElement.clientWidth;
  const out = [];
  const seen = new Set();
  function name(el) {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      let p = e.tagName.toLowerCase();
      if (e.id) p += '#' + e.id;
      const cls = Array.from(e.classList).filter(c => !c.startsWith('lm-') && !c.startsWith('p-')).slice(0, 2);
      if (cls.length) p += '.' + cls.join('.');
      parts.unshift(p);
    }
    return parts.join(' > ');
  }
  function visible(el) {
    const s = getComputedStyle(el);
    if (s.display === 'none' || s.visibility === 'hidden') return false;
    for (let e = el; e; e = e.parentElement) {
      const t = getComputedStyle(e);
      if (t.display === 'none') return false;
      if (e.tagName === 'DETAILS' && !e.open && e !== el && !e.querySelector('summary').contains(el)) return false;
    }
    return el.getClientRects().length > 0;
  }
  function labelOf(el) {
    const box = el.closest('.widget-inline-hbox, .widget-toggle-buttons, .widget-checkbox');
    const l = box && box.querySelector('.widget-label, label');
    return l && l.textContent.trim() ? ` [${l.textContent.trim().slice(0, 40)}]` : '';
  }
  function report(kind, el, extra) {
    extra = labelOf(el) + ' ' + extra;
    const key = kind + name(el);
    if (seen.has(key)) return;
    seen.add(key);
    out.push(`${kind}: ${name(el)} ${extra}`);
  }
  // 1. The page itself must not scroll sideways.
  const sw = document.documentElement.scrollWidth;
  if (sw > W + 1) {
    out.push(`page overflow: ${sw} px wide on a ${W} px screen`);
    // name the widest culprits (leaf-most elements whose right edge passes the screen)
    // elements past the right edge that no ancestor clips or scrolls
    const clipped = e => {
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== 'visible') return true;
      }
      return false;
    };
    const wide = Array.from(document.querySelectorAll('body *')).filter(e => {
      const r = e.getBoundingClientRect();
      // its box, or text spilling out of it (a long word, a URL), passes the right edge
      const spill = getComputedStyle(e).overflowX === 'visible' ? r.left + e.scrollWidth : r.right;
      return r.width > 0 && Math.max(r.right, spill) > W + 1 && visible(e) && !clipped(e);
    });
    wide.filter(e => !wide.some(o => o !== e && e.contains(o))).slice(0, 5)
        .forEach(e => report('sticks out', e, `(right edge at ${Math.round(e.getBoundingClientRect().right)} px)`));
  }
  // 2. Blocks whose content is wider than they are must scroll it (overflow-x auto/scroll), not cut it
  //    off or let it spill.
  const blocks = document.querySelectorAll(
    '.bd-article pre, .bd-article .highlight, .bd-article .cell_output .output, .bd-article mjx-container[display="true"], '
    + '.bd-article table, .bd-article .vega-embed, .bd-article .mlcalc-calculator, .bd-article .widget-output, '
    + '.bd-article .widget-html-content, .bd-article img, .bd-article svg');
  for (const el of blocks) {
    if (!visible(el)) continue;
    if (el.closest('.mlcalc-controls')) continue;  // controls are checked below
    const s = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 2 && !['auto', 'scroll'].includes(s.overflowX) && el.clientWidth > 0) {
      // spilling content is only harmless when an ancestor (inside the article) scrolls it
      let scroller = null;
      for (let e = el.parentElement; e && !e.classList.contains('bd-article'); e = e.parentElement) {
        const o = getComputedStyle(e).overflowX;
        if (o === 'auto' || o === 'scroll') { scroller = e; break; }
      }
      if (!scroller) report(s.overflowX === 'visible' ? 'spills' : 'cut off', el, `(${el.scrollWidth} px of content in ${el.clientWidth} px)`);
    }
  }
  // 3. Controls: none of zero width, none collapsed, none cut off by its calculator or the screen.
  for (const calc of document.querySelectorAll('.bd-article .mlcalc-calculator, .bd-article .widget-vbox, .bd-article .widget-hbox')) {
    if (!visible(calc)) continue;
    const box = calc.getBoundingClientRect();
    for (const el of calc.querySelectorAll('input, select, textarea, button, .widget-slider .slider-container, .widget-toggle-buttons')) {
      if (!visible(el) || (el.type === 'hidden')) continue;
      const r = el.getBoundingClientRect();
      const isSlider = el.classList.contains('slider-container');
      if (r.width < 1) report('zero-width control', el, '');
      else if (isSlider && r.width < 60) report('collapsed slider', el, `(${Math.round(r.width)} px)`);
      else if (r.right > W + 1) report('control off screen', el, `(right edge at ${Math.round(r.right)} px)`);
      else if (r.right > box.right + 2 && getComputedStyle(calc).overflowX !== 'visible') report('control cut off', el, '');
    }
    for (const label of calc.querySelectorAll('.widget-label, .widget-toggle-button, button.jupyter-button')) {
      if (visible(label) && label.textContent.trim() && label.scrollWidth > label.clientWidth + 2) {
        report(label.tagName === 'BUTTON' ? 'button text cut off' : 'label cut off', label, `("${label.textContent.trim().slice(0, 30)}")`);
      }
    }
  }
  // 4. Charts (Vega, SVG): no text cut off by the chart's edge, text at least 11 px, and the legend clear of
  //    the axis titles.
  const charts = Array.from(document.querySelectorAll('.bd-article .vega-embed svg'));
  for (const [n, svg] of charts.entries()) {
    if (!visible(svg)) continue;
    // drawn to the width of its column: a chart that needs sideways scrolling on a phone is cut in practice
    const column = svg.closest('.mlcalc-calculator, .cell_output, .bd-article');
    const sw = svg.getBoundingClientRect().width;
    if (column && sw > column.clientWidth + 2) report('chart wider than its column', svg, `(${Math.round(sw)} px in ${column.clientWidth} px)`);
    const sr = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const tr = t.getBoundingClientRect();
      const past = [['right', tr.right - sr.right], ['left', sr.left - tr.left], ['bottom', tr.bottom - sr.bottom],
                    ['top', sr.top - tr.top]].filter(([, d]) => d > 1);
      if (t.textContent.trim() && tr.width > 0 && past.length) {  // one per chart: the page's charts by number
        out.push(`chart text cut off: chart ${n + 1} of ${charts.length}, ${name(t)} ("${t.textContent.trim().slice(0, 30)}", `
                 + past.map(([side, d]) => `${Math.round(d)} px past the ${side}`).join(', ') + ')');
        break;
      }
    }
    for (const t of svg.querySelectorAll('text')) {
      const size = parseFloat(getComputedStyle(t).fontSize);
      if (t.textContent.trim() && size < 11 - 0.01) { report('chart text under 11 px', t, `("${t.textContent.trim().slice(0, 30)}", ${size} px)`); break; }
    }
    const boxes = sel => Array.from(svg.querySelectorAll(sel)).map(e => e.getBoundingClientRect()).filter(r => r.width > 0);
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const legends = boxes('.role-legend');
    const titles = boxes('.role-axis-title text, .role-axis-title');
    if (legends.some(l => titles.some(t => overlap(l, t)))) report('legend over an axis title', svg, '');
  }
  return out;
}"""


@pytest.fixture(scope="session")
def width_context(browser, tmp_path_factory):
    """One browser profile per width for every page this process tests, on disk (conftest.disk_profile), as a reader's
    browser keeps its caches from page to page: a chapter's scripts (9 MB: the widget manager, MathJax, Vega, Font
    Awesome) are fetched once and compiled once (V8's code cache, which an incognito context does not keep). Hosts other
    than 127.0.0.1 cannot be reached (conftest.OFFLINE_ARGS); each page's listeners below still fail it for any request
    outside the site."""
    contexts: dict = {}

    def get(width: str):
        if width not in contexts:
            contexts[width] = disk_profile(browser, tmp_path_factory.mktemp(f"chromium-layout-{width}"),
                                           viewport={"width": WIDTHS[width], "height": 900},
                                           is_mobile=width == "phone", has_touch=width == "phone", device_scale_factor=1)
        return contexts[width]

    yield get
    for context in contexts.values():
        context.close()


# The chapters' 1280 px pass runs in tests/site/test_live_site.py's test_every_calculator_recomputes_in_the_page_like_cpython,
# on the page load that test makes at the same width (check_page below, before any control is changed): the chapter was
# opened twice at 1280 px, once here and once there (2-3 CPU-s of Chromium a load). The phone pass, and the 1280 px pass
# of the pages outside notebooks/ (that test opens only the chapters), stay here.
LIVE_SITE_LAPTOP = tuple(d for d in PAGES if d.startswith("notebooks/"))
CASES = [(d, w) for d in PAGES for w in WIDTHS if not (w == "laptop" and d in LIVE_SITE_LAPTOP)]


def watch(page, site_url) -> list[str]:
    """What fails a page whatever its layout: a request outside the site, a console or page error, a failed request."""
    seen: list[str] = []
    page.on("console", lambda m: m.type == "error" and seen.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: seen.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: seen.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and seen.append(f"HTTP {r.status}: {r.url}"))
    page.on("request", lambda r: r.url.startswith((site_url, "data:", "blob:"))
            or seen.append(f"request outside the site: {r.url}"))
    return seen


def check_page(page, network: NetworkWatch, docname: str, width: str) -> None:
    """The page, opened at this width (`network` attached before it was): nothing cut off or overflowing (and, at
    1280 px, it renders cleanly). A failing page's screenshot goes to artifacts/layout/."""
    laptop = width == "laptop"
    # Widgets are rendered from the stored state; math is typeset by the local MathJax.
    page.wait_for_function(_READY, timeout=30_000)
    try:  # charts are drawn by the site's script (Vega) once the widgets are on the page
        page.wait_for_function("() => Array.from(document.querySelectorAll('.mlcalc-view-chart .mlcalc-chart'))"
                               ".every(b => b.querySelector('svg, canvas'))", timeout=10_000)
    except Exception:  # noqa: BLE001 - a site without the live script has no such boxes: nothing to wait for
        pass
    if laptop:
        network.wait_until_quiet()  # not wait_for_load_state("networkidle"): see conftest.NetworkWatch
        images = page.evaluate(_IMAGES)
        calculators = page.evaluate(_CALCULATORS)
        if GALLERY:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{docname.replace('/', '__')}.png"), full_page=True)
    page.wait_for_timeout(300)  # let layout settle after the last widget renders
    problems = page.evaluate(_PROBLEMS)
    if problems:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{docname.replace('/', '__')}-{width}.png"), full_page=True)
    if laptop:
        assert [i for i in images if not i["ok"]] == [], "images that did not load"
        stored = (HTML / f"{docname}.html").read_text().count('"_dom_classes": ["mlcalc-calculator"')
        if stored:
            assert calculators, "the page stores a calculator but none rendered"
        for calc in calculators:
            assert calc["controls"] >= 1, "a calculator with no controls"
            assert calc["output"] >= 1, "a calculator whose output area is empty"
    # Text cut off by a chart's edge is a defect of its chart kind (mlcalc.charts, which owns how a chart fits
    # its column): fix it there.
    assert problems == [], f"{docname} at {WIDTHS[width]} px:\n" + "\n".join(problems)


@pytest.mark.browser
@pytest.mark.parametrize("docname, width", CASES, ids=[f"{d}-{w}" for d, w in CASES])
def test_page_layout(width_context, site_url, docname, width):
    """The page at this width: nothing cut off or overflowing (and, at 1280 px, it renders cleanly)."""
    page = width_context(width).new_page()
    # The calculators go live as on the site (their status line says so), answered by CPython rather than
    # by Pyodide: its start would cost seconds of CPU per page and change nothing on screen
    # (tests/site/test_live_site.py runs Pyodide itself).
    use_cpython_worker(page)
    # Nothing fetched from outside the site, no console or page error, no failed request.
    seen = watch(page, site_url)
    network = NetworkWatch(page)
    try:
        page.goto(f"{site_url}/{docname}.html", wait_until="load", timeout=30_000)
        check_page(page, network, docname, width)
    finally:
        page.close()
    assert seen == [], "\n".join(seen)


@pytest.mark.browser
def test_the_pages_reach_no_other_host(width_context, site_url):
    """What the page tests rely on: from the tests' browser only 127.0.0.1 answers. The site's own server named as
    localhost (the same address by another name) and an outside host cannot be resolved, and the listeners see both
    requests. (Asked from a blank page: the site's Content-Security-Policy stops a fetch to another host earlier.)"""
    port = site_url.rsplit(":", 1)[1]
    page = width_context("laptop").new_page()
    failed: dict[str, str] = {}
    page.on("requestfailed", lambda r: failed.setdefault(r.url, str(r.failure)))
    fetch = "(urls) => Promise.all(urls.map(u => fetch(u, {mode: 'no-cors', cache: 'no-store'}).then(() => 'answered', () => 'failed')))"
    others = [f"http://localhost:{port}/_static/favicon.svg", "https://cdn.jsdelivr.net/npm/x.js"]
    try:
        page.goto(f"{site_url}/book/index.html", wait_until="load", timeout=30_000)
        own = page.evaluate(fetch, [f"{site_url}/_static/favicon.svg"])
        page.goto("about:blank")
        other = page.evaluate(fetch, others)
        page.wait_for_function("() => true")  # the listeners have heard the failures
    finally:
        page.close()
    assert own == ["answered"] and other == ["failed", "failed"], (own, other)
    assert {u: failed.get(u) for u in others} == {u: "net::ERR_NAME_NOT_RESOLVED" for u in others}, failed
