"""What the journal's writer reads of a thread's stored state, and when.

A look that finds messages gone, and a tool result a paused run held back, are checked
against what the store holds of the thread (another journal may have journaled them). That
stored state was read once ahead of the writer's batch: the batch's own earlier events were
not in it. A fork that brought a removed message back and a fork that took it out again, in
one batch, left the second fork's removal marker without that message (the store still said
it was out). And every held result was checked, the thread's whole state read, even where
this journal resumed the run itself (no other journal can have stored the result then).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from journal.catalog import REMOVE_EVENT_TYPE
from journal.events import RunEvent
from tests.fakes import ScriptedChatModel

MODES = ["sync", "async"]


class GatedStore(SqliteEventStore):
    """A SQLite store whose appends wait while the gate is shut (``waiting`` is set then)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def append(self, events: Iterable[Any]) -> list[RunEvent]:
        if not self.gate.is_set():
            self.waiting.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super().append(events)


class CountingStore(SqliteEventStore):
    """A SQLite store that records the event types each read asked for."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.asked: list[tuple[str, ...]] = []

    def read(self, thread_id: str, **filters: Any) -> list[RunEvent]:
        self.asked.append(tuple(filters.get("event_type") or ()))
        return super().read(thread_id, **filters)


def forgetful_graph() -> Any:
    """A graph whose node answers, or on "forget" removes the thread's first message."""

    def node(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        if messages[-1].content == "forget":
            return {"messages": [RemoveMessage(id=str(messages[0].id)), AIMessage("forgot")]}
        return {"messages": [AIMessage(f"answer after {len(messages)}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", node)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    return builder.compile(checkpointer=InMemorySaver())


def run(graph: Any, mode: str, value: Any, config: Any) -> Any:
    """One invocation, sync or async."""
    if mode == "async":
        return asyncio.run(graph.ainvoke(value, config))
    return graph.invoke(value, config)


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_removing_what_the_forks_batch_brought_back_lists_it(
    tmp_path: Path, mode: str
) -> None:
    """Two forks written in one batch: q0 comes back with the first (from before its
    removal) and leaves again with the second (from after it): the second fork's removal
    marker lists q0 with the first fork's turn, and replay's state is the graph's."""
    store = GatedStore(tmp_path / "j.db")
    graph = forgetful_graph()
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [journal]}
        run(graph, mode, {"messages": [("user", "q0")]}, config)
        before = graph.get_state(config).config
        run(graph, mode, {"messages": [("user", "forget")]}, config)
        after = graph.get_state(config).config
        assert journal.flush(30)
        store.gate.clear()  # another thread's batch holds the writer up
        other = {"configurable": {"thread_id": "other"}, "callbacks": [journal]}
        run(graph, mode, {"messages": [("user", "hi")]}, other)
        journal.flush(timeout=0)
        assert store.waiting.wait(30)
        run(graph, mode, {"messages": [("user", "q2")]}, {**before, "callbacks": [journal]})
        run(graph, mode, {"messages": [("user", "q3")]}, {**after, "callbacks": [journal]})
        store.gate.set()  # both forks' events are queued: one batch
        assert journal.flush(30)
    state: list[BaseMessage] = graph.get_state({"configurable": {"thread_id": "t"}}).values[
        "messages"
    ]
    assert [m.id for m in replay(store, "t", view="state")] == [m.id for m in state]
    assert verify(store, "t")["ok"]
    by_text = {str(m.content): str(m.id) for m in replay(store, "t", view="full")}
    removals = [
        i["removed_message_ids"]
        for i in build_timeline(store, "t", limit=1000)["items"]
        if i["type"] == "removal_marker"
    ]
    assert removals == [
        [by_text["q0"]],
        [by_text["forget"], by_text["forgot"]],
        [by_text["q0"], by_text["q2"], by_text["answer after 3"]],
    ]


@tool
def ask(text: str) -> str:
    """Answer after asking a human."""
    return f"asked {interrupt(text)}"


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def asking_agent(turns: list[int]) -> Any:
    """An agent whose answer to a question calls ``ask`` and ``add`` in parallel (``add``'s
    result waits for ``ask``'s, which pauses the run), then says done."""

    def answer(messages: list[BaseMessage]) -> AIMessage:
        if messages[-1].type != "human":
            return AIMessage("done")
        turns.append(len(turns))
        calls = [
            {"name": "ask", "args": {"text": "sure?"}, "id": f"ask{turns[-1]}"},
            {"name": "add", "args": {"a": 1, "b": 2}, "id": f"add{turns[-1]}"},
        ]
        return AIMessage("", tool_calls=calls)

    return create_agent(ScriptedChatModel(answer), [ask, add], checkpointer=InMemorySaver())


def state_reads(store: CountingStore) -> int:
    """How many reads asked for the thread's stored state (its removals among them)."""
    return sum(1 for asked in store.asked if REMOVE_EVENT_TYPE in asked)


@pytest.mark.parametrize("mode", MODES)
def test_a_run_this_journal_resumes_has_its_held_result_stored_without_a_read(
    tmp_path: Path, mode: str
) -> None:
    """Runs pausing with ``add``'s result held, each resumed by the same journal: the
    writer never reads the thread's stored state for them, each result is journaled once."""
    store = CountingStore(tmp_path / "j.db")
    agent = asking_agent([])
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [journal]}
        for turn in range(3):
            assert "__interrupt__" in run(agent, mode, {"messages": [("user", f"q{turn}")]}, config)
            run(agent, mode, Command(resume="yes"), config)
            assert journal.flush(30)
    assert state_reads(store) == 0
    state = agent.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    assert [m.id for m in replay(store, "t", view="state")] == [m.id for m in state]
    ids = [e.content["data"]["id"] for e in store.read("t", event_type=["message.tool"])]
    assert len(ids) == len(set(ids)) == 6


@pytest.mark.parametrize("mode", MODES)
def test_a_result_held_at_close_is_checked_against_the_stored_messages_alone(
    tmp_path: Path, mode: str
) -> None:
    """A journal closing with a paused run's result held back journals it once, reading
    the thread's message events only (no removal or summary is needed to tell)."""
    store = CountingStore(tmp_path / "j.db")
    agent = asking_agent([])
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [journal]}
        assert "__interrupt__" in run(agent, mode, {"messages": [("user", "q0")]}, config)
        assert journal.flush(30)
        store.asked.clear()
    assert state_reads(store) == 0
    assert any("message.tool" in asked for asked in store.asked)
    ids = [e.content["data"]["id"] for e in store.read("t", event_type=["message.tool"])]
    assert len(ids) == len(set(ids)) == 1
