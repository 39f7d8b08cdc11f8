"""Run one read plan against a store, synchronously or asynchronously.

The history functions are written once as *read plans*: generators that yield :class:`Read`,
:class:`LastSeq` or :class:`Call` requests and receive the store's answers. :func:`run_plan`
answers them with the store's sync methods, :func:`arun_plan` with its async ones, so
``build_timeline``/``abuild_timeline`` and ``replay``/``areplay`` share every line of their
logic and the async variants never block the event loop.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from journal.store import RunEventStore

__all__ = ["Call", "LastSeq", "Plan", "Read", "arun_plan", "check_int", "run_plan"]

T = TypeVar("T")


@dataclass(frozen=True)
class Read:
    """A ``store.read(thread_id, **kwargs)`` request; the plan receives the events."""

    thread_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LastSeq:
    """A ``store.last_seq(thread_id)`` request; the plan receives the int."""

    thread_id: str


@dataclass(frozen=True)
class Call:
    """A ``store.<method>(*args, **kwargs)`` request (``a<method>`` when run async)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Read | LastSeq | Call, Any, T]


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> None:
    """Raise ``TypeError`` unless ``value`` is an int, ``ValueError`` if it is out of range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ValueError(f"{name} must be {bounds}, got {value}")


def run_plan(store: RunEventStore, plan: Plan[T]) -> T:
    """Drive ``plan`` with the store's sync methods and return its result."""
    try:
        request = next(plan)
        while True:
            answer: Any
            if isinstance(request, Read):
                answer = store.read(request.thread_id, **request.kwargs)
            elif isinstance(request, Call):
                answer = getattr(store, request.method)(*request.args, **request.kwargs)
            else:
                answer = store.last_seq(request.thread_id)
            request = plan.send(answer)
    except StopIteration as done:
        result: T = done.value
        return result


async def arun_plan(store: RunEventStore, plan: Plan[T]) -> T:
    """Drive ``plan`` with the store's async methods and return its result."""
    try:
        request = next(plan)
        while True:
            answer: Any
            if isinstance(request, Read):
                answer = await store.aread(request.thread_id, **request.kwargs)
            elif isinstance(request, Call):
                method = getattr(store, f"a{request.method}")
                answer = await method(*request.args, **request.kwargs)
            else:
                answer = await store.alast_seq(request.thread_id)
            request = plan.send(answer)
    except StopIteration as done:
        result: T = done.value
        return result
