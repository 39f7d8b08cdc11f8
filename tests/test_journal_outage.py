"""RunJournal across outages: exit and close while the store is down, its return, a restart."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from journal import MemoryEventStore, RunEvent, RunJournal, SqliteEventStore, recover_spool
from journal.events import NewEvent
from journal.postgres import PostgresEventStore
from journal.spool import read_spool
from tests.cli_helpers import ROOT, cli_env
from tests.flaky_stores import FlakyStore
from tests.postgres_server import PostgresServer, PostgresServerError, fresh_database_url
from tests.test_run_journal_failures import FAST_RETRY, assert_gap_free_unique, run_agent


def healthy_count(tmp_path: Path, runs: int = 1) -> int:
    """How many events ``runs`` ``run_agent`` runs journal on a store that never fails."""
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / f"healthy-{runs}.jsonl") as journal:
        for _ in range(runs):
            run_agent(journal)
    return len(store.read("t1"))


def assert_in_time_order(events: Sequence[RunEvent]) -> None:
    """Seq order is the order the events happened in."""
    stamps = [e.created_at for e in events]
    assert stamps == sorted(stamps)


def wait_for(condition: object, limit: float = 60.0) -> None:
    """Poll ``condition()`` until it is true (fails the test if it never is)."""
    end = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < end, "condition never became true"
        time.sleep(0.02)


def test_exit_while_the_store_is_locked_spools_every_queued_event(tmp_path: Path) -> None:
    """A process exiting while another holds the SQLite write lock spools, then recover stores."""
    db = tmp_path / "locked.db"
    spool = tmp_path / "spool.jsonl"
    SqliteEventStore(db).close()
    script = textwrap.dedent(
        f"""
        from journal import RunJournal, SqliteEventStore
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(SqliteEventStore({str(db)!r}), spool_path={str(spool)!r})
        for n in range(3):
            run_agent(journal, thread=f"t{{n}}")
        """
    )
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=cli_env(), capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.returncode == 0, done.stderr
    with SqliteEventStore(db) as store:
        recover_spool(spool, store)
        per_run = healthy_count(tmp_path)
        for n in range(3):
            events = assert_gap_free_unique(store, f"t{n}")
            assert len(events) == per_run
            assert_in_time_order(events)


class HangingStore(MemoryEventStore):
    """A store whose appends hang until ``release`` is set (a lock held elsewhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        self.release.wait()
        return super()._append(events)


def test_close_spools_the_batch_in_flight_when_the_store_hangs(tmp_path: Path) -> None:
    """close(timeout) returns with every event spooled, the one being written included."""
    store = HangingStore()
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(store, spool_path=spool, max_batch=4)
    run_agent(journal)
    run_agent(journal, thread="t2")
    assert journal.close(timeout=0.5)
    store.release.set()
    target = MemoryEventStore()
    recover_spool(spool, target)
    per_run = healthy_count(tmp_path)
    for thread in ("t1", "t2"):
        assert len(assert_gap_free_unique(target, thread)) == per_run


def test_journal_drains_its_own_spool_when_the_store_returns(tmp_path: Path) -> None:
    """Spooled events are written back by the journal itself, in order, then writes go direct."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(store, spool_path=spool, retry_delays=FAST_RETRY)
    run_agent(journal, question="first")
    assert journal.flush(10) and journal.spooled_events > 0
    store.down = False
    run_agent(journal, question="second")
    two_runs = healthy_count(tmp_path, runs=2)
    wait_for(lambda: store.inner.last_seq("t1") == two_runs and not spool.exists())
    spooled = journal.spooled_events
    run_agent(journal, question="third")
    journal.close()
    assert journal.spooled_events == spooled  # direct writes again
    stored = assert_gap_free_unique(store)
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["first", "second", "third"]
    assert_in_time_order(stored)


def test_restarted_journal_replays_an_old_spool_before_writing_its_threads(
    tmp_path: Path,
) -> None:
    """A new journal on a spool left behind stores the old events first: seqs follow time."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    with RunJournal(store, spool_path=spool, retry_delays=FAST_RETRY) as before:
        run_agent(before, question="before the restart")
    assert read_spool(spool)
    store.down = False
    with RunJournal(store, spool_path=spool, retry_delays=FAST_RETRY) as after:
        run_agent(after, question="after the restart")
    if spool.exists():  # what an operator would do next
        recover_spool(spool, store)
    stored = assert_gap_free_unique(store)
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["before the restart", "after the restart"]
    assert_in_time_order(stored)


def own_server() -> PostgresServer:
    """A throw-away PostgreSQL server of the test's own (it stops and starts it)."""
    try:
        return PostgresServer().start()
    except PostgresServerError as e:
        if os.environ.get("RUNJOURNAL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required (RUNJOURNAL_REQUIRE_POSTGRES=1): {e}")
        pytest.skip(f"PostgreSQL cluster could not start: {e}")


@pytest.mark.postgres
def test_close_keeps_its_budget_when_postgres_stops_before_runs_of_new_threads(
    tmp_path: Path,
) -> None:
    """``close(timeout=1)`` after runs of four threads new to the process, PostgreSQL down
    (each read of a new thread's stored messages would wait ``connect_timeout``, 5 s),
    returns within its budget and a little more; recover then stores every event."""
    spool = tmp_path / "spool.jsonl"
    server = own_server()
    try:
        url = fresh_database_url(server.url)
        journal = RunJournal(PostgresEventStore(url), spool_path=spool)
        server.stop_server()
        for n in range(4):
            run_agent(journal, thread=f"t{n}")
        started = time.monotonic()
        assert journal.close(timeout=1)
        took = time.monotonic() - started
        assert took < 3.0, f"close(timeout=1) took {took:.1f} s"
        server.start_again()
        with PostgresEventStore(url) as store:
            recover_spool(spool, store)
            per_run = healthy_count(tmp_path)
            for n in range(4):
                assert len(assert_gap_free_unique(store, f"t{n}")) == per_run
        journal.store.close()
    finally:
        server.stop()


@pytest.mark.postgres
def test_exit_while_postgres_is_down_spools_every_queued_event(tmp_path: Path) -> None:
    """An app whose PostgreSQL stops mid-work exits promptly; recover stores every event."""
    spool = tmp_path / "spool.jsonl"
    server = own_server()
    try:
        url = fresh_database_url(server.url)
        script = textwrap.dedent(
            f"""
            import sys
            from journal import RunJournal, open_store
            from tests.test_run_journal_failures import run_agent
            journal = RunJournal(open_store({url!r}), spool_path={str(spool)!r})
            print("ready", flush=True)
            sys.stdin.readline()
            for n in range(3):
                run_agent(journal, thread=f"t{{n}}")
            """
        )
        app = subprocess.Popen(
            [sys.executable, "-c", script], cwd=ROOT, env=cli_env(), text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert app.stdout is not None and app.stdin is not None
        while app.stdout.readline().strip() != "ready":
            pass
        server.stop_server()
        app.stdin.write("go\n")
        app.stdin.flush()
        assert app.wait(120) == 0
        server.start_again()
        with PostgresEventStore(url) as store:
            recover_spool(spool, store)
            per_run = healthy_count(tmp_path)
            for n in range(3):
                events = assert_gap_free_unique(store, f"t{n}")
                assert len(events) == per_run
                assert_in_time_order(events)
    finally:
        server.stop()


def test_close_while_the_writer_is_spooling_spools_each_event_once_and_in_order(
    tmp_path: Path,
) -> None:
    """The writer is writing its batch to the spool (the store down, the spool slow) when
    close gives up on it: when close returns (as at exit, where the writer dies with the
    process) every event is in the spool, once, the batch before what was queued after it."""
    spool_path = tmp_path / "spool.jsonl"
    journal = RunJournal(FlakyStore(down=True), spool_path=spool_path, retry_delays=(0.01,))
    entered, go = threading.Event(), threading.Event()
    real_append = journal.spool.append

    def slow_on_the_writer(events: Sequence[NewEvent]) -> None:
        if threading.current_thread().name == "runjournal-writer" and not entered.is_set():
            entered.set()  # past every check: the writer is spooling its batch
            go.wait(10)
        real_append(events)

    journal.spool.append = slow_on_the_writer  # type: ignore[method-assign]
    run_agent(journal, question="first")
    journal._writer.wake()
    assert entered.wait(10)
    run_agent(journal, question="second")  # queued behind the batch being spooled
    threading.Timer(0.5, go.set).start()  # the spool write takes longer than close's budget
    assert journal.close(timeout=0.2)
    spooled = read_spool(spool_path)  # at close's return: nothing left to a dying writer
    writer = journal._writer._thread
    assert writer is not None
    writer.join(10)
    assert read_spool(spool_path) == spooled, "the writer spooled after close returned"
    ids = [e.event_id for e in spooled]
    assert len(ids) == len(set(ids)), "events spooled twice"
    assert journal.spooled_events == len(ids) and journal.dropped_events == 0
    humans = [e.content["data"]["content"] for e in spooled if e.event_type == "message.human"]
    assert humans == ["first", "second"]
    stamps = [e.created_at for e in spooled]
    assert stamps == sorted(stamps)


def test_close_says_so_when_the_batch_the_writer_spools_is_lost(tmp_path: Path) -> None:
    """The writer's spool write of its batch fails (a full disk) while close waits for it:
    close returns False and the batch counts as dropped, as its own spool failure would."""
    import errno

    journal = RunJournal(FlakyStore(down=True), spool_path=tmp_path / "s.jsonl",
                         retry_delays=(0.01,))  # fmt: skip
    entered, go = threading.Event(), threading.Event()
    real_append = journal.spool.append

    def full_disk_on_the_writer(events: Sequence[NewEvent]) -> None:
        if threading.current_thread().name == "runjournal-writer" and not entered.is_set():
            entered.set()
            go.wait(10)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(events)

    journal.spool.append = full_disk_on_the_writer  # type: ignore[method-assign]
    run_agent(journal)
    journal._writer.wake()
    assert entered.wait(10)
    threading.Timer(0.5, go.set).start()
    assert journal.close(timeout=0.2) is False
    assert journal.dropped_events > 0 and journal.spooled_events == 0
