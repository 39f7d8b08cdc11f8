"""Deterministic fake chat models for tests: scripted answers, and a record of every call."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from history.cli.demo_models import ScriptedAgentModel

Reply = AIMessage | Exception | Callable[[list[BaseMessage]], AIMessage]

_ids = itertools.count(1)


def ai(content: str = "", *tool_calls: dict[str, Any], tokens: int = 10) -> AIMessage:
    """An AI answer with optional tool calls and usage metadata (``tokens`` in, 5 out)."""
    return AIMessage(
        content=content,
        tool_calls=list(tool_calls),
        usage_metadata={
            "input_tokens": tokens,
            "output_tokens": 5,
            "total_tokens": tokens + 5,
        },
    )


def routed_ai(
    content: str = "",
    *tool_calls: dict[str, Any],
    model: str = "provider-model-2025",
    input_tokens: int = 120,
    output_tokens: int = 30,
    cache_read: int = 80,
    cache_creation: int = 16,
    reasoning: int = 12,
) -> AIMessage:
    """An AI answer as a router or alias returns it: the response names another model than
    the one requested (``response_metadata["model_name"]``), reports ``total_tokens`` as 0, and
    details cache reads, cache writes and reasoning tokens."""
    return AIMessage(
        content=content,
        tool_calls=list(tool_calls),
        response_metadata={"model_name": model},
        usage_metadata={
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": 0,
            "input_token_details": {"cache_read": cache_read, "cache_creation": cache_creation},
            "output_token_details": {"reasoning": reasoning},
        },
    )


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    """A tool call dict for :func:`ai`."""
    return {"name": name, "args": args, "id": call_id or f"call_{next(_ids)}", "type": "tool_call"}


def _raising(error: Exception) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    def step(messages: Sequence[BaseMessage]) -> AIMessage:
        raise error

    return step


class ScriptedChatModel(ScriptedAgentModel):
    """The package's ``ScriptedAgentModel`` with two test conveniences.

    ``script`` is a list of replies used in order (an ``Exception`` is raised instead of
    answered; a callable gets the messages and returns the answer), or a single callable used
    for every call. ``calls`` keeps a deep copy of the messages of every call.
    """

    model_name: str = "scripted-model"

    _every: Callable[[list[BaseMessage]], AIMessage] | None = PrivateAttr(default=None)

    def __init__(
        self, script: Sequence[Reply] | Callable[[list[BaseMessage]], AIMessage], **kw: Any
    ):
        if callable(script):
            super().__init__([], **kw)
            self._every = script
        else:
            super().__init__([_raising(r) if isinstance(r, Exception) else r for r in script], **kw)

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        if self._every is None:
            return super()._answer(messages)
        with self._lock:
            self._calls.append([m.model_copy(deep=True) for m in messages])
        return self._every(messages).model_copy(deep=True)


# -- RunJournal test helpers ------------------------------------------------------------------


def event_types(events: Iterable[Any], category: str | None = None) -> list[str]:
    """The ``event_type`` of each event (of one ``category`` when given), in order."""
    return [e.event_type for e in events if category is None or e.category == category]


def journaled_message_ids(events: Iterable[Any]) -> list[str]:
    """The message ids of the ``message.*`` events, in order."""
    return [e.content["data"]["id"] for e in events if e.category == "message"]
