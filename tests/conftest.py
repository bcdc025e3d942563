"""Shared fixtures: the strict build of the book, and the built site served on localhost."""

from __future__ import annotations

import functools
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Flags that keep Chromium quiet on a closed network (see shared TOOLCHAIN notes).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def toc_docnames() -> list[str]:
    """Every page of the book, in reading order, from _toc.yml (root first), without suffix."""
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


def chapter_notebooks() -> list[pathlib.Path]:
    """The chapter notebooks: every notebooks/**/*.ipynb (checkpoints aside)."""
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def widget_view_count(cell) -> int:
    """How many widget views a stored code cell displays."""
    return sum(
        1
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    )


@pytest.fixture(scope="session")
def strict_build() -> subprocess.CompletedProcess:
    """Build the book as the README does, strictly (-W -n --keep-going); return the finished process."""
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(ROOT), "-W", "-n", "--keep-going"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return proc


@pytest.fixture(scope="session")
def site_url(strict_build):
    """The built site served over HTTP on a free localhost port."""
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed, so there is no site to test:\n" + strict_build.stdout[-3000:])
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (never a downloaded browser)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run 'apt-get install -y chromium' (make test does this as root)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass
