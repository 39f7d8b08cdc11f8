"""Copying a whole thread from one SQLite store file into another, in SQL.

:func:`copy_thread` is :func:`journal.copy.copy_store`'s path between two SQLite stores: the
source file is attached to a target connection and, in one write transaction, the thread's
rows (events as stored, its runs, its head with its usage) are inserted with
``INSERT ... SELECT`` — no row is decoded, validated or encoded again in Python. The rows are
the very bytes the source stored, so the target thread reads back equal to the source thread;
the target's triggers check every inserted event as they check any insert.

It declines (returns ``None``, writing nothing) whenever the page-by-page path must decide:
the target already holds events of the thread (a prefix to check), the source thread is no
longer ``end`` events long, the target's caps would change one of its events (checked by the
target's own preparation for the few events over a cap), or one of its event ids is stored in
the target already.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from journal import _sqlite_schema as sql
from journal._runs_rows import RUN_COLUMNS
from journal._sqlite_conn import transaction

__all__ = ["copy_thread"]

_SOURCE: Final = "runjournal_source"
_RUNS: Final = ", ".join(RUN_COLUMNS)


def _over_caps(caps: Mapping[str, int]) -> str:
    """The condition of an event the target's caps would change (sizes in UTF-8 bytes)."""
    by_category = " ".join(f"WHEN '{category}' THEN {int(cap)}" for category, cap in caps.items())
    return (
        "length(CAST(content AS BLOB)) > CASE WHEN event_type = 'llm.end' THEN "
        f"{int(caps['message'])} ELSE CASE category {by_category} END END "
        "OR length(CAST(metadata AS BLOB)) > ?"
    )


def copy_thread(
    conn: sqlite3.Connection,
    source: Path,
    thread_id: str,
    end: int,
    caps: Mapping[str, int],
    metadata_cap: int,
    unchanged: Callable[[list[tuple[Any, ...]]], bool],
) -> int | None:
    """Copy the ``end`` events of ``thread_id`` from the file ``source`` into ``conn``'s
    database, where the thread must be empty; how many were copied, or ``None`` if declined.

    ``unchanged(rows)`` says whether the target's preparation leaves the given rows (those over
    a cap, usually none: an ``llm.start`` whose exact context record is over the metadata cap,
    or an event stored under bigger caps) exactly as they are stored."""
    conn.execute(f"ATTACH DATABASE ? AS {_SOURCE}", (str(source),))
    try:
        with transaction(conn):
            if conn.execute(sql.LAST_SEQ_SQL, (thread_id,)).fetchone() is not None:
                return None
            head = conn.execute(
                f"SELECT last_seq FROM {_SOURCE}.thread_heads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            over = conn.execute(
                f"SELECT {sql.EVENT_COLUMNS} FROM {_SOURCE}.events "
                f"WHERE thread_id = ? AND ({_over_caps(caps)})",
                (thread_id, metadata_cap),
            ).fetchall()
            if head is None or head[0] != end or not unchanged(over):
                return None
            copied = conn.execute(
                f"INSERT INTO main.events ({sql.EVENT_COLUMNS}) SELECT {sql.EVENT_COLUMNS} "
                f"FROM {_SOURCE}.events WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).rowcount
            for table, columns in (
                ("runs", _RUNS),
                ("thread_heads", sql.HEAD_COLUMNS),  # last: its trigger checks the events
            ):
                conn.execute(
                    f"INSERT INTO main.{table} ({columns}) SELECT {columns} "
                    f"FROM {_SOURCE}.{table} WHERE thread_id = ?",
                    (thread_id,),
                )
        return int(copied)
    except sqlite3.IntegrityError as e:  # rolled back: an event id is stored in the target
        if "event_id" not in str(e):
            raise
        return None
    finally:
        conn.execute(f"DETACH DATABASE {_SOURCE}")
