"""A database written before runs and usage were kept migrates to what a fresh store says."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlite_utils import Database

from journal import (
    MemoryEventStore,
    NewEvent,
    RunEventStore,
    SchemaVersionError,
    SqliteEventStore,
)
from journal import _postgres_schema as pg_schema
from journal import _sqlite_schema as sqlite_schema
from journal._sqlite_rows import to_micros
from journal.encoding import dumps
from journal.postgres import PostgresEventStore
from journal.testing import T0, ev
from journal.testing._runs import human, lifecycle, llm_end, run_events

THREADS = ("a", "b", "c")


def old_events() -> list[NewEvent]:
    """Three threads: finished, failed and running runs, a run id in two threads, one second
    apart from T0."""
    events = [
        *run_events("r1", "a", calls=3),
        *run_events("r2", "a", calls=1, end="error"),
        *run_events("shared", "b", calls=2),
        *run_events("shared", "c", calls=1, end=""),
        human("hidden", run_id="r3", thread_id="a", additional_kwargs={"hide_from_ui": True}),
        llm_end("m9", run_id="r3", thread_id="a", caller="middleware:Title", input_tokens=4),
        lifecycle("start", run_id="r3", thread_id="a"),
        ev("c", run_id="quiet", event_type="custom:x"),
    ]
    return [
        e.model_copy(update={"created_at": T0 + timedelta(seconds=i)}) for i, e in enumerate(events)
    ]


def later_events() -> list[NewEvent]:
    """What arrives after the migration: the running runs go on and end."""
    return [
        llm_end("m1", run_id="shared", thread_id="c", input_tokens=1, output_tokens=1),
        lifecycle("end", run_id="shared", thread_id="c", duration_ms=5),
        human("visible now", run_id="r3", thread_id="a"),
    ]


def numbered(events: list[NewEvent]) -> list[tuple[int, NewEvent]]:
    """``(seq, event)`` as a store numbers them (per thread, in order)."""
    heads: dict[str, int] = {}
    out = []
    for event in events:
        heads[event.thread_id] = heads.get(event.thread_id, 0) + 1
        out.append((heads[event.thread_id], event))
    return out


def assert_same_runs_and_usage(migrated: RunEventStore, fresh: RunEventStore) -> None:
    """Every thread's runs, usage, lookups and run counts are equal in both stores."""
    for thread in THREADS:
        assert migrated.list_runs(thread) == fresh.list_runs(thread)
        assert migrated.read_usage(thread) == fresh.read_usage(thread)
        for run in fresh.list_runs(thread):
            assert migrated.get_run(run.run_id) == fresh.get_run(run.run_id)
            assert migrated.get_run(run.run_id, thread_id=thread) == run
    counts = {t.thread_id: t.run_count for t in migrated.list_threads()}
    assert counts == {t.thread_id: t.run_count for t in fresh.list_threads()}


def compare_after_migration(migrated: RunEventStore) -> None:
    """The migrated store against a fresh memory store given the same events, then both
    given more events."""
    fresh = MemoryEventStore()
    fresh.append(old_events())
    assert migrated.list_runs("a") and migrated.read_usage("a").totals.calls == 5
    assert_same_runs_and_usage(migrated, fresh)
    later = later_events()
    migrated.append(later)
    fresh.append(later)
    assert_same_runs_and_usage(migrated, fresh)
    shared = migrated.get_run("shared", thread_id="c")
    assert shared is not None and shared.status == "success"


# -- SQLite ---------------------------------------------------------------------------------


def old_sqlite_file(path: Path) -> None:
    """A file at the version before runs were kept: its migrations, then rows written raw."""
    conn = sqlite3.connect(path, isolation_level=None)
    db = Database(conn)
    conn.execute("BEGIN IMMEDIATE")
    db.table("schema_version").create({"version": int}, not_null={"version"})
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", [sqlite_schema.RUNS_SINCE - 1])
    for migration in sqlite_schema.MIGRATIONS[: sqlite_schema.RUNS_SINCE - 1]:
        migration(db)
    runs: dict[str, set[str]] = {}
    for seq, e in numbered(old_events()):
        conn.execute(sqlite_schema.INSERT_EVENT_SQL, (e.event_id, e.thread_id, seq, e.run_id,
                     e.category, e.event_type, dumps(e.content), dumps(e.metadata),
                     to_micros(e.created_at)))  # fmt: skip
        new_run = e.run_id not in runs.setdefault(e.thread_id, set())
        runs[e.thread_id].add(e.run_id)
        at = to_micros(e.created_at)
        conn.execute(sqlite_schema.BUMP_HEAD_SQL, (e.thread_id, seq, at, at, int(new_run)))
    conn.execute("COMMIT")
    conn.close()


def test_sqlite_file_of_the_previous_version_migrates_to_the_same_runs(tmp_path: Path) -> None:
    """Opening a file written before runs and usage were kept fills them from its events."""
    path = tmp_path / "old.db"
    old_sqlite_file(path)
    with SqliteEventStore(path) as migrated:
        compare_after_migration(migrated)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (
            sqlite_schema.SCHEMA_VERSION,
        )
    finally:
        conn.close()


# -- PostgreSQL -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_database_of_the_previous_version_migrates_to_the_same_runs(
    postgres_db_url: str,
) -> None:
    """Migrating a database written before runs and usage were kept fills them; a role that
    may not migrate is told the schema is behind."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute(pg_schema.CREATE_VERSION_TABLE)
        for index in range(pg_schema.RUNS_SINCE - 1):
            conn.execute(pg_schema.MIGRATIONS[index])
            conn.execute(pg_schema.INSERT_VERSION, (index + 1,))
        with conn.transaction():
            heads: dict[str, tuple[int, object]] = {}
            for seq, e in numbered(old_events()):
                conn.execute(
                    "INSERT INTO runjournal_events (thread_id, seq, event_id, run_id, category, "
                    "event_type, content, metadata, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (e.thread_id, seq, e.event_id, e.run_id, e.category, e.event_type,
                     dumps(e.content), dumps(e.metadata), e.created_at),
                )  # fmt: skip
                heads[e.thread_id] = (seq, e.created_at)
            for thread, (last, at) in heads.items():
                conn.execute(
                    "INSERT INTO runjournal_thread_heads (thread_id, last_seq, last_event_at) "
                    "VALUES (%s, %s, %s)",
                    (thread, last, at),
                )
    with pytest.raises(SchemaVersionError, match="behind"):
        PostgresEventStore(postgres_db_url, migrate=False)
    with PostgresEventStore(postgres_db_url) as migrated:
        assert migrated.migrations_applied == pg_schema.SCHEMA_VERSION - pg_schema.RUNS_SINCE + 1
        compare_after_migration(migrated)
