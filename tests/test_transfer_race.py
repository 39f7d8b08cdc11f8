"""Two processes importing one file into one store at once: every event is stored once, and
the two summaries together count each event once as imported and once as already present."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from journal import RunEventStore, SqliteEventStore
from journal.postgres import PostgresEventStore
from journal.testing import many
from journal.transfer import export_events, import_events

_IMPORT = """
import json, sys
from journal import PostgresEventStore, SqliteEventStore
from journal.transfer import import_events
place, lines = sys.argv[1], sys.argv[2]
kind = PostgresEventStore if place.startswith("postgresql://") else SqliteEventStore
with kind(place) as store, open(lines, "rb") as f:
    summary = import_events(store, f)
print(json.dumps([summary.imported, summary.already_present]))
"""


class _SqliteSubclass(SqliteEventStore):
    """A SQLite store of an application's own class: appended event by event, not as rows."""


@pytest.fixture(
    params=["sqlite", "sqlite subclass", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite file (its store of the library's class, or of a subclass), or a fresh
    PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "target.db")
    if request.param == "sqlite subclass":
        return f"subclass:{tmp_path / 'target.db'}"
    return str(request.getfixturevalue("postgres_db_url"))


def _store(place: str) -> RunEventStore:
    if place.startswith("postgresql://"):
        return PostgresEventStore(place)
    if place.startswith("subclass:"):
        return _SqliteSubclass(place.removeprefix("subclass:"))
    return SqliteEventStore(place)


def _exported(tmp_path: Path, threads: list[str]) -> tuple[Path, dict[str, list[Any]]]:
    with SqliteEventStore(tmp_path / "source.db") as source:
        for thread_id in threads:
            source.append(many(20, thread_id=thread_id))
        lines = tmp_path / "events.jsonl"
        with lines.open("w") as out:
            for thread_id in threads:
                export_events(source, thread_id, out)
        return lines, {t: source.read(t) for t in threads}


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_an_import_racing_another_process_counts_what_that_process_stored_as_present(
    place: str, tmp_path: Path, batch_size: int
) -> None:
    """Another process imports the same file just before this import's first write (after
    anything this import reads first): the two summaries add up to the file's events."""
    threads = ["a", "b", "c"]
    lines, expected = _exported(tmp_path, threads)
    total = sum(len(events) for events in expected.values())
    theirs: list[list[int]] = []
    with _store(place) as store:
        # the last step before a write's transaction: append's prepare, or the row import
        hook = "_import_rows" if type(store) is SqliteEventStore else "prepare"
        real = getattr(store, hook)

        def first_the_other_process(*args: Any) -> Any:
            if not theirs:
                out = subprocess.run(
                    [sys.executable, "-c", _IMPORT, place.removeprefix("subclass:"), str(lines)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                theirs.append(json.loads(out))
            return real(*args)

        setattr(store, hook, first_the_other_process)
        with lines.open("rb") as f:
            ours = import_events(store, f, batch_size=batch_size)
        assert theirs == [[total, 0]]
        assert (ours.imported, ours.already_present) == (0, total)
        assert {t: store.read(t) for t in threads} == expected


@pytest.mark.postgres
def test_a_batch_whose_commit_answer_was_lost_counts_as_imported(
    postgres_db_url: str, tmp_path: Path
) -> None:
    """The server committed the batch, then the connection failed before the client heard:
    the retry finds the events stored, by this very import, which counts them imported."""
    from contextlib import contextmanager

    import psycopg

    lines, expected = _exported(tmp_path, ["a"])
    with PostgresEventStore(postgres_db_url) as store:
        real = store._db._connection
        uses: list[int] = []

        @contextmanager
        def answer_lost_once() -> Any:
            with real() as conn:
                yield conn
            uses.append(1)
            if len(uses) == 2:  # the batch's append (after its thread's last seq), committed
                raise psycopg.OperationalError("server closed the connection unexpectedly")

        store._db._connection = answer_lost_once  # type: ignore[method-assign]
        with lines.open("rb") as f:
            summary = import_events(store, f, batch_size=1000)
        assert len(uses) >= 3  # retried
        assert (summary.imported, summary.already_present) == (20, 0)
        assert store.read("a") == expected["a"]


def test_an_import_appends_through_a_subclass_that_changes_append(tmp_path: Path) -> None:
    """A store subclass that changes ``_append`` (auditing, mirroring) sees every batch an
    import writes, as any append."""
    from journal import MemoryEventStore

    class Audited(MemoryEventStore):
        def __init__(self) -> None:
            super().__init__()
            self.audited = 0

        def _append(self, events: Any) -> Any:
            self.audited += len(events)
            return super()._append(events)

    lines, _ = _exported(tmp_path, ["a", "b"])
    store = Audited()
    with store, lines.open("rb") as f:
        summary = import_events(store, f, batch_size=7)
        assert summary.imported == store.audited == 40
