"""The order tool results are journaled in: the order of the calls, not of completion.

LangGraph runs the calls of one AI message as parallel tasks and puts their results into the
state in the order of the calls. :class:`ToolOrder` holds a result until every earlier call of
the same AI message has its result. Its methods are named for what happened in the run; each
returns the results that are now due, in call order, for the caller to journal.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from langchain_core.messages import BaseMessage

__all__ = ["ToolOrder"]

H = TypeVar("H")


class ToolOrder(Generic[H]):
    """The tool calls of a conversation's latest AI message and the results they hold back.

    ``H`` is whatever the owner needs to journal results released at close (the run that
    paused holding them); the policy never looks inside it.
    """

    __slots__ = ("_expected", "_held", "_paused", "_resumed", "_step")

    def __init__(self) -> None:
        self._expected: list[str] = []
        self._held: dict[str, list[BaseMessage]] = {}
        self._step: int | None = None  # the superstep of the results seen so far
        self._paused: H | None = None  # the run that paused holding results, if any
        self._resumed = False  # a call the paused run awaited was answered since it paused

    @property
    def pending(self) -> bool:
        """Whether calls of the latest AI message still wait for their results."""
        return bool(self._expected)

    @property
    def resumed(self) -> bool:
        """Whether the run that last paused was resumed here: a call it awaited was answered
        (or failed) since (what it held is then released by the resumed run itself)."""
        return self._resumed

    def held_ids(self) -> list[str]:
        """The message ids of the results held back."""
        return [str(m.id) for held in self._held.values() for m in held if m.id is not None]

    def calls_made(self, call_ids: list[str]) -> list[BaseMessage]:
        """A new AI message made ``call_ids``: what the previous one still held is due."""
        released = self._release_all()
        self._expected = call_ids
        self._step = None
        return released

    def result_written(
        self, call_id: str | None, messages: list[BaseMessage], step: int | None
    ) -> list[BaseMessage]:
        """A node of superstep ``step`` answered ``call_id`` with ``messages`` (none: the
        call ended without a message, e.g. a ``Command`` without one). A result of no awaited
        call passes through at once."""
        self._step = step
        return self._answered(call_id, messages)

    def call_failed(self, call_id: str | None) -> list[BaseMessage]:
        """The task of ``call_id`` failed (no result will come): the later results are due."""
        return self._answered(call_id, [])

    def answered_elsewhere(self, call_id: str | None) -> list[BaseMessage]:
        """``call_id``'s result was journaled by someone else (a middleware hook wrote it)."""
        if call_id in self._expected:
            self._resumed = self._resumed or self._paused is not None
            self._expected.remove(call_id)
        return self._due()

    def step_started(self, step: int | None) -> list[BaseMessage]:
        """A node of superstep ``step`` starts: if it is later than the results seen so far,
        every call of the earlier step is over, answered or not."""
        later = step is not None and self._step is not None and step > self._step
        return self._release_all() if self._expected and later else []

    def run_ended(self) -> list[BaseMessage]:
        """The run ended (not paused): every held result is due; unanswered calls are over."""
        return self._release_all()

    def run_paused(self, holder: H) -> None:
        """The run paused for a human: its calls are answered when it resumes; ``holder``
        journals what is still held if the journal closes first."""
        self._paused = holder
        self._resumed = False

    def closing(self) -> tuple[H | None, list[BaseMessage]]:
        """The journal closes: the paused run's holder and its held results (none if no run
        paused holding results)."""
        holder = self._paused
        if holder is None:
            return None, []
        return holder, self._release_all()

    def _answered(self, call_id: str | None, messages: list[BaseMessage]) -> list[BaseMessage]:
        if call_id is None or call_id not in self._expected:
            return messages
        self._resumed = self._resumed or self._paused is not None
        self._held[call_id] = messages
        return self._due()

    def _due(self) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        while self._expected and self._expected[0] in self._held:
            out.extend(self._held.pop(self._expected.pop(0)))
        return out

    def _release_all(self) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for call_id in self._expected:
            out.extend(self._held.pop(call_id, ()))
        self._expected = []
        self._held.clear()
        self._paused = None
        return out
