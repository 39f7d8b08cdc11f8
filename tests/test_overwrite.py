"""A write that bypasses the ``messages`` reducer (``langgraph.types.Overwrite``) is a rewrite.

LangGraph stores an ``Overwrite``'s value as the new state as it is, and ignores every other
write to the channel in that superstep. The journal records it as a whole rewrite: a
``message.remove`` with the state's order, the new messages as ``message.*`` events, and a
summary marker when the new list starts with a summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentState, before_model
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from history import build_timeline, replay
from tests.fakes import ScriptedChatModel
from tests.test_context_edits import MODES, QUESTIONS, THREAD, Harness, chain, fan_out, items
from tests.test_context_edits import harness as harness  # the fixture, used by name


def overwriting(form: str) -> Callable[[MessagesState], dict[str, Any]]:
    """A node that replaces the whole list by a new note, the first and the last message,
    in one of the forms LangGraph reads as an overwrite."""

    def node(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        if len(messages) <= 4:
            return {}
        value = [AIMessage(f"(dropped at {len(messages)})"), messages[0], messages[-1]]
        if form == "dataclass":
            return {"messages": Overwrite(value)}
        if form == "sentinel":
            return {"messages": {"__overwrite__": value}}
        return {"messages": {"type": "__overwrite__", "value": value}}

    return node


@pytest.mark.parametrize("form", ["dataclass", "sentinel", "typed-dict"])
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("mode", MODES)
async def test_an_overwrite_is_journaled_as_a_rewrite(
    harness: Callable[..., Harness], mode: str, backend: str, form: str
) -> None:
    """The state view equals the checkpoint after every run, every model call replays
    exactly, and each overwrite is a rewrite whose new note is a journaled message."""
    h = harness(chain(("compact", overwriting(form))), backend)
    await h.play(mode)
    h.assert_every_call_replays_exactly()
    rewrites = h.store.read(THREAD, event_type="message.remove")
    assert len(rewrites) == len(QUESTIONS) - 2
    assert all(r.content["all"] and r.content["removed_message_ids"] for r in rewrites)
    notes = [
        e.content["data"]["id"]
        for e in h.store.read(THREAD, event_type="message.ai")
        if str(e.content["data"]["content"]).startswith("(dropped")
    ]
    assert len(notes) == len(rewrites)
    for rewrite in rewrites:  # each note is in the order its rewrite recorded
        assert rewrite.content["state_message_ids"][0] in notes
    markers = [i for i in items(h.store) if i["type"] == "removal_marker"]
    assert [m["removed_count"] for m in markers] == [
        len(r.content["removed_message_ids"]) for r in rewrites
    ]


@pytest.mark.parametrize("first", [True, False], ids=["overwrite-first", "overwrite-last"])
@pytest.mark.parametrize("mode", MODES)
async def test_an_overwrite_drops_the_other_writes_of_its_step(
    harness: Callable[..., Harness], mode: str, first: bool
) -> None:
    """A note written beside an overwrite in one superstep is not in the state, whichever
    task LangGraph applies first: the state view still equals the checkpoint."""

    def note(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"note at {len(state['messages'])}")]}

    names = ("a_compact", "b_note") if first else ("z_compact", "b_note")
    h = harness(fan_out((names[0], overwriting("dataclass")), (names[1], note)))
    await h.play(mode)
    h.assert_every_call_replays_exactly()
    assert h.store.read(THREAD, event_type="message.remove")


@pytest.mark.parametrize("mode", MODES)
async def test_an_overwrite_with_a_summary_is_a_summary_marker(
    harness: Callable[..., Harness], mode: str
) -> None:
    """A before_model hook that overwrites the list with a summary and the last message:
    the timeline shows the compaction as a summary marker at the rewrite."""

    @before_model
    def squash(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        messages = state["messages"]
        if len(messages) <= 3:
            return None
        summary = HumanMessage(
            "Here is a summary of the conversation to date:\n- earlier questions",
            additional_kwargs={"lc_source": "summarization"},
        )
        return {"messages": Overwrite([summary, messages[-1]])}

    def build(model: ScriptedChatModel, checkpointer: InMemorySaver) -> Any:
        return create_agent(model, tools=[], middleware=[squash], checkpointer=checkpointer)

    h = harness(build)
    await h.play(mode, QUESTIONS[:4])
    h.assert_every_call_replays_exactly()
    page = build_timeline(h.store, THREAD, limit=100)
    markers = [i for i in page["items"] if i["type"] == "summary_marker"]
    assert len(markers) == 2 and all(m["replaced_count"] > 0 for m in markers)
    state = replay(h.store, THREAD, view="state")
    assert state == h.state() and state[0].additional_kwargs["lc_source"] == "summarization"


@pytest.mark.parametrize("mode", MODES)
async def test_an_input_that_overwrites_the_state_is_a_rewrite(
    harness: Callable[..., Harness], mode: str
) -> None:
    """A run started with ``{"messages": Overwrite([...])}`` replaces the conversation: a
    removal marker for what it replaced, then its messages, and the state view follows."""
    h = harness(chain())
    await h.play(mode, QUESTIONS[:2])
    inputs = {"messages": Overwrite([HumanMessage("start over")])}
    await h.run(inputs, mode)
    assert replay(h.store, THREAD, view="state") == h.state()
    assert h.state()[0].content == "start over"
    h.assert_every_call_replays_exactly()
    markers = [i for i in items(h.store) if i["type"] == "removal_marker"]
    assert [m["removed_count"] for m in markers] == [4]
    shown = [i["content"] for i in items(h.store) if i["type"] == "human"]
    assert shown == [*QUESTIONS[:2], "start over"]


@pytest.mark.parametrize("form", ["overwrite", "remove-all"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_rewrite_that_only_reorders_is_replayed_in_its_order(
    harness: Callable[..., Harness], mode: str, form: str
) -> None:
    """A rewrite that keeps every message in another order (nothing removed) journals the
    order: the state view equals the checkpoint after every run."""

    def reverse(state: MessagesState) -> dict[str, Any]:
        messages = list(reversed(state["messages"]))
        if len(messages) < 3:
            return {}
        if form == "overwrite":
            return {"messages": Overwrite(messages)}
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}

    h = harness(chain(("reverse", reverse)))
    await h.play(mode, QUESTIONS[:3])
    h.assert_every_call_replays_exactly()
    assert [i["type"] for i in items(h.store)].count("removal_marker") == 0
