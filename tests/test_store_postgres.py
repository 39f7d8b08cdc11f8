"""The store contract run against ``PostgresEventStore``, plus its PostgreSQL-only behaviour."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from journal import (
    RunEventStore,
    SchemaVersionError,
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
    open_store,
)
from journal._postgres_driver import drive as _drive
from journal._postgres_ops import BEGIN, Op, append_op
from journal._postgres_schema import (
    CREATE_VERSION_TABLE,
    DELETE_THREAD,
    INSERT_VERSION,
    MIGRATIONS,
    SCHEMA_VERSION,
    SELECT_VERSION,
)
from journal.postgres import PostgresEventStore
from journal.store import RunEventStore as _Store
from journal.testing import ProcessContract, StoreContract, ev, many, seqs
from tests.logs import capture_logs
from tests.postgres_server import (
    PostgresServer,
    _free_port,
    fresh_database_url,
    wait_for_lock_waiters,
)

pytestmark = pytest.mark.postgres


class TestPostgresEventStore(StoreContract, ProcessContract):
    """``PostgresEventStore`` meets the contract (one fresh database per test), processes too."""

    def store_url(self, store: RunEventStore) -> str:
        """The test's database URL for writer processes."""
        return self.url

    url: str

    @pytest.fixture(autouse=True)
    def _database(self, postgres_url: str) -> None:
        self.url = fresh_database_url(postgres_url)

    def create_store(self, **options: Any) -> RunEventStore:
        """A store on a fresh, empty database of the session cluster."""
        return PostgresEventStore(self.url, **options)


@pytest.fixture
def pg(postgres_db_url: str) -> Iterator[PostgresEventStore]:
    """A store on a fresh database, closed afterwards."""
    store = PostgresEventStore(postgres_db_url)
    try:
        yield store
    finally:
        store.close()


def test_postgresql_url_opens_a_postgres_store(postgres_db_url: str) -> None:
    """open_store("postgresql://...") returns a working PostgresEventStore."""
    with open_store(postgres_db_url) as store:
        assert isinstance(store, PostgresEventStore)
        assert seqs(store.append(many(2))) == [1, 2]


def test_database_rejects_update_and_delete_of_events(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """The append-only trigger rejects UPDATE, DELETE and TRUNCATE outside delete_thread."""
    pg.append(many(2))
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        for statement in (
            "UPDATE runjournal_events SET run_id = 'x'",
            "DELETE FROM runjournal_events",
            "TRUNCATE runjournal_events",
        ):
            with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
                conn.execute(statement)
    assert [e.content for e in pg.read("t1")] == [{"i": 0}, {"i": 1}]


def test_values_jsonb_would_change_round_trip_exactly(pg: PostgresEventStore) -> None:
    """NUL characters, huge and tiny floats and -0.0 come back exactly (json, not jsonb)."""
    content = {"nul": "a\u0000b", "big": 1e300, "tiny": 5e-324, "neg0": -0.0, "int": 2**70}
    [stored] = pg.append([ev(content=content, metadata={"k\u0000": "\u0000"})])
    [read] = pg.read("t1")
    assert read.content == content
    assert isinstance(read.content["big"], float)
    assert str(read.content["neg0"]) == "-0.0"
    assert read.metadata == {"k\u0000": "\u0000"}
    assert read == stored


def test_down_server_raises_unavailable_without_hanging() -> None:
    """Opening a store on a port where nothing listens raises StoreUnavailableError."""
    url = f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres"
    with pytest.raises(StoreUnavailableError, match="cannot connect"):
        PostgresEventStore(url, connect_timeout=1)


def test_statement_timeout_gives_a_clear_error(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """An append blocked longer than statement_timeout fails with StoreUnavailableError."""
    pg.append(many(1))
    with (
        psycopg.connect(postgres_db_url) as blocker,
        PostgresEventStore(postgres_db_url, statement_timeout=0.2) as impatient,
    ):
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't1' FOR UPDATE")
        with pytest.raises(StoreUnavailableError, match="timed out"):
            impatient.append(many(1))
        blocker.rollback()
    assert pg.last_seq("t1") == 1


def test_bad_options_and_urls_are_caller_errors(postgres_db_url: str) -> None:
    """Bad timeouts, pool sizes and non-PostgreSQL URLs raise ValueError naming the fix."""
    with pytest.raises(ValueError, match="connect_timeout"):
        PostgresEventStore(postgres_db_url, connect_timeout=0)
    with pytest.raises(ValueError, match="statement_timeout"):
        PostgresEventStore(postgres_db_url, statement_timeout=-1)
    with pytest.raises(ValueError, match="min_size"):
        PostgresEventStore(postgres_db_url, min_size=3, max_size=2)
    with pytest.raises(ValueError, match="postgresql://"):
        PostgresEventStore("sqlite:///x.db")
    with pytest.raises(ValueError, match="malformed PostgreSQL URL") as info:
        PostgresEventStore("postgresql://u:secret@localhost:notaport/db")
    assert "secret" not in str(info.value)


def test_options_in_the_url_are_kept(postgres_db_url: str) -> None:
    """A URL's options (here a search_path) reach the server along with the store's own."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA journal_schema")
    url = f"{postgres_db_url}?options=-c%20search_path%3Djournal_schema"
    with PostgresEventStore(url, statement_timeout=7) as store:
        store.append(many(1))
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT table_schema FROM information_schema.tables "
            "WHERE table_name = 'runjournal_events'"
        ).fetchall() == [("journal_schema",)]
    with pytest.raises(ValueError, match="malformed PostgreSQL URL"):
        PostgresEventStore(f"{postgres_db_url}?no_such_option=1")


def test_unknown_database_is_unavailable(postgres_url: str) -> None:
    """A URL naming a database that does not exist raises StoreUnavailableError."""
    url = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StoreUnavailableError, match="no_such_database"):
        PostgresEventStore(url, connect_timeout=2)


def test_newer_schema_is_refused(pg: PostgresEventStore, postgres_db_url: str) -> None:
    """A database migrated by a newer runjournal raises SchemaVersionError on open."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO runjournal_schema_version (version) VALUES (999)")
    with pytest.raises(SchemaVersionError, match="999"):
        PostgresEventStore(postgres_db_url)


def test_concurrent_first_opens_migrate_once(postgres_db_url: str) -> None:
    """Eight stores opened at once on an empty database all work; the schema is made once."""
    with ThreadPoolExecutor(8) as pool:
        stores = list(pool.map(lambda _: PostgresEventStore(postgres_db_url), range(8)))
    try:
        with psycopg.connect(postgres_db_url) as conn:
            versions = conn.execute(
                "SELECT version FROM runjournal_schema_version ORDER BY version"
            ).fetchall()
        assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
        for store in stores:
            store.append(many(1))
        assert stores[0].last_seq("t1") == 8
    finally:
        for store in stores:
            store.close()


def test_racing_duplicate_event_id_returns_the_winner(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """A writer racing another for the same new event_id gets the winner's record, no gap."""
    event = ev(event_id="same")
    prepared = pg.prepare([event])
    results: list[Any] = []
    with psycopg.connect(postgres_db_url) as winner:  # the same operation, left uncommitted
        won = _drive(winner, append_op(prepared, checked=False))
        with capture_logs() as logs:
            loser = threading.Thread(target=lambda: results.append(pg.append([event])))
            loser.start()
            wait_for_lock_waiters(postgres_db_url)  # the loser blocks on the winner's locks
            winner.commit()
            loser.join(timeout=30)
    assert results == [won]
    assert any(entry["event"] == "postgres_transaction_retry" for entry in logs)
    assert seqs(pg.append(many(1))) == [2]


def test_async_methods_work_from_several_event_loops(pg: PostgresEventStore) -> None:
    """aappend/aread work from successive event loops (one async pool per loop)."""
    for _ in range(2):
        stored = asyncio.run(pg.aappend(many(2)))
        assert asyncio.run(pg.aread("t1", after_seq=stored[0].seq - 1)) == stored
    assert pg.last_seq("t1") == 4


def test_driver_errors_are_wrapped(pg: PostgresEventStore, postgres_db_url: str) -> None:
    """A broken schema surfaces as a StoreError, never a psycopg exception."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE runjournal_events RENAME TO broken")
    with pytest.raises(StoreError) as info:
        pg.read("t1")
    assert not isinstance(info.value, psycopg.Error)
    assert isinstance(pg, _Store)


def test_lost_connections_are_replaced_transparently(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """After the server kills every pooled connection, the next append works, with no retry."""
    pg.append(many(1))
    with psycopg.connect(postgres_db_url, autocommit=True) as admin:
        # pg_terminate_backend(pid, timeout) waits until each backend is gone, so the pooled
        # connections have their end of file to read before the next append (no race)
        admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE application_name = 'runjournal' AND pid <> pg_backend_pid()"
        )
    with capture_logs() as logs:
        assert seqs(pg.append(many(1))) == [2]
    assert pg.last_seq("t1") == 2
    assert not any(entry["event"] == "postgres_transaction_retry" for entry in logs)


def test_batch_failing_on_its_second_thread_leaves_nothing(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """A two-thread batch whose second thread times out stores nothing of the first thread."""
    pg.append(many(1, thread_id="t2"))
    with (
        psycopg.connect(postgres_db_url) as blocker,
        PostgresEventStore(postgres_db_url, statement_timeout=0.2) as impatient,
    ):
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't2' FOR UPDATE")
        with pytest.raises(StoreUnavailableError):
            impatient.append([*many(3, thread_id="t1"), *many(3, thread_id="t2")])
        blocker.rollback()
    assert pg.last_seq("t1") == 0
    assert pg.last_seq("t2") == 1
    assert seqs(pg.append(many(1, thread_id="t1"))) == [1]


def test_batch_failing_on_its_second_thread_leaves_the_prepared_batch_unnumbered(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """A rolled-back two-thread append leaves no event of its prepared batch turned into a
    record with the seq its first thread was given: a retry and the spool see the batch whole."""
    pg.append(many(1, thread_id="t2"))
    given = [*many(2, thread_id="t1"), *many(2, thread_id="t2")]
    prepared = pg.prepare([event.model_dump() for event in given])  # prepare builds each event
    with (
        psycopg.connect(postgres_db_url) as blocker,
        psycopg.connect(postgres_db_url, autocommit=True) as writer,
    ):
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't2' FOR UPDATE")
        writer.execute("SET statement_timeout = 200")
        with pytest.raises(psycopg.errors.QueryCanceled):
            _drive(writer, append_op(prepared, checked=False))
        blocker.rollback()
    assert [type(event).__name__ for event in prepared] == ["NewEvent"] * 4
    assert not any("seq" in event.__dict__ for event in prepared)
    assert pg.last_seq("t1") == 0
    assert seqs(pg.append(given)) == [1, 2, 2, 3]


async def test_cancelled_aappend_stores_nothing_and_leaves_no_gap(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """Cancelling an aappend blocked mid-batch rolls it back whole; the store keeps working."""
    await pg.aappend(many(1, thread_id="t2"))
    with psycopg.connect(postgres_db_url) as blocker:
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't2' FOR UPDATE")
        task = asyncio.create_task(pg.aappend([*many(3, thread_id="t1"), *many(3, thread_id="t2")]))
        await asyncio.to_thread(wait_for_lock_waiters, postgres_db_url)  # t1 written, t2 waits
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        blocker.rollback()
    assert await pg.alast_seq("t1") == 0
    assert seqs(await pg.aappend(many(2, thread_id="t2"))) == [2, 3]


async def test_close_lets_a_running_aappend_finish(postgres_db_url: str) -> None:
    """close() during an aappend waiting on a lock lets it finish instead of stranding it."""
    store = PostgresEventStore(postgres_db_url)
    await store.aappend(many(1))
    with psycopg.connect(postgres_db_url) as blocker:
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't1' FOR UPDATE")
        task = asyncio.create_task(store.aappend(many(1)))
        await asyncio.to_thread(wait_for_lock_waiters, postgres_db_url)
        closing = asyncio.create_task(asyncio.to_thread(store.close))
        await asyncio.sleep(0.3)
        blocker.rollback()
    assert seqs(await asyncio.wait_for(task, 10)) == [2]
    await asyncio.wait_for(closing, 10)
    with pytest.raises(StoreClosedError):
        await store.aappend(many(1))


async def test_close_cancels_an_aappend_stuck_past_the_grace_period(
    postgres_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aappend still blocked when close()'s grace ends raises StoreClosedError, no hang."""
    monkeypatch.setattr("journal.postgres._CLOSE_GRACE", 0.3)
    store = PostgresEventStore(postgres_db_url)
    await store.aappend(many(1))
    with psycopg.connect(postgres_db_url) as blocker:
        blocker.execute("SELECT 1 FROM runjournal_thread_heads WHERE thread_id = 't1' FOR UPDATE")
        task = asyncio.create_task(store.aappend(many(1)))
        await asyncio.to_thread(wait_for_lock_waiters, postgres_db_url)
        await asyncio.wait_for(asyncio.to_thread(store.close), 10)
        with pytest.raises(StoreClosedError):
            await asyncio.wait_for(task, 10)
        blocker.rollback()
    with PostgresEventStore(postgres_db_url) as reopened:
        assert reopened.last_seq("t1") == 1


def test_append_committing_during_delete_of_a_headless_thread_is_kept_whole(
    pg: PostgresEventStore, postgres_db_url: str
) -> None:
    """A first append committing while delete_thread runs keeps its events and its head."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn, conn.transaction():
        assert conn.execute(DELETE_THREAD, ("t1",)).fetchone() == (0,)  # no head yet
        pg.append(many(3))  # commits before the delete's transaction does
    assert seqs(pg.read("t1")) == [1, 2, 3]
    assert pg.last_seq("t1") == 3
    assert seqs(pg.append(many(1))) == [4]


def _role_url(admin_url: str, database_url: str) -> str:
    """A new ordinary role (LOGIN, every table right, no ownership); its URL on the database."""
    role = f"rj_app_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')  # a generated name: no injection
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON runjournal_events, "
            f'runjournal_thread_heads, runjournal_runs, runjournal_thread_usage TO "{role}"'
        )
        # opening a store runs the (no-op) migrations, which need CREATE on the schema
        conn.execute(f'GRANT CREATE ON SCHEMA public TO "{role}"')
        conn.execute(f'GRANT SELECT, INSERT ON runjournal_schema_version TO "{role}"')
    return database_url.replace("postgres@", f"{role}@", 1)


def test_an_ordinary_role_with_delete_rights_cannot_rewrite_history(
    pg: PostgresEventStore, postgres_url: str, postgres_db_url: str
) -> None:
    """Even with DELETE/UPDATE rights and allow_delete set, single events and heads hold."""
    stored = pg.append(many(3))
    url = _role_url(postgres_url, postgres_db_url)
    attempts = [
        "DELETE FROM runjournal_events WHERE seq = 2",
        "DELETE FROM runjournal_events",
        "TRUNCATE runjournal_events",
        "UPDATE runjournal_events SET content = '\"forged\"'",
        "UPDATE runjournal_thread_heads SET last_seq = last_seq + 5",
        "UPDATE runjournal_thread_heads SET thread_id = 'elsewhere'",
        "DELETE FROM runjournal_thread_heads",
        "TRUNCATE runjournal_thread_heads",
        "DELETE FROM runjournal_runs",
        "TRUNCATE runjournal_thread_usage",
    ]
    with psycopg.connect(url) as conn:
        for statement in attempts:
            with (
                pytest.raises(psycopg.errors.RestrictViolation, match="runjournal"),
                conn.transaction(),
            ):
                conn.execute("SET LOCAL runjournal.allow_delete = 'on'")
                conn.execute(statement)
    assert pg.read("t1") == stored
    assert len(pg.list_runs("t1")) == 1 and pg.read_usage("t1").run_count == 1
    with PostgresEventStore(url) as app:  # whole threads: through the store, as any role
        assert seqs(app.append(many(1))) == [4]
        assert app.delete_thread("t1") == 4
        assert app.last_seq("t1") == 0 and app.list_runs("t1") == []
        assert seqs(app.append(many(1))) == [1]


def test_version_1_schema_is_upgraded_to_the_guarded_delete(postgres_db_url: str) -> None:
    """A database at schema version 1 gains the guards; its events stay and delete works."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        _drive(conn, _migrate_to(1))
    with psycopg.connect(postgres_db_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL runjournal.allow_delete = 'on'")  # what version 1 allowed
        conn.execute("DELETE FROM runjournal_events")
    with PostgresEventStore(postgres_db_url) as store:
        store.append(many(2))
        with psycopg.connect(postgres_db_url, autocommit=True) as conn:
            [(version,)] = conn.execute(SELECT_VERSION).fetchall()
            assert version == SCHEMA_VERSION
            with pytest.raises(psycopg.errors.RestrictViolation), conn.transaction():
                conn.execute("UPDATE runjournal_thread_heads SET last_seq = 9")
        assert store.delete_thread("t1") == 2


def _migrate_to(version: int) -> Op[int]:
    """``migrate_op`` stopped at ``version`` (what an older runjournal left)."""
    yield BEGIN
    yield CREATE_VERSION_TABLE, None
    for index in range(version):
        yield MIGRATIONS[index], None
        yield INSERT_VERSION, (index + 1,)
    return version


def test_first_operation_after_a_server_restart_succeeds() -> None:
    """After a real restart of PostgreSQL, the first append (sync and async) needs no retry."""
    with PostgresServer() as server:
        url = fresh_database_url(server.url)
        with PostgresEventStore(url, min_size=8, max_size=8) as store:
            with ThreadPoolExecutor(8) as pool:  # a warm pool: 8 connections to kill
                list(pool.map(lambda i: store.append(many(1, f"warm{i}")), range(32)))
            asyncio.run(store.aappend(many(1, "async")))
            server.restart()
            with capture_logs() as logs:
                assert seqs(store.append(many(1, "after"))) == [1]
                assert seqs(asyncio.run(store.aappend(many(1, "async")))) == [2]
                assert store.last_seq("warm0") == 1
            assert not [e for e in logs if e["event"] == "postgres_transaction_retry"]


def test_foreign_tables_with_our_names_are_a_corrupt_store(postgres_db_url: str) -> None:
    """A database with a runjournal_events table but no schema version raises StoreCorruptError."""
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runjournal_events (id int)")
    with pytest.raises(StoreCorruptError, match="not a runjournal schema"):
        PostgresEventStore(postgres_db_url)


def test_import_journal_does_not_need_psycopg() -> None:
    """`import journal` loads no psycopg; journal.PostgresEventStore imports it on first use."""
    code = (
        "import sys, journal\n"
        "assert 'psycopg' not in sys.modules, 'psycopg imported eagerly'\n"
        "assert journal.PostgresEventStore.__name__ == 'PostgresEventStore'\n"
        "assert 'psycopg' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
