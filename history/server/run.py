"""Running the app: ``serve`` (blocking, for ``runjournal serve``) and ``serve_in_thread``.

A plain uvicorn server waits for open responses before it stops, and a live stream never ends
by itself; :class:`JournalServer` first tells the app's streams to end, so shutdown is prompt.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from history.server.app import create_app
from history.server.sse import StreamControl
from journal.store import RunEventStore

__all__ = ["JournalServer", "bind_socket", "make_server", "serve", "serve_in_thread"]

_GRACE_SECONDS = 5


class JournalServer(uvicorn.Server):
    """A uvicorn server that ends the app's live streams before it waits for connections."""

    def __init__(self, config: uvicorn.Config, control: StreamControl | None) -> None:
        super().__init__(config)
        self._control = control

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """End every stream, then shut down as uvicorn does."""
        if self._control is not None:
            self._control.close()
        await super().shutdown(sockets)


def make_server(
    app: FastAPI, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info"
) -> JournalServer:
    """A :class:`JournalServer` for an app made by :func:`history.server.app.create_app`."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=_GRACE_SECONDS,
        lifespan="on",
    )
    return JournalServer(config, getattr(app.state, "stream_control", None))


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` for uvicorn (IPv6 when ``host`` has a ``:``, as
    uvicorn does).

    Raises ``OSError`` with a one-line message naming the address when the host does not
    resolve or the port is taken, before anything is served.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    return sock


def serve(
    store: RunEventStore,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    log_level: str = "info",
) -> None:
    """Serve ``store`` over HTTP until SIGINT/SIGTERM (the body of ``runjournal serve``).

    ``token`` and ``cors_origins`` go to :func:`create_app`; the caller reads them from its
    flags or the environment (``RUNJOURNAL_TOKEN``) and closes ``store`` afterwards. A host
    that does not resolve or a port in use raises ``OSError`` (see :func:`bind_socket`).
    """
    app = create_app(store, token=token, cors_origins=cors_origins)
    with bind_socket(host, port) as sock:
        bound_port = sock.getsockname()[1]
        make_server(app, host=host, port=bound_port, log_level=log_level).run(sockets=[sock])


@contextmanager
def serve_in_thread(
    app: FastAPI, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
) -> Iterator[str]:
    """Serve ``app`` from a background thread; yield its base URL (``http://host:port``).

    ``port=0`` picks a free port (bound before the thread starts, so there is no race). On
    exit the server shuts down (streams end) and the thread is joined.
    """
    sock = bind_socket(host, port)
    bound_port = sock.getsockname()[1]
    server = make_server(app, host=host, port=bound_port, log_level=log_level)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), name="runjournal-http"
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start; see its log")
            time.sleep(0.01)
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=_GRACE_SECONDS + 5)
        sock.close()
