"""Concurrent writers on one SQLite thread: OS processes, threads and asyncio tasks.

Each scenario runs 4 writers x 250 batches of 4 events on one thread of one file and checks
that the thread holds exactly seqs 1..4000, that every batch got contiguous seqs, and that no
writer saw an error (in particular no "database is locked").
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from journal import NewEvent, RunEvent, SqliteEventStore

WRITERS = 4
BATCHES = 250
BATCH_SIZE = 4
TOTAL = WRITERS * BATCHES * BATCH_SIZE
THREAD = "shared-thread"


def _batch(writer: int, batch: int) -> list[NewEvent]:
    return [
        NewEvent(
            thread_id=THREAD,
            run_id=f"writer-{writer}",
            category="trace",
            event_type="custom:load",
            content={"writer": writer, "batch": batch, "item": item, "pad": "x" * 200},
        )
        for item in range(BATCH_SIZE)
    ]


def _batch_seqs(records: Sequence[RunEvent]) -> list[int]:
    return [r.seq for r in records]


def _write_all(store: SqliteEventStore, writer: int) -> list[list[int]]:
    return [_batch_seqs(store.append(_batch(writer, b))) for b in range(BATCHES)]


def _process_writer(path: str, writer: int, results: multiprocessing.Queue[object]) -> None:
    try:
        store = SqliteEventStore(path)
        try:
            results.put((writer, _write_all(store, writer)))
        finally:
            store.close()
    except BaseException as e:  # report every failure to the parent, never lose it
        results.put((writer, f"{type(e).__name__}: {e}"))


def _check(path: Path, per_writer: dict[int, object]) -> None:
    errors = {w: r for w, r in per_writer.items() if isinstance(r, str)}
    assert errors == {}
    batches = [b for r in per_writer.values() if isinstance(r, list) for b in r]
    assert len(batches) == WRITERS * BATCHES
    for seqs in batches:  # a batch is one transaction: its seqs are contiguous
        assert seqs == list(range(seqs[0], seqs[0] + BATCH_SIZE))
    returned = sorted(s for b in batches for s in b)
    assert returned == list(range(1, TOTAL + 1))
    with SqliteEventStore(path) as store:
        stored = [e.seq for e in store.iter_events(THREAD)]
        assert stored == list(range(1, TOTAL + 1))
        assert store.last_seq(THREAD) == TOTAL
        assert store.count(THREAD) == TOTAL
        [summary] = store.list_threads()
        assert (summary.event_count, summary.run_count) == (TOTAL, WRITERS)
        for writer in range(WRITERS):
            mine = store.read(THREAD, run_id=f"writer-{writer}")
            assert [(e.content["batch"], e.content["item"]) for e in mine] == [
                (b, i) for b in range(BATCHES) for i in range(BATCH_SIZE)
            ]


def test_processes_append_to_one_thread_without_gaps_or_errors(tmp_path: Path) -> None:
    """4 OS processes x 250 batches of 4 (racing to create the file) give exactly 1..4000."""
    path = tmp_path / "procs.db"  # not created beforehand: the writers race to create it too
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[object] = ctx.Queue()
    procs = [
        ctx.Process(target=_process_writer, args=(str(path), w, results)) for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    per_writer: dict[int, object] = {}
    for _ in procs:
        writer, result = cast(tuple[int, object], results.get(timeout=240))
        per_writer[writer] = result
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    _check(path, per_writer)


def _in_threads(write: Callable[[int], list[list[int]]]) -> dict[int, object]:
    """Run ``write(writer)`` for every writer in its own OS thread; collect results or errors."""
    per_writer: dict[int, object] = {}

    def run(writer: int) -> None:
        try:
            per_writer[writer] = write(writer)
        except BaseException as e:  # report every failure, never lose it in a thread
            per_writer[writer] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    return per_writer


def test_threads_append_to_one_thread_without_gaps_or_errors(tmp_path: Path) -> None:
    """4 OS threads sharing one store x 250 batches of 4 give seqs 1..4000, no error."""
    path = tmp_path / "threads.db"
    with SqliteEventStore(path) as store:
        per_writer = _in_threads(lambda writer: _write_all(store, writer))
    _check(path, per_writer)


def test_separate_stores_in_threads_append_without_gaps_or_errors(tmp_path: Path) -> None:
    """4 threads, each with its own store object on one file, give seqs 1..4000, no error."""
    path = tmp_path / "stores.db"

    def write(writer: int) -> list[list[int]]:
        with SqliteEventStore(path) as store:
            return _write_all(store, writer)

    _check(path, _in_threads(write))


async def test_asyncio_tasks_append_to_one_thread_without_gaps_or_errors(tmp_path: Path) -> None:
    """4 asyncio tasks x 250 aappend batches of 4 give seqs 1..4000, no error."""
    path = tmp_path / "tasks.db"
    store = SqliteEventStore(path)

    async def run(writer: int) -> object:
        try:
            return [_batch_seqs(await store.aappend(_batch(writer, b))) for b in range(BATCHES)]
        except BaseException as e:
            return f"{type(e).__name__}: {e}"

    try:
        results = await asyncio.gather(*(run(w) for w in range(WRITERS)))
    finally:
        await store.aclose()
    _check(path, dict(enumerate(results)))
