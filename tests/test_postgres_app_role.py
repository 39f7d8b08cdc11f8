"""The README's least-privilege PostgreSQL setup: the owner migrates, the app role gets the
listed grants only (no CREATE). Opening the store with its defaults (``migrate=True``), and
every ``runjournal`` command with the app role's URL, then work: a schema at this version is
only read."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg

from journal import open_store
from journal.events import NewEvent
from journal.spool import Spool
from tests.cli_helpers import run_cli


def test_the_app_role_opens_reads_and_recovers_without_ddl(
    postgres_url: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    db, owner, app = f"rj_{tag}", f"own_{tag}", f"app_{tag}"  # generated names: no injection
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {owner} LOGIN")
        conn.execute(f"CREATE ROLE {app} LOGIN")
        conn.execute(f"CREATE DATABASE {db} OWNER {owner}")
    base = postgres_url.rsplit("@", 1)[1].rsplit("/", 1)[0]
    owner_url, app_url = f"postgresql://{owner}@{base}/{db}", f"postgresql://{app}@{base}/{db}"
    assert run_cli("migrate", "--store", owner_url).returncode == 0
    with psycopg.connect(owner_url, autocommit=True) as conn:
        for grant in (
            f"GRANT SELECT, INSERT ON runjournal_events TO {app}",
            f"GRANT SELECT, INSERT, UPDATE ON runjournal_thread_heads TO {app}",
            f"GRANT SELECT, INSERT, UPDATE ON runjournal_runs, runjournal_thread_usage TO {app}",
            f"GRANT SELECT ON runjournal_schema_version TO {app}",
            "REVOKE EXECUTE ON FUNCTION runjournal_delete_thread(text) FROM PUBLIC",
            f"GRANT EXECUTE ON FUNCTION runjournal_delete_thread(text) TO {app}",
        ):
            conn.execute(grant)
    with open_store(app_url) as store:  # migrate=True, the default
        store.append([{"thread_id": "t", "run_id": "r", "category": "trace",
                       "event_type": "custom:x", "content": 1}])  # fmt: skip
    spool = tmp_path / "app.jsonl"
    Spool(spool).append(
        [NewEvent(thread_id="t", run_id="r", category="trace", event_type="custom:x", content=2)]
    )
    for args in (["threads"], ["events", "t"], ["usage", "t"], ["recover", str(spool)]):
        done = run_cli(*args, "--store", app_url)
        assert done.returncode == 0, (args, done.stderr)
    with open_store(app_url) as store:
        assert [e.content for e in store.read("t")] == [1, 2]


def test_a_schema_first_on_the_search_path_gets_its_own_tables(postgres_db_url: str) -> None:
    """A store whose ``search_path`` starts with an empty schema migrates into it, though a
    current runjournal schema is further on the path: it never takes another's tables."""
    with open_store(postgres_db_url) as public:
        public.append([{"thread_id": "secret", "run_id": "r", "category": "trace",
                        "event_type": "custom:x", "content": 1}])  # fmt: skip
    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA tenant")
    sep = "&" if "?" in postgres_db_url else "?"
    url = postgres_db_url + sep + "options=" + quote("-c search_path=tenant,public")
    with open_store(url) as tenant:
        assert tenant.list_threads() == []
        tenant.append([{"thread_id": "mine", "run_id": "r", "category": "trace",
                        "event_type": "custom:x", "content": 2}])  # fmt: skip
    with open_store(postgres_db_url) as public:
        assert [t.thread_id for t in public.list_threads()] == ["secret"]
