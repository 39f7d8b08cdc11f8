"""Import's counts and its direct route into SQLite: what is stored, and what is counted.

An import into a built-in SQLite store goes from an exported line straight to the stored row;
into any other store it appends events. These tests hold both routes to the same stored
rows, runs and usage, and to the same counts.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from journal import MemoryEventStore, SqliteEventStore
from journal.store import RunEventStore
from journal.transfer import ImportSummary, export_events, import_events
from tests.test_store_runs import journal_runs


def _exported(tmp_path: Path) -> list[bytes]:
    """The lines of three real agent runs of thread t1, as ``runjournal export`` writes them."""
    source = MemoryEventStore()
    journal_runs(source, tmp_path)
    out = io.StringIO()
    export_events(source, "t1", out)
    return out.getvalue().encode().splitlines(keepends=True)


def _store(kind: str, tmp_path: Path) -> RunEventStore:
    return MemoryEventStore() if kind == "memory" else SqliteEventStore(tmp_path / "t.db")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_an_event_id_repeated_in_one_file_is_imported_once_and_counted_once(
    tmp_path: Path, kind: str
) -> None:
    """A line repeated within one batch and across batches is stored once, counted as
    imported once and as already present for each repeat."""
    lines = _exported(tmp_path)
    repeated = [*lines[:3], lines[1], *lines[3:], lines[0]]  # a repeat in batch 1 and in the last
    with _store(kind, tmp_path) as store:
        summary = import_events(store, repeated, batch_size=len(lines) - 1)
        assert summary == ImportSummary(imported=len(lines), already_present=2, renumbered=0)
        assert [e.seq for e in store.read("t1")] == list(range(1, len(lines) + 1))
        again = import_events(store, repeated)
        assert again == ImportSummary(imported=0, already_present=len(repeated), renumbered=0)
