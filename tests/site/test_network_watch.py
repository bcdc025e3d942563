"""conftest.NetworkWatch, the wait the layout test uses instead of Playwright's "networkidle" load state, driven by a
stand-in page whose requests start and end at set times (no browser): it returns after half a second with no request in
flight, never while one is, and a request that never ends fails the wait by name."""

from __future__ import annotations

import pytest

from tests.conftest import NetworkWatch


class _Request:
    def __init__(self, url: str) -> None:
        self.url = url


class _Page:
    """What NetworkWatch uses of a Playwright page: on() and wait_for_timeout(), with a clock of its own. `events` are
    (time in s, event name, request), delivered as the clock passes them."""

    def __init__(self, events) -> None:
        self.now = 0.0
        self.events = sorted(events, key=lambda e: e[0])
        self.handlers: dict = {}

    def on(self, name, handler) -> None:
        self.handlers.setdefault(name, []).append(handler)

    def wait_for_timeout(self, ms: float) -> None:
        self.now += ms / 1000
        while self.events and self.events[0][0] <= self.now:
            _, name, request = self.events.pop(0)
            for handler in self.handlers.get(name, []):
                handler(request)


def _watch(page: _Page) -> NetworkWatch:
    class Watch(NetworkWatch):
        clock = staticmethod(lambda: page.now)
    return Watch(page)


def test_quiet_counts_from_the_last_request_that_ended():
    """The sequence whose "networkidle" Playwright lost (issue 42598): quiet for more than 500 ms, then fonts fetched
    and finished at once (as from a warm disk cache), one of them failed. The wait ends 0.5 s after the last of them."""
    fonts = [_Request(f"http://127.0.0.1/font{i}.woff") for i in range(3)]
    events = [(1.2 + 0.01 * i, "request", f) for i, f in enumerate(fonts)]
    events += [(1.25 + 0.01 * i, "requestfinished" if i else "requestfailed", f) for i, f in enumerate(fonts)]
    page = _Page(events)
    watch = _watch(page)
    page.wait_for_timeout(1300)  # the fonts come and go before the wait is asked for (as before DOMContentLoaded)
    watch.wait_until_quiet()
    assert watch.inflight == {}
    assert 1.27 + 0.5 <= page.now <= 1.27 + 0.5 + 0.1 + 1e-9, page.now  # one poll (0.1 s) late at most


def test_never_quiet_while_a_request_is_in_flight():
    slow = _Request("http://127.0.0.1/_static/vendor/html-manager/embed-amd.js")
    page = _Page([(0.1, "request", slow), (4.0, "requestfinished", slow)])
    watch = _watch(page)
    watch.wait_until_quiet()
    assert page.now >= 4.5, page.now


def test_a_request_that_never_ends_fails_the_wait_by_name():
    stuck = _Request("http://127.0.0.1/searchindex.js")
    page = _Page([(0.2, "request", stuck)])
    watch = _watch(page)
    with pytest.raises(TimeoutError, match="searchindex.js"):
        watch.wait_until_quiet(timeout_s=3)
    assert 3 <= page.now <= 3.2, page.now
