"""How far the WAL grows while the journal's writer leaves its checkpoint for later, and what a
close waits for.

What the WAL grows by is what the commits write: every page a commit changes, a whole page
(4 KiB) each, whatever the size of its events; the few events a commit of a slow run holds
change about eight pages of tables and indexes. So the writer's estimate counts pages a commit,
and the hard bound is SQLite's own count: the writer's connection checkpoints in the commit that
takes the WAL past the overdue size. A close never waits for a checkpoint: none begins once it
has, and one that runs does so on a thread of its own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool

import journal.sqlite
from journal import RunJournal, SqliteEventStore
from journal.testing import ev
from tests.fakes import ScriptedChatModel, ai, call
from tests.logs import capture_logs

_DUE = 64 * 1024  # the due size of these tests (the store's is 4 MiB)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    """A SQLite store as the library opens it, its WAL empty."""
    s = SqliteEventStore(tmp_path / "j.db")
    # the schema's pages out of the WAL, which starts empty: what it holds is the test's
    s._run("empty the WAL", lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    yield s
    s.close()


def _wal_size(store: SqliteEventStore) -> int:
    """The WAL file's size: its high-water mark (SQLite reuses the file from its start after
    a complete checkpoint; it never shrinks it while a connection is open)."""
    wal = store.path.with_name(store.path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@tool
def step(n: int) -> int:
    """Return n."""
    return n


def _slow_agent(rounds: int, seconds: float) -> Any:
    """An agent whose model takes ``seconds`` per call: the writer commits a step at a time."""

    def answer(messages: list[BaseMessage]) -> Any:
        time.sleep(seconds)
        done = sum(1 for m in messages if m.type == "tool")
        return ai("", call("step", n=done)) if done < rounds else ai("done")

    return create_agent(ScriptedChatModel(answer), [step])


def _config(j: RunJournal, thread: str) -> Any:
    return {"callbacks": [j], "recursion_limit": 500, "configurable": {"thread_id": thread}}


def test_a_slow_runs_wal_stays_near_the_due_size(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose model answers slowly (the writer idles between steps and commits a few
    events at a time) checkpoints before its WAL grows far past the due size."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", _DUE)
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_OVERDUE", 4 * _DUE)
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=0.005) as j:
        _slow_agent(40, 0.01).invoke({"messages": [HumanMessage("go")]}, _config(j, "t"))
        assert j.flush(timeout=10)
    assert store.count("t") == 2 + 6 * 40 + 4  # every event stored
    assert _wal_size(store) <= 3 * _DUE  # (the due size, a commit, a restart of the WAL missed)


def test_a_writer_that_is_never_idle_keeps_the_wal_near_the_overdue_size(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends of the writer that is never idle, one small event a commit, checkpoint before
    the WAL grows far past the overdue size."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", _DUE)
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_OVERDUE", 4 * _DUE)
    for i in range(400):
        store._append_unreturned([ev("t", content={"i": i})])
    assert store.count("t") == 400
    assert _wal_size(store) <= 2 * 4 * _DUE


def test_a_close_right_after_a_run_leaves_the_checkpoint(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal closed right after a run (no flush) stores the run without running the due
    checkpoint while close waits: a close does not wait for one."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    checkpoints: list[float] = []  # when a due idle call began
    idle = SqliteEventStore._writer_idle

    def watched(self: SqliteEventStore) -> None:
        if self._unchecked >= journal.sqlite._CHECKPOINT_DUE:
            checkpoints.append(time.monotonic())
        idle(self)

    monkeypatch.setattr(SqliteEventStore, "_writer_idle", watched)
    script = [ai("", call("step", n=i)) for i in range(20)] + [ai("done")]
    j = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    create_agent(ScriptedChatModel(script), [step]).invoke(
        {"messages": [HumanMessage("go")]}, _config(j, "t")
    )
    started = time.monotonic()
    assert j.close()
    ended = time.monotonic()
    assert [t for t in checkpoints if started <= t <= ended] == []
    assert store.read("t", limit=1000)[-1].event_type == "run.end"


def test_a_close_does_not_wait_for_a_running_checkpoint(
    store: SqliteEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``flush()`` then ``close()`` (a ``with`` block's end, a server's shutdown): the close
    returns while the checkpoint that came due with the flush's batch still runs, however slow
    it is (a disk that does not finish its sync until the test lets it)."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    run = SqliteEventStore._run
    began, release = threading.Event(), threading.Event()
    where: list[str] = []

    def held_checkpoint(self: SqliteEventStore, action: str, func: Any) -> Any:
        if action == "checkpoint the WAL":
            where.append(threading.current_thread().name)
            began.set()
            release.wait(10)
        return run(self, action, func)

    monkeypatch.setattr(SqliteEventStore, "_run", held_checkpoint)
    script = [ai("", call("step", n=i)) for i in range(20)] + [ai("done")]
    j = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    create_agent(ScriptedChatModel(script), [step]).invoke(
        {"messages": [HumanMessage("go")]}, _config(j, "t")
    )
    try:
        assert j.flush(timeout=10)
        assert began.wait(10)  # the writer, idle, started it
        assert j.close(timeout=5)
        assert not release.is_set()  # closed while the checkpoint still ran
        assert j.dropped_events == 0 and j.spooled_events == 0
    finally:
        release.set()
    assert set(where) == {"runjournal-sqlite-checkpoint"}
    assert store.read("t", limit=1000)[-1].event_type == "run.end"


def test_a_store_closed_while_its_checkpoint_runs_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``close`` of a store whose idle checkpoint runs returns once it ended, every
    connection closed (the last one removes the WAL), nothing logged."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    run = SqliteEventStore._run

    def slow_checkpoint(self: SqliteEventStore, action: str, func: Any) -> Any:
        if action == "checkpoint the WAL":
            time.sleep(0.2)
        return run(self, action, func)

    monkeypatch.setattr(SqliteEventStore, "_run", slow_checkpoint)
    s = SqliteEventStore(tmp_path / "j.db")
    s._append_unreturned([ev("t", content={"i": i, "text": "x" * 500}) for i in range(100)])
    with capture_logs() as logs:
        s._writer_idle()
        s.close()
    assert not s.path.with_name(s.path.name + "-wal").exists()
    assert [e["event"] for e in logs if e["log_level"] != "debug"] == []
    with SqliteEventStore(s.path) as again:
        assert again.count("t") == 100


def test_a_store_closed_as_its_writer_starts_the_checkpoint_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close on another thread that comes while the writer, idle, starts the due checkpoint
    (its thread made, not yet started) returns without an error, once that checkpoint ended:
    it never sees a checkpoint thread that has not started (``join`` of one raises)."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    starting, closing = threading.Event(), threading.Event()
    made: list[threading.Thread] = []

    class SlowStart(threading.Thread):
        def start(self) -> None:  # the writer between making the thread and starting it
            made.append(self)
            starting.set()
            closing.wait(10)
            time.sleep(0.1)  # the close, on its way, reaches the checkpoint before the start
            super().start()

    s = SqliteEventStore(tmp_path / "j.db")
    s._append_unreturned([ev("t", content={"i": i, "text": "x" * 500}) for i in range(100)])
    idle = threading.Thread(target=s._writer_idle)  # the writer's thread, made before the patch
    monkeypatch.setattr(threading, "Thread", SlowStart)  # the checkpoint's thread (and only it)
    idle.start()
    assert starting.wait(10)
    closing.set()
    s.close()  # raised "cannot join thread before it is started"
    idle.join(10)
    assert made and not made[0].is_alive()  # the close waited for the checkpoint it started
    with SqliteEventStore(s.path) as again:
        assert again.count("t") == 100


def _refusing_one_checkpoint_thread(refused: list[str]) -> type[threading.Thread]:
    """``threading.Thread`` whose first checkpoint thread the OS refuses (``can't start new
    thread``); every other thread starts."""
    real = threading.Thread

    class Refusing(real):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            if self.name == "runjournal-sqlite-checkpoint" and not refused:
                refused.append(self.name)
                raise RuntimeError("can't start new thread")
            super().start()

    return Refusing


def _until(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_checkpoint_thread_the_os_refused_leaves_the_close_and_later_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer, idle, cannot start the due checkpoint's thread (it logs that and goes on,
    as for any upkeep failure): the store's close still closes (it raised "cannot join
    thread before it is started"), and the next due idle call checkpoints (every one was
    skipped: the refused thread stayed the running one)."""
    monkeypatch.setattr(journal.sqlite, "_CHECKPOINT_DUE", 20_000)
    refused: list[str] = []
    monkeypatch.setattr(threading, "Thread", _refusing_one_checkpoint_thread(refused))
    store = SqliteEventStore(tmp_path / "j.db")
    with capture_logs() as logs, RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        script = [ai("", call("step", n=i)) for i in range(20)] + [ai("done")]
        create_agent(ScriptedChatModel(script), [step]).invoke(
            {"messages": [HumanMessage("go")]}, _config(j, "t")
        )
        assert j.flush(timeout=10)
        assert _until(lambda: bool(refused))  # the writer tried to start it
        assert j.dropped_events == 0
    assert "journal_store_upkeep_failed" in [e["event"] for e in logs]
    assert store.read("t", limit=1000)[-1].event_type == "run.end"
    before = store.path.stat().st_size
    store._append_unreturned([ev("t2", content={"i": i, "text": "y" * 500}) for i in range(100)])
    store._writer_idle()  # due again, and threads start now
    assert _until(lambda: store.path.stat().st_size > before)  # pages copied out of the WAL
    store.close()
    with SqliteEventStore(store.path) as again:
        assert again.count("t2") == 100
