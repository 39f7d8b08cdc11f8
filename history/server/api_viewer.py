"""The routes the web viewer needs, under ``/api``: what a model call saw, a run's spans, the
per-call token series, search in a thread, a marker's original messages, truncated events.

The same rules as every ``/api`` route: an unknown thread, run, seq or model call is 404; a
parameter outside its range is 422; a store failure is 503; nothing a client sends yields a
500. Every answer is bounded in items and in bytes (the server's page size); a page that stops
early says so and carries the cursor to read on. The logic lives in the pure readers
(:mod:`history._context`, :mod:`history._spans`, :mod:`history._search`), run on the store's
async methods.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Annotated, Any, Final, TypeVar

from fastapi import APIRouter, HTTPException, Query
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError

from history._context import WalkCache, context_plan
from history._reads import Plan, arun_plan
from history._search import (
    MAX_QUERY,
    calls_plan,
    originals_plan,
    search_plan,
    truncations_plan,
)
from history._spans import NotFoundError, spans_plan
from history.server.api import ID_PATTERN, MAX_SEQ, ThreadId
from history.server.api_models import ErrorBody
from history.server.api_viewer_models import (
    CallPage,
    MarkerOriginals,
    ModelContext,
    RunSpans,
    SearchPage,
    Truncations,
)
from history.server.sse import StreamSettings
from journal.events import MAX_ID_LENGTH
from journal.store import RunEventStore

__all__ = ["build_viewer_api_router"]

T = TypeVar("T")

_NOT_FOUND: Final[dict[int | str, dict[str, Any]]] = {
    404: {"model": ErrorBody, "description": "No such thread, run, seq or model call."}
}
Seq = Annotated[int, PathParam(ge=1, le=MAX_SEQ, description="A seq of the thread.")]
Limit = Annotated[int, Query(ge=1, le=1000)]
Cursor = Annotated[int | None, Query(ge=0, le=MAX_SEQ)]


RunId = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        pattern=ID_PATTERN,
        description="The run (its root run id).",
    ),
]
#: What the context route uses to count tokens (LangChain): imported off the event loop.
_TOKEN_STACK: Final = ("journal.messages", "langchain_core.messages.utils")


def _import_token_stack() -> None:
    for name in _TOKEN_STACK:
        importlib.import_module(name)


async def _token_stack_ready() -> None:
    if not all(name in sys.modules for name in _TOKEN_STACK):
        await asyncio.to_thread(_import_token_stack)


def build_viewer_api_router(store: RunEventStore, settings: StreamSettings) -> APIRouter:
    """The viewer's ``/api`` routes reading ``store`` (mount with ``prefix="/api"``)."""
    router = APIRouter(tags=["viewer"], responses=_NOT_FOUND)
    page_bytes = settings.page_bytes
    walks = WalkCache()  # walked threads, so that the next context resumes, not restarts

    async def answer(plan: Plan[T]) -> T:
        try:
            return await arun_plan(store, plan)
        except NotFoundError as e:
            raise HTTPException(status_code=404, detail=str(e)) from None

    @router.get("/threads/{thread_id:any_text}/spans", response_model=RunSpans)
    async def read_spans(
        thread_id: ThreadId,
        run_id: RunId,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 2000,
    ) -> Any:
        """The run's span tree: node steps, model and tool calls (nested under their node, a
        subagent's under the tool that ran it), with latency, tokens, status and error; the
        run's status, duration, models and token totals. At most ``limit`` spans
        (``truncated``) and the server's page size (``size_limited``)."""
        return await answer(spans_plan(thread_id, run_id, limit=limit, max_bytes=page_bytes))

    @router.get("/threads/{thread_id:any_text}/calls", response_model=CallPage)
    async def read_calls(
        thread_id: ThreadId,
        before_seq: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
        after_seq: Cursor = None,
        run_id: RunId | None = None,
        limit: Limit = 500,
    ) -> Any:
        """The thread's ended model calls ascending by seq, with tokens, latency, model and
        caller: the per-call token series. Without ``after_seq``: the newest ``limit`` below
        ``before_seq`` (follow ``next_before_seq`` back); with it, the first ``limit`` after it.
        Giving both is a 422."""
        if before_seq is not None and after_seq is not None:
            raise RequestValidationError(
                [
                    {
                        "type": "value_error",
                        "loc": ("query", "after_seq"),
                        "msg": "give before_seq or after_seq, not both",
                    }
                ]
            )
        return await answer(
            calls_plan(
                thread_id, before_seq=before_seq, after_seq=after_seq, run_id=run_id, limit=limit
            )
        )

    @router.get("/threads/{thread_id:any_text}/search", response_model=SearchPage)
    async def search(
        thread_id: ThreadId,
        q: Annotated[
            str,
            Query(
                min_length=1,
                max_length=MAX_QUERY,
                pattern=r"\S",
                description="Literal text, not whitespace only.",
            ),
        ],
        before_seq: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        scan: Annotated[int, Query(ge=1, le=20_000, description="Events to look at.")] = 5000,
    ) -> Any:
        """Search the thread newest first, case-insensitively, in message text, tool calls,
        tool names, arguments, outputs and errors, and model outputs that are no thread message.
        A page ends after ``limit`` hits or ``scan`` events; ``next_before_seq`` searches on.
        A query of whitespace only is a 422."""
        if not q.strip():  # the rule search_plan applies, answered as the bad parameter it is
            raise RequestValidationError(
                [{"type": "value_error", "loc": ("query", "q"), "msg": "q must not be blank"}]
            )
        return await answer(
            search_plan(thread_id, q, before_seq=before_seq, limit=limit, scan=scan)
        )

    @router.get(
        "/threads/{thread_id:any_text}/markers/{seq}/messages", response_model=MarkerOriginals
    )
    async def marker_messages(
        thread_id: ThreadId,
        seq: Seq,
        after_seq: Cursor = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
    ) -> Any:
        """The journaled messages the compaction or removal at ``seq`` took out of the state,
        as timeline items with their seqs (a page: follow ``next_after_seq``), and the earlier
        summaries among them. 404 unless ``seq`` is such a marker."""
        return await answer(
            originals_plan(thread_id, seq, after_seq=after_seq, limit=limit, max_bytes=page_bytes)
        )

    @router.get("/threads/{thread_id:any_text}/truncated", response_model=Truncations)
    async def truncated(
        thread_id: ThreadId,
        after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
        before_seq: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
        limit: Limit = 1000,
    ) -> Any:
        """The message and middleware events with ``after_seq < seq < before_seq`` whose
        content or metadata the store cut to its caps, with their original size; reads at most
        ``limit`` of the window's events (``has_more``: read on from ``next_after_seq``)."""
        return await answer(
            truncations_plan(thread_id, after_seq=after_seq, before_seq=before_seq, limit=limit)
        )

    # last: its path ends in a free segment, so a thread whose id ends in "/context" would
    # take the routes above as a model call at seq "spans", "calls", ...
    @router.get("/threads/{thread_id:any_text}/context/{seq}", response_model=ModelContext)
    async def read_context(
        thread_id: ThreadId,
        seq: Seq,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
        limit: Limit = 200,
    ) -> Any:
        """The exact input of the model call at ``seq`` (its ``llm.start``, ``llm.end`` or
        ``llm.error``, or the ``message.ai`` it produced), each message marked with where it
        came from (the journaled message, a summary, a request-only edit, the request only),
        the compactions and removals that shaped it, and its size in tokens (the provider's
        ``input_tokens`` when reported, else approximate). For an agent call the messages equal
        ``history.replay(store, thread, upto_seq=<its llm.start>, view="model")``. Messages come
        a page at a time (``offset``, ``next_offset``)."""
        await _token_stack_ready()
        return await answer(
            context_plan(
                thread_id, seq, offset=offset, limit=limit, max_bytes=page_bytes, cache=walks
            )
        )

    return router
