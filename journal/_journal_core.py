"""The shared core of ``RunJournal``: configuration, the event buffer, run bookkeeping.

Everything here runs on the callback path under one non-blocking lock and does no I/O: it
stamps events and hands them to the background :class:`journal._writer.Writer`.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Self
from uuid import UUID

import structlog
from langchain_core.messages import BaseMessage
from langgraph.callbacks import GraphCallbackHandler

from journal._run_state import Node, RunState, SpinLock, ThreadStates, caller_for
from journal._writer import Pending, Writer
from journal.events import MAX_EVENT_TYPE_LENGTH, validate_id
from journal.messages import message_event_type
from journal.spool import DEFAULT_SPOOL_PATH, Spool
from journal.store import RunEventStore

__all__ = ["BAD_TAG_CHARS", "MAX_TAG_LENGTH", "JournalCore", "event_tag"]

_log = structlog.get_logger(__name__)
#: Characters a ``family:<tag>`` tag may not contain.
BAD_TAG_CHARS: Final = re.compile(r"[^A-Za-z0-9_.\-/:]")

#: How many runs of finished roots the journal remembers (to ignore work they left running).
_FINISHED_CAPACITY: Final = 10_000

#: Longest tag of a ``family:<tag>`` event type this journal writes (room for the family).
MAX_TAG_LENGTH: Final = MAX_EVENT_TYPE_LENGTH - len("middleware:")


def event_tag(name: str) -> str:
    """``name`` as a valid event tag: unusable characters become ``_``, cut to the limit."""
    tag = BAD_TAG_CHARS.sub("_", name) or "_"
    tag = tag if not tag.startswith((".", "-", "/", ":")) else f"_{tag}"
    return tag[:MAX_TAG_LENGTH]


class JournalCore(GraphCallbackHandler):
    """Configuration, buffer and bookkeeping shared by the ``RunJournal`` callbacks.

    Thread-safe and ``run_inline``: one instance serves concurrent sync and async runs.
    Construct it once, attach it to graphs, and call :meth:`close` (or use it as a context
    manager) when done; :meth:`flush` / :meth:`aflush` wait until queued events are stored.
    """

    run_inline = True
    raise_error = False

    def __init__(
        self,
        store: RunEventStore,
        *,
        thread_id: str | None = None,
        spool_path: str | os.PathLike[str] = DEFAULT_SPOOL_PATH,
        flush_interval: float = 0.1,
        max_batch: int = 500,
        max_buffer: int = 100_000,
        retry_delays: Sequence[float] = (0.05, 0.1, 0.2, 0.5, 1.0),
    ) -> None:
        if not isinstance(store, RunEventStore):
            raise TypeError("store must be a RunEventStore (see journal.open_store)")
        if not 0 < flush_interval <= 0.1:
            raise ValueError("flush_interval must be > 0 and <= 0.1 seconds")
        if max_batch < 1 or max_buffer < max_batch:
            raise ValueError("max_batch must be >= 1 and max_buffer >= max_batch")
        if any(d < 0 for d in retry_delays):
            raise ValueError("retry_delays must be non-negative seconds")
        if thread_id is not None:
            validate_id(thread_id, "thread_id")
        self.store = store
        self.thread_id = thread_id
        self.spool = Spool(spool_path)
        self._writer = Writer(
            store,
            self.spool,
            max_batch=max_batch,
            max_buffer=max_buffer,
            flush_interval=flush_interval,
            retry_delays=retry_delays,
            on_drop=self._on_writer_drop,
            before_close=self._release_paused,
        )
        self._lock = SpinLock()
        self._nodes: dict[UUID, Node] = {}
        self._roots: dict[UUID, RunState] = {}
        # runs of finished roots (work a cancel left running): what starts under them is no root
        self._finished: OrderedDict[UUID, None] = OrderedDict()
        self._runs_by_id: dict[str, RunState] = {}
        self._threads = ThreadStates()
        self._last_us = 0
        self.dropped_events = 0

    # -- public API ----------------------------------------------------------------------

    @property
    def spooled_events(self) -> int:
        """How many events went to the spool because the store could not take them."""
        return self._writer.spooled_count

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every event recorded so far is in the store (or the spool).

        Returns ``False`` if ``timeout`` seconds passed first.
        """
        return self._writer.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async :meth:`flush`: waits in a worker thread, never blocks the event loop."""
        return await asyncio.to_thread(self._writer.flush, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Flush and stop the writer thread; later events are counted as dropped."""
        return self._writer.close(timeout)

    async def aclose(self, timeout: float | None = None) -> bool:
        """Async :meth:`close`."""
        return await asyncio.to_thread(self._writer.close, timeout)

    def replay_spool(self, timeout: float | None = None) -> int:
        """Replay this journal's spool into its store, in order; return how many events.

        Runs after every event queued before the call; afterwards threads that were spooling
        write to the store again. Raises ``StoreError`` if the store still fails.
        """
        return self._writer.replay_spool(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- buffer --------------------------------------------------------------------------

    def _emit(
        self,
        run: RunState,
        category: str,
        event_type: str,
        content: Any,
        metadata: dict[str, Any],
    ) -> None:
        """Queue one event (caller holds ``self._lock``): stamp it, never block."""
        now = time.time_ns() // 1000
        if now <= self._last_us:
            now = self._last_us + 1
        self._last_us = now
        pending = Pending(run.thread_id, run.run_id, category, event_type, content, metadata, now)
        if not self._writer.put(pending):
            run.dropped += 1
            self.dropped_events += 1
            _log.warning("journal_event_dropped", run_id=run.run_id, reason="buffer_full")

    def _release_paused(self) -> None:
        """Journal the tool results paused runs still hold back (called at close).

        A run resumed by another journal (after a restart) cannot release them, and they are
        already in the checkpoint's pending writes.
        """
        with self._lock:
            for thread in self._threads.values():
                holder = thread.tools.paused
                if holder is not None:
                    for message in thread.tools.release_all():
                        self._emit_message(holder, message, "agent")

    def _forget(self, run_id: UUID) -> None:
        """Remember ``run_id`` as a finished run's (bounded): chains under it are ignored."""
        self._finished[run_id] = None
        if len(self._finished) > _FINISHED_CAPACITY:
            self._finished.popitem(last=False)

    def _on_writer_drop(self, run_id: str, count: int) -> None:
        with self._lock:
            self.dropped_events += count
            run = self._runs_by_id.get(run_id)
            if run is not None:
                run.dropped += count

    def _emit_message(self, node: Node, message: BaseMessage, caller: str) -> None:
        event_type = message_event_type(message)
        if event_type is None or message.id is None:
            return
        run = node.run
        seen = self._threads.get(run.thread_id).seen
        if message.id in seen:
            return
        seen.add(message.id)
        run.message_counts[message.type] = run.message_counts.get(message.type, 0) + 1
        metadata: dict[str, Any] = {
            "caller": caller,
            "langgraph_step": node.step,
            "langgraph_node": node.node,
            "message_id": message.id,
        }
        tool_call_id = getattr(message, "tool_call_id", None)
        if tool_call_id is not None:
            metadata["tool_call_id"] = tool_call_id
        self._emit(run, "message", event_type, message, metadata)

    def _child(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        name: str,
        metadata: dict[str, Any] | None,
    ) -> Node | None:
        """Register a run under a journaled root (caller holds the lock); ``None`` if unknown."""
        if parent_run_id is None:
            return None
        md = metadata or {}
        root = self._roots.get(parent_run_id)
        parent = None if root is not None else self._nodes.get(parent_run_id)
        if root is None:
            if parent is None:
                return None
            root = parent.run
        caller, top = caller_for(parent, name, md)
        step = md.get("langgraph_step")
        node = Node(
            run=root,
            name=name,
            caller=caller,
            node=md.get("langgraph_node"),
            step=step if isinstance(step, int) else None,
            top=top,
        )
        self._nodes[run_id] = node
        return node

    def _done(self, run_id: UUID, timing_key: str) -> tuple[Node, dict[str, Any]] | None:
        """Forget a finished call; return it with its attribution and elapsed milliseconds."""
        node = self._nodes.pop(run_id, None)
        if node is None:
            return None
        metadata = {
            **node.attribution(),
            timing_key: round((time.perf_counter() - node.started) * 1000, 3),
        }
        if timing_key == "duration_ms":  # a tool call
            metadata.update(tool_call_id=node.tool_call_id, tool_run_id=str(run_id))
        return node, metadata
