"""Deterministic fake chat models for tests: scripted answers, and a record of every call."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

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


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    """A tool call dict for :func:`ai`."""
    return {"name": name, "args": args, "id": call_id or f"call_{next(_ids)}", "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """A tool-calling chat model that answers from a script and records what it was sent.

    ``script`` is a list of replies used in order (an ``Exception`` is raised instead of
    answered; a callable gets the messages and returns the answer), or a single callable used
    for every call. ``calls`` keeps a deep copy of the messages of every call. ``bind_tools``
    returns the model itself so ``create_agent`` accepts it. Streaming is disabled so that
    ``astream_events`` keeps tool calls.
    """

    script: Any = None
    model_name: str = "scripted-model"
    disable_streaming: bool | str = True

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _queue: list[Reply] = PrivateAttr(default_factory=list)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    def __init__(self, script: Sequence[Reply] | Callable[[list[BaseMessage]], AIMessage], **kw: Any):
        super().__init__(script=script, **kw)
        if not callable(script):
            self._queue = list(script)

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages of every call so far (deep copies, in call order)."""
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Iterable[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _next_reply(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            self._calls.append([m.model_copy(deep=True) for m in messages])
            if callable(self.script) and not isinstance(self.script, list | tuple):
                reply: Reply = self.script
            elif self._queue:
                reply = self._queue.pop(0)
            else:
                raise RuntimeError("ScriptedChatModel ran out of scripted replies")
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(messages)
        return reply.model_copy(deep=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next_reply(messages)
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"model_name": self.model_name},
        )


# -- RunJournal test helpers ------------------------------------------------------------------


def event_types(events: Iterable[Any], category: str | None = None) -> list[str]:
    """The ``event_type`` of each event (of one ``category`` when given), in order."""
    return [e.event_type for e in events if category is None or e.category == category]


def journaled_message_ids(events: Iterable[Any]) -> list[str]:
    """The message ids of the ``message.*`` events, in order."""
    return [e.content["data"]["id"] for e in events if e.category == "message"]

