"""Edits of the ``messages`` state, replayed on message ids the way ``add_messages`` applies them.

A node's write to ``messages`` that holds a ``RemoveMessage`` is an *edit*. LangGraph applies a
superstep's writes only once every task of the step has finished, in task-path order, and a
failing write (``RemoveMessage`` of an unknown id) or task applies nothing. So the journal holds
an edit (:class:`HeldWrite`) until the next superstep starts or the root ends, then works out
with :func:`apply_write` what it did to the state and journals that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from journal.messages import message_to_content

if TYPE_CHECKING:
    from journal._run_state import Node

__all__ = [
    "OVERWRITTEN",
    "AppliedEdit",
    "HeldWrite",
    "Outcome",
    "apply_write",
    "inferred_summary",
    "replay_order",
    "settle_step",
    "state_ids",
    "task_order_key",
]


#: The first item of a write that bypasses the reducer (``langgraph.types.Overwrite``), read
#: as the rewrite it is: LangGraph sets the state to the value as it is, and ignores every
#: other write to ``messages`` of the superstep after it (before it: replaced by it).
OVERWRITTEN: Final = RemoveMessage(id=REMOVE_ALL_MESSAGES)


@dataclass(slots=True)
class HeldWrite:
    """A node's edits, waiting for LangGraph to apply its superstep."""

    node: Node
    path: str  # the task path: LangGraph applies a step's writes in this order
    writes: list[list[BaseMessage]]  # each write to ``messages``, RemoveMessage included
    base: Sequence[Any] | None  # the ``messages`` the node read (the state at its step)


@dataclass(slots=True)
class Outcome:
    """What one write did to the state."""

    rewrite: bool  # RemoveMessage(REMOVE_ALL_MESSAGES): the list after it is the new state
    removed: list[str]  # ids that were in the state before and are not after, in state order
    order: list[str]  # the state's ids after the write
    messages: list[BaseMessage]  # the write's messages now in the state (new or replacing)
    # the write's messages without an id, which enter the state under ids its reducer gives
    unplaced: list[BaseMessage] = field(default_factory=list)


_ORDER_KEYS: dict[tuple[Any, tuple[type, ...]], str] = {}  # (task path, its parts' types) -> key
_ORDER_KEYS_MAX: Final = 4096
_FLAT: Final = frozenset({str, int, bool})  # the parts of a path that is cached


def task_order_key(path: Any) -> str:
    """The key LangGraph sorts a superstep's tasks by before it applies their writes.

    Its task path as text, numbers zero-padded to ten digits (so ``Send`` number 10 follows
    number 9), nested paths joined after a ``~``.
    """
    # a graph has few distinct paths: a flat path is computed once, cached with its parts'
    # types (True and 1 are equal keys of a dict, but their order keys differ)
    types = tuple(map(type, path)) if type(path) is tuple else None
    if types is not None and _FLAT.issuperset(types):
        cache_key = (path, types)
        key = _ORDER_KEYS.get(cache_key)
        if key is None:
            key = _order_key(path)
            if len(_ORDER_KEYS) >= _ORDER_KEYS_MAX:
                _ORDER_KEYS.clear()
            _ORDER_KEYS[cache_key] = key
        return key
    return _order_key(path)


def _order_key(path: Any) -> str:
    if isinstance(path, tuple | list):
        return "~" + ", ".join(task_order_key(part) for part in path)
    if isinstance(path, int) and not isinstance(path, bool):
        return f"{path:010d}"
    return str(path)


def state_ids(messages: Sequence[Any]) -> list[str]:
    """The ids of a ``messages`` state value (items without a string id are skipped)."""
    return [i for m in messages if isinstance(i := getattr(m, "id", None), str)]


def _is_removal(message: BaseMessage) -> bool:
    return message.type == "remove"


def apply_write(state: Sequence[str], write: Sequence[BaseMessage]) -> Outcome:
    """Apply one ``messages`` write to the state's ids, as ``add_messages`` does.

    Only called for writes LangGraph applied, so a removal of an id this state does not hold
    means the journal did not know the message (e.g. it predates the process): it counts as
    removed rather than failing.
    """
    cut = None
    for index, message in enumerate(write):
        if _is_removal(message) and message.id == REMOVE_ALL_MESSAGES:
            cut = index
    entering = write if cut is None else write[cut + 1 :]
    unplaced = [m for m in entering if m.id is None and not _is_removal(m)]
    write = [m for m in write if m.id is not None]  # an unplaced message: see Outcome
    if cut is not None:
        kept = [m for m in entering if m.id is not None and not _is_removal(m)]
        order = [str(m.id) for m in kept]
        after = set(order)
        removed = [i for i in state if i not in after]
        return Outcome(rewrite=True, removed=removed, order=order, messages=kept, unplaced=unplaced)
    merged = list(state)
    position = {mid: n for n, mid in enumerate(merged)}
    to_remove: set[str] = set()
    unknown: list[str] = []
    written: dict[str, BaseMessage] = {}
    for message in write:
        mid = str(message.id)
        if mid in position:
            if _is_removal(message):
                to_remove.add(mid)
            else:
                to_remove.discard(mid)
                written[mid] = message
        elif _is_removal(message):
            unknown.append(mid)
        else:
            position[mid] = len(merged)
            merged.append(mid)
            written[mid] = message
    before = set(state)
    removed = [mid for mid in state if mid in to_remove]
    removed.extend(mid for mid in dict.fromkeys(unknown) if mid not in before)
    order = [mid for mid in merged if mid not in to_remove]
    messages = [m for mid, m in written.items() if mid not in to_remove]
    return Outcome(
        rewrite=False, removed=removed, order=order, messages=messages, unplaced=unplaced
    )


@dataclass(slots=True)
class AppliedEdit:
    """One edit of a superstep, as LangGraph applied it."""

    node: Node
    before: list[str]  # the state's ids just before it
    outcome: Outcome


def settle_step(
    state: Sequence[str] | None,
    journaled: Sequence[str],
    fresh: Sequence[tuple[str, str]],
    held: Sequence[HeldWrite],
) -> tuple[list[AppliedEdit], list[str]]:
    """Apply a superstep's writes in task-path order: its edits and what the journal recorded.

    ``state``: the ids the step's nodes read (``None`` if no node read ``messages``);
    ``journaled``: the state as the journal recorded it (``fresh`` included); ``fresh``: the
    ``(id, task path)`` of each message journaled during the step, as it was written (new
    messages of nodes whose writes were not edits). Returns each edit with the state it met,
    and the state's ids once the step is applied.
    """
    added = {mid for mid, _ in fresh}
    current = list(state) if state is not None else [i for i in journaled if i not in added]
    steps: list[tuple[str, int, Any]] = [(path, 0, mid) for mid, path in fresh]
    steps.extend((write.path, 1, write) for write in held)
    steps.sort(key=lambda s: (s[0], s[1]))  # stable: a path's own order is kept
    edits: list[AppliedEdit] = []
    for _, kind, item in steps:
        if kind == 0:
            if item not in current:
                current.append(item)
            continue
        for write in item.writes:
            outcome = apply_write(current, write)
            edits.append(AppliedEdit(item.node, current, outcome))
            current = list(outcome.order)  # later messages of the step must not alias it
            if write and write[0] is OVERWRITTEN:  # the step's later writes are ignored
                return edits, current
    return edits, current


def replay_order(
    order: Sequence[str], removed: Sequence[str], rewrite: Sequence[str] | None
) -> list[str]:
    """The state replay rebuilds from ``order`` after a removal event (``rewrite``: its
    ``state_message_ids``)."""
    if rewrite is not None:
        return list(rewrite)
    gone = set(removed)
    return [mid for mid in order if mid not in gone]


def inferred_summary(
    before: Sequence[str], outcome: Outcome, summary: BaseMessage
) -> dict[str, Any]:
    """The ``middleware:summarize`` payload of an edit that injected ``summary``.

    The fields of ``TrackingSummarizationMiddleware``'s payload; what only the middleware
    knows (its trigger, its token counts) is ``None``. ``state_message_ids`` is the state's
    order after the edit, so replay rebuilds it whatever the layout of the rewrite.
    """
    had = set(before)
    kept = [mid for mid in outcome.order if mid in had]
    return {
        "summary": str(summary.text),
        "summary_message": message_to_content(summary),
        "replaced_count": len(outcome.removed),
        "replaced_message_ids": list(outcome.removed),
        "kept_count": len(kept),
        "kept_message_ids": kept,
        "trigger": None,
        "tokens_before": None,
        "tokens_after": None,
        "state_message_ids": list(outcome.order),
    }
