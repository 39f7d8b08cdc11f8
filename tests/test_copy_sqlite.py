"""copy_store between two SQLite stores: whole threads in SQL, the same result as page by page."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from journal import CopyConflictError, MemoryEventStore, RunEventStore, SqliteEventStore
from journal.copy import copy_store
from journal.testing import ev, many
from journal.testing._runs import human, llm_end, run_events


def _threads(store: RunEventStore) -> None:
    """Three threads of finished, failed and running runs with usage, interleaved batches."""
    store.append(run_events("r1", "a", calls=3))
    store.append(run_events("r2", "b", calls=1, end="error"))
    store.append(run_events("r3", "a", calls=2, end=""))
    store.append([human("hi", run_id="r4", thread_id="c"), llm_end("m2", run_id="r4",
                  thread_id="c", caller="middleware:Title", input_tokens=7)])  # fmt: skip
    store.append(many(5, thread_id="b"))


def _state(store: RunEventStore) -> dict[str, object]:
    """Everything a reader can ask of the store about its threads."""
    threads = store.list_threads()
    return {
        "threads": threads,
        "events": {t.thread_id: store.read(t.thread_id) for t in threads},
        "runs": {t.thread_id: store.list_runs(t.thread_id) for t in threads},
        "usage": {t.thread_id: store.read_usage(t.thread_id) for t in threads},
        "by_id": {
            r.run_id: store.get_run(r.run_id, thread_id=t.thread_id)
            for t in threads
            for r in store.list_runs(t.thread_id)
        },
    }


@pytest.fixture
def source(tmp_path: Path) -> Iterator[SqliteEventStore]:
    """A SQLite store holding :func:`_threads`."""
    with SqliteEventStore(tmp_path / "source.db") as store:
        _threads(store)
        yield store


def test_sqlite_to_sqlite_copy_equals_the_source_and_keeps_appending(
    source: SqliteEventStore, tmp_path: Path
) -> None:
    """A copy between SQLite files gives the target the source's events, runs, usage and
    thread list; progress reports each thread whole; the target numbers the next append on."""
    calls: list[tuple[str, int]] = []
    with SqliteEventStore(tmp_path / "target.db") as target:
        summary = copy_store(
            source, target, batch_size=2, progress=lambda t, n: calls.append((t, n))
        )
        assert _state(target) == _state(source)
        assert summary.copied == sum(t.event_count for t in source.list_threads())
        assert sorted(calls) == sorted((t.thread_id, t.event_count) for t in source.list_threads())
        assert copy_store(source, target).copied == 0  # a re-run checks, copies nothing
        [added] = target.append([llm_end("m3", run_id="r3", thread_id="a", input_tokens=2)])
        assert added.seq == source.last_seq("a") + 1
        assert target.read_usage("a").totals.input_tokens == (
            source.read_usage("a").totals.input_tokens + 2
        )


def test_sqlite_copy_agrees_with_the_page_by_page_copy(
    source: SqliteEventStore, tmp_path: Path
) -> None:
    """The target of a SQLite-to-SQLite copy equals a memory store copied page by page."""
    with SqliteEventStore(tmp_path / "target.db") as target, MemoryEventStore() as memory:
        copy_store(source, target)
        copy_store(source, memory, batch_size=3)
        assert _state(target) == _state(memory)


def test_sqlite_copy_resumes_a_prefix_page_by_page(
    source: SqliteEventStore, tmp_path: Path
) -> None:
    """A target thread holding a prefix of the source thread gets the rest, runs included."""
    with SqliteEventStore(tmp_path / "target.db") as target:
        target.append(source.read("a", limit=4))
        summary = copy_store(source, target, batch_size=2)
        assert summary.already_present == 4
        assert _state(target) == _state(source)


def test_sqlite_copy_into_smaller_caps_is_reported(tmp_path: Path) -> None:
    """A SQLite target whose caps would cut a source event raises CopyConflictError."""
    with (
        SqliteEventStore(tmp_path / "source.db") as source,
        SqliteEventStore(tmp_path / "small.db", content_caps={"message": 1_000}) as small,
    ):
        source.append([ev(category="message", event_type="message.ai", content="y" * 5_000)])
        with pytest.raises(CopyConflictError, match="content caps"):
            copy_store(source, small)


def test_sqlite_copy_of_a_context_record_over_the_metadata_cap_stays_exact(
    tmp_path: Path,
) -> None:
    """An llm.start whose exact context record is over the metadata cap (never cut) is copied
    as stored, with the rest of its thread in one piece, and a cut trace content too."""
    context = {"messages": [{"id": f"m{i}", "digest": "d" * 64} for i in range(1_000)]}
    with (
        SqliteEventStore(tmp_path / "source.db") as source,
        SqliteEventStore(tmp_path / "target.db") as target,
    ):
        stored = source.append(
            [
                ev(event_type="llm.start", metadata={"context": context, "extra": "x" * 70_000}),
                ev(content="y" * 40_000),  # cut to the trace cap, then marked
                *many(3),
            ]
        )
        assert stored[0].metadata["context"] == context
        assert stored[0].metadata["metadata_truncated"] and stored[1].metadata["truncated"]
        calls: list[tuple[str, int]] = []
        copy_store(source, target, batch_size=2, progress=lambda t, n: calls.append((t, n)))
        assert calls == [("t1", 5)]  # one piece: the SQL path took it
        assert target.read("t1") == source.read("t1")


def test_sqlite_copy_with_an_event_id_stored_elsewhere_writes_nothing_of_it(
    source: SqliteEventStore, tmp_path: Path
) -> None:
    """A source event whose id the SQLite target holds in another thread raises
    CopyConflictError, and the thread's events before it stay the only ones written."""
    [shared] = source.append([ev("d", event_id="shared-id")])
    with SqliteEventStore(tmp_path / "target.db") as target:
        target.append([ev("other", event_id="shared-id")])
        with pytest.raises(CopyConflictError, match="'shared-id'"):
            copy_store(source, target, thread_ids=["a", "d"])
        assert target.read("a") == source.read("a")
        assert target.read("d") == [] and target.list_runs("d") == []
        assert shared.seq == 1


def test_sqlite_copy_keeps_the_target_guards(source: SqliteEventStore, tmp_path: Path) -> None:
    """Events copied in SQL are guarded like appended ones: REPLACE and UPDATE are refused."""
    path = tmp_path / "target.db"
    with SqliteEventStore(path) as target:
        copy_store(source, target)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
            conn.execute("UPDATE events SET content = '1' WHERE seq = 1")
        with pytest.raises(sqlite3.IntegrityError, match="runjournal"):
            conn.execute(
                "REPLACE INTO events (event_id, thread_id, seq, run_id, category, event_type, "
                "content, metadata, created_at) SELECT 'new', thread_id, seq, run_id, category, "
                "event_type, content, metadata, created_at FROM events WHERE seq = 1 LIMIT 1"
            )
    finally:
        conn.close()
