"""The PostgreSQL backend's runs and usage: the SQL that keeps them, and their rows.

An append keeps them in the same statement that bumps the thread's head and inserts the
events (:data:`journal._postgres_schema.APPEND_THREAD`), so a single-thread append stays one
round trip: the batch's folds (:func:`journal._runs.project`, seqs numbered from 1 within the
batch) arrive as JSON records and are merged into the stored rows by ``INSERT … ON CONFLICT
DO UPDATE``, whose ``SET`` is rendered from :data:`journal._runs.MERGE_RULES` (the rules the
other backends apply), so all say the same. Writers of a thread are serialised by its head
row, and ``ON CONFLICT`` merges into the latest committed row. The SQL stays under 4 KiB:
psycopg converts a statement of up to 4 KiB once, a longer one at every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any, Final

import orjson
from psycopg.types.json import Json

from journal._runs import (
    TOTAL,
    USAGE_COUNTS,
    Projection,
    RunFold,
)
from journal._runs_rows import RUN_COLUMNS, fold_of, fold_values, merge_assignments

__all__ = [
    "RUN_SELECT",
    "USAGE_SELECT",
    "run_from_row",
    "runs_params",
    "runs_upsert",
    "usage_upsert",
]

_TIMES: Final = frozenset({"started_at", "last_event_at", "ended_at"})
_DELTA: Final = RUN_COLUMNS[1:]  # the batch's records: every column but the thread
_SEQS: Final = frozenset({"first_seq", "last_seq"})

#: ``rule`` of :data:`MERGE_RULES` -> the SQL of ``column = …`` (``r`` the stored row,
#: ``EXCLUDED`` the batch's); ``None``: the stored value stays.
_SET: Final[dict[str, str | None]] = {
    "keep": None,
    "newer": "EXCLUDED.{c}",
    "add": "r.{c}+EXCLUDED.{c}",
    "lifecycle": "CASE WHEN EXCLUDED.lifecycle IS NULL THEN r.{c} ELSE EXCLUDED.{c} END",
    "first_set": "coalesce(r.{c},EXCLUDED.{c})",
    "last_set": "coalesce(EXCLUDED.{c},r.{c})",
    "union": "r.{c}||ARRAY(SELECT m FROM unnest(EXCLUDED.{c}) WITH ORDINALITY u(m,i) "
    "WHERE m<>ALL(r.{c}) ORDER BY i)",
}


def runs_upsert(base: str, source: str = "") -> str:
    """``INSERT`` of the batch's folds (``%(runs)s``, JSON records) into ``runjournal_runs``,
    merged into stored runs.

    ``base`` is the SQL of the seq before the batch's first (the batch numbers seqs from 1);
    ``source`` what the ``FROM`` joins first (``"head,"`` inside the append). Returns each
    run's ``first_seq`` after the merge: above ``base`` for a run new to the thread.
    """
    values = ",".join(f"{base}+d.{c}" if c in _SEQS else f"d.{c}" for c in _DELTA)
    return (
        f"INSERT INTO runjournal_runs AS r({','.join(RUN_COLUMNS)}) SELECT %(thread_id)s,"
        f"{values} FROM {source}json_populate_recordset(NULL::runjournal_runs,%(runs)s) d "
        f"ON CONFLICT(thread_id,run_id) DO UPDATE SET {merge_assignments(_SET)} "
        "RETURNING r.first_seq"
    )


def usage_upsert(new_runs: str) -> str:
    """``INSERT`` adding the batch's usage buckets (``%(usage)s``, JSON records) to
    ``runjournal_thread_usage``.

    ``new_runs`` is the SQL of the number of runs new to the thread (counted in the total
    bucket's ``runs``). A batch with neither a model call nor a new run (most) writes no row.
    """
    counts = ",".join(USAGE_COUNTS)
    return (
        f"INSERT INTO runjournal_thread_usage AS u(thread_id,scope,key,{counts},runs) "
        f"SELECT %(thread_id)s,b.scope,b.key,{','.join(f'b.{c}' for c in USAGE_COUNTS)},"
        f"CASE WHEN b.scope='{TOTAL[0]}' THEN n.runs ELSE 0 END "
        f"FROM json_populate_recordset(NULL::runjournal_thread_usage,%(usage)s) b,"
        f"(SELECT {new_runs} AS runs) n WHERE b.calls>0 OR n.runs>0 "
        "ON CONFLICT(thread_id,scope,key) DO UPDATE SET "
        + ",".join(f"{c}=u.{c}+EXCLUDED.{c}" for c in (*USAGE_COUNTS, "runs"))
    )


def runs_params(thread_id: str, projection: Projection) -> dict[str, Any]:
    """The ``runs`` and ``usage`` records of :func:`runs_upsert` and :func:`usage_upsert`
    for one thread's batch (JSON text; times as ISO 8601)."""
    folds = [fold for (thread, _), fold in projection.runs.items() if thread == thread_id]
    runs = [dict(zip(_DELTA, fold_values(fold)[1:], strict=True)) for fold in folds]
    buckets = {TOTAL: dict.fromkeys(USAGE_COUNTS, 0), **projection.usage().get(thread_id, {})}
    usage = [{"scope": scope, "key": key, **counts} for (scope, key), counts in buckets.items()]
    return {"runs": Json(runs, dumps=_dumps), "usage": Json(usage, dumps=_dumps)}


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


#: Columns of a stored run, as :func:`run_from_row` reads them.
RUN_SELECT: Final = f"SELECT {', '.join(RUN_COLUMNS)} FROM runjournal_runs"
#: A thread's usage buckets, with the run count in the total one.
USAGE_SELECT: Final = (
    f"SELECT scope, key, {', '.join(USAGE_COUNTS)}, runs FROM runjournal_thread_usage "
    "WHERE thread_id = %s"
)


def run_from_row(row: tuple[Any, ...]) -> RunFold:
    """The fold of a row of :data:`RUN_SELECT` (times in UTC)."""
    values = list(row)
    for index, column in enumerate(RUN_COLUMNS):
        if column in _TIMES and values[index] is not None:
            values[index] = values[index].astimezone(UTC)
    return fold_of(values)


def usage_counts(row: tuple[Any, ...]) -> tuple[str, str, Mapping[str, int]]:
    """``(scope, key, counts)`` of a row of :data:`USAGE_SELECT`."""
    return row[0], row[1], dict(zip(USAGE_COUNTS, row[2:-1], strict=True))
