"""Preparing an event a store already prepared changes nothing, caps and marks included.

copy_store, import and any re-append of a stored event rely on it: the target prepares the
stored record again with the same caps and must store the very same content and metadata.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from journal import MemoryEventStore
from journal.copy import copy_store
from journal.testing import ev

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=400)


@settings(max_examples=150, deadline=None)
@given(
    content=st.one_of(_text, st.dictionaries(st.text(max_size=4), _text, max_size=4)),
    metadata=st.dictionaries(st.text(max_size=6), _text, max_size=4),
    context=st.booleans(),
    content_cap=st.integers(64, 500),
    metadata_cap=st.integers(128, 500),
)
def test_a_prepared_event_prepares_to_itself(
    content: Any, metadata: dict[str, Any], context: bool, content_cap: int, metadata_cap: int
) -> None:
    """Whatever was cut and marked the first time, the stored record prepares to itself (and
    its metadata, the exact context record aside, fits the metadata cap)."""
    if context:
        metadata = {**metadata, "context": {"messages": ["m" * 300]}}
    store = MemoryEventStore(content_caps={"trace": content_cap}, metadata_cap=metadata_cap)
    [stored] = store.append([ev(event_type="llm.start", content=content, metadata=metadata)])
    [again] = store.prepare([stored])
    assert again.content == stored.content
    assert again.metadata == stored.metadata


def test_copy_of_events_with_cut_metadata_and_content_is_exact() -> None:
    """An event whose content and metadata were both cut copies to an equal record."""
    with MemoryEventStore() as source, MemoryEventStore() as target:
        source.append([ev(content="y" * 40_000, metadata={"extra": "x" * 70_000})])
        copy_store(source, target)
        assert target.read("t1") == source.read("t1")
