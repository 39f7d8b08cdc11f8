"""Where messages written without an id enter a thread's journal, and what waits for them.

A message written in a form the journal leaves as it is (a dict, a tuple, a string, an
overwrite's item) has no id until the state gives it one. :class:`Placement` keeps such
messages and, once a state of the run shows them, journals each under the id the state gave
it, in the state's order; whatever happened after them (a node's writes, a summary marker, a
later run's input or update) waits and is done once they are placed, so the journal's order
is the state's. One no state will show with an id is journaled all the same (or, at close,
left to the thread's next look). It journals through the callables it is given and reads no
other object's fields. Callback path: no I/O; the caller serialises access.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from journal._capture import tool_call_id_of, tool_calls_of
from journal._logging import get_logger
from journal._run_state import Node, RunState

__all__ = ["Journal", "Placement"]

Journal = Callable[[Node, BaseMessage, str], None]
"""Journals a message (with its id) as ``caller``'s, written by ``node``."""

_log = get_logger(__name__)


class _Unplaced(NamedTuple):
    """A message written in a form the journal leaves as it is, without an id (a dict, a
    tuple, a string, an overwrite's item): the user's (``caller`` ``"user"``) or a node's,
    journaled under the id the state gives it (see ``Placement._place``)."""

    node: Node
    message: BaseMessage
    caller: str


class _Later(NamedTuple):
    """What happened while messages written before it awaited their ids: done once they are
    placed (or given up, see ``Placement.give_up``)."""

    call: Callable[[], None]
    ids: frozenset[str] = frozenset()  # the ids it journals: none is an unplaced message's


def _applied(entry: _Unplaced, step: int | None) -> bool:
    """Whether the state a node of superstep ``step`` reads (``None``: the root's output)
    holds ``entry``: the user's always (written before any step), a node's once its step
    is over."""
    written = entry.node.step
    return entry.caller == "user" or step is None or written is None or written < step


def _same_message(written: BaseMessage, state_message: BaseMessage) -> bool:
    """Whether ``state_message`` is what ``written`` became in the state (it had no id)."""
    return (
        state_message.type == written.type
        and state_message.content == written.content
        and tool_call_id_of(state_message) == tool_call_id_of(written)
        and [c.get("id") for c in tool_calls_of(state_message)]
        == [c.get("id") for c in tool_calls_of(written)]
    )


class Placement:
    """The messages of one thread written without an id, and what waits for them.

    ``unplaced`` (the messages, in the order they were written) and ``awaiting`` (whether
    what happens now must wait: after a node's, or the user's the state holds without ids
    yet, an overwrite's, or that a later run or update follows) are for reading only; they
    change through the methods. ``seen`` is the journal's set of journaled ids (read only),
    ``journal`` journals a placed message, ``settle`` journals the held edits of runs that
    are over (what it writes without an id comes back through :meth:`written`).
    """

    __slots__ = ("_deferred", "_journal", "_seen", "_settle", "awaiting", "unplaced")

    def __init__(
        self, seen: Collection[str], journal: Journal, settle: Callable[[], object]
    ) -> None:
        self._seen = seen
        self._journal = journal
        self._settle = settle
        self.unplaced: list[_Unplaced] = []
        self.awaiting = False
        self._deferred: list[_Later] = []

    def written(self, node: Node, message: BaseMessage, caller: str) -> None:
        """``node`` wrote ``message`` without an id (``caller``'s): it is journaled once a
        state shows its id; a node's later writes are journaled after it (the user's: see
        ``_place``)."""
        self.unplaced.append(_Unplaced(node, message, caller))
        self.awaiting = self.awaiting or caller != "user"

    def defer(self, call: Callable[[], None], ids: frozenset[str] = frozenset()) -> None:
        """Do ``call`` (which journals ``ids``) once the messages written before it are
        placed; until then what comes after waits too."""
        self.awaiting = True
        self._deferred.append(_Later(call, ids))

    def place_inputs(self, run: RunState, messages: Any, step: int | None = None) -> None:
        """Journal the messages written without an id that a state of the run shows
        (``messages``: the state a node of superstep ``step`` reads, or the root's output when
        ``step`` is ``None``) under the ids it gave them, then what waited for them: the
        user's — ``run``'s input, and an earlier run's or update's still unplaced (a stream
        stopped before any state was seen) — whatever step the node runs in (a resumed one,
        or a graph without a checkpointer that numbers each run's steps anew), before what
        the run adds: they enter the state first; and the nodes' of the supersteps before
        ``step``, which LangGraph applied (one of the step going on waits for a later state).
        The last of ``run``'s input placed is where its own messages start (``input_end``).

        Until they are placed, what comes after them waits (see :meth:`defer`), done once
        they are (an overwrite's items get their ids only at the state's next write; a later
        run's input it releases is placed from ``messages`` too). One the state no longer
        holds is journaled all the same (see ``_place``)."""
        if not isinstance(messages, list):
            return  # a node that reads no messages: the next state seen places them
        while True:
            ready: list[_Unplaced] = []
            waiting: list[_Unplaced] = []
            for entry in self.unplaced:
                (ready if _applied(entry, step) else waiting).append(entry)
            if ready:
                self.unplaced = waiting
                placed = self._place(messages, ready)
                own = [m.id for u, m in placed if u.caller == "user" and u.node.run is run]
                if own:
                    run.input_end = own[-1]
            # the user's not placed wait for a later state (see _place), a node's too
            self.awaiting = bool(self.unplaced)
            if self.awaiting or not self._deferred:
                return
            self._release_deferred()  # (what it writes without an id: placed next round)

    def give_up(self, *, closing: bool = False) -> None:
        """Journal the unplaced messages that no state will show with an id (a rewrite
        replaces the state first; see ``_journal_lost``), in their order, then what waited
        for them, then the edits that held (their runs are over); what these write without
        an id is given up in turn.

        ``closing``: the journal closes, and the thread may go on with another journal. A
        message whose object no state gave an id may be in the checkpoint under one this
        journal never saw (a stream stopped before any node read the state, a client gone):
        the next journal's first look journals it under that id, so it is not journaled
        here under one of this journal's (it would show twice)."""
        left = 0
        while self.unplaced or self._deferred:
            lost, self.unplaced = self.unplaced, []
            for entry in lost:
                if closing and type(entry.message.id) is not str:
                    left += 1
                else:
                    self._journal_lost(entry)
            self.awaiting = False
            self._release_deferred()
            self._settle()
        if left:
            _log.warning("journal_messages_unplaced", count=left, left_to="next_look")

    def _release_deferred(self) -> None:
        """Do what waited for the messages written before it, in its order; what comes after
        one that writes a message without an id in turn waits for that one."""
        deferred, self._deferred = self._deferred, []
        for index, later in enumerate(deferred):
            if self.unplaced:
                self.awaiting = True
                self._deferred[:0] = deferred[index:]
                return
            later.call()

    def _journal_lost(self, entry: _Unplaced) -> None:
        """Journal a message written without an id that no state showed with one: under the
        id its object was given in place (by the state holding it: the reducer, a
        summarizer, as the marker names it), else under one made for the journal's copy (the
        user's or the node's object is never changed)."""
        message = entry.message
        if type(message.id) is not str:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        self._journal(entry.node, message, entry.caller)

    def _place(self, messages: list[Any], pending: list[_Unplaced]) -> list[tuple[_Unplaced, Any]]:
        """Journal the messages of ``pending`` (written without an id) under the id the state
        gave them; return each placed with its state message, in the state's order.

        Each is found by kind, content and tool call among the state's ids the journal has
        not seen (nor a deferred write holds), the latest first: what was just written is
        nearest the end of the state (after a restart an earlier message of the same text is
        unseen too). Any of them may match: the writes of a superstep enter the state in task
        order, not in the order the nodes ended. One a state with every id shows no longer
        (replaced before the state gave it its id, by a summarizer) is journaled all the same,
        in its place among ``pending`` (see ``_journal_lost``); while the state holds items
        without ids (an overwrite's), it waits for a later state."""
        entries = list(pending)  # in the order they were written
        claimed = {mid for later in self._deferred for mid in later.ids}
        claimed.difference_update(e.message.id for e in entries)  # (given in place: theirs)
        found: list[tuple[_Unplaced, Any]] = []
        for state_message in reversed(messages):
            if not pending:
                break
            mid = getattr(state_message, "id", None)
            if (
                type(mid) is not str
                or mid in self._seen
                or mid in claimed
                or not isinstance(state_message, BaseMessage)
            ):
                continue
            for index in range(len(pending) - 1, -1, -1):
                if _same_message(pending[index].message, state_message):
                    found.append((pending.pop(index), state_message))
                    break
        waiting = any(type(getattr(m, "id", None)) is not str for m in messages)
        if pending and waiting:
            # an overwrite's items get their ids at the state's next write: a later state
            # places them
            self.unplaced[:0] = pending
            self.awaiting = True
        found.reverse()  # in the state's order
        # the found fill their writers' places in the state's order, the lost keep theirs
        in_state = iter(found)
        placed = {id(entry) for entry, _ in found}
        for entry in entries:
            if id(entry) in placed:
                writer, state_message = next(in_state)
                self._journal(writer.node, state_message, writer.caller)
            elif not waiting:
                self._journal_lost(entry)
        return found
