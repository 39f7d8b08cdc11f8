"""The store contract run against ``MemoryEventStore``, plus its memory-only behaviour."""

from __future__ import annotations

from typing import Any

from journal import MemoryEventStore, RunEventStore, open_store
from journal.testing import StoreContract, ev


class TestMemoryEventStore(StoreContract):
    """``MemoryEventStore`` meets the contract."""

    def create_store(self, **options: Any) -> RunEventStore:
        """A fresh in-memory store."""
        return MemoryEventStore(**options)


def test_memory_url_opens_a_fresh_store_each_time() -> None:
    """memory:// opens an empty MemoryEventStore; two opens share nothing."""
    first, second = open_store("memory://"), open_store("memory://")
    assert isinstance(first, MemoryEventStore)
    first.append([ev()])
    assert second.last_seq("t1") == 0
    first.close()
    second.close()
