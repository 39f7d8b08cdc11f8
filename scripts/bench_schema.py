"""Experiment: what the SQLite schema's indexes and guard cost an append, raw.

Raw ``executemany`` of pre-encoded rows (batches of 100, WAL, ``synchronous=NORMAL``, ~200-byte
payloads, 8 threads) into four variants of the events table: today's (a rowid table, unique
``event_id``, unique ``(thread_id, seq)``, the category and run read indexes, and the guard
trigger that refuses REPLACE and out-of-order seqs), a ``WITHOUT ROWID`` table keyed by
``(thread_id, seq)`` with the same read indexes, the same without the read indexes, and that
without the guard. Medians of 5 alternating rounds, events/s. No head table, no validation, no
encoding: it bounds what any code on top of each schema can reach.

Usage: ``python scripts/bench_schema.py``
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from journal.events import new_event_id

PAYLOAD = json.dumps(
    {"model": "m", "usage": {"input_tokens": 1}, "text": "the quick brown fox jumps " * 6}
)
COLUMNS = (
    "event_id TEXT NOT NULL, thread_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "run_id TEXT NOT NULL, category TEXT NOT NULL, event_type TEXT NOT NULL, "
    "content TEXT NOT NULL, metadata TEXT NOT NULL, created_at INTEGER NOT NULL"
)
INSERT = (
    "INSERT INTO events (event_id, thread_id, seq, run_id, category, event_type, content, "
    "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
EVENT_ID = "CREATE UNIQUE INDEX events_event_id ON events (event_id)"
READ_INDEXES = [
    "CREATE INDEX events_category ON events (thread_id, category, seq)",
    "CREATE INDEX events_run ON events (thread_id, run_id, seq)",
]


def guard(by_pk: bool) -> str:
    """The guard trigger of the store's schema (refuses REPLACE and out-of-order seqs)."""
    pk = " OR pk = NEW.pk" if by_pk else ""
    return (
        "CREATE TRIGGER events_guard BEFORE INSERT ON events WHEN NEW.seq IS NOT "
        "COALESCE((SELECT MAX(seq) FROM events WHERE thread_id = NEW.thread_id), 0) + 1 "
        f"OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id{pk}) "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )


CLUSTERED = f"CREATE TABLE events ({COLUMNS}, PRIMARY KEY (thread_id, seq)) WITHOUT ROWID"
SCHEMAS = {
    "today: rowid table, 4 indexes, guard": [
        f"CREATE TABLE events (pk INTEGER PRIMARY KEY, {COLUMNS})",
        EVENT_ID,
        "CREATE UNIQUE INDEX events_thread_seq ON events (thread_id, seq)",
        *READ_INDEXES,
        guard(by_pk=True),
    ],
    "WITHOUT ROWID by (thread_id, seq), 3 indexes, guard": [
        CLUSTERED,
        EVENT_ID,
        *READ_INDEXES,
        guard(by_pk=False),
    ],
    "WITHOUT ROWID, event_id index only, guard": [CLUSTERED, EVENT_ID, guard(by_pk=False)],
    "WITHOUT ROWID, event_id index only, no guard": [CLUSTERED, EVENT_ID],
}


def rate(conn: sqlite3.Connection, heads: dict[str, int], events: int = 10_000) -> float:
    start = time.perf_counter()
    for n in range(0, events, 100):
        thread = f"thread-{(n // 100) % len(heads)}"
        first = heads[thread]
        rows = [
            (new_event_id(), thread, first + k + 1, "r", "trace", "llm.end", PAYLOAD, "{}", 0)
            for k in range(100)
        ]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows)
        conn.execute("COMMIT")
        heads[thread] = first + 100
    return events / (time.perf_counter() - start)


def main() -> None:
    """Print a Markdown table of events/s per schema."""
    with tempfile.TemporaryDirectory() as tmp:
        conns = {}
        for index, (name, ddl) in enumerate(SCHEMAS.items()):
            conn = sqlite3.connect(Path(tmp) / f"{index}.db", isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            for statement in ddl:
                conn.execute(statement)
            conns[name] = conn
        heads = {name: {f"thread-{n}": 0 for n in range(8)} for name in conns}
        rates: dict[str, list[float]] = {name: [] for name in conns}
        for _ in range(5):
            for name, conn in conns.items():
                rates[name].append(rate(conn, heads[name]))
        for conn in conns.values():
            conn.close()
    print("| schema | raw events/s |")
    print("|---|---|")
    for name, values in rates.items():
        print(f"| {name} | {statistics.median(values):,.0f} |")


if __name__ == "__main__":
    main()
