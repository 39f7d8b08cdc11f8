"""The journal's model of ``add_messages`` on ids agrees with LangGraph's own reducer."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from journal._edits import apply_write

IDS = [f"m{i}" for i in range(8)]

op = st.one_of(
    st.tuples(st.just("remove"), st.sampled_from(IDS)),
    st.tuples(st.just("message"), st.sampled_from(IDS)),
    st.tuples(st.just("remove_all"), st.just("")),
)


def build(ops: list[tuple[str, str]], version: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for kind, mid in ops:
        if kind == "remove":
            out.append(RemoveMessage(id=mid))
        elif kind == "remove_all":
            out.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
        else:
            out.append(AIMessage(f"{mid} v{version}", id=mid))
    return out


@settings(max_examples=400, deadline=None)
@given(
    state=st.lists(st.sampled_from(IDS), unique=True, max_size=6),
    ops=st.lists(op, max_size=8),
)
def test_apply_write_matches_add_messages(state: list[str], ops: list[tuple[str, str]]) -> None:
    """Same order, same removals, same surviving messages as LangGraph's reducer."""
    left: list[Any] = [HumanMessage(f"{i} v0", id=i) for i in state]
    write = build(ops, 1)
    cuts = [n for n, (kind, _) in enumerate(ops) if kind == "remove_all"]
    if cuts:  # a rewrite's list is the new state: LangGraph takes it as is, even if degenerate
        rest = ops[cuts[-1] + 1 :]
        assume(all(kind == "message" for kind, _ in rest))
        assume(len({mid for _, mid in rest}) == len(rest))
    try:
        result = add_messages(left, list(write))
    except ValueError:
        return  # LangGraph refuses the write (an unknown id): the journal never sees it applied
    outcome = apply_write(state, write)
    after = [m.id for m in result]
    assert outcome.order == after
    assert outcome.removed == [i for i in state if i not in after]
    by_id = {m.id: m for m in result}
    assert all(by_id[m.id] is m for m in outcome.messages)  # the objects the state now holds
    written = {m.id for m in result if any(m is w for w in write)}
    assert {m.id for m in outcome.messages} == written


def test_a_removal_of_an_id_the_journal_never_saw_counts_as_removed() -> None:
    """Applied by LangGraph, so the message existed: it is reported, not an error."""
    outcome = apply_write(["a"], [RemoveMessage(id="older")])
    assert outcome.removed == ["older"] and outcome.order == ["a"]
