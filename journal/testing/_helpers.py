"""Helpers of the contract suite: valid events with defaults, and their seqs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from journal.events import NewEvent, RunEvent

__all__ = ["T0", "ev", "many", "seqs"]

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def ev(
    thread_id: str = "t1",
    *,
    run_id: str = "r1",
    category: str = "trace",
    event_type: str | None = None,
    content: Any = None,
    metadata: dict[str, Any] | None = None,
    event_id: str | None = None,
    created_at: datetime | None = None,
) -> NewEvent:
    """A valid ``NewEvent`` with sensible defaults for the category."""
    default_types = {
        "lifecycle": "run.start",
        "message": "message.human",
        "trace": "llm.start",
        "middleware": "middleware:summarize",
    }
    fields: dict[str, Any] = {
        "thread_id": thread_id,
        "run_id": run_id,
        "category": category,
        "event_type": event_type or default_types[category],
        "content": content,
        "metadata": metadata or {},
    }
    if event_id is not None:
        fields["event_id"] = event_id
    if created_at is not None:
        fields["created_at"] = created_at
    return NewEvent(**fields)


def many(n: int, thread_id: str = "t1", **kwargs: Any) -> list[NewEvent]:
    """``n`` valid events of one thread whose content is their index."""
    return [ev(thread_id, content={"i": i}, **kwargs) for i in range(n)]


def seqs(events: list[RunEvent]) -> list[int]:
    """The seqs of ``events`` in order."""
    return [e.seq for e in events]
