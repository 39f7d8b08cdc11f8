"""One RunJournal shared by concurrent runs: threads, coroutines, and a SQLite store."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import replay
from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call, event_types, journaled_message_ids
from tests.flaky_stores import FlakyStore
from tests.logs import capture_logs


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def agent() -> Any:
    """An agent with two rounds of two parallel tool calls, then an answer."""
    script = [
        ai("", call("shout", text="a"), call("shout", text="b")),
        ai("", call("shout", text="c"), call("shout", text="d")),
        ai("done"),
    ]
    return create_agent(ScriptedChatModel(script), [shout], checkpointer=InMemorySaver())


def cfg(journal: RunJournal, thread: str) -> Any:
    """A config journaled into ``thread``."""
    return {"configurable": {"thread_id": thread}, "callbacks": [journal]}


def run_on_threads(journal: RunJournal, graphs: dict[str, Any], workers: int) -> None:
    """Run every graph once on its own thread id, ``workers`` OS threads at a time."""
    with ThreadPoolExecutor(workers) as pool:
        list(
            pool.map(
                lambda t: graphs[t].invoke({"messages": [HumanMessage(t)]}, cfg(journal, t)),
                graphs,
            )
        )


def check_thread(store: RunEventStore, graph: Any, journal: RunJournal, thread: str) -> None:
    """The thread's journal matches its state and has one clean run."""
    stored = store.read(thread)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert event_types(stored, "lifecycle") == ["run.start", "run.end"]
    state = graph.get_state(cfg(journal, thread)).values["messages"]
    assert journaled_message_ids(stored) == [m.id for m in state]
    assert [m.id for m in replay(store, thread, view="state")] == [m.id for m in state]
    assert len({e.run_id for e in stored}) == 1


def test_concurrent_sync_runs_share_one_journal(tmp_path: Path) -> None:
    """Eight runs on OS threads through one journal each journal exactly their own events."""
    store = MemoryEventStore()
    threads = [f"t{i}" for i in range(8)]
    graphs = {t: agent() for t in threads}
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        run_on_threads(journal, graphs, 4)
        assert journal.flush(10)
        for thread in threads:
            check_thread(store, graphs[thread], journal, thread)


async def test_concurrent_async_runs_share_one_journal(tmp_path: Path) -> None:
    """Eight concurrent ainvoke runs through one journal, without blocking the event loop."""
    store = MemoryEventStore()
    threads = [f"t{i}" for i in range(8)]
    graphs = {t: agent() for t in threads}
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    with blockbuster_ctx():
        await asyncio.gather(
            *(graphs[t].ainvoke({"messages": [HumanMessage(t)]}, cfg(journal, t)) for t in threads)
        )
        assert await journal.aflush(10)
        await journal.aclose(10)
    for thread in threads:
        check_thread(store, graphs[thread], journal, thread)


def test_sqlite_store_with_graph_level_callbacks(tmp_path: Path) -> None:
    """Attached once with with_config, the journal writes every run into SQLite."""
    store = SqliteEventStore(tmp_path / "journal.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    graph = agent()
    attached = graph.with_config(callbacks=[journal])
    attached.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "s1"}})
    journal.close(10)
    stored = store.read("s1")
    assert event_types(stored, "message") == ["message.human"] + [
        "message.ai",
        "message.tool",
        "message.tool",
    ] * 2 + ["message.ai"]
    state = graph.get_state({"configurable": {"thread_id": "s1"}}).values["messages"]
    assert journaled_message_ids(stored) == [m.id for m in state]
    store.close()


def test_constructor_thread_id_and_config_run_id(tmp_path: Path) -> None:
    """Without thread metadata the constructor's thread is used; config run_id names the run."""
    store = MemoryEventStore()
    journal = RunJournal(store, thread_id="fixed", spool_path=tmp_path / "spool.jsonl")
    model = ScriptedChatModel([ai("hi")])
    graph: Any = create_agent(model, [])
    run_id = "0b4c1d8e-8d2c-4c3e-9c7a-2f4b1a6d9e10"
    graph.invoke({"messages": [HumanMessage("x")]}, {"callbacks": [journal], "run_id": run_id})
    journal.close(10)
    stored = store.read("fixed")
    assert {e.run_id for e in stored} == {run_id}
    assert stored[0].metadata["thread_id_source"] == "constructor"


def test_constructor_rejects_bad_arguments(tmp_path: Path) -> None:
    """Caller mistakes raise TypeError/ValueError naming what to fix."""
    spool = tmp_path / "spool.jsonl"
    with pytest.raises(TypeError, match="RunEventStore"):
        RunJournal("memory://", spool_path=spool)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flush_interval"):
        RunJournal(MemoryEventStore(), spool_path=spool, flush_interval=1.0)
    with pytest.raises(ValueError, match="max_buffer"):
        RunJournal(MemoryEventStore(), spool_path=spool, max_batch=10, max_buffer=5)
    with pytest.raises(ValueError, match="thread_id"):
        RunJournal(MemoryEventStore(), spool_path=spool, thread_id=" padded ")


@pytest.mark.slow
@pytest.mark.parametrize("failures", [4, 6])
def test_stress_many_threads_through_a_flaky_store(tmp_path: Path, failures: int) -> None:
    """Many concurrent runs through a store that fails at first (within the retry budget, or
    beyond it so that batches spool and are replayed): every thread exact, nothing doubled."""
    store = FlakyStore(fail_first=failures, commit_then_fail=True)
    threads = [f"s{i}" for i in range(24)]
    graphs = {t: agent() for t in threads}
    journal = RunJournal(
        store, spool_path=tmp_path / "spool.jsonl", retry_delays=(0.01, 0.02, 0.05, 0.1, 0.2)
    )
    with capture_logs() as logs:
        run_on_threads(journal, graphs, 6)
        assert journal.flush(30)
    spooled = journal.spooled_events
    assert (spooled > 0) == (failures > 5)  # 5 retries absorb up to 5 failures
    # A batch written after the store's cooldown drains the spool first (a slow machine gets
    # there during the runs); what is left, the explicit replay takes: each event once.
    drained = sum(e["count"] for e in logs if e["event"] == "journal_spool_drained")
    assert drained + journal.replay_spool(30) == spooled
    assert journal.close(30)
    assert journal.dropped_events == 0
    for thread in threads:
        check_thread(store, graphs[thread], journal, thread)
        stored = store.read(thread)
        assert len({e.event_id for e in stored}) == len(stored)
        stamps = [e.created_at for e in stored]
        assert stamps == sorted(stamps)
