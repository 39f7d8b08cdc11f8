"""Content a store keeps whole keeps whole through export, import and the spool: a line
encodes the event's content and metadata each as the store does (depth counted from
themselves), so a value nesting ``MAX_DEPTH`` levels is not cut one level early."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from journal import MemoryEventStore, SqliteEventStore
from journal.encoding import MAX_DEPTH, dumps, dumps_record
from journal.spool import Spool, recover_spool
from journal.store import RunEventStore
from journal.transfer import export_events, import_events
from tests.test_encoding import json_values


def nest(levels: int) -> Any:
    value: Any = 1
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


def deep_event(levels: int) -> dict[str, Any]:
    return {"thread_id": "t", "run_id": "r", "category": "trace", "event_type": "custom:x",
            "content": nest(levels), "metadata": {"deep": nest(levels - 1)}}  # fmt: skip


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made: list[RunEventStore] = []

    def make(name: str) -> RunEventStore:
        store: RunEventStore = (
            MemoryEventStore() if request.param == "memory" else SqliteEventStore(tmp_path / name)
        )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 2])
def test_export_then_import_keeps_what_the_store_kept(make_store: Any, levels: int) -> None:
    source = make_store("source.db")
    source.append([deep_event(levels)])
    (stored,) = source.read("t")
    out = io.StringIO()
    export_events(source, "t", out)
    target = make_store("target.db")
    import_events(target, io.BytesIO(out.getvalue().encode()))
    assert target.read("t") == [stored]


@pytest.mark.parametrize("levels", [MAX_DEPTH, MAX_DEPTH + 2])
def test_the_spool_keeps_what_a_direct_append_keeps(
    make_store: Any, tmp_path: Path, levels: int
) -> None:
    direct = make_store("direct.db")
    (wanted,) = direct.append([deep_event(levels)])
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append([direct.prepare([deep_event(levels)])[0]])
    recovered = make_store("recovered.db")
    recover_spool(spool.path, recovered)
    (got,) = recovered.read("t")
    assert (got.content, got.metadata) == (wanted.content, wanted.metadata)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "content", "é", "\u00e9x", "Z"]), json_values))
def test_a_record_line_is_the_canonical_text_of_its_fields(fields: dict[str, Any]) -> None:
    """Where nothing nests too deep, the line is exactly ``dumps`` of the object: export
    and spool bytes do not change."""
    assert dumps_record(fields) == dumps(fields)
