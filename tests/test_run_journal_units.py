"""Unit checks of the RunJournal building blocks: tool order, attribution, spool, inputs."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from journal import MemoryEventStore, NewEvent, recover_spool, replay_spool
from journal._capture import assign_input_ids, output_messages, prompt_tail
from journal._run_state import Node, RunState, caller_for
from journal._tool_order import ToolOrder
from journal.spool import Spool, read_spool


def tool_message(call_id: str) -> ToolMessage:
    """A tool result for ``call_id``."""
    return ToolMessage(call_id, tool_call_id=call_id)


@given(st.permutations([f"c{i}" for i in range(6)]))
def test_tool_results_come_out_in_call_order(completion: list[str]) -> None:
    """Whatever order results complete in, they are released in the order of the calls."""
    order: ToolOrder[str] = ToolOrder()
    calls = [f"c{i}" for i in range(6)]
    assert order.calls_made(list(calls)) == []
    released: list[str] = []
    for call_id in completion:
        due = order.result_written(call_id, [tool_message(call_id)], step=2)
        released += [str(m.content) for m in due]
    assert released == calls
    assert not order.pending


def test_unknown_and_missing_results_are_not_held_forever() -> None:
    """A result for an unknown call passes through; the run's end frees results still held."""
    order: ToolOrder[str] = ToolOrder()
    order.calls_made(["a", "b"])
    assert [m.content for m in order.result_written("zzz", [tool_message("zzz")], 2)] == ["zzz"]
    assert order.result_written("b", [tool_message("b")], 2) == []
    assert [m.content for m in order.run_ended()] == ["b"]


def test_a_later_step_or_a_failed_call_releases_what_waits() -> None:
    """Results wait for earlier calls until those fail, a later superstep starts, or a
    middleware answers them; a paused run's results come out at close with its holder."""
    order: ToolOrder[str] = ToolOrder()
    order.calls_made(["a", "b", "c"])
    assert order.result_written("c", [tool_message("c")], 3) == []
    assert order.step_started(3) == []  # the same step: "a" and "b" may still answer
    assert order.call_failed("a") == []
    assert [m.content for m in order.answered_elsewhere("b")] == ["c"]
    order.calls_made(["d", "e"])
    assert order.result_written("e", [tool_message("e")], 5) == []
    assert [m.content for m in order.step_started(6)] == ["e"]
    assert not order.pending
    order.calls_made(["f", "g"])
    order.result_written("g", [tool_message("g")], 7)
    order.run_paused("paused run")
    holder, due = order.closing()
    assert holder == "paused run" and [m.content for m in due] == ["g"]
    assert order.closing() == (None, [])


def test_callers_of_nodes_middleware_and_subagents() -> None:
    """Root nodes are agent or middleware:<Class>; anything in a nested namespace is a subagent."""
    assert caller_for(None, "model", {"langgraph_node": "model"}) == ("agent", True)
    middleware = {"langgraph_node": "SummarizationMiddleware.before_model"}
    assert caller_for(None, "x", middleware) == ("middleware:SummarizationMiddleware", True)
    run = RunState(run_id="r", thread_id="t", graph="g")
    graph = Node(run=run, name="researcher", caller="agent", node="tools", step=2)
    nested = {"langgraph_checkpoint_ns": "tools:1|model:2"}
    assert caller_for(graph, "model", nested) == ("subagent:researcher", False)
    inner = Node(run=run, name="model", caller="subagent:researcher", node="model", step=1)
    assert caller_for(inner, "m", nested) == ("subagent:researcher", False)


def test_input_forms_are_read_without_changing_the_input() -> None:
    """Dicts, tuples and strings are read as messages without an id, the input left as it
    is; a message object gets its id in place (as ``add_messages`` would give it)."""
    given = HumanMessage("d")
    items: list[Any] = [
        {"role": "user", "content": "a"},
        ("user", "b"),
        "c",
        given,
        RemoveMessage(id="gone"),
    ]
    inputs: dict[str, Any] = {"messages": items}
    before = [dict(items[0]), *items[1:]]
    messages = assign_input_ids(inputs)
    assert [m.content for m in messages] == ["a", "b", "c", "d"]
    assert [m.id for m in messages[:3]] == [None, None, None]
    assert messages[3] is given and given.id is not None
    assert inputs["messages"] is items and items == before
    assert assign_input_ids("not a state") == []


def test_output_messages_unwraps_commands_and_lists() -> None:
    """Node outputs as dict, Command or list of Commands all yield their messages."""
    from langgraph.types import Command

    answer = AIMessage("x")
    assert output_messages({"messages": [answer]}) == [answer]
    assert output_messages([Command(update={"messages": [answer]})]) == [answer]
    assert output_messages(None) == []
    assert answer.id is not None


def test_prompt_tail_is_bounded() -> None:
    """The llm.start excerpt keeps at most 3 messages and the text budget."""
    prompt = [HumanMessage("x" * 100, id=str(i)) for i in range(50)]
    tail = prompt_tail(prompt, budget=150)
    assert tail["omitted_messages"] == 48
    assert [m["id"] for m in tail["messages"]] == ["48", "49"]
    assert sum(len(m["text"]) for m in tail["messages"]) == 150


def test_spool_skips_a_torn_line_and_replays_the_rest(tmp_path: Path) -> None:
    """A torn last line is skipped and kept alone in the file; the valid events replay once."""
    path = tmp_path / "spool.jsonl"
    events = [
        NewEvent(thread_id="t", run_id="r", category="trace", event_type="custom:x", content=i)
        for i in range(3)
    ]
    Spool(path).append(events)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"thread_id": "t"})[:10])
    assert [e.event_id for e in read_spool(path)] == [e.event_id for e in events]
    store = MemoryEventStore()
    assert replay_spool(path, store) == 3
    assert [e.content for e in store.read("t")] == [0, 1, 2]
    assert path.read_text() == json.dumps({"thread_id": "t"})[:10] + "\n"  # the torn line
    again = recover_spool(path, store)  # kept for a person to look at; replaying is harmless
    assert (again.events, again.skipped_lines, again.removed) == (0, 1, False)
    assert store.last_seq("t") == 3


class _AppendDuringReplay(MemoryEventStore):
    """A store whose first append waits while another spool on the same file appends."""

    def __init__(self, other: Spool, late: list[NewEvent]) -> None:
        super().__init__()
        self.other, self.late = other, late
        self.writer: threading.Thread | None = None

    def _append(self, events: Any) -> Any:
        if self.writer is None:
            self.writer = threading.Thread(target=self.other.append, args=(self.late,))
            self.writer.start()
            self.writer.join(0.3)  # blocked by the replay's lock once the fix is in
        return super()._append(events)


def test_spools_sharing_a_file_never_lose_events_appended_during_a_replay(
    tmp_path: Path,
) -> None:
    """Events a second journal spools to the same file while the first replays it are kept."""
    path = tmp_path / "spool.jsonl"

    def made(n: int) -> list[NewEvent]:
        return [
            NewEvent(thread_id="t", run_id="r", category="trace", event_type="custom:x", content=n)
        ]

    first, second = Spool(path), Spool(path)
    first.append(made(1))
    store = _AppendDuringReplay(second, made(2))
    assert first.replay(store) == 1
    assert store.writer is not None
    store.writer.join(5)
    replay_spool(path, store)  # what the second journal spooled meanwhile
    assert sorted(e.content for e in store.read("t")) == [1, 2]
