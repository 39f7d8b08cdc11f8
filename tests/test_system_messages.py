"""A ``SystemMessage`` in the thread's state is journaled (``message.system``).

One in the run's input (a client that sends its own system message) and one a hook writes
(a note added to the state each turn) were journaled as nothing: replay's state missed them,
and ``verify`` could not tell (each model call's record had them inline).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain.agents import create_agent
from langchain.agents.middleware import before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from history import build_timeline, create_app, replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel


@before_model
def add_policy(state: Any, runtime: Any) -> dict[str, Any] | None:
    if state["messages"][-1].type == "human":
        return {"messages": [SystemMessage("Policy: answer in English.")]}
    return None


def answer(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(f"answer after {len(messages)} messages")


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def invoke(agent: Any, payload: Any, config: Any, mode: str) -> Any:
    if mode == "async":
        return asyncio.run(agent.ainvoke(payload, config))
    return agent.invoke(payload, config)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("case", ["input", "hook"])
def test_system_messages_of_the_state_are_journaled(tmp_path: Path, case: str, mode: str) -> None:
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    middleware = [add_policy] if case == "hook" else []
    model = ScriptedChatModel(answer)
    agent = create_agent(model, tools=[], middleware=middleware, checkpointer=InMemorySaver())
    agent = agent.with_config(callbacks=[journal])
    config: Any = {"configurable": {"thread_id": "t"}}
    for text in ("hello", "again"):
        messages: list[Any] = [{"role": "user", "content": text}]
        if case == "input":
            messages.insert(0, {"role": "system", "content": f"Be terse ({text})."})
        invoke(agent, {"messages": messages}, config, mode)
    journal.close()

    state = agent.get_state(config).values["messages"]
    assert [m.type for m in state].count("system") == 2
    assert shapes(replay(store, "t", view="state")) == shapes(state)
    systems = store.read("t", event_type="message.system")
    assert [e.content["data"]["id"] for e in systems] == [m.id for m in state if m.type == "system"]
    expected_caller = "user" if case == "input" else "middleware:add_policy"
    assert {e.metadata["caller"] for e in systems} == {expected_caller}
    assert verify(store, "t")["ok"]
    items = build_timeline(store, "t")["items"]
    assert [item["content"] for item in items if item["type"] == "system"] == [
        m.content for m in state if m.type == "system"
    ]
    response = TestClient(create_app(store)).get("/api/threads/t/history")
    assert response.status_code == 200
    served = [item for item in response.json()["items"] if item["type"] == "system"]
    assert [item["content"] for item in served] == [m.content for m in state if m.type == "system"]


def test_a_resent_system_message_is_journaled_once_also_after_a_restart(tmp_path: Path) -> None:
    """A client that resends its history with ids, its system message first, over two
    processes' journals (the second knows the thread only from the store)."""
    store = SqliteEventStore(tmp_path / "j.db")
    history: list[BaseMessage] = [SystemMessage("Be terse.", id="sys-1")]
    for n, spool in enumerate(("a.jsonl", "a.jsonl", "b.jsonl", "b.jsonl")):
        journal = RunJournal(store, spool_path=tmp_path / spool)
        agent = create_agent(ScriptedChatModel(answer), tools=[]).with_config(callbacks=[journal])
        history.append(HumanMessage(f"question {n}", id=f"h-{n}"))
        result = agent.invoke({"messages": history}, {"configurable": {"thread_id": "t"}})
        history = list(result["messages"])
        journal.close()
    systems = store.read("t", event_type="message.system")
    assert len(systems) == 1 and systems[0].content["data"]["id"] == "sys-1"
    humans = store.read("t", event_type="message.human")
    assert [e.content["data"]["id"] for e in humans] == ["h-0", "h-1", "h-2", "h-3"]

    # an edit of the system message (same id, new text) is the client's: a replacement
    journal = RunJournal(store, spool_path=tmp_path / "c.jsonl")
    agent = create_agent(ScriptedChatModel(answer), tools=[]).with_config(callbacks=[journal])
    history[0] = SystemMessage("Be verbose.", id="sys-1")
    agent.invoke({"messages": history}, {"configurable": {"thread_id": "t"}})
    journal.close()
    systems = store.read("t", event_type="message.system")
    assert [e.content["data"]["content"] for e in systems] == ["Be terse.", "Be verbose."]
    assert systems[1].metadata.get("replacement") is True
