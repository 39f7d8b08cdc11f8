"""The HTTP room: the FastAPI app (``create_app``), its API, SSE streams and the web viewer.

``create_app(store)`` builds the app; ``serve`` runs it until Ctrl-C (``runjournal serve``) and
``serve_in_thread`` runs it in the background (tests, notebooks). uvicorn loads only for those two.
Modules: ``app`` (the app, auth, errors), ``api`` and ``api_models`` (the JSON routes and their
OpenAPI shapes), ``sse`` (live streams), ``viewer`` and ``static/`` (the web page), ``run``
(the uvicorn server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from history.server.app import create_app

if TYPE_CHECKING:
    from history.server.run import serve, serve_in_thread

__all__ = ["create_app", "serve", "serve_in_thread"]


def __getattr__(name: str) -> object:
    """``serve`` and ``serve_in_thread`` import uvicorn on first use."""
    if name in ("serve", "serve_in_thread"):
        from history.server import run

        value = getattr(run, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'history.server' has no attribute {name!r}")
