"""The store contract run against ``SqliteEventStore``, plus its SQLite-only guarantees."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from journal import (
    RunEvent,
    RunEventStore,
    SchemaVersionError,
    SqliteEventStore,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
    open_store,
)
from journal.testing import ProcessContract, StoreContract, ev, many, seqs


class TestSqliteEventStore(StoreContract, ProcessContract):
    """``SqliteEventStore`` meets the contract, writers in separate processes included."""

    def store_url(self, store: RunEventStore) -> str:
        """The store's file as a URL for writer processes."""
        assert isinstance(store, SqliteEventStore)
        return f"sqlite:///{store.path}"

    def create_store(self, **options: Any) -> RunEventStore:
        """A fresh SQLite file in the test's temporary directory."""
        index = len(list(self.tmp_path.glob("store-*.db")))
        return SqliteEventStore(self.tmp_path / f"store-{index}.db", **options)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a fresh SQLite store file."""
    return tmp_path / "journal.db"


def test_events_survive_reopening(db_path: Path) -> None:
    """Events and seq counters persist across close and reopen of the file."""
    with SqliteEventStore(db_path) as store:
        store.append(many(3))
    with SqliteEventStore(db_path) as store:
        [nxt] = store.append([ev(content="after reopen")])
        assert nxt.seq == 4
        assert store.read("t1")[0].content == {"i": 0}


def test_two_stores_on_one_file_share_seqs(db_path: Path) -> None:
    """Two store objects on one file interleave appends without duplicate seqs."""
    with SqliteEventStore(db_path) as a, SqliteEventStore(db_path) as b:
        a.append(many(2))
        b.append(many(2))
        a.append(many(1))
        assert seqs(b.read("t1")) == [1, 2, 3, 4, 5]


def test_raw_update_of_an_event_is_rejected(db_path: Path) -> None:
    """A raw UPDATE on the events table through sqlite3 fails and changes nothing."""
    with SqliteEventStore(db_path) as store:
        store.append([ev(content="original")])
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE events SET content = ? WHERE seq = 1", ('"changed"',))
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE events SET seq = 7")
    finally:
        conn.close()
    with SqliteEventStore(db_path) as store:
        assert store.read("t1")[0].content == "original"


def test_raw_delete_of_an_event_is_rejected(db_path: Path) -> None:
    """A raw DELETE on the events table through sqlite3 fails; delete_thread still works."""
    with SqliteEventStore(db_path) as store:
        store.append(many(2))
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM events WHERE seq = 1")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM events")
        assert conn.execute("SELECT COUNT(*) FROM delete_grants").fetchone()[0] == 0
    finally:
        conn.close()
    with SqliteEventStore(db_path) as store:
        assert store.count("t1") == 2
        assert store.delete_thread("t1") == 2
        assert store.count("t1") == 0


def test_database_rejects_duplicate_seq_and_event_id(db_path: Path) -> None:
    """UNIQUE(thread_id, seq) and UNIQUE(event_id) hold for raw inserts too."""
    with SqliteEventStore(db_path) as store:
        [stored] = store.append([ev(event_id="e1")])
    conn = sqlite3.connect(db_path)
    insert = (
        "INSERT INTO events (event_id, thread_id, seq, run_id, category, event_type, content,"
        " metadata, created_at) VALUES (?, ?, ?, 'r', 'trace', 'llm.start', 'null', '{}', 0)"
    )
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(insert, ("other", "t1", stored.seq))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(insert, ("e1", "t1", 99))
    finally:
        conn.close()


def test_store_uses_wal_and_the_configured_synchronous(db_path: Path) -> None:
    """The file is in WAL mode; connections use the requested synchronous level."""
    store = SqliteEventStore(db_path, synchronous="full")
    try:
        assert store.synchronous == "FULL"
        with store._pool.connection() as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        store.close()
    with SqliteEventStore(db_path) as store, store._pool.connection() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


@pytest.mark.parametrize(
    "kwargs",
    [{"synchronous": "OFF"}, {"synchronous": "sometimes"}, {"busy_timeout": 0}],
)
def test_bad_options_are_value_errors(db_path: Path, kwargs: dict[str, Any]) -> None:
    """An unsupported synchronous level or a non-positive timeout raises ValueError."""
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SqliteEventStore(db_path, **kwargs)


@pytest.mark.parametrize("path", ["", ":memory:", "file:x.db?mode=ro"])
def test_non_file_paths_are_rejected(path: str) -> None:
    """Empty, :memory: and URI paths raise ValueError pointing at memory://."""
    with pytest.raises(ValueError, match="memory://"):
        SqliteEventStore(path)


def test_missing_directory_is_store_unavailable(tmp_path: Path) -> None:
    """A path in a directory that does not exist raises StoreUnavailableError saying so."""
    with pytest.raises(StoreUnavailableError, match="does not exist"):
        SqliteEventStore(tmp_path / "no" / "such" / "dir.db")


def test_directory_as_path_is_store_unavailable(tmp_path: Path) -> None:
    """A path naming a directory raises StoreUnavailableError."""
    with pytest.raises(StoreUnavailableError, match="open the store"):
        SqliteEventStore(tmp_path)


def test_text_file_is_store_corrupt(tmp_path: Path) -> None:
    """A text file named like a database raises StoreCorruptError with a clear message."""
    path = tmp_path / "x.db"
    path.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreCorruptError, match="not a runjournal database"):
        SqliteEventStore(path)


def test_foreign_sqlite_database_with_events_table_is_store_corrupt(db_path: Path) -> None:
    """A SQLite file with an unrelated events table is refused, not migrated over."""
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE events (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptError, match="not a runjournal database"):
        SqliteEventStore(db_path)


def test_newer_schema_version_is_refused(db_path: Path) -> None:
    """A file whose schema_version is ahead of this code raises SchemaVersionError."""
    SqliteEventStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE schema_version SET version = version + 1")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade runjournal"):
        SqliteEventStore(db_path)


def test_schema_version_is_recorded(db_path: Path) -> None:
    """A new file records the number of migrations as its schema version."""
    from journal._sqlite_schema import MIGRATIONS

    SqliteEventStore(db_path).close()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
    finally:
        conn.close()


def test_sqlite_url_opens_a_sqlite_store(tmp_path: Path) -> None:
    """open_store('sqlite:///<absolute path>') opens a SqliteEventStore on that file."""
    path = tmp_path / "via-url.db"
    store = open_store(f"sqlite:///{path}", synchronous="FULL")
    try:
        assert isinstance(store, SqliteEventStore)
        assert store.path == path
        assert store.synchronous == "FULL"
    finally:
        store.close()
    assert path.exists()


def test_sqlite_url_with_a_query_string_is_a_value_error(tmp_path: Path) -> None:
    """A sqlite URL with '?options' is refused instead of naming a file 'x.db?options'."""
    with pytest.raises(ValueError, match="query string"):
        open_store(f"sqlite:///{tmp_path}/x.db?synchronous=FULL")
    assert list(tmp_path.iterdir()) == []


def _plan(db_path: Path, query: str, params: list[Any]) -> str:
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("EXPLAIN QUERY PLAN " + query, params).fetchall()
    finally:
        conn.close()
    return " | ".join(str(row[-1]) for row in rows)


@pytest.mark.parametrize(
    ("read_kwargs", "index"),
    [
        ({"before_seq": 50, "limit": 10}, "events_thread_seq"),
        ({"after_seq": 50, "limit": 10}, "events_thread_seq"),
        ({"category": "message", "before_seq": 50, "limit": 10}, "events_thread_story"),
        ({"event_type": ["message.ai", "middleware:summarize"]}, "events_thread_story"),
        ({"event_type": ["message.ai", "llm.start"], "limit": 10}, "events_thread_seq"),
        ({"run_id": "r1", "limit": 10}, "events_thread_seq"),
    ],
)
def test_page_reads_search_an_index(db_path: Path, read_kwargs: dict[str, Any], index: str) -> None:
    """The read query of a page searches a thread index instead of scanning the table: the
    partial index of non-trace events when the filters exclude traces."""
    from journal.sqlite import _where
    from journal.store import ReadQuery

    with SqliteEventStore(db_path) as store:
        store.append(many(100))
    where, params = _where(ReadQuery.of("t1", **read_kwargs))
    plan = _plan(db_path, "SELECT * FROM events" + where + " ORDER BY seq DESC LIMIT 10", params)
    assert "SEARCH events USING INDEX " + index in plan
    assert "SCAN events" not in plan


def _steps(db_path: Path, query: str, params: list[Any]) -> int:
    """How many SQLite VM instructions (in thousands) running ``query`` takes."""
    conn = sqlite3.connect(db_path)
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    conn.set_progress_handler(tick, 1000)
    try:
        conn.execute(query, params).fetchall()
    finally:
        conn.close()
    return counted[0]


@pytest.mark.parametrize(
    "cursors", [{}, {"after_seq": 0}, {"before_seq": 10**9}, {"after_seq": 0, "before_seq": 10**9}]
)
def test_a_read_by_run_walks_only_the_runs_events(db_path: Path, cursors: dict[str, Any]) -> None:
    """Reading the newest run of a long thread (with or without cursors) costs about what
    reading the same run of a short thread does: the walk starts at the run's first seq."""
    from journal.sqlite import _where
    from journal.store import ReadQuery

    with SqliteEventStore(db_path) as store:
        store.append([ev("short", run_id="old") for _ in range(20)])
        store.append([ev("short", run_id="new") for _ in range(30)])
        for _ in range(6):
            store.append([ev("long", run_id="old") for _ in range(1000)])
        store.append([ev("long", run_id="new") for _ in range(30)])
        assert len(store.read("long", run_id="new", **cursors)) == 30
    costs = {}
    for thread in ("short", "long"):
        query = ReadQuery.of(thread, run_id="new", limit=50, **cursors)
        where, params = _where(query)
        order = " ORDER BY seq DESC" if query.newest_first else " ORDER BY seq"
        costs[thread] = _steps(db_path, f"SELECT * FROM events{where}{order} LIMIT 50", params)
    assert costs["long"] <= 2 * costs["short"] + 5, costs


def _hold_write_lock(path: Path, seconds: float) -> threading.Thread:
    """Start a thread that holds the file's write lock for ``seconds``; returns once held."""
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    return thread


def test_append_waits_out_a_held_write_lock(db_path: Path) -> None:
    """An append retries past busy_timeout while another connection holds the write lock."""
    with SqliteEventStore(db_path, busy_timeout=0.02, retry_deadline=10) as store:
        holder = _hold_write_lock(db_path, 0.4)
        started = time.monotonic()
        [stored] = store.append([ev()])
        waited = time.monotonic() - started
        holder.join()
        assert stored.seq == 1
        assert waited >= 0.3  # it really waited for the lock, then wrote
        assert seqs(store.read("t1")) == [1]


def test_lock_held_past_the_retry_deadline_is_store_unavailable(db_path: Path) -> None:
    """When the write lock stays taken past retry_deadline, append raises a clear store error."""
    with SqliteEventStore(db_path, busy_timeout=0.02, retry_deadline=0.2) as store:
        holder = _hold_write_lock(db_path, 1.0)
        try:
            with pytest.raises(StoreUnavailableError, match="locked"):
                store.append([ev()])
        finally:
            holder.join()
        assert store.last_seq("t1") == 0
        assert seqs(store.append([ev()])) == [1]


def test_reads_proceed_while_a_writer_holds_the_lock(db_path: Path) -> None:
    """WAL lets reads run while another connection holds the write lock."""
    with SqliteEventStore(db_path, busy_timeout=0.02, retry_deadline=0.2) as store:
        store.append(many(2))
        holder = _hold_write_lock(db_path, 0.5)
        try:
            assert seqs(store.read("t1")) == [1, 2]
            assert store.list_threads()[0].event_count == 2
        finally:
            holder.join()


def test_connections_are_reused(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sequential operations reuse pooled connections instead of opening new ones."""
    with SqliteEventStore(db_path) as store:
        opened: list[int] = []
        original = store._pool.open

        def counting_open() -> sqlite3.Connection:
            opened.append(1)
            return original()

        monkeypatch.setattr(store._pool, "open", counting_open)
        for _ in range(20):
            store.append(many(1))
            store.read("t1", limit=1)
        assert len(opened) <= 1


def test_records_behave_like_validated_events(db_path: Path) -> None:
    """Records built without re-validation equal, dump, copy and print like validated ones."""
    with SqliteEventStore(db_path) as store:
        [appended] = store.append([ev(content={"a": [1]}, metadata={"m": 1})])
        [read] = store.read("t1")
    for record in (appended, read):
        validated = RunEvent.model_validate(record.model_dump())
        assert record == validated
        assert repr(record) == repr(validated)
        assert record.model_dump_json() == validated.model_dump_json()
        assert record.model_fields_set == validated.model_fields_set
        copy = record.model_copy(deep=True)
        copy.content["a"].append(2)
        assert record.content == {"a": [1]}


def test_batch_failing_inside_the_database_writes_nothing(db_path: Path) -> None:
    """A batch whose insert fails in SQLite mid-way raises StoreError and stores nothing."""
    with SqliteEventStore(db_path) as store:
        store.append(many(2))
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.event_id = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
    )
    conn.commit()
    conn.close()
    with SqliteEventStore(db_path) as store:
        batch = [*many(3), ev(event_id="boom"), *many(2, "other")]
        with pytest.raises(StoreError, match="injected failure"):
            store.append(batch)
        assert store.last_seq("t1") == 2
        assert store.last_seq("other") == 0
        assert seqs(store.append(many(1))) == [3]


def test_full_synchronous_store_appends_and_reads(db_path: Path) -> None:
    """A store opened with synchronous=FULL meets the basic append/read behaviour."""
    with SqliteEventStore(db_path, synchronous="FULL") as store:
        assert seqs(store.append(many(3))) == [1, 2, 3]
        assert seqs(store.read("t1", before_seq=3, limit=1)) == [2]


def test_version_1_file_is_migrated_with_run_counts(db_path: Path) -> None:
    """A file at schema version 1 gains thread run counts (backfilled) when opened."""
    from journal._sqlite_schema import SCHEMA_VERSION

    with SqliteEventStore(db_path) as store:
        store.append([ev("a", run_id="r1"), ev("a", run_id="r2"), ev("a", run_id="r1")])
        store.append([ev("b", run_id="r9")])
    conn = sqlite3.connect(db_path)  # turn the file back into what version 1 wrote
    conn.execute("DROP TABLE runs")
    conn.execute("ALTER TABLE thread_heads DROP COLUMN kept")
    conn.execute("ALTER TABLE thread_heads DROP COLUMN run_count")
    conn.execute("UPDATE schema_version SET version = 1")
    conn.commit()
    conn.close()
    with SqliteEventStore(db_path) as store:
        counts = {t.thread_id: t.run_count for t in store.list_threads()}
        assert counts == {"a": 2, "b": 1}
        store.append([ev("a", run_id="r3"), ev("a", run_id="r1")])
        assert {t.thread_id: t.run_count for t in store.list_threads()}["a"] == 3
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()


def _indexes(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    finally:
        conn.close()
    return {name for (name,) in rows if not name.startswith("sqlite_autoindex")}


def test_version_4_file_trades_its_read_indexes_for_the_story_index(db_path: Path) -> None:
    """A file at schema version 4 loses the category and run indexes, gains the partial index
    of non-trace events, and reads, counts and appends the same as before."""
    from journal._sqlite_schema import SCHEMA_VERSION

    kinds = [("trace", "llm.end"), ("message", "message.ai"), ("lifecycle", "run.start")]
    with SqliteEventStore(db_path) as store:
        for batch in range(3):
            store.append(
                [ev(run_id=f"r{(batch + k) % 2}", category=kinds[k % 3][0],
                    event_type=kinds[k % 3][1]) for k in range(5)]
            )  # fmt: skip
        queries: list[dict[str, Any]] = [
            {"run_id": "r1"},
            {"category": "message", "before_seq": 12, "limit": 2},
            {"event_type": ["message.ai", "run.start"], "after_seq": 3},
        ]
        before = [store.read("t1", **q) for q in queries]
    conn = sqlite3.connect(db_path, isolation_level=None)  # turn it back into version 4
    conn.execute("DROP INDEX events_thread_story")
    conn.execute("CREATE INDEX events_thread_category_seq ON events (thread_id, category, seq)")
    conn.execute("CREATE INDEX events_thread_run_seq ON events (thread_id, run_id, seq)")
    _undo_version_6(conn)
    conn.execute("UPDATE schema_version SET version = 4")
    conn.close()
    with SqliteEventStore(db_path) as store:
        assert [store.read("t1", **q) for q in queries] == before
        assert store.count("t1", run_id="r0") == len(store.read("t1", run_id="r0")) == 8
        assert seqs(store.append([ev(run_id="r1", category="message",
                                     event_type="message.ai")])) == [16]  # fmt: skip
        assert seqs(store.read("t1", run_id="r1", category="message"))[-1] == 16
    assert _indexes(db_path) == {
        "events_event_id", "events_thread_seq", "events_thread_story", "thread_heads_recent",
        "runs_thread_first_seq", "runs_run_id",
    }  # fmt: skip
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()


def _undo_version_6(conn: sqlite3.Connection) -> None:
    """Give the heads back their version 5 columns and the usage its own table."""
    from journal._sqlite_schema import _RUNS_AND_USAGE

    conn.execute("ALTER TABLE thread_heads DROP COLUMN kept")
    for statement in _RUNS_AND_USAGE:
        if " thread_usage " in statement:
            conn.execute(statement)


_RAW_COLUMNS = (
    "event_id, thread_id, seq, run_id, category, event_type, content, metadata, created_at"
)


def _raw(conn: sqlite3.Connection, verb: str, *values: object) -> None:
    """Run ``<verb> INTO events`` with ``(event_id, thread_id, seq)`` and fixed other columns."""
    conn.execute(
        f"{verb} INTO events ({_RAW_COLUMNS}) "
        "VALUES (?, ?, ?, 'r', 'trace', 'llm.start', '\"forged\"', '{}', 0)",
        values,
    )


def test_replace_of_stored_events_is_refused_by_the_database(db_path: Path) -> None:
    """INSERT OR REPLACE / REPLACE INTO never replace or renumber a stored event."""
    with SqliteEventStore(db_path) as store:
        stored = store.append(many(3))
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        attempts = [
            ("INSERT OR REPLACE", stored[0].event_id, "t1", 4),  # same id, a new seq
            ("REPLACE", "fresh-id", "t1", 2),  # a new id on a stored seq
            ("REPLACE", stored[2].event_id, "t1", 3),  # the very same key
            ("INSERT OR REPLACE", "fresh-id", "t1", 9),  # a gap
        ]
        for verb, *values in attempts:
            with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
                _raw(conn, verb, *values)
        with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
            conn.execute(
                f"REPLACE INTO events (pk, {_RAW_COLUMNS}) "
                "VALUES (1, 'other', 't1', 4, 'r', 'trace', 'llm.start', 'null', '{}', 0)"
            )
    finally:
        conn.close()
    with SqliteEventStore(db_path) as store:
        assert store.read("t1") == stored
        assert seqs(store.append(many(1))) == [4]


def test_thread_heads_cannot_be_moved_away_from_the_events(db_path: Path) -> None:
    """UPDATE or DELETE of thread_heads that would break seqs is refused by the database."""
    with SqliteEventStore(db_path) as store:
        store.append(many(3))
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        for statement in (
            "UPDATE thread_heads SET last_seq = last_seq + 5",
            "UPDATE thread_heads SET last_seq = 1",
            "UPDATE thread_heads SET thread_id = 'elsewhere'",
            "DELETE FROM thread_heads",
            "INSERT OR REPLACE INTO thread_heads (thread_id, last_seq, first_event_at, "
            "last_event_at, run_count) VALUES ('t1', 10, 0, 0, 1)",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
                conn.execute(statement)
    finally:
        conn.close()
    with SqliteEventStore(db_path) as store:
        assert seqs(store.append(many(2))) == [4, 5]
        assert store.delete_thread("t1") == 5
        assert seqs(store.append(many(1))) == [1]


def test_version_2_file_gains_the_replace_and_head_guards(db_path: Path) -> None:
    """A file at schema version 2 is upgraded: its events and heads become guarded too."""
    from journal._sqlite_schema import SCHEMA_VERSION

    with SqliteEventStore(db_path) as store:
        stored = store.append(many(2))
    conn = sqlite3.connect(db_path, isolation_level=None)  # turn it back into version 2
    conn.execute("DROP TABLE runs")
    conn.execute("ALTER TABLE thread_heads DROP COLUMN kept")
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name NOT IN "
        "('events_append_only_update', 'events_append_only_delete')"
    ).fetchall():
        conn.execute(f'DROP TRIGGER "{name}"')
    conn.execute("UPDATE schema_version SET version = 2")
    _raw(conn, "REPLACE", "fresh-id", "t1", 2)  # version 2 let this through
    conn.close()
    with SqliteEventStore(db_path) as store:
        assert [e.event_id for e in store.read("t1")] == [stored[0].event_id, "fresh-id"]
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
            _raw(conn, "REPLACE", "other-id", "t1", 2)
        with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
            conn.execute("UPDATE thread_heads SET last_seq = 7")
    finally:
        conn.close()
