"""The SQLite store's import of exported lines: their rows stored as they were read.

:func:`import_rows` is what :func:`journal.transfer.import_events` runs on a built-in
``SqliteEventStore``: the rows of an :class:`ImportBatch` (read from exported lines, their
texts the canonical ones taken from the lines, see :func:`journal._import_lines.exported_row`)
go in as the store's own append writes them — one ``BEGIN IMMEDIATE`` transaction that numbers
each thread's new events after its head row, keeps the runs and usage
(:func:`journal._sqlite_runs.keep_heads`), inserts the events (the schema's triggers check
each one) and moves the head — without an event object per row: the runs fold reads the
field values of the events of the types it looks into (:data:`FOLD_READS`), through one
event whose values are swapped (:meth:`journal._runs.RunFold.add` keeps none of an event's
objects but its immutable values); any other event only moves its run's seqs, time and
count. All or nothing; an event id already stored (or repeated in the batch) is not stored
again and counts as already present, as ``append`` would have it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from pydantic import BaseModel

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._runs import _FOLDED, Projection, RunFold
from journal._sqlite_rows import from_micros, to_micros
from journal.events import FIXED_EVENT_TYPES, NewEvent, construct

__all__ = ["FOLD_READS", "ImportBatch", "import_rows"]

#: The event types whose runs fold reads more than the event's run, seq and time
#: (:meth:`journal._runs.RunFold.add`): an import keeps these events whole.
FOLD_READS: Final = _FOLDED | FIXED_EVENT_TYPES["lifecycle"]
_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit
_SEQ: Final = 2  # the seq's place in a row
_set_fields = BaseModel.__dict__["__dict__"].__set__  # a model's field values, swapped


class ImportBatch:
    """Rows on their way into a SQLite store, each one an event checked as valid and cut to
    the store's caps, in file order.

    ``rows``: ``[event_id, thread_id, seq, run_id, category, event_type, content, metadata,
    created_at]`` as stored (canonical texts, the time in microseconds; the seq is set when
    they are written); ``events``: the field values of the event of a row whose type is in
    :data:`FOLD_READS` (or that was read the checked way), else ``None``; ``seqs``: the seq
    each had in the file.
    """

    __slots__ = ("events", "rows", "seqs")

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.events: list[dict[str, Any] | None] = []
        self.seqs: list[int | None] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add_event(self, event: NewEvent, texts: tuple[str, str], seq: int | None) -> None:
        """Add a prepared event (``texts``: its content's and metadata's stored texts)."""
        values = event.__dict__
        self.rows.append([values["event_id"], values["thread_id"], seq, values["run_id"],
                          values["category"], values["event_type"], *texts,
                          to_micros(values["created_at"])])  # fmt: skip
        self.events.append(values)
        self.seqs.append(seq)


def import_rows(conn: sqlite3.Connection, batch: ImportBatch) -> tuple[int, int, int]:
    """Store ``batch`` on ``conn``: how many were stored, already present, stored at another
    seq than the file's."""
    try:  # optimistic: event ids are almost always new, so skip looking them up
        return _write(conn, batch, look_up=False)
    except sqlite3.IntegrityError as e:
        if "event_id" not in str(e):
            raise
    return _write(conn, batch, look_up=True)  # a retry: some ids are stored, or repeated


def _stored_ids(conn: sqlite3.Connection, rows: Sequence[list[Any]]) -> set[str]:
    """The event ids of ``rows`` that are stored."""
    wanted = sorted({row[0] for row in rows})
    found: set[str] = set()
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        query = f"SELECT event_id FROM events WHERE event_id IN ({', '.join('?' * len(chunk))})"
        found.update(row[0] for row in conn.execute(query, chunk))
    return found


def _write(conn: sqlite3.Connection, batch: ImportBatch, *, look_up: bool) -> tuple[int, int, int]:
    """One transaction: number the new rows after each head and fold their runs in one pass,
    keep the runs, insert the rows, move the heads (as :mod:`journal._sqlite_write`)."""
    conn.execute("BEGIN IMMEDIATE")  # the write lock up front (journal._sqlite_conn)
    try:
        rows = batch.rows
        taken = _stored_ids(conn, rows) if look_up else set()
        fresh: list[list[Any]] = []
        heads: dict[str, list[int]] = {}  # thread -> [old last seq, new last seq, times]
        stored: dict[str, str | None] = {}  # thread -> its head's kept, as read
        projection = Projection()
        folds = projection.runs
        ends: dict[tuple[str, str], int] = {}  # a run's newest time in the batch, µs
        key: tuple[str, str] = ("", "")
        fold: RunFold | None = None
        fold_end = renumbered = 0
        view = construct(NewEvent, {})  # each event the fold reads, in turn
        for row, fields, exported in zip(rows, batch.events, batch.seqs, strict=True):
            if look_up:
                if row[0] in taken:
                    continue
                taken.add(row[0])
            fresh.append(row)
            thread, at = row[1], row[8]
            head = heads.get(thread)
            if head is None:  # the head row, read once: its last seq and what runs keep in it
                found = conn.execute(sql.HEAD_ROW_SQL, (thread,)).fetchone()
                base, stored[thread] = (found[0], found[1]) if found else (0, None)
                head = heads[thread] = [base, base, at, at]
            seq = head[1] = head[1] + 1
            head[3] = at
            row[_SEQ] = seq
            renumbered += exported is not None and exported != seq
            if fold is None or row[3] != key[1] or thread != key[0]:  # a batch is mostly one run
                if fold is not None:
                    ends[key] = fold_end
                key = (thread, row[3])
                fold = folds.get(key)
                if fold is None:
                    started = from_micros(at)
                    fold = folds[key] = RunFold(thread, key[1], seq, seq, started, started)
            fold_end = at
            if fields is None:  # what RunFold.add does with an event it does not look into
                fold.last_seq = seq
                fold.event_count += 1
            else:
                _set_fields(view, fields)
                call = fold.add(seq, view)
                if call is not None:
                    projection.count_call(view, *call)
        if fold is not None:
            ends[key] = fold_end
        for run, at in ends.items():
            folds[run].last_event_at = from_micros(at)
        kept = runs.keep_heads(conn, projection, stored)
        conn.executemany(sql.INSERT_EVENT_SQL, fresh)
        for thread, (base, last, first_at, last_at) in heads.items():  # the head follows them
            text, goes_on = kept[thread]
            if goes_on:
                conn.execute(sql.CONTINUE_HEAD_SQL, (last, last_at, text, thread))
            else:
                conn.execute(sql.MOVE_HEAD_KEPT_SQL, (thread, last, first_at, last_at, base, text))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(fresh), len(rows) - len(fresh), renumbered
