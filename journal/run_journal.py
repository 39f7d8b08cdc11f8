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

The events it writes, their content and metadata: :mod:`journal.event_catalog`.

The handler itself is a thin surface: it turns each callback's arguments into plain values and
tells :class:`journal._tracker.RunTracker` what happened; the tracker attributes and queues the
events on :class:`journal._sink.EventSink`, and :class:`journal._writer.Writer` stores them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self
from uuid import UUID

from langchain_core.messages import BaseMessage
from langgraph.callbacks import GraphCallbackHandler, GraphInterruptEvent, GraphResumeEvent

from journal import _capture as cap
from journal._contents import Contents
from journal._logging import get_logger
from journal._sink import EventSink
from journal._tracker import MAX_TAG_LENGTH, RunTracker
from journal._writer import DEFAULT_CLOSE_TIMEOUT, Writer
from journal.events import validate_event_type, validate_id
from journal.spool import DEFAULT_SPOOL_PATH, Spool, default_spool_path
from journal.store import RunEventStore

__all__ = ["RunJournal"]

_log = get_logger(__name__)


class RunJournal(GraphCallbackHandler):
    """Journals every run it is attached to into ``store`` (events: :mod:`journal.event_catalog`).

    Thread-safe and ``run_inline``: one instance serves concurrent sync and async runs.
    Construct it once, attach it to graphs, and call :meth:`close` (or use it as a context
    manager) when done; :meth:`flush` / :meth:`aflush` wait until queued events are stored.
    Keyword options: ``thread_id`` (the thread of runs without thread metadata),
    ``spool_path`` (default: the store's own file in the working directory,
    :func:`journal.spool.default_spool_path`), ``flush_interval`` (<= 0.1 s), ``max_batch``,
    ``max_buffer``,
    ``retry_delays`` (the backoff before a batch goes to the spool), ``close_timeout`` (how
    long :meth:`close` and the interpreter's exit wait for the store before spooling the rest;
    default 5 s).

    A spool left by an earlier process is replayed before the threads it names are written
    again; spooled events are replayed by the journal itself once the store answers again.
    """

    run_inline = True
    raise_error = False

    def __init__(
        self,
        store: RunEventStore,
        *,
        thread_id: str | None = None,
        spool_path: str | os.PathLike[str] | None = None,
        flush_interval: float = 0.1,
        max_batch: int = 500,
        max_buffer: int = 100_000,
        retry_delays: Sequence[float] = (0.05, 0.1, 0.2, 0.5, 1.0),
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        if not isinstance(store, RunEventStore):
            raise TypeError("store must be a RunEventStore (see journal.open_store)")
        if not 0 < flush_interval <= 0.1:
            raise ValueError("flush_interval must be > 0 and <= 0.1 seconds")
        if max_batch < 1 or max_buffer < max_batch:
            raise ValueError("max_batch must be >= 1 and max_buffer >= max_batch")
        if any(d < 0 for d in retry_delays):
            raise ValueError("retry_delays must be non-negative seconds")
        if not close_timeout >= 0:
            raise ValueError("close_timeout must be >= 0 seconds")
        if thread_id is not None:
            validate_id(thread_id, "thread_id")
        self.store = store
        self.thread_id = thread_id
        if spool_path is None:
            spool_path = default_spool_path(store)
            shared = Path(DEFAULT_SPOOL_PATH)
            if shared.exists():  # left by a version whose journals all shared one spool
                _log.warning("journal_spool_unclaimed", path=str(shared.resolve()),
                             spool=str(spool_path))  # fmt: skip
        self.spool = Spool(spool_path)
        contents = Contents(  # its store reads ask the writer whether the store answers
            store,
            may_read=lambda: self._writer.may_read(),
            read_failed=lambda: self._writer.read_failed(),
        )
        self._writer = Writer(
            store,
            self.spool,
            max_batch=max_batch,
            max_buffer=max_buffer,
            flush_interval=flush_interval,
            retry_delays=retry_delays,
            close_timeout=close_timeout,
            on_drop=lambda run_id, count: self._sink.writer_dropped(run_id, count),
            before_close=lambda: self._tracker.closing(),
            prefetch=contents.prefetch,
            built=contents.built,
        )
        self._sink = EventSink(self._writer)
        self._tracker = RunTracker(self._sink, contents)

    # -- public API ----------------------------------------------------------------------

    @property
    def dropped_events(self) -> int:
        """How many events were dropped (buffer full, rejected by the store, unspoolable)."""
        return self._sink.dropped_events

    @property
    def spooled_events(self) -> int:
        """How many events went to the spool because the store could not take them."""
        return self._writer.spooled_count

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every event recorded so far is in the store (or the spool).

        Returns ``False`` if ``timeout`` seconds passed first.
        """
        return self._writer.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async :meth:`flush`: waits in a worker thread, never blocks the event loop."""
        return await asyncio.to_thread(self._writer.flush, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Store what is recorded, else spool it; stop the writer; later events are dropped.

        Waits at most ``timeout`` seconds (``None``: the ``close_timeout`` option, 5 s by
        default) for the store (and to replay the spool if the store is back); whatever is not
        stored by then is written to the spool before ``close`` returns. The same runs when
        the interpreter exits with the journal open. Returns ``False`` only if some event
        could be neither stored nor spooled (counted in ``dropped_events`` and logged).
        """
        return self._writer.close(timeout)

    async def aclose(self, timeout: float | None = None) -> bool:
        """Async :meth:`close`."""
        return await asyncio.to_thread(self._writer.close, timeout)

    def replay_spool(self, timeout: float | None = None) -> int:
        """Replay this journal's spool into its store, in order; return how many events.

        Runs after every event queued before the call; afterwards threads that were spooling
        write to the store again. Raises ``StoreError`` if the store still fails.
        """
        return self._writer.replay_spool(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        hook_run = getattr(config.get("callbacks"), "parent_run_id", None)
        content = {"name": name, "hook": hook, "action": action, "changes": changes}
        self._tracker.middleware_recorded(hook_run, tag, content, name)

    # -- callbacks: each tells the tracker what happened ------------------------------------
    # (the keywords LangChain passes are named, used or not, as in its own base class: then
    # no ``**kwargs`` dict of them is made at each callback)

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
        """A root starts (``run.start``, its new human input) or a node of its graph does."""
        name = str(kwargs.get("name") or (serialized or {}).get("name") or "chain")
        self._tracker.chain_started(
            run_id, parent_run_id, name, inputs, metadata or {}, self.thread_id
        )

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """A node of the root graph journals the messages it writes; a root ``run.end``."""
        self._tracker.chain_ended(run_id, outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Root only: ``run.cancel`` (cancellation), ``run.interrupt`` or one ``run.error``."""
        self._tracker.chain_failed(run_id, error)

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
        prompt = list(messages[0]) if messages else []
        self._model_started(serialized, prompt, run_id, parent_run_id, tags, metadata, kwargs)

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
        self._model_started(serialized, [], run_id, parent_run_id, tags, metadata, kwargs)

    def _model_started(
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
        parameters = cap.scalar_params(params)
        self._tracker.model_started(
            run_id, parent_run_id, model, parameters, prompt, list(tags or ()), md
        )

    def on_llm_end(
        self,
        response: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm.end`` with usage, latency and model; usage adds to the run's totals."""
        self._tracker.model_ended(run_id, cap.model_response(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """``llm.error`` (the run's ``run.error`` comes once, from the root)."""
        self._tracker.model_failed(run_id, error)

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
        args = inputs if inputs is not None else input_str
        call_id = kwargs.get("tool_call_id")
        self._tracker.tool_started(run_id, parent_run_id, name, call_id, args, metadata)

    def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool.end`` with duration (the result message comes from the tools node)."""
        self._tracker.tool_ended(run_id, output)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """``tool.error`` with duration and the error."""
        self._tracker.tool_failed(run_id, error)

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """No event: the retriever run is tracked so the chains it runs stay inside the run."""
        name = str(kwargs.get("name") or "retriever")
        self._tracker.other_started(run_id, parent_run_id, name, metadata)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the retriever run."""
        self._tracker.other_ended(run_id)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the retriever run."""
        self._tracker.other_ended(run_id)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """``custom:<name>``; the ``summarization`` event of a node of the root graph also
        becomes ``middleware:summarize``."""
        self._tracker.custom_event(name, data, run_id)

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        """The root graph paused for a human: ``run.interrupt`` (its last lifecycle event)."""
        self._tracker.run_interrupted(
            event.run_id, event.checkpoint_ns, event.interrupts, event.checkpoint_id
        )

    def on_resume(self, event: GraphResumeEvent) -> None:
        """The root graph resumed from a checkpoint: ``run.resume``."""
        self._tracker.run_resumed(
            event.run_id, event.checkpoint_ns, event.checkpoint_id, event.status
        )
