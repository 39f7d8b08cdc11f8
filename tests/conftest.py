"""Shared pytest fixtures."""

import logging
import os
from collections.abc import Iterator

import pytest

from tests.postgres_server import PostgresServer, PostgresServerError, fresh_database_url

# The contract suite lives in the package; its asserts get pytest's detailed messages too.
pytest.register_assert_rewrite("journal.testing")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a throw-away PostgreSQL 15 cluster for the whole session, stopped afterwards.

    If the cluster cannot start the test fails when ``RUNJOURNAL_REQUIRE_POSTGRES=1`` (CI),
    and is skipped with the reason otherwise.
    """
    server = PostgresServer()
    try:
        server.start()
    except PostgresServerError as e:
        if os.environ.get("RUNJOURNAL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required (RUNJOURNAL_REQUIRE_POSTGRES=1): {e}")
        pytest.skip(f"PostgreSQL cluster could not start: {e}")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def postgres_db_url(postgres_url: str) -> str:
    """URL of a fresh, empty database on the session's PostgreSQL cluster."""
    return fresh_database_url(postgres_url)


@pytest.fixture(autouse=True)
def _restore_logging_config() -> Iterator[None]:
    """Undo the process-wide logging setup a CLI command run in-process makes."""
    root, ours = logging.getLogger(), logging.getLogger("runjournal")
    saved = (root.level, list(root.handlers), ours.level)
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    ours.setLevel(saved[2])
