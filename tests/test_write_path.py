"""The store's write path: one object per event, inputs left alone, clear errors, same bytes.

The fast path builds each event once (from a mapping) and makes that object its stored record;
these tests check that nothing the caller holds changes on the way, and that every backend
stores exactly what the encoding rules say.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from journal import MemoryEventStore, SqliteEventStore
from journal.encoding import dumps
from journal.events import NewEvent, RunEvent
from journal.testing import ev


def _mapping(**fields: Any) -> dict[str, Any]:
    return {"thread_id": "t1", "run_id": "r1", "category": "trace", "event_type": "llm.end",
            **fields}  # fmt: skip


@pytest.mark.parametrize("field", ["category", "event_type"])
@pytest.mark.parametrize("value", [["trace"], {"a": 1}])
def test_an_unhashable_category_or_event_type_is_a_clear_value_error(
    tmp_path: Path, field: str, value: Any
) -> None:
    """A list or dict as category/event_type is a ValueError naming the field, not a TypeError."""
    with SqliteEventStore(tmp_path / "s.db") as store:
        with pytest.raises(ValueError, match=field):
            store.append([_mapping(**{field: value})])
        assert store.last_seq("t1") == 0
    with pytest.raises(ValueError, match=field):
        NewEvent.from_mapping(_mapping(**{field: value}))


def test_the_callers_new_events_stay_new_events(tmp_path: Path) -> None:
    """Appending the caller's NewEvent (or a prepared batch) leaves those objects as they were."""
    with SqliteEventStore(tmp_path / "s.db") as store:
        mine = ev(content={"a": [1, 2]})
        before = mine.model_dump()
        [record] = store.append([mine])
        assert type(mine) is NewEvent and not hasattr(mine, "seq")
        assert mine.model_dump() == before
        assert type(record) is RunEvent and record.seq == 1 and record is not mine
        prepared = store.prepare([_mapping(content="x"), _mapping(content="y")])
        stored = store.append(prepared)
        assert [type(e) for e in prepared] == [NewEvent, NewEvent]
        assert [r.seq for r in stored] == [2, 3]
        assert all(not hasattr(e, "seq") for e in prepared)


def test_records_of_mappings_are_independent_run_events(tmp_path: Path) -> None:
    """Each record of a mapping batch is its own RunEvent, equal to what a read returns."""
    with SqliteEventStore(tmp_path / "s.db") as store:
        batch = [_mapping(event_id=f"e{i}", content={"i": i}) for i in range(3)]
        stored = store.append(batch + [dict(m, content={"i": 0}) for m in batch])
        assert [r.seq for r in stored] == [1, 2, 3, 1, 2, 3]  # ids repeat: stored once
        assert all(type(r) is RunEvent for r in stored)
        assert len({id(r) for r in stored}) == 6  # a repeated id gets its own copy
        assert store.read("t1") == stored[:3]
        stored[0].content["i"] = 99  # the caller's own dict: the stored row stays
        assert store.read("t1")[0].content == {"i": 0}
        assert stored[3].content == {"i": 0}


@pytest.mark.parametrize(
    "content",
    [{"f": 1e-07, "n": [1, None, True]}, {"big": 2**70}, {"s": "é\u2028"}, [1.5, "x"], {}, None],
)
def test_stored_text_is_the_rules_text(tmp_path: Path, content: Any) -> None:
    """The row's content and metadata are exactly the canonical encoding, whichever path."""
    with SqliteEventStore(tmp_path / "s.db") as store:
        store.append([_mapping(content=content, metadata={"latency": 0.5, "k": content})])
        store.append([ev(thread_id="t2", content=content)])
    conn = sqlite3.connect(tmp_path / "s.db")
    rows = conn.execute("SELECT content, metadata FROM events ORDER BY thread_id").fetchall()
    conn.close()
    assert rows[0] == (dumps(content), dumps({"latency": 0.5, "k": content}))
    assert rows[1][0] == dumps(content)


def test_a_memory_store_keeps_its_own_copy_of_a_mapping_batch() -> None:
    """Mutating the appended dicts or the records never changes a memory store."""
    with MemoryEventStore() as store:
        content = {"a": [1]}
        [record] = store.append([_mapping(content=content)])
        content["a"].append(2)
        record.content["a"].append(3)
        assert store.read("t1")[0].content == {"a": [1]}
