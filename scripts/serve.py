"""Serve the built site (``make serve``) as a web host should: compressed, with cache headers.

Python's ``http.server`` sends every file uncompressed with no cache headers, so a reader's browser
fetches about 23 MB for a first chapter and asks for all of it again on the next page. This server
(standard library only) adds what a static host must set (README, "Serving the site"):

- ``Content-Encoding: gzip`` for text, scripts, JSON and WebAssembly when the browser accepts it
  (compressed once per file and kept in memory; a ``<file>.gz`` made at build time, like the Pyodide
  snapshot's, is sent as it is), with ``Vary: Accept-Encoding``;
- ``Cache-Control``: the third-party scripts under ``_static/vendor/`` (pinned versions fetched from npm:
  Pyodide, Vega, MathJax, the widget manager) for an hour; everything else, the pages, the site's own
  scripts, the wheel of mlcalc and its snapshot, ``no-cache`` (the browser keeps them and asks whether
  they changed: after a rebuild the new ones are taken);
- ``ETag`` and ``Last-Modified``, answering a conditional request for an unchanged file with
  ``304 Not Modified`` and no body;
- the right types for ``.mjs`` (JavaScript, which module workers require) and ``.wasm``
  (``application/wasm``, which streaming compilation requires).

    python scripts/serve.py [--bind 127.0.0.1] [--port 8000] [--directory _build/html]
"""

from __future__ import annotations

import argparse
import email.utils
import functools
import gzip
import http.server
import os
import threading

#: Files compressed on the way out (by suffix): text, scripts, data and WebAssembly. Images, fonts in
#: woff/woff2 and the wheel (already compressed) go as they are.
COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".json", ".svg", ".txt", ".map", ".wasm", ".zip", ".ttf",
                ".otf", ".xml", ".ipynb", ".md", ".bib", ".snapshot"}
#: Most bytes of compressed files kept in memory (a chapter with Python in it needs about 20 MB).
CACHE_BYTES = 512 * 2**20
#: Files below this size go uncompressed (the headers would cost more than they save).
MIN_BYTES = 1024
VENDOR = "/_static/vendor/"
VENDOR_MAX_AGE_S = 3600

_cache: dict[tuple[str, int, int], bytes] = {}
_cache_bytes = 0
_lock = threading.Lock()


def _compressed(path: str, st: os.stat_result) -> bytes:
    """The file's gzip bytes: a fresh ``.gz`` beside it as it is, else compressed once and kept."""
    global _cache_bytes
    gz = path + ".gz"
    try:
        gst = os.stat(gz)
        if gst.st_mtime_ns >= st.st_mtime_ns:
            with open(gz, "rb") as f:
                return f.read()
    except OSError:
        pass
    key = (path, st.st_mtime_ns, st.st_size)
    with _lock:
        if key in _cache:
            return _cache[key]
        with open(path, "rb") as f:
            body = gzip.compress(f.read(), compresslevel=6, mtime=0)
        if _cache_bytes + len(body) > CACHE_BYTES:
            _cache.clear()
            _cache_bytes = 0
        _cache[key] = body
        _cache_bytes += len(body)
        return body


class Handler(http.server.SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler with compression, cache headers and conditional requests."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
                      ".snapshot": "application/octet-stream", ".whl": "application/zip"}
    protocol_version = "HTTP/1.1"  # keep-alive: a page's dozens of files on a few connections

    def log_message(self, format, *args):  # noqa: A002 - quiet unless asked (--log)
        if self.server.log:  # type: ignore[attr-defined]
            super().log_message(format, *args)

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path) or not os.path.isfile(path):
            return super().send_head()  # directories (index.html, redirects) and 404s as before
        try:
            st = os.stat(path)
        except OSError:
            return super().send_head()
        url_path = self.path.split("?", 1)[0].split("#", 1)[0]
        suffix = os.path.splitext(path)[1].lower()
        gzip_ok = ("gzip" in self.headers.get("Accept-Encoding", "") and suffix in COMPRESSIBLE
                   and st.st_size >= MIN_BYTES)
        etag = f'"{st.st_mtime_ns:x}-{st.st_size:x}{"-gz" if gzip_ok else ""}"'
        cache = (f"public, max-age={VENDOR_MAX_AGE_S}" if url_path.startswith(VENDOR) else "no-cache")
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self._common(etag, st, cache, gzip_ok)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if gzip_ok:
            body = _compressed(path, st)
        else:
            with open(path, "rb") as f:
                body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self._common(etag, st, cache, gzip_ok)
        if gzip_ok:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        import io

        return io.BytesIO(body)

    def _common(self, etag: str, st: os.stat_result, cache: str, gzip_ok: bool) -> None:
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("Cache-Control", cache)
        self.send_header("Vary", "Accept-Encoding")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    log = False


def make_server(directory: str, bind: str = "127.0.0.1", port: int = 8000, log: bool = False) -> Server:
    """A server for ``directory`` (not yet serving: call ``serve_forever``); port 0 picks a free one."""
    server = Server((bind, port), functools.partial(Handler, directory=directory))
    server.log = log
    return server


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--directory", default="_build/html")
    ap.add_argument("--log", action="store_true", help="print each request")
    args = ap.parse_args(argv)
    server = make_server(args.directory, args.bind, args.port, args.log)
    print(f"Open http://{args.bind}:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
