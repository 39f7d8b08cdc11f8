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

import orjson

from journal import _postgres_schema as sql
from journal._batch import encoded_texts, records_in_order, stored_record
from journal._postgres_runs import RUN_SELECT, USAGE_SELECT, run_from_row, runs_params, usage_counts
from journal._query import ReadQuery
from journal._runs import TOTAL, Projection, project, thread_usage
from journal.encoding import loads
from journal.errors import SchemaVersionError
from journal.events import (
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    ThreadUsage,
    construct,
)

__all__ = [
    "BEGIN",
    "Op",
    "Query",
    "Row",
    "StoredIds",
    "append_attempts",
    "append_op",
    "backfill_runs_op",
    "count_op",
    "delete_thread_op",
    "get_run_op",
    "last_seq_op",
    "list_runs_page_op",
    "list_threads_op",
    "message_marks_op",
    "migrate_op",
    "read_op",
    "read_usage_op",
    "thread_ids_after_op",
]

T = TypeVar("T")
Row = tuple[Any, ...]
Query = tuple[str, Sequence[Any] | Mapping[str, Any] | None]
#: An operation: yields queries, receives each query's rows, returns its result.
Op = Generator[Query, list[Row], T]
#: Yielded first by an operation that must run in one transaction.
BEGIN: Final[Query] = ("BEGIN", None)
_BACKFILL_PAGE: Final = 1000


# -- row mapping (shared by sync and async) --------------------------------------------------


def to_event(row: Row) -> RunEvent:
    """A ``RunEvent`` from a row of ``EVENT_COLUMNS`` (a new object, created_at in UTC)."""
    thread_id, seq, event_id, run_id, category, event_type, content, metadata, created = row
    return construct(
        RunEvent,
        {
            "event_id": event_id,
            "thread_id": thread_id,
            "run_id": run_id,
            "category": category,
            "event_type": event_type,
            "content": loads(content),
            "metadata": loads(metadata),
            "created_at": created.astimezone(UTC),
            "seq": seq,
        },
    )


# -- operations (shared by sync and async) ---------------------------------------------------


class StoredIds:
    """What :func:`append_attempts` tells of the ids its appends stored: ``ids``, those the
    last attempt stored; ``certain``, false when an earlier attempt may have committed too (it
    ran to its end, then the commit failed: its ids may be found stored by the next)."""

    __slots__ = ("certain", "ids")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.certain = True


def append_attempts(
    events: Sequence[NewEvent], stored: StoredIds | None = None
) -> Callable[[], Op[list[RunEvent]]]:
    """Append operations for successive attempts: optimistic first, then checked.

    The first attempt skips looking ids up: a single-thread batch is then one statement, so
    one round trip. If an id is already stored the unique index rejects the whole statement
    (no seq is taken) and every later attempt looks stored ids up first, in a transaction.
    ``stored`` is told what the attempts stored.
    """
    attempts = count()
    ended: list[bool] = []  # each attempt so far: whether it ran to its end (before commit)

    def attempt() -> Op[list[RunEvent]]:
        if stored is not None and any(ended):
            stored.certain = False
        ended.append(False)
        records = yield from append_op(events, checked=next(attempts) > 0, stored=stored)
        ended[-1] = True
        return records

    return attempt


def append_op(
    events: Sequence[NewEvent], *, checked: bool, stored: StoredIds | None = None
) -> Op[list[RunEvent]]:
    """Append a prepared batch; ``checked`` looks stored ids up first (in a transaction);
    ``stored`` gets the ids of the events it stores."""
    known: dict[str, RunEvent] = {}
    fresh: dict[str, NewEvent] = {}
    texts: dict[str, tuple[str, str]] = {}
    owned = getattr(events, "owned", None)
    if not (isinstance(owned, list) and len(owned) == len(events)):
        owned = [False] * len(events)
    mine: set[int] = set()  # the events prepare built: each may become its own record
    for event, encoded, own in zip(events, encoded_texts(events), owned, strict=True):
        fresh.setdefault(event.event_id, event)
        texts.setdefault(event.event_id, encoded)
        if own:
            mine.add(id(event))
    by_thread: dict[str, list[NewEvent]] = {}
    for event in fresh.values():
        by_thread.setdefault(event.thread_id, []).append(event)
    if checked or len(by_thread) > 1:
        yield BEGIN
    if checked:
        yield sql.LOCK_HEADS, (list((yield from _lockable_heads(sorted(by_thread)))),)
        rows = yield sql.SELECT_EXISTING, (list(fresh),)
        known = {record.event_id: record for record in map(to_event, rows)}
        by_thread = {
            thread_id: kept
            for thread_id, batch in by_thread.items()
            if (kept := [e for e in batch if e.event_id not in known])
        }
    numbered: list[tuple[list[NewEvent], int]] = []
    for thread_id in sorted(by_thread):  # one lock order for every writer: no deadlock
        batch = by_thread[thread_id]
        params = thread_params(thread_id, batch, texts)
        params.update(runs_params(thread_id, project(enumerate(batch, start=1))))
        [(last,)] = yield sql.APPEND_THREAD, params
        numbered.append((batch, last))
    # Records only once every thread's statement went through: an event prepare built turns
    # into its record in place, and a later thread's failure (the whole transaction rolled
    # back) must leave the batch as it was for the retry and the spool.
    if stored is not None:
        stored.ids.clear()
    for batch, last in numbered:
        for seq, event in enumerate(batch, start=last - len(batch) + 1):
            known[event.event_id] = stored_record(event, seq, id(event) in mine)
            if stored is not None:
                stored.ids.add(event.event_id)
    return records_in_order(events, known)


def _lockable_heads(threads: list[str]) -> Op[list[str]]:
    """The heads a retry locks first: those of ``threads`` (sorted: Python orders str by code
    point, as "C" does the UTF-8 bytes, the order of every writer) up to the first thread
    without one. A head another writer is creating cannot be locked; locking a later one
    before it could deadlock with that writer (it holds the new head, then wants the later).
    """
    rows = yield sql.HEADS_OF, (threads,)
    present = {thread_id for (thread_id,) in rows}
    prefix: list[str] = []
    for thread_id in threads:
        if thread_id not in present:
            break
        prefix.append(thread_id)
    return prefix


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


#: ``(seq, message id, digest)`` of a thread's events of some types after a seq, the id and
#: the digest as the JSON texts the events hold (decoded by :func:`message_marks_op`).
_MARKS: Final = (
    "SELECT seq, (content -> 'data' -> 'id')::text, (metadata -> 'digest')::text "
    "FROM runjournal_events WHERE thread_id = %s AND seq > %s AND event_type = ANY(%s) "
    "ORDER BY seq"
)


def message_marks_op(
    thread_id: str, event_types: Sequence[str], after_seq: int | None
) -> Op[list[tuple[int, str | None, str]] | None]:
    """``(seq, message id, digest)`` of ``thread_id``'s events of ``event_types`` after
    ``after_seq`` (see :meth:`journal.store.RunEventStore._message_marks`): three short
    columns a row, not the events; ``None`` when an event records no digest, or a text does
    not decode (the caller reads the events)."""
    rows = yield _MARKS, (thread_id, after_seq or 0, sorted(set(event_types)))
    marks: list[tuple[int, str | None, str]] = []
    for seq, id_text, digest_text in rows:
        try:
            digest = orjson.loads(digest_text) if digest_text is not None else None
            message_id = orjson.loads(id_text) if id_text is not None else None
        except orjson.JSONDecodeError:  # (a lone surrogate: the events' own decoding then)
            return None
        if type(digest) is not str:
            return None
        marks.append((int(seq), message_id if type(message_id) is str else None, digest))
    return marks


def where_clause(query: ReadQuery) -> tuple[str, list[Any]]:
    """A WHERE clause for ``query``'s thread, cursors and filter (fixed columns, bound values)."""
    cursors, cursor_params = query.cursor_conditions("seq", "%s")
    where = " AND ".join(["thread_id = %s", *cursors])
    params: list[Any] = [query.thread_id, *cursor_params]
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


def thread_ids_after_op(after: str | None, limit: int) -> Op[list[str]]:
    """Thread ids in their index's order, the first ``limit`` after ``after``."""
    params: list[str | int] = [limit]
    statement = "ORDER BY thread_id LIMIT %s"
    if after is not None:
        params, statement = [after, limit], f"WHERE thread_id > %s {statement}"
    rows = yield f"SELECT thread_id FROM runjournal_thread_heads {statement}", params
    return [thread_id for (thread_id,) in rows]


def list_runs_page_op(query: ReadQuery) -> Op[list[RunSummary]]:
    """The runs ``query`` selects by ``first_seq``: one range of the page index."""
    cursors, params = query.cursor_conditions("first_seq", "%s")
    where = " AND ".join(["thread_id = %s", *cursors])
    order = "DESC" if query.newest_first else "ASC"
    statement = f"{RUN_SELECT} WHERE {where} ORDER BY first_seq {order} LIMIT %s"
    rows = yield statement, [query.thread_id, *params, query.limit]
    runs = [run_from_row(row).summary() for row in rows]
    return runs[::-1] if query.newest_first else runs


def get_run_op(run_id: str, thread_id: str | None) -> Op[RunSummary | None]:
    """The run ``run_id`` (of ``thread_id``), the first started of them if several."""
    where, params = "run_id = %s", [run_id]
    if thread_id is not None:
        where += " AND thread_id = %s"
        params.append(thread_id)
    rows = yield (
        f'{RUN_SELECT} WHERE {where} ORDER BY started_at, thread_id COLLATE "C" LIMIT 1',
        params,
    )
    return run_from_row(rows[0]).summary() if rows else None


def read_usage_op(thread_id: str) -> Op[ThreadUsage]:
    """The usage buckets of ``thread_id`` (the total one holds its run count)."""
    rows = yield USAGE_SELECT, (thread_id,)
    runs = next((int(row[-1]) for row in rows if (row[0], row[1]) == TOTAL), 0)
    return thread_usage(thread_id, [usage_counts(row) for row in rows], runs)


def delete_thread_op(thread_id: str) -> Op[int]:
    """Delete a thread's events and head through ``runjournal_delete_thread`` (one statement)."""
    [(count,)] = yield sql.DELETE_THREAD, (thread_id,)
    return int(count)


def migrate_op() -> Op[int]:
    """Bring the schema to ``SCHEMA_VERSION`` under an advisory lock; return steps applied.

    A schema already at this version is only read (no lock, no DDL): a role with the
    documented app grants, which may not create tables, opens it with ``migrate=True`` too.
    Only the schema the migration would create tables in counts (``current_schema()``): a
    runjournal schema further on ``search_path`` is not taken for this store's.
    """
    [(has_table,)] = yield sql.HAS_VERSION_TABLE_HERE, None
    if has_table:
        [(version,)] = yield sql.SELECT_VERSION, None
        if version == sql.SCHEMA_VERSION:
            return 0
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
    if version < sql.RUNS_SINCE:
        yield from backfill_runs_op()
    return sql.SCHEMA_VERSION - int(version)


def backfill_runs_op() -> Op[None]:
    """Fill the (empty) runs and usage tables from every stored event, thread by thread."""
    threads = yield "SELECT thread_id FROM runjournal_thread_heads", None
    for (thread_id,) in threads:
        projection, after = Projection(), 0
        while rows := (yield sql.EVENTS_AFTER, (thread_id, after, _BACKFILL_PAGE)):
            for row in rows:
                event = to_event(row)
                projection.add(event.seq, event)
            after = rows[-1][1]
        params = {"thread_id": thread_id, "new_runs": len(projection.runs)}
        params.update(runs_params(thread_id, projection))
        yield sql.BACKFILL_RUNS, params
