"""Benchmark: what bounds our SQLite append — the peer's schema, ours, and the code on top.

One run, one machine, the payload and the load of ``bench_peer.py`` (~200-byte JSON, 8
threads, WAL, ``synchronous=NORMAL``), batches of 100 and single-event transactions, sides
alternating every round (the first round warms up), events/s medians:

* ``peer full``: the ``eventsourcing`` SQLite recorder's ``insert_events`` (``bench_peer.py``'s
  peer side);
Raw sides count the time of their statements only (their rows are built and encoded outside
it); the full sides are timed whole.

* ``peer schema raw``: ``executemany`` of pre-built rows into the peer's table (rowid table,
  unique ``(originator_id, originator_version)``): two B-trees, no checks — the floor of any
  event store on SQLite;
* ``peer schema raw, with our guarantees``: the same rows into the peer's table given our
  database-level guarantees by the same means as ours (``bench_peer.PEER_GUARD``: a guard
  trigger that refuses REPLACE and a version out of order, no UPDATE, no DELETE);
* ``ours, guarantees only, raw``: pre-encoded rows into the least of our schema that keeps our
  guarantees (unique ``event_id`` for idempotency, unique ``(thread_id, seq)``, the guard
  trigger that refuses REPLACE and seq gaps, the head row moved by each transaction), and the
  same without the guard trigger, and with a trigger that does nothing (its bare cost);
* ``ours schema raw``: the same rows into the store's own schema (the partial index of
  non-trace events, runs and usage tables present but not kept): what ``bench_peer.py``'s raw
  side measures;
* ``ours schema raw, runs and usage kept``: and the store's upkeep of runs and usage
  (its read of the head, then the head's move, which writes them; a thread's first batch
  upserts its run), each batch's fold into the head computed outside the timing (what
  keeping them costs SQLite);
* ``ours full``: ``SqliteEventStore.append`` of plain-dict events (validated, encoded, ids made,
  runs and usage kept).

Usage: ``python scripts/bench_schema.py [--rounds 5] [--events 10000]``
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_peer import PEER_GUARD, ours, payload, peer

from journal import NewEvent, SqliteEventStore
from journal import _sqlite_runs as runs
from journal import _sqlite_schema as schema
from journal._runs import project
from journal._sqlite_tail import keep_going
from journal.events import new_event_id

Append = Callable[[int, int], None]
THREADS = [f"thread-{n}" for n in range(8)]
COLUMNS = (
    "event_id TEXT NOT NULL, thread_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "run_id TEXT NOT NULL, category TEXT NOT NULL, event_type TEXT NOT NULL, "
    "content TEXT NOT NULL, metadata TEXT NOT NULL, created_at INTEGER NOT NULL"
)
MINIMAL = [
    f"CREATE TABLE events (pk INTEGER PRIMARY KEY, {COLUMNS})",
    "CREATE UNIQUE INDEX events_event_id ON events (event_id)",
    "CREATE UNIQUE INDEX events_thread_seq ON events (thread_id, seq)",
    "CREATE TABLE thread_heads (thread_id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL, "
    "first_event_at INTEGER NOT NULL, last_event_at INTEGER NOT NULL, "
    "run_count INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE delete_grants (thread_id TEXT PRIMARY KEY)",
    *schema._HEADS_FOLLOW_EVENTS,  # the head moves only to its thread's last seq
]
GUARD = schema._EVENTS_IN_ORDER  # the store's own: refuses REPLACE and seq gaps
HEAD = (
    "INSERT INTO thread_heads (thread_id, last_seq, first_event_at, last_event_at) "
    "VALUES (?, ?, 0, 0) ON CONFLICT (thread_id) DO UPDATE SET last_seq = excluded.last_seq"
)
PEER_TABLE = (
    "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, topic TEXT, "
    "state BLOB, PRIMARY KEY (originator_id, originator_version))"
)


def connect(path: Path, ddl: list[str]) -> sqlite3.Connection:
    """A WAL, ``synchronous=NORMAL`` connection to a new file holding ``ddl``."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for statement in ddl:
        conn.execute(statement)
    return conn


def raw_ours(conn: sqlite3.Connection) -> tuple[Append, Callable[[], None]]:
    """Pre-encoded rows and the head's move into our tables on ``conn``."""
    heads = dict.fromkeys(THREADS, 0)
    ids: list[str] = []

    def append(start: int, count: int) -> None:
        thread = THREADS[start % len(THREADS)]
        first = heads[thread]
        if len(ids) < count:  # ids are made outside the timed statements, in bulk
            ids.extend(new_event_id() for _ in range(10_000))
        rows = [
            (ids.pop(), thread, first + k + 1, "run-1", "trace", "llm.end",
             json.dumps(payload(start + k)), "{}", 0)
            for k in range(count)
        ]  # fmt: skip
        start_at = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(schema.INSERT_EVENT_SQL, rows)
        conn.execute(HEAD, (thread, first + count))
        conn.execute("COMMIT")
        statements[0] += time.perf_counter() - start_at
        heads[thread] = first + count

    return append, conn.close


def raw_kept(conn: sqlite3.Connection) -> tuple[Append, Callable[[], None]]:
    """:func:`raw_ours` plus the runs and usage statements of the store's usual append (the
    head's row read, then moved with its new ``kept``; the first batch of a thread upserts
    its run), their Python (the fold into the head) outside the timed statements: what
    keeping runs and usage costs SQLite."""
    heads = dict.fromkeys(THREADS, 0)
    ids: list[str] = []

    def append(start: int, count: int) -> None:
        thread = THREADS[start % len(THREADS)]
        first = heads[thread]
        if len(ids) < count:
            ids.extend(new_event_id() for _ in range(10_000))
        events = [
            NewEvent(event_id=ids.pop(), thread_id=thread, run_id="run-1", category="trace",
                     event_type="llm.end", content=payload(start + k))
            for k in range(count)
        ]  # fmt: skip
        numbered = [(first + k + 1, e) for k, e in enumerate(events)]
        rows = [
            (e.event_id, thread, first + k + 1, "run-1", "trace", "llm.end",
             json.dumps(e.content), "{}", 0)
            for k, e in enumerate(events)
        ]  # fmt: skip
        start_at = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(schema.HEAD_ROW_SQL, (thread,)).fetchone()
        statements[0] += time.perf_counter() - start_at
        kept = keep_going(thread, "run-1", row[1] if row else None, rows, events)
        if kept is None:  # a thread's first batch: its run is new
            kept = runs.keep_heads(conn, project(numbered), {thread: None})[thread][0]
        start_at = time.perf_counter()
        conn.executemany(schema.INSERT_EVENT_SQL, rows)
        if row is None:
            conn.execute(schema.MOVE_HEAD_KEPT_SQL, (thread, first + count, 0, 0, first, kept))
        else:
            conn.execute(schema.CONTINUE_HEAD_SQL, (first + count, 0, kept, thread))
        conn.execute("COMMIT")
        statements[0] += time.perf_counter() - start_at
        heads[thread] = first + count

    return append, conn.close


#: Seconds the raw sides spent in their statements (their rows are built outside them): the
#: time :func:`rate` counts for them.
statements = [0.0]


def raw_peer(conn: sqlite3.Connection) -> tuple[Append, Callable[[], None]]:
    """Pre-built rows into the peer's table on ``conn``."""
    versions = dict.fromkeys(THREADS, 0)

    def append(start: int, count: int) -> None:
        thread = THREADS[start % len(THREADS)]
        first = versions[thread]
        rows = [
            (thread, first + k + 1, "bench:LlmEnd", json.dumps(payload(start + k)).encode())
            for k in range(count)
        ]
        start_at = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        statements[0] += time.perf_counter() - start_at
        versions[thread] = first + count

    return append, conn.close


def sides(root: Path, batch: int) -> dict[str, tuple[Append, Callable[[], None]]]:
    """Every side, on its own new file."""

    def path(name: str) -> Path:
        return root / f"{name}-{batch}.db"

    store_file, kept_file = path("store"), path("kept")
    for file in (store_file, kept_file):
        SqliteEventStore(file).close()  # the store's own schema, triggers included
    kept = connect(kept_file, [])
    runs.prepare_connection(kept)  # the SQL function the run upsert calls
    nothing = "CREATE TRIGGER guard BEFORE INSERT ON events WHEN NEW.seq < 0 BEGIN SELECT 1; END"
    return {
        "peer full (eventsourcing recorder)": peer(path("peer"), "NORMAL"),
        "peer schema raw": raw_peer(connect(path("peer-raw"), [PEER_TABLE])),
        "peer schema raw, with our guarantees (bench_peer.PEER_GUARD)": raw_peer(
            connect(path("peer-guarded"), [PEER_TABLE, *PEER_GUARD])
        ),
        "ours, guarantees only, raw, no guard trigger": raw_ours(connect(path("min0"), MINIMAL)),
        "ours, guarantees only, raw, a trigger doing nothing": raw_ours(
            connect(path("min1"), [*MINIMAL, nothing])
        ),
        "ours, guarantees only, raw": raw_ours(connect(path("min"), [*MINIMAL, GUARD])),
        "ours schema raw": raw_ours(connect(store_file, [])),
        "ours schema raw, runs and usage kept": raw_kept(kept),
        "ours full (SqliteEventStore.append)": ours(path("ours"), "NORMAL"),
    }


def rate(append: Append, events: int, batch: int, offset: int) -> float:
    """Events/s of ``events`` events appended ``batch`` at a time (a raw side counts only the
    time of its statements, see :data:`statements`)."""
    statements[0] = 0.0
    start = time.perf_counter()
    for n in range(0, events, batch):
        append(offset + n, batch)
    seconds = time.perf_counter() - start
    return events / (statements[0] or seconds)


def measure(root: Path, batch: int, events: int, rounds: int) -> dict[str, float]:
    """Median events/s of every side over alternating rounds."""
    cases = sides(root, batch)
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(rounds + 1):
        order = list(cases) if round_no % 2 else list(reversed(cases))
        for name in order:
            measured = rate(cases[name][0], events, batch, round_no * events)
            if round_no:
                rates[name].append(measured)
    for _, close in cases.values():
        close()
    return {name: statistics.median(values) for name, values in rates.items()}


def main() -> None:
    """Print a Markdown table: events/s per side and batch size, and each side / peer schema raw."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[int, dict[str, Any]] = {}
        for batch in (100, 1):
            events = args.events if batch > 1 else max(args.events // 10, 200)
            results[batch] = measure(Path(tmp), batch, events, args.rounds)
    print(
        "| side | batch 100 events/s | / peer schema raw | / peer full "
        "| batch 1 events/s | / peer schema raw | / peer full |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in results[100]:
        cells = []
        for batch in (100, 1):
            got = results[batch]
            cells += [
                f"{got[name]:,.0f}",
                f"{got[name] / got['peer schema raw']:.2f}",
                f"{got[name] / got['peer full (eventsourcing recorder)']:.2f}",
            ]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
