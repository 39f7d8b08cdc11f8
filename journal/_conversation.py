"""What a ``RunJournal`` knows of one conversation, and how messages enter its journal.

A :class:`Conversation` is told what happened in the thread's runs — a root started with its
input, a node of the root graph started or wrote its output, a tools task failed, a root
finished, the journal closes — and journals the ``message.*`` events (and edits, see
:mod:`journal._edits`) in the order the messages enter the LangGraph state. It remembers which
message ids are journaled, the state's order as journaled, the edits of the current superstep
(held until LangGraph applied it), the thread's latest run (what an ``update_state`` between
runs is journaled under), and, through :class:`journal._tool_order.ToolOrder`, which
tool results wait for earlier calls. Callback path: no I/O; the caller serialises access.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from journal._capture import (
    NodeWrites,
    is_summary,
    tool_call_id_of,
    tool_calls_of,
)
from journal._contents import Contents
from journal._edits import (
    OVERWRITTEN,
    AppliedEdit,
    HeldWrite,
    apply_write,
    inferred_summary,
    replay_order,
    settle_step,
    state_ids,
)
from journal._kinds import scalars_kind
from journal._logging import get_logger
from journal._queued import Lazy
from journal._run_state import Node, RunState
from journal._sink import EventSink
from journal._tool_order import ToolOrder
from journal.catalog import REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE
from journal.messages import message_event_type

__all__ = ["Conversation"]


class _Unplaced(NamedTuple):
    """A message written in a form the journal leaves as it is, without an id (a dict, a
    tuple, a string, an overwrite's item): the user's (``caller`` ``"user"``) or a node's,
    journaled under the id the state gives it (see ``_place``)."""

    node: Node
    message: BaseMessage
    caller: str


class _Later(NamedTuple):
    """What happened while messages written before it awaited their ids: done once they are
    placed (or given up, see ``Conversation._give_up``)."""

    call: Callable[[], None]
    ids: frozenset[str] = frozenset()  # the ids it journals: none is an unplaced message's


def _rewrites(write: Sequence[BaseMessage]) -> bool:
    """Whether a write replaces the whole state (an overwrite, a ``REMOVE_ALL_MESSAGES``)."""
    return any(m.type == "remove" and m.id == REMOVE_ALL_MESSAGES for m in write)


_log = get_logger(__name__)


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


class Conversation:
    """The journal's memory of one thread, reacting to what its runs do.

    ``_order`` is the state's message ids as journaled (what replay's state view rebuilds);
    ``_last`` the latest journaled object of each id and its content object then (a node that
    returns the same object, its content not replaced, changed nothing); ``_fresh`` the
    ``(id, task path)`` of the messages journaled since the current superstep started;
    ``_stale`` whether ``_order`` may differ from the state's and awaits a state to check it
    against; ``_held`` the edits of the current superstep, waiting to be applied;
    ``_deferred`` what happened while messages written before it awaited their ids — the
    nodes' writes, a summary marker, a later run's input or update (done after them, see
    ``_place_inputs``); ``_run`` the thread's latest root run; ``_updates`` the writes of
    ``update_state`` calls made before this journal followed a run of the thread (journaled
    with the next one).
    """

    __slots__ = (
        "_awaiting",
        "_checked",
        "_contents",
        "_deferred",
        "_fresh",
        "_held",
        "_held_step",
        "_last",
        "_order",
        "_paused_held",
        "_run",
        "_seen",
        "_sink",
        "_stale",
        "_step",
        "_tools",
        "_unplaced",
        "_updates",
        "thread_id",
    )

    def __init__(self, thread_id: str, sink: EventSink, contents: Contents) -> None:
        self.thread_id = thread_id
        self._sink = sink
        self._contents = contents
        self._seen: set[str] = set()
        self._checked = False  # a state of the thread compared with the journal's order
        self._tools: ToolOrder[Node] = ToolOrder()
        self._order: dict[str, None] = {}
        self._last: dict[str, tuple[BaseMessage, Any]] = {}
        self._fresh: list[tuple[str, str]] = []
        self._step: int | None = None
        self._stale = False  # the state's order is to be checked at the next state seen
        self._held: list[HeldWrite] = []
        self._held_step: int | None = None
        # messages written without an id (left as written), and whether what comes after
        # them waits: after a node's, or the user's the state holds without ids yet (an
        # overwrite's) or that a later run or update follows (see _place_inputs)
        self._unplaced: list[_Unplaced] = []
        self._awaiting = False
        self._deferred: list[_Later] = []
        # results a paused run held back: another journal may resume the run and store them
        self._paused_held: set[str] = set()
        self._run: RunState | None = None
        self._updates: list[list[BaseMessage]] = []

    # -- what happened -------------------------------------------------------------------

    def root_started(self, user: Node, messages: list[BaseMessage]) -> None:
        """A root run started with input ``messages`` (led by ``OVERWRITTEN``: they replace
        the state). ``user`` carries the run and its attribution."""
        self._run = user.run
        if self._updates:  # made before this journal followed a run: they come first
            updates, self._updates = self._updates, []
            self._journal_update(user, updates)
        self._fresh = []  # (the step stays: a resumed run re-runs the step it paused in)
        tail = messages[-1] if messages else None
        if tail is not None and tail is not OVERWRITTEN and isinstance(tail.id, str):
            user.run.input_end = tail.id
        self._stale = False  # (a run checks the order at its first step: it is not synced)
        if messages and messages[0] is OVERWRITTEN:  # a rewrite, as a node's would be
            self._give_up()  # an earlier run's unplaced ones leave the state now
            self._journal_update(user, [messages])
            return
        if self._unplaced:  # an earlier run's enter the state first
            self._awaiting = True
            ids = frozenset(m.id for m in messages if isinstance(m.id, str))
            self._deferred.append(_Later(partial(self._journal_input, user, messages), ids))
            return
        self._journal_input(user, messages)

    def _journal_input(self, user: Node, messages: list[BaseMessage]) -> None:
        """Journal a root run's input ``messages`` (not a rewrite) as they enter the state."""
        for message in messages:
            if is_summary(message):  # a resent summary: its marker journaled it
                if message.id is not None:
                    self._seen.add(message.id)
                    self._order[message.id] = None
                    self._last[message.id] = (message, message.content)
                continue
            # every message of the input enters the state, answers and tool results too (a
            # thread seeded with an earlier conversation); one journaled already is a resent
            # history's (the writer drops the repeats this journal does not remember), one
            # without an id is journaled once the state is seen. The same id with another
            # content: the user edited it (a client that keeps its ids), the state replaces it
            last = None if message.id is None else self._last.get(message.id)
            edited = last is not None and last[1] != message.content
            self._add(user, message, "user", replace=edited)

    def node_started(self, node: Node, state: Any, path: str) -> None:
        """A node of the root graph starts (task path ``path``): the steps before it are
        applied; ``state`` is the state it reads, ``None`` when its input is none (a
        ``Send``'s argument, the run's input): it cannot show the state's order."""
        if self._unplaced and isinstance(state, dict):
            self._place_inputs(node.run, state.get("messages"), node.step)
        new_step = node.step is not None and self._step != node.step
        # the journal's order can differ from the state's only after parallel writes, writes
        # it could not place, writes no callback told of (a cached task: see below), or
        # before this run (another journal, a graph without memory)
        check = not node.run.synced
        if new_step:
            # a later superstep: LangGraph applied the earlier one's writes
            if self._held and (self._held_step is None or node.step > self._held_step):  # type: ignore[operator]
                self._apply_held()  # (its messages without an id wait for a state)
            check = check or bool(self._unplaced) or len({p for _, p in self._fresh}) > 1
            self._step = node.step
            self._fresh = []
            # a step's first nodes may read no state (LangGraph starts Send tasks first): the
            # next one that does shows it, else the root's output
            self._stale = self._stale or check
        for message in self._tools.step_started(node.step):
            self._add(node, message, "agent")
        # the state this node reads is the applied state; a task LangGraph answered from its
        # cache ran no callback, so its messages show only there (a cheap look first)
        if state is not None and (self._stale or (new_step and self._may_hold_unseen(state))):
            unapplied = [mid for mid, _ in self._fresh]  # written in this step so far
            synced = self._resync(
                node.run,
                state,
                between_runs=not node.run.synced,
                unapplied=unapplied,
                step=node.step,
            )
            if synced:
                node.run.synced = True
        node.path = path
        base = state.get("messages") if isinstance(state, dict) else None
        node.base = base if isinstance(base, list) else None

    def node_ended(self, node: Node, written: NodeWrites) -> None:
        """A node of the root graph ended having ``written`` its output: journal the
        messages it writes."""
        if self._awaiting:  # they enter the state after what awaits its id: journaled after it
            ids = frozenset(m.id for m in written.messages() if isinstance(m.id, str))
            self._deferred.append(_Later(partial(self.node_ended, node, written), ids))
            return
        if written.removes:
            # an edit: journaled once LangGraph has applied the superstep (it may fail)
            self._held.append(HeldWrite(node, node.path, written.writes, node.base))
            self._held_step = node.step
        elif node.caller == "agent":
            self._agent_messages(node, written.messages())
        else:
            self._middleware_messages(node, written.messages())
        node.base = None  # the state it read is not ours to keep

    def task_failed(self, node: Node) -> None:
        """A node answering a tool call failed: later results no longer wait for it."""
        for item in self._tools.call_failed(node.tool_call_id):
            self._add(node, item, "agent")

    def root_finished(self, run: RunState, *, applied: bool, paused: bool, state: Any) -> None:
        """A root run ended (``paused``: for a human). ``applied``: LangGraph applied its last
        superstep's writes; ``state``: the root's output (the final state of a graph)."""
        # the output is the state once the run's writes are applied, unless a task paused
        # the run: then its step's writes wait for the resumed run
        step = self._step if paused and run.task_interrupted else None
        if self._awaiting and isinstance(state, dict):  # it shows ids a write gave them
            self._place_inputs(run, state.get("messages"), step)
        # else (a stopped stream, a failed run) the next state seen places them, then what
        # the run wrote meanwhile: a later run's look, or its rewrite, or the journal's close
        # a step a task paused in is applied when the run resumes; at a breakpoint
        # (interrupt_before/after) LangGraph applied the step before pausing
        if self._held and not (paused and run.task_interrupted):
            if applied or paused:
                self._apply_held()
            else:
                _log.warning("journal_edits_not_applied", run_id=run.run_id, count=len(self._held))
                self._held = []
        holder = Node(run=run, name=run.graph, caller="agent", node=None, step=None)
        if paused:  # its calls are answered when it resumes: keep their order (or see close)
            self._tools.run_paused(holder)
            self._paused_held.update(self._tools.held_ids())
            # at a breakpoint its output is the applied state: what no callback told of is
            # journaled now (a task's interrupt leaves its step's writes to the resumed run)
            messages = state.get("messages") if isinstance(state, dict) else None
            if isinstance(messages, list):
                self._place_inputs(run, messages, step)  # applied (a breakpoint)
                if not run.task_interrupted:
                    self._journal_unseen(run, messages)
        else:
            for message in self._tools.run_ended():
                self._add(holder, message, "agent")
            self._resync(run, state, between_runs=not run.synced)

    def state_updated(self, writes: list[list[BaseMessage]]) -> None:
        """``update_state`` applied ``writes`` to the thread's state (as a node's writes).

        Journaled as the user's, under the thread's latest run (the state they edit), never
        as a run of their own; before this journal followed any run of the thread, with the
        next one.
        """
        if self._run is None:
            self._updates.extend(writes)
            return
        run = self._run
        user = Node(run=run, name=run.graph, caller="user", node=None, step=None)
        if self._unplaced:  # a run's unplaced messages: they are in the state first
            if any(_rewrites(write) for write in writes):
                self._give_up()  # they leave it now
            else:
                self._awaiting = True
                ids = frozenset(
                    m.id for w in writes for m in w if m.type != "remove" and isinstance(m.id, str)
                )
                self._deferred.append(_Later(partial(self._journal_update, user, writes), ids))
                return
        self._journal_update(user, writes)

    def summary_marked(self, run: RunState, payload: Any, attribution: dict[str, Any]) -> None:
        """A summarization middleware reported its compaction (``payload``, see
        :mod:`middleware.summarization`): its marker, journaled after the messages it
        replaced (the user's, awaiting their ids, too)."""
        if self._awaiting:
            self._deferred.append(_Later(partial(self.summary_marked, run, payload, attribution)))
            return
        self._sink.emit(run, "middleware", SUMMARIZE_EVENT_TYPE, payload, attribution)

    def closing(self) -> None:
        """The journal closes: journal the tool results and edits paused runs still hold.

        A run resumed by another journal (after a restart) cannot release them, and they are
        already in the checkpoint's pending writes. What waited for messages written without
        an id is journaled; those no state showed with an id are left to the thread's next
        look (see ``_give_up``).
        """
        self._give_up(closing=True)
        if self._held:
            self._apply_held()
            self._give_up(closing=True)  # what they write without an id
        holder, due = self._tools.closing()
        for message in due:
            if holder is not None:
                self._add(holder, message, "agent")

    # -- node outputs --------------------------------------------------------------------

    def _agent_messages(self, node: Node, messages: list[BaseMessage]) -> None:
        """Journal an agent node's new ``messages``; tool results wait for earlier calls."""
        answered = False
        for message in messages:
            call_id = tool_call_id_of(message)
            if call_id is not None:
                answered = answered or call_id == node.tool_call_id
                ready = self._tools.result_written(call_id, [message], node.step)
            else:
                ready = [message]
            for item in ready:
                self._add_ai_or_tool(node, item)
        if node.tool_call_id is not None and not answered:  # e.g. a Command without messages
            for item in self._tools.result_written(node.tool_call_id, [], node.step):
                self._add(node, item, "agent")

    def _middleware_messages(self, node: Node, messages: list[BaseMessage]) -> None:
        """Journal new messages a middleware hook adds (e.g. a rejected call's tool result).

        They enter the state at the hook's step, before any later tool result, so they are
        journaled at once and their call stops holding later results back.
        """
        for message in messages:
            self._add_ai_or_tool(node, message, str(node.caller))
            if message.type == "tool":
                for item in self._tools.answered_elsewhere(getattr(message, "tool_call_id", None)):
                    self._add(node, item, "agent")

    def _add_ai_or_tool(self, node: Node, message: BaseMessage, caller: str = "agent") -> None:
        """Journal ``message``; a new AI message's tool calls set the order of their results."""
        is_new = message.id not in self._seen
        self._add(node, message, caller, replace=True)
        calls = tool_calls_of(message)
        if calls and is_new:
            for held in self._tools.calls_made([str(c.get("id")) for c in calls]):
                self._add(node, held, "agent")

    def _add(
        self,
        node: Node,
        message: BaseMessage,
        caller: str,
        *,
        replace: bool = False,
        own: bool = True,
    ) -> None:
        """Journal ``message`` as it enters the thread's state.

        An id already journaled is skipped, unless ``replace`` (a node wrote it again): then it
        is journaled as a ``replacement`` when its content changed (the writer compares
        digests), and always when the message had left the state (it is added back).
        ``own``: the run's message (counted in its totals), not one it found in the state.
        """
        event_type = message_event_type(message)
        mid = message.id
        if event_type is None:
            return
        run = node.run
        if mid is None:  # its state id is known once the state is seen (see _place_inputs)
            self._unplaced.append(_Unplaced(node, message, caller))
            # a node's later writes are journaled after it (the user's: see _place)
            self._awaiting = self._awaiting or caller != "user"
            return
        metadata: dict[str, Any] = {
            "caller": caller,
            "langgraph_step": node.step,
            "langgraph_node": node.node,
            "message_id": mid,
        }
        in_state = mid in self._order
        if mid in self._seen:
            last = self._last.get(mid)
            unchanged = last is not None and last[0] is message and last[1] is message.content
            if not replace or (in_state and unchanged):
                return
            if in_state:
                metadata["replacement"] = True
        else:
            self._seen.add(mid)
            if own:
                run.own_ids.add(mid)
                run.message_counts[message.type] = run.message_counts.get(message.type, 0) + 1
        self._last[mid] = (message, message.content)
        if not in_state:  # a replacement keeps its place in the state
            self._order[mid] = None
            self._fresh.append((mid, node.path))
        tool_call_id = tool_call_id_of(message)
        if tool_call_id is not None:
            metadata["tool_call_id"] = tool_call_id
        args = (self.thread_id, message, in_state)
        content = Lazy(self._contents.message, args)
        if mid in self._paused_held:
            self._paused_held.discard(mid)
            if not self._tools.resumed:
                # held back by a paused run this journal did not resume: another journal
                # (another process) may have, finding it in the state and storing it
                content = Lazy(self._contents.message_unless_stored, args, reads="messages")
        kind = scalars_kind(caller, node.step, node.node, mid, tool_call_id)  # replacement: a bool
        self._sink.emit(run, "message", event_type, content, metadata, kind)

    # -- the state's order and its edits (see journal._edits) -----------------------------

    def _journal_update(self, user: Node, writes: list[list[BaseMessage]]) -> None:
        """Journal an ``update_state``'s writes, one after the other, as ``user``'s edits."""
        for write in writes:
            before = list(self._order)
            self._journal_edit(AppliedEdit(user, before, apply_write(before, write)), None)

    def _catch_up(self, run: RunState, messages: list[Any]) -> None:
        """Journal, as the user's, what the state gained outside every run this journal
        followed: messages it never journaled, and new contents of ids it holds. LangGraph
        applies an ``update_state`` whose node has one writer without any callback, so the
        next run's state is where the journal first sees it; a journal that starts on a
        thread (a restart) sees there what its predecessor could not journal (an input whose
        id only the state showed, when the run's stream was stopped before a node ran): each
        is journaled as a run's input is, so the writer drops the ones the store holds. (A
        message journaled before that left the state and is back — a fork — is not
        journaled again: replay keeps it.)"""
        fresh = len(self._fresh)
        user = Node(run=run, name=run.graph, caller="user", node=None, step=None)
        for message in messages:
            mid = getattr(message, "id", None)
            if not isinstance(message, BaseMessage) or type(mid) is not str:
                continue
            if is_summary(message):  # an earlier compaction's: its marker journaled it
                self._seen.add(mid)
                self._last[mid] = (message, message.content)
                continue
            if mid in self._order:
                last = self._last.get(mid)  # (none: an id of a state first seen whole)
                if last is None or last[1] is message.content or last[1] == message.content:
                    continue
            elif mid in self._seen:
                continue
            self._add(user, message, "user", replace=True, own=False)
        del self._fresh[fresh:]  # they entered the state before this step

    def _apply_held(self) -> None:
        """Journal the held edits of a superstep LangGraph has applied, in task-path order.

        After the last one the replayed state equals the state once the step is applied: if
        the events alone would rebuild another order (messages of other tasks of the step
        interleave with an edit), the last event carries the whole order.
        """
        held = sorted(self._held, key=lambda w: w.path)
        self._held = []
        self._held_step = None
        base = next((w.base for w in held if w.base is not None), None)
        try:
            edits, final = settle_step(
                None if base is None else state_ids(base), list(self._order), self._fresh, held
            )
        except Exception as e:  # a malformed write must never break the run
            _log.warning("journal_edit_unreadable", count=len(held), error_type=type(e).__name__)
            return
        for index, edit in enumerate(edits):
            self._journal_edit(edit, final if index == len(edits) - 1 else None)

    def _place_inputs(self, run: RunState, messages: Any, step: int | None = None) -> None:
        """Journal the messages written without an id that a state of the run shows
        (``messages``: the state a node of superstep ``step`` reads, or the root's output when
        ``step`` is ``None``) under the ids it gave them, then what waited for them: the
        user's — ``run``'s input, and an earlier run's or update's still unplaced (a stream
        stopped before any state was seen) — whatever step the node runs in (a resumed one,
        or a graph without a checkpointer that numbers each run's steps anew), before what
        the run adds: they enter the state first; and the nodes' of the supersteps before
        ``step``, which LangGraph applied (one of the step going on waits for a later state).
        The last of ``run``'s input placed is where its own messages start (``input_end``).

        Until they are placed, what comes after them waits (see ``node_ended``,
        ``_deferred``), done once they are (an overwrite's items get their ids only at the
        state's next write; a later run's input it releases is placed from ``messages``
        too). One the state no longer holds is journaled all the same (see ``_place``)."""
        if not isinstance(messages, list):
            return  # a node that reads no messages: the next state seen places them
        while True:
            ready: list[_Unplaced] = []
            waiting: list[_Unplaced] = []
            for entry in self._unplaced:
                (ready if _applied(entry, step) else waiting).append(entry)
            if ready:
                self._unplaced = waiting
                placed = self._place(messages, ready)
                own = [m.id for u, m in placed if u.caller == "user" and u.node.run is run]
                if own:
                    run.input_end = own[-1]
            # the user's not placed wait for a later state (see _place), a node's too
            self._awaiting = bool(self._unplaced)
            if self._awaiting or not self._deferred:
                return
            self._release_deferred()  # (what it writes without an id: placed next round)

    def _release_deferred(self) -> None:
        """Do what waited for the messages written before it, in its order; what comes after
        one that writes a message without an id in turn waits for that one."""
        deferred, self._deferred = self._deferred, []
        for index, later in enumerate(deferred):
            if self._unplaced:
                self._awaiting = True
                self._deferred[:0] = deferred[index:]
                return
            later.call()

    def _give_up(self, *, closing: bool = False) -> None:
        """Journal the unplaced messages that no state will show with an id (a rewrite
        replaces the state first; see ``_journal_lost``), in their order, then what waited
        for them, then the edits that held (their runs are over); what these write without
        an id is given up in turn.

        ``closing``: the journal closes, and the thread may go on with another journal. A
        message whose object no state gave an id may be in the checkpoint under one this
        journal never saw (a stream stopped before any node read the state, a client gone):
        the next journal's first look journals it under that id (see ``_catch_up``), so it
        is not journaled here under one of this journal's (it would show twice)."""
        left = 0
        while self._unplaced or self._deferred:
            lost, self._unplaced = self._unplaced, []
            for entry in lost:
                if closing and type(entry.message.id) is not str:
                    left += 1
                else:
                    self._journal_lost(entry)
            self._awaiting = False
            self._release_deferred()
            if self._held:
                self._apply_held()
        if left:
            _log.warning("journal_messages_unplaced", count=left, left_to="next_look")

    def _journal_lost(self, entry: _Unplaced) -> None:
        """Journal a message written without an id that no state showed with one: under the
        id its object was given in place (by the state holding it: the reducer, a
        summarizer, as the marker names it), else under one made for the journal's copy (the
        user's or the node's object is never changed)."""
        message = entry.message
        if type(message.id) is not str:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        self._add(entry.node, message, entry.caller)

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
            self._unplaced[:0] = pending
            self._awaiting = True
        found.reverse()  # in the state's order
        # the found fill their writers' places in the state's order, the lost keep theirs
        in_state = iter(found)
        placed = {id(entry) for entry, _ in found}
        for entry in entries:
            if id(entry) in placed:
                writer, state_message = next(in_state)
                self._add(writer.node, state_message, writer.caller)
            elif not waiting:
                self._journal_lost(entry)
        return found

    def _may_hold_unseen(self, state: Any) -> bool:
        """Whether the ``messages`` of ``state`` (a node's input) may hold messages no callback
        told the journal of: their count or their last id is not the journal's. Constant time:
        a run that shows the journal every write pays two comparisons a superstep."""
        messages = state.get("messages") if isinstance(state, dict) else None
        if not isinstance(messages, list) or not messages:
            return False
        if len(messages) != len(self._order):
            return True
        return getattr(messages[-1], "id", None) != next(reversed(self._order), None)

    def _journal_unseen(self, run: RunState, messages: list[Any]) -> None:
        """Journal the messages that entered the state in run ``run`` without a callback
        telling the journal (a task LangGraph answered from its cache runs no node), in the
        state's order; the caller then journals the order if they do not end it.

        At the run's first look at the state only what follows its input is the run's: the
        messages before it were there when it started (journaled by an earlier process or
        another journal, or added outside any run). No callback names the node that wrote
        them: they are the agent's, of no node and no step.
        """
        start = 0
        if not run.synced:
            end = run.input_end
            start = len(messages)
            for index, message in enumerate(messages):
                if end is not None and getattr(message, "id", None) == end:
                    start = index + 1
                    break
        unseen = [
            m
            for m in messages[start:]
            if isinstance(m, BaseMessage) and isinstance(m.id, str) and m.id not in self._seen
        ]
        if not unseen:
            return
        holder = Node(run=run, name=run.graph, caller="agent", node=None, step=None)
        fresh = len(self._fresh)
        for message in unseen:
            self._add_ai_or_tool(holder, message)
        # written in an earlier superstep (applied already): not the current step's writes
        del self._fresh[fresh:]

    def _resync(
        self,
        run: RunState,
        state: Any,
        *,
        between_runs: bool = False,
        unapplied: Sequence[str] = (),
        step: int | None = None,
    ) -> bool:
        """Compare the journal's order of the thread's state with the state LangGraph gives a
        node (or the root's output); if they differ — the tasks of a superstep journaled in
        completion order, not the task-path order LangGraph applies, messages another journal
        recorded, a run forked from an earlier checkpoint — journal the state's order (a
        ``message.remove`` whose ``removed_message_ids`` are the journaled messages the state
        no longer holds, usually none: a fork's, a ``RemoveMessage`` of the run's input).
        Messages a fork brings back are not journaled again (replay keeps all it was fed).
        ``between_runs``: the first state a run's nodes read, where what changed since the
        journal's last sight of the thread was written outside its runs (see _catch_up).
        ``unapplied``: ids journaled in the superstep going on (the state gets them after);
        ``step``: that superstep (``None``: the root's output, every write applied).
        Messages of the run no callback told of are journaled first. Returns whether ``state``
        held the messages to compare.
        """
        if not isinstance(state, dict):
            return False
        messages = state.get("messages")
        if not isinstance(messages, list):
            return False
        self._stale = False
        if self._unplaced:
            self._place_inputs(run, messages, step)
        self._journal_unseen(run, messages)  # the run's own, after its input
        if not self._checked or (between_runs and self._checked):
            # the first state this journal sees of the thread, or the first of a run: what
            # entered it outside the runs it followed (the writer drops what the store holds)
            self._catch_up(run, messages)
        truth = state_ids(messages)
        if unapplied:
            known = set(truth)
            truth.extend(mid for mid in unapplied if mid not in known)
        first, self._checked = not self._checked, True
        same = len(truth) == len(self._order) and truth == list(self._order)
        if same and not first:
            return True
        held = set(truth)  # what left the state: the timeline shows it as a removal
        gone = [mid for mid in self._order if mid not in held]
        # journaled messages that had left the state and are back (a fork): readers that
        # narrow a search by the states of earlier edits must still look for them
        restored = [mid for mid in truth if mid in self._seen and mid not in self._order]
        if gone and not run.synced and run.own_ids.issuperset(truth):
            # a state started anew, the run's messages alone (a graph without a checkpointer):
            # nothing left it (a fork's holds messages journaled before the run)
            gone = []
        content: Any = {"all": True, "removed_message_ids": gone, "state_message_ids": truth}
        if restored:
            content["restored_message_ids"] = restored
        if gone and between_runs:
            # what left the state since this journal last saw it may be another journal's
            # doing (a run in another process summarized it away): its events hold that
            args = (self.thread_id, content)
            content = Lazy(self._contents.removal_not_stored, args, reads="state")
        if same:
            # the first state this journal sees of the thread: its order is the journal's,
            # but an earlier process may have journaled a longer state (a graph without a
            # checkpointer starts each run with its input alone): kept where the store holds
            # messages of the thread, by the writer (which reads them)
            content = Lazy(self._contents.if_stored_before, (self.thread_id, content))
        attribution = {"caller": "agent", "langgraph_step": self._step, "langgraph_node": None}
        self._sink.emit(run, "message", REMOVE_EVENT_TYPE, content, attribution)
        self._order = dict.fromkeys(truth)
        return True

    def _journal_edit(self, edit: AppliedEdit, final: list[str] | None) -> None:
        """Journal one applied edit: its marker (or removal), then the messages it added.

        ``final``: the state's ids once the whole step is applied (for the step's last edit).
        """
        node, outcome = edit.node, edit.outcome
        before = set(edit.before)
        # a summary the state held before the edit is an earlier compaction's (kept by a
        # rewrite; after a restart this journal has not seen it), not a new one
        summary = next(
            (
                m
                for m in outcome.messages
                if is_summary(m) and m.id not in self._seen and m.id not in before
            ),
            None,
        )
        shown = [m for m in outcome.messages if not is_summary(m)]
        removal = outcome.removed if not node.summarized else []  # its own event marked it
        # the order replay rebuilds from the events written so far: a rewrite that removes
        # nothing writes no removal, so its order counts only if an event carries it
        rewrite = outcome.order if outcome.rewrite and (removal or node.summarized) else None
        rebuilt = replay_order(list(self._order), outcome.removed, rewrite)
        rebuilt.extend(str(m.id) for m in shown if m.id not in rebuilt)
        target = outcome.order if final is None else final
        reorder = rebuilt != target
        if summary is not None and not node.summarized:
            payload = inferred_summary(edit.before, outcome, summary)
            payload["state_message_ids"] = list(target)
            metadata = {**node.inner_attribution(), "inferred": True}
            self._sink.emit(node.run, "middleware", SUMMARIZE_EVENT_TYPE, payload, metadata)
        elif removal or reorder:
            content: dict[str, Any] = {"removed_message_ids": removal}
            if outcome.rewrite or reorder:
                content = {"all": True, **content, "state_message_ids": list(target)}
            self._sink.emit(node.run, "message", REMOVE_EVENT_TYPE, content, node.attribution())
        for message in outcome.messages:
            mid = str(message.id)
            if is_summary(message):  # the summary lives in the marker, not as a human message
                self._seen.add(mid)
                self._last[mid] = (message, message.content)
                continue
            if mid in before and mid not in self._seen:  # journaled before this process
                self._seen.add(mid)
                self._order[mid] = None  # journaled again only if it changed (the writer)
            self._add(node, message, str(node.caller or "agent"), replace=True)
        self._order = dict.fromkeys(target)
        for message in outcome.unplaced:  # left as written: journaled once a state shows it
            self._add(node, message, str(node.caller or "agent"))
