"""make handout: the chapters of the built site print to one PDF with headless Chromium."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from conftest import CHROMIUM, HTML, ROOT

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


@pytest.mark.browser
def test_handout_pdf_builds(strict_build, tmp_path):
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed: no site to print")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}")
    out = tmp_path / "handout.pdf"
    assert handout.main(["--html", str(HTML), "--out", str(out)]) == 0
    assert out.read_bytes().startswith(b"%PDF")
    n_pages = handout.page_count(out)
    n_chapters = len(handout.toc_pages())
    # every page of the book starts a new sheet; a chapter runs to some dozen sheets, not hundreds
    assert n_chapters <= n_pages <= 40 * n_chapters, (n_pages, n_chapters)
