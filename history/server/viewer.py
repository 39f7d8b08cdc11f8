"""The web viewer's pages: one static shell served at ``/`` and ``/threads/{thread_id}``.

The shell (``history/server/static/index.html``, ``viewer.css`` and the ES modules it loads:
``viewer.js`` the entry, ``thread.js`` the conversation, ``run.js`` the run page and waterfall,
``context.js`` a model call's input, ``panels.js`` runs and usage, ``markers.js``,
``search.js``, ``spark.js``, ``lib.js``) ships inside the package; nothing is built at install
time. Its links follow the app's mount point (the ASGI ``root_path``), so the viewer also
works under ``parent.mount("/journal", create_app(store))``.
The script renders every stored text with ``textContent``; the Content-Security-Policy sent with
the page allows only the package's own script and styles, so injected markup could not run even
if it reached the DOM.
"""

from __future__ import annotations

import html
from importlib import resources
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

__all__ = ["PAGE_HEADERS", "build_viewer_router"]

#: Headers of every viewer page.
PAGE_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def build_viewer_router() -> APIRouter:
    """Routes of the viewer's pages (the static assets are mounted at ``/static``)."""
    router = APIRouter(include_in_schema=False)
    page = resources.files("history.server").joinpath("static/index.html").read_text("utf-8")

    def shell(request: Request) -> Response:
        root = html.escape(str(request.scope.get("root_path", "")).rstrip("/"), quote=True)
        body = page.replace("__ROOT__", root)
        return Response(body, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @router.get("/")
    async def threads_page(request: Request) -> Response:
        return shell(request)

    @router.get("/threads/{thread_id:path}")
    async def thread_page(request: Request, thread_id: str) -> Response:
        return shell(request)

    return router
