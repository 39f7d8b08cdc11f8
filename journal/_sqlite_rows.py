"""How SQLite rows and Python values map: times as integer microseconds, rows as records."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from journal.encoding import loads
from journal.events import RunEvent, construct

__all__ = ["EPOCH", "MICROSECOND", "from_micros", "record", "row_to_event", "to_micros"]

#: What stored times count from (``created_at`` 0).
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND: Final = timedelta(microseconds=1)


def to_micros(value: datetime) -> int:
    """``value`` as integer microseconds since the Unix epoch (how ``created_at`` is stored)."""
    return (value - EPOCH) // MICROSECOND


def from_micros(value: int) -> datetime:
    """The aware UTC datetime of stored microseconds (exact round trip of :func:`to_micros`)."""
    return EPOCH + timedelta(microseconds=value)


def record(values: dict[str, Any]) -> RunEvent:
    """A ``RunEvent`` from a stored row's values (validated on the way in): not re-validated."""
    return construct(RunEvent, values)


def row_to_event(row: Sequence[Any]) -> RunEvent:
    """The record of a row of ``SELECT_EVENTS_SQL`` (a new object)."""
    return record(
        {
            "event_id": row[0],
            "thread_id": row[1],
            "run_id": row[3],
            "category": row[4],
            "event_type": row[5],
            "content": loads(row[6]),
            "metadata": loads(row[7]),
            "created_at": from_micros(row[8]),
            "seq": row[2],
        }
    )
