"""What the store reports about threads and runs (re-exported by :mod:`journal.events`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

__all__ = ["RunSummary", "ThreadSummary", "status_from_lifecycle"]


class ThreadSummary(BaseModel):
    """One thread as ``list_threads`` reports it."""

    thread_id: str
    event_count: int
    last_seq: int
    run_count: int
    first_event_at: datetime
    last_event_at: datetime


class RunSummary(BaseModel):
    """One run of a thread as ``list_runs`` reports it.

    ``status`` comes from the run's last lifecycle event: ``running`` (only ``run.start`` or
    ``run.resume``), ``success`` (``run.end``), ``error``, ``cancelled``, ``interrupted``, or
    ``unknown`` when the run has no lifecycle event.
    """

    run_id: str
    thread_id: str
    first_seq: int
    last_seq: int
    event_count: int
    started_at: datetime
    last_event_at: datetime
    status: str


def status_from_lifecycle(event_type: str | None) -> str:
    """Map a run's last lifecycle ``event_type`` to a ``RunSummary.status``."""
    return {
        None: "unknown",
        "run.start": "running",
        "run.resume": "running",
        "run.end": "success",
        "run.error": "error",
        "run.cancel": "cancelled",
        "run.interrupt": "interrupted",
    }.get(event_type, "unknown")
