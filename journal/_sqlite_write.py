"""The SQLite append transaction, and how stored rows become ``RunEvent`` records.

:func:`append_events` is the whole of an append on one connection: one ``BEGIN IMMEDIATE``
transaction that numbers each thread's new events after its head row, inserts them and moves
the head (see :mod:`journal._sqlite_schema` for the triggers that check it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple

from journal import _sqlite_schema as sql
from journal._batch import encoded_texts, records_in_order
from journal._sqlite_conn import transaction
from journal.encoding import loads
from journal.events import NewEvent, RunEvent, construct

__all__ = ["append_events", "from_micros", "row_to_event", "to_micros"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit


def to_micros(value: datetime) -> int:
    """``value`` as integer microseconds since the Unix epoch (how ``created_at`` is stored)."""
    return (value - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    """The aware UTC datetime of stored microseconds (exact round trip of :func:`to_micros`)."""
    return _EPOCH + timedelta(microseconds=value)


def _record(values: dict[str, Any]) -> RunEvent:
    """A ``RunEvent`` from a stored row's values (validated on the way in): not re-validated."""
    return construct(RunEvent, values)


def row_to_event(row: Sequence[Any]) -> RunEvent:
    """The record of a row of ``SELECT_EVENTS_SQL`` (a new object)."""
    return _record(
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


class _Encoded(NamedTuple):
    """An event on its way in: the event, its encoded content and metadata, its time in µs."""

    event: NewEvent
    content: str
    metadata: str
    at: int


@dataclass
class _ThreadBatch:
    """The new events of one thread in one append: numbered after ``base``, the old head."""

    base: int
    items: list[_Encoded] = field(default_factory=list)
    run_ids: dict[str, None] = field(default_factory=dict)  # in order of first appearance
    new_runs: int = 0  # runs the thread did not have before this batch

    def add(self, item: _Encoded) -> None:
        """Take ``item`` as the thread's next event."""
        self.items.append(item)
        self.run_ids.setdefault(item.event.run_id, None)

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """The ``INSERT_EVENT_SQL`` parameters of each event, in seq order."""
        for seq, (e, content, metadata, at) in enumerate(self.items, start=self.base + 1):
            yield (e.event_id, e.thread_id, seq, e.run_id, e.category, e.event_type,
                   content, metadata, at)  # fmt: skip

    def head_params(self, thread_id: str) -> tuple[Any, ...]:
        """The ``BUMP_HEAD_SQL`` parameters once the events are inserted."""
        last = self.base + len(self.items)
        return (thread_id, last, self.items[0].at, self.items[-1].at, self.new_runs)

    def records(self) -> Iterator[tuple[str, RunEvent]]:
        """``(event_id, record)`` of each new event (sharing the input's content objects)."""
        for seq, item in enumerate(self.items, start=self.base + 1):
            e = item.event
            yield (
                e.event_id,
                _record(
                    {
                        "event_id": e.event_id,
                        "thread_id": e.thread_id,
                        "run_id": e.run_id,
                        "category": e.category,
                        "event_type": e.event_type,
                        "content": e.content,
                        "metadata": e.metadata,
                        "created_at": e.created_at,
                        "seq": seq,
                    }
                ),
            )


def append_events(conn: sqlite3.Connection, events: Sequence[NewEvent]) -> list[RunEvent]:
    """Append a prepared batch on ``conn``; the stored records in input order."""
    encoded = [
        _Encoded(e, content, metadata, to_micros(e.created_at))
        for e, (content, metadata) in zip(events, encoded_texts(events), strict=True)
    ]
    try:  # optimistic: event ids are almost always new, so skip looking them up
        return _write(conn, encoded, look_up=False)
    except sqlite3.IntegrityError as e:
        if "event_id" not in str(e):
            raise
    return _write(conn, encoded, look_up=True)  # a retry: some ids are stored


def _write(
    conn: sqlite3.Connection, encoded: Sequence[_Encoded], *, look_up: bool
) -> list[RunEvent]:
    """One transaction: insert the new events after each thread's head, then move it."""
    with transaction(conn):
        known: dict[str, RunEvent] = {}
        if look_up:
            known = by_event_ids(conn, {item.event.event_id for item in encoded})
        batches: dict[str, _ThreadBatch] = {}
        taken: set[str] = set(known)
        for item in encoded:
            if item.event.event_id in taken:
                continue
            taken.add(item.event.event_id)
            thread = item.event.thread_id
            if thread not in batches:
                row = conn.execute(sql.LAST_SEQ_SQL, (thread,)).fetchone()
                batches[thread] = _ThreadBatch(base=row[0] if row else 0)
            batches[thread].add(item)
        for thread, batch in batches.items():
            batch.new_runs = sum(
                conn.execute(sql.RUN_KNOWN_SQL, (thread, run_id)).fetchone() is None
                for run_id in batch.run_ids
            )
        conn.executemany(
            sql.INSERT_EVENT_SQL, [row for batch in batches.values() for row in batch.rows()]
        )
        for thread, batch in batches.items():  # the head follows the events it counts
            conn.execute(sql.BUMP_HEAD_SQL, batch.head_params(thread))
    for batch in batches.values():
        known.update(batch.records())
    return records_in_order([item.event for item in encoded], known)


def by_event_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, RunEvent]:
    """The stored records of those of ``ids`` that are stored, by event id."""
    wanted = sorted(ids)
    found: dict[str, RunEvent] = {}
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        query = f"{sql.SELECT_EVENTS_SQL} WHERE event_id IN ({', '.join('?' * len(chunk))})"
        for row in conn.execute(query, chunk):
            found[row[0]] = row_to_event(row)
    return found
