"""The journal's writer keeps SQLite's WAL checkpoint off the path its callers wait on.

SQLite checkpoints the WAL in the commit that takes it past 1,000 pages: a ``flush()`` or
``close()`` whose last batch was that commit waited for the checkpoint's copy and sync (8-15 ms
on this machine, about one flush in ten of a 200-step run). The writer's appends now commit with
the automatic checkpoint off, and the writer runs it once nothing is queued (or at once after
the commit, when it was never idle for long). Every other write checkpoints as SQLite does.

Each store here checkpoints automatically at 10 pages (not 1,000), so that a few hundred small
events pass the point; a checkpoint shows as the database file growing (pages copied out of
the WAL).
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

import journal.sqlite
from journal import RunJournal, SqliteEventStore, StoreError
from journal._sqlite_conn import ConnectionPool
from journal.testing import ev
from tests.fakes import ScriptedChatModel, ai, call
from tests.logs import capture_logs

_PAGES = 10  # the automatic checkpoint of every connection of these stores


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A SQLite store whose connections checkpoint automatically at ``_PAGES`` pages."""
    opened = ConnectionPool.open

    def open_small(pool: ConnectionPool) -> Any:
        conn = opened(pool)
        conn.execute(f"PRAGMA wal_autocheckpoint = {_PAGES}")
        return conn

    monkeypatch.setattr(ConnectionPool, "open", open_small)
    s = SqliteEventStore(tmp_path / "j.db")
    yield s
    s.close()


def _events(count: int, size: int = 1000) -> list[Any]:
    return [ev("t1", content={"i": i, "text": "x" * size}) for i in range(count)]


def _file_size(store: SqliteEventStore) -> int:
    return store.path.stat().st_size


def _autocheckpoints(store: SqliteEventStore) -> list[int]:
    conns = list(store._pool._idle)
    return [int(c.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) for c in conns]


def test_a_direct_append_checkpoints_as_sqlite_does(store: SqliteEventStore) -> None:
    """An application's own append past the point is checkpointed in its commit."""
    before = _file_size(store)
    store.append(_events(200))
    assert _file_size(store) > before + 100_000


def test_the_writers_appends_leave_the_checkpoint_until_it_is_idle(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's appends past the point are not checkpointed in their commit; the writer's
    idle call checkpoints them (all events are readable throughout)."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 50_000)
    before = _file_size(store)
    for _ in range(4):
        store._append_unreturned(_events(50))
    assert _file_size(store) == before  # every page still in the WAL
    assert len(store.read("t1", limit=1000)) == 200
    store._writer_idle()  # (the checkpoint runs on a thread of its own)
    assert _wait_for(lambda: _file_size(store) > before + 100_000)


def test_an_idle_writer_below_the_due_size_leaves_the_wal(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is checkpointed while less than the due size waits (no sync for a handful)."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 10_000_000)
    before = _file_size(store)
    store._append_unreturned(_events(100))
    store._writer_idle()
    assert _file_size(store) == before


def test_an_overdue_checkpoint_runs_right_after_the_commit(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that is never idle still checkpoints: after its commit, once overdue."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 10_000_000)
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_OVERDUE", 120_000)
    before = _file_size(store)
    store._append_unreturned(_events(50))
    assert _file_size(store) == before
    store._append_unreturned(_events(100))  # past 120 kB in all
    assert _file_size(store) > before + 100_000


def test_connections_go_back_with_their_automatic_checkpoint(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection lent to the writer's append goes back checkpointing as before, also when
    the append failed; an application's append on it checkpoints again."""
    store._append_unreturned(_events(10))
    assert _autocheckpoints(store) == [_PAGES]

    def failing(*args: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(journal.sqlite, "append_events", failing)
        with pytest.raises(StoreError):
            store._append_unreturned(_events(10))
    assert _autocheckpoints(store) == [_PAGES]
    before = _file_size(store)
    store.append(_events(200))
    assert _file_size(store) > before + 100_000
    assert len(store.read("t1", limit=1000)) == 210


@tool
def step(n: int) -> int:
    """Return n."""
    return n


def _agent(rounds: int) -> Any:
    script = [ai("", call("step", n=i)) for i in range(rounds)] + [ai("done")]
    return create_agent(ScriptedChatModel(script), [step])


def _config(j: RunJournal, thread: str) -> Any:
    return {"callbacks": [j], "recursion_limit": 200, "configurable": {"thread_id": thread}}


def _wait_for(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_journal_checkpoints_on_its_writer_once_idle(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """After a real run, the WAL's checkpoint is started by the writer thread once nothing is
    queued (it runs on a thread of its own), not inside the flush; every event is stored."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    where: list[str] = []
    idle = SqliteEventStore._writer_idle

    def watched(self: SqliteEventStore) -> None:
        if self._unchecked >= journal.sqlite._CHECKPOINT_DUE:
            where.append(threading.current_thread().name)
        idle(self)

    monkeypatch.setattr(SqliteEventStore, "_writer_idle", watched)
    before = _file_size(store)
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        agent = _agent(20)
        if mode == "sync":
            agent.invoke({"messages": [HumanMessage("go")]}, _config(j, "t"))
            assert j.flush(timeout=10)
        else:

            async def run() -> None:
                await agent.ainvoke({"messages": [HumanMessage("go")]}, _config(j, "t"))
                assert await j.aflush(timeout=10)

            asyncio.run(run())
        assert _wait_for(lambda: _file_size(store) > before)
    assert where and set(where) == {"runjournal-writer"}
    types = [e.event_type for e in store.read("t", limit=1000)]
    assert types[0] == "run.start" and types[-1] == "run.end"
    assert types.count("message.tool") == 20


def test_a_failed_checkpoint_is_logged_and_the_journal_goes_on(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that fails is logged; later runs are journaled in full all the same."""

    def failing(self: SqliteEventStore) -> None:
        raise StoreError("checkpoint failed")

    monkeypatch.setattr(SqliteEventStore, "_writer_idle", failing)
    with capture_logs() as logs, RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        for thread in ("a", "b"):
            _agent(3).invoke({"messages": [HumanMessage("go")]}, _config(j, thread))
            assert j.flush(timeout=10)
        assert _wait_for(lambda: any(e["event"] == "journal_store_upkeep_failed" for e in logs))
    for thread in ("a", "b"):
        types = [e.event_type for e in store.read(thread, limit=100)]
        assert types[-1] == "run.end" and types.count("message.tool") == 3
    assert j.dropped_events == 0 and j.spooled_events == 0


_READER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN")
    print(conn.execute("SELECT count(*) FROM events").fetchone()[0], flush=True)
    sys.stdin.readline()  # holds its snapshot until told
    print(conn.execute("SELECT count(*) FROM events").fetchone()[0], flush=True)
    conn.execute("COMMIT")
    print(conn.execute("SELECT count(*) FROM events").fetchone()[0], flush=True)
    """
)


def test_a_reader_in_another_process_neither_blocks_nor_breaks_the_checkpoint(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding a read snapshot: the writer's checkpoint does what it can
    without waiting, the next runs are stored, and the reader sees them once it reads anew."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        _agent(5).invoke({"messages": [HumanMessage("go")]}, _config(j, "a"))
        assert j.flush(timeout=10)
        stored = len(store.read("a", limit=1000))
        reader = subprocess.Popen(
            [sys.executable, "-c", _READER, str(store.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reader.stdout is not None and reader.stdin is not None
            assert int(reader.stdout.readline()) == stored
            for thread in ("b", "c"):
                _agent(20).invoke({"messages": [HumanMessage("go")]}, _config(j, thread))
                assert j.flush(timeout=10)  # a checkpoint that waited for the reader would not
            reader.stdin.write("go\n")
            reader.stdin.flush()
            assert int(reader.stdout.readline()) == stored  # its snapshot, kept
            total = sum(len(store.read(t, limit=1000)) for t in ("a", "b", "c"))
            assert int(reader.stdout.readline()) == total
        finally:
            reader.kill()
            reader.wait()
