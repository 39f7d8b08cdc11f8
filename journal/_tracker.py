"""The roots, nodes and conversations of a ``RunJournal``: what happened, and what to journal.

:class:`RunTracker` knows no callback signatures: the callback surface
(:class:`journal.run_journal.RunJournal`) tells it what happened — a chain, a model call, a
tool call started, ended or failed; a custom event; a pause or a resume — with plain values.
It keeps the runs it journals (a *root* is the outermost chain of a call the journal is
attached to; every run under it is a :class:`journal._run_state.Node`), attributes each event
(caller, step, node, parent span), queues lifecycle and trace events on the
:class:`journal._sink.EventSink` and hands the thread's messages to its
:class:`journal._conversation.Conversation`. A graph's ``update_state`` (a chain LangGraph runs
outside any run) is no root: it hands its writes to the conversation.

Thread-safe: one non-blocking lock around each happening; callback path, so no I/O.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, NamedTuple
from uuid import UUID

from langchain_core.messages import BaseMessage
from langgraph.constants import START
from langgraph.errors import GraphBubbleUp, GraphRecursionError

from journal import _capture as cap
from journal._contents import Contents, ModelOutput
from journal._conversation import Conversation
from journal._edits import task_order_key
from journal._logging import get_logger
from journal._queued import Lazy
from journal._registry import RunRegistry
from journal._run_state import Node, RunState, SpinLock, ThreadStates, internal_caller
from journal._sink import EventSink
from journal.catalog import (
    PARENT_SPAN_KEY,
    SUMMARIZATION_EVENT,
    sanitize_tag,
)
from journal.encoding import PLAIN, plain_kind
from journal.events import MAX_EVENT_TYPE_LENGTH, journal_thread_id

__all__ = ["MAX_TAG_LENGTH", "RunTracker", "event_tag"]

_log = get_logger(__name__)
#: ``tuple.__new__``: a named tuple's own constructor is a Python-level call (``Lazy``)
_new = tuple.__new__
#: Thrown into a graph's stream that its caller stopped (``close``, ``aclose``, or a ``break``
#: that drops it). LangGraph yields only between tasks or supersteps and, leaving, saves every
#: finished task's writes whatever the durability: applied, or pending writes that
#: ``get_state`` shows applied and a resumed run applies.
_STREAM_STOPPED: Final = GeneratorExit
_CANCEL_ERRORS: Final = (asyncio.CancelledError, KeyboardInterrupt, _STREAM_STOPPED)
_INTERRUPT_ERRORS: Final = frozenset({"GraphInterrupt", "NodeInterrupt"})
_NOTHING_WRITTEN: Final[frozenset[str]] = frozenset()
_ROOT_ATTRIBUTION: Final = {"caller": "agent", "langgraph_step": None, "langgraph_node": None}
#: Longest tag of a ``family:<tag>`` event type this journal writes (room for the family).
MAX_TAG_LENGTH: Final = MAX_EVENT_TYPE_LENGTH - len("middleware:")
#: How LangGraph names the chain that runs an ``update_state``'s writers: the graph's name and
#: this (``Pregel.bulk_update_state``); it has no other mark, and runs outside any run.
_UPDATE_STATE_SUFFIX: Final = "UpdateState"


class _Update(NamedTuple):
    """An ``update_state`` going on: its thread and what it writes to ``messages``."""

    thread_id: str
    writes: list[list[BaseMessage]]


def event_tag(name: str) -> str:
    """``name`` as a valid event tag: unusable characters become ``_``, cut to the limit."""
    return sanitize_tag(name, MAX_TAG_LENGTH)


class RunTracker:
    """Follows every run a journal is attached to and journals what happens in it."""

    def __init__(self, sink: EventSink, contents: Contents) -> None:
        self._sink = sink
        self._contents = contents
        self._lock = SpinLock()
        self._runs = RunRegistry()
        self._updates: dict[UUID, _Update] = {}  # update_state chains going on
        self._threads: ThreadStates[Conversation] = ThreadStates(
            lambda thread_id: Conversation(thread_id, sink, contents)
        )

    # -- chains: roots and the nodes of their graphs ----------------------------------------

    def chain_started(
        self,
        run_id: UUID,
        parent_id: UUID | None,
        name: str,
        inputs: Any,
        metadata: dict[str, Any],
        default_thread: str | None,
    ) -> None:
        """A chain started: a root (its parent is unknown to this journal: it is attached to
        that call) with ``run.start`` and its new input, or a node under a journaled root."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            if self._runs.finished(parent_id):
                self._runs.forget(run_id)
                return
            node = self._runs.add_child(run_id, parent_id, name, metadata)
            if node is None:  # its parent is not journaled here: the journal is attached to it
                if name.endswith(_UPDATE_STATE_SUFFIX):
                    self._start_update(run_id, inputs, metadata, default_thread)
                else:
                    self._start_root(run_id, name, inputs, metadata, default_thread)
                return
            if node.top:
                path = task_order_key(metadata.get("langgraph_path") or "")
                state = inputs if cap.reads_state(metadata) else None
                self._threads.get(node.run.thread_id).node_started(node, state, path)
        finally:
            lock.release()

    def chain_ended(self, run_id: UUID, outputs: Any) -> None:
        """A chain ended: a node of the root graph journals what it wrote; a root ``run.end``."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            update = self._updates.pop(run_id, None) if self._updates else None
            if update is not None:  # LangGraph took its writes (its output is only them)
                self._threads.get(update.thread_id).state_updated(update.writes)
                self._sink.wake()
                return
            node = self._runs.pop(run_id)  # (a node first: 200 node ends a run for one root's)
            if node is not None:
                if node.top:
                    self._node_wrote(node, outputs)
                return
            run = self._runs.root(run_id)
            if run is not None:
                self._finish_root(run_id, run, "run.end", run.summary("success"), state=outputs)
        finally:
            lock.release()

    def chain_failed(self, run_id: UUID, error: BaseException) -> None:
        """A chain failed: a root ends with ``run.cancel``, ``run.interrupt`` or one
        ``run.error`` (whose metadata names the first node step of the root graph that
        raised and was not retried with success); a node that answered a tool call stops
        holding later results. A node of the root graph that raised a
        ``Command(graph=Command.PARENT)`` for the root graph (a handoff out of a subgraph)
        wrote its update."""
        with self._lock:
            if self._updates and self._updates.pop(run_id, None) is not None:  # nothing written
                return
            run = self._runs.root(run_id)
            if run is None:
                node = self._runs.pop(run_id)
                if node is None:
                    return
                command = cap.parent_command(error, node.namespace, node.node) if node.top else None
                if command is not None:  # the root graph applies it as the node's writes
                    self._node_wrote(node, command)
                    return
                if node.top:
                    self._node_over(node, _NOTHING_WRITTEN)
                bubble = isinstance(error, GraphBubbleUp)
                cancelled = isinstance(error, _CANCEL_ERRORS)  # e.g. a parallel task's failure
                if node.top and bubble:
                    node.run.task_interrupted = True  # its step is not applied until resumed
                if node.top and (bubble or cancelled):  # this attempt did not fail the run
                    node.run.task_settled(node.task_key())
                elif node.top:
                    where = {**node.attribution(), PARENT_SPAN_KEY: node.span}
                    node.run.task_raised(node.task_key(), where)
                # an interrupted call is answered when the run resumes: keep its place
                if node.tool_call_id is not None and not bubble:
                    self._threads.get(node.run.thread_id).task_failed(node)
                return
            if isinstance(error, _CANCEL_ERRORS):
                content = {**run.summary("cancelled"), "reason": type(error).__name__}
                # a stopped stream keeps its last step (a later run's resync corrects it if
                # LangGraph drops those pending writes for a new input)
                applied = isinstance(error, _STREAM_STOPPED)
                self._finish_root(run_id, run, "run.cancel", content, applied)
            elif type(error).__name__ in _INTERRUPT_ERRORS:
                self._finish_root(run_id, run, "run.interrupt", _interrupt_content(run, ()))
            else:
                content = {**run.summary("error"), **cap.error_summary(error)}
                # out of steps: raised after the last superstep was applied
                applied = isinstance(error, GraphRecursionError)
                where = run.failed_node() or {}  # the node step that raised, if one did
                self._finish_root(run_id, run, "run.error", content, applied, metadata=where)

    def run_interrupted(
        self, run_id: UUID | None, checkpoint_ns: Any, interrupts: Sequence[Any], checkpoint_id: Any
    ) -> None:
        """The root graph paused for a human: ``run.interrupt`` (its last lifecycle event)."""
        with self._lock:
            run = self._runs.root(run_id)
            if run is None or checkpoint_ns or run.interrupted:
                return
            content = {**_interrupt_content(run, interrupts), "checkpoint_id": checkpoint_id}
            self._sink.emit(run, "lifecycle", "run.interrupt", content, {})
            run.interrupted = True

    def run_resumed(
        self, run_id: UUID | None, checkpoint_ns: Any, checkpoint_id: Any, status: Any
    ) -> None:
        """The root graph resumed from a checkpoint: ``run.resume``."""
        with self._lock:
            run = self._runs.root(run_id)
            if run is None or checkpoint_ns:
                return
            content = {"checkpoint_id": checkpoint_id, "status": status}
            self._sink.emit(run, "lifecycle", "run.resume", content, {})

    # -- model calls, tool calls, other runs ------------------------------------------------

    def model_started(
        self,
        run_id: UUID,
        parent_id: UUID | None,
        model: str,
        parameters: dict[str, Any],
        prompt: list[BaseMessage],
        tags: list[str],
        metadata: dict[str, Any],
    ) -> None:
        """A model call started: ``llm.start`` (the record of its input built by the writer)."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            node = self._runs.add_child(run_id, parent_id, model, metadata, traced=True)
            if node is None:
                return
            node.model = model
            source = metadata.get("lc_source")
            if source is not None and node.caller == "agent":  # a middleware's own call
                node.caller, node.kind = internal_caller(source), -1
            event_md = {  # (node.call_attribution(), written out: the callback path)
                "caller": node.caller,
                "langgraph_step": node.step,
                "langgraph_node": node.node,
                PARENT_SPAN_KEY: node.parent_span,
                "model": model,
                "parameters": parameters,
                "message_count": len(prompt),
                "llm_run_id": node.span,
                "lc_source": source,
                "tags": tags,
            }
            # message_count: a length; llm_run_id: the span; parameters: the caller's own
            params_kind = plain_kind(parameters) if parameters else PLAIN
            kind = node.event_kind(model, source, *tags, kind=params_kind)
            # the ids as sent: the writer records each message as it was sent (see _ID)
            args = (self._contents, node.run.thread_id, str(node.caller), node.span, prompt,
                    list(map(_ID, prompt)))  # fmt: skip
            # the function and its object, not a bound method: one object less to keep
            content = _new(Lazy, (Contents.model_call, args, None))
            self._sink.emit(node.run, "trace", "llm.start", content, event_md, kind)
        finally:
            lock.release()

    def model_ended(self, run_id: UUID, response: cap.ModelResponse) -> None:
        """A model call answered: ``llm.end`` with usage under the model the response names,
        and the answer itself unless the node that made the call writes it to the thread's
        state (journaled as ``message.*``); usage adds to the run's totals."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            done = self._runs.done(run_id)
            if done is None:
                return
            node, latency = done
            requested = node.model or "unknown"
            model = response.model or requested
            if response.usage:
                node.run.add_usage(model, response.usage)
            metadata = {  # (node.call_attribution(), written out: the callback path)
                "caller": node.caller,
                "langgraph_step": node.step,
                "langgraph_node": node.node,
                PARENT_SPAN_KEY: node.parent_span,
                "latency_ms": latency,
                "model": model,
                "request_model": requested,
                "usage": response.usage,
                "llm_run_id": node.span,
            }
            # usage: ints below 2**54 under fixed keys (cap.model_response), plain by making
            kind = node.event_kind(model, requested, span=latency)
            message = response.message
            content: Any = {
                "message_id": getattr(message, "id", None),
                "tool_call_count": len(getattr(message, "tool_calls", None) or ()),
            }
            if isinstance(message, BaseMessage):
                content = ModelOutput(content, message)
                holder = node.deciding_node()
                if holder is None:
                    content.settle(keep=True)
                elif holder.outputs is None:  # its node says, when it ends, if it wrote it
                    holder.outputs = [content]
                else:
                    holder.outputs.append(content)
            self._sink.emit(node.run, "trace", "llm.end", content, metadata, kind)
        finally:
            lock.release()

    def model_failed(self, run_id: UUID, error: BaseException) -> None:
        """A model call failed: ``llm.error`` (the run's ``run.error`` comes from the root)."""
        with self._lock:
            done = self._runs.done(run_id)
            if done is not None:
                node, latency = done
                metadata = node.call_attribution()
                metadata.update(latency_ms=latency, model=node.model, llm_run_id=node.span)
                kind = node.event_kind(node.model, span=latency)
                content = cap.error_summary(error)
                self._sink.emit(node.run, "trace", "llm.error", content, metadata, kind)

    def tool_started(
        self,
        run_id: UUID,
        parent_id: UUID | None,
        name: str,
        call_id: str | None,
        args: Any,
        metadata: dict[str, Any] | None,
    ) -> None:
        """A tool call started: ``tool.start`` with its name and arguments."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            node = self._runs.add_child(run_id, parent_id, name, metadata, tool=True)
            if node is None:
                return
            node.tool_call_id = call_id
            parent = self._runs.node(parent_id)
            if parent is not None and parent.top and parent.tool_call_id is None:
                parent.tool_call_id = call_id  # the tools task this call belongs to
            event_md = {  # (node.call_attribution(), written out: the callback path)
                "caller": node.caller,
                "langgraph_step": node.step,
                "langgraph_node": node.node,
                PARENT_SPAN_KEY: node.parent_span,
                "tool_call_id": call_id,
                "tool_run_id": node.span,
            }
            kind = node.event_kind(call_id)
            content = {"name": name, "args": args}
            self._sink.emit(node.run, "trace", "tool.start", content, event_md, kind)
        finally:
            lock.release()

    def tool_ended(self, run_id: UUID, output: Any) -> None:
        """A tool call returned: ``tool.end`` (the result message comes from its node)."""
        lock = self._lock  # (taken written out: the callback path, see SpinLock)
        if not lock.poll(False):
            lock.acquire()
        try:
            done = self._runs.done(run_id)
            if done is not None:
                node, duration = done
                metadata = {  # (_tool_call_metadata, written out: the callback path)
                    "caller": node.caller,
                    "langgraph_step": node.step,
                    "langgraph_node": node.node,
                    PARENT_SPAN_KEY: node.parent_span,
                    "duration_ms": duration,
                    "tool_call_id": node.tool_call_id,
                    "tool_run_id": node.span,
                }
                content = _new(Lazy, (Contents.tool_end, (node.name, output), None))
                kind = node.event_kind(node.tool_call_id, span=duration)
                self._sink.emit(node.run, "trace", "tool.end", content, metadata, kind)
        finally:
            lock.release()

    def tool_failed(self, run_id: UUID, error: BaseException) -> None:
        """A tool call raised: ``tool.error`` with its duration and the error."""
        with self._lock:
            done = self._runs.done(run_id)
            if done is not None:
                node, duration = done
                metadata = _tool_call_metadata(node, duration)
                content = {"name": node.name, **cap.error_summary(error)}
                kind = node.event_kind(node.tool_call_id, span=duration)
                self._sink.emit(node.run, "trace", "tool.error", content, metadata, kind)

    def other_started(
        self, run_id: UUID, parent_id: UUID | None, name: str, metadata: dict[str, Any] | None
    ) -> None:
        """A run that writes no event started (a retriever): what it runs stays in the run."""
        with self._lock:
            self._runs.add_child(run_id, parent_id, name, metadata)

    def other_ended(self, run_id: UUID) -> None:
        """A run that writes no event ended or failed."""
        with self._lock:
            self._runs.pop(run_id)

    # -- custom events and middleware -------------------------------------------------------

    def custom_event(self, name: str, data: Any, run_id: UUID) -> None:
        """A custom event in a journaled run: ``custom:<tag>``; the ``summarization`` event of
        a node of the root graph is also its ``middleware:summarize`` marker."""
        with self._lock:
            node = self._runs.node(run_id)
            run = node.run if node is not None else self._runs.root(run_id)
            if run is None:
                return
            attribution = _ROOT_ATTRIBUTION | {PARENT_SPAN_KEY: run.run_id}
            if node is not None:  # the event happens inside that run
                attribution = node.inner_attribution()
            event_md = {**attribution, "name": name}
            self._sink.emit(run, "trace", f"custom:{event_tag(str(name))}", data, event_md)
            # a subagent's compaction changes its own state, not the thread's: a trace only
            if name == SUMMARIZATION_EVENT and (node is None or node.top):
                if node is not None:
                    node.summarized = True  # its rewrite is this marker, not another
                self._threads.get(run.thread_id).summary_marked(run, data, attribution)

    def middleware_recorded(self, hook_run: UUID | None, tag: str, content: Any, name: str) -> None:
        """A middleware hook (run ``hook_run``) recorded ``middleware:<tag>``; ``ValueError``
        when the hook's run is not journaled here."""
        with self._lock:
            node = self._runs.node(hook_run)
            if node is None:
                raise ValueError(
                    "record_middleware found no run journaled by this RunJournal for config; "
                    "attach the journal to the graph's callbacks"
                )
            metadata = {**node.inner_attribution(), "caller": f"middleware:{name}"}
            self._sink.emit(node.run, "middleware", f"middleware:{tag}", content, metadata)

    def closing(self) -> None:
        """The journal closes: paused runs' held results and edits are journaled now."""
        with self._lock:
            for node in self._runs.going():
                self._node_over(node, _NOTHING_WRITTEN)
            for conversation in self._threads.values():
                conversation.closing()

    # -- bookkeeping (the caller holds the lock) --------------------------------------------

    def _start_root(
        self,
        run_id: UUID,
        name: str,
        inputs: Any,
        metadata: dict[str, Any],
        default_thread: str | None,
    ) -> None:
        thread = metadata.get("thread_id")
        source = "metadata"
        if thread is None:
            thread, source = default_thread, "constructor"
        if thread is None:
            thread, source = str(run_id), "run_id"
            _log.warning("journal_run_without_thread", run_id=str(run_id))
        start_metadata: dict[str, Any] = {"thread_id_source": source}
        thread_id = journal_thread_id(str(thread))
        if thread_id != str(thread):  # journaled under a valid stand-in, never dropped
            start_metadata["thread_id_original"] = str(thread)
            _log.warning("journal_thread_id_mapped", run_id=str(run_id), thread_id=thread_id)
        run = RunState(run_id=str(run_id), thread_id=thread_id, graph=name)
        self._runs.add_root(run_id, run)
        self._sink.run_started(run)
        content = {"graph": name, "input": cap.input_summary(inputs)}
        self._sink.emit(run, "lifecycle", "run.start", content, start_metadata)
        user = Node(run=run, name=name, caller="user", node=None, step=None)
        messages = cap.assign_input_ids(inputs)
        self._threads.get(thread_id).root_started(user, messages)

    def _start_update(
        self, run_id: UUID, values: Any, metadata: dict[str, Any], default_thread: str | None
    ) -> None:
        """``update_state`` runs the writers of a node: a write to the thread's state, no
        run (no lifecycle event, no run in the runs view); journaled when it ends."""
        self._runs.forget(run_id)  # what runs under it starts no root
        thread = metadata.get("thread_id", default_thread)
        if thread is not None:  # (update_state needs a checkpointer's thread)
            writes = cap.update_writes(values)
            self._updates[run_id] = _Update(journal_thread_id(str(thread)), writes)

    def _finish_root(
        self,
        run_id: UUID,
        run: RunState,
        event_type: str,
        content: dict[str, Any],
        applied: bool = True,
        state: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """End a root run; ``applied``: LangGraph applied its last superstep's writes;
        ``state``: the root's output (the final state of a graph); ``metadata``: the terminal
        event's."""
        self._sink.run_ended(run)
        paused = run.interrupted or event_type == "run.interrupt"
        conversation = self._threads.get(run.thread_id)
        conversation.root_finished(run, applied=applied, paused=paused, state=state)
        # what the end journaled counts too (writes only the root's output showed)
        content["message_counts"] = dict(run.message_counts)
        if not (run.interrupted and event_type in {"run.end", "run.interrupt"}):
            self._sink.emit(run, "lifecycle", event_type, content, metadata or {})
        run.finished = True
        for node in self._runs.end_root(run_id, run):
            self._node_over(node, _NOTHING_WRITTEN)
        self._sink.wake()

    def _node_wrote(self, node: Node, outputs: Any) -> None:
        """A node of the root graph is over having written ``outputs`` (its output, or the
        ``Command`` it raised for the root graph): journal the messages it wrote."""
        run = node.run
        if run.failures:  # an earlier failed attempt of it recovered
            run.task_settled(node.task_key())
        if node.node == START:  # it passes the run's input on: journaled when the run started
            self._node_over(node, _NOTHING_WRITTEN)
            return
        written = cap.node_writes(outputs)
        self._threads.get(run.thread_id).node_ended(node, written)
        self._node_over(node, written.ids() if node.outputs else _NOTHING_WRITTEN)

    def _node_over(self, node: Node, written: AbstractSet[str]) -> None:
        """A node of the root graph is over (``written``: the message ids it wrote): the
        answers of the model calls it made are kept on their ``llm.end`` unless written."""
        node.ended = True
        if node.outputs is None:
            return
        for output in node.outputs:
            output.settle(keep=output.message_id not in written)
        node.outputs = None
        self._sink.settled()


def _interrupt_content(run: RunState, interrupts: Sequence[Any]) -> dict[str, Any]:
    items = [{"id": getattr(i, "id", None), "value": getattr(i, "value", i)} for i in interrupts]
    return {**run.summary("interrupted"), "interrupts": items, "checkpoint_id": None}


def _tool_call_metadata(node: Node, duration: float) -> dict[str, Any]:
    """The metadata of a finished tool call's event: its :meth:`Node.call_attribution` (written
    out: the callback path), ``duration`` ms, its call id and span."""
    return {
        "caller": node.caller,
        "langgraph_step": node.step,
        "langgraph_node": node.node,
        PARENT_SPAN_KEY: node.parent_span,
        "duration_ms": duration,
        "tool_call_id": node.tool_call_id,
        "tool_run_id": node.span,
    }


#: A prompt message's id, read for each message of the prompt at once (in C): the ids as the
#: call sent them, which the writer records (LangGraph gives a state's messages without an id
#: theirs in place at its next write, an overwrite's items, maybe before the writer reads them)
_ID: Final = operator.attrgetter("id")
