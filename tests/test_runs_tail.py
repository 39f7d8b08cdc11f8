"""SQLite keeps a thread's usage and its current run's newest events in the head row (schema 6):
every reader sees them as if they were in the runs table, a copy takes them along, and a
schema 5 file migrates to the same answers."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from journal import MemoryEventStore, NewEvent, RunEventStore, SqliteEventStore
from journal import _sqlite_runs as sqlite_runs
from journal import _sqlite_schema as sqlite_schema
from journal._runs import USAGE_COUNTS, project
from journal._runs_rows import RUN_COLUMNS
from journal._sqlite_rows import to_micros
from journal.copy import copy_store
from journal.encoding import dumps
from journal.testing._runs import ai, human, lifecycle, llm_end, run_events
from tests.test_store_runs_migration import THREADS, compare_after_migration, numbered, old_events


def interleaved() -> list[NewEvent]:
    """Two runs of one thread that overlap, then a third, with model calls of two models."""
    first = run_events("r1", "t1", calls=3, end="")
    second = run_events("r2", "t1", calls=2, end="")
    events = [e for pair in zip(first, second, strict=False) for e in pair]
    events += [*first[len(second) :], lifecycle("end", run_id="r2"), ai("done", run_id="r1")]
    events += [llm_end("m2", run_id="r1", input_tokens=4), lifecycle("end", run_id="r1")]
    return events + run_events("r3", "t1", calls=1, end="")


def same_reads(store: RunEventStore, model: MemoryEventStore, thread_id: str) -> None:
    """Every runs and usage reader, and the reads by run, answer as the memory store does."""
    runs = model.list_runs(thread_id)
    assert store.list_runs(thread_id) == runs
    assert store.list_runs(thread_id, before_seq=2**63 - 1, limit=1) == runs[-1:]
    assert store.read_usage(thread_id) == model.read_usage(thread_id)
    for run in runs:
        assert store.get_run(run.run_id) == run
        assert store.get_run(run.run_id, thread_id=thread_id) == run
        by_run = [e.event_id for e in model.read(thread_id, run_id=run.run_id)]
        assert [e.event_id for e in store.read(thread_id, run_id=run.run_id)] == by_run
        assert store.count(thread_id, run_id=run.run_id) == len(by_run)
    assert [t.run_count for t in store.list_threads()] == [
        t.run_count for t in model.list_threads()
    ]


def test_every_reader_sees_the_runs_newest_events_kept_in_the_head(tmp_path: Path) -> None:
    """Appended one event at a time or in random chunks, overlapping runs read the same as
    in a memory store after every append: pages, lookups, usage, reads and counts by run."""
    events = interleaved()
    rng = random.Random(3)
    for chunking in ("single", "random"):
        model = MemoryEventStore()
        with SqliteEventStore(tmp_path / f"{chunking}.db") as store:
            start = 0
            while start < len(events):
                size = 1 if chunking == "single" else rng.randint(1, 5)
                batch = events[start : start + size]
                store.append(batch)
                model.append(batch)
                same_reads(store, model, "t1")
                start += size


def test_a_run_going_on_alone_costs_no_run_row_write(tmp_path: Path) -> None:
    """More events of the run a thread is in leave its runs row as it was and go into the
    head's tail; the next run's first batch merges the tail into the row."""
    with SqliteEventStore(tmp_path / "tail.db") as store:
        store.append(run_events("r1", "t1", calls=1, end="")[:2])
        conn = sqlite3.connect(tmp_path / "tail.db")
        try:
            row = conn.execute("SELECT event_count FROM runs WHERE run_id = 'r1'").fetchone()
            for e in run_events("r1", "t1", calls=2)[2:]:
                store.append([e])
            assert (
                conn.execute("SELECT event_count FROM runs WHERE run_id = 'r1'").fetchone() == row
            )
            tail_run, tail, _ = json.loads(
                conn.execute("SELECT kept FROM thread_heads").fetchone()[0]
            )
            assert tail_run == "r1" and tail is not None
            summary = store.get_run("r1")
            assert summary is not None and summary.status == "success"
            store.append([human("next", run_id="r2")])
            (count,) = conn.execute("SELECT event_count FROM runs WHERE run_id = 'r1'").fetchone()
            assert count == summary.event_count
            tail_run, tail, _ = json.loads(
                conn.execute("SELECT kept FROM thread_heads").fetchone()[0]
            )
            assert (tail_run, tail) == ("r2", None)
        finally:
            conn.close()


def test_a_copy_in_sql_takes_the_head_tail_and_usage_along(tmp_path: Path) -> None:
    """A thread whose run goes on in its head's tail copies (in SQL) to a store that reads
    the same runs and usage, and that goes on appending to that run."""
    model = MemoryEventStore()
    with SqliteEventStore(tmp_path / "source.db") as source:
        for e in run_events("r1", "t1", calls=3, end=""):
            source.append([e])
            model.append([e])
        with SqliteEventStore(tmp_path / "target.db") as target:
            assert copy_store(source, target).copied == len(model.read("t1"))
            same_reads(target, model, "t1")
            more = [llm_end("m1", run_id="r1", input_tokens=5), lifecycle("end", run_id="r1")]
            target.append(more)
            model.append(more)
            same_reads(target, model, "t1")


def schema_5_file(path: Path) -> None:
    """A file as schema 5 left it: the events, their heads, and their runs and usage buckets
    in their own tables (folded from the events, as schema 5's appends kept them)."""
    conn = sqlite3.connect(path, isolation_level=None)
    db = Database(conn)
    conn.execute("BEGIN IMMEDIATE")
    db.table("schema_version").create({"version": int}, not_null={"version"})
    conn.execute("INSERT INTO schema_version (version) VALUES (5)")
    for migration in sqlite_schema.MIGRATIONS[:5]:
        migration(db)
    pairs = numbered(old_events())
    new_runs: dict[str, set[str]] = {}
    for seq, e in pairs:
        at = to_micros(e.created_at)
        row = (e.event_id, e.thread_id, seq, e.run_id, e.category, e.event_type,
               dumps(e.content), dumps(e.metadata), at)  # fmt: skip
        conn.execute(sqlite_schema.INSERT_EVENT_SQL, row)
        known = new_runs.setdefault(e.thread_id, set())
        conn.execute(sqlite_schema.BUMP_HEAD_SQL, (e.thread_id, seq, at, at,
                     int(e.run_id not in known)))  # fmt: skip
        known.add(e.run_id)
    projection = project(pairs)
    conn.executemany(
        f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
        [sqlite_runs._to_row(sqlite_runs._to_values(f)) for f in projection.runs.values()],
    )
    conn.executemany(
        f"INSERT INTO thread_usage VALUES (?, ?, ?, {', '.join('?' * len(USAGE_COUNTS))})",
        [
            (thread, scope, key, *(counts[c] for c in USAGE_COUNTS))
            for thread, buckets in projection.usage().items()
            for (scope, key), counts in buckets.items()
        ],
    )
    conn.execute("COMMIT")
    conn.close()


def test_a_schema_5_file_migrates_to_the_same_runs_and_usage(tmp_path: Path) -> None:
    """Opening a schema 5 file (runs and usage buckets in their own tables) gives the answers
    of a fresh store, counted once, and keeps them as more events arrive."""
    path = tmp_path / "v5.db"
    schema_5_file(path)
    with SqliteEventStore(path) as migrated:
        assert {t.thread_id for t in migrated.list_threads()} == set(THREADS)
        compare_after_migration(migrated)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (6,)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "thread_usage" not in tables
    finally:
        conn.close()
