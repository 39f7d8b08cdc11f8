"""How a state LangGraph shows, or an edit it applied, differs from a thread's journal.

Pure functions (no I/O, no state of their own) of what the journal holds — its order, its
journaled ids — and what LangGraph did: :func:`edit_event` is the event that journals an
applied edit (its summary marker or removal, or ``None`` when the messages it adds rebuild
the order alone), :func:`whole_order` the ``message.remove`` that sets the journal's order to
a state's; each carries exactly what replay needs to rebuild the state's order.
:func:`may_hold_unseen` and :func:`unseen_of_run` find what entered a state without a
callback telling the journal.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from journal._capture import is_summary
from journal._edits import AppliedEdit, inferred_summary, replay_order
from journal._run_state import RunState
from journal.catalog import REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE

__all__ = ["EditEvent", "edit_event", "may_hold_unseen", "unseen_of_run", "whole_order"]


class EditEvent(NamedTuple):
    """The event journaled for an edit before the messages it adds."""

    category: str
    event_type: str
    content: dict[str, Any]
    metadata: dict[str, Any]


def edit_event(
    edit: AppliedEdit, order: list[str], seen: Collection[str], target: list[str]
) -> EditEvent | None:
    """The marker (or removal) that journals ``edit``, given the journal's ``order`` before
    it and its journaled ids ``seen``; ``target`` is the state's order to leave (the step's,
    for its last edit). ``None``: the edit removed nothing and its messages, appended,
    rebuild ``target``."""
    node, outcome = edit.node, edit.outcome
    before = set(edit.before)
    # a summary the state held before the edit is an earlier compaction's (kept by a
    # rewrite; after a restart this journal has not seen it), not a new one
    summary = next(
        (m for m in outcome.messages if is_summary(m) and m.id not in seen and m.id not in before),
        None,
    )
    shown = [m for m in outcome.messages if not is_summary(m)]
    removal = outcome.removed if not node.summarized else []  # its own event marked it
    # the order replay rebuilds from the events written so far: a rewrite that removes
    # nothing writes no removal, so its order counts only if an event carries it
    rewrite = outcome.order if outcome.rewrite and (removal or node.summarized) else None
    rebuilt = replay_order(order, outcome.removed, rewrite)
    rebuilt.extend(str(m.id) for m in shown if m.id not in rebuilt)
    reorder = rebuilt != target
    if summary is not None and not node.summarized:
        payload = inferred_summary(edit.before, outcome, summary)
        payload["state_message_ids"] = list(target)
        metadata = {**node.inner_attribution(), "inferred": True}
        return EditEvent("middleware", SUMMARIZE_EVENT_TYPE, payload, metadata)
    if removal or reorder:
        content: dict[str, Any] = {"removed_message_ids": removal}
        if outcome.rewrite or reorder:
            content = {"all": True, **content, "state_message_ids": list(target)}
        return EditEvent("message", REMOVE_EVENT_TYPE, content, node.attribution())
    return None


def whole_order(
    order: Mapping[str, None], seen: Collection[str], truth: list[str], run: RunState
) -> dict[str, Any]:
    """The content of a ``message.remove`` that sets the state's order to ``truth`` where
    the journal's is ``order``: ``removed_message_ids`` the journaled messages the state no
    longer holds, ``restored_message_ids`` (when any) those of ``seen`` it holds again."""
    held = set(truth)  # what left the state: the timeline shows it as a removal
    gone = [mid for mid in order if mid not in held]
    # journaled messages that had left the state and are back (a fork): readers that
    # narrow a search by the states of earlier edits must still look for them
    restored = [mid for mid in truth if mid in seen and mid not in order]
    if gone and not run.synced and run.own_ids.issuperset(truth):
        # a state started anew, the run's messages alone (a graph without a checkpointer):
        # nothing left it (a fork's holds messages journaled before the run)
        gone = []
    content: dict[str, Any] = {"all": True, "removed_message_ids": gone, "state_message_ids": truth}
    if restored:
        content["restored_message_ids"] = restored
    return content


def may_hold_unseen(state: Any, order: dict[str, None]) -> bool:
    """Whether the ``messages`` of ``state`` (a node's input) may hold messages no callback
    told the journal of, whose order is ``order``: their count or their last id is not the
    journal's. Constant time: a run that shows the journal every write pays two comparisons
    a superstep."""
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list) or not messages:
        return False
    if len(messages) != len(order):
        return True
    return getattr(messages[-1], "id", None) != next(reversed(order), None)


def unseen_of_run(run: RunState, messages: list[Any], seen: Collection[str]) -> list[BaseMessage]:
    """The messages of the state ``messages`` that ``run`` added and are not in ``seen``, in
    the state's order. At the run's first look at the state (not synced) only what follows
    its input is the run's: the messages before it were there when it started."""
    start = 0
    if not run.synced:
        end = run.input_end
        start = len(messages)
        for index, message in enumerate(messages):
            if end is not None and getattr(message, "id", None) == end:
                start = index + 1
                break
    return [
        m
        for m in messages[start:]
        if isinstance(m, BaseMessage) and isinstance(m.id, str) and m.id not in seen
    ]
