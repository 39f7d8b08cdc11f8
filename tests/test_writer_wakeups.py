"""The writer's thread sleeps while its journal is idle: nothing queued may wait for a flush.

An idle writer sleeps until the next event (:mod:`journal._writer`). Whatever gives it work
while it sleeps, or just as it falls asleep, must still reach the store on its own, within a
few intervals: runs of several threads at once and of an event loop's tasks, after idle spells
and with batches that fill up; an answer whose node keeps running (written unsettled after
``SETTLE_LIMIT``); a thread's runs spooled while the store is down (replayed, in their order,
once it is back). A flush or close from another thread returns at once, and a process that
exits without either keeps what it queued after an idle spell.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph

from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from journal._writer import SETTLE_LIMIT
from journal.spool import read_spool
from tests.fakes import ScriptedChatModel, ai, call, event_types
from tests.flaky_stores import FlakyStore

INTERVAL = 0.02
#: Long enough for an idle writer to have fallen asleep (many intervals).
IDLE = 10 * INTERVAL
#: The types of one :func:`agent` run.
RUN = [
    "run.start",
    "message.human",
    "llm.start",
    "llm.end",
    "message.ai",
    "tool.start",
    "tool.end",
    "message.tool",
    "llm.start",
    "llm.end",
    "message.ai",
    "run.end",
]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent() -> Any:
    """An agent whose run has one tool round."""
    return create_agent(ScriptedChatModel([ai("", call("add", a=1, b=2)), ai("3")]), [add])


def config(journal: RunJournal, thread: str) -> Any:
    """The run config of ``thread``, journaled."""
    return {"configurable": {"thread_id": thread}, "callbacks": [journal]}


def wait_until(condition: Callable[..., bool], *args: Any, seconds: float = 5.0) -> bool:
    """Whether ``condition(*args)`` holds within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition(*args):
            return True
        time.sleep(0.01)
    return condition(*args)


def stored(store: RunEventStore, thread: str, types: list[str]) -> bool:
    """Whether ``thread`` holds events of exactly ``types``, in order."""
    return event_types(store.read(thread)) == types


def counted(store: RunEventStore, thread: str, event_type: str, count: int) -> bool:
    """Whether ``thread`` holds ``count`` events of ``event_type``."""
    return event_types(store.read(thread)).count(event_type) == count


def spooled_runs(spool: Path, count: int) -> bool:
    """Whether ``spool`` holds ``count`` whole runs."""
    return event_types(read_spool(spool)).count("run.end") == count


def runs_stored(store: RunEventStore, threads: list[str], runs: int = 1) -> bool:
    """Whether every thread of ``threads`` holds ``runs`` whole runs."""
    return all(event_types(store.read(t)) == RUN * runs for t in threads)


def run_at_once(journal: RunJournal, threads: list[str]) -> list[BaseException]:
    """Run :func:`agent` in each of ``threads`` at once, each in an OS thread; the errors."""
    start = threading.Barrier(len(threads))
    errors: list[BaseException] = []

    def run(thread: str) -> None:
        try:
            start.wait(10)
            agent().invoke({"messages": [HumanMessage("1+2?")]}, config(journal, thread))
        except BaseException as e:  # pragma: no cover - reported by the caller
            errors.append(e)

    workers = [threading.Thread(target=run, args=(t,)) for t in threads]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return errors


@pytest.mark.parametrize("max_batch", [500, 5])
def test_runs_of_several_threads_after_idle_spells_are_written_without_a_flush(
    tmp_path: Path, max_batch: int
) -> None:
    """Threads that start their runs together, just as the writer falls asleep or while it
    sleeps, are all written within seconds, in order, whether batches fill up or not."""
    store = MemoryEventStore()
    journal = RunJournal(
        store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL, max_batch=max_batch
    )
    for cycle in range(12):
        threads = [f"c{cycle}-{n}" for n in range(4)]
        assert run_at_once(journal, threads) == []
        assert wait_until(runs_stored, store, threads), cycle  # no flush
        time.sleep(IDLE * (cycle % 3) / 2)  # 0, half and a whole idle spell
    assert journal.close()
    assert journal.dropped_events == 0 and journal.spooled_events == 0


def test_a_run_still_going_after_an_idle_spell_is_written_by_the_interval(
    tmp_path: Path,
) -> None:
    """The first events after an idle spell reach the store within a few intervals, while
    their run still goes (not when it ends and wakes the writer), and so do the next ones."""
    store = MemoryEventStore()
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)
    gates = [threading.Event() for _ in range(6)]  # one a tool call, opened by the test

    @tool
    def wait(gate: int) -> int:
        """Wait to be let through ``gate``."""
        gates[gate].wait(30)
        return gate

    for cycle in range(3):
        thread = f"t{cycle}"
        first, second = 2 * cycle, 2 * cycle + 1
        model = ScriptedChatModel(
            [ai("", call("wait", gate=first)), ai("", call("wait", gate=second)), ai("done")]
        )
        time.sleep(IDLE)  # the writer sleeps
        runner = threading.Thread(
            target=create_agent(model, [wait]).invoke,
            args=({"messages": [HumanMessage("x")]}, config(journal, thread)),
        )
        runner.start()
        try:
            for rounds, gate in enumerate((first, second), 1):  # a tool call waits meanwhile
                assert wait_until(counted, store, thread, "tool.start", rounds), cycle
                assert runner.is_alive()
                gates[gate].set()
        finally:
            gates[first].set()
            gates[second].set()
            runner.join(30)
        assert wait_until(stored, store, thread, [*RUN[:5], *RUN[5:11] * 2, "run.end"])
    assert journal.close()


def test_async_runs_after_an_idle_spell_are_written_without_a_flush(tmp_path: Path) -> None:
    """Runs of an event loop's tasks at once after the writer fell asleep are all written."""
    store = MemoryEventStore()
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)

    async def runs(threads: list[str]) -> None:
        await asyncio.gather(
            *(
                agent().ainvoke({"messages": [HumanMessage("1+2?")]}, config(journal, t))
                for t in threads
            )
        )

    for cycle in range(4):
        threads = [f"a{cycle}-{n}" for n in range(4)]
        asyncio.run(runs(threads))
        assert wait_until(runs_stored, store, threads), cycle  # no flush
        time.sleep(IDLE)
    assert journal.close()


def test_flush_and_close_of_an_idle_journal_from_another_thread_return_at_once(
    tmp_path: Path,
) -> None:
    """A sleeping writer wakes for a flush and a close (close would wait close_timeout)."""
    store = MemoryEventStore()
    journal = RunJournal(
        store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL, close_timeout=30
    )
    agent().invoke({"messages": [HumanMessage("1+2?")]}, config(journal, "t1"))
    answers: list[tuple[str, bool, float]] = []

    def timed(name: str, call: Callable[[float], bool]) -> None:
        began = time.monotonic()
        answers.append((name, call(30), time.monotonic() - began))

    for name, method in [("flush", journal.flush), ("flush", journal.flush),
                         ("close", journal.close)]:  # fmt: skip
        time.sleep(IDLE)  # the writer sleeps
        other = threading.Thread(target=timed, args=(name, method))
        other.start()
        other.join(40)
    assert [(name, ok) for name, ok, _ in answers] == [
        ("flush", True),
        ("flush", True),
        ("close", True),
    ]
    assert max(seconds for _, _, seconds in answers) < 3, answers
    assert event_types(store.read("t1")) == RUN


def test_an_unsettled_answer_is_written_while_its_node_still_runs(tmp_path: Path) -> None:
    """After an idle spell, an answer whose node has not ended (its ``llm.end`` waits to be
    settled) is written unsettled after ``SETTLE_LIMIT``, while the node still runs; the
    rest of the run follows without a flush."""
    store = MemoryEventStore()
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)
    model = ScriptedChatModel([ai("first"), ai("second")])
    release = threading.Event()

    def reply(state: MessagesState) -> dict[str, Any]:
        answer = model.invoke(state["messages"])
        release.wait(30)  # the warm-up's node ends at once, the run's when released
        return {"messages": [answer]}

    graph = StateGraph(MessagesState).add_node("reply", reply)
    graph = graph.add_edge(START, "reply").add_edge("reply", END).compile()
    release.set()
    graph.invoke({"messages": [HumanMessage("warm up")]}, config(journal, "warm"))
    assert wait_until(counted, store, "warm", "run.end", 1)
    release.clear()
    time.sleep(IDLE)  # the writer sleeps
    runner = threading.Thread(
        target=graph.invoke, args=({"messages": [HumanMessage("x")]}, config(journal, "t1"))
    )
    began = time.monotonic()
    runner.start()
    try:
        assert wait_until(counted, store, "t1", "llm.end", 1, seconds=SETTLE_LIMIT + 5)
        assert time.monotonic() - began >= SETTLE_LIMIT * 0.9  # it waited to be settled
        assert runner.is_alive()  # written while its node still runs
        end = next(e for e in store.read("t1") if e.event_type == "llm.end")
        assert end.content["output"]["data"]["content"] == "second"  # kept here
    finally:
        release.set()
        runner.join(30)
    assert wait_until(counted, store, "t1", "run.end", 1)
    assert journal.close()


def test_a_thread_spooled_while_idle_is_replayed_in_order_when_the_store_is_back(
    tmp_path: Path,
) -> None:
    """Two runs of a thread spooled while the store is down (the writer idle in between) are
    replayed in their order once it is back, and a third run follows them, all without a
    flush."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(
        store, spool_path=spool, flush_interval=INTERVAL, retry_delays=(0.01, 0.01)
    )
    for count, question in enumerate(["one", "two"], 1):
        agent().invoke({"messages": [HumanMessage(question)]}, config(journal, "t1"))
        assert wait_until(spooled_runs, spool, count)  # no flush
        time.sleep(IDLE)  # idle while the spool waits
    assert store.inner.read("t1") == []
    spooled = journal.spooled_events
    store.down = False
    assert wait_until(counted, store.inner, "t1", "run.end", 2, seconds=10)  # idle retry
    assert wait_until(lambda: not spool.exists())
    assert len(store.inner.read("t1")) == spooled  # nothing lost, nothing doubled
    time.sleep(IDLE)
    agent().invoke({"messages": [HumanMessage("three")]}, config(journal, "t1"))
    assert wait_until(counted, store.inner, "t1", "run.end", 3)
    stored = store.inner.read("t1")
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["one", "two", "three"]
    assert journal.spooled_events == spooled
    assert journal.close() and journal.dropped_events == 0


EXIT_SCRIPT = """
import sys, time
from langchain_core.messages import HumanMessage
from journal import RunJournal, SqliteEventStore
from tests.test_writer_wakeups import INTERVAL, IDLE, agent, config

db, end = sys.argv[1:]
journal = RunJournal(SqliteEventStore(db), spool_path=db + ".spool", flush_interval=INTERVAL,
                     close_timeout=30)
agent().invoke({"messages": [HumanMessage("1+2?")]}, config(journal, "first"))
time.sleep(IDLE)  # the writer sleeps
agent().invoke({"messages": [HumanMessage("1+2?")]}, config(journal, "second"))
if end == "idle":
    time.sleep(IDLE)  # it sleeps again
"""


@pytest.mark.parametrize("end", ["at-once", "idle"])
def test_a_process_that_exits_after_an_idle_spell_keeps_its_last_run(
    tmp_path: Path, end: str
) -> None:
    """A process whose journal was idle, then ran once more and exited (at once, or idle
    again) without a flush or a close, stores both runs, and its exit does not wait for a
    sleeping writer."""
    db = tmp_path / "exit.db"
    root = Path(__file__).resolve().parent.parent
    began = time.monotonic()
    script = [sys.executable, "-c", EXIT_SCRIPT, str(db), end]
    subprocess.run(script, cwd=root, check=True, timeout=120)
    assert time.monotonic() - began < 25  # not close_timeout (30 s) at exit
    store = SqliteEventStore(db)
    assert runs_stored(store, ["first", "second"])
    assert not Path(str(db) + ".spool").exists()
    store.close()
