"""The store's write path: one object per event, inputs left alone, clear errors, same bytes.

The fast path builds each event once (from a mapping) and makes that object its stored record;
these tests check that nothing the caller holds changes on the way, and that every backend
stores exactly what the encoding rules say.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [62, 63, 64, 65])
@pytest.mark.parametrize("leaf", [[], {}, 1, "x", 0.5])
def test_plain_kind_agrees_with_the_rules_at_the_depth_limit(depth: int, leaf: Any) -> None:
    """Data is taken as plain exactly when the rules leave it unchanged, near MAX_DEPTH too."""
    from journal.encoding import NOT_PLAIN, _encode, plain_kind

    value = {"k": _nested(depth, leaf)}
    as_is = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    unchanged = dumps(_encode(value, 0, set())) == as_is
    assert (plain_kind(value) != NOT_PLAIN) == unchanged


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.sampled_from([2**63, 2**64 - 1, -(2**63) - 1, 2**64])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-07, 1e16, 1.5e300, -0.0, 0.1])
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                               max_size=3),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(content=_json_values, metadata=st.dictionaries(st.text(max_size=3), _json_values),
       spaced=st.booleans())  # fmt: skip
def test_an_imported_line_holds_the_json_modules_values(
    content: Any, metadata: dict[str, Any], spaced: bool
) -> None:
    """Whatever numbers a line holds, import stores what the json module reads, by the rules."""
    from journal.encoding import to_jsonable
    from journal.transfer import import_events

    line = {"event_id": "e1", "thread_id": "t1", "run_id": "r1", "category": "trace",
            "event_type": "custom:x", "content": content, "metadata": metadata,
            "created_at": "2026-01-02T03:04:05.678901Z", "seq": 1}  # fmt: skip
    text = json.dumps(line, sort_keys=not spaced, separators=None if spaced else (",", ":"))
    read = json.loads(text)
    with MemoryEventStore() as store:
        import_events(store, [text.encode() + b"\n"])
        [stored] = store.read("t1")
    assert dumps(stored.content) == dumps(to_jsonable(read["content"]))
    assert dumps(stored.metadata) == dumps(to_jsonable(read["metadata"]))


@pytest.mark.parametrize("source_kind", ["memory", "sqlite"])
def test_a_page_by_page_copy_stores_the_sources_bytes(tmp_path: Path, source_kind: str) -> None:
    """Copied page by page, every row of the target is byte for byte the rules' text."""
    from journal.copy import copy_store

    source = MemoryEventStore() if source_kind == "memory" else SqliteEventStore(tmp_path / "s.db")
    contents = [{"f": 1e-07, "big": 2**70}, "é😀", [0.5, None], {"deep": _nested(70, 1)}]
    source.append([_mapping(event_id=f"e{i}", content=c) for i, c in enumerate(contents)])
    with SqliteEventStore(tmp_path / "t.db") as target:
        target.append(source.read("t1", limit=1))  # a prefix: the SQL copy declines
        copy_store(source, target, batch_size=2)
        assert target.read("t1") == source.read("t1")
    conn = sqlite3.connect(tmp_path / "t.db")
    rows = conn.execute("SELECT content FROM events ORDER BY seq").fetchall()
    conn.close()
    assert [row[0] for row in rows] == [dumps(e.content) for e in source.read("t1")]
    source.close()


@pytest.mark.parametrize("depth", [63, 64, 65, 70])
@pytest.mark.parametrize("leaf", [[], {"k": 1}, 1, {"$depth": "x"}])
def test_encoding_encoded_data_changes_nothing_at_the_depth_limit(depth: int, leaf: Any) -> None:
    """The depth marker is the rules' own output: encoding the result again keeps it."""
    from journal.encoding import _canonical, to_jsonable

    once = to_jsonable({"deep": _nested(depth, leaf)})
    assert to_jsonable(once) == once
    assert dumps(once) == _canonical(once)  # the stored text of the encoded value itself


def test_too_deep_data_encodes_as_before() -> None:
    """Data nested past the limit still becomes the marker naming the cut container's type."""
    text = dumps({"deep": _nested(70, 1)})
    assert text == '{"deep":' + "[" * 63 + '{"$depth":"builtins.list"}' + "]" * 63 + "}"
