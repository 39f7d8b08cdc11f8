"""The writer's build takes quick paths; each gives what the checked path gives, exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    message_to_dict,
)

import journal.digests
from journal import _capture
from journal._builder import BatchBuilder, _second
from journal._ids import _LOW_MAX, _PAD_BIT
from journal._kinds import scalars_kind
from journal._queued import Pending
from journal._sqlite_rows import to_micros
from journal.digests import ContextIndex, expand_record, message_digest, record_kind
from journal.encoding import NOT_PLAIN, PLAIN, plain_kind
from journal.messages import _message_dict
from tests.test_context_records import (
    _MESSAGE_CLASSES,
    _ODD_VALUES,
    OPS,
    apply_op,
    kind_fields,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _grown_message(n: int, arg: int) -> BaseMessage:
    return AIMessage(f"message {n}", id=f"m{n}" if arg % 7 else f"é{n}")


def _renamed(n: int, arg: int) -> str | None:
    return f"renamed {n}" if arg % 3 else None


def _records(ops: list[tuple[str, int]], keyframe_every: int) -> list[tuple[dict[str, Any], int]]:
    """The records (and their kinds) of one model call after each of ``ops`` on a growing
    conversation (as in ``test_context_records``), made by one index."""
    index = ContextIndex()
    state: list[BaseMessage] = [HumanMessage("start", id="h0")]
    made = []
    with mock.patch.object(journal.digests, "KEYFRAME_EVERY", keyframe_every):
        for n, (op, arg) in enumerate(ops):
            apply_op(index, state, n, op, arg, grow=_grown_message, rename=_renamed)
            record = index.call_record("t", "agent", f"call{n}", list(state))
            made.append((record, record_kind(record)))
    return made


@settings(max_examples=150, deadline=None)
@given(OPS, st.sampled_from([1, 2, 3, 32]))
def test_a_grown_prompt_is_recorded_as_the_full_look_records_it(
    ops: list[tuple[str, int]], keyframe_every: int
) -> None:
    """The records of calls whose prompt grew (the previous call's state reused and extended
    in place) are the records the full look makes of the same calls, keyframes included,
    and so are their kinds."""
    quick = _records(ops, keyframe_every)
    with mock.patch.object(journal.digests, "_grown", lambda *_: None):
        checked = _records(ops, keyframe_every)
    assert quick == checked


def _records_as_sent(
    ops: list[tuple[str, int]], late: list[int | None], keyframe_every: int, checked: bool
) -> list[tuple[dict[str, Any], int]]:
    """The records (and their kinds) of one model call after each of ``ops`` on a growing
    conversation, a message of each prompt renamed in place after the call was sent (by
    ``late``: a position, or none), made from the ids as sent; ``checked``: by the full look
    (no quick path) from copies of the renamed messages under their ids as sent."""
    index = ContextIndex()
    state: list[BaseMessage] = [HumanMessage("start", id="h0")]
    made = []
    expanded: dict[str, Any] = {}
    with mock.patch.object(journal.digests, "KEYFRAME_EVERY", keyframe_every):
        for n, (op, arg) in enumerate(ops):
            apply_op(index, state, n, op, arg, grow=_grown_message, rename=_renamed)
            prompt = list(state)
            sent = [m.id for m in prompt]
            where = late[n % len(late)] if late else None
            if where is not None:  # after the call was sent, before its record is made
                prompt[where % len(prompt)].id = _renamed(n + 1, where)
            if checked:
                as_sent = [
                    m if m.id == mid else m.model_copy(update={"id": mid})
                    for m, mid in zip(prompt, sent, strict=True)
                ]
                with mock.patch.object(journal.digests, "_grown", lambda *_: None):
                    record = index.call_record("t", "agent", f"call{n}", as_sent)
            else:
                record = index.call_record("t", "agent", f"call{n}", prompt, sent)
                entries = expand_record(record, expanded)
                assert entries == [
                    (mid, message_digest(m if m.id == mid else m.model_copy(update={"id": mid})))
                    for m, mid in zip(prompt, sent, strict=True)
                ]
                expanded[f"call{n}"] = entries
            made.append((record, record_kind(record)))
    return made


@settings(max_examples=150, deadline=None)
@given(
    OPS,
    st.lists(st.none() | st.integers(min_value=0, max_value=50), max_size=4),
    st.sampled_from([1, 2, 3, 32]),
)
def test_a_prompt_is_recorded_from_its_ids_as_sent_as_its_copies_as_sent_are(
    ops: list[tuple[str, int]], late: list[int | None], keyframe_every: int
) -> None:
    """The records made from the ids as sent (the quick look comparing them whole, messages
    renamed in place since digested as copies under their ids as sent) expand to the
    messages as sent and are the full look's records of those, and so are their kinds."""
    quick = _records_as_sent(ops, late, keyframe_every, checked=False)
    checked = _records_as_sent(ops, late, keyframe_every, checked=True)
    assert quick == checked


@settings(max_examples=300, deadline=None)
@given(
    kind=_MESSAGE_CLASSES,
    content=st.text(max_size=4)
    | st.lists(st.sampled_from([{"type": "text", "text": "é"}, "x", {"k": (1,)}]), max_size=2),
    kwargs=st.dictionaries(st.text(max_size=2), _ODD_VALUES, max_size=3),
    name=st.none() | st.sampled_from(["n", "ñ"]),
    args=st.dictionaries(st.text(max_size=2), _ODD_VALUES, max_size=2),
    odd_type=st.sampled_from([None, "é", 3]),
)
def test_a_message_is_dumped_as_message_to_dict_dumps_it(
    kind: type[BaseMessage],
    content: Any,
    kwargs: dict[str, Any],
    name: str | None,
    args: dict[str, Any],
    odd_type: Any,
) -> None:
    """The journal's dump of a message (its serializer called directly for the standard
    classes) is ``message_to_dict``'s, value for value and type for type."""
    more = kind_fields(kind, args, args)
    message = kind(content, id="m1", name=name, additional_kwargs=kwargs, **more)
    if odd_type is not None:
        message.type = odd_type
    ours, theirs = _message_dict(message), message_to_dict(message)
    assert ours == theirs and repr(ours) == repr(theirs)


def _tail(messages: list[BaseMessage], budget: int) -> dict[str, Any]:
    """The excerpt as it was made before its kind was found with it (the reference)."""
    kept: list[dict[str, Any]] = []
    used = 0
    for message in reversed(messages[-3:]):
        text = _capture.text_of(message.content)
        room = budget - used
        if room <= 0:
            break
        kept.append({"type": message.type, "id": message.id, "text": text[:room]})
        used += min(len(text), room)
    kept.reverse()
    return {"messages": kept, "omitted_messages": len(messages) - len(kept)}


_TEXTS = st.text(max_size=6) | st.sampled_from(["é", "a\ud800", "x" * 40])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            _TEXTS | st.lists(_TEXTS.map(lambda t: {"type": "text", "text": t}), max_size=2),
            st.none() | st.sampled_from(["a", "é", "id-1"]),
            st.sampled_from([None, "é", 3]),
        ),
        max_size=6,
    ),
    st.integers(min_value=1, max_value=50),
)
def test_the_prompt_excerpt_and_its_kind_are_the_checked_ones(
    specs: list[tuple[Any, str | None, Any]], budget: int
) -> None:
    """The excerpt found with its kind is the excerpt, and its kind is ``scalars_kind`` of
    its values (the kind of the excerpt itself where that says PLAIN)."""
    prompt: list[BaseMessage] = []
    for content, mid, odd_type in specs:
        message = HumanMessage(content, id=mid)
        if odd_type is not None:
            message.type = odd_type
        prompt.append(message)
    tail, kind = _capture.prompt_tail_with_kind(prompt, budget)
    expected = _tail(prompt, budget)
    assert tail == expected and repr(tail) == repr(expected)
    assert kind == scalars_kind(*[v for m in tail["messages"] for v in m.values()])
    if kind == PLAIN:
        assert plain_kind(tail) == PLAIN


@given(st.integers(min_value=0, max_value=_LOW_MAX))
def test_an_id_group_is_written_as_its_format_spec_writes_it(low: int) -> None:
    """An event id's last group (hex digits below a 49th bit) is ``f"{low:012x}"``."""
    assert hex(low | _PAD_BIT)[3:] == f"{low:012x}"


@given(st.integers(min_value=-62_135_596_800_000_000, max_value=253_402_300_799_999_999))
def test_an_event_time_is_the_epoch_plus_its_microseconds(created_us: int) -> None:
    """The time the builder makes of an event's microseconds (its second's fields, then the
    microseconds within it) is ``epoch + timedelta(microseconds=...)``."""
    start, *fields = _second(created_us)
    made = datetime(*fields, created_us - start, UTC)  # type: ignore[misc]
    expected = _EPOCH + timedelta(0, 0, created_us)
    assert start <= created_us < start + 1_000_000
    assert made == expected and made.tzinfo is expected.tzinfo and made.fold == expected.fold


_ITEM = st.tuples(
    st.sampled_from(["t1", "t2", ""]),  # "" : an invalid thread id, the item dropped
    st.integers(min_value=-62_135_596_800_000_000, max_value=253_402_300_799_999_999),
    st.one_of(
        st.dictionaries(st.text(max_size=3), st.integers() | st.floats() | st.text(max_size=3)),
        st.builds(lambda n: {"set": (n,)}, st.integers()),  # not plain: encoded by the rules
    ),
    st.sampled_from([{}, {"caller": "agent"}, {"usage": {"input_tokens": 1.5}}]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ITEM, max_size=20))
def test_a_built_batch_carries_each_event_time_and_kinds(items: list[Any]) -> None:
    """Each built event's time in µs (the batch's ``times``, one an event, items dropped
    left out) is its ``created_at``'s, and its hints are the kinds of what it stores."""
    dropped: list[int] = []
    builder = BatchBuilder(lambda run_id, count: dropped.append(count))
    pending = [
        Pending(thread, "r", "trace", "tool.end", content, metadata, created_us, NOT_PLAIN)
        for thread, created_us, content, metadata in items
    ]
    batch = builder.build(pending)
    assert len(batch) + len(dropped) == len(items)
    assert batch.times == [to_micros(event.created_at) for event in batch]
    assert batch.hints == [(plain_kind(e.content), plain_kind(e.metadata)) for e in batch]
    assert [e.created_at for e in batch] == [
        _EPOCH + timedelta(0, 0, created_us) for thread, created_us, _, _ in items if thread
    ]
