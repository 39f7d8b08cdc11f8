"""The shared core of ``RunJournal``: configuration, the event buffer, run bookkeeping.

Everything here runs on the callback path under one non-blocking lock and does no I/O: it
stamps events and hands them to the background :class:`journal._writer.Writer`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Self
from uuid import UUID

from langchain_core.messages import BaseMessage
from langgraph.callbacks import GraphCallbackHandler

from journal._capture import is_summary
from journal._edits import AppliedEdit, inferred_summary, replay_order, settle_step, state_ids
from journal._logging import get_logger
from journal._run_state import Node, RunState, SpinLock, ThreadState, ThreadStates, caller_for
from journal._writer import DEFAULT_CLOSE_TIMEOUT, SKIP, Extra, Lazy, Pending, Writer
from journal.catalog import REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE, sanitize_tag
from journal.digests import ContextIndex, stored_digest
from journal.events import MAX_EVENT_TYPE_LENGTH, validate_id
from journal.messages import MESSAGE_EVENT_TYPES, message_event_type
from journal.spool import DEFAULT_SPOOL_PATH, Spool
from journal.store import RunEventStore

__all__ = ["MAX_TAG_LENGTH", "JournalCore", "event_tag"]

_log = get_logger(__name__)
#: The event a summarization is journaled as; the event of any other removal.
SUMMARIZE_EVENT: Final = SUMMARIZE_EVENT_TYPE
REMOVE_EVENT: Final = REMOVE_EVENT_TYPE
#: Characters a ``family:<tag>`` tag may not contain.

#: How many runs of finished roots the journal remembers (to ignore work they left running).
_FINISHED_CAPACITY: Final = 10_000

#: Longest tag of a ``family:<tag>`` event type this journal writes (room for the family).
MAX_TAG_LENGTH: Final = MAX_EVENT_TYPE_LENGTH - len("middleware:")


def event_tag(name: str) -> str:
    """``name`` as a valid event tag: unusable characters become ``_``, cut to the limit."""
    return sanitize_tag(name, MAX_TAG_LENGTH)


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
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        if not isinstance(store, RunEventStore):
            raise TypeError("store must be a RunEventStore (see journal.open_store)")
        if not 0 < flush_interval <= 0.1:
            raise ValueError("flush_interval must be > 0 and <= 0.1 seconds")
        if max_batch < 1 or max_buffer < max_batch:
            raise ValueError("max_batch must be >= 1 and max_buffer >= max_batch")
        if any(d < 0 for d in retry_delays):
            raise ValueError("retry_delays must be non-negative seconds")
        if not close_timeout >= 0:
            raise ValueError("close_timeout must be >= 0 seconds")
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
            close_timeout=close_timeout,
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
        # digests: touched by the writer thread only (it may read the store)
        self._contexts = ContextIndex(stored_digests=self._stored_digests)
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
        """Store what is recorded, else spool it; stop the writer; later events are dropped.

        Waits at most ``timeout`` seconds (``None``: the ``close_timeout`` option, 5 s by
        default) for the store (and to replay the spool if the store is back); whatever is not
        stored by then is written to the spool before ``close`` returns. The same runs when
        the interpreter exits with the journal open. Returns ``False`` only if some event
        could be neither stored nor spooled (counted in ``dropped_events`` and logged).
        """
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
        """Journal the tool results and edits paused runs still hold back (called at close).

        A run resumed by another journal (after a restart) cannot release them, and they are
        already in the checkpoint's pending writes.
        """
        with self._lock:
            for thread in self._threads.values():
                if thread.held:
                    self._apply_held(thread)
                holder = thread.tools.paused
                if holder is not None:
                    for message in thread.tools.release_all():
                        self._emit_message(holder, message, "agent")

    # -- edits of the messages state (see journal._edits) -----------------------------------

    def _apply_held(self, thread: ThreadState) -> None:
        """Journal the held edits of a superstep LangGraph has applied, in task-path order.

        After the last one the replayed state equals the state once the step is applied: if
        the events alone would rebuild another order (messages of other tasks of the step
        interleave with an edit), the last event carries the whole order.
        """
        held = sorted(thread.held, key=lambda w: w.path)
        thread.held = []
        thread.held_step = None
        base = next((w.base for w in held if w.base is not None), None)
        try:
            edits, final = settle_step(
                None if base is None else state_ids(base), list(thread.order), thread.fresh, held
            )
        except Exception as e:  # a malformed write must never break the run
            _log.warning("journal_edit_unreadable", count=len(held), error_type=type(e).__name__)
            return
        for index, edit in enumerate(edits):
            self._journal_edit(thread, edit, final if index == len(edits) - 1 else None)

    def _place(self, thread: ThreadState, messages: list[Any]) -> None:
        """Journal the messages written without an id the journal could give them, under the
        id the state gave them (found by kind and content among the state's unknown ids)."""
        pending = thread.unplaced
        thread.unplaced = []
        for state_message in messages:
            if not pending:
                break
            node, written, caller = pending[0]
            if (
                getattr(state_message, "id", None) not in thread.seen
                and getattr(state_message, "type", None) == written.type
                and getattr(state_message, "content", None) == written.content
            ):
                pending.pop(0)
                self._emit_message(node, state_message, caller)
        if pending:
            _log.warning("journal_messages_unplaced", count=len(pending))

    def _resync(self, thread: ThreadState, run: RunState, state: Any) -> None:
        """Compare the journal's order of the thread's state with the state LangGraph gives a
        node (or the root's output); if they differ — the tasks of a superstep journaled in
        completion order, not the task-path order LangGraph applies, or messages another
        journal recorded — journal the state's order (a ``message.remove`` removing nothing).
        """
        if not isinstance(state, dict):
            return
        messages = state.get("messages")
        if not isinstance(messages, list):
            return
        if thread.unplaced:
            self._place(thread, messages)
        truth = state_ids(messages)
        if len(truth) == len(thread.order) and truth == list(thread.order):
            return
        content = {"all": True, "removed_message_ids": [], "state_message_ids": truth}
        attribution = {"caller": "agent", "langgraph_step": thread.step, "langgraph_node": None}
        self._emit(run, "message", REMOVE_EVENT, content, attribution)
        thread.order = dict.fromkeys(truth)

    def _journal_edit(
        self, thread: ThreadState, edit: AppliedEdit, final: list[str] | None
    ) -> None:
        """Journal one applied edit: its marker (or removal), then the messages it added.

        ``final``: the state's ids once the whole step is applied (for the step's last edit).
        """
        node, outcome = edit.node, edit.outcome
        summary = next(
            (m for m in outcome.messages if is_summary(m) and m.id not in thread.seen), None
        )
        shown = [m for m in outcome.messages if not is_summary(m)]
        rewrite = outcome.order if outcome.rewrite else None
        rebuilt = replay_order(list(thread.order), outcome.removed, rewrite)
        rebuilt.extend(str(m.id) for m in shown if m.id not in rebuilt)
        target = outcome.order if final is None else final
        reorder = rebuilt != target
        removal = outcome.removed if not node.summarized else []  # its own event marked it
        if summary is not None and not node.summarized:
            payload = inferred_summary(edit.before, outcome, summary)
            payload["state_message_ids"] = list(target)
            metadata = {**node.attribution(), "inferred": True}
            self._emit(node.run, "middleware", SUMMARIZE_EVENT, payload, metadata)
        elif removal or reorder:
            content: dict[str, Any] = {"removed_message_ids": removal}
            if outcome.rewrite or reorder:
                content = {"all": True, **content, "state_message_ids": list(target)}
            self._emit(node.run, "message", REMOVE_EVENT, content, node.attribution())
        before = set(edit.before)
        for message in outcome.messages:
            mid = str(message.id)
            if is_summary(message):  # the summary lives in the marker, not as a human message
                thread.seen.add(mid)
                thread.last[mid] = (message, message.content)
                continue
            if mid in before and mid not in thread.seen:  # journaled before this process
                thread.seen.add(mid)
                thread.order[mid] = None  # journaled again only if it changed (the writer)
            self._emit_message(node, message, str(node.caller or "agent"), replace=True)
        thread.order = dict.fromkeys(target)

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

    def _emit_message(
        self, node: Node, message: BaseMessage, caller: str, *, replace: bool = False
    ) -> None:
        """Journal ``message`` as it enters the thread's state.

        An id already journaled is skipped, unless ``replace`` (a node wrote it again): then it
        is journaled as a ``replacement`` when its content changed (the writer compares
        digests), and always when the message had left the state (it is added back).
        """
        event_type = message_event_type(message)
        mid = message.id
        if event_type is None:
            return
        run = node.run
        thread = self._threads.get(run.thread_id)
        if mid is None:  # its state id is known once the state is seen (see _resync)
            thread.unplaced.append((node, message, caller))
            return
        metadata: dict[str, Any] = {
            "caller": caller,
            "langgraph_step": node.step,
            "langgraph_node": node.node,
            "message_id": mid,
        }
        in_state = mid in thread.order
        if mid in thread.seen:
            last = thread.last.get(mid)
            unchanged = last is not None and last[0] is message and last[1] is message.content
            if not replace or (in_state and unchanged):
                return
            if in_state:
                metadata["replacement"] = True
        else:
            thread.seen.add(mid)
            run.message_counts[message.type] = run.message_counts.get(message.type, 0) + 1
        thread.last[mid] = (message, message.content)
        if not in_state:  # a replacement keeps its place in the state
            thread.order[mid] = None
            thread.fresh.append((mid, node.path))
        tool_call_id = getattr(message, "tool_call_id", None)
        if tool_call_id is not None:
            metadata["tool_call_id"] = tool_call_id
        content = Lazy(self._message_content, (run.thread_id, message, in_state))
        self._emit(run, "message", event_type, content, metadata)

    def _stored_digests(self, thread_id: str) -> list[str]:
        """Writer thread: the digests of the thread's stored messages (none if unreadable)."""
        try:
            events = self.store.read(thread_id, event_type=MESSAGE_EVENT_TYPES.values())
        except Exception:  # the store is down: the writes will spool anyway; inline instead
            return []
        return [stored_digest(e.content, e.metadata) for e in events]

    def _message_content(self, thread_id: str, message: BaseMessage, replacement: bool) -> Any:
        """Writer thread: the stored message and its digest; ``SKIP`` if it did not change."""
        result = self._contexts.message_event(thread_id, message, replacement)
        if result is None:
            return SKIP
        content, digest = result
        return Extra(content, {"digest": digest})

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
