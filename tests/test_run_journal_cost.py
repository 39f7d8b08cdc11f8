"""RunJournal stays cheap: linear work per run, background writes by time, usage totals."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

import journal.encoding
import journal.messages
from journal import MemoryEventStore, RunJournal
from tests.fakes import ScriptedChatModel, ai, call, event_types


@tool
def step(n: int) -> int:
    """Return n."""
    return n


def long_agent(rounds: int) -> Any:
    """An agent that makes ``rounds`` tool calls one after the other, then answers."""
    script = [ai("", call("step", n=i)) for i in range(rounds)] + [ai("done")]
    return create_agent(ScriptedChatModel(script), [step])


def test_messages_are_serialised_once_not_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each message is encoded once in total (its event and every call's record share it);
    node inputs (the whole state) never are."""
    dumped: list[str] = []
    # (every dump of a message the journal takes goes through ``_message_dict``)
    originals = (journal.encoding._dump_object, journal.messages._message_dict)

    def counting(original: Any) -> Any:
        def count(value: Any) -> Any:
            if hasattr(value, "type") and hasattr(value, "content"):
                dumped.append(str(getattr(value, "id", None)))
            return original(value)

        return count

    monkeypatch.setattr(journal.encoding, "_dump_object", counting(originals[0]))
    monkeypatch.setattr(journal.messages, "_message_dict", counting(originals[1]))
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        long_agent(30).invoke(
            {"messages": [HumanMessage("go")]},
            {"callbacks": [j], "recursion_limit": 200, "configurable": {"thread_id": "t"}},
        )
    messages = event_types(store.read("t"), "message")
    assert len(messages) == 62  # 1 human + 31 ai + 30 tool
    assert len(dumped) == len(messages)  # quadratic state serialisation would be ~2000
    assert len(set(dumped)) == len(dumped)


def test_writer_flushes_by_time_without_flush_call(tmp_path: Path) -> None:
    """Events reach the store on their own (flush interval), with no flush or close."""
    store = MemoryEventStore()
    j = RunJournal(store, spool_path=tmp_path / "spool.jsonl", flush_interval=0.05)
    long_agent(1).invoke(
        {"messages": [HumanMessage("go")]}, {"callbacks": [j], "configurable": {"thread_id": "t"}}
    )
    deadline = time.monotonic() + 10
    while not store.read("t", event_type="run.end") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert event_types(store.read("t"), "lifecycle") == ["run.start", "run.end"]
    j.close()


def test_usage_totals_include_cache_reads_by_model(tmp_path: Path) -> None:
    """run.end sums usage per run and per model, cache reads included (0 for what the
    provider does not report)."""
    usage = {
        "input_tokens": 100,
        "output_tokens": 7,
        "total_tokens": 107,
        "input_token_details": {"cache_read": 60},
    }
    script = [
        AIMessage("", tool_calls=[call("step", n=1)], usage_metadata=usage),
        AIMessage("done", usage_metadata=usage),
    ]
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as j:
        create_agent(ScriptedChatModel(script), [step]).invoke(
            {"messages": [HumanMessage("go")]},
            {"callbacks": [j], "configurable": {"thread_id": "t"}},
        )
    end = store.read("t", event_type="run.end")[0].content
    assert end["usage"] == {
        "input_tokens": 200,
        "output_tokens": 14,
        "total_tokens": 214,
        "cache_read_tokens": 120,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert end["usage_by_model"]["scripted-model"]["calls"] == 2
    assert end["usage_by_model"]["scripted-model"]["cache_read_tokens"] == 120
    assert end["duration_ms"] > 0
