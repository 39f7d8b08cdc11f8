"""SQL of the SQLite backend: the versioned migrations and the statements of the hot paths.

``MIGRATIONS`` is append-only: the schema version of a database is the number of migrations
applied to it, so migration ``i`` (0-based) brings a database from version ``i`` to ``i + 1``.
Never edit a released migration; add a new one.

Layout (version 1):

* ``events``: one row per event; ``content``/``metadata`` are canonical JSON text
  (:func:`journal.encoding.dumps`), ``created_at`` is integer microseconds since the Unix epoch
  (UTC), so it round-trips exactly. ``UNIQUE(thread_id, seq)`` serves both cursors of a page
  read; ``UNIQUE(event_id)`` is the idempotency key; ``(thread_id, category, seq)`` and
  ``(thread_id, run_id, seq)`` keep filtered reads and ``list_runs`` off full-thread scans.
* ``thread_heads``: the per-thread seq counter (``last_seq``), bumped in the same transaction
  as the insert, plus the first/last event times and (version 2) the run count that
  ``list_threads`` reports.
* ``delete_grants``: a thread id is present only inside ``delete_thread``'s transaction; the
  triggers reject every UPDATE of an event and every DELETE without a grant.
* ``schema_version``: a single row holding the version.

Version 3 adds triggers that keep history from being rewritten by any connection: an event
insert must take its thread's next seq with a new ``event_id`` (so ``INSERT OR REPLACE`` and
``REPLACE INTO``, whose implicit delete fires no delete trigger, are refused), and a thread
head's ``last_seq`` must equal its thread's last seq (an ``UPDATE thread_heads`` that would
open a gap is refused; a head is deleted only with its thread).

Version 4 adds what the store keeps about runs and usage, maintained by every append in the
same transaction (:mod:`journal._sqlite_runs`): ``runs``, one row per ``(thread_id, run_id)``
(the :mod:`journal._runs` fold; ``(thread_id, first_seq)`` pages ``list_runs``, ``run_id``
finds a run by id alone), and ``thread_usage``, a thread's token usage in buckets ``(scope,
key)``: the total, each model, each caller. Both go only with their thread, and a database
older than :data:`RUNS_SINCE` has them filled from its events after migrating.

Version 5 keeps fewer B-trees on the write path: the ``(thread_id, category, seq)`` and
``(thread_id, run_id, seq)`` indexes go; ``events_thread_story``, a partial ``(thread_id, seq)``
index of the events that are not traces, serves category reads and the timeline, and a read
by run walks ``(thread_id, seq)`` within the seq range ``runs`` keeps for it.

Version 6 keeps runs and usage with fewer statements and pages per commit: the head row's
``kept`` (JSON ``[tail_run, tail, cells]``) holds the thread's usage (``cells``: its calls'
counts per ``(model, caller)``) and the part of its current run ``tail_run`` not yet merged
into the run's row (``tail``: the fold of that run's newest events, or null), written by the
head's move that every append makes anyway (:data:`MOVE_HEAD_SQL`). ``thread_usage`` goes;
``runs`` is filled again from the events (:data:`RUNS_SINCE`), and the usage with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from sqlite_utils import Database

__all__ = [
    "BUMP_HEAD_SQL",
    "CONTINUE_HEAD_SQL",
    "COUNT_SQL",
    "DELETE_EVENTS_SQL",
    "DELETE_HEAD_SQL",
    "EVENT_COLUMNS",
    "GRANT_DELETE_SQL",
    "HEAD_COLUMNS",
    "HEAD_ROW_SQL",
    "INSERT_EVENT_SQL",
    "LAST_SEQ_SQL",
    "LIST_THREADS_SQL",
    "MIGRATIONS",
    "MOVE_HEAD_KEPT_SQL",
    "MOVE_HEAD_SQL",
    "NOT_TRACE",
    "REVOKE_DELETE_SQL",
    "RUNS_SINCE",
    "SCHEMA_VERSION",
    "SELECT_EVENTS_SQL",
    "STORY_INDEX",
    "migrate",
    "read_version",
]


def _v1(db: Database) -> None:
    db.table("events").create(
        {
            "pk": int,
            "event_id": str,
            "thread_id": str,
            "seq": int,
            "run_id": str,
            "category": str,
            "event_type": str,
            "content": str,
            "metadata": str,
            "created_at": int,
        },
        pk="pk",
        not_null={
            "event_id",
            "thread_id",
            "seq",
            "run_id",
            "category",
            "event_type",
            "content",
            "metadata",
            "created_at",
        },
    )
    events = db.table("events")
    events.create_index(["event_id"], index_name="events_event_id", unique=True)
    events.create_index(["thread_id", "seq"], index_name="events_thread_seq", unique=True)
    events.create_index(["thread_id", "category", "seq"], index_name="events_thread_category_seq")
    events.create_index(["thread_id", "run_id", "seq"], index_name="events_thread_run_seq")
    db.table("thread_heads").create(
        {"thread_id": str, "last_seq": int, "first_event_at": int, "last_event_at": int},
        pk="thread_id",
        not_null={"last_seq", "first_event_at", "last_event_at"},
    )
    db.table("thread_heads").create_index(
        ["last_event_at", "thread_id"], index_name="thread_heads_recent"
    )
    db.table("delete_grants").create({"thread_id": str}, pk="thread_id")
    db.execute(
        "CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events "
        "BEGIN SELECT RAISE(ABORT, 'runjournal events are append-only: UPDATE is rejected'); END"
    )
    db.execute(
        "CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events "
        "WHEN NOT EXISTS (SELECT 1 FROM delete_grants WHERE thread_id = OLD.thread_id) "
        "BEGIN SELECT RAISE(ABORT, 'runjournal events are append-only: use delete_thread'); END"
    )


def _v2(db: Database) -> None:
    # list_threads reported COUNT(DISTINCT run_id) per thread: O(events); keep a counter.
    db.table("thread_heads").add_column("run_count", int, not_null_default=0)
    db.execute(
        "UPDATE thread_heads SET run_count = (SELECT COUNT(DISTINCT e.run_id) FROM events e "
        "WHERE e.thread_id = thread_heads.thread_id)"
    )


#: Refuses an event insert that would not take its thread's next seq or that reuses a stored
#: event_id or row: ``INSERT OR REPLACE`` / ``REPLACE INTO`` delete the conflicting row without
#: firing the delete trigger, so they are stopped before they get that far.
_EVENTS_IN_ORDER: Final = (
    "CREATE TRIGGER IF NOT EXISTS events_insert_in_order BEFORE INSERT ON events "
    "WHEN NEW.seq IS NOT COALESCE((SELECT MAX(seq) FROM events WHERE thread_id = NEW.thread_id), "
    "0) + 1 "
    "OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id OR pk = NEW.pk) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal events are append-only: an insert takes the next "
    "seq of its thread and a new event_id (REPLACE is rejected)'); END"
)
#: ``thread_heads.last_seq`` is always its thread's last seq; a head goes only with its thread.
_HEADS_FOLLOW_EVENTS: Final = (
    "CREATE TRIGGER IF NOT EXISTS thread_heads_insert_follows_events BEFORE INSERT ON thread_heads "
    "WHEN NEW.last_seq IS NOT (SELECT MAX(seq) FROM events WHERE thread_id = NEW.thread_id) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal thread_heads.last_seq must be the last seq of its "
    "thread'); END",
    "CREATE TRIGGER IF NOT EXISTS thread_heads_update_follows_events BEFORE UPDATE ON thread_heads "
    "WHEN NEW.thread_id IS NOT OLD.thread_id "
    "OR NEW.last_seq IS NOT (SELECT MAX(seq) FROM events WHERE thread_id = NEW.thread_id) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal thread_heads.last_seq must be the last seq of its "
    "thread'); END",
    "CREATE TRIGGER IF NOT EXISTS thread_heads_delete_with_thread BEFORE DELETE ON thread_heads "
    "WHEN NOT EXISTS (SELECT 1 FROM delete_grants WHERE thread_id = OLD.thread_id) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal thread heads go only with their thread: use "
    "delete_thread'); END",
)


def _v3(db: Database) -> None:
    # REPLACE slipped past the append-only triggers, and UPDATE thread_heads made seq gaps.
    # Appends now insert the events first and then move the head to their last seq.
    db.execute(_EVENTS_IN_ORDER)
    for statement in _HEADS_FOLLOW_EVENTS:
        db.execute(statement)


_RUNS_DELETE_WITH_THREAD: Final = (
    "CREATE TRIGGER runs_delete_with_thread BEFORE DELETE ON runs "
    "WHEN NOT EXISTS (SELECT 1 FROM delete_grants WHERE thread_id = OLD.thread_id) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal runs go only with their thread: use "
    "delete_thread'); END"
)
_RUNS_AND_USAGE: Final = (
    "CREATE TABLE runs (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
    "first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, started_at INTEGER NOT NULL, "
    "last_event_at INTEGER NOT NULL, event_count INTEGER NOT NULL, lifecycle TEXT, "
    "ended_at INTEGER, terminal_duration_ms REAL, error_type TEXT, error TEXT, "
    "models TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, "
    "total_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL, "
    "reasoning_tokens INTEGER NOT NULL, llm_calls INTEGER NOT NULL, "
    "tool_calls INTEGER NOT NULL, first_human TEXT, last_ai TEXT, "
    "PRIMARY KEY (thread_id, run_id))",
    "CREATE UNIQUE INDEX runs_thread_first_seq ON runs (thread_id, first_seq)",
    "CREATE INDEX runs_run_id ON runs (run_id, started_at, thread_id)",
    "CREATE TABLE thread_usage (thread_id TEXT NOT NULL, scope TEXT NOT NULL, "
    "key TEXT NOT NULL, calls INTEGER NOT NULL, input_tokens INTEGER NOT NULL, "
    "output_tokens INTEGER NOT NULL, total_tokens INTEGER NOT NULL, "
    "cache_read_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL, "
    "PRIMARY KEY (thread_id, scope, key)) WITHOUT ROWID",
    _RUNS_DELETE_WITH_THREAD,
    "CREATE TRIGGER thread_usage_delete_with_thread BEFORE DELETE ON thread_usage "
    "WHEN NOT EXISTS (SELECT 1 FROM delete_grants WHERE thread_id = OLD.thread_id) "
    "BEGIN SELECT RAISE(ABORT, 'runjournal usage goes only with its thread: use "
    "delete_thread'); END",
)


def _v4(db: Database) -> None:
    # list_runs grouped every event of the thread, and runs could not be found by id: keep
    # runs and usage at append time (filled from the events once, see RUNS_SINCE).
    for statement in _RUNS_AND_USAGE:
        db.execute(statement)


#: The events that are not traces (lifecycle, messages, middleware): what the timeline, the
#: message reads and the marker scans ask for, a small part of a thread. A read uses
#: :data:`STORY_INDEX` only when its WHERE clause has this very term (SQLite's rule for
#: partial indexes), which :func:`journal.sqlite._where` adds whenever its filters exclude
#: traces.
NOT_TRACE: Final = "category <> 'trace'"
STORY_INDEX: Final = "events_thread_story"


def _v5(db: Database) -> None:
    # Every index is a B-tree each append writes. Reads by run now take the run's seq range
    # from ``runs`` and walk (thread_id, seq); reads by category or of the timeline's types
    # walk a partial index of the non-trace events, which most appended events (traces) skip.
    db.execute("DROP INDEX IF EXISTS events_thread_run_seq")
    db.execute("DROP INDEX IF EXISTS events_thread_category_seq")
    db.execute(
        f"CREATE INDEX IF NOT EXISTS {STORY_INDEX} ON events (thread_id, seq) WHERE {NOT_TRACE}"
    )


def _v6(db: Database) -> None:
    # Usage buckets and a run upsert on every commit cost two statements and two pages: the
    # thread's usage and its current run's newest events now ride on the head's own move.
    db.execute("ALTER TABLE thread_heads ADD COLUMN kept TEXT")
    db.execute("DROP TRIGGER IF EXISTS thread_usage_delete_with_thread")
    db.execute("DROP TABLE IF EXISTS thread_usage")
    # Emptied to be filled again from the events (RUNS_SINCE), with the usage.
    db.execute("DROP TRIGGER IF EXISTS runs_delete_with_thread")
    db.execute("DELETE FROM runs")
    db.execute(_RUNS_DELETE_WITH_THREAD)


#: Append-only; index + 1 is the schema version the migration produces.
MIGRATIONS: Final[tuple[Callable[[Database], None], ...]] = (_v1, _v2, _v3, _v4, _v5, _v6)
SCHEMA_VERSION: Final = len(MIGRATIONS)
#: A database migrated from a version below this one gets its ``runs`` and usage rebuilt from
#: its events (raise it with a migration that changes what they hold).
RUNS_SINCE: Final = 6


def read_version(db: Database) -> int:
    """The schema version of ``db``: 0 for a database runjournal never touched."""
    if not db["schema_version"].exists():
        return 0
    row = db.execute("SELECT version FROM schema_version").fetchone()
    return 0 if row is None else int(row[0])


def migrate(db: Database, current: int) -> None:
    """Apply the migrations after ``current``; the caller holds the write transaction."""
    if current == 0 and not db["schema_version"].exists():
        db.table("schema_version").create({"version": int}, not_null={"version"})
        db.execute("INSERT INTO schema_version (version) VALUES (0)")
    for migration in MIGRATIONS[current:]:
        migration(db)
    db.execute("UPDATE schema_version SET version = ?", [SCHEMA_VERSION])


EVENT_COLUMNS: Final = (
    "event_id, thread_id, seq, run_id, category, event_type, content, metadata, created_at"
)
#: Every column of a thread's head (what a copy of the thread takes along).
HEAD_COLUMNS: Final = "thread_id, last_seq, first_event_at, last_event_at, run_count, kept"
INSERT_EVENT_SQL: Final = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: Followed by a WHERE clause built from bound parameters only.
SELECT_EVENTS_SQL: Final = f"SELECT {EVENT_COLUMNS} FROM events"
COUNT_SQL: Final = "SELECT COUNT(*) FROM events"
LAST_SEQ_SQL: Final = "SELECT last_seq FROM thread_heads WHERE thread_id = ?"
#: Parameters: thread_id, the thread's new last seq, created_at of the first and of the last
#: new event, number of runs new to the thread. Runs after the events are inserted, inside the
#: write transaction (the head must equal the thread's last seq, see version 3).
BUMP_HEAD_SQL: Final = (
    "INSERT INTO thread_heads (thread_id, last_seq, first_event_at, last_event_at, run_count) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
    "last_seq = excluded.last_seq, last_event_at = excluded.last_event_at, "
    "run_count = run_count + excluded.run_count"
)
#: Parameters: thread_id, the thread's new last seq, created_at of the first and of the last
#: new event, the thread's last seq before the batch. :data:`BUMP_HEAD_SQL` with the count of
#: new runs taken from ``runs`` once the batch's runs are merged in (a run is new exactly when
#: its first seq is above the old head: an older run keeps its first seq), and the thread's
#: ``kept`` as :func:`journal._sqlite_runs.keep` computed it in this transaction
#: (``runjournal_kept``, one call; the stored one stays when it computed none).
MOVE_HEAD_SQL: Final = (
    f"INSERT INTO thread_heads ({HEAD_COLUMNS}) VALUES (?1, ?2, ?3, ?4, "
    "(SELECT COUNT(*) FROM runs WHERE thread_id = ?1 AND first_seq > ?5), runjournal_kept(?1)) "
    "ON CONFLICT (thread_id) DO UPDATE SET "
    "last_seq = excluded.last_seq, last_event_at = excluded.last_event_at, "
    "run_count = run_count + excluded.run_count, kept = coalesce(excluded.kept, kept)"
)
#: A thread's head as an append reads it, once per thread: its last seq and ``kept``.
HEAD_ROW_SQL: Final = "SELECT last_seq, kept FROM thread_heads WHERE thread_id = ?"
#: :data:`MOVE_HEAD_SQL` with the thread's ``kept`` as the sixth parameter (an append that
#: computed it, :func:`journal._sqlite_runs.keep_heads`, passes it; no SQL function call).
MOVE_HEAD_KEPT_SQL: Final = (
    f"INSERT INTO thread_heads ({HEAD_COLUMNS}) VALUES (?1, ?2, ?3, ?4, "
    "(SELECT COUNT(*) FROM runs WHERE thread_id = ?1 AND first_seq > ?5), ?6) "
    "ON CONFLICT (thread_id) DO UPDATE SET "
    "last_seq = excluded.last_seq, last_event_at = excluded.last_event_at, "
    "run_count = run_count + excluded.run_count, kept = excluded.kept"
)
#: The usual move: more events of the run the thread is in (its head exists, no run is new).
#: Parameters: the new last seq, created_at of the last new event, ``kept``, thread_id. A plain
#: UPDATE: only the update trigger checks it (an upsert runs the insert trigger as well).
CONTINUE_HEAD_SQL: Final = (
    "UPDATE thread_heads SET last_seq = ?, last_event_at = ?, kept = ? WHERE thread_id = ?"
)
GRANT_DELETE_SQL: Final = "INSERT OR IGNORE INTO delete_grants (thread_id) VALUES (?)"
DELETE_EVENTS_SQL: Final = "DELETE FROM events WHERE thread_id = ?"
DELETE_HEAD_SQL: Final = "DELETE FROM thread_heads WHERE thread_id = ?"
REVOKE_DELETE_SQL: Final = "DELETE FROM delete_grants WHERE thread_id = ?"
#: event_count is last_seq: seqs are gap-free and only whole threads are ever deleted.
LIST_THREADS_SQL: Final = (
    "SELECT thread_id, last_seq, first_event_at, last_event_at, run_count FROM thread_heads "
    "ORDER BY last_event_at DESC, thread_id DESC LIMIT ? OFFSET ?"
)
