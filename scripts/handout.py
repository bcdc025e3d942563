"""A printable handout: the chapters of the built site, in one PDF, printed by headless Chromium.

Usage: python scripts/handout.py [--out _build/handout.pdf] [--html _build/html]

The pages of _toc.yml (the workshop kit aside) are joined into one HTML page inside the site while
it prints (``_handout.html``: each page's article, their widget states merged, the site's own stylesheets and
scripts), served on 127.0.0.1, and printed with Debian's Chromium (``--print-to-pdf``): nothing is
downloaded. The site's print stylesheet (book/_static/mlcalc-layout.css) hides the navigation and
the controls' chrome, starts each page on a new sheet and prints scrolled blocks in full.
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
import subprocess
import sys
import tempfile
import threading

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Pages of the toc left out of the handout (the instructor's kit is not for the participants' print).
SKIP_PREFIXES = ("book/workshop/",)
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


def build_html(site: pathlib.Path, pages: list[str]) -> str:
    """One HTML page holding every page's article, with the widget states merged."""
    heads, sections, state = [], [], {}
    for docname in pages:
        text = (site / f"{docname}.html").read_text(encoding="utf-8")
        article = ARTICLE_RE.search(text)
        if article is None:
            raise SystemExit(f"{docname}.html has no <article class=\"bd-article\">: is the site built with the book theme?")
        sections.append(f'<section class="mlcalc-handout-page" data-page="{html.escape(docname)}">'
                        f"{rebase(article.group(1), docname)}</section>")
        for block in STATE_RE.findall(text):
            state.update(json.loads(block).get("state", {}))
        if STATE_RE.search(text) or not heads:
            heads.append(rebase(HEAD_RE.search(text).group(1), docname))
    # The head of a page with widgets carries every script and stylesheet any page needs.
    head = heads[-1] if len(heads) > 1 else heads[0]
    head = re.sub(r"<title>.*?</title>", "<title>Handout</title>", head, flags=re.S)
    widget_state = json.dumps({"version_major": 2, "version_minor": 0, "state": state})
    return (
        '<!DOCTYPE html>\n<html lang="en" data-content_root="./" data-theme="light" data-mode="light">\n'
        f"<head>{head}</head>\n"
        '<body data-bs-spy="scroll"><div class="bd-container"><div class="bd-container__inner bd-page-width">'
        '<div class="bd-main"><div class="bd-content"><div class="bd-article-container">'
        f'<article class="bd-article" role="main">{"".join(sections)}</article>'
        "</div></div></div></div></div>\n"
        f'<script type="application/vnd.jupyter.widget-state+json">{widget_state}</script>\n'
        "</body></html>\n"
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def print_pdf(site: pathlib.Path, page: str, out: pathlib.Path, budget_ms: int = 30_000, timeout_s: int = 300) -> None:
    """Serve ``site`` on 127.0.0.1 and print ``page`` to ``out`` with headless Chromium."""
    if not pathlib.Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM}: run 'apt-get install -y chromium' (or set CHROMIUM)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlcalc-handout-") as profile:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-first-run", f"--user-data-dir={profile}", "--no-pdf-header-footer",
               "--run-all-compositor-stages-before-draw", f"--virtual-time-budget={budget_ms}",
               f"--print-to-pdf={out}", url]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        finally:
            server.shutdown()
    if proc.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        raise SystemExit(f"Chromium did not print {url}:\n{proc.stderr[-2000:]}")


def page_count(pdf: pathlib.Path) -> int:
    """Pages of a PDF Chromium wrote (its page objects are not compressed)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf.read_bytes()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"), help="the built site")
    parser.add_argument("--out", default=str(ROOT / "_build" / "handout.pdf"), help="the PDF to write")
    parser.add_argument("--pages", nargs="*", help="docnames to print (default: the toc, workshop kit aside)")
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
        print_pdf(site, joined.name, out)
    finally:
        joined.unlink(missing_ok=True)
    print(f"handout: {out} ({out.stat().st_size / 1e6:.1f} MB, {page_count(out)} pages, {len(pages)} chapters and part pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
