"""Contract: concurrent writers (threads on one store; processes on one shared store).

Every backend gets :class:`ConcurrencyContract` (threads). A backend that several processes
can share (a file, a server) adds :class:`ProcessContract` and its ``store_url`` hook; a memory
store cannot be shared between processes, so it does not include that part (nothing skipped).
"""

from __future__ import annotations

import multiprocessing
import threading
from abc import abstractmethod
from typing import Any

from journal.events import NewEvent
from journal.store import RunEventStore
from journal.testing._base import ContractBase

__all__ = ["ConcurrencyContract", "ProcessContract"]

WRITERS = 4
BATCHES = 15
BATCH_SIZE = 3
TOTAL = WRITERS * BATCHES * BATCH_SIZE


def _batch(writer: int, batch: int) -> list[NewEvent]:
    return [
        NewEvent(
            thread_id="shared",
            run_id=f"writer-{writer}",
            category="trace",
            event_type="custom:load",
            content={"writer": writer, "batch": batch, "item": item},
        )
        for item in range(BATCH_SIZE)
    ]


def _write_batches(store: RunEventStore, writer: int) -> list[list[int]]:
    return [[e.seq for e in store.append(_batch(writer, b))] for b in range(BATCHES)]


def _process_writer(url: str, writer: int, results: Any) -> None:
    """A writer process: open the shared store by URL, append, report seqs or the error."""
    from journal.urls import open_store

    try:
        with open_store(url) as store:
            results.put((writer, _write_batches(store, writer)))
    except BaseException as e:  # every failure reaches the parent, never lost
        results.put((writer, f"{type(e).__name__}: {e}"))


def _check(store: RunEventStore, per_writer: dict[int, Any]) -> None:
    """Every writer succeeded; batches got contiguous seqs; the thread is exactly 1..TOTAL."""
    assert {w: r for w, r in per_writer.items() if isinstance(r, str)} == {}
    batches = [batch for result in per_writer.values() for batch in result]
    assert len(batches) == WRITERS * BATCHES
    for seqs in batches:  # a batch is all-or-nothing and takes consecutive seqs
        assert seqs == list(range(seqs[0], seqs[0] + BATCH_SIZE))
    assert sorted(s for batch in batches for s in batch) == list(range(1, TOTAL + 1))
    assert [e.seq for e in store.iter_events("shared")] == list(range(1, TOTAL + 1))
    for writer in range(WRITERS):  # each writer's events in its own order
        mine = store.read("shared", run_id=f"writer-{writer}")
        assert [(e.content["batch"], e.content["item"]) for e in mine] == [
            (b, i) for b in range(BATCHES) for i in range(BATCH_SIZE)
        ]


class ConcurrencyContract(ContractBase):
    """Writers in several threads share one store: gap-free seqs, whole batches, no errors."""

    def test_threads_append_to_one_thread_without_gaps(self, store: RunEventStore) -> None:
        """Threads appending batches to one thread get seqs 1..N, each batch contiguous."""
        per_writer: dict[int, Any] = {}

        def write(writer: int) -> None:
            try:
                per_writer[writer] = _write_batches(store, writer)
            except BaseException as e:
                per_writer[writer] = f"{type(e).__name__}: {e}"

        workers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        _check(store, per_writer)


class ProcessContract(ContractBase):
    """Writers in several processes share one store (for backends that can be shared)."""

    @abstractmethod
    def store_url(self, store: RunEventStore) -> str:
        """The URL another process opens ``store`` with (``open_store(url)``)."""

    def test_processes_append_to_one_thread_without_gaps(self, store: RunEventStore) -> None:
        """Processes appending batches to one thread get seqs 1..N, each batch contiguous."""
        context = multiprocessing.get_context("spawn")  # no state inherited from this process
        results = context.Queue()
        url = self.store_url(store)
        workers = [
            context.Process(target=_process_writer, args=(url, w, results)) for w in range(WRITERS)
        ]
        for worker in workers:
            worker.start()
        per_writer = dict(results.get(timeout=120) for _ in workers)
        for worker in workers:
            worker.join(timeout=60)
        _check(store, per_writer)
