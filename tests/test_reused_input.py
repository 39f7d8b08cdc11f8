"""An input the user reuses across runs behaves as it does without the journal.

The journal converted the message-like items of a run's input (dicts, ``(role, text)``
tuples, strings) to messages in the user's own input object and gave them ids (a dict item
got an ``"id"`` key too). A user who sends the same input object again (a module-level
constant, one payload invoked each turn) then sent a message whose id the thread held, and
``add_messages`` replaced the earlier message instead of appending a new one: the agent
answered another conversation just because the journal was attached.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from history import replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel

THREAD = "t"


def answer(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(f"answer after {len(messages)} messages")


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def with_ids(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


PAYLOADS: dict[str, Any] = {
    "dict": {"messages": [{"role": "user", "content": "hi"}]},
    "lone dict": {"messages": {"role": "user", "content": "hi"}},
    "tuple": {"messages": [("user", "hi")]},
    "string": {"messages": "hi"},
    "mixed": {"messages": [("user", "hi"), {"role": "user", "content": "and you?"}]},
}


async def run_twice(payload: Any, journal: RunJournal | None, mode: str) -> list[BaseMessage]:
    """Invoke a checkpointed agent twice with the same ``payload`` object; its state."""
    agent = create_agent(ScriptedChatModel(answer), tools=[], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": THREAD}}
    if journal is not None:
        config["callbacks"] = [journal]
    for _ in range(2):
        if mode == "async":
            await agent.ainvoke(payload, config)
        else:
            agent.invoke(payload, config)
    messages: list[BaseMessage] = agent.get_state(config).values["messages"]
    return messages


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("case", sorted(PAYLOADS))
async def test_a_reused_input_appends_as_without_the_journal(
    tmp_path: Path, case: str, mode: str
) -> None:
    """The same input object sent twice: the state is the one the graph builds without the
    journal, the input object is left as the user wrote it, and replay rebuilds the state."""
    truth = await run_twice(copy.deepcopy(PAYLOADS[case]), None, mode)
    payload = copy.deepcopy(PAYLOADS[case])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        state = await run_twice(payload, journal, mode)
        assert journal.flush(10)
    assert shapes(state) == shapes(truth)
    assert payload == PAYLOADS[case]
    assert len({m.id for m in state}) == len(state)
    assert with_ids(replay(store, THREAD, view="state")) == with_ids(state)
    assert verify(store, THREAD)["ok"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_reused_message_object_keeps_langgraphs_own_behaviour(
    tmp_path: Path, mode: str
) -> None:
    """A message object sent twice gets its id from LangGraph at the first run, with or
    without the journal: the second run replaces it, in both, and replay follows."""
    truth = await run_twice({"messages": [HumanMessage("hi")]}, None, mode)
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        state = await run_twice({"messages": [HumanMessage("hi")]}, journal, mode)
        assert journal.flush(10)
    assert shapes(state) == shapes(truth)
    assert with_ids(replay(store, THREAD, view="state")) == with_ids(state)
    assert verify(store, THREAD)["ok"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_new_input_dict_is_journaled_before_its_answer(tmp_path: Path, mode: str) -> None:
    """A graph without a checkpointer, its client resending the history with one new dict
    each turn: each question is journaled before its answer, once, under the state's id."""
    agent = create_agent(ScriptedChatModel(answer), tools=[])
    store = SqliteEventStore(tmp_path / "j.db")
    history: list[Any] = []
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        for text in ("first", "second", "third"):
            history.append({"role": "user", "content": text})
            if mode == "async":
                result = await agent.ainvoke({"messages": history}, config)
            else:
                result = agent.invoke({"messages": history}, config)
            history = list(result["messages"])
        assert journal.flush(10)
    state: list[BaseMessage] = result["messages"]
    assert with_ids(replay(store, THREAD, view="state")) == with_ids(state)
    assert with_ids(replay(store, THREAD, view="full")) == with_ids(state)
    events = store.read(THREAD, event_type=["message.human", "message.ai"])
    assert [e.content["data"]["id"] for e in events] == [m.id for m in state]
    assert {e.metadata["caller"] for e in events if e.event_type == "message.human"} == {"user"}
    assert verify(store, THREAD)["ok"]


def ask(state: MessagesState) -> dict[str, Any]:
    answer = interrupt("go on?")
    return {"messages": [AIMessage(f"{answer} after {len(state['messages'])} messages")]}


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_resume_update_dict_is_journaled_and_left_as_given(
    tmp_path: Path, mode: str
) -> None:
    """A resume whose ``Command`` adds a message dict: the command is left as the user wrote
    it, and the message is journaled under the state's id, before the resumed node's answer."""
    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    store = SqliteEventStore(tmp_path / "j.db")
    resume = Command(resume="yes", update={"messages": [{"role": "user", "content": "more"}]})
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        for payload in ({"messages": [{"role": "user", "content": "hi"}]}, resume):
            if mode == "async":
                await graph.ainvoke(payload, config)
            else:
                graph.invoke(payload, config)
        assert journal.flush(10)
    assert resume.update == {"messages": [{"role": "user", "content": "more"}]}
    state: list[BaseMessage] = graph.get_state(config).values["messages"]
    assert shapes(state) == [("human", "hi"), ("human", "more"), ("ai", "yes after 2 messages")]
    assert with_ids(replay(store, THREAD, view="full")) == with_ids(state)
    assert with_ids(replay(store, THREAD, view="state")) == with_ids(state)
