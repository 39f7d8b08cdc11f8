"""An idle journal's writer thread sleeps: it woke every ``flush_interval`` for nothing.

A process that keeps a ``RunJournal`` between runs (a server) paid a wake-up of the writer
thread, its locks and a look at the spool, ten times a second forever. The writer now sleeps
while nothing is queued and nothing spooled waits for the store, and the first event after an
idle spell still reaches the store within the interval, without a flush.

Each writer also registered its own exit hook, which stayed after its journal closed: a
process that makes a journal per request kept one for every journal it ever made. One hook
now closes the writers still open at exit.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from journal import RunJournal, SqliteEventStore, _writer
from tests.fakes import ScriptedChatModel, ai, call
from tests.flaky_stores import FlakyStore

INTERVAL = 0.02


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run_agent(journal: RunJournal, thread: str) -> None:
    """One agent run with a tool round, journaled into ``thread``."""
    agent = create_agent(ScriptedChatModel([ai("", call("add", a=1, b=2)), ai("3")]), [add])
    agent.invoke(
        {"messages": [HumanMessage("1+2?")]},
        {"configurable": {"thread_id": thread}, "callbacks": [journal]},
    )


def count_drains(journal: RunJournal) -> list[int]:
    """A counter of the writer's drains (each wake-up of its loop drains once)."""
    writer = journal._writer
    drain = writer._drain
    drains = [0]

    def counted() -> None:
        drains[0] += 1
        drain()

    writer._drain = counted  # type: ignore[method-assign]
    return drains


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_an_idle_writer_does_not_wake_and_the_next_run_is_written_without_a_flush(
    tmp_path: Path,
) -> None:
    """Between runs the writer does not wake; the next run reaches the store on its own."""
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)
    run_agent(journal, "first")
    assert journal.flush(10)
    drains = count_drains(journal)
    time.sleep(20 * INTERVAL)  # idle: every interval was a wake-up and a drain before
    assert drains[0] == 0
    run_agent(journal, "second")  # no flush: the interval writes it
    assert wait_until(lambda: bool(store.read("second")), 5)
    types = [e.event_type for e in store.read("second")]
    assert types[0] == "run.start" and types[-1] == "run.end"
    assert drains[0] >= 1
    assert journal.close()
    store.close()


def test_an_idle_writer_still_replays_its_spool_when_the_store_comes_back(
    tmp_path: Path,
) -> None:
    """Spooled events that wait for the store keep the writer retrying while idle."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(
        store, spool_path=spool, flush_interval=INTERVAL, retry_delays=(0.01, 0.01)
    )
    run_agent(journal, "t1")
    assert journal.flush(10)
    assert journal.spooled_events > 0 and store.inner.read("t1") == []
    store.down = False  # nothing more is queued: only the idle writer's retries replay it
    assert wait_until(lambda: bool(store.inner.read("t1")), 10)
    assert [e.event_type for e in store.inner.read("t1")][-1] == "run.end"
    assert wait_until(lambda: not spool.exists(), 5)
    assert journal.close()


def test_closed_journals_leave_no_exit_hook_behind(tmp_path: Path) -> None:
    """A journal per request, each closed: no exit hook and no writer kept for any of them
    (each journal registered one that stayed for the life of the process)."""
    hooks = atexit._ncallbacks()
    store = SqliteEventStore(tmp_path / "j.db")
    for request in range(20):
        journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)
        run_agent(journal, f"request-{request}")
        assert journal.close()
        assert journal._writer not in _writer._RUNNING.values()
    assert atexit._ncallbacks() <= hooks + 1  # (the one hook of all writers, if none ran before)
    assert all(len(store.read(f"request-{r}")) > 0 for r in range(20))
    store.close()


#: What a process of :func:`run_in_a_process` has: ``run(journal, thread)``, an agent run.
_PROCESS_PRELUDE = (
    "from langchain.agents import create_agent\n"
    "from langchain_core.messages import HumanMessage\n"
    "from journal import RunJournal, SqliteEventStore\n"
    "from tests.fakes import ScriptedChatModel, ai\n"
    "def run(journal, thread):\n"
    "    create_agent(ScriptedChatModel([ai('hi')]), []).invoke(\n"
    "        {'messages': [HumanMessage('x')]},\n"
    "        {'callbacks': [journal], 'configurable': {'thread_id': thread}})\n"
)


def run_in_a_process(body: str) -> None:
    """Run ``body`` (after :data:`_PROCESS_PRELUDE`) in a second Python process to its exit."""
    root = Path(__file__).resolve().parent.parent
    script = _PROCESS_PRELUDE + body
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True, timeout=120)


def test_the_exit_writes_every_journal_left_open_and_none_closed(tmp_path: Path) -> None:
    """At the interpreter's exit, every journal still open writes what it queued."""
    run_in_a_process(
        "journals = []\n"
        "for name in ('a', 'b', 'c'):\n"
        f"    db = {str(tmp_path)!r} + f'/{{name}}.db'\n"
        "    journal = RunJournal(SqliteEventStore(db), spool_path=db + '.spool')\n"
        "    run(journal, name)\n"
        "    journals.append(journal)\n"
        "assert journals[1].close()\n"
        "run(journals[1], 'b-after-close')\n"  # refused: a closed journal queues nothing
    )
    for name in ("a", "b", "c"):
        store = SqliteEventStore(tmp_path / f"{name}.db")
        types = [e.event_type for e in store.read(name)]
        assert types[0] == "run.start" and types[-1] == "run.end", name
        assert store.read("b-after-close") == []
        store.close()


def test_the_exit_writes_before_a_store_close_registered_after_an_earlier_journal(
    tmp_path: Path,
) -> None:
    """A store's ``close`` registered at exit after a first journal came and went, then a
    journal on that store left open: the exit writes its events to the store before closing
    it (the one exit hook, registered at the first journal's start, ran after the store's
    close, and the events went to the spool)."""
    run_in_a_process(
        "import atexit\n"
        f"d = {str(tmp_path)!r}\n"
        "first = SqliteEventStore(d + '/first.db')\n"
        "journal = RunJournal(first, spool_path=d + '/first.spool')\n"
        "run(journal, 'first')\n"
        "assert journal.close()\n"
        "first.close()\n"
        "store = SqliteEventStore(d + '/app.db')\n"
        "atexit.register(store.close)\n"
        "journal = RunJournal(store, spool_path=d + '/app.spool')\n"
        "run(journal, 'app')\n"
    )
    store = SqliteEventStore(tmp_path / "app.db")
    types = [e.event_type for e in store.read("app")]
    store.close()
    assert types[0] == "run.start" and types[-1] == "run.end"
    assert not (tmp_path / "app.spool").exists() or not (tmp_path / "app.spool").read_text()


def test_a_journal_starts_where_the_interpreter_does_not_count_its_exit_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CPython's count of exit hooks the hook is registered at each start instead."""
    monkeypatch.delattr(atexit, "_ncallbacks")
    registered: list[object] = []
    register = atexit.register
    monkeypatch.setattr(atexit, "register", lambda f: registered.append(f) or register(f))
    store = SqliteEventStore(tmp_path / "j.db")
    for request in range(2):
        journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=INTERVAL)
        run_agent(journal, f"request-{request}")
        assert journal.close()
    assert registered == [_writer._close_at_exit] * 2
    assert all(store.read(f"request-{r}") for r in range(2))
    store.close()
