"""``RunJournal``: a LangChain/LangGraph callback handler that journals every agent run.

Attach one instance to any number of concurrent runs and threads
(``graph.with_config(callbacks=[journal])`` or ``config["callbacks"]``). The thread is the root
run's ``thread_id`` metadata (LangGraph copies ``configurable.thread_id`` there), else the
constructor's ``thread_id``, else the root run id. The run is the root run
(``config["run_id"]`` when given): the outermost chain of a call the journal is attached to,
also when that call is made inside another runnable (a tool, a ``RunnableLambda``).

Guarantees: the callback path does no I/O and never serialises node inputs; events keep the
order they happened in (one buffer; ``created_at`` strictly increases in buffer order); a
background thread writes them (by size, at least every ``flush_interval`` seconds, and when a
run ends, fails or is cancelled); store failures never reach the run (retry under the same
``event_id``, then the spool, see :mod:`journal.spool`); anything dropped is counted in the
run's terminal event (``dropped_events``) and logged.

Event shapes (stable; ``history`` and the middleware rely on them). Every event's metadata of
the trace, message and middleware categories carries ``caller`` (``"agent"``,
``"middleware:<Class>"``, ``"subagent:<graph name>"``, or ``"user"`` for human input),
``langgraph_step`` and ``langgraph_node`` (``None`` when not inside a node).

lifecycle
  ``run.start``      content ``{"graph", "input": {"kind", "keys", "message_count"} | {"kind":
                     "command", "resume"}}``; metadata ``{"thread_id_source"}``, plus
                     ``thread_id_original`` when the thread id was no valid journal id
                     (surrounding spaces, control characters, too long): the run is then
                     journaled under ``journal.events.journal_thread_id(original)``.
  ``run.end``        content ``{"status": "success", "duration_ms", "usage", "usage_by_model",
                     "message_counts", "dropped_events"}``; ``usage`` has ``input_tokens``,
                     ``output_tokens``, ``total_tokens``, ``cache_read_tokens``;
                     ``usage_by_model[model]`` the same plus ``calls``; ``message_counts`` maps
                     ``human``/``ai``/``tool`` to the messages this run journaled.
  ``run.error``      the ``run.end`` content with ``status: "error"``, ``error_type``, ``error``.
                     Once per run (the root's failure), never per nested chain.
  ``run.cancel``     the ``run.end`` content with ``status: "cancelled"`` and ``reason``
                     (``CancelledError`` / ``KeyboardInterrupt``).
  ``run.interrupt``  the ``run.end`` content with ``status: "interrupted"``, ``interrupts``
                     (``[{"id", "value"}]``) and ``checkpoint_id``. A paused run has no
                     ``run.end``: ``run.interrupt`` is its last lifecycle event.
  ``run.resume``     content ``{"checkpoint_id", "status"}``; the resumed run also starts with
                     ``run.start``.

message (content: ``journal.messages.message_to_content(message)``; its ``data.id`` is the id
the message has in the LangGraph state; metadata ``digest``: its digest, see
:mod:`journal.digests`)
  ``message.human``  the run's new input messages, at run start; an id already journaled in
                     the thread is never recorded again (callers that resend the history;
                     after a restart the writer checks the store once per thread), nor is a
                     resent summary message. The messages of a ``Command`` input's
                     ``update`` are new: each is journaled (``message.*`` of its type).
                     Input messages without an id get one in place before LangGraph maps the
                     input, so the state keeps it. metadata ``caller: "user"``.
  ``message.ai`` / ``message.tool``  every new message the root graph's nodes write to
                     ``messages``: model answers, tool results (``ToolMessage``, the messages
                     of a returned ``Command``, error results as ``status: "error"``), in the
                     state's order: the results of parallel calls in the order of the calls.
                     Messages a middleware hook adds (e.g. the result of a call a human
                     rejected) carry ``caller: "middleware:<Class>"``. metadata adds
                     ``message_id`` and, for tools, ``tool_call_id``. Messages of nested
                     graphs (subagents) are not the thread's messages: they appear as traces
                     only, unless the nested graph is a node whose output the parent state
                     takes in.
                     A node that writes a message under an id the state holds replaces it:
                     journaled again with metadata ``replacement: true`` when its content
                     changed (a node that resends the same objects journals nothing).
                     A call whose tool interrupts keeps its place: later results wait for
                     the resumed run; if the journal closes first (a restart), they are
                     journaled at close, ahead of the resumed call's result.
                     A message a node edits in place and writes back is a replacement (its
                     content object changed). A message written in a form the journal cannot
                     give an id (a bare string or tuple as the whole write) is journaled
                     once the state shows the id LangGraph gave it.
                     Known limits: a message mutated in place and not written back is not
                     seen; a rewrite whose list repeats an id keeps it once.
  ``message.remove`` a node's write removed messages (``RemoveMessage``) and it was no
                     summarization: content ``{"removed_message_ids"}`` for removals by id,
                     ``{"all": true, "removed_message_ids", "state_message_ids"}`` for a
                     rewrite (``RemoveMessage(REMOVE_ALL_MESSAGES)`` + a list: the state's
                     order after it; its new messages follow as ``message.*`` events). Edits
                     are journaled once LangGraph applied their superstep (when the next
                     one starts or the root ends; a failed superstep's edits never are), in
                     task-path order; when messages of other tasks of the step interleave,
                     the step's last edit carries the whole order. A ``message.remove`` that
                     removes nothing (``removed_message_ids: []``, ``state_message_ids``)
                     only sets the state's order: written when the state LangGraph hands the
                     next node (or the root's output) is ordered otherwise than the journal
                     recorded it — parallel tasks journaled in completion order, writes of
                     another journal, a graph without a checkpointer; the timeline skips it.
                     An edit before a breakpoint (``interrupt_before``/``after``) is applied
                     when the run pauses; one in a step a task interrupted, on resume.

trace
  ``llm.start``      content ``{"messages": [{"type", "id", "text"} of the last (at most 3)
                     prompt messages, text within 4 KiB], "omitted_messages"}``; metadata
                     adds ``model``, ``parameters`` (scalar invocation parameters),
                     ``message_count``, ``llm_run_id``, ``lc_source``, ``tags`` and
                     ``context``: the exact record of the input (each message's id and
                     digest, and inline the messages the thread's journal does not hold yet;
                     see :mod:`journal.digests`), never cut by a content cap;
                     ``history.replay(..., view="model")`` at its seq rebuilds the input.
  ``llm.end``        content ``{"message_id", "tool_call_count"}``; metadata adds ``model``,
                     ``usage``, ``latency_ms``, ``llm_run_id``.
  ``llm.error``      content ``{"error_type", "error"}``; metadata adds ``model``,
                     ``latency_ms``, ``llm_run_id``.
  ``tool.start``     content ``{"name", "args"}``; metadata adds ``tool_call_id``,
                     ``tool_run_id``.
  ``tool.end``       content ``{"name", "output": {"text" (first 1000 chars), "status",
                     "chars"}}``; metadata adds ``tool_call_id``, ``tool_run_id``,
                     ``duration_ms``.
  ``tool.error``     content ``{"name", "error_type", "error"}``; metadata as ``tool.end``.
  ``custom:<name>``  content: the event's data; metadata adds ``name`` (the raw name; the tag
                     has every character outside ``[A-Za-z0-9_.-/:]`` replaced by ``_``).

middleware
  ``middleware:summarize``  content: the ``summarization`` custom event's payload, as is
                     (it is also recorded as ``custom:summarization``). Only for the root
                     graph's middleware: a subagent's summarization is the trace alone.
                     A rewrite by any other summarization middleware (its injected message
                     has ``additional_kwargs["lc_source"] == "summarization"``: LangChain's
                     ``SummarizationMiddleware`` and its subclasses) is inferred: the same
                     payload fields (``trigger``/``tokens_*`` ``None``) plus
                     ``state_message_ids``, metadata ``inferred: true``. One marker per
                     compaction either way; the summary is never a ``message.human``.
  ``middleware:<tag>``      from :meth:`RunJournal.record_middleware`: content ``{"name",
                     "hook", "action", "changes"}``; metadata ``caller: "middleware:<name>"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final
from uuid import UUID

from langchain_core.messages import BaseMessage
from langgraph.callbacks import GraphInterruptEvent, GraphResumeEvent
from langgraph.errors import GraphBubbleUp, GraphRecursionError

from journal import _capture as cap
from journal._edits import HeldWrite, task_order_key
from journal._journal_core import MAX_TAG_LENGTH
from journal._logging import get_logger
from journal._run_state import Node, RunState
from journal._trace_callbacks import TraceCallbacks
from journal.events import journal_thread_id, validate_event_type

__all__ = ["RunJournal"]

_log = get_logger(__name__)
_CANCEL_ERRORS: Final = (asyncio.CancelledError, KeyboardInterrupt)


class RunJournal(TraceCallbacks):
    """Journals every run it is attached to into ``store`` (see the module docstring).

    Thread-safe and ``run_inline``: one instance serves concurrent sync and async runs.
    Construct it once, attach it to graphs, and call :meth:`close` (or use it as a context
    manager) when done; :meth:`flush` / :meth:`aflush` wait until queued events are stored.
    Keyword options: ``thread_id`` (the thread of runs without thread metadata),
    ``spool_path``, ``flush_interval`` (<= 0.1 s), ``max_batch``, ``max_buffer``,
    ``retry_delays`` (the backoff before a batch goes to the spool), ``close_timeout`` (how
    long :meth:`close` and the interpreter's exit wait for the store before spooling the rest;
    default 5 s).

    A spool left by an earlier process is replayed before the threads it names are written
    again; spooled events are replayed by the journal itself once the store answers again.
    """

    def record_middleware(
        self,
        tag: str,
        *,
        name: str,
        hook: str,
        action: str,
        changes: Any = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Record ``middleware:<tag>`` for the run the calling middleware hook belongs to.

        Call it from inside a hook (the run is found from ``config``, or from LangGraph's
        current config when omitted). Raises ``ValueError`` when no journaled run is found.
        """
        if not isinstance(tag, str):
            raise ValueError(f"tag must be a string, got {type(tag).__name__}")
        try:  # the store's own rule, checked here so a bad tag fails at the call, not later
            validate_event_type("middleware", f"middleware:{tag}")
        except ValueError:
            raise ValueError(
                f"tag {tag!r} is not a middleware tag: 1 to {MAX_TAG_LENGTH} letters, digits and "
                "_ . - / : characters, starting with a letter, digit or _"
            ) from None
        if config is None:
            from langgraph.config import get_config

            try:
                config = get_config()
            except RuntimeError:
                raise ValueError(
                    "record_middleware needs the hook's config: call it inside a hook or pass "
                    "config="
                ) from None
        manager = config.get("callbacks")
        parent = getattr(manager, "parent_run_id", None)
        with self._lock:
            node = self._nodes.get(parent) if parent is not None else None
            if node is None:
                raise ValueError(
                    "record_middleware found no run journaled by this RunJournal for config; "
                    "attach the journal to the graph's callbacks"
                )
            metadata = {**node.attribution(), "caller": f"middleware:{name}"}
            content = {"name": name, "hook": hook, "action": action, "changes": changes}
            self._emit(node.run, "middleware", f"middleware:{tag}", content, metadata)

    # -- chains (root run lifecycle, node outputs) ----------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Root: ``run.start`` and the new human input; node: remember its attribution.

        A chain is a root when this journal does not know its parent: it is attached to that
        call (possibly made inside another runnable), not to its caller.
        """
        name = str(kwargs.get("name") or (serialized or {}).get("name") or "chain")
        with self._lock:
            if parent_run_id in self._finished:
                self._forget(run_id)
                return
            if parent_run_id not in self._roots and parent_run_id not in self._nodes:
                self._start_root(run_id, name, inputs, metadata or {})
                return
            node = self._child(run_id, parent_run_id, name, metadata)
            if node is not None and node.top:
                self._top_node_start(node, inputs, metadata or {})

    def _top_node_start(self, node: Node, inputs: Any, metadata: dict[str, Any]) -> None:
        """A node of the root graph starts: the steps before it are applied."""
        thread = self._threads.get(node.run.thread_id)
        new_step = node.step is not None and thread.step != node.step
        # the journal's order can differ from the state's only after parallel writes, writes
        # it could not place, or before this run (another journal, a graph without memory)
        check = not node.run.synced or bool(thread.unplaced)
        if new_step:
            # a later superstep: LangGraph applied the earlier one's writes
            if thread.held and (thread.held_step is None or node.step > thread.held_step):  # type: ignore[operator]
                self._apply_held(thread)
            check = check or len({path for _, path in thread.fresh}) > 1
            thread.step = node.step
            thread.fresh = []
        tools = thread.tools
        # a later superstep: every call of the earlier step is over
        later = node.step is not None and tools.step is not None and node.step > tools.step
        if tools.pending and later:
            for message in tools.release_all():
                self._emit_message(node, message, "agent")
        if new_step and check:  # the state this node reads is the applied state
            self._resync(thread, node.run, inputs)
            node.run.synced = True
        node.path = task_order_key(metadata.get("langgraph_path") or "")
        if isinstance(inputs, dict):
            base = inputs.get("messages")
            node.base = base if isinstance(base, list) else None

    def _start_root(self, run_id: UUID, name: str, inputs: Any, metadata: dict[str, Any]) -> None:
        thread = metadata.get("thread_id")
        source = "metadata"
        if thread is None:
            thread, source = self.thread_id, "constructor"
        if thread is None:
            thread, source = str(run_id), "run_id"
            _log.warning("journal_run_without_thread", run_id=str(run_id))
        start_metadata: dict[str, Any] = {"thread_id_source": source}
        thread_id = journal_thread_id(str(thread))
        if thread_id != str(thread):  # journaled under a valid stand-in, never dropped
            start_metadata["thread_id_original"] = str(thread)
            _log.warning("journal_thread_id_mapped", run_id=str(run_id), thread_id=thread_id)
        run = RunState(run_id=str(run_id), thread_id=thread_id, graph=name)
        self._roots[run_id] = run
        self._runs_by_id[run.run_id] = run
        content = {"graph": name, "input": cap.input_summary(inputs)}
        self._emit(run, "lifecycle", "run.start", content, start_metadata)
        user = Node(run=run, name=name, caller="user", node=None, step=None)
        command = not isinstance(inputs, dict)  # a Command's update adds every message it has
        thread = self._threads.get(run.thread_id)
        thread.fresh = []  # (the step stays: a resumed run re-runs the step it paused in)
        for message in cap.assign_input_ids(inputs):
            # a resent history's answers and summaries were journaled when they were produced
            if (command or message.type == "human") and not cap.is_summary(message):
                self._emit_message(user, message, "user")
            else:
                mid = str(message.id)
                thread.seen.add(mid)
                thread.order[mid] = None
                thread.last[mid] = (message, message.content)

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Node of the root graph: journal the messages it writes. Root: ``run.end``."""
        with self._lock:
            run = self._roots.get(run_id)
            if run is not None:
                self._finish_root(run_id, run, "run.end", run.summary("success"), state=outputs)
                return
            node = self._nodes.pop(run_id, None)
            if node is None or not node.top:
                return
            if cap.removes_messages(outputs):
                # an edit: journaled once LangGraph has applied the superstep (it may fail)
                thread = self._threads.get(node.run.thread_id)
                held = HeldWrite(node, node.path, cap.output_writes(outputs), node.base)
                thread.held.append(held)
                thread.held_step = node.step
            elif node.caller == "agent":
                self._node_messages(node, outputs)
            else:
                self._middleware_messages(node, outputs)
            node.base = None  # the state it read is not ours to keep

    def _node_messages(self, node: Node, outputs: Any) -> None:
        """Journal an agent node's new messages; tool results wait for earlier calls."""
        tools = self._threads.get(node.run.thread_id).tools
        answered = False
        for message in cap.output_messages(outputs):
            call_id = getattr(message, "tool_call_id", None)
            if message.type == "tool" and call_id is not None:
                answered = answered or call_id == node.tool_call_id
                tools.step = node.step
                ready = tools.complete(call_id, [message])
            else:
                ready = [message]
            for item in ready:
                self._emit_ai_or_tool(node, item)
        if node.tool_call_id is not None and not answered:
            tools.step = node.step
            for item in tools.complete(node.tool_call_id, []):  # e.g. a Command without messages
                self._emit_message(node, item, "agent")

    def _middleware_messages(self, node: Node, outputs: Any) -> None:
        """Journal new messages a middleware hook adds (e.g. a rejected call's tool result).

        They enter the state at the hook's step, before any later tool result, so they are
        journaled at once and their call stops holding later results back.
        """
        tools = self._threads.get(node.run.thread_id).tools
        for message in cap.output_messages(outputs):
            self._emit_ai_or_tool(node, message, str(node.caller))
            if message.type == "tool":
                for item in tools.settle(getattr(message, "tool_call_id", None)):
                    self._emit_message(node, item, "agent")

    def _emit_ai_or_tool(self, node: Node, message: BaseMessage, caller: str = "agent") -> None:
        """Journal ``message``; a new AI message's tool calls set the order of their results."""
        is_new = message.id not in self._threads.get(node.run.thread_id).seen
        self._emit_message(node, message, caller, replace=True)
        calls = getattr(message, "tool_calls", None)
        if message.type == "ai" and calls and is_new:
            tools = self._threads.get(node.run.thread_id).tools
            for held in tools.expect([str(c.get("id")) for c in calls]):
                self._emit_message(node, held, "agent")

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Root only: ``run.cancel`` (cancellation), ``run.interrupt`` or one ``run.error``."""
        with self._lock:
            run = self._roots.get(run_id)
            if run is None:
                node = self._nodes.pop(run_id, None)
                if node is not None and node.top and isinstance(error, GraphBubbleUp):
                    node.run.task_interrupted = True  # its step is not applied until resumed
                # an interrupted call is answered when the run resumes: keep its place
                if (
                    node is not None
                    and node.tool_call_id is not None
                    and not isinstance(error, GraphBubbleUp)
                ):
                    tools = self._threads.get(node.run.thread_id).tools
                    for item in tools.complete(node.tool_call_id, []):
                        self._emit_message(node, item, "agent")
                return
            if isinstance(error, _CANCEL_ERRORS):
                content = {**run.summary("cancelled"), "reason": type(error).__name__}
                self._finish_root(run_id, run, "run.cancel", content, applied=False)
            elif type(error).__name__ in {"GraphInterrupt", "NodeInterrupt"}:
                self._finish_root(run_id, run, "run.interrupt", self._interrupt_content(run, ()))
            else:
                content = {**run.summary("error"), **cap.error_summary(error)}
                # out of steps: raised after the last superstep was applied
                applied = isinstance(error, GraphRecursionError)
                self._finish_root(run_id, run, "run.error", content, applied=applied)

    def _finish_root(
        self,
        run_id: UUID,
        run: RunState,
        event_type: str,
        content: dict[str, Any],
        applied: bool = True,
        state: Any = None,
    ) -> None:
        """End a root run; ``applied``: LangGraph applied its last superstep's writes;
        ``state``: the root's output (the final state of a graph)."""
        del self._roots[run_id]
        self._runs_by_id.pop(run.run_id, None)
        paused = run.interrupted or event_type == "run.interrupt"
        thread = self._threads.get(run.thread_id)
        # a step a task paused in is applied when the run resumes; at a breakpoint
        # (interrupt_before/after) LangGraph applied the step before pausing
        if thread.held and not (paused and run.task_interrupted):
            if applied or paused:
                self._apply_held(thread)
            else:
                _log.warning("journal_edits_not_applied", run_id=run.run_id, count=len(thread.held))
                thread.held = []
        tools = thread.tools
        holder = Node(run=run, name=run.graph, caller="agent", node=None, step=None)
        if paused:  # its calls are answered when it resumes: keep their order (or see close)
            tools.paused = holder
        else:
            for message in tools.release_all():
                self._emit_message(holder, message, "agent")
            self._resync(thread, run, state)
        if not (run.interrupted and event_type in {"run.end", "run.interrupt"}):
            self._emit(run, "lifecycle", event_type, content, {})
        run.finished = True
        self._forget(run_id)
        for key in [k for k, n in self._nodes.items() if n.run is run]:
            del self._nodes[key]
            self._forget(key)
        self._writer.wake()

    # -- human in the loop -----------------------------------------------------------------

    def _interrupt_content(self, run: RunState, interrupts: Any) -> dict[str, Any]:
        items = [
            {"id": getattr(i, "id", None), "value": getattr(i, "value", i)} for i in interrupts
        ]
        return {**run.summary("interrupted"), "interrupts": items, "checkpoint_id": None}

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        """The root graph paused for a human: ``run.interrupt`` (its last lifecycle event)."""
        with self._lock:
            run = self._roots.get(event.run_id) if event.run_id is not None else None
            if run is None or event.checkpoint_ns or run.interrupted:
                return
            content = {
                **self._interrupt_content(run, event.interrupts),
                "checkpoint_id": event.checkpoint_id,
            }
            self._emit(run, "lifecycle", "run.interrupt", content, {})
            run.interrupted = True

    def on_resume(self, event: GraphResumeEvent) -> None:
        """The root graph resumed from a checkpoint: ``run.resume``."""
        with self._lock:
            run = self._roots.get(event.run_id) if event.run_id is not None else None
            if run is None or event.checkpoint_ns:
                return
            content = {"checkpoint_id": event.checkpoint_id, "status": event.status}
            self._emit(run, "lifecycle", "run.resume", content, {})
