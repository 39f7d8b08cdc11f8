"""Contract: the async API (same semantics as sync, never blocking the loop)."""

from __future__ import annotations

import asyncio

import pytest
from blockbuster import blockbuster_ctx

from journal.errors import StoreClosedError
from journal.store import RunEventStore
from journal.testing._base import ContractBase
from journal.testing._helpers import many, seqs


class AsyncContract(ContractBase):
    """The async twins: the same answers as the sync methods, and no blocking call on the loop."""

    # -- async API --------------------------------------------------------------------------------

    async def test_async_methods_match_sync_semantics(self, store: RunEventStore) -> None:
        """Every async method returns what its sync twin does."""
        stored = await store.aappend(many(5))
        assert seqs(stored) == [1, 2, 3, 4, 5]
        assert await store.aread("t1", before_seq=5, limit=2) == stored[2:4]
        assert await store.aread("t1", category=[]) == []
        assert [e async for e in store.aiter_events("t1", page_size=2)] == stored
        assert await store.alast_seq("t1") == 5
        assert await store.acount("t1", run_id="r1") == 5
        assert await store.alist_threads() == store.list_threads()
        assert await store.alist_runs("t1") == store.list_runs("t1")
        assert await store.aappend([stored[0]]) == [stored[0]]
        assert await store.adelete_thread("t1") == 5
        assert await store.alast_seq("t1") == 0

    async def test_async_methods_never_block_the_event_loop(self, store: RunEventStore) -> None:
        """No async method makes a blocking call (I/O, sleep, lock, SQL) on the loop thread."""
        with blockbuster_ctx(scanned_modules=["journal"]):
            stored = await store.aappend(many(3))
            assert await store.aread("t1", after_seq=1) == stored[1:]
            assert [e async for e in store.aiter_events("t1", page_size=2)] == stored
            assert await store.alast_seq("t1") == 3
            assert await store.acount("t1") == 3
            assert len(await store.alist_threads()) == 1
            assert len(await store.alist_runs("t1")) == 1
            assert await store.adelete_thread("t1") == 3

    async def test_async_bad_input_raises_before_writing(self, store: RunEventStore) -> None:
        """aappend rejects an invalid batch with ValueError and writes nothing."""
        with pytest.raises(ValueError, match="event_type"):
            await store.aappend(
                [
                    *many(2),
                    {
                        "thread_id": "t1",
                        "run_id": "r",
                        "category": "trace",
                        "event_type": "bad type",
                    },
                ]
            )
        assert await store.alast_seq("t1") == 0

    async def test_concurrent_async_appends_get_distinct_seqs(self, store: RunEventStore) -> None:
        """Concurrent aappend calls on one thread get gap-free, distinct seqs."""
        results = await asyncio.gather(*(store.aappend(many(3)) for _ in range(10)))
        all_seqs = sorted(s for batch in results for s in seqs(batch))
        assert all_seqs == list(range(1, 31))
        for batch in results:  # a batch is contiguous
            assert seqs(batch) == list(range(batch[0].seq, batch[0].seq + 3))

    async def test_aclose_closes(self) -> None:
        """aclose closes the store like close."""
        store = self.create_store()
        await store.aclose()
        with pytest.raises(StoreClosedError):
            await store.aread("t1")
