"""``create_app(store)``: the FastAPI app that serves journaled threads to frontends and people.

Routes: the JSON API under ``/api`` (:mod:`history.server.api`), the web viewer at ``/`` and
``/threads/{thread_id}`` (:mod:`history.server.viewer`), ``/openapi.json`` with every response
model.

Every ``/api`` route answers 422 to a query parameter it does not declare
(:mod:`history.server.params`). A 422 body is FastAPI's (``{"detail": [errors]}``), bounded: it
repeats a rejected value or parameter name only in part (its first characters and its length)
and lists at most 20 errors (``more_errors`` counts the rest).

Authentication: with ``token=`` set, every ``/api`` route and ``/openapi.json`` require
``Authorization: Bearer <token>`` (else 401) and the interactive docs are off. The viewer's
static shell (HTML, JS, CSS: no stored data) stays public, because a browser navigating to a
page cannot send a header; the viewer takes the token from the URL fragment
(``/#token=...``, never sent to the server) or a prompt, keeps it in ``sessionStorage`` and
sends it as the header, the live stream included (read with ``fetch``, not ``EventSource``).
No route accepts the token in the query string, so it never lands in access logs.

The app never reads the environment: the composition root (the CLI) passes ``token`` and
``cors_origins``. To run it, see :func:`history.server.serve`.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.requests import HTTPConnection

from history.errors import RunNotFoundError, ThreadNotFoundError
from history.server.api import build_api_router
from history.server.api_models import ErrorBody
from history.server.api_viewer import build_viewer_api_router
from history.server.params import reject_unknown_query
from history.server.sse import StreamControl, StreamSettings
from history.server.viewer import build_viewer_router
from journal._logging import get_logger
from journal.errors import StoreError
from journal.store import RunEventStore

__all__ = ["create_app"]

log = get_logger(__name__)

_UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."}
}


class _TokenBearer(HTTPBearer):
    """``Authorization: Bearer <token>`` must carry the app's token, else 401."""

    def __init__(self, token: str) -> None:
        super().__init__(
            scheme_name="bearer",
            auto_error=False,
            description="The token given to create_app(token=).",
        )
        self._expected = token.encode()

    async def __call__(self, request: HTTPConnection) -> HTTPAuthorizationCredentials | None:
        credentials = await super().__call__(request)
        given = credentials.credentials.encode() if credentials else b""
        if not hmac.compare_digest(given, self._expected):
            raise HTTPException(
                status_code=401,
                detail="a valid bearer token is required: send 'Authorization: Bearer <token>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return credentials


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc)})


#: How much of a rejected value a 422 body repeats, and how many errors it lists at most.
_ECHO_CHARS = 120
_MAX_ERRORS = 20


def _cut(value: Any) -> Any:
    """``value`` as a 422 body repeats it: a long string cut (with a mark), long lists cut."""
    if isinstance(value, str) and len(value) > _ECHO_CHARS:
        return f"{value[:_ECHO_CHARS]}… ({len(value)} characters)"
    if isinstance(value, list | tuple):
        return [_cut(v) for v in value[:_MAX_ERRORS]]
    if isinstance(value, dict):
        return {_cut(k): _cut(v) for k, v in list(value.items())[:_MAX_ERRORS]}
    return value


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 body (``{"detail": [errors]}``), bounded: a rejected value or parameter
    name is repeated only in part, and at most ``_MAX_ERRORS`` errors are listed."""
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    detail = [{key: _cut(value) for key, value in error.items()} for error in errors[:_MAX_ERRORS]]
    content: dict[str, Any] = {"detail": jsonable_encoder(detail)}
    if len(errors) > _MAX_ERRORS:
        content["more_errors"] = len(errors) - _MAX_ERRORS
    return JSONResponse(status_code=422, content=content)


async def _store_failed(request: Request, exc: Exception) -> JSONResponse:
    log.error("store_request_failed", path=request.url.path, error=type(exc).__name__)
    return JSONResponse(status_code=503, content={"detail": "the event store is unavailable"})


def _check_args(token: str | None, cors_origins: Sequence[str]) -> list[str]:
    if token is not None and (not isinstance(token, str) or not token.strip()):
        raise ValueError("token must be a non-empty string, or None for no authentication")
    if isinstance(cors_origins, str) or not all(isinstance(o, str) for o in cors_origins):
        raise TypeError(
            "cors_origins must be a list of origin strings, e.g. ['http://localhost:3000']"
        )
    return list(cors_origins)


def create_app(
    store: RunEventStore,
    *,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    stream_settings: StreamSettings | None = None,
    title: str = "runjournal",
) -> FastAPI:
    """The FastAPI app serving ``store`` (routes and authentication in the module docstring).

    ``cors_origins``: origins allowed to call the API from a browser (``["*"]`` for any);
    empty means no CORS headers. ``stream_settings`` tunes the live stream's polling. The app
    does not own ``store``: closing it is the caller's job. Streams end when the app shuts down.
    """
    if not isinstance(store, RunEventStore):
        raise TypeError(f"store must be a RunEventStore, got {type(store).__name__}")
    origins = _check_args(token, cors_origins)
    control = StreamControl()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        control.close()

    guard = [] if token is None else [Depends(_TokenBearer(token))]
    # every /api router: the token (when set), then no query parameter a route does not take
    api_dependencies = [*guard, Depends(reject_unknown_query)]
    app = FastAPI(
        title=title,
        summary="Journaled LangGraph threads: timeline, raw events, runs, live stream.",
        lifespan=lifespan,
        openapi_url="/openapi.json" if token is None else None,
        docs_url="/docs" if token is None else None,
        redoc_url=None,
    )
    app.state.store = store
    app.state.stream_control = control
    app.include_router(
        build_api_router(store, stream_settings or StreamSettings(), control),
        prefix="/api",
        dependencies=api_dependencies,
        responses=_UNAUTHORIZED if token is not None else None,
    )
    app.include_router(
        build_viewer_api_router(store, stream_settings or StreamSettings()),
        prefix="/api",
        dependencies=api_dependencies,
        responses=_UNAUTHORIZED if token is not None else None,
    )
    if token is not None:

        @app.get("/openapi.json", include_in_schema=False, dependencies=guard)
        async def openapi() -> JSONResponse:
            return JSONResponse(app.openapi())

    app.include_router(build_viewer_router())
    app.mount("/static", StaticFiles(packages=[("history.server", "static")]), name="static")
    app.add_exception_handler(ThreadNotFoundError, _not_found)
    app.add_exception_handler(RunNotFoundError, _not_found)
    app.add_exception_handler(StoreError, _store_failed)
    app.add_exception_handler(RequestValidationError, _invalid)
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "DELETE"],
            allow_headers=["Authorization", "Last-Event-ID"],
        )
    return app
