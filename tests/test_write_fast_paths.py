"""The write path's fast paths hold to the checked paths they stand for.

* ``RunEventStore._append_unreturned`` (what the journal's writer calls: it does not use the
  records) stores exactly what ``append`` stores: the same rows, heads and runs, the same
  errors, ``event_id`` retries included; a subclass that changes the append gets its own.
* ``prepare_batch`` of a :class:`KnownEvents` batch (its own loop) gives the texts, events and
  ownership the input's path gives the same events (their kinds or texts handed over, or not).
* The SQLite insert by chunks of rows (one statement each) stores and fails as the insert
  row by row (``executemany``) does.
* ``KnownInputs.drop_repeats`` keeps, drops and replaces what the per-event ``select`` it
  replaced did, and leaves the same cache behind.
* A known batch's times (each event's ``created_at`` in µs, as the journal's writer hands
  them) store what the events' ``created_at`` store.
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from journal import MemoryEventStore, NewEvent, SqliteEventStore, _sqlite_write
from journal._batch import KnownEvents, prepare_batch
from journal._known_inputs import (
    HISTORY_TYPES,
    INPUT_TYPES,
    KnownInputs,
    as_edit,
    is_input,
    message_id_of,
    select,
)
from journal._sqlite_rows import to_micros
from journal.digests import stored_digest
from journal.encoding import NOT_PLAIN, dumps_plain, plain_kind
from journal.events import RunEvent, construct
from journal.store import RunEventStore
from journal.truncation import DEFAULT_CONTENT_CAPS

_BASE = datetime(2026, 1, 1, tzinfo=UTC)
_KINDS = [
    ("trace", "llm.start"),
    ("trace", "llm.end"),
    ("trace", "llm.error"),
    ("trace", "tool.start"),
    ("trace", "tool.end"),
    ("message", "message.ai"),
    ("message", "message.human"),
    ("message", "message.tool"),
    ("lifecycle", "run.start"),
    ("lifecycle", "run.end"),
]
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                               max_size=3),
    max_leaves=10,
)  # fmt: skip
_usage = st.fixed_dictionaries(
    {"input_tokens": st.integers(0, 500), "output_tokens": st.integers(0, 500)}
)
_metadata = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {"usage": _usage, "model": st.sampled_from(["m1", "m2"])},
        optional={"caller": st.sampled_from(["agent", "sub"])},
    ),
    st.dictionaries(st.text(max_size=3), _json, max_size=2),
)
_content = st.one_of(
    _json,
    st.fixed_dictionaries({"type": st.just("ai"), "data": st.fixed_dictionaries(
        {"id": st.sampled_from(["m1", "m2", "m3"]), "content": st.text(max_size=300)})}),
    st.fixed_dictionaries({"text": st.text(max_size=400)}),
)  # fmt: skip
# thread, run, (category, type), content, metadata, event id (a small pool: repeats)
_spec = st.tuples(
    st.sampled_from(["t1", "t2"]),
    st.sampled_from(["r1", "r2"]),
    st.sampled_from(_KINDS),
    _content,
    _metadata,
    st.integers(0, 40),
)


def _event(spec: tuple[Any, ...], at: int) -> NewEvent:
    thread, run, (category, event_type), content, metadata, number = spec
    return NewEvent(
        event_id=f"00000000-0000-7000-8000-{number:012x}",
        thread_id=thread,
        run_id=run,
        category=category,
        event_type=event_type,
        content=content,
        metadata=metadata,
        created_at=_BASE + timedelta(microseconds=at),
    )


def _batch(specs: list[tuple[Any, ...]], start: int, form: str) -> Any:
    """The batch of ``specs`` as the journal (``known``) or a caller (``events``) hands it."""
    events = [_event(spec, start + k) for k, spec in enumerate(specs)]
    if form == "events":
        return events
    batch = KnownEvents(handed_over=True)
    for event in events:
        batch.add(event, plain_kind(event.content), plain_kind(event.metadata))
    return batch


def _tables(path: Path) -> list[list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("events", "thread_heads", "runs")
        ]
    finally:
        conn.close()


def _outcome(action: Callable[[], Any]) -> str | None:
    try:
        action()
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.lists(_spec, min_size=1, max_size=12), min_size=1, max_size=5),
    form=st.sampled_from(["known", "events"]),
)
def test_an_append_without_records_stores_what_append_stores(
    batches: list[list[tuple[Any, ...]]], form: str
) -> None:
    """Batch after batch (ids repeated within and across them: the stored ones' retry), the
    same rows, heads and runs, byte for byte."""
    with tempfile.TemporaryDirectory() as raw:
        paths = [Path(raw) / "append.db", Path(raw) / "unreturned.db"]
        stores = [SqliteEventStore(path) for path in paths]
        try:
            start = 0
            for specs in batches:
                returned = stores[0].append(_batch(specs, start, form))
                assert stores[1]._append_unreturned(_batch(specs, start, form)) is None
                assert len(returned) == len(specs)
                start += len(specs)
        finally:
            for store in stores:
                store.close()
        assert _tables(paths[0]) == _tables(paths[1])


@pytest.mark.parametrize(
    "bad",
    [
        {"thread_id": "", "run_id": "r", "category": "trace", "event_type": "llm.end"},
        {"thread_id": "t", "run_id": "r", "category": "trace", "event_type": "message.ai"},
        "not an event",
    ],
)
def test_an_append_without_records_raises_what_append_raises(tmp_path: Path, bad: Any) -> None:
    """Invalid input: the same error, nothing written."""
    store = SqliteEventStore(tmp_path / "s.db")
    good = {"thread_id": "t", "run_id": "r", "category": "trace", "event_type": "llm.end"}
    first = _outcome(lambda: store.append([good, bad]))
    assert first is not None
    assert _outcome(lambda: store._append_unreturned([good, bad])) == first
    assert store.last_seq("t") == 0
    store.close()


def test_a_subclass_that_changes_the_append_gets_its_own(tmp_path: Path) -> None:
    """A store whose ``append`` or ``_append`` is its own (a test's fault, a backend's
    wrapper) is called as it is: the writer's append goes through it."""
    calls: list[str] = []

    class Counting(SqliteEventStore):
        def _append(self, events: Any, new_ids: Any = None, records: bool = True) -> Any:
            calls.append("_append")
            return super()._append(events, new_ids, records)

    class Wrapping(SqliteEventStore):
        def append(self, events: Any) -> Any:
            calls.append("append")
            return super().append(events)

    event = {"thread_id": "t", "run_id": "r", "category": "trace", "event_type": "llm.end"}
    for kind, name in ((Counting, "counting"), (Wrapping, "wrapping")):
        store = kind(tmp_path / f"{name}.db")
        store._append_unreturned([event])
        assert store.last_seq("t") == 1
        store.close()
    store = SqliteEventStore(tmp_path / "patched.db")
    append = store.append

    def patched(events: Any) -> Any:
        calls.append("patched")
        return append(events)

    store.append = patched  # type: ignore[method-assign]
    store._append_unreturned([event])
    assert store.last_seq("t") == 1
    store.close()
    assert calls == ["_append", "append", "patched"]

    class Plain(RunEventStore):  # a third-party backend: append, as always
        pass

    assert Plain._append_unreturned is RunEventStore._append_unreturned


def test_an_append_patched_on_the_class_is_what_the_journal_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrapper set on the class (``monkeypatch``, ``mock.patch.object``, instrumentation)
    of ``RunEventStore.append`` or of ``SqliteEventStore._append`` in its documented form
    (``events, new_ids=None``) runs for the journal's writes of a real run, and every event is
    stored (the writer's append without records compared the class with itself: the wrapper
    never ran, and the older ``_append`` form dropped every event as bad input)."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from journal import RunJournal
    from tests.fakes import ScriptedChatModel, ai

    calls: list[str] = []
    append, private = RunEventStore.append, SqliteEventStore._append

    def spied(self: RunEventStore, events: Any) -> Any:
        calls.append("append")
        return append(self, events)

    def wrapped(self: SqliteEventStore, events: Any, new_ids: Any = None) -> Any:
        calls.append("_append")
        return private(self, events, new_ids)

    for name, owner, wrapper in (
        ("append", RunEventStore, spied),
        ("_append", SqliteEventStore, wrapped),
    ):
        calls.clear()
        with monkeypatch.context() as patch:
            patch.setattr(owner, name, wrapper)
            store = SqliteEventStore(tmp_path / f"{name}.db")
            journal = RunJournal(store, spool_path=tmp_path / f"{name}.jsonl")
            agent = create_agent(ScriptedChatModel([ai("hello")]), [])
            config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [journal]}
            agent.invoke({"messages": [HumanMessage("hi")]}, config)
            assert journal.flush(10)
            journal.close()
            types = [e.event_type for e in store.read("t")]
            store.close()
        assert calls and set(calls) == {name}, name
        assert types[0] == "run.start" and types[-1] == "run.end", types
        assert "message.human" in types and "message.ai" in types


# -- prepare of a KnownEvents batch -------------------------------------------------------------


@pytest.mark.parametrize("size", [5, 100_000])
def test_a_known_event_of_no_known_category_is_refused_whatever_its_size(
    tmp_path: Path, size: int
) -> None:
    """A handed-over event whose category has no cap (a maker's fault) is refused, the batch
    with it, also when its texts are short (the check for short texts skipped the cap and
    with it the category)."""
    good = _event(("t", "r", ("trace", "tool.end"), {}, {}, 1), 0)
    values = {**_event(("t", "r", ("trace", "tool.end"), {"x": "y" * size}, {}, 2), 1).__dict__}
    values["category"] = "bogus"
    bad = construct(NewEvent, values)
    store = SqliteEventStore(tmp_path / "known.db")
    batch = KnownEvents(handed_over=True)
    for event in (good, bad):
        batch.add(event, plain_kind(event.content), plain_kind(event.metadata))
    for append in (store.append, store._append_unreturned):
        with pytest.raises(KeyError, match="bogus"):
            append(batch)
    assert store.last_seq("t") == 0
    store.close()


def _hint(value: Any, how: str) -> Any:
    if how == "kind":
        return plain_kind(value)
    if how == "text":
        return dumps_plain(value)
    return NOT_PLAIN


@settings(max_examples=400, deadline=None)
@given(
    specs=st.lists(
        st.tuples(_spec, st.sampled_from(["none", "kind", "text"]),
                  st.sampled_from(["none", "kind", "text"]), st.booleans()),
        min_size=1, max_size=8,
    ),
    handed_over=st.booleans(),
    records=st.booleans(),
    cap=st.integers(64, 600),
    metadata_cap=st.integers(64, 600),
)  # fmt: skip
def test_a_known_batch_prepares_as_the_inputs_path(
    specs: list[tuple[Any, ...]], handed_over: bool, records: bool, cap: int, metadata_cap: int
) -> None:
    """Texts, events and ownership as ``prepare`` of the same events without hints (each
    walked and encoded by the rules), near the caps too; a stored record the backend takes
    stays itself unless cut."""
    caps = {**DEFAULT_CONTENT_CAPS, "trace": cap, "message": max(64, cap * 2)}
    known = KnownEvents(handed_over=handed_over)
    plain: list[NewEvent] = []
    for k, (spec, content_how, metadata_how, stored) in enumerate(specs):
        event = _event(spec, k)
        plain.append(event)
        if stored:
            event = construct(RunEvent, {**event.__dict__, "seq": k + 1})
        known.add(event, _hint(event.content, content_how), _hint(event.metadata, metadata_how))
    fast = prepare_batch(known, caps, metadata_cap, records)
    checked = prepare_batch(plain, caps, metadata_cap)
    assert fast.texts == checked.texts
    assert len(fast) == len(checked) == len(fast.owned)
    for raw, got, want, owned in zip(known, fast, checked, fast.owned, strict=True):
        assert got.model_dump(exclude={"seq"}) == want.model_dump()
        assert owned == (handed_over or got is not raw)
        if type(raw) is RunEvent:
            assert (got is raw) == (records and want is plain[known.index(raw)])
        else:
            assert type(got) is NewEvent


# -- drop_repeats -------------------------------------------------------------------------------


def _types_of_reference(event_type: str) -> tuple[str, ...] | None:
    if event_type in INPUT_TYPES:
        return INPUT_TYPES
    return HISTORY_TYPES if event_type in HISTORY_TYPES else None


def _reference_drop_repeats(
    inputs: KnownInputs, events: KnownEvents, ask_store: bool = True
) -> KnownEvents:
    """``drop_repeats`` as it was: a ``select`` that asks ``keep`` of every event."""
    asking = ask_store
    asked: set[tuple[str, tuple[str, ...]]] = set()

    def keep(event: NewEvent) -> NewEvent | None:
        nonlocal asking
        types = _types_of_reference(event.event_type)
        if types is None:
            return event
        if not is_input(event):
            known = inputs._known(event.thread_id, types, ask_store=False)
            mid = message_id_of(event.content)
            if known is not None and mid is not None:
                known[mid] = stored_digest(event.content, event.metadata)
            return event
        known = inputs._known(event.thread_id, types, asking, asked)
        if known is None:
            asking = False
            return event
        return as_edit(event, known)

    return select(events, keep)


_MESSAGE_TYPES = ["message.human", "message.system", "message.ai", "message.tool"]
_message_spec = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from([*_MESSAGE_TYPES, "llm.end"]),
    st.sampled_from(["a", "b", "c", None]),  # the message id
    st.sampled_from(["x", "y"]),  # its text
    st.sampled_from(["user", "agent", None]),  # the caller
    st.booleans(),  # a replacement
    st.booleans(),  # the digest recorded
)


def _message(spec: tuple[Any, ...], k: int) -> NewEvent:
    thread, event_type, mid, text, caller, replacement, digest = spec
    category = "trace" if event_type == "llm.end" else "message"
    data: dict[str, Any] = {"content": text} if mid is None else {"content": text, "id": mid}
    content = {"type": event_type.rpartition(".")[2], "data": data}
    metadata: dict[str, Any] = {}
    if caller is not None:
        metadata["caller"] = caller
    if replacement:
        metadata["replacement"] = True
    if digest:
        metadata["digest"] = f"d-{text}"
    return NewEvent(thread_id=thread, run_id="r", category=category, event_type=event_type,
                    content=content, metadata=metadata,
                    created_at=_BASE + timedelta(microseconds=k))  # fmt: skip


def _cache(inputs: KnownInputs) -> list[Any]:
    return [
        (thread, [(types, dict(s.versions), s.seq) for types, s in read.items()])
        for thread, read in inputs._threads.items()
    ]


def _shape(events: KnownEvents, batch: KnownEvents) -> list[Any]:
    return [
        (event is next((e for e in batch if e is event), None), event.model_dump(), hints)
        for event, hints in zip(events, events.hints, strict=True)
    ]


@settings(max_examples=300, deadline=None)
@given(
    stored=st.lists(_message_spec, max_size=8),
    batches=st.lists(
        st.tuples(st.lists(_message_spec, max_size=10), st.booleans()), min_size=1, max_size=4
    ),
)
def test_drop_repeats_keeps_what_the_per_event_select_kept(
    stored: list[tuple[Any, ...]], batches: list[tuple[list[tuple[Any, ...]], bool]]
) -> None:
    """Batch after batch (the store asked or not), the same events kept, dropped and made
    edits, with their hints, and the same cache (its order too) left behind."""
    store = MemoryEventStore()
    if stored:
        store.append([_message(spec, k) for k, spec in enumerate(stored)])
    new, old = KnownInputs(store), KnownInputs(store)
    for specs, ask in batches:
        batch = KnownEvents(handed_over=True)
        for k, spec in enumerate(specs):
            event = _message(spec, k)
            batch.add(event, "text" if k % 2 else NOT_PLAIN, plain_kind(event.metadata))
        got = new.drop_repeats(batch, ask_store=ask)
        want = _reference_drop_repeats(old, batch, ask_store=ask)
        assert (got is batch) == (want is batch)
        assert _shape(got, batch) == _shape(want, batch)
        assert _cache(new) == _cache(old)


# -- the chunked insert -------------------------------------------------------------------------


@contextmanager
def _row_by_row() -> Iterator[None]:
    """Every insert by ``executemany``, as before chunks (no chunk fills)."""
    chunk = _sqlite_write._CHUNK
    _sqlite_write._CHUNK = 10**9
    try:
        yield
    finally:
        _sqlite_write._CHUNK = chunk


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 130), min_size=1, max_size=3),
    pool=st.integers(40, 400),
    seed=st.integers(0, 2**16),
)
def test_a_chunked_insert_stores_what_executemany_stores(
    sizes: list[int], pool: int, seed: int
) -> None:
    """Batches of up to 130 events (ids drawn from a pool: repeats within a chunk, across
    chunks and batches, which the look-up retry stores once): the same rows, heads and runs
    whether the events go in by chunks or row by row."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as raw:
        paths = [Path(raw) / "chunks.db", Path(raw) / "rows.db"]
        stores = [SqliteEventStore(path) for path in paths]
        try:
            start = 0
            for size in sizes:
                specs = [
                    (rng.choice(["t1", "t2"]) if size % 3 == 0 else "t1", "r1",
                     rng.choice(_KINDS), {"n": k}, {}, rng.randrange(pool))
                    for k in range(size)
                ]  # fmt: skip
                got = stores[0].append(_batch(specs, start, "known"))
                with _row_by_row():
                    want = stores[1].append(_batch(specs, start, "known"))
                assert [r.model_dump() for r in got] == [r.model_dump() for r in want]
                start += size
        finally:
            for store in stores:
                store.close()
        assert _tables(paths[0]) == _tables(paths[1])


@pytest.mark.parametrize("bad_at", [0, 17, 49, 50, 77])
def test_a_chunked_insert_fails_as_executemany_fails(tmp_path: Path, bad_at: int) -> None:
    """A row the triggers reject (its seq not the next one) fails the insert with the same
    error, wherever it is in its chunk; nothing is left once rolled back."""
    errors = []
    for name, row_by_row in (("chunks", False), ("rows", True)):
        SqliteEventStore(tmp_path / f"{name}.db").close()
        conn = sqlite3.connect(tmp_path / f"{name}.db", isolation_level=None)
        rows = [
            (f"00000000-0000-7000-8000-{k:012x}", "t", k + 1 + (k == bad_at), "r", "trace",
             "llm.end", "{}", "{}", k)
            for k in range(80)
        ]  # fmt: skip
        conn.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.IntegrityError) as raised:
            if row_by_row:
                with _row_by_row():
                    _sqlite_write._insert(conn, rows)
            else:
                _sqlite_write._insert(conn, rows)
        conn.execute("ROLLBACK")
        errors.append(str(raised.value))
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)
        conn.close()
    assert errors[0] == errors[1]


_AT_MIN = -62_135_596_800_000_000 - 1_767_225_600_000_000 + 1  # (year 1 and 9999, from _BASE)
_AT_MAX = 253_402_300_799_999_999 - 1_767_225_600_000_000 - 1_000


def _timed(specs: list[tuple[Any, ...]], start: int, timed: bool, extra: bool) -> KnownEvents:
    """The ``known`` batch of ``specs``, with each event's time in µs as the journal's writer
    hands it (``timed``) or without; ``extra``: one event added after the times (then they
    are not one an event, so not used)."""
    batch = _batch(specs, start, "known")
    if timed:
        batch.times = [to_micros(event.created_at) for event in batch]
    if extra:
        batch.add(_event(specs[0], start - 1), NOT_PLAIN, NOT_PLAIN)
    return batch


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.lists(_spec, min_size=1, max_size=12), min_size=1, max_size=4),
    start=st.integers(_AT_MIN, _AT_MAX),
    extra=st.booleans(),
    records=st.booleans(),
)
def test_a_batch_with_its_times_stores_what_it_stores_without(
    batches: list[list[tuple[Any, ...]]], start: int, extra: bool, records: bool
) -> None:
    """The times a known batch carries (the writer's, from year 1 to 9999) give the rows,
    heads, runs and records its events' ``created_at`` give, ids stored already or repeated
    (the look-up retry) included."""
    with tempfile.TemporaryDirectory() as raw:
        paths = [Path(raw) / "timed.db", Path(raw) / "untimed.db"]
        stores = [SqliteEventStore(path) for path in paths]
        try:
            for specs in batches:
                timed, untimed = (_timed(specs, start, t, extra) for t in (True, False))
                if records:
                    got, want = stores[0].append(timed), stores[1].append(untimed)
                    assert [r.model_dump() for r in got] == [r.model_dump() for r in want]
                else:
                    stores[0]._append_unreturned(timed)
                    stores[1]._append_unreturned(untimed)
                start = min(start + len(specs) + 1, _AT_MAX)
        finally:
            for store in stores:
                store.close()
        assert _tables(paths[0]) == _tables(paths[1])


def test_a_prepared_batch_keeps_the_times_only_when_there_is_one_an_event() -> None:
    """``prepare`` hands the backend a known batch's times when they are one an event (else
    none: the backend converts ``created_at``)."""
    specs = [("t1", "r1", ("trace", "tool.end"), {"n": k}, {}, k) for k in range(3)]
    caps, cap = DEFAULT_CONTENT_CAPS, 4096
    timed = _timed(specs, 0, True, False)
    assert prepare_batch(timed, caps, cap).times == [to_micros(e.created_at) for e in timed]
    assert prepare_batch(_timed(specs, 0, True, True), caps, cap).times is None
    assert prepare_batch(_timed(specs, 0, False, False), caps, cap).times is None
    assert prepare_batch(list(timed), caps, cap).times is None
