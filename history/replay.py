"""Replay a journaled thread as LangChain messages, and seed a graph's thread from it.

``replay(store, thread_id, *, upto_seq=None, view="full")`` guarantees (invariant 6):

* ``view="full"``: every message ever added to the thread's state (each ``message.*`` event),
  in seq order, up to and including ``upto_seq``.
* ``view="model"``: the state's messages as the model saw them at ``upto_seq`` — start empty,
  add each message (a message whose id is already in the state replaces it, as LangGraph's
  ``add_messages`` does), and at each ``middleware:summarize`` replace the state with
  ``[summary_message, *kept]`` (kept messages looked up by id in the state). For the seq of an
  ``llm.start`` this is exactly what that model call received from the state (the system
  prompt is not part of the state).

Messages come back as ``BaseMessage`` objects equal to the ones the journal recorded. The
summarizer's own model calls (``lc_source="summarization"``) receive a summary prompt, not the
state: the model view describes the agent's calls. A kept id that the replayed state does not
hold (the journal missed a message) is logged as ``replay_kept_message_missing`` and skipped; a
message whose stored content no longer is a message (cut to ``{"$truncated": ...}`` by the
store's content cap) as ``replay_message_unreadable`` and skipped. An unknown thread raises
``history.errors.ThreadNotFoundError``; a bad ``view``/``upto_seq`` ``ValueError``/``TypeError``.

``restore_thread(store, thread_id, graph, config)`` writes the model view into the graph's
checkpointer thread named by ``config`` so that an agent can continue a conversation whose
checkpoints are gone. ``areplay``/``arestore_thread`` are the async variants.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import structlog
from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.pregel import Pregel

from history._catalog import MESSAGE_TYPES, SUMMARIZE, TIMELINE_TYPES, message_id, payload_ids
from history._reads import LastSeq, Plan, Read, arun_plan, check_int, run_plan
from history.errors import ThreadNotFoundError
from journal.events import RunEvent
from journal.messages import content_to_message
from journal.store import RunEventStore

__all__ = ["ReplayView", "areplay", "arestore_thread", "replay", "restore_thread"]

logger = structlog.get_logger(__name__)

ReplayView = Literal["full", "model"]
_VIEWS: Final = ("full", "model")
_PAGE: Final = 1000


def _check_args(upto_seq: int | None, view: str) -> None:
    if view not in _VIEWS:
        raise ValueError(f"view must be 'full' or 'model', got {view!r}")
    if upto_seq is not None:
        check_int("upto_seq", upto_seq, 0)


class _ModelState:
    """The replayed ``messages`` state; stored contents stay dicts until the end (cheap)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.messages: dict[str, Any] = {}

    def add(self, event: RunEvent) -> None:
        self.messages[message_id(event) or f"\0seq-{event.seq}"] = event.content

    def compact(self, event: RunEvent) -> None:
        payload = event.content if isinstance(event.content, dict) else {}
        summary = payload.get("summary_message")
        kept_ids = payload_ids(event, "kept_message_ids")
        new: dict[str, Any] = {}
        if isinstance(summary, dict):
            data = summary.get("data")
            sid = data.get("id") if isinstance(data, dict) else None
            new[sid if isinstance(sid, str) else f"\0seq-{event.seq}"] = summary
        missing = 0
        for kid in kept_ids:
            if kid in self.messages:
                new[kid] = self.messages[kid]
            else:
                missing += 1
        if missing:
            logger.warning(
                "replay_kept_message_missing",
                thread_id=self.thread_id,
                seq=event.seq,
                count=missing,
            )
        self.messages = new


def replay_plan(thread_id: str, upto_seq: int | None, view: str) -> Plan[list[BaseMessage]]:
    """Plan: the messages of :func:`replay`."""
    _check_args(upto_seq, view)
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    types = MESSAGE_TYPES if view == "full" else TIMELINE_TYPES
    contents: list[Any] = []
    state = _ModelState(thread_id)
    cursor = 0
    while True:
        page: list[RunEvent] = yield Read(
            thread_id, {"after_seq": cursor, "limit": _PAGE, "event_type": types}
        )
        for event in page:
            if upto_seq is not None and event.seq > upto_seq:
                page = []
                break
            if view == "full":
                contents.append(event.content)
            elif event.event_type == SUMMARIZE:
                state.compact(event)
            else:
                state.add(event)
        if len(page) < _PAGE:
            break
        cursor = page[-1].seq
    if view == "model":
        contents = list(state.messages.values())
    return _to_messages(thread_id, contents)


def _to_messages(thread_id: str, contents: list[Any]) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    unreadable = 0
    for content in contents:
        try:
            messages.append(content_to_message(content))
        except ValueError:  # cut to {"$truncated": ...} by the store's content cap
            unreadable += 1
    if unreadable:
        logger.warning("replay_message_unreadable", thread_id=thread_id, count=unreadable)
    return messages


def replay(
    store: RunEventStore,
    thread_id: str,
    *,
    upto_seq: int | None = None,
    view: ReplayView = "full",
) -> list[BaseMessage]:
    """The thread's messages up to ``upto_seq`` in the ``full`` or ``model`` view (see module)."""
    return run_plan(store, replay_plan(thread_id, upto_seq, view))


async def areplay(
    store: RunEventStore,
    thread_id: str,
    *,
    upto_seq: int | None = None,
    view: ReplayView = "full",
) -> list[BaseMessage]:
    """Async :func:`replay`, on the store's async methods."""
    return await arun_plan(store, replay_plan(thread_id, upto_seq, view))


def _seed(messages: list[BaseMessage]) -> dict[str, Any]:
    # Clearing first makes the checkpoint hold exactly the replayed state, even if the
    # checkpointer still had (stale) messages for this thread.
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


def restore_thread(
    store: RunEventStore,
    thread_id: str,
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
) -> RunnableConfig:
    """Seed ``graph``'s checkpointer thread (``config``) with the journal's model view.

    After it, the thread's ``messages`` state equals ``replay(store, thread_id,
    view="model")`` and the next run continues from it. Returns the config of the new
    checkpoint. The graph needs a checkpointer and a ``messages`` channel.
    """
    messages = replay(store, thread_id, view="model")
    return graph.update_state(config, _seed(messages))


async def arestore_thread(
    store: RunEventStore,
    thread_id: str,
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
) -> RunnableConfig:
    """Async :func:`restore_thread`."""
    messages = await areplay(store, thread_id, view="model")
    return await graph.aupdate_state(config, _seed(messages))
