"""The SQLite backend's runs and usage: kept by each append, read by page, id and thread.

:func:`keep` runs inside the append's write transaction, before the events go in; the head's
move after them (:data:`journal._sqlite_schema.MOVE_HEAD_SQL`, which every append makes
anyway) writes what it computed into the thread's head row, ``kept`` (JSON ``[tail_run,
tail, cells]``), so that the usual commit — more events of the run the thread is in — costs
one read of the head and no write of its own:

* ``cells`` is the thread's usage: the counts of its model calls per ``(model, caller)``;
  :func:`read_usage` sums them into the total, per-model and per-caller buckets;
* ``tail`` is the fold of the newest events of the run ``tail_run`` that are not merged into
  that run's row yet (or null), and the reads merge it in by the same rules. A batch of that
  run alone is merged into the tail; any other batch merges the tail and the batch's folds
  into ``runs`` — one upsert per run, by the rules of :data:`journal._runs.MERGE_RULES`
  rendered as SQL (the model list's union is :func:`journal._runs.union_models` itself,
  registered on each connection by :func:`prepare_connection`) — and the batch's newest run
  becomes ``tail_run``, with a null tail.

O(runs and cells of the batch), never the thread's events. :func:`rebuild` fills both from
the stored events (after a migration).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
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
    "add_call",
    "get_run",
    "keep",
    "keep_heads",
    "prepare_connection",
    "read_usage",
    "rebuild",
    "runs_page",
    "seq_range",
]

_COLUMNS: Final = ", ".join(RUN_COLUMNS)
_TIMES: Final = tuple(RUN_COLUMNS.index(c) for c in ("started_at", "last_event_at", "ended_at"))
_MODELS: Final = RUN_COLUMNS.index("models")
_RUN_ID: Final = RUN_COLUMNS.index("run_id")
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
HEAD_SQL: Final = "SELECT kept FROM thread_heads WHERE thread_id = ?"
_SET_HEAD_SQL: Final = "UPDATE thread_heads SET kept = ? WHERE thread_id = ?"
#: A run's row and its thread's ``kept`` (holding the run's tail when it is the tail's run).
_SELECT: Final = (
    f"SELECT {', '.join(f'runs.{c}' for c in RUN_COLUMNS)}, h.kept FROM runs "
    "LEFT JOIN thread_heads h ON h.thread_id = runs.thread_id"
)
#: Followed by the cursor conditions, the order and the limit.
PAGE_SQL: Final = f"{_SELECT} WHERE runs.thread_id = ?"
GET_RUN_SQL: Final = f"{_SELECT} WHERE runs.run_id = ?"
FIRST_STARTED: Final = " ORDER BY runs.started_at, runs.thread_id LIMIT 1"
#: The thread's run count and ``kept`` (its usage cells): one row, one snapshot.
USAGE_SQL: Final = "SELECT run_count, kept FROM thread_heads WHERE thread_id = ?"
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


def _from_row(row: Sequence[Any], kept: list[Any] | None) -> RunFold:
    """The fold of a row of :data:`_SELECT` (``kept``: its decoded last column): the stored
    run, with its thread's tail merged in when it is the tail's run."""
    values = list(row[:-1])
    values[_MODELS] = json.loads(values[_MODELS])
    if kept is not None and kept[1] is not None and kept[0] == values[_RUN_ID]:
        values = merge_values(values, kept[1])
    for index in _TIMES:
        if values[index] is not None:
            values[index] = from_micros(values[index])
    return fold_of(values)


def _folds(rows: Iterable[Sequence[Any]]) -> list[RunFold]:
    """The folds of rows of :data:`_SELECT` (each thread's ``kept`` decoded once)."""
    decoded: dict[str, list[Any]] = {}
    folds = []
    for row in rows:
        text = row[-1]
        if text is not None and text not in decoded:
            decoded[text] = orjson.loads(text)
        folds.append(_from_row(row, None if text is None else decoded[text]))
    return folds


class _Kept(threading.local):
    """What :func:`keep` computed for the heads in this OS thread's transaction: thread id ->
    ``kept`` (JSON text). A pooled connection serves one OS thread for one operation, and an
    append keeps its runs and moves its heads on one connection in one transaction."""

    def __init__(self) -> None:
        self.heads: dict[str, str] = {}


_kept: Final = _Kept()


def _kept_value(thread_id: str) -> str | None:
    """``runjournal_kept(thread_id)``: the head's ``kept`` as :func:`keep` computed it in
    this transaction, else NULL (the stored value stays)."""
    return _kept.heads.get(thread_id)


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Register what :data:`MERGE_RUN_SQL` and the head's move call on a new connection."""
    conn.create_function("runjournal_union", 2, _union, deterministic=True)
    conn.create_function("runjournal_kept", 1, _kept_value)


def _union(old: str, new: str) -> str:
    return json.dumps(union_models(json.loads(old), json.loads(new)))


def add_call(cells: list[list[Any]], model: str, caller: str, counts: Sequence[int]) -> None:
    """Add ``counts`` (in :data:`USAGE_COUNTS` order) of ``(model, caller)``'s calls to usage
    cells (``[model, caller, *counts]``, kept sorted; a thread has a few)."""
    for cell in cells:
        if cell[0] == model and cell[1] == caller:
            for index, count in enumerate(counts, start=2):
                cell[index] += count
            return
    cells.append([model, caller, *counts])
    cells.sort()


def _add_calls(cells: list[list[Any]], calls: Iterable[tuple[str, str, Sequence[int]]]) -> None:
    for model, caller, counts in calls:
        add_call(cells, model, caller, counts)


def _calls_by_thread(projection: Projection) -> dict[str, list[tuple[str, str, list[int]]]]:
    calls: dict[str, list[tuple[str, str, list[int]]]] = {}
    for (thread_id, model, caller), counts in projection.calls.items():
        counted = [counts[name] for name in USAGE_COUNTS]
        calls.setdefault(thread_id, []).append((model, caller, counted))
    return calls


def keep(conn: sqlite3.Connection, projection: Projection) -> None:
    """Merge a batch's projection into the runs and the heads' tails and usage (written by
    the head's move after the events, :data:`journal._sqlite_schema.MOVE_HEAD_SQL`)."""
    stored: dict[str, str | None] = {}
    for thread_id, _ in projection.runs:
        if thread_id not in stored:
            (stored[thread_id],) = conn.execute(HEAD_SQL, (thread_id,)).fetchone() or (None,)
    _kept.heads = {
        thread_id: kept for thread_id, (kept, _) in keep_heads(conn, projection, stored).items()
    }


def keep_heads(
    conn: sqlite3.Connection, projection: Projection, stored: Mapping[str, str | None]
) -> dict[str, tuple[str, bool]]:
    """:func:`keep` for an append that has read its threads' heads (``stored``: each thread's
    ``kept`` as read, ``None`` for a new thread): each thread's new ``kept``, and whether the
    batch only went on with the thread's tail run — then no run is new and no runs row is
    written (the head's move may be :data:`journal._sqlite_schema.CONTINUE_HEAD_SQL`)."""
    threads: dict[str, list[RunFold]] = {}
    for (thread_id, _), fold in projection.runs.items():
        threads.setdefault(thread_id, []).append(fold)
    calls = _calls_by_thread(projection) if projection.calls else {}
    heads: dict[str, tuple[str, bool]] = {}
    rows = []
    for thread_id, folds in threads.items():
        text = stored[thread_id]
        tail_run, tail, cells = orjson.loads(text) if text is not None else (None, None, [])
        goes_on = len(folds) == 1 and folds[0].run_id == tail_run
        if goes_on:  # the usual case: the run goes on
            values = _to_values(folds[0])
            tail = values if tail is None else merge_values(tail, values)
        else:  # another run (or several): the tail and the batch go into their rows
            if tail is not None:
                rows.append(_to_row(tail))
            rows += [_to_row(_to_values(fold)) for fold in folds]
            tail_run, tail = max(folds, key=lambda fold: fold.last_seq).run_id, None
        thread_calls = calls.get(thread_id)
        if thread_calls:
            _add_calls(cells, thread_calls)
        heads[thread_id] = (orjson.dumps([tail_run, tail, cells]).decode(), goes_on)
    if rows:
        conn.executemany(MERGE_RUN_SQL, rows)
    return heads


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
        cells: list[list[Any]] = []
        _add_calls(cells, _calls_by_thread(projection).get(thread_id, ()))
        kept = orjson.dumps([None, None, cells]).decode()  # no tail: every run is in its row
        conn.execute(_SET_HEAD_SQL, (kept, thread_id))


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
        "(SELECT MAX(CASE WHEN json_extract(h.kept, '$[0]') IS runs.run_id "
        "AND json_type(h.kept, '$[1]') = 'array' THEN h.last_seq ELSE runs.last_seq END) "
        f"FROM runs LEFT JOIN thread_heads h ON h.thread_id = runs.thread_id {runs})",
    )


def runs_page(conn: sqlite3.Connection, query: ReadQuery) -> list[RunSummary]:
    """The runs ``query`` selects by ``first_seq``: one range of the page index."""
    runs = [fold.summary() for fold in _folds(conn.execute(*page_statement(query)))]
    return runs[::-1] if query.newest_first else runs


def get_run(conn: sqlite3.Connection, run_id: str, thread_id: str | None) -> RunSummary | None:
    """The run ``run_id`` (of ``thread_id``), the first started of them if several."""
    folds = _folds(conn.execute(*run_statement(run_id, thread_id)).fetchmany(1))
    return folds[0].summary() if folds else None


def read_usage(conn: sqlite3.Connection, thread_id: str) -> ThreadUsage:
    """The thread's usage, summed from its head's cells, and its run count (one row)."""
    row = conn.execute(USAGE_SQL, (thread_id,)).fetchone()
    if row is None:
        return thread_usage(thread_id, [], 0)
    cells = orjson.loads(row[1])[2] if row[1] is not None else []
    calls = {
        (thread_id, cell[0], cell[1]): dict(zip(USAGE_COUNTS, cell[2:], strict=True))
        for cell in cells
    }
    summed = Projection(calls=calls).usage().get(thread_id, {})
    buckets: Iterable[tuple[str, str, dict[str, int]]] = [
        (scope, key, counts) for (scope, key), counts in sorted(summed.items())
    ]
    return thread_usage(thread_id, buckets, int(row[0]))
