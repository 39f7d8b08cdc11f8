"""Contract: reading (cursors, limits, filters, iteration, returned copies)."""

from __future__ import annotations

from typing import Any

import pytest

from journal.store import RunEventStore
from journal.testing._base import ContractBase
from journal.testing._helpers import ev, many, seqs


class ReadContract(ContractBase):
    """How reads page, filter and copy: the same semantics on every backend."""

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

    def test_filters_over_interleaved_runs_and_batches(self, store: RunEventStore) -> None:
        """Run, category and type filters find exactly the matching events when runs of a
        thread interleave across batches and another thread holds a run of the same id."""
        kinds = [("trace", "llm.end"), ("message", "message.ai"), ("lifecycle", "run.start"),
                 ("trace", "custom:x"), ("middleware", "middleware:summarize")]  # fmt: skip
        written = []
        for batch in range(4):
            events = [
                ev(
                    "t1",
                    run_id=f"r{(batch + k) % 3}",
                    category=kinds[k % 5][0],
                    event_type=kinds[k % 5][1],
                )
                for k in range(7)
            ]
            written += store.append([*events, ev("t2", run_id="r1")])
        mine = [e for e in written if e.thread_id == "t1"]
        for runs in (["r1"], ["r0", "r2"], ["nobody"], ["r1", "nobody"]):
            want = [e.seq for e in mine if e.run_id in runs]
            assert seqs(store.read("t1", run_id=runs)) == want
            assert store.count("t1", run_id=runs) == len(want)
            assert (
                seqs(store.read("t1", run_id=runs, before_seq=20, limit=3))
                == [s for s in want if s < 20][-3:]
            )
            assert (
                seqs(store.read("t1", run_id=runs, after_seq=5, limit=4))
                == [s for s in want if s > 5][:4]
            )
        story = ["message.ai", "middleware:summarize", "message.human"]
        assert (
            seqs(store.read("t1", event_type=story, before_seq=25, limit=4))
            == [e.seq for e in mine if e.event_type in story and e.seq < 25][-4:]
        )
        assert seqs(store.read("t1", category=["lifecycle", "message"], after_seq=3)) == [
            e.seq for e in mine if e.category in ("lifecycle", "message") and e.seq > 3
        ]
        assert (
            seqs(store.read("t1", event_type=["message.ai", "custom:x"], limit=5))
            == [e.seq for e in mine if e.event_type in ("message.ai", "custom:x")][:5]
        )

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
