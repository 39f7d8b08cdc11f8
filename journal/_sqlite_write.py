"""The SQLite append transaction.

:func:`append_events` is the whole of an append on one connection: one ``BEGIN IMMEDIATE``
transaction that numbers each thread's new events after its head row, merges the batch into
the runs and usage the store keeps (:mod:`journal._sqlite_runs`), inserts the events and
moves the head (see :mod:`journal._sqlite_schema` for the triggers that check it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any, Final

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._batch import PreparedBatch, encoded_texts, records_in_order, stored_record
from journal._runs import project
from journal._sqlite_rows import EPOCH, MICROSECOND, row_to_event
from journal._sqlite_tail import keep_going, start_run
from journal.events import NewEvent, RunEvent

__all__ = ["append_events", "by_event_ids"]

_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit
#: Rows one multi-row insert takes: one statement step per chunk costs less than a step per
#: row (``executemany``), 450 parameters stay far below SQLite's limit.
_CHUNK: Final = 50
_ROW_VALUES: Final = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
assert sql.INSERT_EVENT_SQL.endswith(f" VALUES {_ROW_VALUES}")
_INSERT_CHUNK_SQL: Final = sql.INSERT_EVENT_SQL + f", {_ROW_VALUES}" * (_CHUNK - 1)


def append_events(
    conn: sqlite3.Connection,
    events: Sequence[NewEvent],
    new_ids: set[str] | None = None,
    records: bool = True,
) -> list[RunEvent]:
    """Append a prepared batch on ``conn``; the stored records in input order (``new_ids``
    gets the ids of the events it stored). ``records=False``: the same write, and no
    records (an empty list) for a caller that does not use them."""
    times: Sequence[int] | None = None
    if type(events) is PreparedBatch:  # the usual batch: its texts, owned and times, as they are
        texts: Sequence[tuple[str, str]] = events.texts
        owned: Sequence[bool] = events.owned
        times = events.times
    else:
        texts = encoded_texts(events)
        found: Any = getattr(events, "owned", None)
        usable = isinstance(found, list) and len(found) == len(events)
        owned = found if usable else [False] * len(events)
    if times is None:  # the rows' times, in µs (to_micros, inline)
        times = [(event.__dict__["created_at"] - EPOCH) // MICROSECOND for event in events]
    try:  # optimistic: event ids are almost always new, so skip looking them up
        return _write(
            conn, events, texts, owned, times, look_up=False, new_ids=new_ids, records=records
        )
    except sqlite3.IntegrityError as e:
        if "event_id" not in str(e):
            raise
    # some stored already
    return _write(conn, events, texts, owned, times, look_up=True, new_ids=new_ids, records=records)


def _write(
    conn: sqlite3.Connection,
    events: Sequence[NewEvent],
    texts: Sequence[tuple[str, str]],
    owned: Sequence[bool],
    times: Sequence[int],
    *,
    look_up: bool,
    new_ids: set[str] | None = None,
    records: bool = True,
) -> list[RunEvent]:
    """One transaction: keep the runs, insert the new events after each head, move it.

    One pass over the batch's new events (``look_up``: those whose ids are not stored, each
    id once; else all of them) numbers each after its thread's head and builds its row
    (``times``: each event's ``created_at`` in µs, the row's); the records are made after the
    commit (an owned event becomes its own record), unless ``records`` is false (then none:
    an empty list).
    """
    conn.execute("BEGIN IMMEDIATE")  # the write lock up front (journal._sqlite_conn)
    try:
        known: dict[str, RunEvent] = {}
        new, new_texts, new_times = events, texts, times  # the new events, their texts, times
        fresh: list[int] = []  # with look_up: the batch index of each new event
        if look_up:
            known = by_event_ids(conn, {event.event_id for event in events})
            fresh = _fresh(events, known)
            new = [events[index] for index in fresh]
            new_texts = [texts[index] for index in fresh]
            new_times = [times[index] for index in fresh]
        heads: dict[str, list[int]] = {}  # thread -> [old last seq, new last seq, times]
        stored: dict[str, str | None] = {}  # thread -> its head's kept, as read
        rows: list[tuple[Any, ...]] = []
        add_row = rows.append
        run_id = events[0].__dict__["run_id"]
        one_run = True  # every new event of one run (the usual batch)
        head_thread, head = None, [0, 0, 0, 0]  # the last event's thread, and its head
        for event, (content, metadata), at in zip(new, new_texts, new_times, strict=True):
            values = event.__dict__
            thread = values["thread_id"]
            if thread != head_thread:  # (most batches are of one thread)
                found = heads.get(thread)
                if found is None:  # the head row, read once: its last seq and what runs keep
                    row = conn.execute(sql.HEAD_ROW_SQL, (thread,)).fetchone()
                    base, stored[thread] = (row[0], row[1]) if row else (0, None)
                    found = heads[thread] = [base, base, at, at]
                head_thread, head = thread, found
            seq = head[1] = head[1] + 1
            head[3] = at
            run = values["run_id"]
            if run != run_id:
                one_run = False
            add_row((values["event_id"], thread, seq, run, values["category"],
                     values["event_type"], content, metadata, at))  # fmt: skip
        if one_run and len(heads) == 1 and rows:  # the usual batch: one run of one thread
            _write_one_run(conn, run_id, heads, stored, rows, new)
        else:
            kept = runs.keep_heads(conn, project(_numbered(rows, new)), stored)
            _insert(conn, rows)
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
        new_ids.update(event.__dict__["event_id"] for event in new)
    if not records:
        return []
    if not look_up:  # every event new and once: the records, in order
        return [
            stored_record(event, row[2], own)
            for row, event, own in zip(rows, events, owned, strict=True)
        ]
    made = [
        stored_record(event, row[2], owned[index])
        for row, event, index in zip(rows, new, fresh, strict=True)
    ]
    if len(made) == len(events):
        return made
    known.update((record.event_id, record) for record in made)
    return records_in_order(events, known)


def _fresh(events: Sequence[NewEvent], known: dict[str, RunEvent]) -> list[int]:
    """The batch index of each of ``events`` to store: its id not ``known`` (stored), and
    not an earlier event's of the batch (an id stored already, or twice in the batch, fails
    the insert that did not look them up: :func:`append_events` retries with the look-up)."""
    taken: set[str] = set(known)
    fresh: list[int] = []
    for index, event in enumerate(events):
        event_id = event.__dict__["event_id"]
        if event_id not in taken:
            taken.add(event_id)
            fresh.append(index)
    return fresh


def _write_one_run(
    conn: sqlite3.Connection,
    run_id: str,
    heads: dict[str, list[int]],
    stored: dict[str, str | None],
    rows: list[tuple[Any, ...]],
    events: Sequence[NewEvent],
) -> None:
    """Insert the rows of a batch of one thread whose events are all of ``run_id`` and move
    the head, without a Projection: the run goes on (folded into the head's tail, no runs
    row written) or begins (its row merged, :func:`journal._sqlite_tail.start_run`)."""
    thread = rows[-1][1]
    base, last, first_at, last_at = heads[thread]
    going = keep_going(thread, run_id, stored[thread], rows, events)
    if going is not None:
        _insert(conn, rows)
        conn.execute(sql.CONTINUE_HEAD_SQL, (last, last_at, going, thread))
        return
    text, merged = start_run(thread, run_id, stored[thread], rows, events)
    conn.executemany(runs.MERGE_RUN_SQL, merged)  # before the head's move counts the runs
    _insert(conn, rows)
    conn.execute(sql.MOVE_HEAD_KEPT_SQL, (thread, last, first_at, last_at, base, text))


def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` in their order (each row as by ``INSERT_EVENT_SQL``, its triggers
    run for each row in turn): whole chunks of :data:`_CHUNK` rows by one statement each, the
    rest by ``executemany`` (a single row by ``execute``)."""
    whole = len(rows) - len(rows) % _CHUNK
    for start in range(0, whole, _CHUNK):
        conn.execute(_INSERT_CHUNK_SQL, list(chain.from_iterable(rows[start : start + _CHUNK])))
    if whole == len(rows) - 1:  # one row (a single-event append): no executemany
        conn.execute(sql.INSERT_EVENT_SQL, rows[-1])
    elif whole < len(rows):
        conn.executemany(sql.INSERT_EVENT_SQL, rows[whole:] if whole else rows)


def _numbered(
    rows: Sequence[Sequence[Any]], events: Sequence[NewEvent]
) -> list[tuple[int, NewEvent]]:
    """Each new event with its seq (its row's), for the projection."""
    return [(row[2], event) for row, event in zip(rows, events, strict=True)]


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
