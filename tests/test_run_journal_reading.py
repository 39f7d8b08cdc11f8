"""Unit checks of how the journal reads a node's output and a task's path (one pass, cached)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from journal._capture import (
    node_writes,
    output_messages,
    output_writes,
    removes_messages,
    written_ids,
)
from journal._edits import task_order_key


def _outputs() -> list[Any]:
    """Node outputs of every form a node returns, with and without removals."""
    return [
        None,
        {"messages": [AIMessage("a", id="a1")]},
        {"messages": AIMessage("single", id="s1")},
        {"messages": [("user", "as a tuple"), {"role": "assistant", "content": "as a dict"}]},
        {"messages": [ToolMessage("3", tool_call_id="c1", id="t1")], "other": 1},
        [Command(update={"messages": [AIMessage("b", id="b1")]}), {"messages": []}],
        Command(update={"messages": [RemoveMessage(id="a1")]}),
        {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("kept", id="h1")]},
        [
            {"messages": [AIMessage("c", id="c1")]},
            Command(update={"messages": [RemoveMessage(id="c0")]}),
        ],
        {"messages": "a bare string"},
    ]


@pytest.mark.parametrize("index", range(len(_outputs())))
def test_one_pass_reads_what_the_separate_readers_read(index: int) -> None:
    """node_writes gives the writes, the removal flag, the messages and the written ids that
    output_writes, removes_messages, output_messages and written_ids give for the output."""
    output = _outputs()[index]
    same = _outputs()[index]  # a fresh copy for the readers that give ids in place
    written = node_writes(output)
    assert written.removes == removes_messages(same)
    assert [[(m.type, m.content) for m in w] for w in written.writes] == [
        [(m.type, m.content) for m in w] for w in output_writes(same)
    ]
    assert [(m.type, m.content) for m in written.messages()] == [
        (m.type, m.content) for m in output_messages(_outputs()[index])
    ]
    assert written.ids() == written_ids(output)  # the ids now in the output it wrote


def test_written_ids_include_removals_and_the_messages_given_ids() -> None:
    """The ids a node wrote: its messages' (an id given in place included) and removals'."""
    fresh = AIMessage("no id yet")
    written = node_writes({"messages": [fresh, RemoveMessage(id="gone")]})
    assert fresh.id is not None
    assert written.ids() == {fresh.id, "gone"}
    assert written.removes


def test_cached_task_paths_keep_numbers_and_booleans_apart() -> None:
    """A cached path key is the computed key: True and 1 (equal as dict keys) stay distinct,
    and asking again gives the same key."""
    push_one = ("__pregel_push", 1, False)
    push_true = ("__pregel_push", True, False)
    first = task_order_key(push_one)
    assert task_order_key(push_true) != first
    assert task_order_key(push_one) == first == "~__pregel_push, 0000000001, False"
    assert task_order_key(push_true) == "~__pregel_push, True, False"
    assert task_order_key(("__pregel_push", 10, False)) > first  # Send 10 follows Send 1
    nested = ("__pregel_push", ("__pregel_pull", "model"), 2, True)
    assert task_order_key(nested) == "~__pregel_push, ~__pregel_pull, model, 0000000002, True"
