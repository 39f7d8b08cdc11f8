"""Journaled message ids equal the ids in the LangGraph state, and each message appears once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from history import replay
from journal import MemoryEventStore, RunJournal, content_to_message, journal_thread_id
from journal.events import validate_id
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call, event_types, journaled_message_ids
from tests.flaky_stores import journal_fixture, store_fixture  # noqa: F401 (fixtures)


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def agent_with_tools(rounds: int, checkpointer: bool = True) -> Any:
    """An agent that, per run, calls ``echo`` twice in parallel and then answers."""
    script = []
    for i in range(rounds):
        script += [ai("", call("echo", text=f"a{i}"), call("echo", text=f"b{i}")), ai(f"done {i}")]
    return create_agent(
        ScriptedChatModel(script), [echo], checkpointer=InMemorySaver() if checkpointer else None
    )


def cfg(journal: RunJournal) -> dict[str, Any]:
    """A config journaled into thread t1."""
    return {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}


def state_ids(agent: Any, config: dict[str, Any]) -> list[str]:
    """The ids of the messages in the checkpointed state."""
    return [str(m.id) for m in agent.get_state(config).values["messages"]]


def kinds(messages: list[BaseMessage]) -> set[str]:
    """The message types present."""
    return {m.type for m in messages}


def test_ids_match_checkpoint_state_sync(journal: RunJournal, store: MemoryEventStore) -> None:
    """Human, AI and tool message ids in the journal equal the checkpoint's, in state order."""
    agent = agent_with_tools(1)
    agent.invoke({"messages": [HumanMessage("hi")]}, cfg(journal))
    journal.flush(10)
    stored = store.read("t1")
    assert journaled_message_ids(stored) == state_ids(agent, cfg(journal))
    restored = [content_to_message(e.content) for e in stored if e.category == "message"]
    assert kinds(restored) == {"human", "ai", "tool"}
    assert restored == agent.get_state(cfg(journal)).values["messages"]


async def test_ids_match_checkpoint_state_async(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """The same holds for ainvoke, with a blocking-call detector active."""
    agent = agent_with_tools(1)
    with blockbuster_ctx():
        await agent.ainvoke({"messages": [HumanMessage("hi")]}, cfg(journal))
        await journal.aflush(10)
    stored = await store.aread("t1")
    state = await agent.aget_state(cfg(journal))
    assert journaled_message_ids(stored) == [m.id for m in state.values["messages"]]
    assert kinds([content_to_message(e.content) for e in stored if e.category == "message"]) == {
        "human",
        "ai",
        "tool",
    }


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "as a dict"},
        ("user", "as a tuple"),
        "as a string",
        HumanMessage("as a message"),
    ],
    ids=["dict", "tuple", "str", "message"],
)
def test_message_like_inputs_keep_their_journaled_id(
    journal: RunJournal, store: MemoryEventStore, message: Any
) -> None:
    """Every input form (dict, tuple, str, message) gets the same id in journal and state."""
    agent = agent_with_tools(1)
    agent.invoke({"messages": [message]}, cfg(journal))
    journal.flush(10)
    stored = store.read("t1")
    assert journaled_message_ids(stored) == state_ids(agent, cfg(journal))
    assert event_types(stored, "message")[0] == "message.human"


def test_single_string_input_is_journaled(journal: RunJournal, store: MemoryEventStore) -> None:
    """A bare string as ``messages`` is one human message with the state's id."""
    agent = agent_with_tools(1)
    agent.invoke({"messages": "just text"}, cfg(journal))
    journal.flush(10)
    stored = store.read("t1")
    assert journaled_message_ids(stored) == state_ids(agent, cfg(journal))


def test_three_runs_with_checkpointer(journal: RunJournal, store: MemoryEventStore) -> None:
    """Across three runs of one thread, each human input is journaled exactly once, in order."""
    agent = agent_with_tools(3)
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(f"question {i}")]}, cfg(journal))
    journal.flush(10)
    stored = store.read("t1")
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["question 0", "question 1", "question 2"]
    assert journaled_message_ids(stored) == state_ids(agent, cfg(journal))
    assert len({e.run_id for e in stored}) == 3


def test_three_runs_resending_history(journal: RunJournal, store: MemoryEventStore) -> None:
    """Without a checkpointer, resending the whole history journals each human input once."""
    agent = agent_with_tools(3, checkpointer=False)
    history: list[BaseMessage] = []
    for i in range(3):
        result = agent.invoke({"messages": [*history, HumanMessage(f"q{i}")]}, cfg(journal))
        history = result["messages"]
    journal.flush(10)
    stored = store.read("t1")
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["q0", "q1", "q2"]
    assert journaled_message_ids(stored) == [m.id for m in history]
    assert event_types(stored, "message").count("message.ai") == 6


def test_resent_history_after_restart_is_not_journaled_twice(
    store: MemoryEventStore, tmp_path: Path
) -> None:
    """A new journal (a restarted process) resent the history: stored inputs are not repeated."""
    agent = agent_with_tools(2, checkpointer=False)
    first = RunJournal(store, spool_path=tmp_path / "a.jsonl")
    result = agent.invoke({"messages": [HumanMessage("q0")]}, cfg(first))
    first.close(10)
    second = RunJournal(store, spool_path=tmp_path / "b.jsonl")  # knows nothing of the thread
    sent = [*result["messages"], HumanMessage("q1")]
    result = agent.invoke({"messages": sent}, cfg(second))
    second.close(10)
    stored = store.read("t1")
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["q0", "q1"]
    # the second journal writes the first state it saw of a thread stored before: removing
    # nothing, its order the state's
    [order] = [e for e in stored if e.event_type == "message.remove"]
    assert order.content["removed_message_ids"] == []
    assert order.content["state_message_ids"] == [m.id for m in result["messages"][: len(sent)]]
    messages = [e for e in stored if e is not order]
    assert journaled_message_ids(messages) == [m.id for m in result["messages"]]
    assert [m.id for m in replay(store, "t1", view="state")] == [m.id for m in result["messages"]]


def test_command_update_messages_are_journaled(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A run whose input is a Command adding messages journals them with their state ids."""
    agent = agent_with_tools(1)
    agent.invoke({"messages": [HumanMessage("q0")]}, cfg(journal))
    agent.invoke(Command(update={"messages": [HumanMessage("added")]}), cfg(journal))
    journal.flush(10)
    stored = store.read("t1")
    humans = [e.content["data"]["content"] for e in stored if e.event_type == "message.human"]
    assert humans == ["q0", "added"]
    assert journaled_message_ids(stored) == state_ids(agent, cfg(journal))


def test_resent_summary_message_is_not_a_human_input(tmp_path: Path) -> None:
    """Resending a history that holds a summary journals no human message for the summary."""
    store = MemoryEventStore()
    summarizer = ScriptedChatModel(lambda messages: AIMessage("short"))
    model = ScriptedChatModel(lambda messages: ai(f"answer {len(messages)}"))
    middleware = TrackingSummarizationMiddleware(
        summarizer, trigger=("messages", 4), keep=("messages", 2)
    )
    agent: Any = create_agent(model, [], middleware=[middleware])
    history: list[BaseMessage] = []
    for i in range(4):
        journal = RunJournal(store, spool_path=tmp_path / f"{i}.jsonl")  # a restart per run
        for text in (f"q{i}a", f"q{i}b"):
            inputs = {"messages": [*history, HumanMessage(text)]}
            history = agent.invoke(inputs, cfg(journal))["messages"]
        journal.close(10)
    stored = store.read("t1", event_type="message.human")
    assert all(e.metadata["caller"] == "user" for e in stored)
    humans = [e.content["data"]["content"] for e in stored]
    assert humans == [f"q{i}{x}" for i in range(4) for x in "ab"]
    assert [m.id for m in replay(store, "t1", view="state")] == [m.id for m in history]


@pytest.mark.parametrize("raw", ["  padded  ", "x" * 300, "nul\x00inside", "line\nbreak", "\t"])
def test_a_thread_id_that_is_no_journal_id_maps_to_a_stable_valid_one(
    raw: str, tmp_path: Path
) -> None:
    """Runs of an unusable thread id are journaled under one stable valid id, original kept."""
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        for question in ("one", "two"):
            agent = create_agent(ScriptedChatModel([ai("answer")]), [])
            agent.invoke(
                {"messages": [HumanMessage(question)]},
                {"configurable": {"thread_id": raw}, "callbacks": [journal]},
            )
    mapped = journal_thread_id(raw)
    assert mapped != raw and validate_id(mapped, "thread_id") == mapped
    assert journal_thread_id(raw) == mapped != journal_thread_id(raw + " ")
    events = store.read(mapped)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert event_types(events, "lifecycle") == ["run.start", "run.end"] * 2
    starts = [e for e in events if e.event_type == "run.start"]
    assert all(e.metadata["thread_id_original"] == raw for e in starts)
    assert journal.dropped_events == 0
    assert [t.thread_id for t in store.list_threads()] == [mapped]
