"""make handout: the chapters of the built site print to one PDF with headless Chromium."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from tests.conftest import CHROMIUM, HTML, ROOT

spec = importlib.util.spec_from_file_location("handout", ROOT / "scripts" / "handout.py")
handout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handout)


def test_handout_pages_are_the_chapters():
    pages = handout.toc_pages()
    assert pages[0] == "book/index" and "notebooks/start/how-many-gpus" in pages
    assert not any(p.startswith("book/workshop") for p in pages)


def test_relative_urls_are_rebased_to_the_site_root():
    frag = '<img src="../../_images/a.png"><a href="../memory/x.html#y">x</a><a href="#z"></a><a href="https://e.org/">'
    out = handout.rebase(frag, "notebooks/network/units")
    assert 'src="_images/a.png"' in out and 'href="notebooks/memory/x.html#y"' in out
    assert 'href="#z"' in out and 'href="https://e.org/"' in out


def test_title_page_and_contents(strict_build):
    # page 1 of the handout is a title page (the book's title and author), then the contents
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed: no site to print")
    pages = handout.toc_pages()
    joined = handout.build_html(HTML, pages)
    title, author = handout.book_meta()
    first = joined.index('<section class="mlcalc-handout-title">')
    assert first < joined.index('<section class="mlcalc-handout-page"')
    assert f"<h1>{title}</h1>" in joined[first:first + 500] and author in joined[first:first + 500]
    contents = joined[joined.index('<section class="mlcalc-handout-contents">'):joined.index('<section class="mlcalc-handout-page"')]
    assert contents.count("<li>") == len(pages) and "Glossary" in contents


def test_page_title_reads_the_first_heading():
    assert handout.page_title('<h1>Roofline: a &amp; b<a class="headerlink" href="#x">#</a></h1><h1>no</h1>') == "Roofline: a & b"
    assert handout.PRINT_WIDTH_PX == 702  # (210 - 2 x 12) mm of A4 at 96 px per inch


@pytest.mark.browser
def test_handout_pdf_fits_the_paper(strict_build, browser, tmp_path):
    # every page prints whole: nothing passes the printable width of A4 once wide blocks are fitted (the whole
    # handout, laid out for print at A4's printable width), page 1 is the title page, and the question sheet is one
    # sheet of paper. The PDF itself is written for the front matter and the first chapters (the same code path;
    # Chromium takes 25-50 s on two cores for the whole book's ~360 pages, which `make handout` writes).
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed: no site to print")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}")
    pages = handout.toc_pages()
    site = HTML
    joined = site / "_handout_test.html"
    joined.write_text(handout.build_html(site, pages), encoding="utf-8")
    try:
        left = handout.print_pdf(site, joined.name, None, browser=browser)
    finally:
        joined.unlink(missing_ok=True)
    assert left == [], left[:10]
    first = pages[:4]
    joined.write_text(handout.build_html(site, first), encoding="utf-8")
    out = tmp_path / "handout.pdf"
    try:
        assert handout.print_pdf(site, joined.name, out, browser=browser) == []
    finally:
        joined.unlink(missing_ok=True)
    assert out.read_bytes().startswith(b"%PDF")
    n_pages = handout.page_count(out)
    assert len(first) + 2 <= n_pages <= 40 * len(first), (n_pages, len(first))  # title + contents + a sheet a page

    sheet = site / "_questions_test.html"
    sheet.write_text(handout.build_html(site, [handout.QUESTION_SHEET], front_matter=False), encoding="utf-8")
    q = tmp_path / "questions.pdf"
    try:
        assert handout.print_pdf(site, sheet.name, q, browser=browser) == []
    finally:
        sheet.unlink(missing_ok=True)
    assert handout.page_count(q) == 1
