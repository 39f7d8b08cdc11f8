"""A LangChain middleware's own model calls inside the agent's nodes are not the agent's.

``LLMToolEmulator`` calls its model inside the tools node, ``LLMToolSelectorMiddleware``
inside the model node; LangChain marks both calls with ``lc_source``. Taken for the agent's,
they made ``replay(view="model")`` answer with the emulator's prompt, and usage and verify
count a call the agent never made.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import LLMToolEmulator, LLMToolSelectorMiddleware
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import replay, thread_usage, verify
from journal import RunJournal, SqliteEventStore
from journal.events import RunEvent
from tests.fakes import ScriptedChatModel

warnings.filterwarnings("ignore", category=UserWarning)


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"sunny in {city}"


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return f"noon in {city}"


def agent_step(messages: list[BaseMessage]) -> AIMessage:
    if messages[-1].type == "tool":
        return AIMessage("It is sunny.")
    weather = {"name": "get_weather", "args": {"city": "Paris"}, "id": "w1", "type": "tool_call"}
    return AIMessage("", tool_calls=[weather])


def selection(messages: list[BaseMessage]) -> AIMessage:
    chosen = {"name": "ToolSelectionResponse", "args": {"tools": ["get_weather"]}, "id": "s1"}
    return AIMessage("", tool_calls=[{**chosen, "type": "tool_call"}])


def middleware(kind: str) -> Any:
    if kind == "emulator":
        return LLMToolEmulator(model=ScriptedChatModel(lambda m: AIMessage("21C and sunny")))
    return LLMToolSelectorMiddleware(model=ScriptedChatModel(selection), max_tools=1)


def run(tmp_path: Path, kind: str, mode: str) -> tuple[SqliteEventStore, ScriptedChatModel]:
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    model = ScriptedChatModel(agent_step)
    agent = create_agent(
        model, tools=[get_weather, get_time], middleware=[middleware(kind)],
        checkpointer=InMemorySaver(),
    ).with_config(callbacks=[journal])  # fmt: skip
    config: Any = {"configurable": {"thread_id": "t"}}
    for text in ("Weather in Paris?", "And again?"):
        payload = {"messages": [{"role": "user", "content": text}]}
        if mode == "async":
            asyncio.run(agent.ainvoke(payload, config))
        else:
            agent.invoke(payload, config)
    journal.close()
    return store, model


def shapes(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["emulator", "selector"])
def test_a_middleware_call_is_not_the_agents(tmp_path: Path, kind: str, mode: str) -> None:
    store, model = run(tmp_path, kind, mode)
    events = store.read("t")
    starts = [e for e in events if e.event_type == "llm.start"]
    internal = [e for e in starts if e.metadata.get("lc_source") is not None]
    assert internal, "the middleware made calls of its own"
    name = "LLMToolEmulator" if kind == "emulator" else "LLMToolSelectorMiddleware"
    assert {e.metadata["caller"] for e in internal} == {f"middleware:{name}"}
    agent_calls = [e for e in starts if e.metadata["caller"] == "agent"]
    assert len(agent_calls) == len(model.calls) == 4

    # what the model saw at each agent call: what the agent's model received
    for start, received in zip(agent_calls, model.calls, strict=True):
        assert shapes(replay(store, "t", upto_seq=start.seq, view="model")) == shapes(received)
    # and at each tool result (the emulator's call comes after the agent's in its node)
    results: list[RunEvent] = [e for e in events if e.event_type == "message.tool"]
    for result, received in zip(results, model.calls[::2], strict=True):
        assert shapes(replay(store, "t", upto_seq=result.seq, view="model")) == shapes(received)

    usage = thread_usage(store, "t")
    assert usage["by_caller"]["agent"]["calls"] == 4
    assert usage["by_caller"][f"middleware:{name}"]["calls"] == len(internal)
    report = verify(store, "t")
    assert report["ok"] and report["calls"] == 4
