"""What the journal's writer hands the store: checked events with what it knows of them.

The writer checks and encodes each event once and gives the store its canonical texts where
it has them (a message, encoded for its digest), so the store's ``prepare`` does not again.
These tests hold the stored result to what the store's own checks and rules give.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import dispatch_custom_event
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

from journal import MemoryEventStore, NewEvent, RunEvent, RunJournal, SqliteEventStore
from journal._batch import stored_record
from journal.digests import content_digest
from journal.encoding import dumps, to_jsonable
from journal.errors import StoreUnavailableError
from journal.messages import message_to_content
from journal.spool import read_spool
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_run_journal_failures import shape
from tests.test_store_runs import MinimalStore


@dataclasses.dataclass
class Reading:
    """An object a tool hands on as is (no JSON of its own)."""

    sensor: str
    value: float


def odd_payload() -> dict[Any, Any]:
    """Data that is not plain JSON in every way the encoding rules change something."""
    return {
        "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "tags": {"b", "a"},
        "pair": (1, 2),
        3: "an int key",
        "nan": math.nan,
        "lone": "x\ud800y",
        "reading": Reading("t1", 0.5),
        "big": 2**70,
    }


@tool
def measure(sensor: str) -> str:
    """Measure a sensor, reporting the raw reading as a custom event."""
    dispatch_custom_event("reading", odd_payload())
    return "measured"


@tool
def dump(size: int) -> str:
    """Return a long non-ASCII text."""
    return "é" * size


def run(journal: RunJournal, tools: list[Any], script: list[Any], thread: str = "t1") -> Any:
    """One create_agent run with ``tools`` answering ``script``; returns the final state."""
    agent: Any = create_agent(ScriptedChatModel(script), tools)
    return agent.invoke(
        {"messages": [HumanMessage("go")]},
        {"configurable": {"thread_id": thread}, "callbacks": [journal]},
    )


def test_content_that_is_not_plain_json_is_stored_by_the_encoding_rules(tmp_path: Path) -> None:
    """A custom event's odd data is stored as the rules encode it, in SQLite and in memory."""
    expected = to_jsonable(odd_payload())
    script = [ai("", call("measure", sensor="s")), ai("done")]
    for name, store in (
        ("sqlite", SqliteEventStore(tmp_path / "j.db")),
        ("memory", MemoryEventStore()),
    ):
        with RunJournal(store, spool_path=tmp_path / f"{name}.jsonl") as journal:
            run(journal, [measure], script)
        (event,) = store.read("t1", event_type="custom:reading")
        assert event.content == expected, name
        assert dumps(event.content) == dumps(odd_payload()), name
        assert journal.dropped_events == 0
    reopened = SqliteEventStore(tmp_path / "j.db")
    (event,) = reopened.read("t1", event_type="custom:reading")
    assert event.content == expected
    reopened.close()


def test_a_long_message_is_capped_and_marked_from_its_full_text(tmp_path: Path) -> None:
    """A tool's long answer is cut to the message cap; the marks and digest describe the whole."""
    store = SqliteEventStore(tmp_path / "j.db", content_caps={"message": 4096})
    with RunJournal(store, spool_path=tmp_path / "s.jsonl") as journal:
        state = run(journal, [dump], [ai("", call("dump", size=30_000)), ai("done")])
    (answer,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    whole = message_to_content(answer)
    (event,) = store.read("t1", event_type="message.tool")
    assert event.metadata["truncated"] is True
    assert event.metadata["original_bytes"] == len(dumps(whole).encode("utf-8"))
    assert len(dumps(event.content).encode("utf-8")) <= 4096
    assert event.metadata["digest"] == content_digest(whole)  # of the message, not of the cut
    store.close()


class _Recording(MinimalStore):
    """A third-party backend (only the abstract hooks) that keeps what ``_append`` got."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[Any] = []

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        self.given.extend(events)
        return super()._append(events)


def test_a_third_party_backend_gets_valid_new_events(tmp_path: Path) -> None:
    """A backend that is not built in gets plain, valid NewEvents and stores the same run."""
    script = [ai("", call("measure", sensor="s")), ai("done")]
    third = _Recording()
    with RunJournal(third, spool_path=tmp_path / "a.jsonl") as journal:
        run(journal, [measure], script)
    memory = MemoryEventStore()
    with RunJournal(memory, spool_path=tmp_path / "b.jsonl") as journal:
        run(journal, [measure], script)
    assert third.given and {type(e) for e in third.given} == {NewEvent}
    for event in third.given:
        assert NewEvent(**event.model_dump()) == event  # valid: the full validation agrees
    assert shape(third.read("t1")) == shape(memory.read("t1"))
    (reading,) = third.read("t1", event_type="custom:reading")
    assert reading.content == to_jsonable(odd_payload())


class _RecordsThenFails(MemoryEventStore):
    """Fails its first ``failures`` appends after making the first event its record, as a
    backend does whose transaction fails after part of the batch was numbered."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.lock = threading.Lock()

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        with self.lock:
            failing = self.failures > 0
            self.failures -= 1
        if failing:
            owned = getattr(events, "owned", [False])
            if owned[0] and type(events[0]) is NewEvent:
                stored_record(events[0], 99, True)
            raise StoreUnavailableError("lost the connection mid-transaction")
        return super()._append(events)


def test_events_a_failed_append_numbered_are_retried_and_spooled_whole(tmp_path: Path) -> None:
    """Events a failed transaction turned into records are retried, spooled and replayed
    without the seq it gave them: nothing is lost, doubled or left in the spool."""
    script = [ai("", call("measure", sensor="s")), ai("done")]
    healthy = MemoryEventStore()
    with RunJournal(healthy, spool_path=tmp_path / "h.jsonl") as journal:
        run(journal, [measure], script)
    for failures in (2, 100):  # recovered by the retries; spooled, then replayed
        store = _RecordsThenFails(failures)
        spool = tmp_path / f"spool-{failures}.jsonl"
        journal = RunJournal(store, spool_path=spool, retry_delays=(0.0, 0.0, 0.0))
        run(journal, [measure], script)
        assert journal.flush(10)
        if failures == 100:
            assert read_spool(spool)  # every line an event (none lost to a bad line)
            assert len(read_spool(spool)) == journal.spooled_events
            store.failures = 0
            assert journal.replay_spool(10) == journal.spooled_events
        journal.close()
        stored = store.read("t1")
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
        assert shape(stored) == shape(healthy.read("t1"))
        assert len({e.event_id for e in stored}) == len(stored)
        assert not spool.exists() and journal.dropped_events == 0
