"""The llm.start context record is exact whatever a conversation does between calls."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)

from journal.digests import ContextIndex, _grown, _unchanged_prefix, expand_record, message_digest
from journal.encoding import NOT_PLAIN, dumps, dumps_plain, jsonable_with_kind, plain_kind
from journal.messages import (
    _SCHEMA_KEYS,
    _schema_dump_kind,
    message_to_content,
    message_to_plain,
)


class _Sub(HumanMessage):
    """A subclass: its dump's keys are not known by its class."""


# one operation on a growing conversation, before the next model call
OPS = st.lists(
    st.tuples(
        st.sampled_from(["grow", "journal", "edit", "copy", "drop", "call_other"]),
        st.integers(min_value=0, max_value=50),
    ),
    min_size=1,
    max_size=40,
)


def apply_op(
    index: ContextIndex,
    state: list[BaseMessage],
    n: int,
    op: str,
    arg: int,
    *,
    grow: Callable[[int, int], BaseMessage] | None = None,
    rename: Callable[[int, int], str | None] | None = None,
) -> None:
    """Apply the ``n``-th of :data:`OPS`' operations to the conversation ``state``: ``grow``
    appends ``grow(n, arg)`` (default: an AI or human message by turns, id ``m{n}``),
    ``journal`` journals one of its messages through ``index`` as a replacement, ``edit``
    replaces a content in place, ``copy`` swaps a message for its deep copy, ``drop`` removes
    one; ``call_other`` renames a message in place to ``rename(n, arg)`` when ``rename`` is
    given (else it changes nothing here: the caller calls as another caller)."""
    if op == "grow":
        if grow is None:
            kind = AIMessage if n % 2 else HumanMessage
            state.append(kind(f"message {n}", id=f"m{n}"))
        else:
            state.append(grow(n, arg))
    elif op == "journal" and state:
        index.message_event("t", state[arg % len(state)], replacement=True)
    elif op == "edit" and state:
        state[arg % len(state)].content = f"edited {n}"  # in place, a new content object
    elif op == "copy" and state:
        i = arg % len(state)
        state[i] = state[i].model_copy(deep=True)
    elif op == "drop" and len(state) > 1:
        del state[arg % len(state)]
    elif op == "call_other" and state and rename is not None:
        state[arg % len(state)].id = rename(n, arg)  # an id changed in place


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_every_record_expands_to_the_exact_prompt(ops: list[tuple[str, int]]) -> None:
    """Whether messages grow, are journaled, edited in place (content replaced), copied,
    dropped, or another caller calls in between, each record expands to the ids and digests
    of exactly the messages that call received."""
    index = ContextIndex()
    state: list[BaseMessage] = [HumanMessage("start", id="h0")]
    expanded: dict[str, list[Any]] = {}
    for n, (op, arg) in enumerate(ops):
        apply_op(index, state, n, op, arg)
        caller = "middleware:Other" if op == "call_other" else "agent"
        prompt = list(state)
        run_id = f"call{n}"
        record = index.call_record("t", caller, run_id, prompt)
        entries = expand_record(record, expanded)
        assert entries == [(m.id, message_digest(m)) for m in prompt]
        expanded[run_id] = entries


def _ai(n: int, arg: int) -> BaseMessage:
    return AIMessage(f"message {n}", id=f"m{n}")


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_a_grown_prompt_is_found_as_the_full_look_finds_it(ops: list[tuple[str, int]]) -> None:
    """The quick look at a prompt that begins with the whole previous one (each message's
    content read once, its ids as sent compared whole) finds what the full look finds: the
    same reused count (the previous call's contents those of the messages now), or nothing
    where the full look reuses less; each call's set of ids is the set of its ids."""
    index = ContextIndex()
    state: list[BaseMessage] = [HumanMessage("start", id="h0")]
    for n, (op, arg) in enumerate(ops):
        apply_op(index, state, n, op, arg, grow=_ai, rename=lambda n, _: f"renamed {n}")
        prompt = list(state)
        thread = index._threads.get("t")
        last = thread.calls.get("agent") if thread is not None else None
        if last is not None:
            contents = [m.content for m in prompt]
            ids = [m.id for m in prompt]
            full = _unchanged_prefix(last, prompt, contents, ids, thread.log)  # type: ignore[union-attr]
            grown = _grown(last, prompt, ids, thread.log)  # type: ignore[union-attr]
            if grown is None:
                assert full < len(last.messages) or len(last.ids) != len(last.messages)
            else:
                assert grown == full == len(last.messages)
                assert all(map(operator.is_, last.contents, contents))  # (up to the shorter)
                assert len(last.contents) == len(last.messages)
            assert last.known_ids == set(last.ids)
        index.call_record("t", "agent", f"call{n}", prompt)


_ODD_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(["\ud800", "é", 2**70, 2**7000, float("nan"), -0.0, 1e-07, 1e16]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=2) | st.sampled_from(["\udfff", "é"]), inner, max_size=3)
        | st.tuples(inner)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from([HumanMessage, AIMessage, ToolMessage]),
    text=st.text(max_size=6) | st.sampled_from(["a\ud800", "ü"]),
    blocks=st.booleans(),
    extra=st.dictionaries(st.text(max_size=3) | st.just("\ud800"), _ODD_VALUES, max_size=3),
)
def test_a_message_event_is_the_stored_form_and_its_canonical_text(
    kind: type[BaseMessage], text: str, blocks: bool, extra: dict[str, Any]
) -> None:
    """A message event's content, digest and text are ``message_to_content``'s stored form
    (as a dict of its own), its digest and ``dumps_plain`` of it, whatever the message holds
    (lone surrogates, odd floats, big ints, tuples, odd keys)."""
    content: Any = [{"type": "text", "text": text}] if blocks else text
    args: dict[str, Any] = {"tool_call_id": "c1"} if kind is ToolMessage else {}
    message = kind(content, id="m1", additional_kwargs=extra, **args)
    expected = message_to_content(message)
    stored, plain_kind_of = message_to_plain(message)
    assert type(stored) is dict and stored == dict(expected)
    assert plain_kind_of == expected.kind
    event = ContextIndex().message_event("t", message, replacement=False)
    assert event is not None
    assert event[0] == dict(expected)
    assert event[2] == dumps_plain(expected) == dumps(expected)
    assert event[1] == message_digest(message)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def kind_fields(kind: type[BaseMessage], artifact: Any, args: Any) -> dict[str, Any]:
    """The fields a message of ``kind`` needs (or, for an AI message, a tool call of ``args``;
    for a tool message, ``artifact``), beside its content and id."""
    if kind is ToolMessage:
        return {"tool_call_id": "c1", "artifact": artifact}
    if kind is ChatMessage:
        return {"role": "r"}
    if kind in (AIMessage, AIMessageChunk):
        return {"tool_calls": [{"name": "f", "args": args, "id": "c1"}]}
    return {}


_MESSAGE_CLASSES = st.sampled_from(
    [HumanMessage, AIMessage, ToolMessage, SystemMessage, AIMessageChunk, ChatMessage, _Sub]
)


@settings(max_examples=400, deadline=None)
@given(
    kind=_MESSAGE_CLASSES,
    content=st.text(max_size=4)
    | st.sampled_from(["a\ud800", "ü"])
    | st.lists(st.sampled_from([{"type": "text", "text": "é"}, "x", {"k": (1,)}]), max_size=2),
    fields=st.dictionaries(
        st.sampled_from(["additional_kwargs", "response_metadata"]),
        st.dictionaries(st.text(max_size=2) | st.just("\ud800"), _ODD_VALUES, max_size=3),
    ),
    name=st.none() | st.sampled_from(["n", "ñ", "b\udfff"]),
    extra=st.dictionaries(st.sampled_from(["x", "é", "ünï"]), _ODD_VALUES, max_size=2),
    args=st.dictionaries(st.text(max_size=2), _ODD_VALUES, max_size=2),
    artifact=_ODD_VALUES,
    depth=st.sampled_from([0, 59, 60, 61, 62, 63]),
    odd_type=st.sampled_from([None, "é", "a\ud800", 3]),
)
def test_a_standard_message_dump_walks_as_the_generic_walk(
    kind: type[BaseMessage],
    content: Any,
    fields: dict[str, Any],
    name: str | None,
    extra: dict[str, Any],
    args: dict[str, Any],
    artifact: Any,
    depth: int,
    odd_type: Any,
) -> None:
    """``message_to_plain``'s kind of a standard message's dump (its keys known ASCII, its
    values walked) is the generic walk's, and its stored form the rules' (extra fields, odd
    values, nesting up to the depth limit, a ``type`` assigned after construction)."""
    more = kind_fields(kind, artifact, args)
    if depth:
        fields = {**fields, "additional_kwargs": {"deep": _nested(depth)}}
    message = kind(content, id="m1", name=name, **fields, **more, **extra)
    if odd_type is not None:
        message.type = odd_type
    dump = message_to_dict(message)
    fast = _schema_dump_kind(message, message_to_dict(message))
    if type(message) in _SCHEMA_KEYS and not extra and odd_type in (None, "é"):
        assert fast == plain_kind(dump) or (odd_type == "é" and fast == NOT_PLAIN)
    else:
        assert fast == NOT_PLAIN or fast == plain_kind(dump)
    stored, stored_kind = message_to_plain(message)
    expected, expected_kind = jsonable_with_kind(message_to_dict(message))
    assert type(stored) is dict and stored_kind == expected_kind
    assert stored == expected and dumps(stored) == dumps(expected)
    if plain_kind(dump):
        assert stored_kind == plain_kind(dump)


@pytest.mark.parametrize("depth", range(56, 66))
@pytest.mark.parametrize("kind", [HumanMessage, AIMessage, SystemMessage])
def test_a_standard_message_dump_nested_to_the_limit_walks_as_the_generic_walk(
    kind: type[BaseMessage], depth: int
) -> None:
    """Plain data nested around ``MAX_DEPTH`` in a standard message: its dump's kind is the
    generic walk's on either side of the limit (the dump's values walked from their depth)."""
    message = kind("x", id="m1", additional_kwargs={"deep": _nested(depth), "f": 0.5})
    dump = message_to_dict(message)
    assert _schema_dump_kind(message, dump) == plain_kind(dump)
    assert message_to_plain(message) == jsonable_with_kind(message_to_dict(message))
