"""``SqliteEventStore``: the embedded default backend, one SQLite file in WAL mode.

Guarantees on top of the ``RunEventStore`` contract:

* **Many writers.** Threads, coroutines and OS processes may append to one file at once: each
  append is one ``BEGIN IMMEDIATE`` transaction that bumps the thread's head row (learning its
  seqs from it) and inserts the events, so seqs stay gap-free without an unlocked
  ``max(seq) + 1``. Lock contention is absorbed by ``busy_timeout`` and retries; writers do
  not see "database is locked" unless the lock stays unavailable for ``retry_deadline``
  seconds.
* **Append-only in the database.** Triggers reject any ``UPDATE`` of ``events``, any
  ``DELETE`` not made by :meth:`delete_thread`, any insert that would not take its thread's
  next seq with a new ``event_id`` (``INSERT OR REPLACE`` / ``REPLACE INTO`` included), and
  any change of ``thread_heads`` that would break seqs, whoever connects to the file.
* **Page reads cost O(page).** Every read walks the ``(thread_id, seq)`` index from the
  cursor (within the run's seq range for a read by run), or, when its filters exclude traces,
  the partial index of the thread's other events (what the timeline reads); a page
  of runs walks ``runs (thread_id, first_seq)``, ``get_run`` the run id index, and
  ``read_usage`` reads the thread's head row: each append keeps its usage, in its transaction.
* **Checkpoints off the caller's path.** The journal's writer appends with SQLite's
  automatic WAL checkpoint put off and has it run on a thread of its own once nothing is
  queued (after about the 4 MiB SQLite would wait for; in the commit that takes the WAL past
  four times as much), so that the journal's ``flush`` or ``close`` never waits for one.
  Every other write checkpoints as SQLite does; the store's ``close`` waits for one that runs.
* **Durability.** ``synchronous="NORMAL"`` (default) may lose the last transactions on power
  loss but never corrupts the file; ``"FULL"`` makes every committed append durable.
* **Cheap results.** The records ``append`` returns share their ``content``/``metadata``
  objects with the ``NewEvent`` objects passed in (copying them would cost as much as the
  write); they share nothing with the file, and every read builds fresh objects.
* **Schema versions.** Opening a file migrates it forward; a file written by a newer
  runjournal raises ``SchemaVersionError``; a file that is not SQLite raises
  ``StoreCorruptError``; an unopenable path raises ``StoreUnavailableError``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from time import monotonic
from typing import Any, Final, TypeVar

import orjson
from sqlite_utils import Database

from journal import _sqlite_runs as runs
from journal import _sqlite_schema as sql
from journal._batch import EventLike, KnownEvents, PreparedBatch, prepare_batch
from journal._logging import get_logger
from journal._sqlite_conn import ConnectionPool, is_busy, retry_busy, transaction, translate
from journal._sqlite_copy import copy_thread
from journal._sqlite_import import ImportBatch, import_rows
from journal._sqlite_rows import from_micros, row_to_event
from journal._sqlite_write import append_events
from journal.errors import (
    SchemaVersionError,
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
)
from journal.events import (
    FIXED_EVENT_TYPES,
    OPEN_FAMILIES,
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    ThreadUsage,
)
from journal.store import MessageMark, ReadQuery, RunEventStore, changed
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["SqliteEventStore"]

log = get_logger(__name__)

T = TypeVar("T")

_SYNCHRONOUS: Final = ("NORMAL", "FULL", "EXTRA")
_MIN_SQLITE: Final = (3, 35, 0)  # RETURNING
_FILTER_COLUMNS: Final = ("category", "event_type", "run_id")
#: The journal's writer leaves the WAL checkpoint of its appends until it has nothing queued
#: (``_writer_idle``), so that no commit a caller waits on (a flush, a close) pays for one.
#: SQLite's own automatic checkpoint comes at 1,000 pages (~4 MiB): the writer's is due at
#: about that much written, estimated as the WAL frames a commit writes: a whole page for each
#: page it changes (events, heads, runs, usage and their indexes: about eight, whatever its
#: size), plus each event's texts and its share of pages. The bound does not rest on the
#: estimate: the writer's connection checkpoints automatically (in its commit) at four times
#: as much, in pages as SQLite counts them, every writer's included.
_CHECKPOINT_DUE: Final = 4 << 20
_CHECKPOINT_OVERDUE: Final = 4 * _CHECKPOINT_DUE
_COMMIT_PAGES: Final = 8
_ROW_BYTES: Final = 512
_CHECKPOINT_SQL: Final = "PRAGMA wal_checkpoint(PASSIVE)"  # never waits for readers or writers
_CHECKPOINT_ROUNDS: Final = 4  # an idle checkpoint's, at most: while commits come during it


def _is_trace_type(event_type: str) -> bool:
    family, sep, _ = event_type.partition(":")
    return event_type in FIXED_EVENT_TYPES["trace"] or (
        bool(sep) and family in OPEN_FAMILIES["trace"]
    )


def _excludes_traces(query: ReadQuery) -> bool:
    """Whether no trace event can match ``query``'s filters (the catalog ties each event type
    to one category, and appends check it)."""
    categories, types = query.filter.category, query.filter.event_type
    if categories is not None and "trace" not in categories:
        return True
    return types is not None and not any(_is_trace_type(t) for t in types)


#: ``(seq, message id, digest)`` of a thread's events of some types after a seq, as one JSON
#: array (see :func:`marks_of`); the id and the digest only where they are JSON strings, and
#: no digest where a text holds a NUL (``json_extract`` ends a string at its ``\u0000``).
_MARKS_SQL: Final = (
    "SELECT json_group_array(json_array(seq, "
    "CASE json_type(content, '$.data.id') WHEN 'text' THEN json_extract(content, '$.data.id') "
    "END, "
    "CASE WHEN json_type(metadata, '$.digest') = 'text' AND instr(content, '\\u0000') = 0 "
    "AND instr(metadata, '\\u0000') = 0 THEN json_extract(metadata, '$.digest') "
    "END)) FROM (SELECT seq, content, metadata FROM events "
    "WHERE thread_id = ? AND seq > ? AND event_type IN ({types}){story} ORDER BY seq)"
)


def marks_of(text: str) -> list[MessageMark] | None:
    """The marks of :data:`_MARKS_SQL`'s answer, in seq order; ``None`` (read the events
    instead) when an event records no digest (or its texts hold a NUL), or an id or a digest
    is not ASCII (SQLite's JSON functions may not give back a lone surrogate as the event's
    text holds it)."""
    marks: list[MessageMark] = []
    last, ordered = 0, True
    for seq, message_id, digest in orjson.loads(text):
        if digest is None or not digest.isascii():
            return None
        if message_id is not None and not message_id.isascii():
            return None
        marks.append((seq, message_id, digest))
        ordered, last = ordered and seq > last, seq
    if not ordered:  # (an aggregate does not promise the order it is fed in)
        marks.sort()
    return marks


def _where(query: ReadQuery) -> tuple[str, list[Any]]:
    clauses: list[str] = ["thread_id = ?"]
    params: list[Any] = [query.thread_id]
    if query.filter.run_id:  # the runs' seq range bounds the walk of (thread_id, seq)
        clauses += _run_range(query, params)
    else:
        cursors, cursor_params = query.cursor_conditions("seq", "?")
        clauses += cursors
        params += cursor_params
    for column in _FILTER_COLUMNS:
        values: frozenset[str] | None = getattr(query.filter, column)
        if values is not None:
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(sorted(values))
    if _excludes_traces(query):  # the very term of the partial index, so SQLite may use it
        clauses.append(sql.NOT_TRACE)
    return " WHERE " + " AND ".join(clauses), params


def _run_range(query: ReadQuery, params: list[Any]) -> list[str]:
    """One lower and one upper bound of seq: the runs' seq range narrowed by the cursors, each
    a single expression, so SQLite walks the index between them (it takes one bound a side)."""
    run_ids = sorted(query.filter.run_id or ())
    lower, upper = runs.seq_range(len(run_ids))
    params += [query.thread_id, *run_ids]
    if query.after_seq is not None:  # max()/min() of several values: NULL if a run is unknown
        lower = f"max({lower}, ? + 1)"
        params.append(query.after_seq)
    params += [query.thread_id, *run_ids]
    if query.before_seq is not None:
        upper = f"min({upper}, ? - 1)"
        params.append(query.before_seq)
    return [f"seq >= {lower}", f"seq <= {upper}"]


class SqliteEventStore(RunEventStore):
    """A ``RunEventStore`` in one SQLite file (created if missing; its directory must exist).

    ``synchronous`` is ``"NORMAL"`` (default) or ``"FULL"`` (each commit durable on power
    loss). ``busy_timeout`` is how long one attempt waits for the write lock, and
    ``retry_deadline`` how long an operation keeps retrying before it raises
    ``StoreUnavailableError``. Safe to share between threads and event loops.
    """

    _takes_records = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 5.0,
        retry_deadline: float = 60.0,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        super().__init__(content_caps=content_caps, metadata_cap=metadata_cap)
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
        text = os.fspath(path)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise ValueError(
                f"path {text!r} is not a file path; give a file path, or use memory:// for "
                "an in-memory store"
            )
        if not isinstance(synchronous, str) or synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}")
        if busy_timeout <= 0 or retry_deadline <= 0:
            raise ValueError("busy_timeout and retry_deadline must be > 0 seconds")
        if sqlite3.sqlite_version_info < _MIN_SQLITE:
            raise StoreUnavailableError(
                f"SQLite {sqlite3.sqlite_version} is too old: SqliteEventStore needs SQLite >= "
                "3.35 (use a Python built with a newer SQLite)"
            )
        self.path = Path(text)
        self.synchronous = synchronous.upper()
        self._retry_deadline = retry_deadline
        # what the journal's writer appended since the last checkpoint, estimated (bytes)
        self._unchecked = 0
        self._unchecked_lock = threading.Lock()
        self._autocheckpoint = "PRAGMA wal_autocheckpoint = 1000"  # a connection's, read below
        self._page_bytes = 4096 + 24  # a WAL frame: a page and its header (page size read below)
        self._checkpointer: threading.Thread | None = None  # the idle checkpoint's, running
        self._pool = ConnectionPool(
            self.path,
            busy_timeout_s=busy_timeout,
            synchronous=self.synchronous,
            prepare=runs.prepare_connection,
        )
        try:
            self._run("open the store", self._setup)
        except BaseException:
            self._pool.close()
            raise

    def __repr__(self) -> str:
        return f"SqliteEventStore({str(self.path)!r}, synchronous={self.synchronous!r})"

    # -- plumbing ------------------------------------------------------------------------------

    def _run(self, action: str, func: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``func`` on a pooled connection, retrying on SQLITE_BUSY, translating errors."""
        pool = self._pool  # take and give back by hand: no context manager frames per call
        try:
            conn = pool.take()
            try:
                return retry_busy(lambda: func(conn), deadline_s=self._retry_deadline)
            finally:
                pool.give(conn)
        except sqlite3.Error as e:
            raise translate(e, self.path, action) from e

    def _setup(self, conn: sqlite3.Connection) -> None:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.warning("sqlite_wal_unavailable", path=str(self.path), journal_mode=mode)
        pages = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        self._autocheckpoint = f"PRAGMA wal_autocheckpoint = {pages}"
        self._page_bytes = int(conn.execute("PRAGMA page_size").fetchone()[0]) + 24
        db = Database(conn, execute_plugins=False, recursive_triggers=False)
        if sql.read_version(db) == sql.SCHEMA_VERSION:
            return
        with transaction(conn):  # re-check under the write lock: another process may migrate
            version = sql.read_version(db)
            if version > sql.SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"SQLite store {str(self.path)!r} has schema version {version}; this "
                    f"runjournal understands up to {sql.SCHEMA_VERSION}: upgrade runjournal"
                )
            if version == 0 and db["events"].exists():
                raise StoreCorruptError(
                    f"SQLite store {str(self.path)!r} has an events table but no runjournal "
                    "schema version: it is not a runjournal database"
                )
            if version < sql.SCHEMA_VERSION:
                sql.migrate(db, version)
                if version < sql.RUNS_SINCE:  # the runs and usage of the events already stored
                    runs.rebuild(conn)
                log.info(
                    "sqlite_schema_migrated",
                    path=str(self.path),
                    from_version=version,
                    to_version=sql.SCHEMA_VERSION,
                )

    # -- writes --------------------------------------------------------------------------------

    def _append(
        self, events: Sequence[NewEvent], new_ids: set[str] | None = None, records: bool = True
    ) -> list[RunEvent]:
        # _run, inline: the first attempt needs no closure (most appends find the lock free)
        pool, started = self._pool, monotonic()
        try:
            conn = pool.take()
            try:
                return self._append_on(conn, events, new_ids, records, started)
            finally:
                pool.give(conn)
        except sqlite3.Error as e:
            raise translate(e, self.path, "append events") from e

    def _append_on(
        self,
        conn: sqlite3.Connection,
        events: Sequence[NewEvent],
        new_ids: set[str] | None,
        records: bool,
        started: float,
    ) -> list[RunEvent]:
        """``append_events`` on ``conn``, retried while the write lock is busy."""
        try:
            return append_events(conn, events, new_ids, records)
        except sqlite3.OperationalError as e:
            if not is_busy(e):
                raise
        return retry_busy(
            lambda: append_events(conn, events, new_ids, records),
            deadline_s=self._retry_deadline,
            started=started,
        )

    def _append_unreturned(self, events: Iterable[EventLike]) -> None:
        # the records are not built, unless a subclass, the class (a patch, instrumentation)
        # or the instance changes the append: then its own runs, as the writer called it before
        if changed(self, "append", _BASE_APPEND, "_append", _OWN_APPEND):
            self.append(events)
            return
        prepared = self.prepare(events)
        if self._closed:
            self._check_open()
        if prepared:
            self._append_unchecked(prepared)

    def _append_unchecked(self, events: list[NewEvent]) -> None:
        """:meth:`_append` of the journal's writer, without the records, on a connection whose
        commits leave the WAL checkpoint to :meth:`_writer_idle` (its automatic checkpoint at
        the overdue size for this append only: a commit that takes the WAL past it
        checkpoints)."""
        written = _COMMIT_PAGES * self._page_bytes + len(events) * _ROW_BYTES
        if type(events) is PreparedBatch:  # (a subclass's own prepare may give a plain list)
            written += sum(map(len, chain.from_iterable(events.texts)))
        overdue = max(1, _CHECKPOINT_OVERDUE // self._page_bytes)
        pool, started = self._pool, monotonic()
        try:
            conn = pool.take()
            try:
                conn.execute(f"PRAGMA wal_autocheckpoint = {overdue}")  # an int: no parameter
                self._append_on(conn, events, None, False, started)
                with self._unchecked_lock:
                    self._unchecked += written
            except BaseException:
                _give_back(pool, conn, self._autocheckpoint)
                raise
            _give_back(pool, conn, self._autocheckpoint)
        except sqlite3.Error as e:
            raise translate(e, self.path, "append events") from e

    def _writer_idle(self) -> None:
        """Start the due checkpoint on a thread of its own and return: the writer, and so a
        flush or a close that comes while it runs, never waits for it (a passive checkpoint
        and the writer's commits do not wait for each other either)."""
        if self._unchecked < _CHECKPOINT_DUE or self._closed:
            return
        with self._unchecked_lock:  # started under the lock: a close sees none or a started one
            if self._checkpointer is not None or self._closed:
                return  # one at a time: the next idle call starts the next
            thread = threading.Thread(
                target=self._checkpoint, name="runjournal-sqlite-checkpoint", daemon=True
            )
            thread.start()  # (a thread refused raises here: nothing is kept, the next call tries)
            self._checkpointer = thread  # (its end clears it, under this lock: after this)
            self._unchecked = 0

    def _checkpoint(self) -> None:
        """The checkpointer thread's checkpoint; a failure is logged (never raised). Again
        while commits came during it (it counts the WAL's frames as it began): SQLite starts
        the WAL over only once every frame is in the database, else it grows on."""
        try:
            frames: int | None = None  # the WAL's frames as the round before began
            for _ in range(_CHECKPOINT_ROUNDS):
                row = self._run("checkpoint the WAL", _checkpoint_once)
                if row[0] or row[1] == frames:  # busy (another one runs), or nothing came
                    break
                frames = row[1]
        except StoreClosedError:
            pass  # closed meanwhile: its last connection checkpoints as it closes
        except StoreError as e:
            log.info("sqlite_checkpoint_failed", path=str(self.path), error_type=type(e).__name__)
        finally:
            with self._unchecked_lock:
                self._checkpointer = None

    def _append_telling(self, events: Sequence[NewEvent]) -> tuple[list[RunEvent], set[str]]:
        new_ids: set[str] = set()
        return self._append(events, new_ids), new_ids

    def _import_rows(self, batch: ImportBatch) -> tuple[int, int, int]:
        """Store rows read from exported lines (:mod:`journal._sqlite_import`): how many were
        stored, already present, stored at another seq than the file's."""
        self._check_open()
        return self._run("import events", lambda conn: import_rows(conn, batch))

    def _copy_thread_from(self, source: SqliteEventStore, thread_id: str, end: int) -> int | None:
        """Copy the ``end`` events of ``thread_id`` from ``source`` in SQL, into this store
        where the thread is empty; ``None`` (nothing written) when the copy must go page by
        page (see :mod:`journal._sqlite_copy`)."""
        return self._run(
            "copy a thread",
            lambda conn: copy_thread(
                conn,
                source.path,
                thread_id,
                end,
                self.content_caps,
                self.metadata_cap,
                self._prepares_unchanged,
            ),
        )

    def _prepares_unchanged(self, rows: list[tuple[Any, ...]]) -> bool:
        """Whether this store's caps leave each stored row's content and metadata as stored."""
        for row in rows:
            prepared = prepare_batch([row_to_event(row)], self.content_caps, self.metadata_cap)
            if prepared.texts[0] != (row[6], row[7]):
                return False
        return True

    def _delete_thread(self, thread_id: str) -> int:
        def delete(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                conn.execute(sql.GRANT_DELETE_SQL, (thread_id,))
                deleted = conn.execute(sql.DELETE_EVENTS_SQL, (thread_id,)).rowcount
                conn.execute(sql.DELETE_HEAD_SQL, (thread_id,))
                conn.execute(runs.DELETE_RUNS_SQL, (thread_id,))
                conn.execute(sql.REVOKE_DELETE_SQL, (thread_id,))
            return int(deleted)

        deleted = self._run("delete a thread", delete)
        log.info("thread_deleted", thread_id=thread_id, count=deleted)
        return deleted

    # -- reads ---------------------------------------------------------------------------------

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        where, params = _where(query)
        order = " ORDER BY seq DESC" if query.newest_first else " ORDER BY seq"
        statement = sql.SELECT_EVENTS_SQL + where + order
        if query.limit is not None:
            statement += " LIMIT ?"
            params.append(query.limit)

        def read(conn: sqlite3.Connection) -> list[RunEvent]:
            return [row_to_event(row) for row in conn.execute(statement, params)]

        events = self._run("read events", read)
        if query.newest_first:
            events.reverse()
        return events

    def _message_marks(
        self, thread_id: str, event_types: Sequence[str], after_seq: int | None = None
    ) -> list[MessageMark] | None:
        # One row for the whole read: a row per step hands the GIL back and forth per event,
        # which the journal's writer pays dearly while an agent runs (a thread of 2,200
        # messages: 55 ms against 4 ms); SQLite's JSON functions read the two fields.
        query = self._marks_query(_OWN_READ, thread_id, event_types, after_seq)
        if query is None or query.filter.event_type is None:
            return None
        if query.matches_nothing:  # no type asked
            return []
        types = sorted(query.filter.event_type)
        story = f" AND {sql.NOT_TRACE}" if _excludes_traces(query) else ""  # its partial index
        statement = _MARKS_SQL.format(types=", ".join("?" * len(types)), story=story)
        params = [query.thread_id, query.after_seq or 0, *types]

        def read(conn: sqlite3.Connection) -> str | None:
            try:
                return str(conn.execute(statement, params).fetchone()[0])
            except sqlite3.OperationalError as e:
                if is_busy(e):
                    raise
                return None  # no JSON functions in this SQLite, or a text that is no JSON

        text = self._run("read message marks", read)
        return None if text is None else marks_of(text)

    def _stored_page(self, thread_id: str, after_seq: int, limit: int) -> KnownEvents:
        """The next ``limit`` events of ``thread_id`` after ``after_seq``, with their stored
        texts (:func:`journal.copy.copy_store`'s page: a target neither validates nor encodes
        them again)."""
        self._check_open()
        statement = f"{sql.SELECT_EVENTS_SQL} WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?"

        def read(conn: sqlite3.Connection) -> KnownEvents:
            page = KnownEvents()
            for row in conn.execute(statement, (thread_id, after_seq, limit)):
                page.add(row_to_event(row), row[6], row[7])
            return page

        return self._run("read events", read)

    def _last_seq(self, thread_id: str) -> int:
        row = self._run(
            "read the last seq", lambda c: c.execute(sql.LAST_SEQ_SQL, (thread_id,)).fetchone()
        )
        return 0 if row is None else int(row[0])

    def _count(self, query: ReadQuery) -> int:
        where, params = _where(query)
        row = self._run(
            "count events", lambda c: c.execute(sql.COUNT_SQL + where, params).fetchone()
        )
        return int(row[0])

    def _thread_ids_after(self, after: str | None, limit: int) -> list[str] | None:
        rows = self._run(
            "list thread ids",
            lambda c: c.execute(
                "SELECT thread_id FROM thread_heads WHERE thread_id > ? ORDER BY thread_id LIMIT ?",
                (after or "", limit),
            ).fetchall(),
        )
        return [row[0] for row in rows]

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        params = (-1 if limit is None else limit, offset)
        rows = self._run(
            "list threads", lambda c: c.execute(sql.LIST_THREADS_SQL, params).fetchall()
        )
        return [
            ThreadSummary(
                thread_id=row[0],
                event_count=row[1],
                last_seq=row[1],
                run_count=row[4],
                first_event_at=from_micros(row[2]),
                last_event_at=from_micros(row[3]),
            )
            for row in rows
        ]

    def _list_runs_page(self, query: ReadQuery) -> list[RunSummary]:
        return self._run("list runs", lambda conn: runs.runs_page(conn, query))

    def _get_run(self, run_id: str, thread_id: str | None) -> RunSummary | None:
        return self._run("find a run", lambda conn: runs.get_run(conn, run_id, thread_id))

    def _read_usage(self, thread_id: str) -> ThreadUsage:
        return self._run("read usage", lambda conn: runs.read_usage(conn, thread_id))

    def _spool_identity(self) -> tuple[str, str]:
        return self.path.name, f"sqlite:{os.path.realpath(self.path)}"

    def _close(self) -> None:
        self._pool.close()
        with self._unchecked_lock:  # (none starts once the store is closed: _writer_idle)
            thread = self._checkpointer
        if thread is not None:  # a passive checkpoint waits for no lock: it ends soon
            thread.join()


def _checkpoint_once(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """A passive checkpoint: (busy, the WAL's frames as it began, frames in the database)."""
    busy, frames, done = conn.execute(_CHECKPOINT_SQL).fetchone()
    return int(busy), int(frames), int(done)


def _give_back(pool: ConnectionPool, conn: sqlite3.Connection, autocheckpoint: str) -> None:
    """Give ``conn`` back to ``pool`` with its automatic checkpoint as every connection has
    it; closed instead when that cannot be set (no other append inherits it off)."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute(autocheckpoint)
    except sqlite3.Error:
        conn.close()
        return
    pool.give(conn)


#: The appends and reads as this module defines them, taken when it loads: a store whose
#: class has another (a subclass's, or a patch set on the class later) gets its own from the
#: writer.
_BASE_APPEND: Final = RunEventStore.append
_OWN_APPEND: Final = SqliteEventStore._append
_OWN_READ: Final = SqliteEventStore._read
