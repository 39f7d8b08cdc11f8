"""The SQLite append transaction.

:func:`append_events` is the whole of an append on one connection: one ``BEGIN IMMEDIATE``
transaction that numbers each thread's new events after its head row, merges the batch into
the runs and usage the store keeps (:mod:`journal._sqlite_runs`), inserts the events and
moves the head (see :mod:`journal._sqlite_schema` for the triggers that check it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._batch import PreparedBatch, encoded_texts, records_in_order, stored_record
from journal._runs import project
from journal._sqlite_rows import EPOCH, MICROSECOND, row_to_event
from journal._sqlite_tail import keep_going
from journal.events import NewEvent, RunEvent

__all__ = ["append_events", "by_event_ids"]

_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit


def append_events(
    conn: sqlite3.Connection, events: Sequence[NewEvent], new_ids: set[str] | None = None
) -> list[RunEvent]:
    """Append a prepared batch on ``conn``; the stored records in input order (``new_ids``
    gets the ids of the events it stored)."""
    if type(events) is PreparedBatch:  # the usual batch: its texts and owned, as they are
        texts: Sequence[tuple[str, str]] = events.texts
        owned: Sequence[bool] = events.owned
    else:
        texts = encoded_texts(events)
        found: Any = getattr(events, "owned", None)
        usable = isinstance(found, list) and len(found) == len(events)
        owned = found if usable else [False] * len(events)
    try:  # optimistic: event ids are almost always new, so skip looking them up
        return _write(conn, events, texts, owned, look_up=False, new_ids=new_ids)
    except sqlite3.IntegrityError as e:
        if "event_id" not in str(e):
            raise
    return _write(conn, events, texts, owned, look_up=True, new_ids=new_ids)  # some stored


def _write(
    conn: sqlite3.Connection,
    events: Sequence[NewEvent],
    texts: Sequence[tuple[str, str]],
    owned: Sequence[bool],
    *,
    look_up: bool,
    new_ids: set[str] | None = None,
) -> list[RunEvent]:
    """One transaction: keep the runs, insert the new events after each head, move it.

    One pass over the batch numbers each new event after its thread's head and builds its
    row; the records are made after the commit (an owned event becomes its own record).
    """
    conn.execute("BEGIN IMMEDIATE")  # the write lock up front (journal._sqlite_conn)
    try:
        known: dict[str, RunEvent] = {}
        if look_up:
            known = by_event_ids(conn, {event.event_id for event in events})
        heads: dict[str, list[int]] = {}  # thread -> [old last seq, new last seq, times]
        stored: dict[str, str | None] = {}  # thread -> its head's kept, as read
        rows: list[tuple[Any, ...]] = []
        numbered: list[tuple[int, NewEvent]] = []
        fresh: list[int] = []  # with look_up: the batch index of each new event
        taken: set[str] = set(known)
        run_id = events[0].__dict__["run_id"]
        one_run = True  # every new event of one run (the usual batch)
        for index, event in enumerate(events):
            values = event.__dict__
            event_id = values["event_id"]
            if look_up:  # (else an id stored already, or twice in the batch, fails the
                if event_id in taken:  # insert: append_events retries with look_up)
                    continue
                taken.add(event_id)
                fresh.append(index)
            thread = values["thread_id"]
            at = (values["created_at"] - EPOCH) // MICROSECOND  # to_micros, inline
            head = heads.get(thread)
            if head is None:  # the head row, read once: its last seq and what runs keep in it
                row = conn.execute(sql.HEAD_ROW_SQL, (thread,)).fetchone()
                base, stored[thread] = (row[0], row[1]) if row else (0, None)
                head = heads[thread] = [base, base, at, at]
            seq = head[1] = head[1] + 1
            head[3] = at
            content, metadata = texts[index]
            run = values["run_id"]
            if run != run_id:
                one_run = False
            rows.append((event_id, thread, seq, run, values["category"],
                         values["event_type"], content, metadata, at))  # fmt: skip
            numbered.append((seq, event))
        going = None  # the usual batch: its run goes on (no Projection, no runs row)
        if one_run and len(heads) == 1 and rows:
            newest = rows[-1]  # its thread, seq and time are the head's new ones
            going = keep_going(newest[1], run_id, stored[newest[1]], rows, numbered)
        if going is not None:
            conn.executemany(sql.INSERT_EVENT_SQL, rows)
            conn.execute(sql.CONTINUE_HEAD_SQL, (newest[2], newest[8], going, newest[1]))
        else:
            kept = runs.keep_heads(conn, project(numbered), stored)
            conn.executemany(sql.INSERT_EVENT_SQL, rows)
            for thread, (base, last, first_at, last_at) in heads.items():  # the head follows
                text, goes_on = kept[thread]
                if goes_on:
                    conn.execute(sql.CONTINUE_HEAD_SQL, (last, last_at, text, thread))
                else:
                    conn.execute(
                        sql.MOVE_HEAD_KEPT_SQL, (thread, last, first_at, last_at, base, text)
                    )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if new_ids is not None:
        new_ids.update(event.__dict__["event_id"] for _, event in numbered)
    if not look_up:  # every event new and once: the records, in order
        return [
            stored_record(event, seq, own)
            for (seq, event), own in zip(numbered, owned, strict=True)
        ]
    records = [
        stored_record(event, seq, owned[index])
        for (seq, event), index in zip(numbered, fresh, strict=True)
    ]
    if len(records) == len(events):
        return records
    known.update((record.event_id, record) for record in records)
    return records_in_order(events, known)


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
