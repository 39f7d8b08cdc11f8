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
from journal import MemoryEventStore, NewEvent, RunEventStore, RunJournal, SqliteEventStore
from journal._batch import KnownEvents
from journal._known_inputs import KnownInputs, message_id_of, stored_marks
from journal.digests import content_digest, stored_digest
from journal.encoding import dumps
from journal.errors import StoreClosedError
from journal.messages import MESSAGE_EVENT_TYPES, message_to_content
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
        and "\\u0000" not in dumps(e["content"]) + dumps(e["metadata"])  # (SQLite: a NUL)
        for e in events[after or 0:] if e["event_type"] in TYPES
    )  # fmt: skip
    if plain:  # the usual thread: answered at once
        assert marks is not None


#: ASCII strings JSON escapes (quotes, backslashes, control characters) or not; a NUL only in
#: a few ids (a text holding one is read from the events).
ascii_text = st.text(alphabet=st.characters(codec="ascii", exclude_characters="\x00"), max_size=10)
string_ids = st.one_of(ascii_text, st.sampled_from(["", "a\x00b", '"', "\\", "m1"]))
other_ids = st.one_of(
    st.integers(-(2**70), 2**70), st.booleans(), st.none(), st.lists(ascii_text, max_size=2)
)


@st.composite
def plain_event(draw: Any) -> dict[str, Any]:
    """An event whose marks the one-row read answers: a digest that is an ASCII string, an
    id that is one or no string at all; any content the id may sit in."""
    event_type = draw(st.sampled_from([*TYPES, *TYPES, "llm.start", "run.start"]))
    category = (
        "message"
        if event_type.startswith("message.")
        else ("trace" if event_type == "llm.start" else "lifecycle")
    )
    data: dict[str, Any] = {"content": draw(ascii_text)}
    if draw(st.integers(0, 7)):  # mostly an id, mostly a string
        data["id"] = draw(string_ids if draw(st.integers(0, 3)) else other_ids)
    shape = draw(st.sampled_from(["message"] * 5 + ["flat", "list", "scalar"]))
    content: Any
    if shape == "message":
        content = {"type": "human", "data": data, "data.id": draw(ascii_text)}
    elif shape == "flat":
        content = {"id": draw(string_ids), "data": draw(st.sampled_from([1, "x", [1], None]))}
    elif shape == "list":
        content = draw(st.sampled_from([{"data": [data]}, [{"data": data}]]))
    else:  # content that is a JSON string, number or null
        content = draw(st.one_of(ascii_text, st.integers(-(2**70), 2**70), st.none()))
    metadata = {"caller": "user", "digest": draw(ascii_text), "digest.x": draw(ascii_text)}
    return {"run_id": "r", "category": category, "event_type": event_type,
            "content": content, "metadata": metadata}  # fmt: skip


def _has_nul(event: dict[str, Any]) -> bool:
    """Whether the event's stored texts hold a NUL (``\\u0000``)."""
    return any("\\u0000" in dumps(event[key]) for key in ("content", "metadata"))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    events=st.lists(plain_event(), min_size=1, max_size=16),
    after=st.sampled_from([None, None, None, 0, 1, 3, 2**63 - 1, 2**64]),
    types=st.sampled_from([TYPES, TYPES, ("message.human", "message.system"), ("message.ai",)]),
)
def test_the_one_row_read_answers_the_usual_thread_as_the_events_say(
    tmp_path_factory: pytest.TempPathFactory,
    events: list[dict[str, Any]],
    after: int | None,
    types: tuple[str, ...],
) -> None:
    """Threads whose digests are ASCII strings are answered in one row (the fast path, every
    example), with what the events say: ids and digests JSON escapes, ids that are empty or
    no string, contents that are lists or scalars, other event types, another thread, any
    cursor; a text holding a NUL (which ``json_extract`` cuts) is read from the events."""
    store = SqliteEventStore(tmp_path_factory.mktemp("plain") / "m.db")
    try:
        store.append([{**e, "thread_id": "other"} for e in events[:2]])
        store.append([{**e, "thread_id": "t"} for e in events])
        store.append([{**e, "thread_id": "other"} for e in events[2:]])
        marks = store._message_marks("t", types, after)
        stored = store.read("t", event_type=list(types), after_seq=after)
        expected = [(e.seq, message_id_of(e.content), stored_digest(e.content, e.metadata))
                    for e in stored]  # fmt: skip
        nul = any(_has_nul(e) for e in events if e["event_type"] in types)
        if not nul:
            assert marks is not None
        if marks is not None:
            assert marks == expected
        assert stored_marks(store, "t", types, after) == expected
    finally:
        store.close()


@pytest.mark.parametrize(
    ("content", "metadata"),
    [
        ({"data": {"id": "a\x00b"}}, {"digest": "d"}),
        ({"data": {"id": "m"}}, {"digest": "d\x00e"}),
        ({"data": {"id": "\x00"}}, {"digest": "\x00"}),
    ],
    ids=["id", "digest", "both"],
)
def test_an_id_or_a_digest_holding_a_nul_is_read_whole(
    tmp_path: Path, content: dict[str, Any], metadata: dict[str, Any]
) -> None:
    """SQLite's ``json_extract`` ends a string at its ``\\u0000``: such a thread is read from
    its events, its ids and digests whole (not ``a`` for ``a\\x00b``)."""
    store = SqliteEventStore(tmp_path / "n.db")
    event = {"thread_id": "t", "run_id": "r", "category": "message",
             "event_type": "message.human", "content": content, "metadata": metadata}  # fmt: skip
    store.append([event, {**event, "content": {"data": {"id": "a"}}, "metadata": {"digest": "x"}}])
    expected = [(1, content["data"]["id"], metadata["digest"]), (2, "a", "x")]
    assert store._message_marks("t", TYPES) in (None, expected)
    assert stored_marks(store, "t", TYPES) == expected
    store.close()


def test_a_fresh_writer_drops_a_resent_message_whose_id_holds_a_nul(tmp_path: Path) -> None:
    """A message whose id holds a NUL, stored with its digest, is known stored by a fresh
    writer: resent as input, it is dropped (not journaled again under a cut id)."""
    store = SqliteEventStore(tmp_path / "k.db")
    message = HumanMessage("hi", id="a\x00b")
    content = message_to_content(message)
    event = NewEvent(thread_id="t", run_id="r", category="message",
                     event_type="message.human", content=content,
                     metadata={"caller": "user", "digest": content_digest(content)})  # fmt: skip
    store.append([event])
    batch = KnownEvents()
    batch.add(event.model_copy(update={"run_id": "r2"}))
    assert list(KnownInputs(store).drop_repeats(batch)) == []
    store.close()


def test_the_arguments_are_checked_as_a_read_checks_them(tmp_path: Path) -> None:
    """A cursor beyond 64 bits reads as the last seq; a bad cursor or thread id raises what
    ``read`` raises; a closed store raises ``StoreClosedError`` even with no type asked."""
    store = SqliteEventStore(tmp_path / "a.db")
    store.append([{"thread_id": "t", "run_id": "r", "category": "message",
                   "event_type": "message.human", "content": {"data": {"id": "m"}},
                   "metadata": {"digest": "d"}}])  # fmt: skip
    assert store._message_marks("t", TYPES, 2**63 - 1) == []
    assert store._message_marks("t", TYPES, 2**64) == stored_marks(store, "t", TYPES, 2**64) == []
    for thread_id, after, error in [("t", -1, ValueError), ("t", True, TypeError),
                                    ("", None, ValueError), (" t", None, ValueError)]:  # fmt: skip
        with pytest.raises(error):
            store.read(thread_id, event_type=list(TYPES), after_seq=after)
        with pytest.raises(error):
            store._message_marks(thread_id, TYPES, after)
    store.close()
    with pytest.raises(StoreClosedError):
        store._message_marks("t", ())
    with pytest.raises(StoreClosedError):
        store._message_marks("t", TYPES)


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
