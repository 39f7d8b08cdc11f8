"""The ``RunEventStore`` contract suite, written once and run against every backend.

A backend's test module subclasses :class:`StoreContract` and implements :meth:`create_store`::

    class TestMemoryStore(StoreContract):
        def create_store(self, **options: Any) -> RunEventStore:
            return MemoryEventStore(**options)

Every test gets a fresh, empty store from the ``store`` fixture (closed afterwards). ``options``
are constructor keyword arguments the suite needs (only ``content_caps``). ``self.tmp_path`` is a
per-test temporary directory a backend may put its files in. Async tests are plain ``async def``
methods (pytest-asyncio in auto mode runs them).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx

from journal import NewEvent, RunEvent, RunEventStore, StoreClosedError
from journal.encoding import dumps
from journal.truncation import DEFAULT_METADATA_CAP

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def ev(
    thread_id: str = "t1",
    *,
    run_id: str = "r1",
    category: str = "trace",
    event_type: str | None = None,
    content: Any = None,
    metadata: dict[str, Any] | None = None,
    event_id: str | None = None,
    created_at: datetime | None = None,
) -> NewEvent:
    """A valid ``NewEvent`` with sensible defaults for the category."""
    default_types = {
        "lifecycle": "run.start",
        "message": "message.human",
        "trace": "llm.start",
        "middleware": "middleware:summarize",
    }
    fields: dict[str, Any] = {
        "thread_id": thread_id,
        "run_id": run_id,
        "category": category,
        "event_type": event_type or default_types[category],
        "content": content,
        "metadata": metadata or {},
    }
    if event_id is not None:
        fields["event_id"] = event_id
    if created_at is not None:
        fields["created_at"] = created_at
    return NewEvent(**fields)


def many(n: int, thread_id: str = "t1", **kwargs: Any) -> list[NewEvent]:
    """``n`` valid events of one thread whose content is their index."""
    return [ev(thread_id, content={"i": i}, **kwargs) for i in range(n)]


def seqs(events: list[RunEvent]) -> list[int]:
    """The seqs of ``events`` in order."""
    return [e.seq for e in events]


class StoreContract(ABC):
    """The behaviour every ``RunEventStore`` backend must show (see ``journal.store``)."""

    tmp_path: Path

    @abstractmethod
    def create_store(self, **options: Any) -> RunEventStore:
        """Return a fresh, empty store of the backend under test built with ``options``."""

    @pytest.fixture(autouse=True)
    def _contract_tmp_path(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    @pytest.fixture
    def store(self) -> Iterator[RunEventStore]:
        """A fresh store, closed after the test."""
        store = self.create_store()
        try:
            yield store
        finally:
            store.close()

    # -- round trip ----------------------------------------------------------------------

    def test_round_trip_keeps_every_field(self, store: RunEventStore) -> None:
        """Every field of an appended event reads back equal, created_at as aware UTC."""
        content = {"text": "héllo ✓ 😀", "n": [1, 2.5, None, True], "nested": {"a": {"b": "c"}}}
        event = ev(
            "thread-é",
            run_id="run-ñ",
            category="message",
            event_type="message.ai",
            content=content,
            metadata={"model": "fake", "usage": {"input_tokens": 3}},
            event_id="evt-1",
            created_at=T0,
        )
        [stored] = store.append([event])
        [read] = store.read("thread-é")
        for record in (stored, read):
            assert record.event_id == "evt-1"
            assert record.thread_id == "thread-é"
            assert record.run_id == "run-ñ"
            assert record.seq == 1
            assert record.category == "message"
            assert record.event_type == "message.ai"
            assert record.content == content
            assert record.metadata == {"model": "fake", "usage": {"input_tokens": 3}}
            assert record.created_at == T0
            assert record.created_at.utcoffset() == timedelta(0)
            assert isinstance(record, RunEvent)
        assert stored == read

    def test_created_at_in_other_zone_reads_back_as_same_instant_in_utc(
        self, store: RunEventStore
    ) -> None:
        """A created_at with a non-UTC offset is stored as the same instant in UTC."""
        local = datetime(2026, 5, 6, 7, 8, 9, 1, tzinfo=timezone(timedelta(hours=5, minutes=30)))
        store.append([ev(created_at=local)])
        [read] = store.read("t1")
        assert read.created_at == local
        assert read.created_at.utcoffset() == timedelta(0)
        assert read.created_at.microsecond == 1

    @pytest.mark.parametrize(
        "content",
        [None, 0, -7, 3.25, "", "plain", [], {}, [1, "two", {"three": [3]}], True, False],
    )
    def test_any_json_content_round_trips(self, store: RunEventStore, content: Any) -> None:
        """Scalars, empty containers and nested values round-trip with their JSON type."""
        store.append([ev(content=content)])
        [read] = store.read("t1")
        assert read.content == content
        assert type(read.content) is type(content)

    def test_unencodable_content_is_stored_encoded(self, store: RunEventStore) -> None:
        """Non-JSON values (NaN, bytes, sets) are stored in their canonical encoding."""
        store.append([ev(content={"nan": float("nan"), "b": b"\x00\x01", "s": {2, 1}})])
        [read] = store.read("t1")
        assert read.content == {"nan": "NaN", "b": {"$bytes": "AAE="}, "s": [1, 2]}

    def test_invalid_unicode_and_huge_ints_never_fail_an_append(self, store: RunEventStore) -> None:
        """Lone surrogates become U+FFFD and ints too long for decimal text become $int."""
        big = 10**5000
        content = {"s": "a\ud800b", "\udfff": [big]}
        stored = store.append(
            [
                ev(category="message", content=content, metadata={"m": "\ud800", "n": big}),
                ev(content="\udc80" * 20_000),  # over the trace cap: truncated too
            ]
        )
        message, trace = store.read("t1")
        assert [message, trace] == stored
        assert message.content == {"s": "a\ufffdb", "\ufffd": [{"$int": hex(big)}]}
        assert message.metadata == {"m": "\ufffd", "n": {"$int": hex(big)}}
        assert trace.content.startswith("\ufffd\ufffd")
        assert trace.metadata["truncated"] is True

    def test_append_accepts_mappings(self, store: RunEventStore) -> None:
        """Plain mappings are validated into events like NewEvent instances."""
        [stored] = store.append(
            [{"thread_id": "t1", "run_id": "r1", "category": "trace", "event_type": "custom:x"}]
        )
        assert stored.seq == 1
        assert stored.event_type == "custom:x"
        assert store.read("t1") == [stored]

    def test_append_of_empty_batch_writes_nothing(self, store: RunEventStore) -> None:
        """An empty batch returns an empty list and creates no thread."""
        assert store.append([]) == []
        assert store.list_threads() == []

    def test_append_returns_records_in_input_order(self, store: RunEventStore) -> None:
        """append returns one record per input, in input order, equal to what read returns."""
        batch = many(5)
        stored = store.append(batch)
        assert [e.event_id for e in stored] == [e.event_id for e in batch]
        assert store.read("t1") == stored

    # -- seq ----------------------------------------------------------------------------------

    def test_seq_counts_from_one_per_thread_across_batches(self, store: RunEventStore) -> None:
        """Seqs are 1..N per thread over several batches, independent across threads."""
        store.append(many(3, "a"))
        store.append(many(2, "b"))
        store.append([*many(2, "a"), *many(1, "b"), *many(1, "c")])
        assert seqs(store.read("a")) == [1, 2, 3, 4, 5]
        assert seqs(store.read("b")) == [1, 2, 3]
        assert seqs(store.read("c")) == [1]
        assert (store.last_seq("a"), store.last_seq("b"), store.last_seq("c")) == (5, 3, 1)

    def test_last_seq_of_unknown_thread_is_zero(self, store: RunEventStore) -> None:
        """last_seq and count of a thread with no event are 0, read is empty."""
        assert store.last_seq("nobody") == 0
        assert store.count("nobody") == 0
        assert store.read("nobody") == []

    # -- atomic batches ---------------------------------------------------------------------

    def test_batch_with_one_invalid_event_writes_nothing(self, store: RunEventStore) -> None:
        """One invalid event makes the whole batch fail with ValueError; nothing is stored."""
        store.append(many(2))
        bad = {"thread_id": "t1", "run_id": "r1", "category": "nope", "event_type": "x"}
        with pytest.raises(ValueError, match="category"):
            store.append([*many(3), bad, *many(2, "other")])
        assert seqs(store.read("t1")) == [1, 2]
        assert store.last_seq("other") == 0
        assert [t.thread_id for t in store.list_threads()] == ["t1"]

    def test_single_event_instead_of_batch_is_a_type_error(self, store: RunEventStore) -> None:
        """Passing one event instead of a list raises TypeError and writes nothing."""
        with pytest.raises(TypeError, match="list"):
            store.append(ev())  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.append([42])  # type: ignore[list-item]
        assert store.last_seq("t1") == 0

    # -- idempotency --------------------------------------------------------------------------

    def test_reappending_event_id_returns_original_and_takes_no_seq(
        self, store: RunEventStore
    ) -> None:
        """Re-appending a stored event_id returns the original record; no new seq is used."""
        [original] = store.append([ev(event_id="e1", content="first")])
        [again] = store.append([ev(event_id="e1", content="second")])
        assert again == original
        assert again.content == "first"
        [nxt] = store.append([ev(content="next")])
        assert nxt.seq == 2
        assert store.count("t1") == 2

    def test_batch_mixing_stored_and_new_ids_stores_only_new(self, store: RunEventStore) -> None:
        """In a batch, stored ids return their records and new ones get the next seqs."""
        first = store.append(many(2))
        new = ev(content="new")
        result = store.append([first[1], new, first[0]])
        assert result[0] == first[1]
        assert result[2] == first[0]
        assert result[1].seq == 3
        assert seqs(store.read("t1")) == [1, 2, 3]

    def test_event_id_repeated_in_one_batch_is_stored_once(self, store: RunEventStore) -> None:
        """An event_id twice in one batch is stored once and both positions return it."""
        e = ev(event_id="dup")
        result = store.append([e, ev(), e])
        assert result[0] == result[2]
        assert result[0].seq == 1
        assert result[1].seq == 2
        assert store.count("t1") == 2

    # -- cursors and limit --------------------------------------------------------------------

    @pytest.fixture
    def ten(self, store: RunEventStore) -> RunEventStore:
        """The store with ten events (seq 1..10) in thread t1."""
        store.append(many(10))
        return store

    def test_after_seq_keeps_later_events(self, ten: RunEventStore) -> None:
        """after_seq keeps events with seq strictly greater, ascending."""
        assert seqs(ten.read("t1", after_seq=7)) == [8, 9, 10]
        assert seqs(ten.read("t1", after_seq=0)) == list(range(1, 11))
        assert ten.read("t1", after_seq=10) == []

    def test_before_seq_keeps_earlier_events(self, ten: RunEventStore) -> None:
        """before_seq keeps events with seq strictly smaller, ascending."""
        assert seqs(ten.read("t1", before_seq=4)) == [1, 2, 3]
        assert ten.read("t1", before_seq=1) == []
        assert seqs(ten.read("t1", before_seq=100)) == list(range(1, 11))

    def test_after_and_before_make_a_window(self, ten: RunEventStore) -> None:
        """after_seq and before_seq together keep the open interval between them."""
        assert seqs(ten.read("t1", after_seq=3, before_seq=7)) == [4, 5, 6]
        assert ten.read("t1", after_seq=5, before_seq=6) == []
        assert ten.read("t1", after_seq=8, before_seq=2) == []

    def test_limit_keeps_the_first_events(self, ten: RunEventStore) -> None:
        """Without before_seq, limit keeps the first matching events."""
        assert seqs(ten.read("t1", limit=3)) == [1, 2, 3]
        assert seqs(ten.read("t1", after_seq=8, limit=5)) == [9, 10]
        assert ten.read("t1", limit=0) == []

    def test_before_seq_with_limit_returns_last_events_below_ascending(
        self, ten: RunEventStore
    ) -> None:
        """before_seq + limit returns the last limit events below the cursor, ascending."""
        assert seqs(ten.read("t1", before_seq=9, limit=3)) == [6, 7, 8]
        assert seqs(ten.read("t1", before_seq=3, limit=5)) == [1, 2]
        assert seqs(ten.read("t1", after_seq=4, before_seq=9, limit=2)) == [7, 8]

    def test_walking_pages_back_visits_every_event_once(self, ten: RunEventStore) -> None:
        """Following before_seq from the head walks back to seq 1 without loss or repeat."""
        seen: list[int] = []
        cursor = ten.last_seq("t1") + 1
        while True:
            page = ten.read("t1", before_seq=cursor, limit=3)
            if not page:
                break
            seen = seqs(page) + seen
            cursor = page[0].seq
        assert seen == list(range(1, 11))

    @pytest.mark.parametrize(
        ("kwargs", "error"),
        [
            ({"after_seq": -1}, ValueError),
            ({"before_seq": -2}, ValueError),
            ({"limit": -1}, ValueError),
            ({"after_seq": "3"}, TypeError),
            ({"limit": 2.0}, TypeError),
            ({"before_seq": True}, TypeError),
        ],
    )
    def test_bad_cursor_is_rejected(
        self, store: RunEventStore, kwargs: dict[str, Any], error: type[Exception]
    ) -> None:
        """Negative or non-int cursors and limits raise ValueError/TypeError naming them."""
        with pytest.raises(error, match=next(iter(kwargs))):
            store.read("t1", **kwargs)

    def test_cursors_beyond_any_seq_are_accepted(self, ten: RunEventStore) -> None:
        """Cursors, limits and offsets larger than any 64-bit seq read like very large ones."""
        huge = 10**20
        assert ten.read("t1", after_seq=huge) == []
        assert seqs(ten.read("t1", before_seq=huge, limit=2)) == [9, 10]
        assert seqs(ten.read("t1", limit=huge)) == list(range(1, 11))
        assert list(ten.iter_events("t1", after_seq=huge)) == []
        assert len(ten.list_threads(limit=huge)) == 1
        assert ten.list_threads(offset=huge) == []

    # -- filters ------------------------------------------------------------------------------

    @pytest.fixture
    def mixed(self, store: RunEventStore) -> RunEventStore:
        """A thread mixing categories, types and runs (seq 1..6)."""
        store.append(
            [
                ev(run_id="r1", category="lifecycle", event_type="run.start"),
                ev(run_id="r1", category="message", event_type="message.human"),
                ev(run_id="r1", category="trace", event_type="llm.start"),
                ev(run_id="r1", category="message", event_type="message.ai"),
                ev(run_id="r2", category="middleware", event_type="middleware:summarize"),
                ev(run_id="r2", category="message", event_type="message.ai"),
            ]
        )
        return store

    def test_filter_by_category(self, mixed: RunEventStore) -> None:
        """category accepts a string or a collection of categories."""
        assert seqs(mixed.read("t1", category="message")) == [2, 4, 6]
        assert seqs(mixed.read("t1", category=["lifecycle", "middleware"])) == [1, 5]
        assert mixed.count("t1", category="message") == 3

    def test_filter_by_event_type(self, mixed: RunEventStore) -> None:
        """event_type accepts a string or a collection of types."""
        assert seqs(mixed.read("t1", event_type="message.ai")) == [4, 6]
        assert seqs(mixed.read("t1", event_type={"run.start", "llm.start"})) == [1, 3]

    def test_filter_by_run_id(self, mixed: RunEventStore) -> None:
        """run_id accepts a string or a collection of run ids."""
        assert seqs(mixed.read("t1", run_id="r2")) == [5, 6]
        assert seqs(mixed.read("t1", run_id=("r1", "r2"))) == [1, 2, 3, 4, 5, 6]
        assert mixed.count("t1", run_id="r2") == 2

    def test_filters_combine_with_and(self, mixed: RunEventStore) -> None:
        """Several filters together keep only events matching all of them."""
        assert seqs(mixed.read("t1", category="message", run_id="r1")) == [2, 4]
        assert mixed.count("t1", category="message", event_type="message.ai", run_id="r2") == 1

    def test_empty_filter_matches_nothing(self, mixed: RunEventStore) -> None:
        """An empty filter collection matches no event, in read, count and iter_events."""
        assert mixed.read("t1", category=[]) == []
        assert mixed.read("t1", event_type=()) == []
        assert mixed.read("t1", run_id=set()) == []
        assert mixed.count("t1", run_id=[]) == 0
        assert list(mixed.iter_events("t1", category=[])) == []

    def test_filters_apply_before_limit_and_cursors(self, mixed: RunEventStore) -> None:
        """limit counts matching events only, with either cursor."""
        assert seqs(mixed.read("t1", category="message", limit=2)) == [2, 4]
        assert seqs(mixed.read("t1", category="message", before_seq=6, limit=1)) == [4]
        assert seqs(mixed.read("t1", category="message", after_seq=2, limit=1)) == [4]

    def test_non_string_filter_is_a_type_error(self, mixed: RunEventStore) -> None:
        """A filter that is not a string or a collection of strings raises TypeError."""
        with pytest.raises(TypeError, match="category"):
            mixed.read("t1", category=5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run_id"):
            mixed.read("t1", run_id=[1])  # type: ignore[list-item]

    # -- iteration ------------------------------------------------------------------------------

    def test_iter_events_pages_through_everything(self, ten: RunEventStore) -> None:
        """iter_events yields every event after the cursor across page boundaries."""
        assert seqs(list(ten.iter_events("t1", page_size=3))) == list(range(1, 11))
        assert seqs(list(ten.iter_events("t1", after_seq=6, page_size=2))) == [7, 8, 9, 10]
        assert seqs(list(ten.iter_events("t1", page_size=5))) == list(range(1, 11))

    def test_iter_events_with_filter(self, mixed: RunEventStore) -> None:
        """iter_events applies filters on every page."""
        assert seqs(list(mixed.iter_events("t1", category="message", page_size=1))) == [2, 4, 6]

    # -- copies -------------------------------------------------------------------------------

    def test_mutating_results_changes_nothing_stored(self, store: RunEventStore) -> None:
        """Mutating returned events (append and read results) leaves the store unchanged."""
        [stored] = store.append([ev(content={"k": [1]}, metadata={"m": {"x": 1}})])
        stored.content["k"].append(2)
        stored.metadata["m"]["x"] = 99
        stored.event_type = "llm.end"
        [read] = store.read("t1")
        assert read.content == {"k": [1]}
        assert read.metadata == {"m": {"x": 1}}
        assert read.event_type == "llm.start"
        read.content["k"].clear()
        assert store.read("t1")[0].content == {"k": [1]}

    def test_mutating_input_after_append_changes_nothing_stored(self, store: RunEventStore) -> None:
        """Mutating the appended NewEvent afterwards leaves the stored copy unchanged."""
        event = ev(content={"k": [1]})
        store.append([event])
        event.content["k"].append(2)
        assert store.read("t1")[0].content == {"k": [1]}

    def test_each_read_returns_fresh_objects(self, store: RunEventStore) -> None:
        """Two reads of the same event return equal but distinct objects."""
        store.append([ev(content={"a": 1})])
        first, second = store.read("t1")[0], store.read("t1")[0]
        assert first == second
        assert first is not second
        assert first.content is not second.content

    # -- deletion -------------------------------------------------------------------------------

    def test_delete_thread_removes_only_that_thread(self, store: RunEventStore) -> None:
        """delete_thread returns the number deleted and leaves other threads intact."""
        store.append(many(3, "a"))
        store.append(many(2, "b"))
        assert store.delete_thread("a") == 3
        assert store.read("a") == []
        assert store.last_seq("a") == 0
        assert seqs(store.read("b")) == [1, 2]
        assert [t.thread_id for t in store.list_threads()] == ["b"]
        assert store.delete_thread("a") == 0
        assert store.delete_thread("never") == 0

    def test_thread_recreated_after_delete_starts_at_seq_one(self, store: RunEventStore) -> None:
        """After delete_thread, a fresh thread with the same id counts from seq 1 again."""
        old = store.append(many(4, "a"))
        store.delete_thread("a")
        new = store.append(many(2, "a"))
        assert seqs(new) == [1, 2]
        assert seqs(store.read("a")) == [1, 2]
        [again] = store.append([old[0]])  # a deleted event_id is a new event now
        assert again.seq == 3

    # -- summaries --------------------------------------------------------------------------------

    def test_list_threads_summaries(self, store: RunEventStore) -> None:
        """list_threads reports counts, last seq, runs and times, most recently active first."""
        store.append(
            [
                ev("a", run_id="r1", created_at=T0),
                ev("a", run_id="r2", created_at=T0 + timedelta(seconds=5)),
                ev("a", run_id="r2", created_at=T0 + timedelta(seconds=9)),
            ]
        )
        store.append([ev("b", run_id="r9", created_at=T0 + timedelta(seconds=20))])
        store.append([ev("c", run_id="r1", created_at=T0 + timedelta(seconds=1))])
        threads = store.list_threads()
        assert [t.thread_id for t in threads] == ["b", "a", "c"]
        a = threads[1]
        assert (a.event_count, a.last_seq, a.run_count) == (3, 3, 2)
        assert a.first_event_at == T0
        assert a.last_event_at == T0 + timedelta(seconds=9)
        assert [t.thread_id for t in store.list_threads(limit=1)] == ["b"]
        assert [t.thread_id for t in store.list_threads(offset=1)] == ["a", "c"]
        assert [t.thread_id for t in store.list_threads(limit=1, offset=2)] == ["c"]
        assert store.list_threads(offset=5) == []

    def test_list_runs_summaries(self, store: RunEventStore) -> None:
        """list_runs reports each run's seq range, count, times and lifecycle status."""
        t = [T0 + timedelta(seconds=i) for i in range(8)]
        store.append(
            [
                ev(run_id="r1", category="lifecycle", event_type="run.start", created_at=t[0]),
                ev(run_id="r1", created_at=t[1]),
                ev(run_id="r1", category="lifecycle", event_type="run.end", created_at=t[2]),
                ev(run_id="r2", category="lifecycle", event_type="run.start", created_at=t[3]),
                ev(run_id="r3", created_at=t[4]),
                ev(run_id="r2", category="lifecycle", event_type="run.error", created_at=t[5]),
                ev(run_id="r4", category="lifecycle", event_type="run.start", created_at=t[6]),
            ]
        )
        runs = {r.run_id: r for r in store.list_runs("t1")}
        assert [r.run_id for r in store.list_runs("t1")] == ["r1", "r2", "r3", "r4"]
        r1, r2 = runs["r1"], runs["r2"]
        assert (r1.first_seq, r1.last_seq, r1.event_count, r1.status) == (1, 3, 3, "success")
        assert (r1.started_at, r1.last_event_at, r1.thread_id) == (t[0], t[2], "t1")
        assert (r2.first_seq, r2.last_seq, r2.event_count, r2.status) == (4, 6, 2, "error")
        assert runs["r3"].status == "unknown"
        assert runs["r4"].status == "running"
        assert store.list_runs("nobody") == []

    # -- content caps -------------------------------------------------------------------------

    def test_oversize_trace_content_is_truncated_and_marked(self, store: RunEventStore) -> None:
        """Trace content over the default 16 KiB cap is cut and marked in metadata."""
        big = "é" * 20_000
        [stored] = store.append([ev(content={"prompt": big}, metadata={"keep": 1})])
        [read] = store.read("t1")
        assert read == stored
        assert read.metadata["truncated"] is True
        assert read.metadata["original_bytes"] > 16 * 1024
        assert read.metadata["keep"] == 1
        assert read.content["prompt"].startswith("éé")
        assert len(read.content["prompt"]) < len(big)

    def test_content_caps_are_configurable(self) -> None:
        """A store built with content_caps applies them per category."""
        store = self.create_store(content_caps={"message": 200})
        try:
            store.append([ev(category="message", content="x" * 500)])
            store.append([ev(content="y" * 500)])
            message, trace = store.read("t1")
            assert message.metadata["truncated"] is True
            assert len(message.content) < 200
            assert trace.content == "y" * 500
            assert "truncated" not in trace.metadata
        finally:
            store.close()

    def test_oversize_metadata_is_capped_and_marked(self, store: RunEventStore) -> None:
        """Metadata over the 64 KiB cap is cut like content and marked; small keys stay."""
        store.append([ev(metadata={"note": "m" * 200_000, "keep": 1})])
        [read] = store.read("t1")
        assert read.metadata["metadata_truncated"] is True
        assert read.metadata["metadata_original_bytes"] > 200_000
        assert read.metadata["keep"] == 1
        assert read.metadata["note"].startswith("mm")
        assert len(dumps(read.metadata).encode()) <= DEFAULT_METADATA_CAP + 100

    def test_llm_start_context_record_is_never_cut_by_the_metadata_cap(
        self, store: RunEventStore
    ) -> None:
        """A huge llm.start context record is stored whole; the rest is capped and marked."""
        context = {
            "messages": [
                {"id": f"m{i}", "digest": "d" * 64, "inline": {"text": "z" * 5000}}
                for i in range(100)
            ]
        }
        metadata = {"context": context, "parameters": {"prompt": "q" * 200_000}, "model": "m"}
        store.append([ev(event_type="llm.start", metadata=metadata)])
        [read] = store.read("t1")
        assert read.metadata["context"] == context
        assert read.metadata["metadata_truncated"] is True
        assert read.metadata["model"] == "m"
        assert len(read.metadata["parameters"]["prompt"]) < 70_000

    # -- input validation ---------------------------------------------------------------------

    @pytest.mark.parametrize("thread_id", ["", " x", "a\x00b", "a\nb", "x" * 257])
    def test_bad_thread_id_is_rejected_everywhere(
        self, store: RunEventStore, thread_id: str
    ) -> None:
        """Malformed thread ids raise ValueError naming thread_id in every method."""
        with pytest.raises(ValueError, match="thread_id"):
            store.append(
                [
                    {
                        "thread_id": thread_id,
                        "run_id": "r",
                        "category": "trace",
                        "event_type": "llm.start",
                    }
                ]
            )
        for call in (store.read, store.last_seq, store.count, store.list_runs, store.delete_thread):
            with pytest.raises(ValueError, match="thread_id"):
                call(thread_id)

    @pytest.mark.parametrize("field", ["thread_id", "run_id", "event_id"])
    def test_id_with_a_lone_surrogate_is_a_value_error(
        self, store: RunEventStore, field: str
    ) -> None:
        """An id that is not valid Unicode raises ValueError naming the field, not a codec error."""
        with pytest.raises(ValueError, match=field):
            store.append([{**ev().model_dump(), field: "a\ud800"}])
        with pytest.raises(ValueError, match="thread_id"):
            store.read("a\ud800")
        with pytest.raises(ValueError, match="run_id"):
            store.read("t1", run_id=["r1", "a\ud800"])
        assert store.list_threads() == []

    # -- lifecycle ------------------------------------------------------------------------------

    def test_closed_store_refuses_work_and_close_is_idempotent(self) -> None:
        """After close every method raises StoreClosedError; close can be called again."""
        store = self.create_store()
        store.append(many(1))
        store.close()
        store.close()
        with pytest.raises(StoreClosedError):
            store.append(many(1))
        with pytest.raises(StoreClosedError):
            store.read("t1")
        with pytest.raises(StoreClosedError):
            store.last_seq("t1")
        with pytest.raises(StoreClosedError):
            store.list_threads()

    def test_context_manager_closes(self) -> None:
        """Leaving a with block closes the store."""
        with self.create_store() as store:
            store.append(many(1))
        with pytest.raises(StoreClosedError):
            store.read("t1")

    # -- async API --------------------------------------------------------------------------------

    async def test_async_methods_match_sync_semantics(self, store: RunEventStore) -> None:
        """Every async method returns what its sync twin does."""
        stored = await store.aappend(many(5))
        assert seqs(stored) == [1, 2, 3, 4, 5]
        assert await store.aread("t1", before_seq=5, limit=2) == stored[2:4]
        assert await store.aread("t1", category=[]) == []
        assert [e async for e in store.aiter_events("t1", page_size=2)] == stored
        assert await store.alast_seq("t1") == 5
        assert await store.acount("t1", run_id="r1") == 5
        assert await store.alist_threads() == store.list_threads()
        assert await store.alist_runs("t1") == store.list_runs("t1")
        assert await store.aappend([stored[0]]) == [stored[0]]
        assert await store.adelete_thread("t1") == 5
        assert await store.alast_seq("t1") == 0

    async def test_async_methods_never_block_the_event_loop(self, store: RunEventStore) -> None:
        """No async method makes a blocking call (I/O, sleep, lock, SQL) on the loop thread."""
        with blockbuster_ctx(scanned_modules=["journal"]):
            stored = await store.aappend(many(3))
            assert await store.aread("t1", after_seq=1) == stored[1:]
            assert [e async for e in store.aiter_events("t1", page_size=2)] == stored
            assert await store.alast_seq("t1") == 3
            assert await store.acount("t1") == 3
            assert len(await store.alist_threads()) == 1
            assert len(await store.alist_runs("t1")) == 1
            assert await store.adelete_thread("t1") == 3

    async def test_async_bad_input_raises_before_writing(self, store: RunEventStore) -> None:
        """aappend rejects an invalid batch with ValueError and writes nothing."""
        with pytest.raises(ValueError, match="event_type"):
            await store.aappend(
                [
                    *many(2),
                    {
                        "thread_id": "t1",
                        "run_id": "r",
                        "category": "trace",
                        "event_type": "bad type",
                    },
                ]
            )
        assert await store.alast_seq("t1") == 0

    async def test_concurrent_async_appends_get_distinct_seqs(self, store: RunEventStore) -> None:
        """Concurrent aappend calls on one thread get gap-free, distinct seqs."""
        results = await asyncio.gather(*(store.aappend(many(3)) for _ in range(10)))
        all_seqs = sorted(s for batch in results for s in seqs(batch))
        assert all_seqs == list(range(1, 31))
        for batch in results:  # a batch is contiguous
            assert seqs(batch) == list(range(batch[0].seq, batch[0].seq + 3))

    async def test_aclose_closes(self) -> None:
        """aclose closes the store like close."""
        store = self.create_store()
        await store.aclose()
        with pytest.raises(StoreClosedError):
            await store.aread("t1")
