"""build_timeline: pages of messages and summary markers over hand-written journal events."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from history import ThreadNotFoundError, abuild_timeline, build_timeline
from journal import MemoryEventStore, RunEventStore, message_to_content
from journal.events import RunEvent
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel

#: Random thread shapes for ThreadBuilder.play.
OPS = st.lists(
    st.sampled_from(["human", "turn", "tools", "noise", "compact", "run"]), min_size=1, max_size=40
)
PAYLOADS = TrackingSummarizationMiddleware(ScriptedChatModel([]), trigger=("messages", 1))


class ThreadBuilder:
    """Writes a thread's events the way the journal does, and keeps what the state was."""

    def __init__(self, store: RunEventStore, thread_id: str = "t") -> None:
        self.store = store
        self.thread_id = thread_id
        self.run_id = "run-0"
        self.runs = 0
        self.state: list[BaseMessage] = []
        self.full: list[BaseMessage] = []
        self.seq_of: dict[str, int] = {}
        self.model_views: dict[int, list[BaseMessage]] = {}
        self.markers: list[dict[str, Any]] = []

    def _append(self, category: str, event_type: str, content: Any, **meta: Any) -> RunEvent:
        (event,) = self.store.append(
            [
                {
                    "thread_id": self.thread_id,
                    "run_id": self.run_id,
                    "category": category,
                    "event_type": event_type,
                    "content": content,
                    "metadata": meta,
                }
            ]
        )
        return event

    def new_run(self) -> None:
        self.runs += 1
        self.run_id = f"run-{self.runs}"
        self._append("lifecycle", "run.start", None)

    def message(self, message: BaseMessage) -> RunEvent:
        message.id = message.id or str(uuid.uuid4())
        event = self._append("message", f"message.{message.type}", message_to_content(message))
        self.seq_of[message.id] = event.seq
        self.state = [m for m in self.state if m.id != message.id] + [message]
        self.full.append(message)
        return event

    def human(self, text: str = "question") -> RunEvent:
        return self.message(HumanMessage(text))

    def llm_start(self) -> RunEvent:
        event = self._append("trace", "llm.start", None, message_ids=[m.id for m in self.state])
        self.model_views[event.seq] = list(self.state)
        return event

    def noise(self, count: int = 1) -> None:
        for _ in range(count):
            self._append("trace", "tool.start", {"input": "x" * 50})

    def turn(self, tools: int = 0, text: str = "answer") -> None:
        """A model call and its answer, plus ``tools`` tool calls and their results."""
        self.llm_start()
        calls = [
            {"name": "lookup", "args": {"i": i}, "id": str(uuid.uuid4()), "type": "tool_call"}
            for i in range(tools)
        ]
        self.message(AIMessage(text, tool_calls=calls))
        self._append("trace", "llm.end", None)
        for c in calls:
            self.noise()
            self.message(ToolMessage(f"result {c['args']}", tool_call_id=c["id"], name="lookup"))

    def compact(self, keep: int) -> RunEvent:
        """A summarization that keeps the last ``keep`` messages (never orphaning tool results)."""
        cut = max(len(self.state) - keep, 0)
        while 0 < cut < len(self.state) and isinstance(self.state[cut], ToolMessage):
            cut -= 1
        original: list[AnyMessage] = list(self.state)  # type: ignore[arg-type]
        summary = HumanMessage(
            f"summary {len(self.markers) + 1}", additional_kwargs={"lc_source": "summarization"}
        )
        update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *original[cut:]]}
        payload = PAYLOADS.summarization_payload(original, update)
        assert payload is not None
        event = self._append("middleware", "middleware:summarize", payload)
        seqs = [self.seq_of[i] for i in payload["replaced_message_ids"] if i in self.seq_of]
        self.markers.append(
            {
                "type": "summary_marker",
                "id": f"summary-marker-{event.seq}",
                "seq": event.seq,
                "replaced_count": payload["replaced_count"],
                "summary": summary.content,
                "replaced_message_ids": payload["replaced_message_ids"],
                "first_replaced_seq": min(seqs) if seqs else None,
                "last_replaced_seq": max(seqs) if seqs else None,
            }
        )
        self.state = [summary, *original[cut:]]
        return event

    def play(self, ops: list[str], keep: int) -> None:
        """Apply random operations (hypothesis): messages, tool turns, compactions, runs."""
        for op in ops:
            if op == "human":
                self.human()
            elif op == "turn":
                self.turn()
            elif op == "tools":
                self.turn(tools=2)
            elif op == "noise":
                self.noise(2)
            elif op == "compact":
                self.compact(keep)
            else:
                self.new_run()


def all_items(store: RunEventStore, thread_id: str, limit: int, **kw: Any) -> list[Any]:
    """Walk every page from the newest to seq 1; return the items oldest first."""
    pages = []
    before = None
    while True:
        page = build_timeline(store, thread_id, before_seq=before, limit=limit, **kw)
        assert len(page["items"]) <= limit
        assert [i["seq"] for i in page["items"]] == sorted(i["seq"] for i in page["items"])
        pages.append(page["items"])
        if not page["has_more"]:
            assert page["next_before_seq"] is None
            break
        assert len(page["items"]) == limit
        before = page["next_before_seq"]
        assert before == page["items"][0]["seq"]
    return [item for items in reversed(pages) for item in items]


def sample_thread(store: RunEventStore | None = None) -> ThreadBuilder:
    """Three runs, two compactions (the second one condenses the first summary)."""
    b = ThreadBuilder(store or MemoryEventStore())
    b.new_run()
    b.human("hello")
    b.turn(tools=2)
    b.turn()
    b.new_run()
    b.human("again")
    b.turn(tools=1)
    b.compact(keep=3)
    b.turn()
    b.new_run()
    b.human("third")
    b.turn(tools=3)
    b.compact(keep=2)
    b.turn(text="final")
    return b


def test_unknown_thread_raises_a_lookup_error() -> None:
    """A thread with no events raises ThreadNotFoundError, which is a LookupError."""
    with pytest.raises(LookupError):
        build_timeline(MemoryEventStore(), "nope")
    with pytest.raises(ThreadNotFoundError):
        build_timeline(MemoryEventStore(), "nope")


def test_thread_without_messages_gives_an_empty_page() -> None:
    """A thread that has events but no message yields an empty last page."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    assert build_timeline(b.store, "t") == {
        "thread_id": "t",
        "items": [],
        "has_more": False,
        "next_before_seq": None,
    }


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"limit": 0}, ValueError),
        ({"limit": 10_000}, ValueError),
        ({"limit": "5"}, TypeError),
        ({"before_seq": 0}, ValueError),
        ({"before_seq": 1.5}, TypeError),
    ],
)
def test_bad_arguments_are_caller_errors(kwargs: dict[str, Any], error: type) -> None:
    """A bad limit or before_seq raises ValueError/TypeError before any read."""
    with pytest.raises(error):
        build_timeline(sample_thread().store, "t", **kwargs)


def test_newest_page_is_the_last_items_ascending() -> None:
    """Without before_seq the page holds the newest `limit` items, ascending by seq."""
    b = sample_thread()
    page = build_timeline(b.store, "t", limit=4)
    everything = all_items(b.store, "t", limit=1000)
    assert page["items"] == everything[-4:]
    assert page["has_more"] is True
    assert page["items"][-1]["content"] == "final"


def test_markers_report_what_they_condensed() -> None:
    """Each marker has its replaced count, ids, summary and the seq range of those messages."""
    b = sample_thread()
    items = all_items(b.store, "t", limit=1000)
    markers = [i for i in items if i["type"] == "summary_marker"]
    assert len(markers) == 2
    for got, expected in zip(markers, b.markers, strict=True):
        assert {k: got[k] for k in expected} == expected
    first, second = markers
    # the second compaction condensed the first summary (no message event) and messages
    # that the first one had kept, which were journaled before the first marker
    assert second["replaced_message_ids"][0] not in b.seq_of
    assert second["first_replaced_seq"] is not None
    assert second["first_replaced_seq"] < first["seq"] < second["last_replaced_seq"]
    assert first["last_replaced_seq"] < first["seq"]


def test_message_items_carry_their_fields() -> None:
    """Message items keep content, tool calls, and the tool result's call id, name and status."""
    b = sample_thread()
    items = all_items(b.store, "t", limit=1000)
    assert [i["type"] for i in items if i["type"] != "summary_marker"] == [m.type for m in b.full]
    assert [i["id"] for i in items if i["type"] != "summary_marker"] == [m.id for m in b.full]
    ai_with_calls = next(i for i in items if i["type"] == "ai" and i["tool_calls"])
    assert [c["name"] for c in ai_with_calls["tool_calls"]] == ["lookup", "lookup"]
    tool = next(i for i in items if i["type"] == "tool")
    assert tool["tool_call_id"] == ai_with_calls["tool_calls"][0]["id"]
    assert tool["name"] == "lookup"
    assert tool["status"] == "success"
    assert tool["run_id"] == "run-1"
    record = next(e for e in b.store.read("t") if e.seq == tool["seq"])
    assert tool["created_at"] == record.model_dump(mode="json")["created_at"]  # "...Z"
    assert tool["created_at"].endswith("Z")


def test_include_markers_false_filters_before_the_limit() -> None:
    """Without markers each page still holds `limit` messages, and no marker appears."""
    b = sample_thread()
    items = all_items(b.store, "t", limit=3, include_markers=False)
    assert [i["id"] for i in items] == [m.id for m in b.full]
    page = build_timeline(b.store, "t", limit=5, include_markers=False)
    assert len(page["items"]) == 5
    assert all(i["type"] != "summary_marker" for i in page["items"])


class CountingStore(MemoryEventStore):
    """Counts how many events the store hands out."""

    events_read = 0

    def _read(self, *args: Any) -> list[RunEvent]:
        result = super()._read(*args)
        self.events_read += len(result)
        return result


def test_a_page_reads_a_bounded_number_of_events() -> None:
    """A page near the end of a long thread reads O(page + compacted state), not O(thread)."""
    b = ThreadBuilder(CountingStore())
    b.new_run()
    for i in range(300):
        b.human()
        b.turn(tools=1)
        b.noise(3)
        if i % 10 == 9:  # a trigger keeps the state small, as in a real agent
            b.compact(keep=4)
    store = b.store
    assert isinstance(store, CountingStore)
    store.events_read = 0
    page = build_timeline(store, "t", limit=5)
    assert page["items"][-1]["type"] == "summary_marker"
    assert store.last_seq("t") > 2500
    # the marker scans back over the compacted state (about 40 messages) and no further
    assert store.events_read < 100
    assert page["items"][-1]["first_replaced_seq"] == b.markers[-1]["first_replaced_seq"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=OPS,
    keep=st.integers(min_value=0, max_value=4),
    limit=st.integers(min_value=1, max_value=7),
    include_markers=st.booleans(),
)
def test_pages_walk_back_to_seq_1_without_loss_or_repeat(
    ops: list[str], keep: int, limit: int, include_markers: bool
) -> None:
    """Following next_before_seq yields every message (and marker) once, in seq order."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.play(ops, keep)
    items = all_items(b.store, "t", limit=limit, include_markers=include_markers)
    messages = [i for i in items if i["type"] != "summary_marker"]
    markers = [i for i in items if i["type"] == "summary_marker"]
    assert [i["id"] for i in messages] == [m.id for m in b.full]
    assert [i["seq"] for i in items] == sorted(
        [b.seq_of[str(m.id)] for m in b.full] + [m["seq"] for m in markers]
    )
    assert len(markers) == (len(b.markers) if include_markers else 0)
    for got, want in zip(markers, b.markers, strict=False):
        assert {k: got[k] for k in want} == want


async def test_async_variant_returns_the_same_pages() -> None:
    """abuild_timeline returns exactly what build_timeline returns, page by page."""
    b = sample_thread()
    before = None
    while True:
        page = await abuild_timeline(b.store, "t", before_seq=before, limit=3)
        assert page == build_timeline(b.store, "t", before_seq=before, limit=3)
        if not page["has_more"]:
            break
        before = page["next_before_seq"]
    with pytest.raises(ThreadNotFoundError):
        await abuild_timeline(b.store, "missing")


def test_an_unjournaled_replaced_id_does_not_scan_the_whole_thread() -> None:
    """A replaced id with no message event stops the scan at the previous marker."""
    b = ThreadBuilder(CountingStore())
    b.new_run()
    for _ in range(200):
        b.human()
        b.turn()
    b.compact(keep=2)
    b.state.append(HumanMessage("never journaled", id="ghost"))
    b.human()
    b.compact(keep=1)
    store = b.store
    assert isinstance(store, CountingStore)
    store.events_read = 0
    (marker,) = build_timeline(store, "t", limit=1)["items"]
    assert "ghost" in marker["replaced_message_ids"]
    assert marker["first_replaced_seq"] == b.markers[-1]["first_replaced_seq"]
    assert store.events_read < 30
