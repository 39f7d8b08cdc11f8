"""The JSON routes under ``/api``: threads, the ``/history`` timeline, raw events, runs (by
thread, paged, and by id), usage, delete, and the live event stream.

Every route reads through the store's async methods (the event loop never blocks). Answers:
a thread without events (or a run id no run has) is 404; a parameter outside its documented
range (negative seq, ``limit`` 0 or above the maximum, an unknown ``category``, a thread id with
control characters or longer than 256 characters) or one a route does not take is 422; a store
failure is 503. Nothing a client sends yields a 500.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from starlette.convertors import CONVERTOR_TYPES, Convertor, register_url_convertor

from history._bounded import backward_page, forward_page
from history._reads import arun_plan
from history.errors import RunNotFoundError, ThreadNotFoundError
from history.runs import MAX_RUNS_LIMIT, aruns_page, athread_usage
from history.server.api_models import (
    DeleteResult,
    ErrorBody,
    EventPage,
    HistoryPage,
    RunList,
    ThreadList,
    UsageReport,
)
from history.server.sse import StreamControl, StreamSettings, stream_events
from history.timeline import MAX_PAGE_LIMIT, abuild_timeline
from journal.events import MAX_EVENT_TYPE_LENGTH, MAX_ID_LENGTH, RunSummary, validate_id
from journal.store import RunEventStore

__all__ = ["MAX_SEQ", "EventStreamResponse", "build_api_router"]

#: The largest seq a cursor accepts (the largest integer JavaScript represents exactly).
MAX_SEQ: Final = 2**53 - 1
_NO_CONTROL: Final = r"^[^\x00-\x1f\x7f]+$"
#: What ``validate_id`` accepts, as a pattern: no control character, and no whitespace (as
#: ``str.strip`` sees it) at either end. Explicit classes: ``\s`` differs between dialects.
_ID_EDGE: Final = r"[^\x00-\x20\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
ID_PATTERN: Final = rf"^{_ID_EDGE}(?:[^\x00-\x1f\x7f]*{_ID_EDGE})?$"
#: A Last-Event-ID: the decimal seq of an event (larger values resume after every seq).
LAST_EVENT_ID_PATTERN: Final = r"^[0-9]{1,20}$"
_NOT_FOUND: Final[dict[int | str, dict[str, Any]]] = {
    404: {"model": ErrorBody, "description": "The thread has no events."}
}

_SSE_ITEM: Final = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The event's seq."},
        "event": {"type": "string", "description": "event_type, or thread_deleted."},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": "The RunEvent as JSON (thread_deleted: {thread_id}).",
        },
    },
}

Category = Literal["lifecycle", "message", "trace", "middleware"]
_Name = Annotated[str, Query(min_length=1, max_length=MAX_EVENT_TYPE_LENGTH, pattern=_NO_CONTROL)]
_Id = Annotated[str, Query(min_length=1, max_length=MAX_ID_LENGTH, pattern=_NO_CONTROL)]
CategoryFilter = Annotated[
    list[Category] | None, Query(description="Keep these categories (repeatable).")
]
EventTypeFilter = Annotated[
    list[_Name] | None, Query(description="Keep these event types (repeatable).")
]
RunIdFilter = Annotated[list[_Id] | None, Query(description="Keep these runs (repeatable).")]
AfterSeq = Annotated[int, Query(ge=0, le=MAX_SEQ, description="Only events with seq > after_seq.")]


class _AnyText(Convertor[str]):
    """Matches any text, '/' and newlines included, so every thread id reaches validation."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


if "any_text" not in CONVERTOR_TYPES:
    register_url_convertor("any_text", _AnyText())


def _thread_id(
    thread_id: Annotated[
        str,
        Path(
            min_length=1,
            max_length=MAX_ID_LENGTH,
            pattern=ID_PATTERN,
            description="The thread (LangGraph configurable.thread_id); may contain '/'; no "
            "control characters, no whitespace at either end.",
        ),
    ],
) -> str:
    try:
        return validate_id(thread_id, "thread_id")
    except ValueError as e:  # a lone surrogate: the pattern cannot say it
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("path", "thread_id"), "msg": str(e)}]
        ) from None


ThreadId = Annotated[str, Depends(_thread_id)]


class EventStreamResponse(StreamingResponse):
    """A ``text/event-stream`` response that is never cached or buffered by proxies."""

    media_type = "text/event-stream"

    def __init__(self, content: Any, **kwargs: Any) -> None:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        super().__init__(content, headers=headers, **kwargs)


def _resume_point(last_event_id: str | None, after_seq: int | None) -> int | None:
    """``Last-Event-ID`` (a reconnecting client) wins over ``after_seq``.

    The header's schema (``LAST_EVENT_ID_PATTERN``) already holds it to digits; a value
    beyond the largest seq a store gives (``MAX_SEQ``) is that seq (the stream then says the
    thread it saw was deleted, see :mod:`history.server.sse`).
    """
    if last_event_id is None:
        return after_seq
    return min(int(last_event_id), MAX_SEQ)


def build_api_router(
    store: RunEventStore, settings: StreamSettings, control: StreamControl
) -> APIRouter:
    """The ``/api`` routes reading ``store`` (mount with ``prefix="/api"``)."""
    router = APIRouter(tags=["threads"])
    stream_reads = asyncio.Semaphore(settings.stream_reads)  # shared by the app's streams

    async def require_thread(thread_id: str) -> int:
        last = await store.alast_seq(thread_id)
        if last == 0:
            raise ThreadNotFoundError(thread_id)
        return last

    @router.get("/threads", response_model=ThreadList)
    async def list_threads(
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    ) -> ThreadList:
        """Threads with at least one event, most recently active first."""
        threads = await store.alist_threads(limit=limit + 1, offset=offset)
        return ThreadList(threads=threads[:limit], offset=offset, has_more=len(threads) > limit)

    @router.get(
        "/threads/{thread_id:any_text}/history", response_model=HistoryPage, responses=_NOT_FOUND
    )
    async def read_history(
        thread_id: ThreadId,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 50,
        before_seq: Annotated[
            int | None,
            Query(ge=1, le=MAX_SEQ, description="Items older than this seq (next_before_seq)."),
        ] = None,
        include_markers: bool = True,
        include_hidden: Annotated[
            bool,
            Query(description="Also the messages added with hide_from_ui (injected context)."),
        ] = False,
        run_id: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=MAX_ID_LENGTH,
                pattern=ID_PATTERN,
                description="Only the items of this run.",
            ),
        ] = None,
    ) -> Any:
        """One page of the conversation timeline: messages and summary markers, by seq.

        Without ``before_seq``: the newest ``limit`` items. Follow ``next_before_seq`` back to
        seq 1; every item appears on exactly one page. A page is bounded in bytes too
        (``size_limited``: it holds the newest items that fit). Hidden messages
        (``hide_from_ui``) are left out unless ``include_hidden``; ``run_id`` keeps one run's
        items. Filters apply before the limit.
        """
        return await abuild_timeline(
            store,
            thread_id,
            before_seq=before_seq,
            limit=limit,
            include_markers=include_markers,
            include_hidden=include_hidden,
            run_id=run_id,
            max_bytes=settings.page_bytes,
        )

    @router.get(
        "/threads/{thread_id:any_text}/events", response_model=EventPage, responses=_NOT_FOUND
    )
    async def read_events(
        thread_id: ThreadId,
        after_seq: AfterSeq = 0,
        before_seq: Annotated[
            int | None,
            Query(
                ge=1,
                le=MAX_SEQ,
                description="Read backwards: the newest events with seq < before_seq (and "
                "> after_seq); follow next_before_seq for older ones.",
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
        category: CategoryFilter = None,
        event_type: EventTypeFilter = None,
        run_id: RunIdFilter = None,
    ) -> EventPage:
        """Raw events ascending by seq, filtered before the limit.

        Forward (no ``before_seq``): ``next_after_seq`` is the seq of the last event returned
        (or ``after_seq`` if none): pass it back to read on, now if ``has_more``, later to
        poll for new events. Backward (``before_seq``, as the store reads it): the newest
        matching events below it, still ascending; ``has_more`` then says older ones exist
        and ``next_before_seq`` is the cursor to them. A page is bounded in bytes too: it
        ends before ``limit`` events when they would pass the server's page size
        (``size_limited``; ``has_more`` is then true).
        """
        await require_thread(thread_id)
        filters: dict[str, Any] = {
            "category": category,
            "event_type": event_type,
            "run_id": run_id,
        }
        if before_seq is None:
            plan = forward_page(thread_id, after_seq, limit, settings.page_bytes, filters)
        else:
            filters["after_seq"] = after_seq
            plan = backward_page(thread_id, before_seq, limit, settings.page_bytes, filters)
        page = await arun_plan(store, plan)
        backward = before_seq is not None
        return EventPage(
            thread_id=thread_id,
            events=page.events,
            has_more=page.has_more,
            size_limited=page.size_limited,
            next_after_seq=page.events[-1].seq if page.events else after_seq,
            next_before_seq=page.events[0].seq if backward and page.has_more else None,
        )

    @router.get("/threads/{thread_id:any_text}/runs", response_model=RunList, responses=_NOT_FOUND)
    async def list_runs(
        thread_id: ThreadId,
        limit: Annotated[int, Query(ge=1, le=MAX_RUNS_LIMIT)] = 20,
        before_seq: Annotated[
            int | None,
            Query(ge=1, le=MAX_SEQ, description="Runs that started below this seq."),
        ] = None,
    ) -> Any:
        """The runs of the thread, newest first: status, error, times, duration, models,
        tokens, the first human message and the last answer. Follow ``next_before_seq``."""
        return await aruns_page(store, thread_id, limit=limit, before_seq=before_seq)

    @router.get(
        "/threads/{thread_id:any_text}/usage", response_model=UsageReport, responses=_NOT_FOUND
    )
    async def read_usage(
        thread_id: ThreadId,
        run_limit: Annotated[
            int, Query(ge=0, le=MAX_RUNS_LIMIT, description="How many newest runs in by_run.")
        ] = 20,
    ) -> Any:
        """Token usage of every model call of the thread: totals, by model (the model the
        response names), by caller, by run (newest first) and the run still running."""
        return await athread_usage(store, thread_id, run_limit=run_limit)

    @router.get(
        "/runs/{run_id:any_text}",
        response_model=RunSummary,
        responses={404: {"model": ErrorBody, "description": "No run has this id."}},
    )
    async def get_run(
        run_id: Annotated[
            str,
            Path(
                min_length=1,
                max_length=MAX_ID_LENGTH,
                pattern=ID_PATTERN,
                description="The run's id; may contain '/'.",
            ),
        ],
        thread_id: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=MAX_ID_LENGTH,
                pattern=ID_PATTERN,
                description="The thread, when one run id is used in several.",
            ),
        ] = None,
    ) -> RunSummary:
        """One run found by its id alone (the root run id of the invocation)."""
        for where, name, value in (("path", "run_id", run_id), ("query", "thread_id", thread_id)):
            try:
                if value is not None:
                    validate_id(value, name)
            except ValueError as e:  # a lone surrogate: the pattern cannot say it
                raise RequestValidationError(
                    [{"type": "value_error", "loc": (where, name), "msg": str(e)}]
                ) from None
        run = await store.aget_run(run_id, thread_id=thread_id)
        if run is None:
            raise RunNotFoundError(run_id)
        return run

    @router.get(
        "/threads/{thread_id:any_text}/stream",
        status_code=200,
        response_class=StreamingResponse,  # no media type: the content below is the doc
        responses={
            200: {
                "description": "Server-sent events: `id` = seq, `event` = event_type, "
                "`data` = the event as JSON; `: ping` comments while idle; "
                "`event: thread_deleted` if the thread is deleted.",
                "content": {"text/event-stream": {"itemSchema": _SSE_ITEM}},
            },
            **_NOT_FOUND,
        },
    )
    async def stream(
        request: Request,
        thread_id: ThreadId,
        after_seq: Annotated[
            int | None,
            Query(
                ge=0,
                le=MAX_SEQ,
                description="Start after this seq (0: from the first event). "
                "Default: only events committed from now on.",
            ),
        ] = None,
        last_event_id: Annotated[
            str | None,
            Header(
                alias="Last-Event-ID",
                max_length=20,
                pattern=LAST_EVENT_ID_PATTERN,
                description="Resume after this id (a seq); wins over after_seq.",
            ),
        ] = None,
        max_events: Annotated[
            int | None, Query(ge=1, le=1_000_000, description="End after this many events.")
        ] = None,
        timeout: Annotated[
            float | None,
            Query(gt=0, le=86_400, allow_inf_nan=False, description="End after these seconds."),
        ] = None,
        category: CategoryFilter = None,
        event_type: EventTypeFilter = None,
        run_id: RunIdFilter = None,
    ) -> EventStreamResponse:
        """Live stream of the thread's events with seq greater than the resume point.

        Reconnect with ``Last-Event-ID`` (the last ``id`` received) to continue with no gap
        and no duplicate.
        """
        start = _resume_point(last_event_id, after_seq)
        last = await require_thread(thread_id)
        return EventStreamResponse(
            stream_events(
                store,
                thread_id,
                after_seq=last if start is None else start,
                settings=settings,
                control=control,
                is_disconnected=request.is_disconnected,
                max_events=max_events,
                timeout=timeout,
                category=category,
                event_type=event_type,
                run_id=run_id,
                read_gate=stream_reads,
            )
        )

    @router.delete(
        "/threads/{thread_id:any_text}", response_model=DeleteResult, responses=_NOT_FOUND
    )
    async def delete_thread(thread_id: ThreadId) -> DeleteResult:
        """Delete every event of the thread (retention). Open streams of it end."""
        deleted = await store.adelete_thread(thread_id)
        if deleted == 0:
            raise ThreadNotFoundError(thread_id)
        return DeleteResult(thread_id=thread_id, deleted=deleted)

    return router
