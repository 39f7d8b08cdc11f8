"""The catalog of the events ``RunJournal`` writes: their types, content and metadata.

This module is documentation: the shapes below are what :class:`journal.RunJournal` writes and
what ``history``, the HTTP API and the viewer read. The names themselves (event types, the tag
rule) are constants in :mod:`journal.catalog`; the event model is :mod:`journal.events`.

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

__all__: list[str] = []
