"""The SQLite append transaction.

:func:`append_events` is the whole of an append on one connection: one ``BEGIN IMMEDIATE``
transaction that numbers each thread's new events after its head row, merges the batch into
the runs and usage the store keeps (:mod:`journal._sqlite_runs`), inserts the events and
moves the head (see :mod:`journal._sqlite_schema` for the triggers that check it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._batch import encoded_texts, records_in_order
from journal._runs import project
from journal._sqlite_conn import transaction
from journal._sqlite_rows import record, row_to_event, to_micros
from journal.events import NewEvent, RunEvent

__all__ = ["append_events", "by_event_ids"]

_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit


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

    def numbered(self) -> Iterator[tuple[int, NewEvent]]:
        """``(seq, event)`` of each new event, in seq order."""
        for seq, item in enumerate(self.items, start=self.base + 1):
            yield seq, item.event

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """The ``INSERT_EVENT_SQL`` parameters of each event, in seq order."""
        for seq, (e, content, metadata, at) in enumerate(self.items, start=self.base + 1):
            yield (e.event_id, e.thread_id, seq, e.run_id, e.category, e.event_type,
                   content, metadata, at)  # fmt: skip

    def head_params(self, thread_id: str) -> tuple[Any, ...]:
        """The ``MOVE_HEAD_SQL`` parameters once the events are inserted."""
        last = self.base + len(self.items)
        return (thread_id, last, self.items[0].at, self.items[-1].at, self.base)

    def records(self) -> Iterator[tuple[str, RunEvent]]:
        """``(event_id, record)`` of each new event (sharing the input's content objects)."""
        for seq, e in self.numbered():
            values = dict(e.__dict__)  # a NewEvent's fields, exactly
            values["seq"] = seq
            yield e.event_id, record(values)


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
    """One transaction: keep the runs, insert the new events after each head, move it."""
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
            batches[thread].items.append(item)
        runs.keep(conn, project(p for b in batches.values() for p in b.numbered()))
        conn.executemany(
            sql.INSERT_EVENT_SQL, [row for batch in batches.values() for row in batch.rows()]
        )
        for thread, batch in batches.items():  # the head follows the events it counts
            conn.execute(sql.MOVE_HEAD_SQL, batch.head_params(thread))
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
