"""Links that reopen a plan, in the built site driven by headless Chromium (issue 17, item 5): a plan page
opened from a link shows the link's values and CPython's result for them, the address follows a change,
a hostile link shows the inline message and the calculator keeps working, and from file:// the calculator
says the link needs the live site. The functions that write and read the query: tests/core/test_live.py.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from mlcalc.calc import get, run
from mlcalc.live import open_widgets, query_from_values, widget_state, widget_values

import mlcalc.calculators  # noqa: F401  (registers every calculator)
from tests.conftest import HTML, disk_profile

LIVE_TIMEOUT_MS = 90_000  # Pyodide's start on a busy 2-core machine (about 2-3 s when idle)
CALC = "(k) => window.mlcalcLive.calculators.find(c => c.key === k)"
STATE = f"""(k) => {{ const c = ({CALC})(k);
  return {{requested: c.requested, shown: c.shown, values: c.values(), initial: c.initial, last: c.last,
          linked: c.linked, status: c.status.innerText,
          message: c.el.querySelector('.mlcalc-message').innerText.trim(),
          stale: c.el.querySelectorAll('.mlcalc-stale').length}}; }}"""


@pytest.fixture(scope="module")
def context(browser, site_url, tmp_path_factory):
    """One browser profile for the file's pages, on disk (conftest.disk_profile): its caches keep Pyodide between them,
    fetched once and compiled once (an incognito context keeps no file over ~6 MB, and no compiled code: Pyodide's
    9.6 MB runtime and 31.5 MB snapshot were fetched and compiled again on every page, 7.7 CPU-s to live against 4.1
    from the profile's cache, measured 2026-11-27). No host but the local site can be reached (conftest.OFFLINE_ARGS)."""
    context = disk_profile(browser, tmp_path_factory.mktemp("chromium-live-url"), viewport={"width": 1280, "height": 900})
    yield context
    context.close()


@pytest.fixture
def page(context):
    """A fresh page; no page or console error may occur on it."""
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and page.problems.append(f"console error: {m.text}"))
    yield page
    page.close()
    assert page.problems == [], page.problems


def _open(page, url: str, keys: list[str]) -> None:
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_function(f"(ks) => window.mlcalcLive && ks.every(k => ({CALC})(k))", arg=keys, timeout=60_000,
                           polling=100)


def _settled(page, key: str, before: int) -> dict:
    # (the page writes a change's address once its result is on screen: addressPending until then)
    page.wait_for_function(f"([k, b]) => {{ const c = ({CALC})(k); return c.requested > b && c.shown === c.requested"
                           f" && !window.mlcalcLive.addressPending; }}",
                           arg=[key, before], timeout=LIVE_TIMEOUT_MS, polling=20)
    return page.evaluate(STATE, key)


def _type(page, key: str, control: str, text: str) -> dict:
    before = page.evaluate(STATE, key)["requested"]
    escaped = key.replace(".", "\\.")
    box = page.locator(f".mlcalc-calc-{escaped} .mlcalc-ctl-{control} input")
    box.fill(text)
    box.press("Enter")
    return _settled(page, key, before)


def _search(page) -> str:
    return page.evaluate("() => location.search")


@pytest.mark.browser
def test_a_link_reopens_the_plan_and_the_address_follows_each_change(page, site_url):
    """One page, two calculators: the link's values are set and computed as CPython does; each change
    rewrites only its calculator's parameters, in place (no history entry), and the address reopens it."""
    train = "plan.train"
    link = "?plan.train.model=Llama-3+8B&plan.train.deadline_days=30&plan.train.rent=false&plan.compare.gpus_a=64&utm=x"
    _open(page, f"{site_url}/notebooks/plan/training-plan.html{link}", [train, "plan.compare"])
    # Python starts at once for a link, before any calculator is scrolled into view.
    state = _settled(page, train, 0)
    assert state["linked"] and state["last"]["ok"], state["last"]
    page_own = widget_values(train, state["initial"])
    values = {**page_own, "model": "Llama-3 8B", "deadline_days": 30.0, "rent": False}
    assert state["values"] == widget_state(train, values), "the controls show the link's values"
    want = run(train, values)
    assert state["last"]["html"] == want["html"] and state["last"]["chart"] == want["chart"], "CPython's result"
    assert state["message"] == "" and state["stale"] == 0
    calc_el = page.locator(".mlcalc-calc-plan\\.train")
    shown_option = calc_el.locator(".mlcalc-ctl-model select").evaluate("s => s.options[s.selectedIndex].text")
    assert shown_option.replace("\xa0", " ") == "Llama-3 8B"  # (ipywidgets shows spaces as no-break spaces)
    assert calc_el.locator(".mlcalc-ctl-deadline_days input").input_value() == "30"
    assert "Llama-3 8B" in calc_el.locator(".mlcalc-view-text").inner_text()
    compare = _settled(page, "plan.compare", 0)
    assert widget_values("plan.compare", compare["values"])["gpus_a"] == 64 and compare["last"]["ok"]
    assert _search(page) == link, "opening a link leaves the address as it is"

    history = page.evaluate("() => history.length")
    state = _type(page, train, "deadline_days", "45")
    assert state["last"]["ok"]
    # Only plan.train's part changed, in its place; the other calculator's and the page's other parameters stay.
    assert _search(page) == ("?plan.train.model=Llama-3+8B&plan.train.deadline_days=45&plan.train.rent=false"
                             "&plan.compare.gpus_a=64&utm=x")
    assert _type(page, "plan.compare", "gpus_b", "1024")["last"]["ok"]
    assert _search(page) == ("?plan.train.model=Llama-3+8B&plan.train.deadline_days=45&plan.train.rent=false"
                             "&plan.compare.gpus_a=64&plan.compare.gpus_b=1024&utm=x")
    # Back to the page's own value: that parameter leaves the address.
    _type(page, train, "deadline_days", f"{page_own['deadline_days']:g}")
    assert _search(page) == ("?plan.train.model=Llama-3+8B&plan.train.rent=false"
                             "&plan.compare.gpus_a=64&plan.compare.gpus_b=1024&utm=x")
    assert page.evaluate("() => history.length") == history, "replaceState: no history entry per change"
    # That address, opened again, gives the values shown (the open itself is checked above, so CPython here).
    shown = page.evaluate(STATE, train)
    reopened = open_widgets(train, _search(page), shown["initial"])
    assert reopened["ok"] and {**shown["initial"], **reopened["controls"]} == shown["values"]
    assert reopened["html"] == shown["last"]["html"]


@pytest.mark.browser
def test_a_hostile_link_shows_the_inline_message_and_the_calculator_keeps_working(page, site_url):
    key = "plan.tco"
    link = "?plan.tco.utilization=nan&plan.tco.pue=1e400&plan.tco.%F0%9F%A6%99=" + "9" * 2000
    _open(page, f"{site_url}/notebooks/plan/rent-hpc-buy.html{link}", [key])
    state = _settled(page, key, 0)
    # The inline message names each bad parameter, which is left out; with no good one left, the page's
    # own values and result stay, not dimmed.
    assert state["message"].startswith("Check the link:") and "plan.tco.utilization='nan'" in state["message"]
    assert "plan.tco.pue='1e400'" in state["message"] and "left out" in state["message"]
    assert state["values"] == state["initial"] and state["stale"] == 0 and state["last"]["ok"]
    # A valid change computes as CPython does, and the link's bad parameters leave the address.
    state = _type(page, key, "pue", "1.3")
    want = run(key, {**widget_values(key, state["initial"]), "pue": 1.3})
    assert state["last"]["ok"] and state["last"]["html"] == want["html"] and state["message"] == ""
    assert state["stale"] == 0
    assert _search(page) == "?plan.tco.pue=1.3"


@pytest.mark.browser
def test_from_a_file_a_link_says_it_needs_the_live_site(page):
    """file://: no Python, so the calculator says the link's values need the live site (not silently the defaults)."""
    page.goto((HTML / "notebooks/plan/rent-hpc-buy.html").as_uri() + "?plan.tco.pue=1.3", wait_until="load")
    page.wait_for_function(f"() => window.mlcalcLive && ({CALC})('plan.tco')", timeout=30_000, polling=100)
    state = page.evaluate(STATE, "plan.tco")
    assert page.evaluate("() => mlcalcLive.state") == "snapshot"
    assert state["linked"] and "link holds values" in state["status"] and "need the live site" in state["status"]
    assert "make serve" in state["status"]
    # and a page without a link says nothing of links
    page.goto((HTML / "notebooks/plan/rent-hpc-buy.html").as_uri(), wait_until="load")
    page.wait_for_function(f"() => window.mlcalcLive && ({CALC})('plan.tco')", timeout=30_000, polling=100)
    status = page.evaluate(STATE, "plan.tco")["status"]
    assert "Snapshot" in status and "link" not in status


@pytest.mark.browser
def test_a_shared_plan_link_scrolls_to_its_calculator_and_the_export_buttons_carry_the_absolute_link(context, site_url):
    """A plan's link lands on the planner (not thousands of pixels above it); its Copy and Download buttons
    give the same text, the export CPython makes, with a link that reopens the same plan from anywhere."""
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site_url)
    page = context.new_page()
    key = "plan.train"
    link = "?plan.train.model=Llama-3+8B&plan.train.deadline_days=30&plan.train.export=Markdown"
    _open(page, f"{site_url}/notebooks/plan/training-plan.html{link}", [key])
    state = _settled(page, key, 0)
    assert state["last"]["ok"] and "# Plan:" in state["last"]["text"]
    page.wait_for_timeout(300)
    top = page.evaluate("() => document.getElementById('calc-plan-train').getBoundingClientRect().top")
    assert 0 <= top < 200, f"the planner is {top:.0f} px from the top of the window"
    copy = page.locator("#calc-plan-train .mlcalc-copy")
    copy.click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    with page.expect_download() as dl:
        page.locator("#calc-plan-train .mlcalc-download").click()
    downloaded = pathlib.Path(dl.value.path()).read_text()
    assert dl.value.suggested_filename == "plan.md"
    assert copied == downloaded
    values = {**get(key).defaults(), "model": "Llama-3 8B", "deadline_days": 30.0, "export": "Markdown"}
    query = "?" + query_from_values(key, values)
    url = f"{site_url}/notebooks/plan/training-plan.html{query}#calc-plan-train"
    assert f"<{url}>" in downloaded, downloaded[:600]
    assert downloaded.startswith("# Plan: Llama-3 8B") and "| number | value |" in downloaded
    # the absolute link reopens the same plan
    other = context.new_page()
    _open(other, url, [key])
    again = _settled(other, key, 0)
    assert again["last"]["html"] == state["last"]["html"]
    # the JSON export: valid JSON whose reopen block holds the absolute link
    state = page.evaluate(STATE, key)
    page.locator("#calc-plan-train .mlcalc-ctl-export button", has_text="JSON").click()
    _settled(page, key, state["requested"])
    with page.expect_download() as dl:
        page.locator("#calc-plan-train .mlcalc-download").click()
    record = json.loads(pathlib.Path(dl.value.path()).read_text())
    assert record["reopen"]["url"].startswith(f"{site_url}/notebooks/plan/training-plan.html?plan.train.")
    assert record["model"] == "Llama-3 8B"
    other.close()
    page.close()


@pytest.mark.browser
def test_a_preset_with_a_hand_edited_value_survives_a_reload(page, site_url):
    """The peak calculator: pick V100 (1530 MHz filled in), type 1830 MHz back, reload: 1830 MHz and its
    result, not V100's own clock; a value the address cannot carry is refused where it is typed."""
    key = "accelerators.peak"
    _open(page, f"{site_url}/notebooks/accelerators/catalogue.html", [key])
    state = page.evaluate(STATE, key)
    before = state["requested"]
    select = page.locator(".mlcalc-calc-accelerators\\.peak .mlcalc-ctl-accelerator select")
    select.select_option(label="V100-SXM2-32GB")
    state = _settled(page, key, before)
    assert widget_values(key, state["values"])["clock_mhz"] == 1530.0, state["values"]
    state = _type(page, key, "clock_mhz", "1830")
    shown = state["last"]["html"]
    assert state["last"]["ok"] and "clock_mhz=1830" in _search(page), _search(page)
    page.reload(wait_until="domcontentloaded")
    page.wait_for_function(f"() => window.mlcalcLive && ({CALC})('{key}')", timeout=60_000, polling=100)
    state = _settled(page, key, 0)
    values = widget_values(key, state["values"])
    assert values["accelerator"] == "V100-SXM2-32GB" and values["clock_mhz"] == 1830.0, values
    assert state["last"]["html"] == shown and state["message"] == ""
    # a clock of magnitude above 1e300: refused where it is typed, naming the control; the address keeps
    # the last value it can carry
    search = _search(page)
    state = _type(page, key, "clock_mhz", "1e301")
    assert state["last"]["ok"] is False and "clock" in state["message"] and "address" in state["message"], state["message"]
    assert _search(page) == search
