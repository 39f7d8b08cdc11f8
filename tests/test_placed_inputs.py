"""Input messages without an id are journaled under the id the state gives them, wherever the
journal first sees that state.

A run's input is left as the user wrote it, so a dict, a tuple or a string has no id until
LangGraph's reducer gives it one; the journal finds it in the state by kind and content. It
took the first unseen match from the start of the state (after a restart, an earlier message
of the same text: the new one was never journaled), never looked for it at a breakpoint before
the first node (lost for good when another journal resumed the run), and left the run's start
unknown (a cached node's answer after it was not journaled). A graph without a checkpointer,
whose state starts anew each run, got a removal marker for the previous run's messages.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import CachePolicy

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel

MODES = ["sync", "async"]


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def graph_of(*names: str, cached: str | None = None, **compile_kw: Any) -> Any:
    """START -> each node in turn -> END; each node answers with what it saw."""
    builder = StateGraph(MessagesState)
    for name in names:
        model = ScriptedChatModel(lambda ms, n=name: AIMessage(f"{n} after {ms[-1].content}"))
        policy = None
        if name == cached:
            policy = CachePolicy(key_func=lambda s: str(s["messages"][-1].content))
        builder.add_node(
            name,
            lambda s, m=model: {"messages": [m.invoke(s["messages"])]},
            cache_policy=policy,
        )
    for a, b in zip((START, *names), (*names, END), strict=True):
        builder.add_edge(a, b)
    return builder.compile(**compile_kw)


def run(graph: Any, payload: Any, thread: str, journal: RunJournal, mode: str) -> Any:
    config = {"configurable": {"thread_id": thread}, "callbacks": [journal]}
    if mode == "async":
        return asyncio.run(graph.ainvoke(payload, config))
    return graph.invoke(payload, config)


def assert_replayed(store: SqliteEventStore, graph: Any, thread: str) -> None:
    state = graph.get_state({"configurable": {"thread_id": thread}}).values["messages"]
    assert shapes(replay(store, thread, view="state")) == shapes(state)
    report = verify(store, thread)
    assert report["ok"] and not report["state_missing"], report


@pytest.mark.parametrize("mode", MODES)
def test_a_repeated_text_after_a_restart_is_the_new_message(tmp_path: Path, mode: str) -> None:
    """The same text sent again as a dict after a journal restart is journaled as the new one."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", checkpointer=InMemorySaver())
    for spool in ("first", "second"):  # a new journal (a restart) for the second run
        with RunJournal(store, spool_path=tmp_path / spool) as journal:
            run(graph, {"messages": [{"role": "user", "content": "ok"}]}, "t", journal, mode)
    assert_replayed(store, graph, "t")
    texts = [i["content"] for i in build_timeline(store, "t")["items"]]
    assert texts == ["ok", "model after ok", "ok", "model after ok"]


@pytest.mark.parametrize("restart", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_an_input_paused_before_the_first_node_is_journaled(
    tmp_path: Path, mode: str, restart: bool
) -> None:
    """A dict input of a run paused before its first node is journaled when the run pauses."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", checkpointer=InMemorySaver(), interrupt_before=["model"])
    journal = RunJournal(store, spool_path=tmp_path / "first")
    run(graph, {"messages": [{"role": "user", "content": "q1"}]}, "t", journal, mode)
    journal.flush()
    assert_replayed(store, graph, "t")
    if restart:
        journal.close()
        journal = RunJournal(store, spool_path=tmp_path / "second")
    run(graph, None, "t", journal, mode)
    journal.close()
    assert_replayed(store, graph, "t")
    texts = [i["content"] for i in build_timeline(store, "t")["items"]]
    assert texts == ["q1", "model after q1"]


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_answer_after_a_dict_input_is_journaled(tmp_path: Path, mode: str) -> None:
    """A cached node's answer to a dict input is journaled, after the input, as the agent's."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", cached="model", checkpointer=InMemorySaver(), cache=InMemoryCache())
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for thread in ("a", "b"):  # b's answer comes from the cache
            run(graph, {"messages": [{"role": "user", "content": "hello"}]}, thread, journal, mode)
    for thread in ("a", "b"):
        assert_replayed(store, graph, thread)
    answers = store.read("b", event_type="message.ai")
    assert [(e.metadata["caller"], e.content["data"]["content"]) for e in answers] == [
        ("agent", "model after hello")
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_first_node_is_the_agents_not_the_users(tmp_path: Path, mode: str) -> None:
    """A cached node that runs first in a later run of a thread writes the agent's message."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of(
        "draft", "model", cached="draft", checkpointer=InMemorySaver(), cache=InMemoryCache()
    )
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        run(graph, {"messages": [HumanMessage("same")]}, "a", journal, mode)
        run(graph, {"messages": [HumanMessage("other")]}, "t", journal, mode)
        run(graph, {"messages": [HumanMessage("same")]}, "t", journal, mode)  # draft: cached
    assert_replayed(store, graph, "t")
    callers = {e.content["data"]["content"]: e.metadata["caller"] for e in store.read("t")
               if e.event_type == "message.ai"}  # fmt: skip
    assert callers == {
        "draft after other": "agent",
        "model after draft after other": "agent",
        "draft after same": "agent",
        "model after draft after same": "agent",
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_graph_without_a_checkpointer_shows_no_removals(tmp_path: Path, mode: str) -> None:
    """A graph without a checkpointer starts each run anew: no removal marker, no lost turn."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model")
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for text in ("q1", "q2", "q3"):
            out = run(graph, {"messages": [{"role": "user", "content": text}]}, "t", journal, mode)
    items = build_timeline(store, "t")["items"]
    assert [(i["type"], i["content"]) for i in items] == [
        (kind, text)
        for q in ("q1", "q2", "q3")
        for kind, text in (("human", q), ("ai", f"model after {q}"))
    ]
    assert shapes(replay(store, "t", view="state")) == shapes(out["messages"])
