"""A printable handout: the chapters of the built site, in one PDF, printed by headless Chromium.

Usage: python scripts/handout.py [--out _build/handout.pdf] [--html _build/html] [--questions _build/questions.pdf]

The pages of _toc.yml (the workshop kit aside) are joined into one HTML page inside the site while
it prints (``_handout.html``: a title page and contents, then each page's article, their widget states
merged, the site's own stylesheets and scripts), served on 127.0.0.1, and printed on A4 by Debian's
Chromium driven by Playwright (nothing is downloaded). The site's print stylesheet
(book/_static/mlcalc-layout.css) hides the navigation and the controls' chrome, starts each page on a
new sheet and prints scrolled blocks in full; before printing, :data:`FIT_JS` shrinks what is still
wider than the paper's printable width (a long equation, a wide table or chart) to fit it, and
:data:`OVERFLOW_JS` lists anything left past the edge (the tests require none). The workshop's question
sheet prints the same way to its own one-page PDF.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import os
import pathlib
import posixpath
import re
import sys
import threading
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Pages of the toc left out of the handout (the instructor's kit is not for the participants' print).
SKIP_PREFIXES = ("book/workshop/",)
# The workshop's one-page question sheet (printed on its own by --questions).
QUESTION_SHEET = "book/workshop/question-sheet"
# The paper: A4 with 12 mm margins, so the printable width is 186 mm = 703 CSS px (96 px per inch).
PAPER, MARGIN_MM = "A4", 12
PRINT_WIDTH_PX = int((210 - 2 * MARGIN_MM) / 25.4 * 96)
H1_RE = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
TAG_RE = re.compile(r"<[^>]+>")

# Shrink (CSS zoom) every block still wider than the article's column to its width: display equations,
# tables, charts, code and outputs. Run under print media at the printable width, before printing.
FIT_JS = """() => {
  const column = document.querySelector('article.bd-article');
  const width = column.getBoundingClientRect().width;
  const sel = 'mjx-container, table, .vega-embed, pre, .cell_output img, svg, .mlcalc-calculator, .cell_output';
  let n = 0;
  for (const el of column.querySelectorAll(sel)) {
    const w = Math.max(el.scrollWidth, el.getBoundingClientRect().width);
    const left = el.getBoundingClientRect().left - column.getBoundingClientRect().left;
    const room = width - Math.max(0, left);
    if (w > room + 1 && room > 0) { el.style.zoom = String(room / w); n += 1; }
  }
  return n;
}"""

# Visible elements whose right edge passes the printable width: [tag, class, right edge px, page].
OVERFLOW_JS = """(limit) => {
  const out = [];
  for (const el of document.querySelectorAll('article.bd-article *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= limit + 1) continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden') continue;
    if (el.parentElement && el.parentElement.closest('mjx-container, svg')) continue;  // counted at the top
    const page = el.closest('section.mlcalc-handout-page');
    out.push([el.tagName, String(el.className).slice(0, 60), Math.round(r.right), page ? page.dataset.page : '']);
  }
  return out;
}"""
STATE_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
ARTICLE_RE = re.compile(r'<article class="bd-article"[^>]*>(.*?)</article>', re.S)
HEAD_RE = re.compile(r"<head>(.*?)</head>", re.S)
URL_RE = re.compile(r'\b(src|href)="([^"]*)"')


def toc_docnames() -> list[str]:
    """Every page of the book in reading order (docnames, no suffix), from _toc.yml, root first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(str(pathlib.PurePosixPath(entry["file"]).with_suffix("")))
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return names


def toc_pages() -> list[str]:
    """The handout's pages in reading order (the workshop's pages left out)."""
    return [n for n in toc_docnames() if not n.startswith(SKIP_PREFIXES)]


def rebase(fragment: str, docname: str) -> str:
    """Relative src/href of a page at ``docname`` rewritten relative to the site's root."""
    base = posixpath.dirname(docname)

    def fix(m: re.Match) -> str:
        attr, url = m.group(1), m.group(2)
        if not url or re.match(r"^([a-z][a-z0-9+.-]*:|//|#|/)", url, re.I):
            return m.group(0)
        return f'{attr}="{posixpath.normpath(posixpath.join(base, url)) if base else url}"'

    return URL_RE.sub(fix, fragment)


def book_meta() -> tuple[str, str]:
    """The book's title and author, from _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return str(config.get("title", "")), str(config.get("author", ""))


def page_title(page_html: str) -> str:
    """A built page's title: the text of its first <h1>, without the heading's link sign."""
    m = H1_RE.search(page_html)
    return html.unescape(TAG_RE.sub("", m.group(1))).replace("#", "").strip() if m else ""


def title_page(titles: list[tuple[str, str]]) -> str:
    """The handout's first sheet: the book's title, its author and what the handout holds; then the contents."""
    title, author = book_meta()
    items = "".join(f"<li>{html.escape(t)}</li>" for _, t in titles if t)
    return (f'<section class="mlcalc-handout-title"><h1>{html.escape(title)}</h1>'
            f'<p class="mlcalc-handout-author">{html.escape(author)}</p>'
            "<p>The chapters of the book, printed from its site. Its calculators are live on the site "
            "and in JupyterLab; here each shows the result of its default inputs.</p></section>"
            f'<section class="mlcalc-handout-contents"><h2>Contents</h2><ol>{items}</ol></section>')


def build_html(site: pathlib.Path, pages: list[str], front_matter: bool = True) -> str:
    """One HTML page holding every page's article, with the widget states merged, after a title page."""
    heads, sections, state, titles = [], [], {}, []
    for docname in pages:
        text = (site / f"{docname}.html").read_text(encoding="utf-8")
        article = ARTICLE_RE.search(text)
        if article is None:
            raise SystemExit(f"{docname}.html has no <article class=\"bd-article\">: is the site built with the book theme?")
        sections.append(f'<section class="mlcalc-handout-page" data-page="{html.escape(docname)}">'
                        f"{rebase(article.group(1), docname)}</section>")
        titles.append((docname, page_title(article.group(1))))
        for block in STATE_RE.findall(text):
            state.update(json.loads(block).get("state", {}))
        if STATE_RE.search(text) or not heads:
            heads.append(rebase(HEAD_RE.search(text).group(1), docname))
    # The head of a page with widgets carries every script and stylesheet any page needs.
    head = heads[-1] if len(heads) > 1 else heads[0]
    head = re.sub(r"<title>.*?</title>", f"<title>{html.escape(book_meta()[0])}</title>", head, flags=re.S)
    widget_state = json.dumps({"version_major": 2, "version_minor": 0, "state": state})
    return (
        '<!DOCTYPE html>\n<html lang="en" data-content_root="./" data-theme="light" data-mode="light">\n'
        f"<head>{head}</head>\n"
        '<body data-bs-spy="scroll"><div class="bd-container"><div class="bd-container__inner bd-page-width">'
        '<div class="bd-main"><div class="bd-content"><div class="bd-article-container">'
        '<article class="bd-article" role="main">'
        f'{title_page(titles) if front_matter else ""}{"".join(sections)}</article>'
        "</div></div></div></div></div>\n"
        f'<script type="application/vnd.jupyter.widget-state+json">{widget_state}</script>\n'
        "</body></html>\n"
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def print_pdf(site: pathlib.Path, page: str, out: pathlib.Path | None, timeout_s: int = 300,
              browser: Any = None) -> list[list]:
    """Serve ``site`` on 127.0.0.1 and print ``page`` to ``out`` on A4 with headless Chromium.

    ``browser``: a Playwright browser already running in this thread (the tests' session one: Playwright's
    sync API runs one instance per thread); without it, one is started and closed here.
    ``out`` None: lay the page out for print and measure it, but write no PDF (the tests check the whole handout's
    fit this way; writing its ~360 pages takes Chromium 25-50 s on two cores).
    Returns what still passes the printable width after :data:`FIT_JS` (empty when all fits).
    """
    if not pathlib.Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM}: run 'apt-get install -y chromium' (or set CHROMIUM)")
    from playwright.sync_api import sync_playwright  # the test extra has it; only printing needs it

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if browser is not None:
            left = _print(browser, url, out, timeout_s)
        else:
            with sync_playwright() as pw:
                own = pw.chromium.launch(executable_path=CHROMIUM, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run"])
                try:
                    left = _print(own, url, out, timeout_s)
                finally:
                    own.close()
    finally:
        server.shutdown()
    if out is not None and (not out.exists() or out.stat().st_size == 0):
        raise SystemExit(f"Chromium did not print {url}")
    return left


def _print(browser: Any, url: str, out: pathlib.Path | None, timeout_s: int) -> list[list]:
    """Open ``url`` in a new tab of ``browser``, fit its wide blocks, print it to ``out``; what still overflows."""
    tab = browser.new_page(viewport={"width": PRINT_WIDTH_PX, "height": 1000})
    try:
        tab.emulate_media(media="print")
        tab.goto(url, wait_until="load", timeout=timeout_s * 1000)
        # MathJax typesets after load: wait for it (and the charts' first paint) before measuring
        tab.wait_for_function("!window.MathJax || !MathJax.startup || MathJax.startup.promise", timeout=60_000)
        tab.evaluate("window.MathJax && MathJax.startup && MathJax.startup.promise")
        tab.wait_for_timeout(1500)
        tab.evaluate(FIT_JS)
        left: list[list] = tab.evaluate(OVERFLOW_JS, PRINT_WIDTH_PX)
        if out is not None:
            tab.pdf(path=str(out), format=PAPER, print_background=True,
                    margin={side: f"{MARGIN_MM}mm" for side in ("top", "right", "bottom", "left")})
    finally:
        tab.close()
    return left


def page_count(pdf: pathlib.Path) -> int:
    """Pages of a PDF Chromium wrote (its page objects are not compressed)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf.read_bytes()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"), help="the built site")
    parser.add_argument("--out", default=str(ROOT / "_build" / "handout.pdf"), help="the PDF to write")
    parser.add_argument("--pages", nargs="*", help="docnames to print (default: the toc, workshop kit aside)")
    parser.add_argument("--questions", default=str(ROOT / "_build" / "questions.pdf"),
                        help="the workshop's one-page question sheet to write ('' for none)")
    args = parser.parse_args(argv)
    site = pathlib.Path(args.html)
    if not (site / "index.html").exists():
        raise SystemExit(f"no built site in {site}: run 'make book' first")
    pages = args.pages or toc_pages()
    # The joined page lives in the site only while it prints (its links and scripts are the site's).
    joined = site / "_handout.html"
    joined.write_text(build_html(site, pages), encoding="utf-8")
    out = pathlib.Path(args.out)
    try:
        left = print_pdf(site, joined.name, out)
    finally:
        joined.unlink(missing_ok=True)
    print(f"handout: {out} ({out.stat().st_size / 1e6:.1f} MB, {page_count(out)} pages, {len(pages)} chapters and part pages)")
    if args.questions and (site / f"{QUESTION_SHEET}.html").exists():
        sheet = site / "_questions.html"
        sheet.write_text(build_html(site, [QUESTION_SHEET], front_matter=False), encoding="utf-8")
        try:
            left += print_pdf(site, sheet.name, pathlib.Path(args.questions))
        finally:
            sheet.unlink(missing_ok=True)
        print(f"question sheet: {args.questions} ({page_count(pathlib.Path(args.questions))} page)")
    for tag, cls, right, where in left:
        print(f"  wider than the paper ({right} px > {PRINT_WIDTH_PX}): {tag}.{cls} on {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
