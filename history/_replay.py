"""Replay a journaled thread as LangChain messages, and seed a graph's thread from it.

``replay(store, thread_id, *, upto_seq=None, view="full")`` guarantees (invariant 6):

* ``view="full"``: every message ever added to the thread's state (each ``message.*`` event,
  replacements included), in seq order, up to and including ``upto_seq``.
* ``view="state"``: the thread state's messages at ``upto_seq``, after every removal, rewrite
  and summarization (rules in :mod:`history._walk`). After a run, this equals the
  ``messages`` of ``graph.get_state(config)``; :func:`restore_thread` writes it.
* ``view="model"``: what the model received at the last agent model call at or before
  ``upto_seq``, system message first: the state view at that call plus the call's request-only
  edits (a ``wrap_model_call`` middleware that trims, clears tool results or rewrites), rebuilt
  from the call's record (``llm.start`` ``metadata.context``). At the seq of an agent
  ``llm.start`` it is exactly that call's input. Calls of a middleware's own model (the
  summarizer's) and of subagents are not agent calls. Before the first agent call, and for
  calls journaled without a record, it is the state view.

Messages come back as ``BaseMessage`` objects equal to the ones the journal recorded. Nothing
breaks on a damaged journal; what cannot be rebuilt is left out and logged with a count:
``replay_kept_message_missing`` (a kept id the replayed state does not hold),
``replay_message_missing`` (a rewrite placed an id whose message was never journaled),
``replay_context_unresolved`` (a call input the journal cannot rebuild; ``history.verify`` names
each), ``replay_message_unreadable`` (a stored message cut to ``{"$truncated": ...}`` by the
store's content cap). An unknown thread raises ``history.errors.ThreadNotFoundError``; a bad
``view``/``upto_seq`` ``ValueError``/``TypeError``.

``restore_thread(store, thread_id, graph, config)`` writes the state view into the graph's
checkpointer thread named by ``config`` so that an agent can continue a conversation whose
checkpoints are gone. ``areplay``/``arestore_thread`` are the async variants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from history._catalog import MESSAGE_TYPES, MODEL_CALL, TIMELINE_TYPES, is_agent_call
from history._reads import LastSeq, Plan, Read, arun_plan, check_int, run_plan
from history._walk import StateWalk, call_record
from history.errors import ThreadNotFoundError
from journal._logging import get_logger
from journal.events import RunEvent
from journal.store import RunEventStore

if TYPE_CHECKING:  # LangChain loads when messages are built, not when history is imported
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel

__all__ = ["ReplayView", "areplay", "arestore_thread", "replay", "restore_thread"]

logger = get_logger(__name__)

ReplayView = Literal["full", "state", "model"]
_VIEWS: Final = ("full", "state", "model")
_PAGE: Final = 1000


def _check_args(upto_seq: int | None, view: str) -> None:
    if view not in _VIEWS:
        raise ValueError(f"view must be 'full', 'state' or 'model', got {view!r}")
    if upto_seq is not None:
        check_int("upto_seq", upto_seq, 0)


def replay_plan(thread_id: str, upto_seq: int | None, view: str) -> Plan[list[BaseMessage]]:
    """Plan: the messages of :func:`replay`."""
    _check_args(upto_seq, view)
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    if view == "full":
        types: tuple[str, ...] = MESSAGE_TYPES
    elif view == "state":
        types = TIMELINE_TYPES
    else:
        types = (*TIMELINE_TYPES, MODEL_CALL)
    full: list[Any] = []
    walk = StateWalk(thread_id)
    call: tuple[RunEvent, Any, Any] | None = None  # the last agent call, its input, its state
    cursor = 0
    while True:
        page: list[RunEvent] = yield Read(
            thread_id, {"after_seq": cursor, "limit": _PAGE, "event_type": types}
        )
        done = len(page) < _PAGE
        if upto_seq is not None and page and page[-1].seq > upto_seq:
            page = [e for e in page if e.seq <= upto_seq]
            done = True
        if view == "full":
            full.extend(e.content for e in page)
        else:
            for event in page:
                walk.feed((event,))
                if event.event_type == MODEL_CALL and is_agent_call(event):
                    call = (event, walk.call, walk.snapshot())
        if done or not page:
            break
        cursor = page[-1].seq
    if view == "full":
        return _to_messages(thread_id, full)
    if call is None or call_record(call[0]) is None:
        contents = walk.contents(None if call is None else call[2])
    else:
        contents, problems = walk.resolve(call[1], call[2])
        if problems:
            logger.warning(
                "replay_context_unresolved",
                thread_id=thread_id,
                seq=call[0].seq,
                count=len(problems),
            )
    if walk.kept_missing:
        logger.warning("replay_kept_message_missing", thread_id=thread_id, count=walk.kept_missing)
    if walk.missing:
        logger.warning("replay_message_missing", thread_id=thread_id, count=walk.missing)
    return _to_messages(thread_id, contents)


def _to_messages(thread_id: str, contents: list[Any]) -> list[BaseMessage]:
    from journal.messages import content_to_message

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
    """The thread's messages up to ``upto_seq`` in the given view (see the module docstring)."""
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
    from langchain_core.messages import RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


def _check_restorable(graph: Pregel[Any, Any, Any, Any]) -> None:
    """Raise ``ValueError`` unless ``graph``'s state has a ``messages`` channel with a reducer
    (``add_messages``): the seed clears it with ``RemoveMessage(REMOVE_ALL_MESSAGES)``, which
    a plain channel (or a graph without one, a functional ``@entrypoint``) would store as a
    message."""
    channel = getattr(graph, "channels", {}).get("messages")
    if channel is None or not _clears(getattr(channel, "operator", None)):
        raise ValueError(
            "restore_thread needs a graph whose state has a 'messages' channel with a reducer "
            "(e.g. Annotated[list, add_messages], as MessagesState and create_agent have); "
            f"{getattr(graph, 'name', type(graph).__name__)!r} has none"
        )


def _clears(reducer: Any) -> bool:
    """Whether ``reducer`` reads ``RemoveMessage(REMOVE_ALL_MESSAGES)`` as clearing the list
    (``add_messages`` does; ``operator.add`` would keep it as a message)."""
    from langchain_core.messages import HumanMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    if not callable(reducer):
        return False
    try:
        cleared = reducer([HumanMessage("", id="probe")], [RemoveMessage(id=REMOVE_ALL_MESSAGES)])
    except Exception:  # a reducer of other values: not one restore_thread can seed
        return False
    return bool(cleared == [])


def restore_thread(
    store: RunEventStore,
    thread_id: str,
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
) -> RunnableConfig:
    """Seed ``graph``'s checkpointer thread (``config``) with the journal's state view.

    After it, the thread's ``messages`` state equals ``replay(store, thread_id,
    view="state")`` and the next run continues from it. Returns the config of the new
    checkpoint. The graph needs a checkpointer and a ``messages`` channel with a reducer
    (``add_messages``); ``ValueError`` if it has none.
    """
    _check_restorable(graph)
    messages = replay(store, thread_id, view="state")
    return graph.update_state(config, _seed(messages))


async def arestore_thread(
    store: RunEventStore,
    thread_id: str,
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
) -> RunnableConfig:
    """Async :func:`restore_thread`."""
    _check_restorable(graph)
    messages = await areplay(store, thread_id, view="state")
    return await graph.aupdate_state(config, _seed(messages))
