"""A graph with a checkpointer of its own, run from a tool or from a node of the journaled
graph, is a subagent: LangGraph gives it a checkpoint namespace of its own (no ``|`` joins it
to the caller's), and its calls are ``subagent:<graph>``, not the thread's agent's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from history import replay, thread_usage, verify
from journal import MemoryEventStore, RunJournal
from tests.fakes import ScriptedChatModel, ai, call

THREAD = "main"


def researcher(own_memory: bool) -> Any:
    """A subagent; with ``own_memory``, a checkpointer and a thread of its own."""
    model = ScriptedChatModel(lambda messages: ai(f"found {len(messages)}"))
    return create_agent(
        model, [], name="researcher", checkpointer=InMemorySaver() if own_memory else None
    )


def sub_config(own_memory: bool) -> Any:
    return {"configurable": {"thread_id": "research-1"}} if own_memory else None


@pytest.mark.parametrize("own_memory", [True, False], ids=["own-checkpointer", "none"])
@pytest.mark.parametrize("where", ["tool", "node"])
def test_a_subagent_with_a_checkpointer_of_its_own_is_no_agent_call(
    tmp_path: Path, where: str, own_memory: bool
) -> None:
    """Its model call is ``subagent:researcher`` in the events, the usage and verify; the
    thread's own calls replay exactly."""
    sub = researcher(own_memory)
    store = MemoryEventStore()
    if where == "tool":

        @tool
        def research(topic: str) -> str:
            """Research a topic with a subagent."""
            out = sub.invoke({"messages": [HumanMessage(topic)]}, sub_config(own_memory))
            return str(out["messages"][-1].content)

        model = ScriptedChatModel([ai("", call("research", topic="x")), ai("done")])
        graph = create_agent(model, [research], checkpointer=InMemorySaver())
    else:
        model = ScriptedChatModel([ai("done")])

        def research_node(state: MessagesState) -> dict[str, Any]:
            sub.invoke({"messages": [HumanMessage("x")]}, sub_config(own_memory))
            return {}

        def chat(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("research", research_node)
        builder.add_node("chat", chat)
        builder.add_edge(START, "research")
        builder.add_edge("research", "chat")
        builder.add_edge("chat", END)
        graph = builder.compile(checkpointer=InMemorySaver())
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        graph.invoke({"messages": [HumanMessage("q")]}, config)
        assert journal.flush(10)
    starts = store.read(THREAD, event_type="llm.start")
    callers = [e.metadata["caller"] for e in starts]
    assert callers.count("subagent:researcher") == 1
    agent_calls = [e for e in starts if e.metadata["caller"] == "agent"]
    assert len(agent_calls) == len(model.calls)
    for start, received in zip(agent_calls, model.calls, strict=True):
        assert replay(store, THREAD, upto_seq=start.seq, view="model") == received
    usage = thread_usage(store, THREAD)["by_caller"]
    assert usage["agent"]["calls"] == len(model.calls)
    assert usage["subagent:researcher"]["calls"] == 1
    report = verify(store, THREAD)
    assert report["ok"] and report["calls"] == len(model.calls), report
