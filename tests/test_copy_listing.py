"""``copy_store`` copies every thread the source had when it began, while another writer
goes on writing to the source (an app still running during a migration): a write moves a
thread to the front of ``list_threads``' recency order, so pages by recency miss it; the
copy walks the threads in id order, which no write changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from journal import MemoryEventStore, SqliteEventStore, copy_store
from journal import copy as copy_module
from journal.postgres import PostgresEventStore
from journal.store import RunEventStore

THREADS = 40
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _event(thread: str, n: int, at: datetime | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"thread_id": thread, "run_id": "r", "category": "trace",
                             "event_type": "custom:x", "content": n}  # fmt: skip
    if at is not None:
        event["created_at"] = at
    return event


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[RunEventStore, Callable[[], RunEventStore]]]:
    """A source of ``THREADS`` threads (thread-00 the least recently active) and a maker of
    a second store object on the same data: the other writer."""
    made: list[RunEventStore] = []

    def open_same() -> RunEventStore:
        if request.param == "memory":
            return source
        if request.param == "sqlite":
            made.append(SqliteEventStore(tmp_path / "source.db"))
        else:
            made.append(PostgresEventStore(url))
        return made[-1]

    if request.param == "postgres":
        url = request.getfixturevalue("postgres_db_url")
        source: RunEventStore = PostgresEventStore(url)
    elif request.param == "sqlite":
        source = SqliteEventStore(tmp_path / "source.db")
    else:
        source = MemoryEventStore()
    source.append([_event(f"thread-{n:02d}", n, T0 + timedelta(seconds=n)) for n in range(THREADS)])
    yield source, open_same
    for store in [*made, source]:
        if store is not source or request.param != "memory":
            store.close()


def test_threads_written_during_the_copy_are_all_copied(
    stores: tuple[RunEventStore, Callable[[], RunEventStore]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """After each page of thread ids the other writer appends to an old thread not yet
    listed: every thread ends in the target, each equal to the source as read after."""
    source, open_same = stores
    other = open_same()
    monkeypatch.setattr(copy_module, "_PAGE_LIST_THREADS", 7)
    listed = type(source)._thread_ids_after
    writes = iter(range(THREADS - 1, 0, -5))  # the newest threads first: by recency, the oldest

    def listing(self: RunEventStore, after: str | None, limit: int) -> list[str] | None:
        ids = listed(self, after, limit)
        for n in [next(writes, None)]:
            if n is not None:
                other.append([_event(f"thread-{THREADS - 1 - n:02d}", -1)])
        return ids

    monkeypatch.setattr(type(source), "_thread_ids_after", listing)
    target = SqliteEventStore(tmp_path / "target.db")
    summary = copy_store(source, target)
    assert summary.threads == THREADS
    wanted = {t.thread_id for t in source.list_threads()}
    assert {t.thread_id for t in target.list_threads()} == wanted
    target.close()


def test_a_backend_without_an_id_order_is_walked_by_recency(tmp_path: Path) -> None:
    """A store that does not give thread ids in order (a third-party backend) is still
    copied whole when nothing writes meanwhile."""

    class Plain(MemoryEventStore):
        def _thread_ids_after(self, after: str | None, limit: int) -> list[str] | None:
            return None

    source = Plain()
    source.append([_event(f"thread-{n:02d}", n) for n in range(THREADS)])
    target = SqliteEventStore(tmp_path / "target.db")
    assert copy_store(source, target).threads == THREADS
    target.close()
