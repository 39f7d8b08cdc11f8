"""A failed run names the node step that failed it, not one a ``RetryPolicy`` recovered.

LangGraph runs a node with a retry policy again, as the same task, after it raised. The
journal named on ``run.error`` the first node step that ever raised in the run, so a model
node whose retry succeeded was blamed for a failure a later node raised (its failed first
attempt's span drawn as the error).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import RetryPolicy

from history import replay, verify
from history._reads import run_plan
from history._spans import spans_plan
from journal import RunEvent, RunJournal, SqliteEventStore
from journal.catalog import PARENT_SPAN_KEY
from tests.fakes import ScriptedChatModel, ai

THREAD = "t"
RETRY = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=Exception)
MODES = ["sync", "async"]


async def run_failing(graph: Any, store: SqliteEventStore, tmp_path: Path, mode: str) -> Any:
    """Run ``graph`` once with a journal until it raises ``ValueError``; its saved state."""
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": THREAD}}
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config["callbacks"] = [journal]
        inputs = {"messages": [HumanMessage("hi")]}
        with pytest.raises(ValueError, match="for good"):
            if mode == "async":
                await app.ainvoke(inputs, config)
            else:
                await asyncio.to_thread(app.invoke, inputs, config)
        assert journal.flush(10)
    return app.get_state(config).values


def run_error(store: SqliteEventStore) -> RunEvent:
    [error] = store.read(THREAD, event_type="run.error")
    return error


def error_spans(store: SqliteEventStore) -> list[tuple[str, Any]]:
    """The node spans the run's spans view draws as errors: (name, step)."""
    [run] = store.list_runs(THREAD)
    spans = run_plan(store, spans_plan(THREAD, run.run_id))["spans"]
    return [(s["name"], s["step"]) for s in spans if s["kind"] == "node" and s["status"] == "error"]


def boom(state: MessagesState) -> dict[str, Any]:
    raise ValueError("the post-processing node failed for good")


@pytest.mark.parametrize("mode", MODES)
async def test_a_later_node_failure_is_named_not_the_retried_node(
    tmp_path: Path, mode: str
) -> None:
    """A model node fails once and its retry succeeds, then ``post`` raises: run.error names
    ``post`` at its step, the spans view draws ``post`` as the error, the thread replays."""
    model = ScriptedChatModel([ConnectionError("transient"), ai("answer")])
    graph = StateGraph(MessagesState)
    graph.add_node(
        "model", lambda s: {"messages": [model.invoke(s["messages"])]}, retry_policy=RETRY
    )
    graph.add_node("post", boom)
    graph.add_edge(START, "model")
    graph.add_edge("model", "post")
    graph.add_edge("post", END)
    store = SqliteEventStore(tmp_path / "j.db")
    state = await run_failing(graph, store, tmp_path, mode)

    error = run_error(store)
    assert (error.metadata["langgraph_node"], error.metadata["langgraph_step"]) == ("post", 2)
    [post_start] = [e for e in store.read(THREAD) if e.metadata.get("langgraph_node") == "post"]
    assert post_start == error  # post wrote no event before it raised: run.error makes its span
    model_spans = {e.metadata[PARENT_SPAN_KEY] for e in store.read(THREAD, category="trace")}
    assert error.metadata[PARENT_SPAN_KEY] not in model_spans
    assert error_spans(store) == [("post", 2)]
    assert replay(store, THREAD, view="state") == state["messages"]
    report = verify(store, THREAD)
    assert report["ok"] and report["calls"] == 2, report


@pytest.mark.parametrize("mode", MODES)
async def test_a_node_that_fails_every_attempt_is_named_by_its_last(
    tmp_path: Path, mode: str
) -> None:
    """A model node that raises on every attempt fails the run: run.error names it, under the
    span of its last attempt (the one whose error ended the run)."""
    model = ScriptedChatModel([ConnectionError(f"for good {n}") for n in range(3)])

    def call_model(state: MessagesState) -> dict[str, Any]:
        try:
            return {"messages": [model.invoke(state["messages"])]}
        except ConnectionError as e:
            raise ValueError(str(e)) from e

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model, retry_policy=RETRY)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    store = SqliteEventStore(tmp_path / "j.db")
    await run_failing(graph, store, tmp_path, mode)

    error = run_error(store)
    assert (error.metadata["langgraph_node"], error.metadata["langgraph_step"]) == ("model", 1)
    attempts = [e.metadata[PARENT_SPAN_KEY] for e in store.read(THREAD, event_type="llm.error")]
    assert len(attempts) == 3
    assert error.metadata[PARENT_SPAN_KEY] == attempts[-1]


@pytest.mark.parametrize("mode", MODES)
async def test_a_parallel_failure_after_a_sibling_recovered_is_named(
    tmp_path: Path, mode: str
) -> None:
    """Two tasks in one step: ``flaky`` fails once and its retry succeeds, then ``fails``
    raises: run.error names ``fails``."""
    recovered = threading.Event()
    model = ScriptedChatModel([ConnectionError("transient"), ai("answer")])

    def flaky(state: MessagesState) -> dict[str, Any]:
        answer = model.invoke(state["messages"])
        recovered.set()
        return {"messages": [answer]}

    def fails(state: MessagesState) -> dict[str, Any]:
        assert recovered.wait(10)
        raise ValueError("the sibling failed for good")

    # async: each node on a thread of its own, so that one can wait for the other
    wrap = _threaded if mode == "async" else (lambda node: node)
    graph = StateGraph(MessagesState)
    graph.add_node("flaky", wrap(flaky), retry_policy=RETRY)
    graph.add_node("fails", wrap(fails))
    graph.add_edge(START, "flaky")
    graph.add_edge(START, "fails")
    store = SqliteEventStore(tmp_path / "j.db")
    await run_failing(graph, store, tmp_path, mode)

    error = run_error(store)
    assert (error.metadata["langgraph_node"], error.metadata["langgraph_step"]) == ("fails", 1)
    assert error_spans(store) == [("fails", 1)]


def _threaded(node: Any) -> Any:
    """``node`` as an async node that runs it on a worker thread."""

    async def run(state: MessagesState) -> dict[str, Any]:
        return await asyncio.to_thread(node, state)  # type: ignore[no-any-return]

    return run
