"""``TrackingSummarizationMiddleware``: LangChain's summarization, reported to the run journal.

A drop-in subclass of ``langchain.agents.middleware.SummarizationMiddleware`` (same parameters,
same summaries, same state updates). When — and only when — it summarizes, it dispatches the
custom event ``summarization`` (:data:`SUMMARIZATION_EVENT`) through the hook's config, which
``RunJournal`` records as a ``middleware:summarize`` event. The payload is plain JSON data:

* ``summary`` — the text of the summary message injected into the state;
* ``summary_message`` — that message, ``message_to_dict`` form, with the id it has in the state;
* ``replaced_count`` / ``replaced_message_ids`` — the original state messages removed by the
  update (``RemoveMessage(REMOVE_ALL_MESSAGES)`` minus the messages it puts back), in order;
* ``kept_count`` / ``kept_message_ids`` — the original messages put back after the summary;
* ``trigger`` — the configured trigger clause that fired, e.g. ``{"messages": 6}`` or
  ``{"tokens": 500}`` (``None`` if no clause fired, e.g. a subclass forced a summary);
* ``tokens_before`` / ``tokens_after`` — the middleware's token counter on the state messages
  before and after the update.

The messages are found by identity and id (which message of the update was not in the state),
never by wording or length arithmetic. One difference from the stock class: the summary
message it returns always has an id (a new UUID when the parent gave it none), so that the id in
the payload is the id the message has in the state — the marker and replay find it by that id.
Building the payload counts tokens twice (before and after). A failure building or dispatching
the payload (a failing token counter, no parent run) is logged
(``summarization_dispatch_failed``) and never breaks the run, whose summary stands;
``asyncio.CancelledError``, ``KeyboardInterrupt`` and LangGraph's ``GraphBubbleUp``
(``GraphInterrupt``) propagate.

This module knows nothing of the store: it only dispatches the event.
"""

# No ``from __future__ import annotations`` here: LangGraph decides whether to inject
# ``config`` from the runtime annotation, and only a real ``Optional[RunnableConfig]`` object
# (not the string "RunnableConfig | None") is injected.

import copy
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Optional

from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.middleware.types import AgentState
from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, message_to_dict
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from typing_extensions import override

from journal._logging import get_logger
from journal.catalog import SUMMARIZATION_EVENT

__all__ = ["SUMMARIZATION_EVENT", "TrackingSummarizationMiddleware"]


logger = get_logger(__name__)


def _is_remove_all(message: object) -> bool:
    return isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES


class TrackingSummarizationMiddleware(SummarizationMiddleware[Any, Any]):
    """``SummarizationMiddleware`` that dispatches a ``summarization`` event when it summarizes.

    Takes exactly the parameters of ``SummarizationMiddleware`` and returns the same updates;
    the only addition is the event (payload in the module docstring), dispatched once per
    summarization and never otherwise.
    """

    @override
    def before_model(
        self,
        state: AgentState[Any],
        runtime: Runtime[Any],
        config: Optional[RunnableConfig] = None,
    ) -> dict[str, Any] | None:
        """Summarize like the parent; when it did, dispatch the ``summarization`` event."""
        original = list(state["messages"])
        update = super().before_model(state, runtime)
        with _dispatch_guard(config):
            payload = self.summarization_payload(original, update)
            if payload is not None:
                dispatch_custom_event(SUMMARIZATION_EVENT, payload, config=config)
                _log_dispatched(payload, config)
        return update

    @override
    async def abefore_model(
        self,
        state: AgentState[Any],
        runtime: Runtime[Any],
        config: Optional[RunnableConfig] = None,
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        original = list(state["messages"])
        update = await super().abefore_model(state, runtime)
        with _dispatch_guard(config):
            payload = self.summarization_payload(original, update)
            if payload is not None:
                await adispatch_custom_event(SUMMARIZATION_EVENT, payload, config=config)
                _log_dispatched(payload, config)
        return update

    def summarization_payload(
        self, original: Sequence[AnyMessage], update: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The event payload for ``update`` of a state whose messages were ``original``.

        ``None`` unless the update starts with ``RemoveMessage(REMOVE_ALL_MESSAGES)`` (that is,
        unless it summarized). Gives the injected message an id if it has none, so the id in
        the payload is the id it will have in the state.
        """
        if not update:
            return None
        new = update.get("messages")
        if not isinstance(new, list) or not new or not _is_remove_all(new[0]):
            return None
        original_objects = {id(m) for m in original}
        original_ids = {m.id for m in original if m.id is not None}
        kept: list[BaseMessage] = []
        injected: list[BaseMessage] = []
        for message in new[1:]:
            is_original = id(message) in original_objects or message.id in original_ids
            (kept if is_original else injected).append(message)
        for message in injected:
            if message.id is None:
                message.id = str(uuid.uuid4())
        kept_ids = [m.id for m in kept if m.id is not None]
        kept_set = set(kept_ids)
        replaced = [m for m in original if m.id not in kept_set]
        summary_message = injected[0] if injected else None
        tokens_before = self.token_counter(original)
        return {
            "summary": str(summary_message.text) if summary_message is not None else "",
            "summary_message": (
                message_to_dict(summary_message) if summary_message is not None else None
            ),
            "replaced_count": len(replaced),
            "replaced_message_ids": [m.id for m in replaced],
            "kept_count": len(kept),
            "kept_message_ids": kept_ids,
            "trigger": self.fired_trigger(list(original), total_tokens=tokens_before),
            "tokens_before": tokens_before,
            "tokens_after": self.token_counter([*injected, *kept]),
        }

    def fired_trigger(
        self, messages: list[AnyMessage], *, total_tokens: int | None = None
    ) -> dict[str, Any] | None:
        """The first configured trigger clause that ``messages`` meet, as the parent judges it.

        Each clause is evaluated alone by the parent's own rule (its token counter, reported
        usage and model profile), so the answer never drifts from what made it summarize.
        """
        if total_tokens is None:
            total_tokens = self.token_counter(messages)
        for clause in self._trigger_clauses:
            probe = copy.copy(self)
            probe._trigger_clauses = [clause]
            if probe._should_summarize(messages, total_tokens):
                return dict(clause)
        return None


def _thread_id(config: Optional[RunnableConfig]) -> Any:
    return ((config or {}).get("configurable") or {}).get("thread_id")


@contextmanager
def _dispatch_guard(config: Optional[RunnableConfig]) -> Iterator[None]:
    """Swallow and log a failure to build or dispatch the payload; let interrupts through."""
    try:
        yield
    except GraphBubbleUp:
        raise
    except Exception as e:
        logger.warning(
            "summarization_dispatch_failed",
            thread_id=_thread_id(config),
            error_type=type(e).__name__,
        )


def _log_dispatched(payload: dict[str, Any], config: Optional[RunnableConfig]) -> None:
    logger.debug(
        "summarization_dispatched",
        thread_id=_thread_id(config),
        replaced_count=payload["replaced_count"],
        kept_count=payload["kept_count"],
    )
