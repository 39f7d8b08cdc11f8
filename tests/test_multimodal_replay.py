"""Replay of a model call whose messages hold image and file blocks: a chat model hands its
callbacks a copy of its messages with such blocks in another format (LangChain's tracing
format), and the model the messages themselves; replay returns what the model received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import replay, verify
from journal import MemoryEventStore, RunJournal, SqliteEventStore
from journal.store import RunEventStore
from tests.fakes import ScriptedChatModel, ai, call

THREAD = "mm"
IMAGE = {"type": "image", "base64": "iVBORw0KGgo" * 200, "mime_type": "image/png"}
FILE = {"type": "file", "base64": "JVBERi0xLjQK" * 100, "mime_type": "application/pdf"}


@tool(response_format="content_and_artifact")
def snapshot(subject: str) -> tuple[list[dict[str, Any]], str]:
    """Take a picture of ``subject``."""
    return [{"type": "text", "text": f"a picture of {subject}"}, IMAGE], subject


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_image_and_file_blocks_replay_as_the_model_received_them(
    tmp_path: Path, backend: str
) -> None:
    store: RunEventStore = (
        MemoryEventStore() if backend == "memory" else SqliteEventStore(tmp_path / "j.db")
    )
    model = ScriptedChatModel(
        [ai("", call("snapshot", subject="cat")), ai("a cat"), ai("a pdf"), ai("still a cat")]
    )
    agent = create_agent(model, [snapshot], checkpointer=InMemorySaver())
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        question = [{"type": "text", "text": "what is this?"}, IMAGE]
        agent.invoke({"messages": [HumanMessage(question)]}, config)
        agent.invoke({"messages": [HumanMessage([{"type": "text", "text": "and?"}, FILE])]}, config)
        agent.invoke({"messages": [HumanMessage("again?")]}, config)
        assert journal.flush(10)
    received = model.calls
    assert any(isinstance(m, ToolMessage) and IMAGE in m.content for m in received[1])
    starts = store.read(THREAD, event_type="llm.start")
    assert len(starts) == len(received) == 4
    for start, messages in zip(starts, received, strict=True):
        assert replay(store, THREAD, upto_seq=start.seq, view="model") == messages
    report = verify(store, THREAD)
    assert report["ok"] and report["exact"] == report["calls"] == 4, report
    # the blocks are stored once, as the state's messages, not again as request edits
    inlined = [d for s in starts for d in s.metadata["context"]["inline"]]
    assert inlined == []
    store.close()
