"""What a thread's journal holds of its messages, and the state's order as journaled.

A :class:`Ledger` journals the ``message.*`` events of one thread as messages enter the
LangGraph state (:meth:`Ledger.add`, each id once unless it is replaced), remembers which
ids are journaled and the state's order as journaled (what replay's state view rebuilds),
holds a superstep's edits until LangGraph applied it and then journals them (see
:mod:`journal._edits`), and compares its order with the states nodes read, journaling the
state's order where they differ and what entered the state without a callback telling of it.
Messages written without an id go to its :class:`journal._placement.Placement`. Callback
path: no I/O; the caller serialises access.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from journal._capture import is_summary
from journal._contents import Contents
from journal._edits import AppliedEdit, HeldWrite, apply_write, settle_step, state_ids
from journal._kinds import scalars_kind
from journal._logging import get_logger
from journal._order_events import edit_event, may_hold_unseen, unseen_of_run, whole_order
from journal._placement import Placement
from journal._queued import Lazy
from journal._run_state import Node, RunState
from journal._sink import EventSink
from journal._tool_order import ToolOrder
from journal.catalog import REMOVE_EVENT_TYPE
from journal.messages import MESSAGE_EVENT_TYPES

__all__ = ["Ledger"]

_log = get_logger(__name__)
#: ``tuple.__new__``: a named tuple's own constructor is a Python-level call (``Lazy``)
_new = tuple.__new__
_MESSAGE = Contents.message  # (one global look-up a message, not two)


class Ledger:
    """The journal of one thread's messages and of the state's order.

    ``_order`` is the state's message ids as journaled; ``_last`` the latest journaled
    object of each id and its content object then (a node that returns the same object, its
    content not replaced, changed nothing); ``_fresh`` the ``(id, task path)`` of the
    messages journaled since the current superstep started; ``_stale`` whether ``_order``
    may differ from the state's and awaits a state to check it against; ``_held`` the edits
    of the current superstep, waiting to be applied. ``placement`` (its own) places the
    messages written without an id; ``tools`` (shared with the caller) orders tool results.
    """

    __slots__ = (
        "_checked",
        "_contents",
        "_fresh",
        "_held",
        "_held_step",
        "_last",
        "_order",
        "_paused_held",
        "_seen",
        "_sink",
        "_stale",
        "_step",
        "_tools",
        "placement",
        "thread_id",
    )

    def __init__(
        self, thread_id: str, sink: EventSink, contents: Contents, tools: ToolOrder[Node]
    ) -> None:
        self.thread_id = thread_id
        self._sink = sink
        self._contents = contents
        self._tools = tools
        self._seen: set[str] = set()
        self._checked = False  # a state of the thread compared with the journal's order
        self._order: dict[str, None] = {}
        self._last: dict[str, tuple[BaseMessage, Any]] = {}
        self._fresh: list[tuple[str, str]] = []
        self._step: int | None = None
        self._stale = False  # the state's order is to be checked at the next state seen
        self._held: list[HeldWrite] = []
        self._held_step: int | None = None
        # results a paused run held back: another journal may resume the run and store them
        self._paused_held: set[str] = set()
        self.placement = Placement(self._seen, self.add, self.settle)

    @property
    def step(self) -> int | None:
        """The superstep a node of the root graph last started in (``None``: none yet)."""
        return self._step

    # -- what happened -------------------------------------------------------------------

    def root_started(self) -> None:
        """A root run starts: nothing is journaled in its step yet, and its order is checked
        at its first step (it is not synced); the step stays (a resumed run re-runs the step
        it paused in)."""
        self._fresh = []
        self._stale = False

    def node_started(self, node: Node, state: Any) -> None:
        """A node of the root graph starts reading ``state`` (``None``: it reads none): the
        supersteps before it are applied, so their held edits are journaled and the
        journal's order is checked against ``state`` where it may differ."""
        new_step = node.step is not None and self._step != node.step
        if new_step:
            # a later superstep: LangGraph applied the earlier one's writes
            if self._held and (self._held_step is None or node.step > self._held_step):  # type: ignore[operator]
                self._apply_held()  # (its messages without an id wait for a state)
            # the journal's order can differ from the state's only after parallel writes,
            # writes it could not place, writes no callback told of (a cached task: see
            # below), or before this run (another journal, a graph without memory)
            check = (
                not node.run.synced
                or bool(self.placement.unplaced)
                or (len(self._fresh) > 1 and len({p for _, p in self._fresh}) > 1)
            )
            self._step = node.step
            self._fresh = []
            # a step's first nodes may read no state (LangGraph starts Send tasks first): the
            # next one that does shows it, else the root's output
            self._stale = self._stale or check
        for message in self._tools.step_started(node.step):
            self.add(node, message, "agent")
        # the state this node reads is the applied state; a task LangGraph answered from its
        # cache ran no callback, so its messages show only there (a cheap look first)
        if state is not None and (
            self._stale or (new_step and may_hold_unseen(state, self._order))
        ):
            run, unapplied = node.run, [mid for mid, _ in self._fresh]  # (this step's so far)
            if self.resync(
                run, state, between_runs=not run.synced, unapplied=unapplied, step=node.step
            ):
                run.synced = True

    def hold(self, write: HeldWrite, step: int | None) -> None:
        """A node of superstep ``step`` wrote an edit: journaled once LangGraph has applied
        the superstep (it may fail)."""
        self._held.append(write)
        self._held_step = step

    def run_ended(self, run: RunState, *, applied: bool) -> None:
        """Root ``run``'s last superstep is over: its held edits are journaled if LangGraph
        ``applied`` it, else dropped (and the drop logged)."""
        if not self._held:
            return
        if applied:
            self._apply_held()
        else:
            _log.warning("journal_edits_not_applied", run_id=run.run_id, count=len(self._held))
            self._held = []

    def settle(self) -> bool:
        """Journal the held edits (their runs are over); return whether there were any."""
        if not self._held:
            return False
        self._apply_held()
        return True

    def held_back(self, ids: Iterable[str]) -> None:
        """A paused run holds back the tool results ``ids``: another journal may resume the
        run and store them (see :meth:`add`)."""
        self._paused_held.update(ids)

    # -- messages entering the state -----------------------------------------------------

    def journal_input(self, user: Node, messages: list[BaseMessage]) -> None:
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
            self.add(user, message, "user", replace=edited)

    def add_ai_or_tool(self, node: Node, message: BaseMessage, caller: str = "agent") -> None:
        """Journal ``message``; a new AI message's tool calls set the order of their results."""
        is_new = message.id not in self._seen
        self.add(node, message, caller, replace=True)
        # (tool_calls_of, written out: the callback path)
        calls = getattr(message, "tool_calls", None) if message.type == "ai" else None
        if calls and is_new:
            for held in self._tools.calls_made([str(c.get("id")) for c in calls]):
                self.add(node, held, "agent")

    def add(
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
        message_type = message.type  # (message_event_type, written out: the callback path)
        event_type = MESSAGE_EVENT_TYPES.get(message_type)
        mid = message.id
        if event_type is None:
            return
        run = node.run
        if mid is None:  # its state id is known once the state is seen (see Placement)
            self.placement.written(node, message, caller)
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
                counts = run.message_counts
                counts[message_type] = counts.get(message_type, 0) + 1
        self._last[mid] = (message, message.content)
        if not in_state:  # a replacement keeps its place in the state
            self._order[mid] = None
            self._fresh.append((mid, node.path))
        # (tool_call_id_of, written out)
        tool_call_id = getattr(message, "tool_call_id", None) if message_type == "tool" else None
        if tool_call_id is not None:
            metadata["tool_call_id"] = tool_call_id
        # the function and its object, not a bound method: one object less to keep
        args = (self._contents, self.thread_id, message, in_state)
        content = _new(Lazy, (_MESSAGE, args, None))
        if mid in self._paused_held:
            self._paused_held.discard(mid)
            if not self._tools.resumed:
                # held back by a paused run this journal did not resume: another journal
                # (another process) may have, finding it in the state and storing it
                held = (self.thread_id, message, in_state)
                content = Lazy(self._contents.message_unless_stored, held, reads="messages")
        kind = scalars_kind(caller, node.step, node.node, mid, tool_call_id)  # replacement: a bool
        self._sink.emit(run, "message", event_type, content, metadata, kind)

    # -- the state's order and its edits (see journal._edits) -----------------------------

    def journal_update(self, user: Node, writes: list[list[BaseMessage]]) -> None:
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
            self.add(user, message, "user", replace=True, own=False)
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

    def journal_unseen(self, run: RunState, messages: list[Any]) -> None:
        """Journal the messages that entered the state in run ``run`` without a callback
        telling the journal (a task LangGraph answered from its cache runs no node), in the
        state's order; the caller then journals the order if they do not end it.

        At the run's first look at the state only what follows its input is the run's: the
        messages before it were there when it started (journaled by an earlier process or
        another journal, or added outside any run). No callback names the node that wrote
        them: they are the agent's, of no node and no step.
        """
        unseen = unseen_of_run(run, messages, self._seen)
        if not unseen:
            return
        holder = Node(run=run, name=run.graph, caller="agent", node=None, step=None)
        fresh = len(self._fresh)
        for message in unseen:
            self.add_ai_or_tool(holder, message)
        # written in an earlier superstep (applied already): not the current step's writes
        del self._fresh[fresh:]

    def resync(
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
        if self.placement.unplaced:
            self.placement.place_inputs(run, messages, step)
        self.journal_unseen(run, messages)  # the run's own, after its input
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
        content: Any = whole_order(self._order, self._seen, truth, run)
        if content["removed_message_ids"] and between_runs:
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
        target = outcome.order if final is None else final
        event = edit_event(edit, list(self._order), self._seen, target)
        if event is not None:
            self._sink.emit(node.run, *event)
        before = set(edit.before)
        for message in outcome.messages:
            mid = str(message.id)
            if is_summary(message):  # the summary lives in the marker, not as a human message
                self._seen.add(mid)
                self._last[mid] = (message, message.content)
                continue
            if mid in before and mid not in self._seen:  # journaled before this process
                self._seen.add(mid)
                self._order[mid] = None  # journaled again only if it changed (the writer)
            self.add(node, message, str(node.caller or "agent"), replace=True)
        self._order = dict.fromkeys(target)
        for message in outcome.unplaced:  # left as written: journaled once a state shows it
            self.add(node, message, str(node.caller or "agent"))
