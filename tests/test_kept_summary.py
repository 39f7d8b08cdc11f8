"""A summary an earlier compaction left in the state is not a new compaction.

A hook that rewrites the whole state (``RemoveMessage(REMOVE_ALL_MESSAGES)`` and every message
again, e.g. to redact them) writes the summary back. A journal that had not seen that summary
(it started after the compaction: a restart) took it for a new one and inferred a second,
false summary marker.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware, before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from history import build_timeline, replay
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel
from tests.test_summarization_middleware import summarizer


@before_model
def redact(state: Any, runtime: Any) -> dict[str, Any] | None:
    messages = state["messages"]
    if not any("secret" in str(m.content) for m in messages):
        return None
    clean = [
        m.model_copy(update={"content": str(m.content).replace("secret", "[x]")}) for m in messages
    ]
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *clean]}


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("restart", [False, True])
def test_a_kept_summary_rewritten_is_no_new_marker(
    tmp_path: Path, restart: bool, mode: str
) -> None:
    """A rewrite that keeps an earlier summary adds no summary marker, after a restart too."""
    store = SqliteEventStore(tmp_path / "j.db")
    model = ScriptedChatModel(lambda messages: AIMessage(f"answer {len(messages)}"))
    compaction = SummarizationMiddleware(
        summarizer(), trigger=("messages", 6), keep=("messages", 2)
    )
    agent = create_agent(
        model, tools=[], middleware=[compaction, redact], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t"}}

    def turn(journal: RunJournal, text: str) -> None:
        run_config = {**config, "callbacks": [journal]}
        payload = {"messages": [HumanMessage(text)]}
        if mode == "async":
            asyncio.run(agent.ainvoke(payload, run_config))
        else:
            agent.invoke(payload, run_config)

    journal = RunJournal(store, spool_path=tmp_path / "first")
    for text in ("one", "two", "three", "four"):  # the fourth turn is compacted
        turn(journal, text)
    if restart:
        journal.close()
        journal = RunJournal(store, spool_path=tmp_path / "second")
    turn(journal, "a secret")  # redacted: the whole state is written again
    journal.close()

    state = agent.get_state(config).values["messages"]
    assert "[x]" in state[-2].content
    assert state[0].additional_kwargs.get("lc_source") == "summarization"
    items = build_timeline(store, "t")["items"]
    assert [i["type"] for i in items].count("summary_marker") == 1
    assert shapes(replay(store, "t", view="state")) == shapes(state)
