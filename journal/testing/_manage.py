"""Contract: deletion, summaries, content caps, input validation and the store lifecycle."""

from __future__ import annotations

from datetime import timedelta

import pytest

from journal.encoding import dumps
from journal.errors import StoreClosedError
from journal.store import RunEventStore
from journal.testing._base import ContractBase
from journal.testing._helpers import T0, ev, many, seqs
from journal.truncation import DEFAULT_METADATA_CAP


class ManageContract(ContractBase):
    """Retention, summaries, caps, validation and closing."""

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
