"""Stores that fail on purpose, and the store/journal fixtures of the ``RunJournal`` tests.

Import the fixtures into a test module with
``from tests.flaky_stores import journal_fixture, store_fixture  # noqa: F401``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from journal.errors import StoreUnavailableError
from journal.events import NewEvent, RunEvent, ThreadSummary
from journal.memory import MemoryEventStore
from journal.run_journal import RunJournal
from journal.store import ReadQuery, RunEventStore


class FlakyStore(RunEventStore):
    """Wraps a ``MemoryEventStore``; the first ``fail_first`` appends fail, or all when ``down``.

    With ``commit_then_fail`` a failing append first stores the batch and then raises, like a
    connection lost after the commit (the journal's retry must not duplicate anything).
    ``attempts`` counts every append that reached the backend.
    """

    def __init__(
        self, *, fail_first: int = 0, down: bool = False, commit_then_fail: bool = False
    ) -> None:
        super().__init__()
        self.inner = MemoryEventStore()
        self.fail_first = fail_first
        self.down = down
        self.commit_then_fail = commit_then_fail
        self.attempts = 0
        self._lock = threading.Lock()

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        with self._lock:
            self.attempts += 1
            failing = self.down or self.attempts <= self.fail_first
        if failing:
            if self.commit_then_fail and not self.down:
                self.inner._append(events)
            raise StoreUnavailableError("the store is down (FlakyStore)")
        return self.inner._append(events)

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        return self.inner._read(query)

    def _last_seq(self, thread_id: str) -> int:
        return self.inner._last_seq(thread_id)

    def _count(self, query: ReadQuery) -> int:
        return self.inner._count(query)

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        return self.inner._list_threads(limit, offset)

    def _delete_thread(self, thread_id: str) -> int:
        return self.inner._delete_thread(thread_id)

    def _close(self) -> None:
        self.inner.close()


@pytest.fixture(name="store")
def store_fixture() -> MemoryEventStore:
    """A fresh in-memory store (import this fixture into a test module to use it)."""
    return MemoryEventStore()


@pytest.fixture(name="journal")
def journal_fixture(store: MemoryEventStore, tmp_path: Path) -> Iterator[RunJournal]:
    """A RunJournal on ``store`` spooling under ``tmp_path``, closed after the test."""
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        yield j
