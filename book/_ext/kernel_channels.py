"""Fix for the 300 s build stall: a kernel reply the notebook client does not notice.

Cause (measured, see README "Build stall"): nbclient waits for a cell's ``execute_reply`` with
``await shell_channel.get_msg(timeout=300)``, an asyncio poll on the shell socket (pyzmq's
``zmq.asyncio``), which wakes on the socket's file descriptor. That descriptor is
*edge-triggered*: any send or receive on the socket may consume the wake-up, so pyzmq re-checks
``ZMQ_EVENTS`` after each of *its own* operations. But while the cell runs, nbclient's Output-widget
handler sends ``comm_msg`` updates on the same shell socket through ``Session.send``, which
(jupyter_client 8) replaces an asyncio socket by a plain *shadow* socket and sends on that. When
the reply reaches the socket just before such a send, the send swallows the wake-up, pyzmq never
re-checks, and the poll sleeps until its timeout; then its final non-blocking poll finds the reply
and the notebook "succeeds" 300 s late. Only widget cells with an Output widget send while a reply
is awaited, and only a busy machine makes the reply land in that window: hence "sometimes, under
concurrency". (jupyter_client PR #1059 proposes dropping the shadow send; ipykernel issue #1554 is
the kernel-side twin of the same pattern, reason for the ``ipykernel<7`` pin.)

Fix: the asyncio channels send through the asyncio socket itself (pyzmq sends at once and, when a
receive is awaited, re-checks the events), by handing ``Session.send`` a thin sender that is not a
``zmq.asyncio.Socket``. Everything else ``Session.send`` does (signing, buffers, version adaptation)
is unchanged. Installed by the book build (this is a Sphinx extension) and by
``scripts/execute_notebooks.py``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

_log = logging.getLogger(__name__)


class _AsyncSocketSender:
    """What ``Session.send`` needs of a stream (``send_multipart``), sent through the asyncio socket."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket

    def send_multipart(self, parts: Any, copy: bool = True, **kwargs: Any) -> None:
        future = self._socket.send_multipart(parts, copy=copy, **kwargs)
        future.add_done_callback(_report_failed_send)


def _report_failed_send(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        _log.error("sending a message to the kernel failed: %r", future.exception())


def install() -> None:
    """Make ``AsyncZMQSocketChannel.send`` send through its asyncio socket (idempotent)."""
    import zmq.asyncio
    from jupyter_client.channels import AsyncZMQSocketChannel

    if getattr(AsyncZMQSocketChannel.send, "_sends_through_asyncio_socket", False):
        return

    def send(self: Any, msg: dict[str, Any]) -> None:
        """Pass a message to the ZMQ socket to send (through the asyncio socket, keeping its wake-ups)."""
        assert self.socket is not None
        stream = _AsyncSocketSender(self.socket) if isinstance(self.socket, zmq.asyncio.Socket) else self.socket
        self.session.send(stream, msg)

    send._sends_through_asyncio_socket = True  # type: ignore[attr-defined]
    AsyncZMQSocketChannel.send = send  # type: ignore[method-assign]


class _Heartbeat:
    """While one page is read (a notebook executed) for more than ``every`` seconds, say so on stdout.

    myst-nb prints "Executing notebook ..." when it starts and "Executed notebook in N seconds" when
    it ends; between the two a newcomer saw nothing. Now a long notebook prints a line every 15 s.
    """

    def __init__(self, every: float = 15.0) -> None:
        self.every = every
        self.doc: str | None = None
        self.since = 0.0
        self.lock = threading.Lock()
        threading.Thread(target=self._run, name="build-heartbeat", daemon=True).start()

    def start(self, app: Any, docname: str, source: Any) -> None:
        with self.lock:
            self.doc, self.since = docname, time.monotonic()

    def stop(self, app: Any, doctree: Any) -> None:
        with self.lock:
            self.doc = None

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            with self.lock:
                doc, since = self.doc, self.since
            if doc is not None and time.monotonic() - since >= self.every:
                print(f"  ... still reading {doc} ({time.monotonic() - since:.0f} s: executing its notebook)",
                      file=sys.stdout, flush=True)


def setup(app: Any) -> dict[str, Any]:
    install()
    beat = _Heartbeat()
    app.connect("source-read", beat.start)
    app.connect("doctree-read", beat.stop)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
