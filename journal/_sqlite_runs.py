"""The SQLite backend's runs and usage: kept by each append, read by page, id and thread.

:func:`keep` runs inside the append's write transaction: one upsert per run the batch
touches, which merges the batch's fold into the stored row by the rules of
:data:`journal._runs.MERGE_RULES` rendered as SQL (the model list's union is
:func:`journal._runs.union_models` itself, registered on each connection by
:func:`prepare_connection`), and one upsert per usage bucket — O(runs and buckets of the
batch) rows, never the thread's events. :func:`rebuild` fills both tables from the stored
events (after a migration).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

from journal import _sqlite_schema as sql
from journal._query import ReadQuery
from journal._runs import (
    USAGE_COUNTS,
    Projection,
    RunFold,
    thread_usage,
    union_models,
)
from journal._runs_rows import RUN_COLUMNS, fold_of, fold_values, merge_assignments
from journal._sqlite_rows import from_micros, row_to_event, to_micros
from journal.events import RunSummary, ThreadUsage

__all__ = ["get_run", "keep", "prepare_connection", "read_usage", "rebuild", "runs_page"]

_COLUMNS: Final = ", ".join(RUN_COLUMNS)
_TIMES: Final = frozenset({"started_at", "last_event_at", "ended_at"})
#: SQLite's form of each merge rule: ``runs`` the stored row, ``excluded`` the batch's.
_SET: Final[dict[str, str | None]] = {
    "keep": None,
    "newer": "excluded.{c}",
    "add": "runs.{c} + excluded.{c}",
    "lifecycle": "CASE WHEN excluded.lifecycle IS NOT NULL THEN excluded.{c} ELSE runs.{c} END",
    "first_set": "coalesce(runs.{c}, excluded.{c})",
    "last_set": "coalesce(excluded.{c}, runs.{c})",
    "union": "CASE WHEN excluded.{c} IN ('[]', runs.{c}) THEN runs.{c} "  # the usual case
    "ELSE runjournal_union(runs.{c}, excluded.{c}) END",
}
#: Inserts a batch's fold of a run, or merges it into the stored one. (Whether it inserted is
#: counted by the head's move, :data:`journal._sqlite_schema.MOVE_HEAD_SQL`, in one range
#: count: cheaper than ``RETURNING`` or a lookup per run.)
MERGE_RUN_SQL: Final = (
    f"INSERT INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * len(RUN_COLUMNS))}) "
    f"ON CONFLICT (thread_id, run_id) DO UPDATE SET {merge_assignments(_SET)}"
)
#: Adds a batch's counts to a usage bucket.
ADD_USAGE_SQL: Final = (
    f"INSERT INTO thread_usage (thread_id, scope, key, {', '.join(USAGE_COUNTS)}) "
    f"VALUES (?, ?, ?, {', '.join('?' * len(USAGE_COUNTS))}) "
    "ON CONFLICT (thread_id, scope, key) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in USAGE_COUNTS)
)
#: Followed by the cursor conditions, the order and the limit.
PAGE_SQL: Final = f"SELECT {_COLUMNS} FROM runs WHERE thread_id = ?"
GET_RUN_SQL: Final = f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?"
FIRST_STARTED: Final = " ORDER BY started_at, thread_id LIMIT 1"
#: The thread's run count and usage buckets in one statement (one snapshot): one row per
#: bucket, or one row of NULL buckets for a thread without model calls.
USAGE_SQL: Final = (
    f"SELECT h.run_count, u.scope, u.key, {', '.join(f'u.{c}' for c in USAGE_COUNTS)} "
    "FROM thread_heads h LEFT JOIN thread_usage u ON u.thread_id = h.thread_id "
    "WHERE h.thread_id = ?"
)
DELETE_RUNS_SQL: Final = "DELETE FROM runs WHERE thread_id = ?"
DELETE_USAGE_SQL: Final = "DELETE FROM thread_usage WHERE thread_id = ?"
_REBUILD_PAGE: Final = 1000


def _to_row(run: RunFold) -> list[Any]:
    values = fold_values(run)
    for index, column in enumerate(RUN_COLUMNS):
        if column in _TIMES and values[index] is not None:
            values[index] = to_micros(values[index])
    values[RUN_COLUMNS.index("models")] = json.dumps(run.models)
    return values


def _from_row(row: Sequence[Any]) -> RunFold:
    values = list(row)
    for index, column in enumerate(RUN_COLUMNS):
        if column in _TIMES and values[index] is not None:
            values[index] = from_micros(values[index])
    values[RUN_COLUMNS.index("models")] = json.loads(values[RUN_COLUMNS.index("models")])
    return fold_of(values)


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Register what :data:`MERGE_RUN_SQL` calls on a new connection."""
    conn.create_function("runjournal_union", 2, _union, deterministic=True)


def _union(old: str, new: str) -> str:
    return json.dumps(union_models(json.loads(old), json.loads(new)))


def keep(conn: sqlite3.Connection, projection: Projection) -> None:
    """Merge a batch's projection into the tables (the head counts the new runs after)."""
    conn.executemany(MERGE_RUN_SQL, [_to_row(fold) for fold in projection.runs.values()])
    usage = [
        (thread_id, scope, key, *(counts[c] for c in USAGE_COUNTS))
        for thread_id, buckets in projection.usage().items()
        for (scope, key), counts in buckets.items()
    ]
    if usage:  # most batches hold no model call's end
        conn.executemany(ADD_USAGE_SQL, usage)


def rebuild(conn: sqlite3.Connection) -> None:
    """Fill the (empty) runs and usage tables from every stored event, thread by thread."""
    threads = [row[0] for row in conn.execute("SELECT thread_id FROM thread_heads")]
    for thread_id in threads:
        projection, after = Projection(), 0
        while rows := conn.execute(
            f"{sql.SELECT_EVENTS_SQL} WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (thread_id, after, _REBUILD_PAGE),
        ).fetchall():
            for row in rows:
                event = row_to_event(row)
                projection.add(event.seq, event)
            after = rows[-1][2]
        keep(conn, projection)


def page_statement(query: ReadQuery) -> tuple[str, list[Any]]:
    """The SQL of the runs page ``query`` selects, and its parameters."""
    cursors, cursor_params = query.cursor_conditions("first_seq", "?")
    statement = " AND ".join([PAGE_SQL, *cursors])
    params: list[Any] = [query.thread_id, *cursor_params]
    statement += " ORDER BY first_seq DESC" if query.newest_first else " ORDER BY first_seq"
    if query.limit is not None:
        statement += " LIMIT ?"
        params.append(query.limit)
    return statement, params


def run_statement(run_id: str, thread_id: str | None) -> tuple[str, list[Any]]:
    """The SQL that finds the run ``run_id`` (of ``thread_id``), and its parameters."""
    if thread_id is None:
        return GET_RUN_SQL + FIRST_STARTED, [run_id]
    return GET_RUN_SQL + " AND thread_id = ?" + FIRST_STARTED, [run_id, thread_id]


def runs_page(conn: sqlite3.Connection, query: ReadQuery) -> list[RunSummary]:
    """The runs ``query`` selects by ``first_seq``: one range of the page index."""
    runs = [_from_row(row).summary() for row in conn.execute(*page_statement(query))]
    return runs[::-1] if query.newest_first else runs


def get_run(conn: sqlite3.Connection, run_id: str, thread_id: str | None) -> RunSummary | None:
    """The run ``run_id`` (of ``thread_id``), the first started of them if several."""
    row = conn.execute(*run_statement(run_id, thread_id)).fetchone()
    return None if row is None else _from_row(row).summary()


def read_usage(conn: sqlite3.Connection, thread_id: str) -> ThreadUsage:
    """The thread's usage buckets and run count (a few rows)."""
    rows = conn.execute(USAGE_SQL, (thread_id,)).fetchall()
    buckets: Iterable[tuple[str, str, dict[str, int]]] = [
        (row[1], row[2], dict(zip(USAGE_COUNTS, row[3:], strict=True)))
        for row in rows
        if row[1] is not None
    ]
    return thread_usage(thread_id, buckets, int(rows[0][0]) if rows else 0)
