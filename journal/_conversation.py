"""What a ``RunJournal`` knows of one conversation, and how messages enter its journal.

A :class:`Conversation` is told what happened in the thread's runs — a root started with its
input, a node of the root graph started or wrote its output, a tools task failed, a root
finished, an ``update_state``, a summary marker, the journal closes — and journals the
``message.*`` events (and edits, see :mod:`journal._edits`) in the order the messages enter
the LangGraph state. It remembers the thread's latest run (what an ``update_state`` between
runs is journaled under) and delegates to its parts, each owning its state: a
:class:`journal._ledger.Ledger` (which message ids are journaled, the state's order as
journaled, the edits of the current superstep, held until LangGraph applied it), its
:class:`journal._placement.Placement` (messages written without an id, and what waits for
them), and a :class:`journal._tool_order.ToolOrder` (which tool results wait for earlier
calls). Callback path: no I/O; the caller serialises access.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from journal._capture import NodeWrites
from journal._contents import Contents
from journal._edits import OVERWRITTEN, HeldWrite
from journal._ledger import Ledger
from journal._run_state import Node, RunState
from journal._sink import EventSink
from journal._tool_order import ToolOrder
from journal.catalog import SUMMARIZE_EVENT_TYPE

__all__ = ["Conversation"]


def _rewrites(write: Sequence[BaseMessage]) -> bool:
    """Whether a write replaces the whole state (an overwrite, a ``REMOVE_ALL_MESSAGES``)."""
    return any(m.type == "remove" and m.id == REMOVE_ALL_MESSAGES for m in write)


class Conversation:
    """The journal's memory of one thread, reacting to what its runs do.

    ``_ledger`` journals the messages and the state's order; ``_placement`` (the ledger's)
    holds the messages written without an id and what happened after them (the nodes'
    writes, a summary marker, a later run's input or update: done once they are placed);
    ``_tools`` orders tool results; ``_run`` is the thread's latest root run; ``_updates``
    the writes of ``update_state`` calls made before this journal followed a run of the
    thread (journaled with the next one).
    """

    __slots__ = ("_ledger", "_placement", "_run", "_sink", "_tools", "_updates", "thread_id")

    def __init__(self, thread_id: str, sink: EventSink, contents: Contents) -> None:
        self.thread_id = thread_id
        self._sink = sink
        self._tools: ToolOrder[Node] = ToolOrder()
        self._ledger = Ledger(thread_id, sink, contents, self._tools)
        self._placement = self._ledger.placement
        self._run: RunState | None = None
        self._updates: list[list[BaseMessage]] = []

    # -- what happened -------------------------------------------------------------------

    def root_started(self, user: Node, messages: list[BaseMessage]) -> None:
        """A root run started with input ``messages`` (led by ``OVERWRITTEN``: they replace
        the state). ``user`` carries the run and its attribution."""
        self._run = user.run
        ledger = self._ledger
        if self._updates:  # made before this journal followed a run: they come first
            updates, self._updates = self._updates, []
            ledger.journal_update(user, updates)
        ledger.root_started()
        tail = messages[-1] if messages else None
        if tail is not None and tail is not OVERWRITTEN and isinstance(tail.id, str):
            user.run.input_end = tail.id
        if messages and messages[0] is OVERWRITTEN:  # a rewrite, as a node's would be
            self._placement.give_up()  # an earlier run's unplaced ones leave the state now
            ledger.journal_update(user, [messages])
            return
        if self._placement.unplaced:  # an earlier run's enter the state first
            ids = frozenset(m.id for m in messages if isinstance(m.id, str))
            self._placement.defer(partial(ledger.journal_input, user, messages), ids)
            return
        ledger.journal_input(user, messages)

    def node_started(self, node: Node, state: Any, path: str) -> None:
        """A node of the root graph starts (task path ``path``): the steps before it are
        applied; ``state`` is the state it reads, ``None`` when its input is none (a
        ``Send``'s argument, the run's input): it cannot show the state's order."""
        if self._placement.unplaced and isinstance(state, dict):
            self._placement.place_inputs(node.run, state.get("messages"), node.step)
        self._ledger.node_started(node, state)
        node.path = path
        base = state.get("messages") if isinstance(state, dict) else None
        node.base = base if isinstance(base, list) else None

    def node_ended(self, node: Node, written: NodeWrites) -> None:
        """A node of the root graph ended having ``written`` its output: journal the
        messages it writes."""
        if self._placement.awaiting:  # they enter the state after what awaits its id
            ids = frozenset(m.id for m in written.messages() if isinstance(m.id, str))
            self._placement.defer(partial(self.node_ended, node, written), ids)
            return
        if written.removes:
            # an edit: journaled once LangGraph has applied the superstep (it may fail)
            self._ledger.hold(HeldWrite(node, node.path, written.writes, node.base), node.step)
        elif node.caller == "agent":
            self._agent_messages(node, written.messages())
        else:
            self._middleware_messages(node, written.messages())
        node.base = None  # the state it read is not ours to keep

    def task_failed(self, node: Node) -> None:
        """A node answering a tool call failed: later results no longer wait for it."""
        for item in self._tools.call_failed(node.tool_call_id):
            self._ledger.add(node, item, "agent")

    def root_finished(self, run: RunState, *, applied: bool, paused: bool, state: Any) -> None:
        """A root run ended (``paused``: for a human). ``applied``: LangGraph applied its last
        superstep's writes; ``state``: the root's output (the final state of a graph)."""
        # the output is the state once the run's writes are applied, unless a task paused
        # the run: then its step's writes wait for the resumed run
        step = self._ledger.step if paused and run.task_interrupted else None
        if self._placement.awaiting and isinstance(state, dict):  # it shows ids writes gave
            self._placement.place_inputs(run, state.get("messages"), step)
        # else (a stopped stream, a failed run) the next state seen places them, then what
        # the run wrote meanwhile: a later run's look, or its rewrite, or the journal's close
        # a step a task paused in is applied when the run resumes; at a breakpoint
        # (interrupt_before/after) LangGraph applied the step before pausing
        if not (paused and run.task_interrupted):
            self._ledger.run_ended(run, applied=applied or paused)
        holder = Node(run=run, name=run.graph, caller="agent", node=None, step=None)
        if paused:  # its calls are answered when it resumes: keep their order (or see close)
            self._tools.run_paused(holder)
            self._ledger.held_back(self._tools.held_ids())
            # at a breakpoint its output is the applied state: what no callback told of is
            # journaled now (a task's interrupt leaves its step's writes to the resumed run)
            messages = state.get("messages") if isinstance(state, dict) else None
            if isinstance(messages, list):
                self._placement.place_inputs(run, messages, step)  # applied (a breakpoint)
                if not run.task_interrupted:
                    self._ledger.journal_unseen(run, messages)
        else:
            for message in self._tools.run_ended():
                self._ledger.add(holder, message, "agent")
            self._ledger.resync(run, state, between_runs=not run.synced)

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
        if self._placement.unplaced:  # a run's unplaced messages: they are in the state first
            if any(_rewrites(write) for write in writes):
                self._placement.give_up()  # they leave it now
            else:
                ids = frozenset(
                    m.id for w in writes for m in w if m.type != "remove" and isinstance(m.id, str)
                )
                self._placement.defer(partial(self._ledger.journal_update, user, writes), ids)
                return
        self._ledger.journal_update(user, writes)

    def summary_marked(self, run: RunState, payload: Any, attribution: dict[str, Any]) -> None:
        """A summarization middleware reported its compaction (``payload``, see
        :mod:`middleware.summarization`): its marker, journaled after the messages it
        replaced (the user's, awaiting their ids, too)."""
        if self._placement.awaiting:
            self._placement.defer(partial(self.summary_marked, run, payload, attribution))
            return
        self._sink.emit(run, "middleware", SUMMARIZE_EVENT_TYPE, payload, attribution)

    def closing(self) -> None:
        """The journal closes: journal the tool results and edits paused runs still hold.

        A run resumed by another journal (after a restart) cannot release them, and they are
        already in the checkpoint's pending writes. What waited for messages written without
        an id is journaled; those no state showed with an id are left to the thread's next
        look (see :meth:`journal._placement.Placement.give_up`).
        """
        self._placement.give_up(closing=True)
        if self._ledger.settle():
            self._placement.give_up(closing=True)  # what they write without an id
        holder, due = self._tools.closing()
        for message in due:
            if holder is not None:
                self._ledger.add(holder, message, "agent")

    # -- node outputs --------------------------------------------------------------------

    def _agent_messages(self, node: Node, messages: list[BaseMessage]) -> None:
        """Journal an agent node's new ``messages``; tool results wait for earlier calls."""
        answered = False
        for message in messages:
            # (tool_call_id_of, written out: the callback path)
            call_id = getattr(message, "tool_call_id", None) if message.type == "tool" else None
            if call_id is None:  # (no list of one: the callback path)
                self._ledger.add_ai_or_tool(node, message)
                continue
            answered = answered or call_id == node.tool_call_id
            for item in self._tools.result_written(call_id, [message], node.step):
                self._ledger.add_ai_or_tool(node, item)
        if node.tool_call_id is not None and not answered:  # e.g. a Command without messages
            for item in self._tools.result_written(node.tool_call_id, [], node.step):
                self._ledger.add(node, item, "agent")

    def _middleware_messages(self, node: Node, messages: list[BaseMessage]) -> None:
        """Journal new messages a middleware hook adds (e.g. a rejected call's tool result).

        They enter the state at the hook's step, before any later tool result, so they are
        journaled at once and their call stops holding later results back.
        """
        for message in messages:
            self._ledger.add_ai_or_tool(node, message, str(node.caller))
            if message.type == "tool":
                for item in self._tools.answered_elsewhere(getattr(message, "tool_call_id", None)):
                    self._ledger.add(node, item, "agent")
