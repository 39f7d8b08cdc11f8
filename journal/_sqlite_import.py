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
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._runs import _FOLDED, Projection, RunFold
from journal._sqlite_rows import from_micros, to_micros
from journal.events import FIXED_EVENT_TYPES, NewEvent, construct

__all__ = ["FOLD_READS", "ImportBatch", "import_rows"]

#: The event types whose runs fold reads more than the event's run, seq and time
#: (:meth:`journal._runs.RunFold.add`): an import keeps the field values of these events.
FOLD_READS: Final = _FOLDED | FIXED_EVENT_TYPES["lifecycle"]
_ID_CHUNK: Final = 500  # stays far below SQLite's bound-parameter limit
_SEQ: Final = 2  # the seq's place in a row
_set_fields = BaseModel.__dict__["__dict__"].__set__  # a model's field values, swapped


class ImportBatch:
    """Rows on their way into a SQLite store, each one an event checked as valid and cut to
    the store's caps, in file order.

    ``rows``: ``[event_id, thread_id, seq, run_id, category, event_type, content, metadata,
    created_at]`` as stored (canonical texts, the time in microseconds), the seq the one
    it had in the file (or ``None``) until it is written; ``events``: the field values of the
    event of a row whose type is in :data:`FOLD_READS` (or that was read the checked way),
    else ``None``.
    """

    __slots__ = ("events", "rows")

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.events: list[dict[str, Any] | None] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add_event(self, event: NewEvent, texts: tuple[str, str], seq: int | None) -> None:
        """Add a prepared event (``texts``: its content's and metadata's stored texts)."""
        values = event.__dict__
        self.rows.append([values["event_id"], values["thread_id"], seq, values["run_id"],
                          values["category"], values["event_type"], *texts,
                          to_micros(values["created_at"])])  # fmt: skip
        self.events.append(values)


def import_rows(conn: sqlite3.Connection, batch: ImportBatch) -> tuple[int, int, int]:
    """Store ``batch`` on ``conn``: how many were stored, already present, stored at another
    seq than the file's."""
    seqs = [row[_SEQ] for row in batch.rows]  # as exported: the write numbers the rows
    try:  # optimistic: event ids are almost always new, so skip looking them up
        return _write(conn, batch, seqs, look_up=False)
    except sqlite3.IntegrityError as e:
        if "event_id" not in str(e):
            raise
    return _write(conn, batch, seqs, look_up=True)  # a retry: some ids are stored, or repeated


def _stored_ids(conn: sqlite3.Connection, rows: Sequence[list[Any]]) -> set[str]:
    """The event ids of ``rows`` that are stored."""
    wanted = sorted({row[0] for row in rows})
    found: set[str] = set()
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        query = f"SELECT event_id FROM events WHERE event_id IN ({', '.join('?' * len(chunk))})"
        found.update(row[0] for row in conn.execute(query, chunk))
    return found


def _fresh(
    conn: sqlite3.Connection, batch: ImportBatch, exported: Sequence[int | None]
) -> tuple[list[list[Any]], list[dict[str, Any] | None], list[int | None]]:
    """The rows of ``batch`` whose event ids are neither stored nor repeated from an earlier
    row, with their field values and exported seqs."""
    taken = _stored_ids(conn, batch.rows)
    rows: list[list[Any]] = []
    events: list[dict[str, Any] | None] = []
    seqs: list[int | None] = []
    for row, fields, seq in zip(batch.rows, batch.events, exported, strict=True):
        if row[0] not in taken:
            taken.add(row[0])
            rows.append(row)
            events.append(fields)
            seqs.append(seq)
    return rows, events, seqs


def _write(
    conn: sqlite3.Connection, batch: ImportBatch, exported: list[int | None], *, look_up: bool
) -> tuple[int, int, int]:
    """One transaction: number the new rows after each head and fold their runs in one pass,
    keep the runs, insert the rows, move the heads (as :mod:`journal._sqlite_write`)."""
    conn.execute("BEGIN IMMEDIATE")  # the write lock up front (journal._sqlite_conn)
    try:
        if look_up:
            rows, events, seqs = _fresh(conn, batch, exported)
        else:
            rows, events, seqs = batch.rows, batch.events, exported
        heads: dict[str, list[int]] = {}  # thread -> [old last seq, new last seq, times]
        stored: dict[str, str | None] = {}  # thread -> its head's kept, as read
        projection = _numbered(conn, rows, events, heads, stored)
        kept = runs.keep_heads(conn, projection, stored)
        conn.executemany(sql.INSERT_EVENT_SQL, rows)
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
    return len(rows), len(batch) - len(rows), _renumbered(rows, seqs, heads)


def _numbered(
    conn: sqlite3.Connection,
    rows: Sequence[list[Any]],
    events: Sequence[dict[str, Any] | None],
    heads: dict[str, list[int]],
    stored: dict[str, str | None],
) -> Projection:
    """Number ``rows`` after their threads' heads (read here into ``heads`` and ``stored``)
    and fold their runs: the projection ``project`` makes of the numbered events.

    One pass, by stretches of rows of one run of one thread: an event the fold does not
    look into only counts, once per stretch (what ``RunFold.add`` does with it)."""
    projection = Projection()
    folds = projection.runs
    view = construct(NewEvent, {})  # each event the fold reads, in turn
    thread = run_id = ""
    head: list[int] = []
    fold: RunFold | None = None
    seq = counted = 0
    last: list[Any] = []  # the stretch's last row
    for row, fields in zip(rows, events, strict=True):
        if row[3] != run_id or row[1] != thread or fold is None:  # a new stretch
            if fold is not None:
                _close(fold, seq, counted, last[8], head)
            if row[1] != thread or fold is None:
                thread = row[1]
                head = heads.get(thread) or _head(conn, thread, row[8], heads, stored)
                seq = head[1]
            run_id, counted = row[3], 0
            fold = folds.get((thread, run_id))
            if fold is None:
                started = from_micros(row[8])
                fold = folds[thread, run_id] = RunFold(thread, run_id, seq + 1, seq + 1,
                                                       started, started)  # fmt: skip
        seq += 1
        row[_SEQ] = seq
        last = row
        if fields is None:
            counted += 1
        else:
            _set_fields(view, fields)
            call = fold.add(seq, view)
            if call is not None:
                projection.count_call(view, *call)
    if fold is not None:
        _close(fold, seq, counted, last[8], head)
    return projection


def _head(
    conn: sqlite3.Connection,
    thread: str,
    at: int,
    heads: dict[str, list[int]],
    stored: dict[str, str | None],
) -> list[int]:
    """The head of ``thread``, read once: ``[old last seq, new last seq, first time, last
    time]`` (its ``kept`` into ``stored``)."""
    found = conn.execute(sql.HEAD_ROW_SQL, (thread,)).fetchone()
    base, stored[thread] = (found[0], found[1]) if found else (0, None)
    head = heads[thread] = [base, base, at, at]
    return head


def _close(fold: RunFold, seq: int, counted: int, at: int, head: list[int]) -> None:
    """End a stretch of ``fold``'s run at ``seq`` and time ``at``: its ``counted`` events the
    fold does not look into, its last seq and time, and its thread's head."""
    fold.event_count += counted
    fold.last_seq = head[1] = seq
    fold.last_event_at = from_micros(at)
    head[3] = at


def _renumbered(
    rows: Sequence[list[Any]], seqs: Sequence[int | None], heads: Mapping[str, list[int]]
) -> int:
    """How many of the numbered ``rows`` are stored at another seq than their exported one."""
    if len(heads) == 1:  # the usual batch: one thread, exported in order after its head
        ((base, last, _, _),) = heads.values()
        if seqs == list(range(base + 1, last + 1)):
            return 0
    return sum(seq is not None and seq != row[_SEQ] for row, seq in zip(rows, seqs, strict=True))
