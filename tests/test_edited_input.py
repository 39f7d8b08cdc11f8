"""A run whose input carries a message the thread holds, under its id but with another
content, is the user's edit of it (a chat client that keeps its ids: "edit and regenerate").

``add_messages`` replaces the message in the state, and the model answers the new text. The
journal records the new version as a ``replacement`` of the message, whether the journal
remembers the message (same process) or only the store does (a restart, a resent history,
events spooled while the store was down); the same content resent is journaled once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from history import build_timeline, replay, verify
from journal import MemoryEventStore, RunJournal, SqliteEventStore
from journal.store import RunEventStore
from tests.cli_helpers import run_script
from tests.fakes import ScriptedChatModel, ai
from tests.test_run_journal_failures import FAST_RETRY, _DownForReadsToo

ROOT = Path(__file__).resolve().parent.parent
THREAD = "t1"


def answering() -> ScriptedChatModel:
    return ScriptedChatModel(lambda messages: ai(f"answer to {messages[0].content}"))


def humans(store: RunEventStore) -> list[tuple[str, str, bool]]:
    """Each journaled input: its message id, text and whether it is a replacement."""
    return [
        (e.content["data"]["id"], e.content["data"]["content"], bool(e.metadata.get("replacement")))
        for e in store.read(THREAD, event_type="message.human")
    ]


def shown(store: RunEventStore) -> list[str]:
    return [
        str(i["content"]) for i in build_timeline(store, THREAD)["items"] if i["type"] == "human"
    ]


def assert_calls_replay(store: RunEventStore, model: ScriptedChatModel) -> None:
    starts = store.read(THREAD, event_type="llm.start")
    assert len(starts) == len(model.calls)
    for start, received in zip(starts, model.calls, strict=True):
        assert replay(store, THREAD, upto_seq=start.seq, view="model") == received
    assert verify(store, THREAD)["ok"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_edited_input_is_journaled_as_a_replacement(
    tmp_path: Path, mode: str, backend: str
) -> None:
    """With a checkpointer: the edit replaces the message in the state and in the journal;
    the timeline shows the question as first asked and as edited."""
    store: RunEventStore = (
        MemoryEventStore() if backend == "memory" else SqliteEventStore(tmp_path / "j.db")
    )
    model = answering()
    agent = create_agent(model, [], checkpointer=InMemorySaver())
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        for text in ["2+2?", "3+3?", "3+3?"]:  # asked, edited, resent as it is
            inputs = {"messages": [HumanMessage(text, id="u1")]}
            if mode == "sync":
                agent.invoke(inputs, config)
            else:
                await agent.ainvoke(inputs, config)
        assert journal.flush(10)
        state: list[BaseMessage] = agent.get_state(config).values["messages"]
    assert model.calls[1][0].content == "3+3?"
    assert humans(store) == [("u1", "2+2?", False), ("u1", "3+3?", True)]
    assert shown(store) == ["2+2?", "3+3?"]
    assert replay(store, THREAD, view="state") == state
    assert_calls_replay(store, model)
    store.close()


def test_an_edited_input_of_a_resent_history_is_journaled(tmp_path: Path) -> None:
    """Without a checkpointer, the client resends its history with the first question
    edited: the edit is journaled, the rest of the history is not journaled again."""
    store = MemoryEventStore()
    model = answering()
    agent = create_agent(model, [])
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        first = agent.invoke({"messages": [HumanMessage("2+2?", id="u1")]}, config)
        _, answer = first["messages"]
        edited = HumanMessage("3+3?", id="u1")
        out = agent.invoke({"messages": [edited, answer, HumanMessage("and 4+4?")]}, config)
        assert journal.flush(10)
    assert [(mid, text) for mid, text, _ in humans(store)][1:] == [
        ("u1", "3+3?"),
        (out["messages"][2].id, "and 4+4?"),
    ]
    assert humans(store)[1][2]
    assert replay(store, THREAD, view="state") == out["messages"]


_RUN = """
import sys
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from journal import RunJournal, SqliteEventStore
from tests.test_edited_input import answering

store_path, text = sys.argv[1], sys.argv[2]
with SqliteEventStore(store_path) as store:
    journal = RunJournal(store, spool_path=store_path + ".spool")
    config = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    out = create_agent(answering(), []).invoke({"messages": [HumanMessage(text, id="u1")]}, config)
    assert journal.close(10)
print("\\n".join(str(m.content) for m in out["messages"]))
"""


def _run_in_a_new_process(store: Path, text: str) -> list[str]:
    return run_script(_RUN, store, text)


def test_an_edit_sent_to_a_fresh_process_is_journaled(tmp_path: Path) -> None:
    """The question asked in one process, its edit, the edit again, and then the first text
    again, each in a fresh process: the store alone tells an edit (back, too) from a repeat."""
    path = tmp_path / "store.db"
    _run_in_a_new_process(path, "2+2?")
    _run_in_a_new_process(path, "3+3?")
    _run_in_a_new_process(path, "3+3?")
    last = _run_in_a_new_process(path, "2+2?")
    with SqliteEventStore(path) as store:
        assert humans(store) == [
            ("u1", "2+2?", False),
            ("u1", "3+3?", True),
            ("u1", "2+2?", True),
        ]
        assert shown(store) == ["2+2?", "3+3?", "2+2?"]
        state = [str(m.content) for m in replay(store, THREAD, view="state")]
        assert verify(store, THREAD)["ok"]
    assert state == last and state[0] == "2+2?"


def test_an_edit_spooled_while_the_store_was_down_is_stored(tmp_path: Path) -> None:
    """A journal restarted while the store is down spools the edited question; replaying
    the spool stores it as a replacement (and the resent answer not at all)."""
    store = _DownForReadsToo()
    agent = create_agent(answering(), [])
    config: Any = {"configurable": {"thread_id": THREAD}}
    with RunJournal(store, spool_path=tmp_path / "a.jsonl") as first:
        history = agent.invoke(
            {"messages": [HumanMessage("2+2?", id="u1")]}, {**config, "callbacks": [first]}
        )
    store.down = True
    journal = RunJournal(store, spool_path=tmp_path / "b.jsonl", retry_delays=FAST_RETRY)
    _, answer = history["messages"]
    inputs = {"messages": [HumanMessage("3+3?", id="u1"), answer, HumanMessage("2+2?", id="u2")]}
    agent.invoke(inputs, {**config, "callbacks": [journal]})
    assert journal.flush(10)
    store.down = False
    journal.replay_spool(10)
    journal.close()
    assert humans(store) == [("u1", "2+2?", False), ("u1", "3+3?", True), ("u2", "2+2?", False)]
