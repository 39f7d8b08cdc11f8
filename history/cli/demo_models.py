"""Offline chat models for the demo and the README: no network, no API key, deterministic.

* :class:`ScriptedAgentModel` plays an agent: each call takes the next step of a script (a
  fixed ``AIMessage`` or a function of the messages it was sent, so answers can use tool
  results), and records a deep copy of every prompt in :attr:`ScriptedAgentModel.calls`.
* :class:`ExtractiveSummaryModel` plays a summarizer: it reads the conversation out of the
  summary prompt it is given (the ``<message type="...">`` blocks that LangChain's
  ``SummarizationMiddleware`` renders) and answers with key sentences taken from it. Nothing
  is canned: a different conversation gives a different summary.

Both are real ``BaseChatModel`` subclasses, so they work wherever LangChain expects a model
(``create_agent``, ``SummarizationMiddleware``, ``invoke``/``ainvoke``, callbacks).
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from history.cli._text import shorten

__all__ = [
    "SUMMARY_PREFIX",
    "ExtractiveSummaryModel",
    "ScriptedAgentModel",
    "Step",
    "first_sentence",
    "message_text",
]

#: A step of a script: the answer itself, or a function of the prompt that returns it.
Step = AIMessage | Callable[[Sequence[BaseMessage]], AIMessage]

#: How LangChain's SummarizationMiddleware opens the summary message it puts into state.
SUMMARY_PREFIX: Final = "Here is a summary of the conversation to date:"

_MESSAGE_RE: Final = re.compile(r'<message type="(?P<type>\w+)"[^>]*>(?P<body>.*?)</message>', re.S)
_TOOL_CALL_RE: Final = re.compile(r"<tool_call\b.*?</tool_call>", re.S)
_TAG_RE: Final = re.compile(r"<[^>]+>")
_SENTENCE_RE: Final = re.compile(r"(.+?[.!?])(?:\s|$)", re.S)
_POINT_CHARS: Final = 160


def message_text(message: BaseMessage) -> str:
    """The plain text of a message (text blocks of list content joined), stripped."""
    return message.text.strip()


def first_sentence(text: str, *, max_chars: int = _POINT_CHARS) -> str:
    """The first sentence of ``text`` on one line, cut to ``max_chars`` characters."""
    flat = " ".join(text.split())
    match = _SENTENCE_RE.match(flat)
    return shorten(match.group(1) if match else flat, max_chars)


class _OfflineChatModel(BaseChatModel):
    """What both offline models share: a name, and one answer computed from the messages."""

    model_name: str = "offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=self._answer(messages))],
            llm_output={"model_name": self.model_name},
        )


class ScriptedAgentModel(_OfflineChatModel):
    """A tool-calling chat model that follows a script and records every prompt.

    Each call consumes the next :data:`Step`; running out of steps raises ``RuntimeError``
    (a script that is too short is a bug in the caller). ``bind_tools`` returns the model
    itself so ``create_agent`` accepts it; streaming is disabled so tool calls survive
    ``stream``/``astream_events``. Thread-safe.
    """

    steps: list[Any]
    model_name: str = "scripted-agent"
    disable_streaming: bool | Literal["tool_calling"] = True

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _cursor: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    def __init__(self, steps: Iterable[Step], **kwargs: Any) -> None:
        super().__init__(steps=list(steps), **kwargs)  # type: ignore[call-arg]

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Deep copies of the messages of every call so far, in call order."""
        with self._lock:
            return list(self._calls)

    @property
    def remaining(self) -> int:
        """How many steps of the script have not been used yet."""
        with self._lock:
            return len(self.steps) - self._cursor

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedAgentModel:
        """Accept any tools: the script already knows which calls it makes."""
        return self

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            if self._cursor >= len(self.steps):
                raise RuntimeError(
                    f"ScriptedAgentModel has no step left after {self._cursor} calls; "
                    "add steps to its script"
                )
            step = self.steps[self._cursor]
            self._cursor += 1
            self._calls.append([m.model_copy(deep=True) for m in messages])
        answer: AIMessage = step(messages) if callable(step) else step
        return answer.model_copy(deep=True)


class ExtractiveSummaryModel(_OfflineChatModel):
    """A summarizer that builds its answer from the conversation in its prompt.

    It finds the ``<message type="...">`` blocks of the prompt (the format of LangChain's
    summary prompt), keeps the points of an earlier summary, and adds one line per message:
    what the user asked and what each tool returned (on one line, cut at 160 characters),
    and the first sentence of each answer. Repeated points are kept once, and only the
    newest ``max_points``. A prompt without message blocks is summarized sentence by
    sentence.
    """

    max_points: int = 10
    model_name: str = "extractive-summarizer"

    @property
    def _llm_type(self) -> str:
        return "extractive-summary"

    def summarize(self, prompt: str) -> str:
        """The summary of the conversation rendered in ``prompt``, one ``- `` point a line."""
        points: list[str] = []
        blocks = list(_MESSAGE_RE.finditer(prompt))
        for block in blocks:
            body = _TOOL_CALL_RE.sub("", block.group("body"))
            body = html.unescape(_TAG_RE.sub("", body)).strip()
            points.extend(_points_of(block.group("type"), body))
        if not blocks:
            points = [f"- {first_sentence(s)}" for s in _SENTENCE_RE.findall(prompt)]
        unique = list(dict.fromkeys(points))
        return "\n".join(unique[-self.max_points :]) or "- (nothing to summarize)"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(content=self.summarize("\n".join(message_text(m) for m in messages)))


def _points_of(kind: str, body: str) -> list[str]:
    """The summary lines one rendered message contributes."""
    if not body:
        return []  # an AI message that only called tools
    if kind == "human" and body.startswith(SUMMARY_PREFIX):
        earlier = body[len(SUMMARY_PREFIX) :].strip().splitlines()
        return [line.strip() for line in earlier if line.strip().startswith("- ")]
    label = {"human": "The user asked", "tool": "A tool returned", "ai": "The assistant said"}
    # What the user asked and what tools returned are facts to keep whole (within a line);
    # of an answer, its first sentence carries the result.
    point = first_sentence(body) if kind == "ai" else shorten(body, _POINT_CHARS)
    return [f"- {label.get(kind, kind.capitalize())}: {point}"]
