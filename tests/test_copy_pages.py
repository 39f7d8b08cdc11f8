"""Page-by-page ``copy_store`` from a memory store: the stored bytes and the records it uses."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from journal import CopyConflictError, MemoryEventStore, SqliteEventStore, copy_store
from journal.encoding import dumps
from journal.testing import ev, many


def _rows(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        query = "SELECT event_id, content, metadata FROM events ORDER BY seq"
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_a_page_from_memory_stores_the_canonical_text_of_each_records_values(
    tmp_path: Path,
) -> None:
    """The texts a memory store hands on are those of its records as stored (after its cut)."""
    source = MemoryEventStore(content_caps={"trace": 1000})
    source.append(many(3, thread_id="t"))
    source.append([ev("t", content="é" * 5000, metadata={"usage": {"n": 2.5}})])  # cut here
    source.append([ev("t", category="message", event_type="message.ai", content={"f": 1e-7})])
    with SqliteEventStore(tmp_path / "t.db") as target:
        copy_store(source, target, batch_size=2)
        assert target.read("t") == source.read("t")
    records = {e.event_id: e for e in source.read("t")}
    assert records and source.read("t")[3].metadata.get("truncated") is True
    for event_id, content, metadata in _rows(tmp_path / "t.db"):
        assert (content, metadata) == (
            dumps(records[event_id].content),
            dumps(records[event_id].metadata),
        )


def test_a_thread_deleted_and_written_again_hands_on_its_new_texts(tmp_path: Path) -> None:
    """Texts kept per thread follow deletion: a re-written thread copies its own new bytes."""
    source = MemoryEventStore()
    source.append([ev("t", content={"old": 1}), ev("t", content={"old": 2})])
    source.delete_thread("t")
    source.append([ev("t", content={"new": 3})])
    with SqliteEventStore(tmp_path / "t.db") as target:
        copy_store(source, target)
        assert [e.content for e in target.read("t")] == [{"new": 3}]
    assert [row[1] for row in _rows(tmp_path / "t.db")] == ['{"new":3}']


def test_the_copy_leaves_the_source_records_as_they_were(tmp_path: Path) -> None:
    """Copying hands the source's records to the target without changing or sharing them."""
    source = MemoryEventStore()
    source.append(many(5, thread_id="t"))
    before = source.read("t")
    with SqliteEventStore(tmp_path / "t.db") as target:
        copy_store(source, target)
        copied = target.read("t")
        copied[0].content["changed"] = True
        assert target.read("t") == before
    assert source.read("t") == before


def test_a_target_with_smaller_caps_still_refuses_the_copy(tmp_path: Path) -> None:
    """An event the target would cut is still caught by the copy's comparison."""
    source = MemoryEventStore()
    source.append([ev("t", content="x" * 20_000)])
    target = SqliteEventStore(tmp_path / "t.db", content_caps={"trace": 1000})
    with target, pytest.raises(CopyConflictError, match="content caps smaller"):
        copy_store(source, target)
