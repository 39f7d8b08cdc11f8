"""A node LangGraph answers from its cache (a ``CachePolicy`` and a ``cache``) is journaled.

A cache hit puts the node's cached writes into the state without running the node: no callback
fires for it. The journal never learnt of those messages: replay's state missed the cached
answers (the order the root's end journaled named an id no event held), and ``verify`` said
ok.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import CachePolicy

from history import build_timeline, replay, verify
from journal import MemoryEventStore, RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_timeline import ThreadBuilder

MODES = ["sync", "async"]
THREADS = ("a", "b")


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def run(graph: Any, payload: Any, thread: str, journal: RunJournal, mode: str) -> None:
    config: Any = {"configurable": {"thread_id": thread}, "callbacks": [journal]}
    if mode == "async":
        asyncio.run(graph.ainvoke(payload, config))
    else:
        graph.invoke(payload, config)


def question(text: str = "hello") -> dict[str, Any]:
    """The same question in every thread (its id too: the cache key is the node's input)."""
    return {"messages": [HumanMessage(text, id=f"question-{text}")]}


def answering(model: ScriptedChatModel) -> Any:
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return node


def chain_graph(nodes: list[tuple[str, Any, CachePolicy | None]], **compile_kw: Any) -> Any:
    """START -> each ``(name, node, cache policy)`` in turn -> END, with a checkpointer and
    an in-memory cache."""
    builder = StateGraph(MessagesState)
    for name, node, policy in nodes:
        builder.add_node(name, node, cache_policy=policy)
    names = [name for name, _, _ in nodes]
    for a, b in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(a, b)
    return builder.compile(checkpointer=InMemorySaver(), cache=InMemoryCache(), **compile_kw)


def assert_replays_the_state(graph: Any, store: Any, thread: str) -> None:
    state = graph.get_state({"configurable": {"thread_id": thread}}).values["messages"]
    assert shapes(replay(store, thread, view="state")) == shapes(state)
    report = verify(store, thread)
    assert report["ok"] and report["state_missing"] == [], report


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_answer_is_journaled_in_the_thread_it_enters(tmp_path: Path, mode: str) -> None:
    """The second thread's answer comes from the cache: it is a message.ai event, replay's state
    equals the checkpoint in both threads and the timeline shows the answer."""
    model = ScriptedChatModel(lambda messages: AIMessage(f"answer to {messages[-1].content}"))
    graph = chain_graph([("model", answering(model), CachePolicy())])
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    for thread in THREADS:
        run(graph, question(), thread, journal, mode)
    journal.close()

    assert len(model.calls) == 1  # the second thread's answer is the cached one
    for thread in THREADS:
        assert_replays_the_state(graph, store, thread)
    (answer,) = store.read("b", event_type="message.ai")
    assert answer.metadata["caller"] == "agent"
    assert answer.metadata["langgraph_node"] is None  # no callback names the node
    items = build_timeline(store, "b")["items"]
    assert [(i["type"], i["content"]) for i in items] == [
        ("human", "hello"),
        ("ai", "answer to hello"),
    ]
    ended = store.read("b", event_type="run.end")[0]
    assert ended.content["message_counts"] == {"human": 1, "ai": 1}


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_answer_is_journaled_before_the_next_node_reads_it(
    tmp_path: Path, mode: str
) -> None:
    """A cached draft read by the next node's model call is journaled before that call: the
    call replays exactly (its input is the replayed state)."""
    drafter = ScriptedChatModel(lambda messages: AIMessage("draft"))
    model = ScriptedChatModel(lambda messages: AIMessage(f"final after {len(messages)}"))
    graph = chain_graph(
        [("draft", answering(drafter), CachePolicy()), ("model", answering(model), None)]
    )
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    for thread in THREADS:
        run(graph, question(), thread, journal, mode)
    journal.close()

    assert len(drafter.calls) == 1 and len(model.calls) == 2
    for thread in THREADS:
        assert_replays_the_state(graph, store, thread)
    events = store.read("b")
    draft = next(e for e in events if e.event_type == "message.ai")
    call_start = next(e for e in events if e.event_type == "llm.start")
    assert draft.content["data"]["content"] == "draft" and draft.seq < call_start.seq
    assert replay(store, "b", upto_seq=call_start.seq, view="model") == model.calls[-1]
    assert verify(store, "b")["exact"] == 1


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def agent_answer(messages: list[BaseMessage]) -> AIMessage:
    if messages[-1].type == "human":
        return ai("", call("lookup", "call-1", query="x"))
    return ai(f"done after {len(messages)} messages")


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_agent_model_call_keeps_its_place_before_its_tool_result(
    tmp_path: Path, mode: str
) -> None:
    """create_agent with a cached model node: the cached answer that calls a tool is journaled
    in its place in the state, ahead of the tool result (the tools task read no state)."""
    model = ScriptedChatModel(agent_answer)
    agent = create_agent(model, tools=[lookup], checkpointer=InMemorySaver(), cache=InMemoryCache())
    agent.nodes["model"].cache_policy = CachePolicy()
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    for thread in THREADS:
        run(agent, question(), thread, journal, mode)
    journal.close()

    assert len(model.calls) == 3  # the second thread's first answer is the cached one
    for thread in THREADS:
        assert_replays_the_state(agent, store, thread)
    state = agent.get_state({"configurable": {"thread_id": "b"}}).values["messages"]
    assert [m.type for m in state] == ["human", "ai", "tool", "ai"]
    assert Counter(e.event_type for e in store.read("b", category="message")) == {
        "message.human": 1,
        "message.ai": 2,
        "message.tool": 1,
        "message.remove": 1,  # the state's order: the cached answer precedes the result
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_fresh_journal_journals_the_cached_answer_not_the_earlier_turns(
    tmp_path: Path, mode: str
) -> None:
    """A journal that meets a thread another journal recorded journals the run's cached answer
    (it follows the run's input in the state), and none of the earlier turns again."""
    model = ScriptedChatModel(lambda messages: AIMessage(f"answer to {messages[-1].content}"))
    by_question = CachePolicy(key_func=lambda state: str(state["messages"][-1].content))
    graph = chain_graph([("model", answering(model), by_question)])
    store = SqliteEventStore(tmp_path / "j.db")
    first = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    run(graph, question("earlier"), "b", first, mode)
    run(graph, question("hello"), "a", first, mode)
    first.close()
    second = RunJournal(store, spool_path=tmp_path / "spool2.jsonl")
    run(graph, question("hello"), "b", second, mode)  # answered from the cache
    second.close()

    assert len(model.calls) == 2
    for thread in THREADS:
        assert_replays_the_state(graph, store, thread)
    journaled = [e.content["data"]["id"] for e in store.read("b", event_type="message.ai")]
    assert len(journaled) == len(set(journaled)) == 2


def test_verify_names_a_state_message_no_event_holds() -> None:
    """An order that names a message the journal never recorded fails verify, naming it."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.human("hello")
    b.turn()
    order = [m.id for m in b.state]
    content = {"all": True, "removed_message_ids": [], "state_message_ids": [*order, "ghost"]}
    b._append("message", "message.remove", content)
    report = verify(b.store, "t")
    assert not report["ok"] and report["state_missing"] == ["ghost"]
    assert report["diverged"] == 0  # no model call received it


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_answer_before_a_breakpoint_is_journaled_when_the_run_pauses(
    tmp_path: Path, mode: str
) -> None:
    """A run that pauses before a node (``interrupt_before``) right after a cached answer
    journals it: replay's state equals the checkpoint while paused and once resumed."""
    model = ScriptedChatModel(lambda messages: AIMessage(f"answer to {messages[-1].content}"))
    review = ("review", lambda state: {"messages": [AIMessage("reviewed")]}, None)
    graph = chain_graph(
        [("model", answering(model), CachePolicy()), review], interrupt_before=["review"]
    )
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    for thread in THREADS:
        run(graph, question(), thread, journal, mode)
    journal.flush()
    for thread in THREADS:
        assert_replays_the_state(graph, store, thread)
    for thread in THREADS:
        run(graph, None, thread, journal, mode)  # resume
    journal.close()

    assert len(model.calls) == 1
    for thread in THREADS:
        assert_replays_the_state(graph, store, thread)
        assert [m.content for m in replay(store, thread, view="state")][-1] == "reviewed"
