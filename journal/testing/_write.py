"""Contract: appending (round trip, seq, atomic batches, idempotency)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from journal.events import RunEvent
from journal.store import RunEventStore
from journal.testing._base import ContractBase
from journal.testing._helpers import T0, ev, many, seqs


class WriteContract(ContractBase):
    """How appends store events: every field kept, seq 1..N, all-or-nothing, once per id."""

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
