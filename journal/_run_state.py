"""Per-run bookkeeping of a ``RunJournal`` (callback path: no I/O).

``RunState`` is one root run; ``Node`` is any callback run under it (node chain, model call,
tool call) with its attribution; ``ThreadStates`` keeps one object per conversation (see
:mod:`journal._conversation`), bounded.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from journal._capture import PUSH_TASK
from journal._kinds import scalars_kind, span_kind
from journal.catalog import PARENT_SPAN_KEY, TAG_RE
from journal.encoding import NOT_PLAIN, PLAIN

__all__ = ["Node", "RunState", "SpinLock", "ThreadStates", "caller_for", "internal_caller"]

T = TypeVar("T")


class SpinLock:
    """A mutex that never parks the calling thread in a blocking ``acquire``.

    Callbacks of one run arrive on the event-loop thread and on executor threads at once;
    critical sections are a few microseconds, so a contended caller yields the CPU (and the
    GIL) instead of blocking, which keeps async runs free of blocking calls.

    ``with lock:`` takes it; the callback path's hottest methods write it out instead
    (``if not lock.poll(False): lock.acquire()``, then ``try``/``finally: lock.release()``):
    ``__enter__`` and ``__exit__`` are two Python calls, ``poll`` and ``release`` none (a
    ``with`` of them costs a callback about as much as five plain calls).
    """

    __slots__ = ("poll", "release")

    def __init__(self) -> None:
        lock = threading.Lock()
        #: ``poll(False)``: take the lock if nobody holds it, at once; whether it was taken
        self.poll = lock.acquire
        #: give the lock back (its holder only)
        self.release = lock.release

    def acquire(self) -> None:
        """Take the lock, yielding the CPU (and the GIL) while another thread holds it."""
        while not self.poll(False):
            os.sched_yield()

    def __enter__(self) -> None:
        if self.poll(False):  # the usual case: nobody holds it
            return
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


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
    # attribution of each node step of the root graph that raised and was not retried with
    # success, by task, in the order they first raised (the first is what run.error names)
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    synced: bool = False  # the journal's order of the state was checked in this run
    # the id of the last message of its input: the state's messages after it are the run's
    input_end: str | None = None
    # the ids of the messages first journaled in this run
    own_ids: set[str] = field(default_factory=set)
    finished: bool = False

    def add_usage(self, model: str, usage: dict[str, int]) -> None:
        """Count one model call's usage in the totals and under ``model``."""
        by_model = self.usage_by_model
        per_model = by_model.get(model)  # (no new dict a call, as setdefault's argument is)
        if per_model is None:
            per_model = by_model[model] = {"calls": 1}
        else:
            per_model["calls"] += 1
        total = self.usage
        for key, value in usage.items():  # (add_usage into both, in one pass)
            total[key] = total.get(key, 0) + value
            per_model[key] = per_model.get(key, 0) + value

    def task_raised(self, task: str, attribution: dict[str, Any]) -> None:
        """A node step of the root graph (task ``task``) raised: ``attribution`` names it
        (its latest attempt, if LangGraph retried it)."""
        self.failures[task] = attribution

    def task_settled(self, task: str) -> None:
        """An attempt at a node step of the root graph (task ``task``) ended without raising
        (it ended, paused or was cancelled): its earlier failures (a ``RetryPolicy`` runs
        the same task again) did not fail the run."""
        self.failures.pop(task, None)

    def failed_node(self) -> dict[str, Any] | None:
        """The attribution of the first node step that raised and did not recover, if any."""
        return next(iter(self.failures.values()), None)

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
    """A callback run under a root run, with the attribution its events carry.

    The fields up to ``namespace`` are what :class:`journal._registry.RunRegistry` passes, by
    position (a call with a dozen keywords costs the callback path about 0.4 µs more)."""

    run: RunState
    name: str
    caller: str | None
    node: str | None
    step: int | None
    top: bool = False
    # run id of its nearest traced ancestor (a tool or model call, else its node of the root
    # graph, else the root): what its own events name as their parent span
    parent_span: str = ""
    # what the events of the runs under it name: its own run id if it is a tool or model call
    # or a node of the root graph, else its parent_span
    span: str = ""
    is_tool: bool = False  # a tool call
    in_tool: bool = False  # it runs inside a tool call
    namespace: str | None = None  # its LangGraph checkpoint namespace, if it has one
    started: float = field(default_factory=time.perf_counter)
    model: str | None = None
    tool_call_id: str | None = None
    path: str = ""  # LangGraph's task path (a superstep applies writes in path order)
    base: Sequence[Any] | None = None  # the ``messages`` a node of the root graph read
    summarized: bool = False  # it dispatched a ``summarization`` event
    # the node of the root graph it runs in; ``None`` when it is one (no reference to itself:
    # a cycle would keep every node of the root graph alive until a collection)
    task: Node | None = None
    ended: bool = False  # a node of the root graph that has ended
    # outputs of model calls made in this node of the root graph, waiting for it to end
    outputs: list[Any] | None = None
    kind: int = -1  # the plain kind of its attribution values, once known (see below)

    def attribution_kind(self) -> int:
        """The ``plain_kind`` hint of its attribution values (``caller``, step, node and
        spans: :func:`journal._kinds.scalars_kind`), worked out once per run."""
        kind = self.kind
        if kind < 0:
            kind = self.kind = scalars_kind(
                self.caller, self.step, self.node, self.parent_span, self.span
            )
        return kind

    def event_kind(self, *values: Any, span: float | None = None, kind: int = PLAIN) -> int:
        """The ``plain_kind`` hint of metadata of this run's events made of its attribution,
        ``values`` (read by :func:`journal._kinds.scalars_kind`), the call's ``span`` (ms)
        and parts of kind ``kind``; ``NOT_PLAIN`` when one of them is not known."""
        attribution = self.kind  # (the callback path: as few calls as it can)
        if attribution < 0:
            attribution = self.attribution_kind()
        if not (attribution and kind and scalars_kind(*values)):
            return NOT_PLAIN
        if span is None:  # the attribution and the values are PLAIN
            return kind
        spent = span_kind(span)
        return spent and (spent if spent > kind else kind)  # (max, without its call)

    def attribution(self) -> dict[str, Any]:
        """``caller``, ``langgraph_step`` and ``langgraph_node`` for event metadata."""
        return {"caller": self.caller, "langgraph_step": self.step, "langgraph_node": self.node}

    def task_key(self) -> str:
        """For a node of the root graph: the LangGraph task it runs, the same for every
        attempt a retry policy makes (its checkpoint namespace ends in the task id); its own
        span when it has no namespace."""
        return self.namespace or self.span

    def deciding_node(self) -> Node | None:
        """For a model call: the node of the root graph whose output tells whether its answer
        enters the thread's state, if it may; ``None`` when it cannot (the call is made inside
        a tool, a nested graph — a subagent —, outside any node, or after its node ended)."""
        task = self.task
        if self.top or self.in_tool or task is None or task.ended:
            return None
        if str(self.caller).startswith("subagent:"):
            return None
        return task

    def call_attribution(self) -> dict[str, Any]:
        """:meth:`attribution` of this call's own events, with their parent span."""
        return {
            "caller": self.caller,
            "langgraph_step": self.step,
            "langgraph_node": self.node,
            PARENT_SPAN_KEY: self.parent_span,
        }

    def inner_attribution(self) -> dict[str, Any]:
        """:meth:`attribution` of an event that happens inside this run, with its parent span."""
        return {
            "caller": self.caller,
            "langgraph_step": self.step,
            "langgraph_node": self.node,
            PARENT_SPAN_KEY: self.span,
        }


def caller_for(parent: Node | None, name: str, metadata: Mapping[str, Any]) -> tuple[str, bool]:
    """``(caller, top)`` of a run started under ``parent`` (``None``: directly under the root).

    A node of the root graph is ``agent``, or ``middleware:<Class>`` for a middleware hook node
    (``create_agent`` names them ``<Class>.<hook>``). Anything inside a nested graph is
    ``subagent:<name of the nested graph>``: its checkpoint namespace is not its parent's and
    has a ``|``, or (a graph with a checkpointer of its own, called from a tool or a node) is
    one of its own. A functional-API task (``@task``) a run calls is part of that run's
    graph, with its caller: LangGraph runs it as a task of the same graph, in a namespace
    under its caller's.
    """
    if parent is None:
        node = str(metadata.get("langgraph_node") or name)
        if "." in node:
            return f"middleware:{node.split('.', 1)[0]}", True
        return "agent", True
    caller = parent.caller or "agent"
    if not caller.startswith("subagent:"):
        namespace = metadata.get("langgraph_checkpoint_ns")
        if (
            namespace
            and namespace != parent.namespace
            and ("|" in str(namespace) or parent.namespace)
            and not _task_call(parent, str(namespace), metadata)
        ):
            caller = f"subagent:{parent.name}"
    return caller, False


def _task_call(parent: Node, namespace: str, metadata: Mapping[str, Any]) -> bool:
    """Whether the run is a functional-API task that ``parent`` called: LangGraph pushes it
    with the path ``(push, <caller's task path>, <index>, True)`` and the namespace
    ``<caller's namespace>|<task>:<id>`` (a nested graph's runs have a path of its own)."""
    path = metadata.get("langgraph_path")
    return (
        type(path) is tuple
        and len(path) == 4
        and path[0] == PUSH_TASK
        and path[3] is True
        and namespace.rpartition("|")[0] == parent.namespace
    )


#: LangChain's middleware that make model calls of their own inside the agent's nodes, by the
#: ``lc_source`` metadata of those calls.
_INTERNAL_SOURCES: Final = {
    "summarization": "SummarizationMiddleware",
    "tool_emulation": "LLMToolEmulator",
    "tool_selection": "LLMToolSelectorMiddleware",
}


def internal_caller(source: Any) -> str:
    """The caller of a model call made with ``lc_source`` metadata ``source``: LangChain marks
    so the calls a middleware makes for itself (the tool emulator's inside the tools node, the
    tool selector's inside the model node), never the agent's: ``middleware:<Class>``, or
    ``middleware:<source>`` for another one."""
    if type(source) is str and source in _INTERNAL_SOURCES:
        return f"middleware:{_INTERNAL_SOURCES[source]}"
    if type(source) is str and len(source) <= 64 and TAG_RE.match(source):
        return f"middleware:{source}"
    return "middleware:internal"


class ThreadStates(Generic[T]):
    """A bounded LRU map ``thread_id -> T``, each made by ``factory(thread_id)`` when new."""

    __slots__ = ("_capacity", "_factory", "_items", "_latest")

    def __init__(self, factory: Callable[[str], T], capacity: int = 4096) -> None:
        self._factory = factory
        self._capacity = capacity
        self._items: OrderedDict[str, T] = OrderedDict()
        # the most recent thread and its state: the last in ``_items``, where a look-up of
        # it would move it (a run's callbacks ask for the same thread again and again)
        self._latest: tuple[str, T] | None = None

    def get(self, thread_id: str) -> T:
        """The state of ``thread_id`` (created when new; the least recent one is evicted)."""
        latest = self._latest
        if latest is not None and latest[0] == thread_id:
            return latest[1]
        state = self._items.get(thread_id)
        if state is None:
            state = self._items[thread_id] = self._factory(thread_id)
            if len(self._items) > self._capacity:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(thread_id)
        if self._capacity > 0:  # (else nothing is remembered, the latest not either)
            self._latest = (thread_id, state)
        return state

    def values(self) -> list[T]:
        """Every remembered thread's state."""
        return list(self._items.values())
