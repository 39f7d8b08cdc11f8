"""Many writer processes on one PostgreSQL store: gap-free seqs, whole batches, no errors.

Writers are separate processes (a forkserver that preloads the store module, so starting one
is cheap), each with its own ``PostgresEventStore``, as app servers on several machines would.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Generator, Iterator
from multiprocessing.context import BaseContext
from multiprocessing.synchronize import Event as EventType
from typing import Any

import pytest

import journal._postgres_ops
from journal import NewEvent, RunEvent
from journal.postgres import PostgresEventStore
from tests.postgres_server import wait_for_lock_waiters

pytestmark = pytest.mark.postgres

BATCH = 5


def _batch(writer: str, index: int, thread_id: str, size: int = BATCH) -> list[NewEvent]:
    return [
        NewEvent(
            thread_id=thread_id,
            run_id=f"{writer}-{index}",
            category="trace",
            event_type="custom:load",
            content={"writer": writer, "batch": index, "k": k},
        )
        for k in range(size)
    ]


def write_batches(url: str, thread_id: str, writer: str, batches: int, size: int) -> None:
    """Process body: append ``batches`` batches of ``size`` events; any error fails the exit."""
    with PostgresEventStore(url, max_size=1) as store:
        for index in range(batches):
            store.append(_batch(writer, index, thread_id, size))


def write_then_hang(url: str, thread_id: str, in_transaction: EventType) -> None:
    """Process body: append one batch over two threads (one transaction), stop before commit.

    A one-thread batch is a single statement (atomic by itself); spanning two threads makes
    the batch an explicit transaction that the kill interrupts.
    """
    original = journal._postgres_ops.append_op

    def paused(events: Any, **options: Any) -> Generator[Any, Any, list[RunEvent]]:
        result = yield from original(events, **options)
        in_transaction.set()  # head bumped and rows inserted, transaction still open
        time.sleep(600)
        return result

    journal._postgres_ops.append_op = paused
    with PostgresEventStore(url, max_size=1) as store:
        store.append(_batch("doomed", 0, thread_id, 50) + _batch("doomed", 0, "other", 50))


@pytest.fixture(scope="module")
def ctx() -> BaseContext:
    """A forkserver context whose server has already imported the store."""
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(["journal.postgres", __name__])
    return context


@pytest.fixture
def reader(postgres_db_url: str) -> Iterator[PostgresEventStore]:
    """A store for checking what the writers left."""
    with PostgresEventStore(postgres_db_url) as store:
        yield store


def _start(ctx: BaseContext, target: Any, *args: Any) -> Any:
    process = ctx.Process(target=target, args=args)  # type: ignore[attr-defined]
    process.start()
    return process


def _check_thread(store: PostgresEventStore, thread_id: str, batches: dict[str, int]) -> None:
    """Seqs are 1..N with no gap, ids unique, and each batch whole and contiguous."""
    events = list(store.iter_events(thread_id))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.event_id for e in events}) == len(events)
    by_run: dict[str, list[int]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event.seq)
    for seqs in by_run.values():
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    for writer, count in batches.items():
        assert sum(1 for run in by_run if run.startswith(f"{writer}-")) == count


def _run_writers(
    ctx: BaseContext, postgres_db_url: str, reader: PostgresEventStore, processes: int, batches: int
) -> None:
    shared = [
        _start(ctx, write_batches, postgres_db_url, "shared", f"s{n}", batches, BATCH)
        for n in range(processes)
    ]
    solo = [
        _start(ctx, write_batches, postgres_db_url, f"own-{n}", f"o{n}", batches, BATCH)
        for n in range(processes)
    ]
    for process in shared + solo:
        process.join(timeout=600)
        assert process.exitcode == 0, "a writer surfaced an error"
    _check_thread(reader, "shared", {f"s{n}": batches for n in range(processes)})
    assert reader.last_seq("shared") == processes * batches * BATCH
    for n in range(processes):
        _check_thread(reader, f"own-{n}", {f"o{n}": batches})
        assert reader.last_seq(f"own-{n}") == batches * BATCH


def test_few_writer_processes_get_gap_free_seqs(
    ctx: BaseContext, postgres_db_url: str, reader: PostgresEventStore
) -> None:
    """3 processes on one thread plus 3 on their own threads: gap-free, no duplicate."""
    _run_writers(ctx, postgres_db_url, reader, processes=3, batches=20)


@pytest.mark.slow
def test_eight_writer_processes_get_gap_free_seqs(
    ctx: BaseContext, postgres_db_url: str, reader: PostgresEventStore
) -> None:
    """8 processes x 200 batches of 5 on one thread, plus 8 on 8 other threads: gap-free."""
    _run_writers(ctx, postgres_db_url, reader, processes=8, batches=200)


def test_writer_killed_mid_batch_leaves_no_partial_batch(
    ctx: BaseContext, postgres_db_url: str, reader: PostgresEventStore
) -> None:
    """SIGKILL of a writer inside its transaction leaves no row and no gap; others carry on."""
    in_transaction = ctx.Event()
    doomed = _start(ctx, write_then_hang, postgres_db_url, "shared", in_transaction)
    assert in_transaction.wait(timeout=60), "the doomed writer never reached its transaction"
    others = [
        _start(ctx, write_batches, postgres_db_url, "shared", f"s{n}", 10, BATCH) for n in range(3)
    ]
    wait_for_lock_waiters(postgres_db_url, 3)  # the others wait on the doomed writer's lock
    assert doomed.pid is not None
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join(timeout=30)
    for process in others:
        process.join(timeout=120)
        assert process.exitcode == 0
    _check_thread(reader, "shared", {f"s{n}": 10 for n in range(3)})
    assert reader.count("shared", run_id="doomed-0") == 0
    assert reader.last_seq("other") == 0
    assert reader.last_seq("shared") == 3 * 10 * BATCH


@pytest.mark.slow
def test_writers_killed_at_random_points_leave_whole_batches(
    ctx: BaseContext, postgres_db_url: str, reader: PostgresEventStore
) -> None:
    """Writers of 50-event batches killed at arbitrary moments leave only whole batches."""
    survivors = [
        _start(ctx, write_batches, postgres_db_url, "shared", f"s{n}", 30, 50) for n in range(2)
    ]
    for round_ in range(3):
        victim = _start(ctx, write_batches, postgres_db_url, "shared", f"v{round_}", 10_000, 50)
        deadline = time.monotonic() + 60
        while reader.count("shared", run_id=[f"v{round_}-{i}" for i in range(3)]) < 150:
            assert time.monotonic() < deadline, "the victim never wrote"
            time.sleep(0.02)
        time.sleep(0.01 * round_)
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(timeout=30)
    for process in survivors:
        process.join(timeout=300)
        assert process.exitcode == 0
    events = list(reader.iter_events("shared"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    sizes: dict[str, int] = {}
    for event in events:
        sizes[event.run_id] = sizes.get(event.run_id, 0) + 1
    assert set(sizes.values()) == {50}
    assert sum(1 for run in sizes if run.startswith("s")) == 60
