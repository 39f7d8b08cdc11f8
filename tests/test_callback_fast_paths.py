"""The callback path's fast paths give what the paths they stand in for give."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from journal import _capture as cap
from journal._registry import RunRegistry, run_text
from journal._run_state import RunState, ThreadStates

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


#: How a node output holds one update: as itself, in a list, as a ``Command`` in a list, or
#: in a list after an item that is no update (a ``Command`` that only routes, a string).
_WRAPS = st.sampled_from(["dict", "list", "command", "after_other"])


def _wrapped(update: dict[str, Any], wrap: str, general: bool) -> Any:
    """``update`` as a node output; the ``general`` one in a tuple (no exact list)."""
    if wrap == "dict":
        return update
    item: Any = Command(update=update) if wrap == "command" else update
    items = [Command(goto="x"), "other", item] if wrap == "after_other" else [item]
    return tuple(items) if general else items


@given(st.lists(_ITEM, max_size=8), _WRAPS, st.booleans())
def test_a_node_output_of_updates_reads_alike_through_the_fast_paths(
    specs: list[tuple[Any, ...]], wrap: str, twice: bool
) -> None:
    """A node output of exact lists (of dicts or ``Command``s) and exact message lists reads
    as the same output of a tuple, dict subclasses and list subclasses does; with two
    updates too."""

    def output(general: bool) -> Any:
        made = [_made(spec) for spec in specs]
        first: dict[str, Any] = _Dict(messages=_List(made)) if general else {"messages": made}
        if not twice or wrap == "dict":
            return _wrapped(first, wrap, general)
        second = {"messages": [_made(spec) for spec in reversed(specs)]}
        items = [*_wrapped(first, wrap, general), Command(update=second)]
        return tuple(items) if general else items

    assert _read(cap.node_writes(output(False))) == _read(cap.node_writes(output(True)))


_TOKEN_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-5, max_value=2**60),
    st.sampled_from([0, 1, 2**53 - 1, 2**53, 2**53 + 1, True, False]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)


@given(st.lists(_TOKEN_VALUES, min_size=6, max_size=6))
def test_a_usage_record_reads_each_count_as_the_token_rule_does(values: list[Any]) -> None:
    """The usage record's counts are :func:`_tokens` of each reported value (the written out
    fast path for ints), the total the sum of input and output when it reads as 0."""
    record = cap._usage(*values)
    counts = [cap._tokens(value) for value in values]
    assert record == {
        "input_tokens": counts[0],
        "output_tokens": counts[1],
        "total_tokens": counts[2] or counts[0] + counts[1],
        "cache_read_tokens": counts[3],
        "cache_creation_tokens": counts[4],
        "reasoning_tokens": counts[5],
    }
    assert all(type(count) is int for count in record.values())


@given(st.lists(st.sampled_from("abcde"), max_size=40), st.integers(min_value=0, max_value=4))
def test_thread_states_are_a_least_recently_used_map(asked: list[str], capacity: int) -> None:
    """Each thread's state is made once while remembered, and the least recently asked one
    is forgotten first: as a plain LRU map keeps them."""
    made: list[str] = []

    def factory(thread_id: str) -> str:
        made.append(thread_id)
        return f"{thread_id}{len(made)}"

    states = ThreadStates(factory, capacity)
    expected: dict[str, str] = {}  # in recency order
    expected_made: list[str] = []
    for thread_id in asked:
        state = expected.pop(thread_id, None)
        if state is None:
            expected_made.append(thread_id)
            state = f"{thread_id}{len(expected_made)}"
        expected[thread_id] = state
        if len(expected) > capacity:
            del expected[next(iter(expected))]
        assert states.get(thread_id) == state
    assert made == expected_made
    assert states.values() == list(expected.values())


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
