"""A ``Command(graph=Command.PARENT, update=...)`` that reaches the root graph is its node's write.

A handoff: a tool of a ``create_agent`` subgraph (or a node of a subgraph) returns
``Command(graph=Command.PARENT, goto="bob", update={"messages": [...]})``. LangGraph raises it
out of the subgraph as ``ParentCommand`` (a ``GraphBubbleUp``) and the root graph applies its
update as the writes of the subgraph's node. The journal took every ``GraphBubbleUp`` of a
node of the root graph for an interrupt and never read the update: the handed-off messages
were missing from replay's state (or, when the next agent was a subgraph too, journaled late
as that agent's, at its step).
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState
from langgraph.types import Command

from tests.fakes import ScriptedChatModel, ai, call
from tests.test_send_tasks import MODES, THREAD, model_node
from tests.test_send_tasks import thread as thread  # the fixture, used by name


@tool
def transfer_to_bob(
    tool_call_id: Annotated[str, InjectedToolCallId], state: Annotated[dict, InjectedState]
) -> Command:
    """Hand the conversation to bob."""
    done = ToolMessage("Transferred to bob", tool_call_id=tool_call_id, name="transfer_to_bob")
    return Command(
        goto="bob", graph=Command.PARENT, update={"messages": [*state["messages"], done]}
    )


def bobs_model() -> ScriptedChatModel:
    return ScriptedChatModel(lambda ms: ai(f"bob saw {len(ms)} messages"))


def agents(bob: Any) -> Any:
    """``alice`` (a create_agent subgraph that hands off on the first question, answers
    the second) and ``bob`` of a parent graph."""
    alice_model = ScriptedChatModel(
        [ai("let me hand you over", call("transfer_to_bob")), ai("alice again")]
    )
    alice = create_agent(alice_model, tools=[transfer_to_bob], name="alice")
    g = StateGraph(MessagesState)
    g.add_node("alice", alice, destinations=("bob",))
    g.add_node("bob", bob)
    g.add_edge(START, "alice")
    g.add_edge("bob", END)
    return g.compile(checkpointer=InMemorySaver())


def written_by(t: Any) -> dict[str, tuple[str, int]]:
    """Each journaled message's content -> (node, step) of its first message event."""
    out: dict[str, tuple[str, int]] = {}
    for e in t.store.read(THREAD, category="message", limit=1000):
        if e.event_type != "message.remove":
            content = str(e.content["data"]["content"])
            out.setdefault(content, (e.metadata["langgraph_node"], e.metadata["langgraph_step"]))
    return out


def assert_journaled_once(t: Any) -> None:
    """No message was journaled twice (a late copy under another node)."""
    ids = Counter(
        e.content["data"]["id"]
        for e in t.store.read(THREAD, category="message", limit=1000)
        if e.event_type != "message.remove"
    )
    assert [mid for mid, n in ids.items() if n > 1] == []


@pytest.mark.parametrize("mode", MODES)
def test_a_handoff_to_a_node_journals_the_handed_over_messages(thread: Any, mode: str) -> None:
    """alice's tool hands off to bob, a plain model node: the AI message and the tool
    result in the Command's update are journaled as alice's, at alice's step, before bob's
    answer; replay's state equals the checkpoint after each run."""
    model = bobs_model()
    t = thread(agents(model_node(model)), mode)
    t.ask("help me")
    t.assert_replayed(model)
    by = written_by(t)
    bob_node, bob_step = by["bob saw 3 messages"]
    assert bob_node == "bob"
    assert by["let me hand you over"] == by["Transferred to bob"] == ("alice", bob_step - 1)
    t.ask("and again")
    t.assert_replayed(model)
    assert written_by(t)["alice again"][0] == "alice"
    assert_journaled_once(t)


@pytest.mark.parametrize("mode", MODES)
def test_a_handoff_to_an_agent_journals_the_messages_as_the_senders(thread: Any, mode: str) -> None:
    """bob is a create_agent subgraph too (whose output is its whole state): alice's
    messages are journaled once, as alice's at alice's step, not later as bob's."""
    t = thread(agents(create_agent(bobs_model(), tools=[], name="bob")), mode)
    t.ask("help me")
    t.assert_replayed()
    by = written_by(t)
    bob_node, bob_step = by["bob saw 3 messages"]
    assert bob_node == "bob"
    assert by["let me hand you over"] == by["Transferred to bob"] == ("alice", bob_step - 1)
    t.ask("and again")
    t.assert_replayed()
    assert_journaled_once(t)


@pytest.mark.parametrize("mode", MODES)
def test_a_subgraph_nodes_parent_command_is_its_nodes_write(thread: Any, mode: str) -> None:
    """A node inside the ``triage`` subgraph returns Command.PARENT with a message: it is
    journaled as triage's write, before bob's answer, and bob's call replays exactly."""

    def router(state: MessagesState) -> Command:
        note = AIMessage("sending you to bob", name="router")
        return Command(graph=Command.PARENT, goto="bob", update={"messages": [note]})

    sub = StateGraph(MessagesState)
    sub.add_node("router", router)
    sub.add_edge(START, "router")
    model = bobs_model()
    g = StateGraph(MessagesState)
    g.add_node("triage", sub.compile(), destinations=("bob",))
    g.add_node("bob", model_node(model))
    g.add_edge(START, "triage")
    g.add_edge("bob", END)
    t = thread(g.compile(checkpointer=InMemorySaver()), mode)
    for question in ("hello", "hello again"):
        t.ask(question)
        t.assert_replayed(model)
    assert [m.content for m in t.state()] == [
        "hello",
        "sending you to bob",
        "bob saw 2 messages",
        "hello again",
        "sending you to bob",
        "bob saw 5 messages",
    ]
    assert written_by(t)["sending you to bob"][0] == "triage"
    assert_journaled_once(t)
