"""The model, tool and custom-event callbacks of ``RunJournal`` (trace events)."""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID

from langchain_core.messages import BaseMessage

from journal import _capture as cap
from journal._journal_core import JournalCore, event_tag
from journal._writer import Extra, Lazy
from journal.catalog import SUMMARIZATION_EVENT, SUMMARIZE_EVENT_TYPE
from journal.digests import CONTEXT_KEY

__all__ = ["TraceCallbacks"]

_PROMPT_BUDGET: Final = 4 * 1024


class TraceCallbacks(JournalCore):
    """``llm.*``, ``tool.*`` and ``custom:<name>`` events (and ``middleware:summarize``)."""

    # -- models ---------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm.start`` with the ids of the messages sent; the prompt only within a cap."""
        prompt = messages[0] if messages else []
        self._llm_start(serialized, prompt, run_id, parent_run_id, tags, metadata, kwargs)

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm.start`` of a completion model (it is sent text, not messages: no ids)."""
        self._llm_start(serialized, [], run_id, parent_run_id, tags, metadata, kwargs)

    def _llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompt: list[BaseMessage],
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        md = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = str(
            md.get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or (serialized or {}).get("name")
            or "unknown"
        )
        with self._lock:
            node = self._child(run_id, parent_run_id, model, md)
            if node is None:
                return
            node.model = model
            event_md = {
                **node.attribution(),
                "model": model,
                "parameters": cap.scalar_params(params),
                "message_count": len(prompt),
                "llm_run_id": str(run_id),
                "lc_source": md.get("lc_source"),
                "tags": list(tags or ()),
            }
            args = (node.run.thread_id, str(node.caller), str(run_id), list(prompt))
            self._emit(
                node.run, "trace", "llm.start", Lazy(self._llm_start_content, args), event_md
            )

    def _llm_start_content(
        self, thread_id: str, caller: str, llm_run_id: str, prompt: list[BaseMessage]
    ) -> Extra:
        """Writer thread: the prompt excerpt, and the exact record of the call's input."""
        record = self._contexts.call_record(thread_id, caller, llm_run_id, prompt)
        return Extra(cap.prompt_tail(prompt, _PROMPT_BUDGET), {CONTEXT_KEY: record})

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """``llm.end`` with usage, latency and model; usage adds to the run's totals."""
        with self._lock:
            done = self._done(run_id, "latency_ms")
            if done is None:
                return
            node, metadata = done
            usage, message = cap.response_usage(response)
            model = node.model or "unknown"
            if usage:
                node.run.add_usage(model, usage)
            metadata.update(model=model, usage=usage, llm_run_id=str(run_id))
            content = {
                "message_id": getattr(message, "id", None),
                "tool_call_count": len(getattr(message, "tool_calls", None) or ()),
            }
            self._emit(node.run, "trace", "llm.end", content, metadata)

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm.error`` (the run's ``run.error`` comes once, from the root)."""
        with self._lock:
            done = self._done(run_id, "latency_ms")
            if done is not None:
                node, metadata = done
                metadata.update(model=node.model, llm_run_id=str(run_id))
                self._emit(node.run, "trace", "llm.error", cap.error_summary(error), metadata)

    # -- tools ----------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool.start`` with name and arguments."""
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        call_id = kwargs.get("tool_call_id")
        with self._lock:
            node = self._child(run_id, parent_run_id, name, metadata)
            if node is None:
                return
            node.tool_call_id = call_id
            parent = self._nodes.get(parent_run_id) if parent_run_id is not None else None
            if parent is not None and parent.top and parent.tool_call_id is None:
                parent.tool_call_id = call_id  # the tools task this call belongs to
            metadata_out = {
                **node.attribution(),
                "tool_call_id": call_id,
                "tool_run_id": str(run_id),
            }
            args = inputs if inputs is not None else input_str
            self._emit(node.run, "trace", "tool.start", {"name": name, "args": args}, metadata_out)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """``tool.end`` with duration (the result message comes from the tools node)."""
        with self._lock:
            done = self._done(run_id, "duration_ms")
            if done is not None:
                node, metadata = done
                content = Lazy(cap.tool_end_content, (node.name, output))
                self._emit(node.run, "trace", "tool.end", content, metadata)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool.error`` with duration and the error."""
        with self._lock:
            done = self._done(run_id, "duration_ms")
            if done is not None:
                node, metadata = done
                content = {"name": node.name, **cap.error_summary(error)}
                self._emit(node.run, "trace", "tool.error", content, metadata)

    # -- retrievers (no events: tracked so the chains they run stay inside the run) -------

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the retriever run under its journaled parent."""
        with self._lock:
            self._child(run_id, parent_run_id, str(kwargs.get("name") or "retriever"), metadata)

    def on_retriever_end(
        self, documents: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Forget the retriever run."""
        with self._lock:
            self._nodes.pop(run_id, None)

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget the retriever run."""
        with self._lock:
            self._nodes.pop(run_id, None)

    # -- custom events --------------------------------------------------------------------

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``custom:<name>``; the ``summarization`` event of a node of the root graph also
        becomes ``middleware:summarize``."""
        with self._lock:
            node = self._nodes.get(run_id)
            run = node.run if node is not None else self._roots.get(run_id)
            if run is None:
                return
            if node is not None:
                attribution = node.attribution()
            else:
                attribution = {"caller": "agent", "langgraph_step": None, "langgraph_node": None}
            event_md = {**attribution, "name": name}
            self._emit(run, "trace", f"custom:{event_tag(str(name))}", data, event_md)
            # a subagent's compaction changes its own state, not the thread's: a trace only
            if name == SUMMARIZATION_EVENT and (node is None or node.top):
                if node is not None:
                    node.summarized = True  # its rewrite is this marker, not another
                self._emit(run, "middleware", SUMMARIZE_EVENT_TYPE, data, attribution)
