"""The PostgreSQL backend's operations, free of I/O: the SQL they run and the rows they map.

Each operation is a generator: it yields ``(sql, params)`` queries, receives every query's
rows and returns its result. ``journal.postgres`` drives the same generators on a sync and on
an async connection, so the SQL and the row mapping are written once. An operation that must
be atomic across statements yields :data:`BEGIN` first; a one-statement operation runs in
autocommit (one round trip).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import UTC
from itertools import count
from typing import Any, Final, TypeVar

from journal import _postgres_schema as sql
from journal._batch import encoded_texts, records_in_order
from journal._query import ReadQuery
from journal.encoding import loads
from journal.errors import SchemaVersionError
from journal.events import NewEvent, RunEvent, RunSummary, ThreadSummary, construct
from journal.events import status_from_lifecycle as _status

__all__ = [
    "BEGIN",
    "Op",
    "Query",
    "Row",
    "append_attempts",
    "append_op",
    "count_op",
    "delete_thread_op",
    "last_seq_op",
    "list_runs_op",
    "list_threads_op",
    "migrate_op",
    "read_op",
]

T = TypeVar("T")
Row = tuple[Any, ...]
Query = tuple[str, Sequence[Any] | Mapping[str, Any] | None]
#: An operation: yields queries, receives each query's rows, returns its result.
Op = Generator[Query, list[Row], T]
#: Yielded first by an operation that must run in one transaction.
BEGIN: Final[Query] = ("BEGIN", None)


# -- row mapping (shared by sync and async) --------------------------------------------------


def to_event(row: Row) -> RunEvent:
    """A ``RunEvent`` from a row of ``EVENT_COLUMNS`` (a new object, created_at in UTC)."""
    thread_id, seq, event_id, run_id, category, event_type, content, metadata, created = row
    return RunEvent.model_construct(
        event_id=event_id,
        thread_id=thread_id,
        run_id=run_id,
        category=category,
        event_type=event_type,
        content=loads(content),
        metadata=loads(metadata),
        created_at=created.astimezone(UTC),
        seq=seq,
    )


# -- operations (shared by sync and async) ---------------------------------------------------


def append_attempts(events: Sequence[NewEvent]) -> Callable[[], Op[list[RunEvent]]]:
    """Append operations for successive attempts: optimistic first, then checked.

    The first attempt skips looking ids up: a single-thread batch is then one statement, so
    one round trip. If an id is already stored the unique index rejects the whole statement
    (no seq is taken) and every later attempt looks stored ids up first, in a transaction.
    """
    attempts = count()
    return lambda: append_op(events, checked=next(attempts) > 0)


def append_op(events: Sequence[NewEvent], *, checked: bool) -> Op[list[RunEvent]]:
    """Append a prepared batch; ``checked`` looks stored ids up first (in a transaction)."""
    known: dict[str, RunEvent] = {}
    fresh: dict[str, NewEvent] = {}
    texts: dict[str, tuple[str, str]] = {}
    for event, encoded in zip(events, encoded_texts(events), strict=True):
        fresh.setdefault(event.event_id, event)
        texts.setdefault(event.event_id, encoded)
    by_thread: dict[str, list[NewEvent]] = {}
    for event in fresh.values():
        by_thread.setdefault(event.thread_id, []).append(event)
    if checked or len(by_thread) > 1:
        yield BEGIN
    if checked:
        rows = yield sql.SELECT_EXISTING, (list(fresh),)
        known = {record.event_id: record for record in map(to_event, rows)}
        by_thread = {
            thread_id: kept
            for thread_id, batch in by_thread.items()
            if (kept := [e for e in batch if e.event_id not in known])
        }
    for thread_id in sorted(by_thread):  # one lock order for every writer: no deadlock
        batch = by_thread[thread_id]
        [(last,)] = yield sql.APPEND_THREAD, thread_params(thread_id, batch, texts)
        for seq, event in enumerate(batch, start=last - len(batch) + 1):
            known[event.event_id] = construct(RunEvent, {**event.__dict__, "seq": seq})
    return records_in_order(events, known)


def thread_params(
    thread_id: str, batch: Sequence[NewEvent], texts: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    """Parameters of ``APPEND_THREAD`` for one thread's new events, in seq order (``texts``:
    each event's encoded content and metadata by event id)."""
    return {
        "thread_id": thread_id,
        "count": len(batch),
        "last_event_at": batch[-1].created_at,
        "event_id": [e.event_id for e in batch],
        "run_id": [e.run_id for e in batch],
        "category": [e.category for e in batch],
        "event_type": [e.event_type for e in batch],
        "content": [texts[e.event_id][0] for e in batch],
        "metadata": [texts[e.event_id][1] for e in batch],
        "created_at": [e.created_at for e in batch],
    }


def read_op(query: ReadQuery) -> Op[list[RunEvent]]:
    """The events ``query`` selects, ascending (see the contract)."""
    where, params = where_clause(query)
    statement = (
        f"SELECT {sql.EVENT_COLUMNS} FROM runjournal_events WHERE {where} "
        f"ORDER BY seq {'DESC' if query.newest_first else 'ASC'} LIMIT %s"
    )
    rows = yield statement, [*params, query.limit]
    events = [to_event(row) for row in rows]
    return events[::-1] if query.newest_first else events


def where_clause(query: ReadQuery) -> tuple[str, list[Any]]:
    """A WHERE clause for ``query``'s thread, cursors and filter (fixed columns, bound values)."""
    where = "thread_id = %s"
    params: list[Any] = [query.thread_id]
    if query.after_seq is not None:
        where += " AND seq > %s"
        params.append(query.after_seq)
    if query.before_seq is not None:
        where += " AND seq < %s"
        params.append(query.before_seq)
    flt = query.filter
    for column, values in (
        ("category", flt.category),
        ("event_type", flt.event_type),
        ("run_id", flt.run_id),
    ):
        if values is not None:
            where += f" AND {column} = ANY(%s::text[])"
            params.append(sorted(values))
    return where, params


def last_seq_op(thread_id: str) -> Op[int]:
    """The head of ``thread_id`` (0 when the thread has no event)."""
    rows = yield sql.SELECT_LAST_SEQ, (thread_id,)
    return int(rows[0][0]) if rows else 0


def count_op(query: ReadQuery) -> Op[int]:
    """How many events of ``query``'s thread pass its filter."""
    where, params = where_clause(query)
    [(count,)] = yield f"SELECT count(*) FROM runjournal_events WHERE {where}", params
    return int(count)


def list_threads_op(limit: int | None, offset: int) -> Op[list[ThreadSummary]]:
    """Thread summaries, most recently active first."""
    rows = yield sql.LIST_THREADS, (limit, offset)
    return [
        ThreadSummary(
            thread_id=thread_id,
            event_count=last_seq,  # seqs are gap-free from 1: the count is the last seq
            last_seq=last_seq,
            run_count=runs,
            first_event_at=first.astimezone(UTC),
            last_event_at=last.astimezone(UTC),
        )
        for thread_id, last_seq, runs, first, last in rows
    ]


def list_runs_op(thread_id: str) -> Op[list[RunSummary]]:
    """Run summaries of ``thread_id`` in order of their first event."""
    rows = yield sql.LIST_RUNS, (thread_id,)
    return [
        RunSummary(
            run_id=run_id,
            thread_id=thread_id,
            first_seq=first_seq,
            last_seq=last_seq,
            event_count=count,
            started_at=started.astimezone(UTC),
            last_event_at=last.astimezone(UTC),
            status=_status(lifecycle),
        )
        for run_id, first_seq, last_seq, count, started, last, lifecycle in rows
    ]


def delete_thread_op(thread_id: str) -> Op[int]:
    """Delete a thread's events and head through ``runjournal_delete_thread`` (one statement)."""
    [(count,)] = yield sql.DELETE_THREAD, (thread_id,)
    return int(count)


def migrate_op() -> Op[int]:
    """Bring the schema to ``SCHEMA_VERSION`` under an advisory lock; return steps applied."""
    yield BEGIN
    yield sql.LOCK_MIGRATIONS, (sql.ADVISORY_LOCK_KEY,)
    yield sql.CREATE_VERSION_TABLE, None
    [(version,)] = yield sql.SELECT_VERSION, None
    if version > sql.SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has runjournal schema version {version}; this runjournal knows "
            f"up to {sql.SCHEMA_VERSION}: upgrade runjournal"
        )
    for index in range(version, sql.SCHEMA_VERSION):
        yield sql.MIGRATIONS[index], None
        yield sql.INSERT_VERSION, (index + 1,)
    return sql.SCHEMA_VERSION - int(version)
