"""The built book: the strict build passes, and a page renders its widget with no network."""

from __future__ import annotations

import re

import pytest

from conftest import HTML


def test_strict_build_passes(strict_build):
    # jupyter-book build . -W -n --keep-going: any warning (broken reference, missing
    # citation, failing notebook cell) fails the build.
    assert strict_build.returncode == 0, strict_build.stdout[-4000:] + strict_build.stderr[-2000:]


def test_site_scripts_are_local(strict_build):
    assert strict_build.returncode == 0
    page = (HTML / "notebooks" / "start" / "how-many-gpus.html").read_text()
    assert "_static/vendor/html-manager/embed-amd.js" in page
    assert "_static/vendor/mathjax/tex-mml-chtml.js" in page
    external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', page)
    assert external == [], f"the page loads from the network: {external}"


@pytest.mark.browser
def test_gpu_count_page_renders_widget_offline(browser, site_url):
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(f"{site_url}/notebooks/start/how-many-gpus.html", wait_until="networkidle")
    # The widget manager replaces the stored state with live controls.
    page.wait_for_selector(".mlcalc-calculator", timeout=20_000)
    calc = page.locator(".mlcalc-calculator").first
    assert calc.locator("select").count() == 1  # the accelerator dropdown
    assert calc.locator("input").count() >= 1  # the parameter count
    assert calc.locator(".widget-toggle-buttons button").count() == 2  # train / serve
    # The figure inside the widget's output area, and the static figure above it.
    assert calc.locator("img").count() >= 1
    assert calc.locator("img").first.evaluate("img => img.naturalWidth") > 100
    assert page.locator("img[src$='.png']").count() >= 1
    # Math typeset by the local MathJax.
    page.wait_for_selector("mjx-container", timeout=20_000)
    outside = [u for u in requests if not u.startswith(site_url) and not u.startswith(("data:", "blob:"))]
    assert outside == [], f"the page requested something outside the site: {outside}"
    page.close()
