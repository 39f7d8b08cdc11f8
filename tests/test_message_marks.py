"""A fresh journal reads a thread's stored messages in one SQLite row, not a row a step.

A journal that first meets a thread (one journal per request, a restart) reads the digests
of every message the thread stored, for its calls' context records, and the versions of the
messages it may have to drop as repeats. ``SqliteEventStore`` read them an event a row: each
step of the cursor hands the GIL to the agent's thread and back, which made those reads cost
the running agent many times what they cost alone (a thread of 2,200 messages: 55 ms against
4 ms in one aggregated row). ``SqliteEventStore._message_marks`` answers them in one row;
what it answers must be what the events say, and a journal must store the same events
either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import replay, verify
from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from journal._known_inputs import message_id_of, stored_marks
from journal.digests import stored_digest
from journal.messages import MESSAGE_EVENT_TYPES
from journal.postgres import PostgresEventStore
from tests.fakes import ScriptedChatModel, ai, call

TYPES = tuple(MESSAGE_EVENT_TYPES.values())

ids = st.one_of(
    st.text(alphabet=st.characters(codec="ascii"), max_size=12),
    st.text(max_size=6),  # beyond ASCII, lone surrogates included
    st.integers(),
    st.none(),
)
digests = st.one_of(
    st.text(alphabet="0123456789abcdef", min_size=1, max_size=32),
    st.text(max_size=4),
    st.integers(),
    st.none(),
)


@st.composite
def stored_event(draw: Any) -> dict[str, Any]:
    """A plain-dict event as a user or a journal may append it, message or not."""
    event_type = draw(st.sampled_from([*TYPES, "llm.start", "run.start"]))
    category = (
        "message"
        if event_type.startswith("message.")
        else ("trace" if event_type == "llm.start" else "lifecycle")
    )
    data: dict[str, Any] = {"content": draw(st.text(max_size=8))}
    if draw(st.booleans()):
        data["id"] = draw(ids)
    content: Any = draw(st.sampled_from(["message", "flat", "list"]))
    if content == "message":
        content = {"type": "human", "data": data}
    elif content == "flat":
        content = {"id": draw(ids), "data": draw(st.sampled_from([1, "x", [1]]))}
    else:
        content = {"data": [data]}
    metadata: dict[str, Any] = {"caller": "user"}
    if draw(st.booleans()) or draw(st.booleans()):
        metadata["digest"] = draw(digests)
    return {"run_id": "r", "category": category, "event_type": event_type,
            "content": content, "metadata": metadata}  # fmt: skip


def from_events(store: RunEventStore, thread: str, after: int | None) -> list[Any]:
    """The marks as the events themselves give them."""
    events = store.read(thread, event_type=list(TYPES), after_seq=after)
    return [(e.seq, message_id_of(e.content), stored_digest(e.content, e.metadata)) for e in events]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunEventStore]:
    """A built-in backend that answers the marks in one read (each example its own thread)."""
    if request.param == "sqlite":
        store: RunEventStore = SqliteEventStore(tmp_path / "marks.db")
    else:
        store = PostgresEventStore(request.getfixturevalue("postgres_db_url"))
    yield store
    store.close()


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.lists(stored_event(), max_size=12), after=st.one_of(st.none(), st.integers(0, 14)))
def test_the_marks_read_at_once_are_what_the_events_say(
    backend: RunEventStore, events: list[dict[str, Any]], after: int | None
) -> None:
    """The one-read marks equal the events' own (or the store says it cannot answer)."""
    thread = f"t-{uuid.uuid4().hex}"
    if events:
        backend.append([{**e, "thread_id": thread} for e in events])
        backend.append([{**e, "thread_id": f"{thread}-other"} for e in events[:3]])
    marks = backend._message_marks(thread, TYPES, after)
    expected = from_events(backend, thread, after)
    if marks is not None:
        assert marks == expected
    assert stored_marks(backend, thread, TYPES, after) == expected
    plain = all(
        isinstance(e["metadata"].get("digest"), str) and e["metadata"]["digest"].isascii()
        and (not isinstance(mid := message_id_of(e["content"]), str) or mid.isascii())
        for e in events[after or 0:] if e["event_type"] in TYPES
    )  # fmt: skip
    if plain:  # the usual thread: answered at once
        assert marks is not None


def test_a_thread_without_messages_and_other_stores() -> None:
    """No message: no marks; a backend without the one-row read falls back to the events."""
    memory = MemoryEventStore()
    assert memory._message_marks("t", TYPES) is None
    memory.append([{"thread_id": "t", "run_id": "r", "category": "message",
                    "event_type": "message.human", "content": {"data": {"id": "m1"}},
                    "metadata": {"digest": "d1"}}])  # fmt: skip
    assert stored_marks(memory, "t", TYPES) == [(1, "m1", "d1")]
    assert stored_marks(memory, "t", TYPES, 1) == []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize("one_row", [True, False], ids=["one-read", "event-reads"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_one_journal_per_request_stores_each_message_once(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    one_row: bool,
) -> None:
    """Fresh journals on a grown thread: every message once, its calls' context records
    refer to what is stored (nothing inlined), replay is the state, verify exact."""
    backend = SqliteEventStore if kind == "sqlite" else PostgresEventStore
    if not one_row:
        monkeypatch.setattr(backend, "_message_marks", lambda self, *a, **k: None)
    store: RunEventStore = (
        SqliteEventStore(tmp_path / "j.db")
        if kind == "sqlite"
        else PostgresEventStore(request.getfixturevalue("postgres_db_url"))
    )
    saver = InMemorySaver()
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    for turn in range(4):
        model = ScriptedChatModel([ai("", call("add", a=turn, b=1)), ai(f"{turn + 1}")])
        agent = create_agent(model, [add], checkpointer=saver)
        journal = RunJournal(store, spool_path=tmp_path / f"spool-{turn}.jsonl")
        agent.invoke(
            {"messages": [HumanMessage(f"{turn} + 1?")]}, {**config, "callbacks": [journal]}
        )
        assert journal.close()
    events = store.read("t")
    messages = [e.content["data"]["id"] for e in events if e.event_type in TYPES]
    assert len(messages) == len(set(messages)) == 4 * 4
    starts = [e for e in events if e.event_type == "llm.start"]
    assert len(starts) == 8 and all(not e.metadata["context"]["inline"] for e in starts)
    state = create_agent(ScriptedChatModel([]), [add], checkpointer=saver).get_state(config)
    assert replay(store, "t", view="state") == state.values["messages"]
    report = verify(store, "t")
    assert report["ok"] and report["exact"] == report["calls"] == 8
    store.close()


def test_a_read_changed_by_a_subclass_or_a_patch_is_what_the_journal_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose read is its own (a subclass, a patch) is read through it, not around."""

    class Filtered(SqliteEventStore):
        def read(self, thread_id: str, **kwargs: Any) -> list[Any]:
            return [e for e in super().read(thread_id, **kwargs) if e.seq != 1]

    event = {"thread_id": "t", "run_id": "r", "category": "message",
             "event_type": "message.human", "content": {"data": {"id": "m1"}},
             "metadata": {"digest": "d1"}}  # fmt: skip
    filtered = Filtered(tmp_path / "f.db")
    filtered.append([event, {**event, "content": {"data": {"id": "m2"}}}])
    assert filtered._message_marks("t", TYPES) is None
    assert stored_marks(filtered, "t", TYPES) == [(2, "m2", "d1")]
    filtered.close()
    plain = SqliteEventStore(tmp_path / "p.db")
    plain.append([event])
    assert plain._message_marks("t", TYPES) == [(1, "m1", "d1")]
    seen: list[str] = []
    read = SqliteEventStore.read

    def counted(self: SqliteEventStore, thread_id: str, **kwargs: Any) -> list[Any]:
        seen.append(thread_id)
        return read(self, thread_id, **kwargs)

    monkeypatch.setattr(SqliteEventStore, "read", counted)
    assert stored_marks(plain, "t", TYPES) == [(1, "m1", "d1")] and seen == ["t"]
    plain.close()
