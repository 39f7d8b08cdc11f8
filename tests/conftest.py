"""Shared pytest fixtures."""

import os
from collections.abc import Iterator

import pytest
import structlog

from tests.postgres_server import PostgresServer, PostgresServerError, fresh_database_url


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
    """Undo the process-wide structlog setup a CLI command run in-process makes.

    ``structlog.configure`` mutates its processor list in place, so the saved list is copied.
    """
    saved = structlog.get_config()
    saved["processors"] = list(saved["processors"])
    yield
    structlog.configure(**saved)
