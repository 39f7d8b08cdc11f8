"""PostgreSQL in an application: its own pools, migrations at deploy time, least privilege."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from journal import RunEventStore, SchemaVersionError, open_store
from journal import _postgres_schema as sql
from journal.postgres import PostgresEventStore
from journal.testing import StoreContract, many, seqs
from tests.cli_helpers import run_cli
from tests.logs import capture_logs
from tests.postgres_server import fresh_database_url

pytestmark = pytest.mark.postgres

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_recipe(owner: str, app: str, db: str) -> tuple[str, str]:
    """The README's least-privilege SQL (administrator's, then owner's) for these names."""
    admin, grants = re.findall(r"```sql\n(.*?)```", README.read_text("utf-8"), re.S)[:2]

    def named(sql_text: str) -> str:
        sql_text = sql_text.replace(" PASSWORD '...'", "")  # trust authentication in tests
        sql_text = sql_text.replace("runjournal_owner", owner).replace("runjournal_app", app)
        return sql_text.replace("CREATE DATABASE runjournal ", f"CREATE DATABASE {db} ")

    return named(admin), named(grants)


def with_user(url: str, user: str) -> str:
    """``url`` with its user replaced by ``user`` (trust authentication: no password)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{user}@{rest.split('@', 1)[1]}"


class TestPostgresHostPool(StoreContract):
    """The store on an application's own ConnectionPool meets the whole contract."""

    url: str
    pools: list[ConnectionPool[Any]]

    @pytest.fixture(autouse=True)
    def _database(self, postgres_url: str) -> Iterator[None]:
        self.url = fresh_database_url(postgres_url)
        self.pools = []
        yield
        for pool in self.pools:
            pool.close()

    def create_store(self, **options: Any) -> RunEventStore:
        """A store borrowing a fresh non-autocommit, dict-row pool, as an app might have."""
        pool: ConnectionPool[Any] = ConnectionPool(
            self.url, kwargs={"row_factory": dict_row}, min_size=1, max_size=4, open=True
        )
        self.pools.append(pool)
        return PostgresEventStore(pool=pool, **options)


def test_host_pool_stays_open_and_its_sessions_untouched(postgres_db_url: str) -> None:
    """Closing the store leaves the host pool open; UTC and the timeout were per transaction."""
    with ConnectionPool(
        postgres_db_url, kwargs={"options": "-c TimeZone=Asia/Kolkata"}, min_size=1, max_size=1
    ) as pool:
        store = PostgresEventStore(pool=pool)
        [stored] = store.append(many(1))
        assert stored.created_at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert store.read("t1") == [stored]
        store.close()
        with pool.connection() as conn:
            assert conn.execute("SHOW TimeZone").fetchone() == ("Asia/Kolkata",)
            assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)


def test_host_pool_dead_connections_are_replaced_without_retry(postgres_db_url: str) -> None:
    """After the server kills the host pool's connections, the next append works at once."""
    with ConnectionPool(postgres_db_url, kwargs={"application_name": "hostapp"}) as pool:
        store = PostgresEventStore(pool=pool)
        store.append(many(1))
        with psycopg.connect(postgres_db_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                "WHERE application_name = 'hostapp'"
            )
        with capture_logs() as logs:
            assert seqs(store.append(many(1))) == [2]
        assert not [e for e in logs if e["event"] == "postgres_transaction_retry"]
        store.close()


async def test_host_async_pool_serves_the_async_methods(postgres_db_url: str) -> None:
    """With apool=, aappend/aread run on the application's async pool, on the caller's loop."""
    with ConnectionPool(postgres_db_url) as pool:
        async with AsyncConnectionPool(postgres_db_url, open=False) as apool:
            store = PostgresEventStore(pool=pool, apool=apool)
            before = apool.get_stats().get("requests_num", 0)
            stored = await store.aappend(many(3))
            assert await store.aread("t1") == stored
            assert apool.get_stats().get("requests_num", 0) >= before + 2
            store.close()
            assert not apool.closed


def test_pool_arguments_are_checked() -> None:
    """A URL and pool= together, apool= alone, or a non-pool are caller errors."""
    with pytest.raises(ValueError, match="needs pool="):
        PostgresEventStore(apool=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ConnectionPool"):
        PostgresEventStore(pool=object())  # type: ignore[arg-type]


def _migrate_to(url: str, version: int) -> None:
    """Bring an empty database to schema ``version`` by hand, as an older runjournal did."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.CREATE_VERSION_TABLE)
        for index in range(version):
            conn.execute(sql.MIGRATIONS[index])
            conn.execute(sql.INSERT_VERSION, (index + 1,))


def test_migrate_false_fails_clearly_when_the_schema_is_missing_or_behind(
    postgres_db_url: str,
) -> None:
    """open_store(url, migrate=False) names the fix; `runjournal migrate` then lets it open."""
    with pytest.raises(SchemaVersionError, match=r"no runjournal schema.*runjournal migrate"):
        open_store(postgres_db_url, migrate=False)
    _migrate_to(postgres_db_url, sql.SCHEMA_VERSION - 1)
    with pytest.raises(SchemaVersionError, match=r"behind.*runjournal migrate"):
        open_store(postgres_db_url, migrate=False)
    done = run_cli("migrate", "--store", postgres_db_url)
    assert done.returncode == 0, done.stderr
    assert f"version {sql.SCHEMA_VERSION}" in done.stdout and "1 migration" in done.stdout
    with open_store(postgres_db_url, migrate=False) as store:
        assert seqs(store.append(many(2))) == [1, 2]
    again = run_cli("migrate", "--store", postgres_db_url)
    assert again.returncode == 0 and "0 migrations" in again.stdout


def test_setup_creates_the_schema_and_is_idempotent(postgres_db_url: str) -> None:
    """setup() on a store opened without migrating creates nothing twice."""
    _migrate_to(postgres_db_url, sql.SCHEMA_VERSION)
    store = PostgresEventStore(postgres_db_url, migrate=False)
    assert store.setup() == 0
    store.close()


def test_least_privilege_recipe(postgres_url: str) -> None:
    """Owner migrates; the app role appends, reads and deletes whole threads, and nothing else."""
    suffix = uuid.uuid4().hex[:8]
    owner, app = f"rj_owner_{suffix}", f"rj_app_{suffix}"
    db = f"rj_lp_{suffix}"
    admin_sql, owner_grants = readme_recipe(owner, app, db)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for statement in filter(str.strip, admin_sql.split(";")):  # CREATE DATABASE alone
            admin.execute(statement)
    base = postgres_url.rsplit("/", 1)[0] + "/" + db
    owner_url, app_url = with_user(base, owner), with_user(base, app)
    done = run_cli("migrate", "--store", owner_url)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(owner_grants)

    # migrate=True: a schema at its version is only read (the app role runs no DDL, below)
    PostgresEventStore(app_url).close()
    with open_store(app_url, migrate=False) as store:
        assert seqs(store.append(many(3))) == [1, 2, 3]
        assert seqs(store.read("t1")) == [1, 2, 3]
        assert [t.thread_id for t in store.list_threads()] == ["t1"]
        assert len(store.list_runs("t1")) == 1
        assert store.get_run("r1") is not None and store.read_usage("t1").run_count == 1
        assert store.delete_thread("t1") == 3
        assert store.list_runs("t1") == [] and store.get_run("r1") is None
        assert seqs(store.append(many(1))) == [1]
        assert store.setup() == 0  # type: ignore[attr-defined]  # (at its version: no DDL)

    with psycopg.connect(app_url, autocommit=True) as conn:
        for statement in (
            "DELETE FROM runjournal_events WHERE seq = 1",
            "UPDATE runjournal_events SET content = '{}'::json",
            "TRUNCATE runjournal_events",
            "DELETE FROM runjournal_thread_heads",
            "DELETE FROM runjournal_runs",
            "TRUNCATE runjournal_thread_usage",
            "CREATE TABLE mine (x int)",
            "DROP TABLE runjournal_events",
            "DELETE FROM runjournal_schema_version",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        with pytest.raises(psycopg.errors.RestrictViolation):  # a head that would open a gap
            conn.execute("UPDATE runjournal_thread_heads SET last_seq = 5")
    with open_store(app_url, migrate=False) as store:
        assert seqs(store.read("t1")) == [1]
