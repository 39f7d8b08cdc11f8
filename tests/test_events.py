"""The event model: field validation (each error names its field), the catalog, defaults."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from journal import CATEGORIES, EventFilter, MemoryEventStore, NewEvent, RunEvent, dumps
from journal.events import MAX_EVENT_TYPE_LENGTH, MAX_ID_LENGTH, status_from_lifecycle

VALID: dict[str, Any] = {
    "thread_id": "t1",
    "run_id": "r1",
    "category": "trace",
    "event_type": "llm.start",
}


def make(**changes: Any) -> NewEvent:
    """A NewEvent built from VALID with ``changes`` applied."""
    return NewEvent(**{**VALID, **changes})


@pytest.mark.parametrize("field", ["event_id", "thread_id", "run_id"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "must not be empty"),
        ("x" * (MAX_ID_LENGTH + 1), "limit is 256"),
        ("a\x00b", "control characters"),
        ("tab\there", "control characters"),
        ("line\nbreak", "control characters"),
        ("del\x7f", "control characters"),
        (" padded", "whitespace"),
        ("padded ", "whitespace"),
        (42, "must be a string"),
        (None, "must be a string"),
    ],
)
def test_bad_id_is_a_value_error_naming_the_field(field: str, value: Any, message: str) -> None:
    """Empty, over-long, control-character, padded or non-string ids name the field."""
    with pytest.raises(ValueError, match=message) as info:
        make(**{field: value})
    assert field in str(info.value)


def test_id_at_the_length_limit_is_accepted() -> None:
    """An id of exactly MAX_ID_LENGTH characters (any Unicode) is valid."""
    event = make(thread_id="é" * MAX_ID_LENGTH)
    assert len(event.thread_id) == MAX_ID_LENGTH


def test_uuid_ids_become_strings() -> None:
    """A uuid.UUID id is accepted and stored as its string form."""
    value = uuid.uuid4()
    assert make(run_id=value).run_id == str(value)


def test_event_id_defaults_to_a_fresh_uuid() -> None:
    """Without an event_id each event gets a distinct UUID string."""
    first, second = make(), make()
    assert first.event_id != second.event_id
    assert str(uuid.UUID(first.event_id)) == first.event_id


@pytest.mark.parametrize("category", ["", "Trace", "messages", "unknown"])
def test_unknown_category_is_a_value_error_naming_the_field(category: str) -> None:
    """A category outside the four known ones is rejected naming category and the choices."""
    with pytest.raises(ValueError, match="category") as info:
        make(category=category)
    assert "lifecycle" in str(info.value)


@pytest.mark.parametrize(
    ("category", "event_type"),
    [
        ("trace", "llm.begin"),
        ("trace", "message.ai"),
        ("message", "llm.start"),
        ("lifecycle", "custom:x"),
        ("trace", "custom:"),
        ("trace", "custom: spaced"),
        ("trace", "custom:-dash-first"),
        ("trace", "other:tag"),
        ("middleware", "middleware"),
        ("middleware", "summarize"),
        ("trace", "custom:" + "x" * MAX_EVENT_TYPE_LENGTH),
        ("trace", ""),
    ],
)
def test_malformed_event_type_is_a_value_error_naming_the_field(
    category: str, event_type: str
) -> None:
    """event_types outside the catalog of their category are rejected naming event_type."""
    with pytest.raises(ValueError, match="event_type"):
        make(category=category, event_type=event_type)


@pytest.mark.parametrize(
    ("category", "event_type"),
    [
        ("lifecycle", "run.start"),
        ("lifecycle", "run.interrupt"),
        ("message", "message.tool"),
        ("trace", "tool.error"),
        ("trace", "custom:summarization"),
        ("trace", "custom:a.b-c/d:e_f"),
        ("middleware", "middleware:summarize"),
        ("middleware", "middleware:my_tag"),
    ],
)
def test_catalog_event_types_are_accepted(category: str, event_type: str) -> None:
    """Fixed types and family:tag open types of the catalog validate."""
    assert make(category=category, event_type=event_type).event_type == event_type


def test_categories_are_the_four_of_the_architecture() -> None:
    """CATEGORIES is exactly lifecycle, message, trace, middleware."""
    assert {"lifecycle", "message", "trace", "middleware"} == CATEGORIES


def test_naive_created_at_is_rejected() -> None:
    """A naive created_at raises ValueError naming created_at."""
    with pytest.raises(ValueError, match="created_at"):
        make(created_at=datetime(2026, 1, 1))


def test_created_at_is_converted_to_utc() -> None:
    """An aware created_at in another zone becomes the same instant in UTC."""
    local = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=-3)))
    event = make(created_at=local)
    assert event.created_at == local
    assert event.created_at.tzinfo == UTC
    assert event.created_at.hour == 15


@pytest.mark.parametrize(
    "created_at",
    [
        datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_created_at_out_of_range_in_utc_is_a_value_error(created_at: datetime) -> None:
    """An aware created_at with no UTC equivalent raises ValueError naming created_at."""
    with pytest.raises(ValueError, match="created_at"):
        make(created_at=created_at)
    with pytest.raises(ValueError, match="created_at"):
        MemoryEventStore().append([{**make().model_dump(), "created_at": created_at}])


def test_created_at_defaults_to_now_in_utc() -> None:
    """Without created_at the event is stamped with the current UTC time."""
    before = datetime.now(UTC)
    event = make()
    assert before <= event.created_at <= datetime.now(UTC)


def test_content_and_metadata_are_encoded_on_construction() -> None:
    """content and metadata become plain JSON data when the event is built."""
    event = make(content={"when": datetime(2026, 1, 1, tzinfo=UTC), 1: {3, 2}}, metadata=None)
    assert event.content == {"when": "2026-01-01T00:00:00+00:00", "1": [2, 3]}
    assert event.metadata == {}


def test_non_mapping_metadata_is_rejected() -> None:
    """metadata that is not a mapping raises ValueError naming metadata."""
    with pytest.raises(ValueError, match="metadata"):
        make(metadata=[1, 2])


def test_unknown_field_is_rejected() -> None:
    """A field outside the model (a typo) raises ValueError naming it."""
    with pytest.raises(ValueError, match="catgory"):
        make(catgory="trace")


def test_run_event_seq_must_be_positive() -> None:
    """A RunEvent's seq is >= 1."""
    with pytest.raises(ValueError, match="seq"):
        RunEvent(**VALID, seq=0)
    assert RunEvent(**VALID, seq=1).seq == 1


def test_event_filter_matching() -> None:
    """EventFilter matches on every set field; an empty set matches nothing."""
    event = make(category="message", event_type="message.ai")
    assert EventFilter().matches(event)
    assert EventFilter(category=frozenset({"message"}), run_id=frozenset({"r1"})).matches(event)
    assert not EventFilter(event_type=frozenset({"message.human"})).matches(event)
    assert EventFilter(run_id=frozenset()).matches_nothing
    assert not EventFilter(run_id=frozenset({"r1"})).matches_nothing


@pytest.mark.parametrize(
    ("last", "status"),
    [
        (None, "unknown"),
        ("run.start", "running"),
        ("run.resume", "running"),
        ("run.end", "success"),
        ("run.error", "error"),
        ("run.cancel", "cancelled"),
        ("run.interrupt", "interrupted"),
    ],
)
def test_run_status_from_last_lifecycle_event(last: str | None, status: str) -> None:
    """A run's status is derived from its last lifecycle event type."""
    assert status_from_lifecycle(last) == status


_ids = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["ok", " lead", "trail ", "a\x00b", "\ud800", "x" * 300, ""]),
    st.none(),
    st.integers(),
    st.uuids(),
)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.tuples(inner)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    event_id=_ids,
    thread_id=_ids,
    run_id=_ids,
    category=st.sampled_from([*sorted(CATEGORIES), "bogus"]),
    event_type=st.sampled_from(
        ["run.start", "message.ai", "llm.start", "custom:x", "middleware:t", "nope", ""]
    ),
    content=_values,
    metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _values), _values),
    created_at=st.sampled_from(
        [
            datetime(2026, 1, 1, tzinfo=UTC),
            datetime(2026, 1, 1),
            datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        ]
    ),
)
def test_from_mapping_is_the_constructor_fast(**fields: Any) -> None:
    """NewEvent.from_mapping gives the event NewEvent(**raw) gives, or the same error."""
    try:
        expected = NewEvent(**fields)
    except ValueError as e:
        with pytest.raises(ValueError) as got:
            NewEvent.from_mapping(fields)
        assert str(got.value) == str(e)
        return
    got_event = NewEvent.from_mapping(fields)
    assert got_event.model_dump() == expected.model_dump()
    assert dumps(got_event.content) == dumps(expected.content)
    assert dumps(got_event.metadata) == dumps(expected.metadata)


def test_generated_event_ids_are_time_ordered_uuid7() -> None:
    """Library-made ids are UUID version 7, unique, and sort by the millisecond they were made."""
    import time

    from journal.events import new_event_id

    first = [new_event_id() for _ in range(2000)]
    time.sleep(0.002)
    later = new_event_id()
    parsed = [uuid.UUID(i) for i in first]
    assert all(p.version == 7 and p.variant == uuid.RFC_4122 for p in parsed)
    assert [str(p) for p in parsed] == first  # the canonical lowercase 8-4-4-4-12 form
    assert len(set(first)) == len(first)
    assert max(first) < later
    assert NewEvent(thread_id="t", run_id="r", category="trace", event_type="llm.end").event_id


def test_a_forked_child_makes_other_event_ids() -> None:
    """After fork, parent and child never draw the same ids (the generator is reseeded)."""
    import os

    from journal.events import new_event_id

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, ",".join(new_event_id() for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    mine = {new_event_id() for _ in range(50)}
    os.waitpid(pid, 0)
    theirs = set(os.read(read, 100_000).decode().split(","))

    def random_parts(ids: set[str]) -> set[int]:  # without the timestamp
        return {uuid.UUID(i).int & ((1 << 76) - 1) for i in ids}

    assert len(theirs) == 50 and not random_parts(mine) & random_parts(theirs)
