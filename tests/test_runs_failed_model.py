"""A run's models include the model of a failed call: a run whose only call failed names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from journal.postgres import PostgresEventStore
from tests.fakes import ScriptedChatModel


def failed_run(store: RunEventStore) -> None:
    """One create_agent run on thread ``t`` whose only model call raises."""
    journal = RunJournal(store)
    agent: Any = create_agent(ScriptedChatModel([RuntimeError("provider down")]), tools=[])
    try:
        with pytest.raises(RuntimeError, match="provider down"):
            agent.invoke(
                {"messages": [HumanMessage("hi")]},
                {"configurable": {"thread_id": "t"}, "callbacks": [journal]},
            )
    finally:
        journal.close()


@pytest.mark.parametrize(
    "backend", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_run_whose_only_model_call_failed_lists_that_model(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """The failed call's model (from its llm.error) is the run's model; no usage is made up."""
    store: RunEventStore
    if backend == "memory":
        store = MemoryEventStore()
    elif backend == "sqlite":
        store = SqliteEventStore(tmp_path / "f.db")
    else:
        store = PostgresEventStore(request.getfixturevalue("postgres_db_url"))
    try:
        failed_run(store)
        [error] = store.read("t", event_type="llm.error")
        assert error.metadata["model"] == "scripted-model"
        [run] = store.list_runs("t")
        assert (run.status, run.llm_calls, run.models) == ("error", 1, ["scripted-model"])
        assert run.usage["total_tokens"] == 0
        assert store.get_run(run.run_id) == run
        usage = store.read_usage("t")
        assert (usage.totals.calls, usage.by_model) == (0, {})
    finally:
        store.close()
