"""Server-sent events: a thread's new events, as they are committed, resumable without loss.

Wire format of one event (https://html.spec.whatwg.org/multipage/server-sent-events.html)::

    id: <seq>
    event: <event_type>
    data: <the RunEvent as one line of JSON>

Guarantees of :func:`stream_events`:

* Events arrive in ascending ``seq``, each once, read in batches bounded in events and bytes;
  an app's streams take turns reading the store, so many slow readers cannot starve others.
  A client that reconnects with the last ``id`` it received (``Last-Event-ID``) gets every
  later event exactly once: the stream is a cursor over the append-only store, never a
  broadcast that can be missed.
* While idle, a comment line (``: ping``) is sent every ``heartbeat_interval`` seconds so proxies
  keep the connection and dead clients are noticed.
* If the thread is deleted while streaming, an ``event: thread_deleted`` is sent and the stream
  ends, also when a new thread of the same id was written meanwhile (its events are never sent
  as if they followed the deleted ones: each poll checks that an event of the thread — the
  last one sent, else the one at ``after_seq``, else its first — is still stored), and also
  when the stream starts after a seq the thread does not have: seqs are gap-free and never
  given again but to a thread written anew, so the events the client saw were deleted.
  The stream also ends after ``max_events`` events, after ``timeout`` seconds, when the
  client disconnects, when :meth:`StreamControl.close` is called (server shutdown), and when
  the store fails (logged; the client reconnects with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from history._bounded import DEFAULT_PAGE_BYTES, forward_page
from history._reads import arun_plan
from journal._logging import get_logger
from journal.errors import StoreError
from journal.events import RunEvent
from journal.store import FilterValue, RunEventStore

__all__ = ["HEARTBEAT", "StreamControl", "StreamSettings", "format_event", "stream_events"]

log = get_logger(__name__)

#: The keep-alive comment sent while the stream is idle.
HEARTBEAT: Final = b": ping\n\n"


@dataclass(frozen=True)
class StreamSettings:
    """How streams poll the store.

    ``poll_interval``: seconds between polls while idle. ``heartbeat_interval``: seconds of
    silence before a ``: ping`` comment. ``batch``: events read per poll at most.
    ``page_bytes``: the byte bound of a stream batch, and of every JSON page the app serves
    (``/events``, ``/history``). ``stream_reads``: how many streams of an app read the store at
    once (the others wait their turn), so streams, slow readers' included, never take every
    worker from other requests. ``max_seconds``: a server-side cap on any stream's life
    (``None``: no cap), after which clients reconnect.
    """

    poll_interval: float = 0.25
    heartbeat_interval: float = 15.0
    batch: int = 500
    max_seconds: float | None = None
    page_bytes: int = DEFAULT_PAGE_BYTES
    stream_reads: int = 2

    def __post_init__(self) -> None:
        if self.poll_interval <= 0 or self.heartbeat_interval <= 0:
            raise ValueError("poll_interval and heartbeat_interval must be > 0 seconds")
        if self.batch < 1:
            raise ValueError("batch must be >= 1")
        if self.page_bytes < 1 or self.stream_reads < 1:
            raise ValueError("page_bytes and stream_reads must be >= 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ValueError("max_seconds must be > 0 or None")


@dataclass
class StreamControl:
    """Ends every open stream of an app at once (server shutdown). Thread-safe."""

    _closed: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        """Make every open and future stream end at its next poll."""
        self._closed.set()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed.is_set()


def format_event(event: RunEvent) -> bytes:
    """One stored event in SSE wire format (``id`` = seq, ``event`` = event_type)."""
    # JSON text escapes every newline, so the data always fits on one ``data:`` line.
    return (
        f"id: {event.seq}\nevent: {event.event_type}\ndata: {event.model_dump_json()}\n\n".encode()
    )


def _deleted_message(thread_id: str) -> bytes:
    data = json.dumps({"thread_id": thread_id})
    return f"event: thread_deleted\ndata: {data}\n\n".encode()


async def _event_id_at(store: RunEventStore, thread_id: str, seq: int) -> str | None:
    """The event_id stored at ``seq`` (None: the thread has no such seq any more)."""
    found = await store.aread(thread_id, after_seq=seq - 1, limit=1)
    return found[0].event_id if found and found[0].seq == seq else None


async def stream_events(
    store: RunEventStore,
    thread_id: str,
    *,
    after_seq: int,
    settings: StreamSettings,
    control: StreamControl,
    is_disconnected: Callable[[], Awaitable[bool]],
    max_events: int | None = None,
    timeout: float | None = None,
    category: FilterValue = None,
    event_type: FilterValue = None,
    run_id: FilterValue = None,
    read_gate: asyncio.Semaphore | None = None,
) -> AsyncIterator[bytes]:
    """Yield the SSE messages of ``thread_id``'s events with seq > ``after_seq`` (see module).

    Each batch holds at most ``settings.batch`` events and ``settings.page_bytes`` bytes (at
    least one event); ``read_gate`` (shared by an app's streams) bounds how many read at once.
    """
    gate = read_gate if read_gate is not None else asyncio.Semaphore(1)
    filters = {"category": category, "event_type": event_type, "run_id": run_id}
    loop = asyncio.get_running_loop()
    limits = [t for t in (timeout, settings.max_seconds) if t is not None]
    deadline = loop.time() + min(limits) if limits else None
    last_write = loop.time()
    cursor, sent, reason = after_seq, 0, "client_gone"
    log.debug("stream_opened", thread_id=thread_id, after_seq=after_seq)
    try:
        # An event of the thread: while it is stored, the thread was not deleted (a deleted
        # thread written again has new event ids), so a page read before it is from this
        # thread. The event at the cursor (one the client saw), then the last one sent; from
        # seq 0, the thread's first event (a filtered stream may send nothing for long).
        # (every read under the gate: a stream never takes more of the store than its turn)
        anchor_seq = cursor if cursor > 0 else 1
        anchor: str | None = None
        anchored = False
        while True:
            async with gate:
                if not anchored:
                    anchor, anchored = await _event_id_at(store, thread_id, anchor_seq), True
                batch = await arun_plan(
                    store,
                    forward_page(thread_id, cursor, settings.batch, settings.page_bytes, filters),
                )
                if anchor is None and cursor == 0:  # no event yet: the first one becomes it
                    anchor = await _event_id_at(store, thread_id, anchor_seq)
                    if anchor is not None:
                        continue  # the page again, now read before the anchor is checked
                    deleted = False
                else:
                    deleted = (
                        anchor is None or await _event_id_at(store, thread_id, anchor_seq) != anchor
                    )
            page = batch.events
            if deleted:
                reason = "thread_deleted"
                yield _deleted_message(thread_id)
                return
            for event in page:
                yield format_event(event)
                cursor, sent = event.seq, sent + 1
                anchor_seq, anchor = event.seq, event.event_id
                if max_events is not None and sent >= max_events:
                    reason = "max_events"
                    return
            now = loop.time()
            if page:
                last_write = now
            if control.closed:
                reason = "shutdown"
                return
            if batch.has_more:
                continue  # more is waiting: read on without sleeping
            if await is_disconnected():
                reason = "disconnected"
                return
            if deadline is not None and now >= deadline:
                reason = "timeout"
                return
            if now - last_write >= settings.heartbeat_interval:
                yield HEARTBEAT
                last_write = now
            pause = settings.poll_interval
            if deadline is not None:
                pause = max(0.0, min(pause, deadline - now))
            await asyncio.sleep(pause)
    except StoreError as e:
        reason = "store_error"
        log.warning("stream_store_error", thread_id=thread_id, error=type(e).__name__)
    finally:
        log.debug("stream_closed", thread_id=thread_id, count=sent, reason=reason)
