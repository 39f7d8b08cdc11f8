"""A failed run names the node step that raised (``run.error`` metadata), and the run's
spans show that step as an error — even a step that raised before it wrote any event."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

from history._reads import run_plan
from history._spans import spans_plan
from journal import MemoryEventStore, RunEvent, RunJournal
from journal.catalog import PARENT_SPAN_KEY


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _spans(store: MemoryEventStore, thread: str) -> dict[str, Any]:
    [run] = store.list_runs(thread)
    return run_plan(store, spans_plan(thread, run.run_id))


def _error(store: MemoryEventStore, thread: str) -> RunEvent:
    [error] = store.read(thread, event_type="run.error")
    return error


def _nodes(spans: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in spans["spans"] if s["kind"] == "node"}


def test_a_node_that_raises_before_any_event_gets_an_error_span() -> None:
    """The step that raised is named on run.error and drawn as an error; the step before it ok."""

    def prepare(state: State) -> dict[str, Any]:
        return {"steps": ["prepared"]}

    def explode(state: State) -> dict[str, Any]:
        raise ValueError("explode broke")

    graph = StateGraph(State)
    graph.add_node("prepare", prepare)
    graph.add_node("explode", explode)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "explode")
    graph.add_edge("explode", END)
    store = MemoryEventStore()
    journal = RunJournal(store)
    app = graph.compile().with_config(callbacks=[journal])
    with pytest.raises(ValueError, match="explode broke"):
        app.invoke({"steps": []}, {"configurable": {"thread_id": "t"}})
    journal.close()

    error = _error(store, "t")
    assert error.metadata["langgraph_node"] == "explode"
    assert error.metadata["langgraph_step"] == 2
    assert isinstance(error.metadata[PARENT_SPAN_KEY], str)
    spans = _spans(store, "t")
    assert spans["status"] == "error"
    assert _nodes(spans) == {"explode": "error"}  # "prepare" made no event: no span of its own
    assert spans["errors"] == 1


async def test_the_task_that_raised_is_named_not_the_one_cancelled_by_it() -> None:
    """Two tasks in one superstep: the one that raised is named, not the sibling it cancelled."""
    started = asyncio.Event()

    async def slow(state: State) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(5)
        return {"steps": ["slow"]}

    async def fails(state: State) -> dict[str, Any]:
        await started.wait()  # the sibling is running when this one raises
        raise RuntimeError("fails broke")

    graph = StateGraph(State)
    graph.add_node("slow", slow)
    graph.add_node("fails", fails)
    graph.add_edge(START, "slow")
    graph.add_edge(START, "fails")
    store = MemoryEventStore()
    journal = RunJournal(store)
    app = graph.compile().with_config(callbacks=[journal])
    with pytest.raises(RuntimeError, match="fails broke"):
        await app.ainvoke({"steps": []}, {"configurable": {"thread_id": "p"}})
    await journal.aclose()

    assert _error(store, "p").metadata["langgraph_node"] == "fails"
    assert _nodes(_spans(store, "p")) == {"fails": "error"}


def test_a_failure_outside_any_node_names_none() -> None:
    """Out of steps (raised by the loop, not a node): run.error names no node, no node errs."""

    def again(state: State) -> dict[str, Any]:
        return {"steps": ["again"]}

    graph = StateGraph(State)
    graph.add_node("again", again)
    graph.add_edge(START, "again")
    graph.add_conditional_edges("again", lambda state: "again")
    store = MemoryEventStore()
    journal = RunJournal(store)
    app = graph.compile().with_config(callbacks=[journal])
    with pytest.raises(GraphRecursionError):
        app.invoke({"steps": []}, {"configurable": {"thread_id": "r"}, "recursion_limit": 4})
    journal.close()

    assert "langgraph_node" not in _error(store, "r").metadata
    spans = _spans(store, "r")
    assert spans["status"] == "error"
    assert "error" not in _nodes(spans).values()
