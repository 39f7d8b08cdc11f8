"""LangGraph's functional API: an ``@entrypoint`` whose ``@task`` calls make the model calls.

A task runs as a task of the entrypoint's own graph, in a checkpoint namespace under its
caller's (``<entrypoint>:<id>|<task>:<id>``): the journal took it for a nested graph, so every
model call made in a task was ``subagent:<entrypoint>`` — verify checked none of them and the
usage credited a subagent. And it took the entrypoint's input (its argument, a
``{"messages": [...]}`` dict here) for the thread's state: each later run journaled the whole
history as removed, then wrote its answers again (the timeline showed a removal and repeats,
verify failed the run's calls). The thread's state is what the entrypoint returns.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages

from history import build_timeline, replay, thread_usage, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call

THREAD = "functional"
QUESTIONS = ["q1", "q2", "q3"]
MODES = ["sync", "async"]


@tool
def lookup(x: int) -> str:
    """Look ``x`` up."""
    return f"looked up {x}"


def agent_model() -> ScriptedChatModel:
    """Calls ``lookup`` when the last message is a question, else answers."""

    def reply(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return ai("calling", call("lookup", x=len(messages)))
        return ai(f"answer after {len(messages)} messages")

    return ScriptedChatModel(reply)


def functional_agent(model: ScriptedChatModel) -> Any:
    """A tool-calling agent in the functional API: its state is ``{"messages": [...]}``."""

    @task
    def call_model(messages: list[BaseMessage]) -> Any:
        return model.invoke(messages)

    @task
    def call_tool(tool_call: dict[str, Any]) -> Any:
        return lookup.invoke(tool_call)

    @entrypoint(checkpointer=InMemorySaver())
    def agent(inputs: dict[str, Any], *, previous: Any = None) -> dict[str, Any]:
        messages = add_messages((previous or {}).get("messages", []), inputs["messages"])
        response = call_model(messages).result()
        while response.tool_calls:
            results = [call_tool(tc).result() for tc in response.tool_calls]
            messages = add_messages(messages, [response, *results])
            response = call_model(messages).result()
        return {"messages": add_messages(messages, [response])}

    return agent


def async_functional_agent(model: ScriptedChatModel) -> Any:
    """:func:`functional_agent` with async tasks and entrypoint."""

    @task
    async def call_model(messages: list[BaseMessage]) -> Any:
        return await model.ainvoke(messages)

    @task
    async def call_tool(tool_call: dict[str, Any]) -> Any:
        return await lookup.ainvoke(tool_call)

    @entrypoint(checkpointer=InMemorySaver())
    async def agent(inputs: dict[str, Any], *, previous: Any = None) -> dict[str, Any]:
        messages = add_messages((previous or {}).get("messages", []), inputs["messages"])
        response = await call_model(messages)
        while response.tool_calls:
            results = await asyncio.gather(*(call_tool(tc) for tc in response.tool_calls))
            messages = add_messages(messages, [response, *results])
            response = await call_model(messages)
        return {"messages": add_messages(messages, [response])}

    return agent


def task_in_a_node(model: ScriptedChatModel) -> Any:
    """A ``StateGraph`` whose node makes its model call in a ``@task``."""

    @task
    def call_model(messages: list[BaseMessage]) -> Any:
        return model.invoke(messages)

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [call_model(state["messages"]).result()]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_edge(START, "chat")
    graph.add_edge("chat", END)
    return graph.compile(checkpointer=InMemorySaver())


async def play(app: Any, tmp_path: Path, mode: str) -> tuple[SqliteEventStore, list[Any]]:
    """Ask every question in its own run; the store and the state after each run."""
    store = SqliteEventStore(tmp_path / "j.db")
    config: Any = {"configurable": {"thread_id": THREAD}}
    states = []
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config["callbacks"] = [journal]
        for question in QUESTIONS:
            inputs = {"messages": [HumanMessage(question)]}
            if mode == "async":
                await app.ainvoke(inputs, config)
            else:
                await asyncio.to_thread(app.invoke, inputs, config)
            assert journal.flush(10)
            states.append(app.get_state(config).values["messages"])
            assert replay(store, THREAD, view="state") == states[-1]
    return store, states


@pytest.mark.parametrize("mode", MODES)
async def test_a_functional_agent_is_journaled_as_the_agent(tmp_path: Path, mode: str) -> None:
    """Every model call made in a task is the agent's: it replays exactly, verify checks it,
    the usage counts it for the agent; the state view and the timeline follow the state the
    entrypoint returns, without removals or repeats."""
    model = agent_model()
    build = async_functional_agent if mode == "async" else functional_agent
    store, states = await play(build(model), tmp_path, mode)

    starts = store.read(THREAD, event_type="llm.start")
    assert [e.metadata["caller"] for e in starts] == ["agent"] * len(model.calls)
    for start, received in zip(starts, model.calls, strict=True):
        assert replay(store, THREAD, upto_seq=start.seq, view="model") == received
    report = verify(store, THREAD)
    assert report["ok"] and report["calls"] == len(model.calls) == 2 * len(QUESTIONS), report
    usage = thread_usage(store, THREAD)["by_caller"]
    assert list(usage) == ["agent"] and usage["agent"]["calls"] == len(model.calls)
    assert store.read(THREAD, event_type="message.remove") == []
    items = build_timeline(store, THREAD, limit=100)["items"]
    assert [(i["type"], i["id"]) for i in items] == [(m.type, m.id) for m in states[-1]]


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_a_graph_node_calls_is_that_nodes(tmp_path: Path, mode: str) -> None:
    """A model call a ``StateGraph`` node makes in a ``@task`` is the agent's, and verifies."""
    model = ScriptedChatModel(lambda messages: ai(f"answer after {len(messages)} messages"))
    store, _ = await play(task_in_a_node(model), tmp_path, mode)

    starts = store.read(THREAD, event_type="llm.start")
    assert [e.metadata["caller"] for e in starts] == ["agent"] * len(QUESTIONS)
    report = verify(store, THREAD)
    assert report["ok"] and report["calls"] == len(QUESTIONS), report


@pytest.mark.parametrize("mode", MODES)
async def test_a_functional_subagent_called_from_a_tool_stays_a_subagent(
    tmp_path: Path, mode: str
) -> None:
    """An entrypoint with a checkpointer of its own, run from the agent's tool, is a
    subagent: the model calls its tasks make are not the agent's."""
    sub_model = ScriptedChatModel(lambda messages: ai("found it"))
    sub = async_functional_agent(sub_model) if mode == "async" else functional_agent(sub_model)
    sub_config = {"configurable": {"thread_id": "research-1"}}

    @tool
    def research(topic: str) -> str:
        """Research a topic with a subagent."""
        out = sub.invoke({"messages": [HumanMessage(topic)]}, sub_config)
        return str(out["messages"][-1].content)

    @tool
    async def aresearch(topic: str) -> str:
        """Research a topic with a subagent."""
        out = await sub.ainvoke({"messages": [HumanMessage(topic)]}, sub_config)
        return str(out["messages"][-1].content)

    tools = [aresearch if mode == "async" else research]
    name = tools[0].name
    model = ScriptedChatModel([ai("", call(name, topic="x")), ai("done")] * len(QUESTIONS))
    store, _ = await play(create_agent(model, tools, checkpointer=InMemorySaver()), tmp_path, mode)

    callers = [e.metadata["caller"] for e in store.read(THREAD, event_type="llm.start")]
    assert callers.count("agent") == len(model.calls)
    assert len(callers) - callers.count("agent") == len(sub_model.calls) == len(QUESTIONS)
    assert all(c.startswith("subagent:") for c in callers if c != "agent")
    report = verify(store, THREAD)
    assert report["ok"] and report["calls"] == len(model.calls), report
