"""The hypothesis state machine of ``test_store_statemachine`` on ``PostgresEventStore``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from journal import RunEventStore
from journal.postgres import PostgresEventStore
from tests.postgres_server import fresh_database_url
from tests.test_store_statemachine import StoreMachine

pytestmark = pytest.mark.postgres

_cluster: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _cluster_url(postgres_url: str) -> Iterator[None]:
    """Hand the session's cluster URL to the machine (hypothesis builds it, not pytest)."""
    _cluster["url"] = postgres_url
    yield
    _cluster.clear()


class PostgresMachine(StoreMachine):
    """The state machine on ``PostgresEventStore`` (a fresh database per example)."""

    def make_store(self) -> RunEventStore:
        """A store on a fresh, empty database of the session cluster."""
        return PostgresEventStore(fresh_database_url(_cluster["url"]), min_size=0, max_size=2)


TestPostgresStoreMachine = PostgresMachine.TestCase
TestPostgresStoreMachine.settings = settings(
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
