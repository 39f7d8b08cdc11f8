"""Per-run and per-thread bookkeeping of a ``RunJournal`` (callback path: no I/O).

``RunState`` is one root run; ``Node`` is any callback run under it (node chain, model call,
tool call) with its attribution; ``ThreadState`` remembers, per conversation, which message
ids are already journaled and which tool results wait for earlier calls of the same AI
message (results enter the state in tool-call order, not completion order).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from journal._capture import add_usage
from journal._edits import HeldWrite

__all__ = ["Node", "RunState", "SpinLock", "ThreadState", "ThreadStates", "ToolOrder", "caller_for"]


class SpinLock:
    """A mutex that never parks the calling thread in a blocking ``acquire``.

    Callbacks of one run arrive on the event-loop thread and on executor threads at once;
    critical sections are a few microseconds, so a contended caller yields the CPU (and the
    GIL) instead of blocking, which keeps async runs free of blocking calls.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        acquire = self._lock.acquire
        while not acquire(False):
            os.sched_yield()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


@dataclass(slots=True)
class RunState:
    """One root run: identity, timing and the totals reported by its terminal event."""

    run_id: str
    thread_id: str
    graph: str
    started: float = field(default_factory=time.perf_counter)
    usage: dict[str, int] = field(default_factory=dict)
    usage_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    message_counts: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    interrupted: bool = False
    task_interrupted: bool = False  # a node of the root graph raised an interrupt
    synced: bool = False  # the journal's order of the state was checked in this run
    finished: bool = False

    def add_usage(self, model: str, usage: dict[str, int]) -> None:
        """Count one model call's usage in the totals and under ``model``."""
        add_usage(self.usage, usage)
        per_model = self.usage_by_model.setdefault(model, {"calls": 0})
        per_model["calls"] += 1
        add_usage(per_model, usage)

    def summary(self, status: str) -> dict[str, Any]:
        """The totals every terminal lifecycle event carries."""
        return {
            "status": status,
            "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
            "usage": dict(self.usage),
            "usage_by_model": {m: dict(u) for m, u in self.usage_by_model.items()},
            "message_counts": dict(self.message_counts),
            "dropped_events": self.dropped,
        }


@dataclass(slots=True)
class Node:
    """A callback run under a root run, with the attribution its events carry."""

    run: RunState
    name: str
    caller: str | None
    node: str | None
    step: int | None
    top: bool = False
    started: float = field(default_factory=time.perf_counter)
    model: str | None = None
    tool_call_id: str | None = None
    path: str = ""  # LangGraph's task path (a superstep applies writes in path order)
    base: Sequence[Any] | None = None  # the ``messages`` a node of the root graph read
    summarized: bool = False  # it dispatched a ``summarization`` event

    def attribution(self) -> dict[str, Any]:
        """``caller``, ``langgraph_step`` and ``langgraph_node`` for event metadata."""
        return {"caller": self.caller, "langgraph_step": self.step, "langgraph_node": self.node}


def caller_for(parent: Node | None, name: str, metadata: dict[str, Any]) -> tuple[str, bool]:
    """``(caller, top)`` of a run started under ``parent`` (``None``: directly under the root).

    A node of the root graph is ``agent``, or ``middleware:<Class>`` for a middleware hook node
    (``create_agent`` names them ``<Class>.<hook>``). Anything inside a nested graph (its
    checkpoint namespace has a ``|``) is ``subagent:<name of the nested graph>``.
    """
    if parent is None:
        node = str(metadata.get("langgraph_node") or name)
        if "." in node:
            return f"middleware:{node.split('.', 1)[0]}", True
        return "agent", True
    caller = parent.caller or "agent"
    if not caller.startswith("subagent:") and "|" in str(
        metadata.get("langgraph_checkpoint_ns") or ""
    ):
        caller = f"subagent:{parent.name}"
    return caller, False


class ToolOrder:
    """Holds tool results until every earlier call of the same AI message has its result."""

    __slots__ = ("_expected", "_held", "paused", "step")

    def __init__(self) -> None:
        self._expected: list[str] = []
        self._held: dict[str, list[BaseMessage]] = {}
        self.step: int | None = None  # the superstep of the results seen so far
        self.paused: Node | None = None  # the run that paused holding results, if any

    @property
    def pending(self) -> bool:
        """Whether results are still held."""
        return bool(self._expected)

    def expect(self, call_ids: list[str]) -> list[BaseMessage]:
        """Start a new AI message's calls; return what the previous one still held."""
        released = self.release_all()
        self._expected = call_ids
        self.step = None
        return released

    def complete(self, call_id: str | None, messages: list[BaseMessage]) -> list[BaseMessage]:
        """Record ``call_id``'s results; return every result now due, in call order."""
        if call_id is None or call_id not in self._expected:
            return messages
        self._held[call_id] = messages
        out: list[BaseMessage] = []
        while self._expected and self._expected[0] in self._held:
            out.extend(self._held.pop(self._expected.pop(0)))
        return out

    def settle(self, call_id: str | None) -> list[BaseMessage]:
        """``call_id`` was answered out of band (already journaled): return what is now due."""
        if call_id in self._expected:
            self._expected.remove(call_id)
        out: list[BaseMessage] = []
        while self._expected and self._expected[0] in self._held:
            out.extend(self._held.pop(self._expected.pop(0)))
        return out

    def release_all(self) -> list[BaseMessage]:
        """Every held result in call order; forget the calls that never answered."""
        out: list[BaseMessage] = []
        for call_id in self._expected:
            out.extend(self._held.pop(call_id, ()))
        self._expected = []
        self._held.clear()
        self.paused = None
        return out


@dataclass(slots=True)
class ThreadState:
    """What the journal remembers of one conversation in this process.

    ``order`` is the state's message ids as the journal has recorded them (what replay's state
    view rebuilds); ``last`` the latest journaled object of each id and its content object then
    (a node that returns the same object, its content not replaced, changed nothing);
    ``fresh`` the ``(id, task path)`` of the messages
    journaled since the current superstep started; ``held`` the edits of the current
    superstep, waiting to be applied.
    """

    seen: set[str] = field(default_factory=set)
    tools: ToolOrder = field(default_factory=ToolOrder)
    order: dict[str, None] = field(default_factory=dict)
    last: dict[str, tuple[BaseMessage, Any]] = field(default_factory=dict)
    fresh: list[tuple[str, str]] = field(default_factory=list)
    step: int | None = None
    held: list[HeldWrite] = field(default_factory=list)
    held_step: int | None = None
    # messages written in a form the journal could not give an id: (node, message, caller)
    unplaced: list[tuple[Any, BaseMessage, str]] = field(default_factory=list)


class ThreadStates:
    """A bounded LRU map ``thread_id -> ThreadState``."""

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, ThreadState] = OrderedDict()

    def get(self, thread_id: str) -> ThreadState:
        """The state of ``thread_id`` (created when new; the least recent one is evicted)."""
        state = self._items.get(thread_id)
        if state is None:
            state = self._items[thread_id] = ThreadState()
            if len(self._items) > self._capacity:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(thread_id)
        return state

    def values(self) -> list[ThreadState]:
        """Every remembered thread's state."""
        return list(self._items.values())
