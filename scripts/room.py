"""What one laptop downloads to read the book live, for planning a workshop room on venue Wi-Fi.

Usage: make room, or python scripts/room.py [--html _build/html] [--laptops 30] [--out benchmarks/room.json]

Serves the built site with scripts/serve.py (gzip, cache headers: what `make serve` sends), opens the
first chapter in headless Chromium with an empty cache, waits until its calculators are live (Python
started in the page), then opens the next chapter in the same browser, and counts the bytes that came
over the network for each (compressed bodies plus headers, as Chromium reports them: the Web
Worker's downloads of Pyodide, the wheel and the snapshot included). The room's total and the time it
takes at a few shared Wi-Fi rates follow by arithmetic. Writes benchmarks/room.json; the workshop's
setup page quotes it (a test checks that the page and the file agree).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FIRST, NEXT = "notebooks/start/how-many-gpus", "notebooks/accelerators/catalogue"
#: Shared Wi-Fi rates (Mb/s, megabits per second) the room's download time is shown for: the reader's
#: own venue may be faster or slower; the time scales inversely with the rate.
WIFI_MBPS = (20, 50, 100)
LIVE_TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def room_minutes(bytes_per_laptop: float, laptops: int, wifi_mbps: float) -> float:
    """Minutes for ``laptops`` to download ``bytes_per_laptop`` each over one shared link of ``wifi_mbps``."""
    if bytes_per_laptop < 0 or laptops < 1 or wifi_mbps <= 0:
        raise ValueError(f"bytes_per_laptop={bytes_per_laptop!r}, laptops={laptops!r}, wifi_mbps={wifi_mbps!r}: "
                         "bytes must be >= 0, laptops >= 1 and the rate > 0")
    return bytes_per_laptop * laptops * 8 / (wifi_mbps * 1e6) / 60


def measure(site: pathlib.Path) -> dict:
    """Bytes over the network for the first chapter (empty cache, until live) and the next one."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "serve.py"), "--port", str(port),
                               "--bind", "127.0.0.1", "--directory", str(site)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        counts: dict[str, list[int]] = {"first": [0, 0], "next": [0, 0]}  # bytes over the network, files
        phase = ["first"]

        def finished(request) -> None:
            try:
                sizes = request.sizes()
            except Exception:  # noqa: BLE001 - a request that failed has no sizes
                return
            c = counts[phase[0]]
            c[0] += sizes["responseBodySize"] + sizes["responseHeadersSize"]
            c[1] += 1

        # A profile on disk, as a participant's browser has: Playwright's default (incognito) context keeps
        # its HTTP cache in memory, where Chromium caches no entry over an eighth of that cache (the
        # 7 MB snapshot then came again on every page).
        with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="mlcalc-room-") as profile:
            context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
            try:
                context.on("requestfinished", finished)
                page = context.new_page()
                ready = "() => ['live', 'snapshot'].includes((window.mlcalcLive || {}).state)"
                page.goto(f"http://127.0.0.1:{port}/{FIRST}.html", wait_until="load")
                page.wait_for_function(ready, timeout=LIVE_TIMEOUT_MS)
                page.wait_for_timeout(1000)
                phase[0] = "next"
                page.goto(f"http://127.0.0.1:{port}/{NEXT}.html", wait_until="load")
                page.wait_for_function(ready, timeout=LIVE_TIMEOUT_MS)
                page.wait_for_timeout(1000)
                state = page.evaluate("() => window.mlcalcLive.state")
            finally:
                context.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {"first_chapter_bytes": counts["first"][0], "first_chapter_files": counts["first"][1],
            "next_chapter_bytes": counts["next"][0], "next_chapter_files": counts["next"][1], "state": state}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--laptops", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "room.json"))
    args = parser.parse_args(argv)
    site = pathlib.Path(args.html)
    if not (site / "index.html").exists():
        raise SystemExit(f"no built site in {site}: run 'make book' first")
    result = measure(site)
    per = result["first_chapter_bytes"]
    result.update({
        "laptops": args.laptops,
        "room_bytes": per * args.laptops,
        "minutes_at_mbps": {str(r): round(room_minutes(per, args.laptops, r), 1) for r in WIFI_MBPS},
        "first_chapter": FIRST, "next_chapter": NEXT,
        "measured": time.strftime("%Y-%m-%d"),
        "how": "scripts/room.py: scripts/serve.py (gzip) and headless Chromium, empty cache, until live",
    })
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"first chapter: {per / 1e6:.1f} MB over the network ({result['first_chapter_files']} files), "
          f"next chapter: {result['next_chapter_bytes'] / 1e6:.2f} MB; {args.laptops} laptops: "
          f"{result['room_bytes'] / 1e6:,.0f} MB; " +
          ", ".join(f"{m} min at {r} Mb/s" for r, m in result["minutes_at_mbps"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
