"""The catalog of the events ``RunJournal`` writes: their types, content and metadata.

This module is documentation: the shapes below are what :class:`journal.RunJournal` writes and
what ``history``, the HTTP API and the viewer read. The names themselves (event types, the tag
rule) are constants in :mod:`journal.catalog`; the event model is :mod:`journal.events`.

Event shapes (stable; ``history`` and the middleware rely on them). Every event's metadata of
the trace, message and middleware categories carries ``caller`` (``"agent"``,
``"middleware:<Class>"``, ``"subagent:<graph name>"``, or ``"user"`` for a run's input; a
model call that a LangChain middleware makes for itself inside the agent's nodes, marked by its
``lc_source`` metadata, such as ``LLMToolEmulator``'s and ``LLMToolSelectorMiddleware``'s, is
``middleware:<Class>`` too, and so are the events under it),
``langgraph_step`` and ``langgraph_node`` (``None`` when not inside a node). A subagent is a
graph run inside the root graph: a compiled graph used as a node, or one a tool or a node
invokes, with or without a checkpointer of its own (LangGraph gives that one a checkpoint
namespace of its own, which is how it is told from the root graph's own runs).

Every trace and middleware event's metadata also carries ``parent_span_run_id``
(``journal.catalog.PARENT_SPAN_KEY``): the LangChain run id of the event's nearest *traced*
ancestor — the tool call or model call it runs inside (a subagent's calls name the tool call
that runs the subagent's graph, however deep its nodes are), else the node of the root graph
it belongs to (the ``model``, ``tools`` or middleware chain run), else the root run. For a
``llm.*`` or ``tool.*`` event that is the ancestor of the call itself; for ``custom:*`` and
``middleware:*``, of the run the event happens in (a custom event dispatched inside a tool
names that tool call). A call's own id is its ``llm_run_id`` / ``tool_run_id``, so the events
form a tree that parallel calls cannot tangle; readers nest by it (events written before it
existed lack the key: nest them by order).

lifecycle
  ``run.start``      content ``{"graph", "input": {"kind", "keys", "message_count"} | {"kind":
                     "command", "resume"}}``; metadata ``{"thread_id_source"}``, plus
                     ``thread_id_original`` when the thread id was no valid journal id
                     (surrounding spaces, control characters, too long): the run is then
                     journaled under ``journal.events.journal_thread_id(original)``.
  ``run.end``        content ``{"status": "success", "duration_ms", "usage", "usage_by_model",
                     "message_counts", "dropped_events"}``; ``usage`` sums the ``usage`` of the
                     run's ``llm.end`` events (every model call of the run: the agent's, its
                     middleware's, its subagents'), key by key; ``usage_by_model[model]`` the
                     same plus ``calls``, keyed by the model the response names (``llm.end``
                     ``model``); ``message_counts`` maps ``human``/``ai``/``tool`` to the
                     messages this run journaled.
  ``run.error``      the ``run.end`` content with ``status: "error"``, ``error_type``, ``error``.
                     Once per run (the root's failure), never per nested chain. When a node
                     of the root graph raised, the metadata names the first that did, as its
                     own events would (``caller``, ``langgraph_node``, ``langgraph_step``,
                     ``parent_span_run_id`` = the node's run id); else it is empty.
  ``run.cancel``     the ``run.end`` content with ``status: "cancelled"`` and ``reason``
                     (``CancelledError`` / ``KeyboardInterrupt``, or ``GeneratorExit``: the
                     caller stopped the run's stream — ``close()``, ``aclose()``, a ``break``
                     that drops it). A stopped stream keeps its last superstep's edits:
                     LangGraph saved its finished tasks' writes, which ``get_state`` shows.
  ``run.interrupt``  the ``run.end`` content with ``status: "interrupted"``, ``interrupts``
                     (``[{"id", "value"}]``) and ``checkpoint_id``. A paused run has no
                     ``run.end``: ``run.interrupt`` is its last lifecycle event.
  ``run.resume``     content ``{"checkpoint_id", "status"}``; the resumed run also starts with
                     ``run.start``.

message (content: ``journal.messages.message_to_content(message)``; its ``data.id`` is the id
the message has in the LangGraph state; metadata ``digest``: its digest, see
:mod:`journal.digests`; ``hidden``: whether the message's ``additional_kwargs["hide_from_ui"]``
is truthy — context a middleware injects for the model, not something the user typed. Events
written before ``hidden`` existed lack the key: read the content's ``additional_kwargs``.
The content is the message as the writer thread finds it when it writes the event — within
``flush_interval`` of it, or before :meth:`RunJournal.flush` returns: the callback path keeps
a reference, never a copy. An in-place edit made before then (a hook that changes a message
of the state without writing it back) is in the journal, one made after is not; a model call
that receives the edited message records it in its ``llm.start`` context (a request-only
edit), so replay is exact either way. To journal an edit for sure, write the message back.)
  ``message.human``  the run's new input messages, at run start; an id already journaled in
                     the thread is not recorded again with the same content (callers that
                     resend the history; after a restart the writer checks the store once
                     per thread), nor is a resent summary message. The same id with another
                     content is the user's edit (a client that keeps its ids: "edit and
                     regenerate"; the state replaces the message): journaled again with
                     metadata ``replacement: true``, also after a restart or from the spool
                     (the store's versions of the id tell it from a repeat). The input's
                     other messages are journaled the same way as ``message.*`` of their
                     type (``message.ai``, ``message.tool``): a thread seeded with an
                     earlier conversation journals its answers and tool results, a resent
                     history's are not recorded again.
                     The input itself is never changed: a message object without an id gets
                     one in place (as LangGraph's ``add_messages`` gives it), a message-like
                     item (a dict, a ``(role, text)`` tuple, a string) is journaled under the
                     id the state gives it, seen in the state the run's first node reads
                     (or the run's output: a breakpoint before the first node, a graph whose
                     nodes were all answered from the cache), matched by kind and content,
                     the latest first. LangGraph gives such an item a new id each run, so a
                     client without a checkpointer that resends its history as dicts each
                     run has it journaled anew each run (the ids differ): keep the ids of
                     the messages a run returns to have a resent history journaled once.
                     metadata ``caller: "user"``.
  ``message.system`` a ``SystemMessage`` that enters the state: one of the run's input (as
                     for ``message.human``: a repeat is not recorded again, another content
                     is a ``replacement``) or one a node writes (a hook that adds a note to
                     the state). A model's system prompt that is not in the state (an
                     agent's ``system_prompt``) is not one: it is in the call's ``llm.start``
                     record. Not in the fixed catalog of ARCHITECTURE.md: journals written
                     before it had no event for such a message (replay misses it there).
  ``message.ai`` / ``message.tool``  every new message the root graph's nodes write to
                     ``messages`` (and each of the run's input, ``caller: "user"``, see
                     ``message.human``): model answers, tool results (``ToolMessage``, the
                     messages of a returned ``Command``, error results as ``status:
                     "error"``), in the state's order: the results of parallel calls in the
                     order of the calls.
                     Messages a middleware hook adds (e.g. the result of a call a human
                     rejected, a hidden context message) carry
                     ``caller: "middleware:<Class>"``. metadata adds
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
                     A task LangGraph answers from its cache (a node's ``CachePolicy``) runs
                     no callback: its messages are journaled once the state shows them (the
                     next node that reads the state, or the root's output when the run ends
                     or pauses), in the state's order, with ``caller: "agent"`` and
                     ``langgraph_node`` / ``langgraph_step`` ``None`` (nothing names its
                     node); at a run's first look at the state only the messages after its
                     input count as the run's (those before it were there already).
                     Known limits: a message mutated in place and not written back is no
                     replacement (its content is as the writer finds it, see above); a rewrite
                     whose list repeats an id keeps it once; messages of parallel tasks that
                     are no tool results of one call list (``Send`` fan-out, the messages of
                     a tool's ``Command`` next to another call's result) are journaled as
                     their tasks end: the timeline shows them in that order, the order event
                     after their step gives the state's (replay follows it).
                     ``graph.update_state(config, values, as_node=...)`` (``aupdate_state``;
                     also through ``with_config(callbacks=[journal])``) is a write to the
                     state, not a run: no lifecycle event, no run in the runs view. Its
                     messages are journaled as ``as_node``'s write would be (new ones added,
                     a ``RemoveMessage`` a ``message.remove``, an id the state holds a
                     ``replacement``) with ``caller: "user"`` and ``langgraph_step`` /
                     ``langgraph_node`` ``None``, under the run id of the thread's latest run
                     this journal followed (before it followed any run of the thread: with
                     the next one; another process's later run is not known to it).
                     LangGraph tells the callbacks only when that node has more than one
                     writer (an agent's model node, a node with a conditional edge; the
                     chain ``<graph name>UpdateState``: a root chain so named is taken for
                     one); an update of a node with one writer (a plain edge) is seen at the
                     next run's first state (or its output, when it ran no node): what it
                     added or changed is journaled then, after that run's input, and its
                     removals by that run's order event. A journal that first sees a
                     thread's state (a restart) journals every message of it it has not
                     seen as the user's input, and the writer drops those the store holds:
                     an update, or an input a stopped stream left unjournaled, is kept (an
                     in-place change of a stored message since is a ``replacement``). Such a
                     look also finds another journal's messages (a run of the thread in
                     another process): they are stored once (the spool's replay drops a
                     node's message another journal stored so since, unless it left the
                     state after that). What such a look finds gone that the store's
                     events already took out of the state (another journal's compaction or
                     removal) is no removal of this journal's order, and a tool result a
                     paused run held back is not journaled again when this journal releases
                     it (at its next run of the thread, or at close) after another journal
                     resumed the run and stored it, even if it left the state since: the
                     writer reads the thread's stored state (or, for such a result, its
                     stored messages) first, counting what it writes before in the same
                     batch. A run this journal resumes itself releases its results unread.
                     A message-like item without an id (a dict, a tuple, a string) in a
                     run's input, an update or a node's output — the user's and the node's
                     objects are never changed — is journaled once a state shows the id
                     LangGraph gave it, before what was written after it; one that left the
                     state before any state showed it an id (an overwrite's item a
                     summarizer replaced at once, one the next overwrite replaces) under an
                     id made for the journal's copy. At close, one no state showed with an
                     id is left to the thread's next look (the checkpoint may hold it under
                     an id this journal never saw; logged ``journal_messages_unplaced``).
                     Not journaled: a cached task's write that replaces a message of the
                     state in place, and one a run without input messages (a resume) shows
                     only at its first look at the state.
  ``message.remove`` a node's write removed messages (``RemoveMessage``) and it was no
                     summarization: content ``{"removed_message_ids"}`` for removals by id,
                     ``{"all": true, "removed_message_ids", "state_message_ids"}`` for a
                     rewrite (``RemoveMessage(REMOVE_ALL_MESSAGES)`` + a list: the state's
                     order after it; its new messages follow as ``message.*`` events). A
                     write that bypasses the reducer (``langgraph.types.Overwrite``, or the
                     dict forms LangGraph reads as one) is such a rewrite, by a node or by
                     the run's input; LangGraph ignores the other writes of its superstep,
                     and so does the order journaled after it (a message one of them wrote
                     stays journaled, outside the state). An overwrite's value is taken as
                     a list of messages (as a rewrite, one that repeats an id keeps it once;
                     a bare string, or a ``RemoveMessage`` LangGraph stores as it is, is not
                     followed). Edits
                     are journaled once LangGraph applied their superstep (when the next
                     one starts or the root ends; a failed superstep's edits never are), in
                     task-path order; when messages of other tasks of the step interleave,
                     the step's last edit carries the whole order. A ``message.remove`` that
                     removes nothing (``removed_message_ids: []``, ``state_message_ids``)
                     only sets the state's order: written when the state LangGraph hands the
                     next node (or the root's output) is ordered otherwise than the journal
                     recorded it — parallel tasks journaled in completion order, writes of
                     another journal or of a cached task, a graph without a checkpointer; the
                     timeline skips it.
                     Also once per thread a journal first sees the state of, when the store
                     held messages of the thread before (another process's runs: a graph
                     without a checkpointer starts anew, its state its input alone). Such
                     an order names in ``removed_message_ids`` the journaled messages the
                     state no longer holds, if any (a run forked from an earlier checkpoint,
                     a ``RemoveMessage`` in a run's input): the timeline shows a removal
                     marker; none when the state holds the run's own messages alone (a
                     graph without a checkpointer starts each run anew). Messages a fork
                     brings back (removed or summarized away since) are not journaled
                     again: replay takes the latest version of each; the order lists them
                     under ``restored_message_ids`` (a later marker that takes them out
                     again finds them before the fork point).
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
                     A chat model's callbacks get a tracing copy of its messages (image and
                     file blocks in the OpenAI format): a copy equal to that of a message the
                     journal holds unchanged is recorded as that message (the model received
                     it). Known limits: a request that really sends the OpenAI form of such a
                     message (a middleware converting it) is recorded as the message too; a
                     copy of a message the journal does not hold in memory (an earlier
                     process journaled it) or of one a middleware edited is recorded in its
                     tracing form. Neither is seen by ``verify``, whose digests come from
                     the same copy.
  ``llm.end``        content ``{"message_id", "tool_call_count", "output"?}``: ``output`` is the
                     answer (``message_to_content``) whenever it is not journaled as a
                     ``message.*`` event — a middleware's own call (a title generator, the
                     summarizer), a model or a subagent called inside a tool, a node's call
                     whose answer it does not write to ``messages``, a subagent's calls —
                     so every model's answer is in the journal, as ``message.ai`` or here.
                     Whether a node of the root graph writes its call's answer is known when
                     the node ends; the writer waits for that (at most
                     ``journal._writer.SETTLE_LIMIT``, 1 s; a node still running then keeps
                     the answer here). The store caps it with the message category's cap.
                     Metadata adds ``model`` (the model the response names,
                     ``response_metadata`` ``model_name`` / ``model``, else the request's),
                     ``request_model`` (the model the request named: ``ls_model_name``, the
                     invocation's ``model`` / ``model_name``), ``usage``, ``latency_ms``,
                     ``llm_run_id``. ``usage`` is ``{}`` when the provider reports none, else
                     ``input_tokens``, ``output_tokens``, ``total_tokens`` (input + output
                     when reported missing or 0), ``cache_read_tokens``,
                     ``cache_creation_tokens`` and ``reasoning_tokens`` (0 when not
                     reported), from ``usage_metadata`` or the provider's ``token_usage``.
                     Known limit: a subagent used as a node of the root graph (a compiled
                     graph as a node, not called inside a tool) writes its answers into the
                     thread when the node ends: they are then both here and ``message.ai``.
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
