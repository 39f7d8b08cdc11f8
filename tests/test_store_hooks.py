"""Backend hooks: a backend written against the older positional hooks still meets the contract."""

from __future__ import annotations

import asyncio
from typing import Any

from journal import EventFilter, MemoryEventStore, RunEvent, RunEventStore
from journal.store import ReadQuery
from journal.testing import StoreContract, ev, many, seqs


class LegacyHooksStore(MemoryEventStore):
    """Reads and counts through hooks of the form they had before ``ReadQuery``."""

    calls: list[str]

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.calls = []

    def _read(  # type: ignore[override]
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        self.calls.append("_read")
        with self._lock:
            window = [
                e.model_copy(deep=True)
                for e in self._threads.get(thread_id, [])
                if (after_seq is None or e.seq > after_seq)
                and (before_seq is None or e.seq < before_seq)
                and flt.matches(e)
            ]
        if limit is None:
            return window
        return window[-limit:] if before_seq is not None else window[:limit]

    async def _aread(  # type: ignore[override]
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        self.calls.append("_aread")
        return await asyncio.to_thread(
            self._read,  # the adapted hook: it takes a query now
            ReadQuery(thread_id, after_seq, before_seq, limit, flt),
        )

    def _count(self, thread_id: str, flt: EventFilter) -> int:  # type: ignore[override]
        self.calls.append("_count")
        with self._lock:
            return sum(1 for e in self._threads.get(thread_id, []) if flt.matches(e))


class TestLegacyHooksStore(StoreContract):
    """A backend with the older hook signatures passes the whole contract."""

    def create_store(self, **options: Any) -> RunEventStore:
        """A fresh store whose read hooks take the query's fields one by one."""
        return LegacyHooksStore(**options)


async def test_legacy_hooks_are_the_ones_called() -> None:
    """The store's own positional hooks serve read, aread and count (not the base class's)."""
    store = LegacyHooksStore()
    store.append(many(5))
    assert seqs(store.read("t1", after_seq=1, before_seq=5, limit=2)) == [3, 4]
    assert seqs(await store.aread("t1", before_seq=3)) == [1, 2]
    assert store.count("t1", category="trace") == 5
    assert store.calls == ["_read", "_aread", "_read", "_count"]


def test_new_style_hooks_are_not_adapted() -> None:
    """A hook that takes the query itself reaches the backend unchanged."""
    seen: list[ReadQuery] = []

    class Recording(MemoryEventStore):
        def _read(self, query: ReadQuery) -> list[RunEvent]:
            seen.append(query)
            return super()._read(query)

    store = Recording()
    store.append([ev(), ev(run_id="r2")])
    assert seqs(store.read("t1", run_id="r2", before_seq=9, limit=1)) == [2]
    assert seen == [ReadQuery("t1", None, 9, 1, EventFilter(run_id=frozenset({"r2"})))]
