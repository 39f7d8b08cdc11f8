"""The callback path's fast paths give what the paths they stand in for give."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from journal import _capture as cap
from journal._registry import RunRegistry, run_text
from journal._run_state import RunState
from journal._tracker import _unset

_IDS = st.none() | st.sampled_from(["a", "b", "c"])
_TEXT = st.text(max_size=5)
#: A written item, as a spec: message objects are made anew for each side (ids are given in
#: place), message-like items are what a node may write instead.
_ITEM = st.one_of(
    st.tuples(st.just("human"), _TEXT, _IDS),
    st.tuples(st.just("ai"), _TEXT, _IDS),
    st.tuples(st.just("remove"), st.sampled_from(["a", "b", REMOVE_ALL_MESSAGES])),
    st.tuples(st.just("dict"), _TEXT),
    st.tuples(st.just("tuple"), _TEXT),
    st.tuples(st.just("str"), _TEXT),
)


class _Dict(dict[str, Any]):
    """A dict the fast paths (exact types only) leave to the general ones."""


class _List(list[Any]):
    """A list the fast paths (exact types only) leave to the general ones."""


def _made(spec: tuple[Any, ...]) -> Any:
    kind = spec[0]
    if kind == "human":
        return HumanMessage(spec[1], id=spec[2])
    if kind == "ai":
        return AIMessage(spec[1], id=spec[2])
    if kind == "remove":
        return RemoveMessage(id=spec[1])
    if kind == "dict":
        return {"role": "user", "content": spec[1]}
    return ("user", spec[1]) if kind == "tuple" else spec[1]


def _read(writes: cap.NodeWrites) -> tuple[list[list[tuple[Any, ...]]], bool]:
    """What a node's writes say, with the ids given in place only marked as given."""
    given = {"a", "b", "c", REMOVE_ALL_MESSAGES, None}
    seen = [
        [(m.type, m.content, m.id if m.id in given else "new") for m in write]
        for write in writes.writes
    ]
    return seen, writes.removes


@given(st.lists(st.booleans(), max_size=30))
def test_the_prompt_scan_finds_every_message_sent_without_an_id(with_ids: list[bool]) -> None:
    """The model call's note of the prompt messages without an id is the full scan's."""
    prompt: list[BaseMessage] = [
        HumanMessage("m", id=f"m{i}" if has_id else None) for i, has_id in enumerate(with_ids)
    ]
    expected = [index for index, message in enumerate(prompt) if message.id is None]
    assert list(_unset(prompt)) == expected


@given(st.lists(_ITEM, max_size=8), st.booleans())
def test_a_node_output_is_read_alike_through_the_fast_paths(
    specs: list[tuple[Any, ...]], command: bool
) -> None:
    """A node output of exact dicts and lists reads as the same output of subclasses does."""
    fast: Any = {"messages": [_made(spec) for spec in specs]}
    general: Any = _Dict(messages=_List(_made(spec) for spec in specs))
    if command:  # the model node's output: a list of updates
        fast, general = [fast], [general]
    assert _read(cap.node_writes(fast)) == _read(cap.node_writes(general))


_USAGE = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "total_tokens", "cache_read_tokens"]),
    st.integers(min_value=0, max_value=2**40),
)


@given(st.lists(st.tuples(st.sampled_from(["m1", "m2"]), _USAGE), max_size=6))
def test_a_runs_usage_totals_add_each_calls_usage(calls: list[tuple[str, dict[str, int]]]) -> None:
    """A run's totals and totals by model are those of adding each call's usage key by key,
    in the same key order."""
    run = RunState(run_id="r", thread_id="t", graph="g")
    total: dict[str, int] = {}
    by_model: dict[str, dict[str, int]] = {}
    for model, usage in calls:
        run.add_usage(model, usage)
        cap.add_usage(total, usage)
        per_model = by_model.setdefault(model, {"calls": 0})
        per_model["calls"] += 1
        cap.add_usage(per_model, usage)
    assert list(run.usage.items()) == list(total.items())
    assert [(m, list(u.items())) for m, u in run.usage_by_model.items()] == [
        (m, list(u.items())) for m, u in by_model.items()
    ]


class _Uuid(UUID):
    """A ``UUID`` subclass with a text of its own: left to ``str``."""

    def __str__(self) -> str:
        return "mine"


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_a_run_ids_text_is_str_of_it(value: int) -> None:
    """A run id's span text is ``str`` of it: a UUID's, a subclass's, any other value's."""
    run_id = UUID(int=value)
    assert run_text(run_id) == str(run_id)
    assert run_text(_Uuid(int=value)) == "mine"
    assert run_text(str(run_id)) == str(run_id)
    assert run_text(value) == str(value)


@given(st.integers(min_value=0, max_value=2**128 - 1), st.booleans())
def test_runs_are_found_by_an_equal_run_id(value: int, subclass: bool) -> None:
    """A run kept under one UUID is found, and ended, by any equal one (another object, a
    subclass); a run id that is no UUID is kept as itself."""
    runs = RunRegistry()
    root = RunState(run_id="r", thread_id="t", graph="g")
    runs.add_root(UUID(int=value), root)
    other = (_Uuid if subclass else UUID)(int=value)
    assert runs.root(other) is root
    child = runs.add_child(UUID(int=value ^ 1), other, "n", {}, traced=True)
    assert child is not None and child.parent_span == "r"
    assert runs.node(UUID(int=value ^ 1)) is child
    assert runs.root(str(other)) is None and runs.node(value ^ 1) is None
    assert runs.end_root(other, root) == [child]
    assert runs.finished(UUID(int=value)) and runs.finished(UUID(int=value ^ 1))
