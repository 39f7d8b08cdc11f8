"""The spool under faults: torn lines, a live writer in another process, bad lines, full disks."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from journal import MemoryEventStore, RunJournal, SqliteEventStore, recover_spool
from journal.spool import Spool, SpoolReplay, read_spool
from journal.testing import ev
from tests.cli_helpers import ROOT, assert_user_error, cli_env, run_cli
from tests.flaky_stores import FlakyStore
from tests.test_run_journal_failures import FAST_RETRY, run_agent

#: A line too deeply nested for Python's JSON parser (it raises RecursionError).
DEEP_LINE = "[" * 200_000 + "]" * 200_000


def test_torn_last_line_never_swallows_the_next_event(tmp_path: Path) -> None:
    """An event spooled after a torn fragment starts on its own line and is recovered."""
    path = tmp_path / "spool.jsonl"
    path.write_text('{"event_id": "torn-by-a-crash", "thread_', encoding="utf-8")
    store = FlakyStore(down=True)
    with RunJournal(store, spool_path=path, retry_delays=FAST_RETRY) as journal:
        run_agent(journal)
    spooled = journal.spooled_events
    assert spooled > 0
    target = MemoryEventStore()
    done = recover_spool(path, target)
    assert done.events == spooled == len(target.read("t1"))
    assert done.skipped_lines == 1 and done.bad_lines == (1,)


def test_recover_racing_a_live_writer_in_another_process_loses_nothing(tmp_path: Path) -> None:
    """recover_spool run again and again while another process spools keeps every event."""
    path = tmp_path / "spool.jsonl"
    writer = textwrap.dedent(
        f"""
        import sys
        from journal.spool import Spool
        from journal.testing import ev
        spool = Spool({str(path)!r})
        for n in range(400):
            spool.append([ev(thread_id="race", content=n) for _ in range(3)])
        print("done", flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer], cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, text=True
    )
    store = SqliteEventStore(tmp_path / "target.db")
    try:
        while proc.poll() is None:
            recover_spool(path, store, batch_size=7)
        assert proc.stdout is not None and proc.stdout.read().strip() == "done"
        recover_spool(path, store)
        stored = store.read("race")
        assert len(stored) == 1200
        assert [e.content for e in stored] == sorted(e.content for e in stored)
    finally:
        proc.wait(60)
        store.close()


def test_recover_keeps_deep_and_bad_lines_by_number_and_stores_the_good(tmp_path: Path) -> None:
    """A line too deep to parse is named by its number and kept; the good lines are stored."""
    path = tmp_path / "spool.jsonl"
    good = [ev(thread_id="deep", content=n) for n in range(3)]
    Spool(path).append(good[:1])
    with path.open("a", encoding="utf-8") as f:
        f.write(DEEP_LINE + "\n")
        f.write('{"not": "an event"}\n')
    Spool(path).append(good[1:])
    target = MemoryEventStore()
    done = recover_spool(path, target)
    assert [e.event_id for e in target.read("deep")] == [e.event_id for e in good]
    assert done.events == 3 and done.bad_lines == (2, 3) and not done.removed
    kept = path.read_text(encoding="utf-8").splitlines()
    assert kept == [DEEP_LINE, '{"not": "an event"}']  # only the bad lines are left
    assert read_spool(path) == []


def test_cli_recover_names_a_deep_line_without_a_traceback(tmp_path: Path) -> None:
    """`runjournal recover` stores the good events and names the deep line by its number."""
    path = tmp_path / "spool.jsonl"
    Spool(path).append([ev(thread_id="deep")])
    with path.open("a", encoding="utf-8") as f:
        f.write(DEEP_LINE + "\n")
    done = run_cli("recover", path, "--store", f"sqlite:///{tmp_path / 'r.db'}", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["recovered"] == 1 and report["bad_lines"] == [2] and not report["removed"]
    assert "line 2" in done.stderr


def test_cli_import_names_a_deep_line_without_a_traceback(tmp_path: Path) -> None:
    """`runjournal import` of a too-deep line is a one-line error naming the line."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(ev(thread_id="x").model_dump(mode="json")) + "\n" + DEEP_LINE)
    done = run_cli("import", path, "--store", f"sqlite:///{tmp_path / 'i.db'}")
    assert_user_error(done, "line 2")


def test_spool_counts_are_exact_when_the_file_size_limit_is_hit(tmp_path: Path) -> None:
    """With a file-size limit mid-spool, recovered == spooled and spooled + dropped == made."""
    path = tmp_path / "spool.jsonl"
    script = textwrap.dedent(
        f"""
        import resource
        from journal import RunJournal
        from tests.flaky_stores import FlakyStore
        from tests.test_run_journal_failures import run_agent
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))
        journal = RunJournal(FlakyStore(down=True), spool_path={str(path)!r},
                             retry_delays=(0.01,), max_batch=40)
        for n in range(6):
            run_agent(journal, thread=f"t{{n}}")
        journal.close()
        print(journal.spooled_events, journal.dropped_events)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    spooled, dropped = map(int, done.stdout.strip().splitlines()[-1].split())
    assert dropped > 0
    target = MemoryEventStore()
    report = recover_spool(path, target)
    assert report.events == spooled
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "healthy.jsonl") as healthy:
        run_agent(healthy)
    assert spooled + dropped == 6 * len(store.read("t1"))


class _HeldStore(MemoryEventStore):
    """A memory store whose appends wait until ``go`` is set (``entered`` says one is waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    def append(self, events: Any) -> list[Any]:
        self.entered.set()
        assert self.go.wait(30), "the test never let the append go on"
        return super().append(events)


def test_a_slow_recovery_never_cuts_a_newer_spool_file_of_the_same_inode(tmp_path: Path) -> None:
    """A recovery that outlives its file (stored and deleted by another recovery, the path then
    spooled to anew, on the inode the old file had) removes nothing of the new file."""
    path = tmp_path / "spool.jsonl"
    old = [ev(thread_id="old", content="x" * 60) for _ in range(10)]
    Spool(path).append(old)
    slow, fast = _HeldStore(), MemoryEventStore()
    done: list[SpoolReplay] = []
    recovery = threading.Thread(target=lambda: done.append(recover_spool(path, slow)))
    recovery.start()
    try:
        assert slow.entered.wait(30)  # the slow recovery has read the file and is storing it
        inode = tmp_path / "inode"
        os.link(path, inode)  # holds the inode, for the new file to have it for sure
        assert recover_spool(path, fast).removed  # another one stored it all and deleted it
        os.truncate(inode, 0)
        os.link(inode, path)  # the path's new, empty file, on the old inode (as ext4 may do)
        new = [ev(thread_id="new", content="y" * 60) for _ in range(20)]
        Spool(path).append(new)  # a journal spools again
    finally:
        slow.go.set()
        recovery.join(30)
    assert done and done[0].events == len(old)
    assert [e.event_id for e in read_spool(path)] == [e.event_id for e in new]


_APP = textwrap.dedent(
    """
    import sys
    from journal import RunJournal, SqliteEventStore
    from tests.test_run_journal_failures import run_agent
    store = SqliteEventStore(sys.argv[1], busy_timeout=0.05, retry_deadline=0.2)
    journal = RunJournal(store, retry_delays=(0.01,), close_timeout=0.5)  # the default spool
    run_agent(journal, thread=sys.argv[2])
    journal.close()
    print(journal.spooled_events, journal.spool.path)
    """
)


def _app(cwd: Path, db: Path, thread: str) -> tuple[int, Path]:
    """Run one journaled agent in a process of its own in ``cwd``: spooled count, spool."""
    done = subprocess.run(
        [sys.executable, "-c", _APP, str(db), thread],
        cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    spooled, spool = done.stdout.split()
    return int(spooled), cwd / spool  # (an absolute spool path stays as it is)


def test_journals_of_two_stores_in_one_directory_never_take_each_others_spool(
    tmp_path: Path,
) -> None:
    """App A spools at exit while its store is locked; app B, on its own store in the same
    working directory, stores only its own events; A, started again, gets its events back."""
    a_db, b_db = tmp_path / "a.db", tmp_path / "b.db"
    for db in (a_db, b_db):
        SqliteEventStore(db).close()
    holder = sqlite3.connect(a_db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # A's store is down while A runs
    try:
        spooled, a_spool = _app(tmp_path, a_db, "a-thread")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert spooled > 0 and a_spool.exists()
    _app(tmp_path, b_db, "b-thread")
    with SqliteEventStore(b_db) as b:
        assert [t.thread_id for t in b.list_threads()] == ["b-thread"]
    assert a_spool.exists()  # A's events wait for A
    _app(tmp_path, a_db, "a-thread-2")  # A again: its journal replays its spool first
    with SqliteEventStore(a_db) as a:
        counts = {t.thread_id: t.event_count for t in a.list_threads()}
    assert counts == {"a-thread": spooled, "a-thread-2": counts["a-thread-2"]}
    assert not a_spool.exists()
