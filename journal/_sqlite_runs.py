"""The SQLite backend's runs and usage: kept by each append, read by page, id and thread.

:func:`keep` runs inside the append's write transaction, before the events go in; the head's
move after them (:data:`journal._sqlite_schema.MOVE_HEAD_SQL`, which every append makes
anyway) writes what it computed for each thread's head row, so that the usual commit — more
events of the run the thread is in — costs one read of the head and no write of its own:

* a thread's usage is one JSON value of its head: the counts of its model calls per
  ``(model, caller)`` cell; :func:`read_usage` sums the cells into the total, per-model and
  per-caller buckets;
* the head's ``tail`` is the fold of the newest events of its run ``tail_run`` that are not
  merged into that run's row yet, and the reads merge it in by the same rules. A batch of that
  run alone is merged into the tail; any other batch merges the tail and the batch's folds
  into ``runs`` — one upsert per run, by the rules of :data:`journal._runs.MERGE_RULES`
  rendered as SQL (the model list's union is :func:`journal._runs.union_models` itself,
  registered on each connection by :func:`prepare_connection`) — and the batch's newest run
  becomes the tail's run, with an empty tail.

O(runs and cells of the batch), never the thread's events. :func:`rebuild` fills both from
the stored events (after a migration).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from journal import _sqlite_schema as sql
from journal._query import ReadQuery
from journal._runs import (
    USAGE_COUNTS,
    Projection,
    RunFold,
    thread_usage,
    union_models,
)
from journal._runs_rows import (
    RUN_COLUMNS,
    fold_of,
    fold_values,
    merge_assignments,
    merge_values,
)
from journal._sqlite_rows import from_micros, row_to_event, to_micros
from journal.events import RunSummary, ThreadUsage

__all__ = [
    "get_run",
    "keep",
    "prepare_connection",
    "read_usage",
    "rebuild",
    "runs_page",
    "seq_range",
]

_COLUMNS: Final = ", ".join(RUN_COLUMNS)
_TIMES: Final = tuple(RUN_COLUMNS.index(c) for c in ("started_at", "last_event_at", "ended_at"))
_MODELS: Final = RUN_COLUMNS.index("models")
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
#: Inserts a fold of a run, or merges it into the stored one. (Whether it inserted is counted
#: by the head's move, :data:`journal._sqlite_schema.MOVE_HEAD_SQL`, in one range count:
#: cheaper than ``RETURNING`` or a lookup per run.)
MERGE_RUN_SQL: Final = (
    f"INSERT INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * len(RUN_COLUMNS))}) "
    f"ON CONFLICT (thread_id, run_id) DO UPDATE SET {merge_assignments(_SET)}"
)
#: What :func:`keep` needs of a thread's head.
HEAD_SQL: Final = "SELECT tail_run, tail, usage FROM thread_heads WHERE thread_id = ?"
_SET_HEAD_SQL: Final = (
    "UPDATE thread_heads SET tail_run = ?, tail = ?, usage = ? WHERE thread_id = ?"
)
#: A run's row and its thread's tail when it is the tail's run. Followed by conditions.
_SELECT: Final = (
    f"SELECT {', '.join(f'runs.{c}' for c in RUN_COLUMNS)}, h.tail FROM runs "
    "LEFT JOIN thread_heads h ON h.thread_id = runs.thread_id AND h.tail_run = runs.run_id"
)
#: Followed by the cursor conditions, the order and the limit.
PAGE_SQL: Final = f"{_SELECT} WHERE runs.thread_id = ?"
GET_RUN_SQL: Final = f"{_SELECT} WHERE runs.run_id = ?"
FIRST_STARTED: Final = " ORDER BY runs.started_at, runs.thread_id LIMIT 1"
#: The thread's run count and usage cells (one row, one snapshot).
USAGE_SQL: Final = "SELECT run_count, usage FROM thread_heads WHERE thread_id = ?"
DELETE_RUNS_SQL: Final = "DELETE FROM runs WHERE thread_id = ?"
_REBUILD_PAGE: Final = 1000


def _to_values(run: RunFold) -> list[Any]:
    """The fold's values, times in µs (the model list a list)."""
    values = fold_values(run)
    for index in _TIMES:
        if values[index] is not None:
            values[index] = to_micros(values[index])
    return values


def _to_row(values: list[Any]) -> list[Any]:
    """:data:`MERGE_RUN_SQL`'s parameters for a fold's values."""
    row = values.copy()
    row[_MODELS] = json.dumps(values[_MODELS])
    return row


def _from_row(row: Sequence[Any]) -> RunFold:
    """The fold of a row of :data:`_SELECT`: the stored run, its thread's tail merged in."""
    values = list(row[:-1])
    values[_MODELS] = json.loads(values[_MODELS])
    if row[-1] is not None:
        values = merge_values(values, orjson.loads(row[-1]))
    for index in _TIMES:
        if values[index] is not None:
            values[index] = from_micros(values[index])
    return fold_of(values)


class _Kept(threading.local):
    """What :func:`keep` computed for the heads in this OS thread's transaction: thread id ->
    ``[tail_run, tail, usage]``. A pooled connection serves one OS thread for one operation,
    and an append keeps its runs and moves its heads on one connection in one transaction."""

    def __init__(self) -> None:
        self.heads: dict[str, list[Any]] = {}


_kept: Final = _Kept()


def _kept_value(thread_id: str, index: int, stored: Any) -> Any:
    """``runjournal_kept(thread_id, index, stored)``: the head column ``index`` as
    :func:`keep` computed it, else the stored value."""
    values = _kept.heads.get(thread_id)
    return stored if values is None else values[index]


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Register what :data:`MERGE_RUN_SQL` and the head's move call on a new connection."""
    conn.create_function("runjournal_union", 2, _union, deterministic=True)
    conn.create_function("runjournal_kept", 3, _kept_value)


def _union(old: str, new: str) -> str:
    return json.dumps(union_models(json.loads(old), json.loads(new)))


def _add_cells(stored: str | None, projection: Projection, thread_id: str) -> str | None:
    """The thread's usage cells with the batch's calls added (JSON, sorted by cell)."""
    cells = {(c[0], c[1]): c[2:] for c in orjson.loads(stored)} if stored is not None else {}
    added = False
    for (thread, model, caller), counts in projection.calls.items():
        if thread == thread_id:
            added = True
            old = cells.get((model, caller))
            new = [counts[name] for name in USAGE_COUNTS]
            if old is not None:
                new = [a + b for a, b in zip(old, new, strict=True)]
            cells[model, caller] = new
    if not added:
        return stored
    return orjson.dumps([[*cell, *counts] for cell, counts in sorted(cells.items())]).decode()


def keep(conn: sqlite3.Connection, projection: Projection) -> None:
    """Merge a batch's projection into the runs and the heads' tails and usage (written by
    the head's move after the events)."""
    threads: dict[str, list[RunFold]] = {}
    for (thread_id, _), fold in projection.runs.items():
        threads.setdefault(thread_id, []).append(fold)
    heads: dict[str, list[Any]] = {}
    rows = []
    for thread_id, folds in threads.items():
        stored = conn.execute(HEAD_SQL, (thread_id,)).fetchone()
        tail_run, tail, usage = stored if stored is not None else (None, None, None)
        if len(folds) == 1 and folds[0].run_id == tail_run:  # the usual case: the run goes on
            values = _to_values(folds[0])
            if tail is not None:
                values = merge_values(orjson.loads(tail), values)
            heads[thread_id] = [tail_run, orjson.dumps(values).decode(), usage]
        else:  # another run (or several): the tail and the batch go into their rows
            if tail is not None:
                rows.append(_to_row(orjson.loads(tail)))
            rows += [_to_row(_to_values(fold)) for fold in folds]
            newest = max(folds, key=lambda fold: fold.last_seq)
            heads[thread_id] = [newest.run_id, None, usage]
        heads[thread_id][2] = _add_cells(usage, projection, thread_id)
    _kept.heads = heads
    if rows:
        conn.executemany(MERGE_RUN_SQL, rows)


def rebuild(conn: sqlite3.Connection) -> None:
    """Fill the (empty) runs and the heads' usage from every stored event, thread by thread."""
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
        conn.executemany(
            MERGE_RUN_SQL, [_to_row(_to_values(fold)) for fold in projection.runs.values()]
        )
        usage = _add_cells(None, projection, thread_id)
        conn.execute(_SET_HEAD_SQL, (None, None, usage, thread_id))


def page_statement(query: ReadQuery) -> tuple[str, list[Any]]:
    """The SQL of the runs page ``query`` selects, and its parameters."""
    cursors, cursor_params = query.cursor_conditions("runs.first_seq", "?")
    statement = " AND ".join([PAGE_SQL, *cursors])
    params: list[Any] = [query.thread_id, *cursor_params]
    order = " ORDER BY runs.first_seq"
    statement += f"{order} DESC" if query.newest_first else order
    if query.limit is not None:
        statement += " LIMIT ?"
        params.append(query.limit)
    return statement, params


def run_statement(run_id: str, thread_id: str | None) -> tuple[str, list[Any]]:
    """The SQL that finds the run ``run_id`` (of ``thread_id``), and its parameters."""
    if thread_id is None:
        return GET_RUN_SQL + FIRST_STARTED, [run_id]
    return GET_RUN_SQL + " AND runs.thread_id = ?", [run_id, thread_id]  # its key: one row


def seq_range(run_count: int) -> tuple[str, str]:
    """The SQL of the first seq and of the last seq of ``run_count`` runs of a thread, each
    taking the parameters ``thread_id, *run_ids`` (NULL if a run is unknown). A tail run's
    last seq is its thread's: a tail holds the thread's newest events."""
    runs = f"WHERE runs.thread_id = ? AND runs.run_id IN ({', '.join('?' * run_count)})"
    return (
        f"(SELECT MIN(runs.first_seq) FROM runs {runs})",
        "(SELECT MAX(CASE WHEN h.tail IS NULL THEN runs.last_seq ELSE h.last_seq END) "
        f"FROM runs LEFT JOIN thread_heads h ON h.thread_id = runs.thread_id "
        f"AND h.tail_run = runs.run_id {runs})",
    )


def runs_page(conn: sqlite3.Connection, query: ReadQuery) -> list[RunSummary]:
    """The runs ``query`` selects by ``first_seq``: one range of the page index."""
    runs = [_from_row(row).summary() for row in conn.execute(*page_statement(query))]
    return runs[::-1] if query.newest_first else runs


def get_run(conn: sqlite3.Connection, run_id: str, thread_id: str | None) -> RunSummary | None:
    """The run ``run_id`` (of ``thread_id``), the first started of them if several."""
    row = conn.execute(*run_statement(run_id, thread_id)).fetchone()
    return None if row is None else _from_row(row).summary()


def read_usage(conn: sqlite3.Connection, thread_id: str) -> ThreadUsage:
    """The thread's usage, summed from its head's cells, and its run count (one row)."""
    row = conn.execute(USAGE_SQL, (thread_id,)).fetchone()
    if row is None:
        return thread_usage(thread_id, [], 0)
    calls = {
        (thread_id, cell[0], cell[1]): dict(zip(USAGE_COUNTS, cell[2:], strict=True))
        for cell in (orjson.loads(row[1]) if row[1] is not None else [])
    }
    summed = Projection(calls=calls).usage().get(thread_id, {})
    buckets: Iterable[tuple[str, str, dict[str, int]]] = [
        (scope, key, counts) for (scope, key), counts in sorted(summed.items())
    ]
    return thread_usage(thread_id, buckets, int(row[0]))
