"""The AI answers and tool results of a run's input are journaled.

A run's input was taken for a resent history: its human and system messages were journaled,
its AI and tool messages only marked as known, as if the journal had recorded them when they
were produced. A thread seeded with an earlier conversation (an imported history: question,
answer with a tool call, the tool's result, a new question) therefore had none of those
answers and results in the journal: replay's state missed them, and the timeline did not show
them. A client that resends its whole history each run still gets each message journaled once,
also across a journal restart and from the spool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import build_timeline, replay, verify
from journal import MemoryEventStore, NewEvent, RunJournal, SqliteEventStore
from journal._batch import KnownEvents
from journal._known_inputs import KnownInputs
from journal.messages import message_to_content
from journal.store import RunEventStore
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_run_journal_failures import FAST_RETRY, _DownForReadsToo

THREAD = "t"


@tool
def lookup(city: str) -> str:
    """The weather in ``city``."""
    return f"sunny in {city}"


def answer(messages: list[BaseMessage]) -> AIMessage:
    """Asks for the weather after each new question, else answers."""
    if messages[-1].type == "human":
        return ai("", call("lookup", f"call-{len(messages)}", city="Paris"))
    return ai(f"answer after {len(messages)} messages")


def imported(with_ids: bool) -> list[BaseMessage]:
    """An earlier conversation a client seeds a new thread with."""
    messages: list[BaseMessage] = [
        HumanMessage("weather in Oslo?"),
        AIMessage("", tool_calls=[call("lookup", "old-call", city="Oslo")]),
        ToolMessage("rain in Oslo", tool_call_id="old-call"),
        AIMessage("It rains in Oslo."),
        HumanMessage("and in Paris?"),
    ]
    if with_ids:
        for index, message in enumerate(messages):
            message.id = f"imported-{index}"
    return messages


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def journaled_ids(store: RunEventStore) -> list[str]:
    """The message id of every ``message.*`` event of the thread (no removal), in order."""
    return [
        e.content["data"]["id"]
        for e in store.read(THREAD)
        if e.category == "message" and e.event_type != "message.remove"
    ]


@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "no ids"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_seeded_history_is_journaled(tmp_path: Path, mode: str, with_ids: bool) -> None:
    """A checkpointed thread seeded with an imported conversation: every message of it is
    journaled (``caller`` user), replay rebuilds the state, the timeline shows them all."""
    store = SqliteEventStore(tmp_path / "j.db")
    agent = create_agent(ScriptedChatModel(answer), [lookup], checkpointer=InMemorySaver())
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        seeded = {"messages": imported(with_ids)}
        if mode == "async":
            await agent.ainvoke(seeded, config)
        else:
            agent.invoke(seeded, config)
        assert journal.flush(10)
    state: list[BaseMessage] = agent.get_state(config).values["messages"]
    assert len(state) == 8
    assert shapes(replay(store, THREAD, view="state")) == shapes(state)
    assert shapes(replay(store, THREAD, view="full")) == shapes(state)
    assert journaled_ids(store) == [m.id for m in state]
    inputs = [e for e in store.read(THREAD) if e.metadata.get("caller") == "user"]
    assert [e.event_type for e in inputs] == [
        "message.human",
        "message.ai",
        "message.tool",
        "message.ai",
        "message.human",
    ]
    items = build_timeline(store, THREAD)["items"]
    assert [(i["type"], i["id"]) for i in items] == [(m.type, m.id) for m in state]
    assert verify(store, THREAD)["ok"]


async def resend_history(
    store: RunEventStore, tmp_path: Path, journals: list[str], questions: list[str], mode: str
) -> list[BaseMessage]:
    """A graph without a checkpointer, its client resending the whole history (seeded with
    an imported conversation) and one new question each run; a new journal for each new
    spool name of ``journals`` (a restart). The last state."""
    agent = create_agent(ScriptedChatModel(answer), [lookup])
    history: list[BaseMessage] = imported(with_ids=True)
    journal: RunJournal | None = None
    for index, (spool, question) in enumerate(zip(journals, questions, strict=True)):
        if index == 0 or spool != journals[index - 1]:
            if journal is not None:
                assert journal.close(10)
            journal = RunJournal(store, spool_path=tmp_path / spool)
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        history = [*history, HumanMessage(question)]
        if mode == "async":
            result = await agent.ainvoke({"messages": history}, config)
        else:
            result = agent.invoke({"messages": history}, config)
        history = list(result["messages"])
    assert journal is not None and journal.close(10)
    return history


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_resent_history_is_journaled_once_also_after_a_restart(
    tmp_path: Path, mode: str
) -> None:
    """Without a checkpointer, the whole history resent each run, over two journals on one
    store: every message is journaled once, and replay's state is the last run's."""
    store = SqliteEventStore(tmp_path / "j.db")
    journals = ["a.jsonl", "a.jsonl", "b.jsonl", "b.jsonl"]
    state = await resend_history(store, tmp_path, journals, ["q1", "q2", "q3", "q4"], mode)
    assert len(state) == 5 + 4 * 4
    assert journaled_ids(store) == [m.id for m in state]
    assert not [e for e in store.read(THREAD) if e.metadata.get("replacement")]
    assert shapes(replay(store, THREAD, view="state")) == shapes(state)
    assert verify(store, THREAD)["ok"]


def test_a_resent_history_spooled_while_the_store_was_down_is_stored_once(
    tmp_path: Path,
) -> None:
    """A journal restarted while the store is down spools the whole resent history (it cannot
    tell what is stored); replaying the spool stores only the new messages."""
    store = _DownForReadsToo()
    agent = create_agent(ScriptedChatModel(answer), [lookup])
    config: Any = {"configurable": {"thread_id": THREAD}}
    history = [*imported(with_ids=True), HumanMessage("q1")]
    with RunJournal(store, spool_path=tmp_path / "a.jsonl") as first:
        history = list(
            agent.invoke({"messages": history}, {**config, "callbacks": [first]})["messages"]
        )
    store.down = True
    journal = RunJournal(store, spool_path=tmp_path / "b.jsonl", retry_delays=FAST_RETRY)
    history = [*history, HumanMessage("q2")]
    state = agent.invoke({"messages": history}, {**config, "callbacks": [journal]})["messages"]
    assert journal.flush(10)
    store.down = False
    journal.replay_spool(10)
    journal.close()
    assert journaled_ids(store) == [m.id for m in state]
    assert shapes(replay(store, THREAD, view="state")) == shapes(state)


def message_event(message: BaseMessage, caller: str) -> NewEvent:
    return NewEvent(
        thread_id=THREAD,
        run_id="r",
        category="message",
        event_type=f"message.{message.type}",
        content=message_to_content(message),
        metadata={"caller": caller},
    )


def kept(known: KnownInputs, *events: NewEvent) -> list[NewEvent]:
    batch = KnownEvents()
    for event in events:
        batch.add(event)
    return list(known.drop_repeats(batch))


def test_the_writer_drops_a_resent_answer_it_stored_or_saw_stored() -> None:
    """The writer drops an input's answer the store holds, and one a node wrote since it
    read the store (a journal that forgot the thread); a node's own message is never
    dropped, and another content under a known id is an edit."""
    store = MemoryEventStore()
    stored = AIMessage("stored", id="a1")
    store.append([message_event(stored, "agent")])
    known = KnownInputs(store)
    assert kept(known, message_event(stored, "user")) == []
    since = AIMessage("written since", id="a2")
    node_events = [message_event(since, "agent"), message_event(since, "agent")]
    assert kept(known, *node_events) == node_events
    assert kept(known, message_event(since, "user")) == []
    [edit] = kept(known, message_event(AIMessage("edited", id="a2"), "user"))
    assert edit.metadata["replacement"] is True
