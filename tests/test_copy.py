"""``copy_store`` between memory, SQLite and PostgreSQL stores, and ``runjournal copy``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from journal import (
    CopyConflictError,
    MemoryEventStore,
    NewEvent,
    RunEvent,
    RunEventStore,
    SqliteEventStore,
    copy_store,
)
from journal.copy import CopySummary, ProgressCallback
from journal.postgres import PostgresEventStore
from journal.testing import ev, many
from tests.postgres_server import fresh_database_url

T0 = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def _sample(thread_id: str, runs: int = 3) -> list[NewEvent]:
    """Events of every category with awkward content: unicode, NUL, floats, big and nested."""
    events: list[NewEvent] = []
    for r in range(runs):
        stamp = T0 + timedelta(seconds=r, microseconds=r)
        events += [
            ev(thread_id, run_id=f"run-{r}", category="lifecycle", created_at=stamp),
            ev(thread_id, run_id=f"run-{r}", category="message", event_type="message.ai",
               content={"text": "héllo ✓ 😀 a\u0000b", "n": [1, 2.5, -0.0, 1e300, 2**70]},
               created_at=stamp.astimezone(timezone(timedelta(hours=5, minutes=30)))),
            ev(thread_id, run_id=f"run-{r}", content="x" * 40_000,  # over the trace cap
               metadata={"model": "fake", "usage": {"in": r}}),
            ev(thread_id, run_id=f"run-{r}", category="middleware",
               content={"summary": "s", "replaced_count": r}),
            ev(thread_id, run_id=f"run-{r}", category="lifecycle", event_type="run.end"),
        ]  # fmt: skip
    return events


def _everything(store: RunEventStore) -> dict[str, list[RunEvent]]:
    return {t.thread_id: store.read(t.thread_id) for t in store.list_threads()}


def _filled(store: RunEventStore, threads: int = 3) -> RunEventStore:
    for n in range(threads):
        store.append(_sample(f"thread-{n}"))
    store.append(many(7, thread_id="thread-0"))  # interleave: seqs differ from append order
    return store


@pytest.fixture
def sqlite_a(tmp_path: Path) -> Iterator[SqliteEventStore]:
    """An empty SQLite store."""
    with SqliteEventStore(tmp_path / "a.db") as store:
        yield store


@pytest.fixture
def sqlite_b(tmp_path: Path) -> Iterator[SqliteEventStore]:
    """A second empty SQLite store."""
    with SqliteEventStore(tmp_path / "b.db") as store:
        yield store


@pytest.fixture
def memory() -> Iterator[MemoryEventStore]:
    """An empty memory store."""
    with MemoryEventStore() as store:
        yield store


@pytest.fixture
def pg(postgres_db_url: str) -> Iterator[PostgresEventStore]:
    """An empty PostgreSQL store."""
    with PostgresEventStore(postgres_db_url) as store:
        yield store


@pytest.mark.postgres
def test_sqlite_to_postgres_to_sqlite_round_trips_identical_events(
    sqlite_a: SqliteEventStore, pg: PostgresEventStore, sqlite_b: SqliteEventStore
) -> None:
    """SQLite -> PostgreSQL -> SQLite keeps every field of every event of every thread."""
    _filled(sqlite_a)
    original = _everything(sqlite_a)
    first = copy_store(sqlite_a, pg, batch_size=4)
    second = copy_store(pg, sqlite_b, batch_size=100)
    total = sum(len(events) for events in original.values())
    assert (first.threads, first.copied, first.already_present) == (3, total, 0)
    assert (second.threads, second.copied) == (3, total)
    assert _everything(pg) == original
    assert _everything(sqlite_b) == original
    assert sqlite_b.list_threads() == sqlite_a.list_threads()
    for thread_id in original:
        assert sqlite_b.list_runs(thread_id) == sqlite_a.list_runs(thread_id)
    truncated = [e for e in original["thread-0"] if e.metadata.get("truncated")]
    assert truncated, "the sample must include a truncated event"


def test_memory_to_sqlite_and_back_round_trips(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """memory -> SQLite -> a fresh memory store reads back identical events."""
    _filled(memory)
    copy_store(memory, sqlite_a)
    with MemoryEventStore() as back:
        copy_store(sqlite_a, back)
        assert _everything(back) == _everything(memory) == _everything(sqlite_a)


def test_rerun_copies_nothing_twice(memory: MemoryEventStore, sqlite_a: SqliteEventStore) -> None:
    """A second copy appends nothing and reports every event as already present."""
    _filled(memory)
    first = copy_store(memory, sqlite_a)
    before = _everything(sqlite_a)
    again = copy_store(memory, sqlite_a)
    assert again.copied == 0
    assert again.already_present == first.copied
    assert _everything(sqlite_a) == before


def test_interrupted_copy_resumes_where_it_stopped(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """A target holding a prefix of a thread gets only the missing events."""
    _filled(memory, threads=1)
    events = memory.read("thread-0")
    sqlite_a.append(events[:6])
    summary = copy_store(memory, sqlite_a, batch_size=4)
    assert (summary.copied, summary.already_present) == (len(events) - 6, 6)
    assert sqlite_a.read("thread-0") == events


def test_new_source_events_are_copied_on_rerun(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """Events appended to the source after a copy are added by the next copy."""
    _filled(memory, threads=1)
    copy_store(memory, sqlite_a)
    memory.append(many(3, thread_id="thread-0"))
    assert copy_store(memory, sqlite_a).copied == 3
    assert _everything(sqlite_a) == _everything(memory)


def test_diverging_target_thread_is_a_conflict(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """A target thread with other events raises CopyConflictError and is left unchanged."""
    _filled(memory, threads=1)
    sqlite_a.append([*memory.read("thread-0")[:2], ev("thread-0", event_id="intruder")])
    before = _everything(sqlite_a)
    with pytest.raises(CopyConflictError, match=r"'thread-0' differs from the source at seq 3"):
        copy_store(memory, sqlite_a)
    assert _everything(sqlite_a) == before


def test_longer_target_thread_is_a_conflict(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """A target thread with more events than the source raises CopyConflictError."""
    memory.append(many(2))
    sqlite_a.append([*memory.read("t1"), *many(1)])
    with pytest.raises(CopyConflictError, match="has 3 events, the source only 2"):
        copy_store(memory, sqlite_a)


def test_event_id_stored_elsewhere_in_target_is_a_conflict(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """A source event whose id the target holds in another thread raises CopyConflictError."""
    memory.append([ev("t1", event_id="shared-id")])
    sqlite_a.append([ev("other", event_id="shared-id")])
    with pytest.raises(CopyConflictError, match="'shared-id'"):
        copy_store(memory, sqlite_a, thread_ids=["t1"])


def test_thread_ids_limit_what_is_copied(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """Only the named threads are copied; an unknown thread copies nothing."""
    _filled(memory)
    summary = copy_store(memory, sqlite_a, thread_ids=["thread-1", "missing", "thread-1"])
    assert summary.threads == 2
    assert [t.thread_id for t in sqlite_a.list_threads()] == ["thread-1"]
    assert sqlite_a.read("thread-1") == memory.read("thread-1")


def test_progress_counts_every_source_event(
    memory: MemoryEventStore, sqlite_a: SqliteEventStore
) -> None:
    """progress(thread_id, n) calls add up to all source events, on copy and on re-run."""
    _filled(memory)
    total = sum(t.event_count for t in memory.list_threads())
    for _ in range(2):  # first copies, then only checks
        calls: list[tuple[str, int]] = []
        copy_store(memory, sqlite_a, batch_size=4, progress=_recorder(calls))
        assert sum(n for _, n in calls) == total
        assert all(0 < n <= 4 for _, n in calls)


def _recorder(calls: list[tuple[str, int]]) -> ProgressCallback:
    def record(thread_id: str, count: int) -> None:
        calls.append((thread_id, count))

    return record


def test_bad_arguments_are_caller_errors(memory: MemoryEventStore) -> None:
    """Same store, bad batch size or a bare string of thread ids raise ValueError/TypeError."""
    with MemoryEventStore() as other:
        with pytest.raises(ValueError, match="same store"):
            copy_store(memory, memory)
        with pytest.raises(ValueError, match="batch_size"):
            copy_store(memory, other, batch_size=0)
        with pytest.raises(TypeError, match="wrap one id in a list"):
            copy_store(memory, other, thread_ids="t1")
        with pytest.raises(ValueError, match="thread_ids"):
            copy_store(memory, other, thread_ids=[" bad "])


def test_two_objects_of_one_sqlite_file_are_the_same_store(tmp_path: Path) -> None:
    """A copy onto the same file, under another object or a symlink's name, is refused at
    once (it waited a minute for a lock, then failed)."""
    (tmp_path / "link.db").symlink_to(tmp_path / "a.db")
    with SqliteEventStore(tmp_path / "a.db") as source:
        source.append(many(3, thread_id="t"))
        for name in ("a.db", "link.db"):
            target = SqliteEventStore(tmp_path / name)
            with target, pytest.raises(ValueError, match="same store"):
                copy_store(source, target)
        with SqliteEventStore(tmp_path / "b.db") as other:  # another file is another store
            assert copy_store(source, other).copied == 3


@pytest.mark.postgres
def test_a_copy_onto_its_own_postgres_database_copies_nothing(postgres_url: str) -> None:
    """Two PostgreSQL stores of one database: the copy finds every event there already (one
    URL may name two stores, so they are not refused as one), and another database copies."""
    url, other_url = fresh_database_url(postgres_url), fresh_database_url(postgres_url)
    with PostgresEventStore(url) as source, PostgresEventStore(url) as again:
        source.append(many(3, thread_id="t"))
        before = source.read("t")
        assert copy_store(source, again) == CopySummary(threads=1, copied=0, already_present=3)
        assert source.read("t") == before
        with PostgresEventStore(other_url) as other:
            assert copy_store(source, other).copied == 3


def test_a_sqlite_subclass_on_the_same_file_is_the_same_store(tmp_path: Path) -> None:
    """A subclass of the SQLite store over the same file is still that file."""

    class Audited(SqliteEventStore):
        pass

    with SqliteEventStore(tmp_path / "a.db") as source, Audited(tmp_path / "a.db") as target:
        source.append(many(2, thread_id="t"))
        with pytest.raises(ValueError, match="same store"):
            copy_store(source, target)


def test_cli_copy_onto_the_same_file_is_a_user_error(tmp_path: Path) -> None:
    """`runjournal copy` with one file on both sides says so at once, as a user error."""
    from history.cli.main import cli

    with SqliteEventStore(tmp_path / "a.db") as store:
        store.append(many(3, thread_id="t"))
    url = f"sqlite:///{tmp_path / 'a.db'}"
    result = CliRunner().invoke(cli, ["copy", "--from", url, "--to", url])
    assert result.exit_code == 1, result.output
    assert "error: source and target are the same store" in result.output


@pytest.mark.postgres
def test_cli_copy_sqlite_to_postgres_and_rerun(tmp_path: Path, postgres_db_url: str) -> None:
    """`runjournal copy --from sqlite --to postgresql` copies everything; a re-run adds none."""
    from history.cli.main import cli

    with SqliteEventStore(tmp_path / "src.db") as source:
        _filled(source)
        expected = _everything(source)
    args = ["copy", "--from", f"sqlite:///{tmp_path / 'src.db'}", "--to", postgres_db_url]
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    with PostgresEventStore(postgres_db_url) as target:
        assert _everything(target) == expected


def test_target_with_smaller_content_caps_is_reported(memory: MemoryEventStore) -> None:
    """A target that cuts content the source kept raises CopyConflictError naming the caps."""
    memory.append([ev(category="message", event_type="message.ai", content="y" * 5_000)])
    with (
        MemoryEventStore(content_caps={"message": 1_000}) as small,
        pytest.raises(CopyConflictError, match="content caps"),
    ):
        copy_store(memory, small)


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4)), min_size=1, max_size=12),
    prefix=st.lists(st.integers(0, 30), min_size=3, max_size=3),
    batch_size=st.integers(1, 7),
)
def test_copy_of_any_history_and_any_prefix_is_exact(
    batches: list[tuple[int, int]], prefix: list[int], batch_size: int
) -> None:
    """Whatever the interleaving and the prefix already copied, the copy equals the source."""
    with MemoryEventStore() as source, MemoryEventStore() as target:
        for thread, size in batches:
            source.append(many(size, thread_id=f"t{thread}"))
        expected = _everything(source)
        for n, events in enumerate(expected.values()):
            target.append(events[: prefix[n]])
        already = sum(target.last_seq(thread_id) for thread_id in expected)
        summary = copy_store(source, target, batch_size=batch_size)
        assert _everything(target) == expected
        assert summary.already_present == already
        assert summary.copied == sum(len(e) for e in expected.values()) - already


_REWRITE = """
import sys
from journal import PostgresEventStore, SqliteEventStore
from journal.testing import ev
place = sys.argv[1]
kind = PostgresEventStore if place.startswith("postgresql://") else SqliteEventStore
with kind(place) as store:
    store.delete_thread("t")
    store.append([ev("t", content={"new": i}) for i in range(int(sys.argv[2]))])
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def source_place(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a source store lives: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "source.db")
    return str(request.getfixturevalue("postgres_db_url"))


@pytest.mark.parametrize("prefix", [0, 3], ids=["empty target", "target with a prefix"])
@pytest.mark.parametrize("rewritten_to", [5, 12, 30], ids=["shorter", "as long", "longer"])
def test_a_source_thread_rewritten_by_another_process_mid_copy_is_a_conflict(
    source_place: str, prefix: int, rewritten_to: int
) -> None:
    """Another process deletes the source thread and writes it again between two pages: the
    target never becomes a mix of the old thread and the new one; the copy says so."""
    import subprocess
    import sys

    kind = PostgresEventStore if source_place.startswith("postgresql://") else SqliteEventStore
    source: RunEventStore = kind(source_place)
    source.append([ev("t", content={"old": i}) for i in range(12)])
    old = source.read("t")
    target = MemoryEventStore()  # the page-by-page path
    target.append(old[:prefix])
    rewrites: list[int] = []

    def rewrite_once(thread_id: str, count: int) -> None:
        if not rewrites:
            rewrites.append(count)
            subprocess.run(
                [sys.executable, "-c", _REWRITE, source_place, str(rewritten_to)],
                check=True,
            )

    with source:
        with pytest.raises(CopyConflictError, match="'t' changed during the copy"):
            copy_store(source, target, batch_size=3, progress=rewrite_once)
        new = source.read("t")
    stored = target.read("t")
    assert rewrites and len(new) == rewritten_to and len(stored) == max(prefix, 3)
    assert stored == old[: len(stored)], "the target holds a mix of two threads"
