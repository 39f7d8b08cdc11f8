"""RunJournal when the store fails: retries without duplicates, the spool, bounded buffer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from journal import (
    MemoryEventStore,
    RunEvent,
    RunEventStore,
    RunJournal,
    SqliteEventStore,
    replay_spool,
)
from journal.errors import StoreUnavailableError
from journal.spool import read_spool
from tests.fakes import ScriptedChatModel, ai, call, event_types
from tests.flaky_stores import FlakyStore
from tests.logs import capture_logs

FAST_RETRY = (0.01, 0.01, 0.02, 0.05)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run_agent(journal: RunJournal, thread: str = "t1", question: str = "hi") -> None:
    """One agent run with two tool rounds, journaled into ``thread``."""
    model = ScriptedChatModel(
        [ai("", call("add", a=1, b=2)), ai("", call("add", a=3, b=4)), ai("done")]
    )
    agent = create_agent(model, [add])
    agent.invoke(
        {"messages": [HumanMessage(question)]},
        {"configurable": {"thread_id": thread}, "callbacks": [journal]},
    )


def shape(events: list[Any]) -> list[tuple[str, str, Any]]:
    """What must match between two equivalent runs: types and message contents, not ids."""
    out = []
    for e in events:
        content = e.content["data"]["content"] if e.category == "message" else None
        out.append((e.category, e.event_type, content))
    return out


def healthy_events(tmp_path: Path) -> list[RunEvent]:
    """The events of the same run on a store that never fails."""
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "healthy.jsonl") as journal:
        run_agent(journal)
    return store.read("t1")


def assert_gap_free_unique(store: RunEventStore, thread: str = "t1") -> list[RunEvent]:
    """Seqs are 1..N and no event_id is stored twice; return the events."""
    stored = store.read(thread)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert len({e.event_id for e in stored}) == len(stored)
    return stored


def test_first_writes_fail_then_recover(tmp_path: Path) -> None:
    """Failing first writes (committed before failing) are retried: nothing lost or doubled."""
    store = FlakyStore(fail_first=3, commit_then_fail=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(store, spool_path=spool, retry_delays=FAST_RETRY, max_batch=4)
    run_agent(journal)
    assert journal.flush(10)
    journal.close()
    assert store.attempts > 3
    stored = assert_gap_free_unique(store)
    assert shape(stored) == shape(healthy_events(tmp_path))
    assert not spool.exists() and journal.spooled_events == 0
    assert stored[-1].content["dropped_events"] == 0


def test_store_down_whole_run_spools_everything(tmp_path: Path) -> None:
    """With the store down, the run succeeds and the spool replays into the healthy events."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(store, spool_path=spool, retry_delays=FAST_RETRY)
    run_agent(journal)  # must not raise
    assert journal.flush(10)
    journal.close()
    assert store.inner.read("t1") == []
    spooled = read_spool(spool)
    assert len(spooled) == journal.spooled_events > 0
    target = MemoryEventStore()
    assert replay_spool(spool, target, remove=False) == len(spooled)
    assert replay_spool(spool, target) == len(spooled)  # idempotent: a second replay adds nothing
    replayed = assert_gap_free_unique(target)
    assert shape(replayed) == shape(healthy_events(tmp_path))
    assert [e.event_id for e in replayed] == [e.event_id for e in spooled]
    assert not spool.exists()


def test_spooled_thread_keeps_order_until_replayed(tmp_path: Path) -> None:
    """Once a thread spools, its later events never overtake the spooled ones."""
    store = FlakyStore(down=True)
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", retry_delays=FAST_RETRY)
    run_agent(journal, question="first")
    assert journal.flush(10)
    store.down = False  # the store is back, but the thread's first run is still spooled
    run_agent(journal, question="second")
    assert journal.flush(10)
    assert journal.replay_spool(10) <= journal.spooled_events  # whatever is still spooled
    run_agent(journal, question="third")  # after the replay: straight to the store
    journal.close()
    stored = assert_gap_free_unique(store)
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["first", "second", "third"]
    stamps = [e.created_at for e in stored]
    assert stamps == sorted(stamps)


def test_full_buffer_drops_are_counted(tmp_path: Path) -> None:
    """A full buffer drops events, and every event is stored, spooled or counted as dropped."""
    store = FlakyStore(down=True)
    spool = tmp_path / "spool.jsonl"
    journal = RunJournal(store, spool_path=spool, retry_delays=(0.3,), max_batch=1, max_buffer=2)
    with capture_logs() as logs:
        run_agent(journal)
        assert journal.flush(10)
        journal.close()
    dropped_logs = [entry for entry in logs if entry["event"] == "journal_event_dropped"]
    assert len(dropped_logs) == journal.dropped_events
    healthy = len(healthy_events(tmp_path))
    spooled = read_spool(spool)
    assert journal.dropped_events > 0
    # the state order a fresh journal queues at a thread's first state is written only for a
    # thread stored before (not the healthy run's): dropped here, it counts as a drop too
    orders = sum(1 for entry in dropped_logs if entry["event_type"] == "message.remove")
    assert len(spooled) + journal.dropped_events - orders == healthy
    ends = [e for e in spooled if e.event_type == "run.end"]
    if ends:  # when run.end itself was kept, it reports the drops known by then
        assert ends[0].content["dropped_events"] > 0


def test_queued_events_are_written_at_interpreter_exit(tmp_path: Path) -> None:
    """A process that ends without flush or close still writes its journal (atexit)."""
    db = tmp_path / "exit.db"
    script = (
        "from langchain.agents import create_agent\n"
        "from langchain_core.messages import HumanMessage\n"
        "from journal import RunJournal, SqliteEventStore\n"
        "from tests.fakes import ScriptedChatModel, ai\n"
        f"journal = RunJournal(SqliteEventStore({str(db)!r}), spool_path={str(db)!r} + '.spool')\n"
        "create_agent(ScriptedChatModel([ai('hi')]), []).invoke(\n"
        "    {'messages': [HumanMessage('x')]},\n"
        "    {'callbacks': [journal], 'configurable': {'thread_id': 'exit'}},\n"
        ")\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True, timeout=120)
    store = SqliteEventStore(db)
    assert event_types(store.read("exit")) == [
        "run.start",
        "message.human",
        "llm.start",
        "llm.end",
        "message.ai",
        "run.end",
    ]
    store.close()


def test_replay_spool_after_close_writes_the_spool(tmp_path: Path) -> None:
    """replay_spool() on a closed journal still replays its spool into the store."""
    store = FlakyStore(down=True)
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl", retry_delays=FAST_RETRY)
    run_agent(journal)
    journal.close(10)
    store.down = False
    assert journal.replay_spool(10) == journal.spooled_events > 0
    assert_gap_free_unique(store)
    assert event_types(store.read("t1"), "lifecycle") == ["run.start", "run.end"]


class _DownForReadsToo(FlakyStore):
    """A ``FlakyStore`` whose reads fail too while it is down (a real outage)."""

    def _read(self, *args: Any) -> list[RunEvent]:
        if self.down:
            raise StoreUnavailableError("the store is down")
        return super()._read(*args)


def test_history_resent_after_a_restart_during_an_outage_is_not_doubled(tmp_path: Path) -> None:
    """Inputs resent by a journal restarted while the store is down are stored once on replay."""
    store = _DownForReadsToo()
    agent = create_agent(ScriptedChatModel([ai("a1"), ai("a2")]), [])
    cfg: Any = {"configurable": {"thread_id": "t1"}}
    with RunJournal(store, spool_path=tmp_path / "a.jsonl") as first:
        history = agent.invoke({"messages": [HumanMessage("q1")]}, {**cfg, "callbacks": [first]})
    store.down = True
    journal = RunJournal(store, spool_path=tmp_path / "b.jsonl", retry_delays=FAST_RETRY)
    inputs = {"messages": [*history["messages"], HumanMessage("q2")]}
    agent.invoke(inputs, {**cfg, "callbacks": [journal]})
    assert journal.flush(10)
    store.down = False
    journal.replay_spool(10)
    journal.close()
    stored = assert_gap_free_unique(store)
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["q1", "q2"]
