"""Timeline filters on real agent runs: who said what (caller), hidden context, one run's items."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from history import build_timeline
from journal import MemoryEventStore, RunEventStore, RunJournal
from tests.fakes import ScriptedChatModel, ai, call

HINT = "[context] the user prefers trains"


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


class InjectContext(AgentMiddleware[AgentState[Any], Any]):
    """Adds a hidden context message before the first model call of each run (DeerFlow-style)."""

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        hint = HumanMessage(HINT, additional_kwargs={"hide_from_ui": True})
        return {"messages": [hint]}


def _journaled_thread(runs: int = 2, store: RunEventStore | None = None) -> tuple[Any, list[str]]:
    """``runs`` real agent runs on thread ``t``: a hidden hint, a tool call, an answer each."""
    store = MemoryEventStore() if store is None else store
    script = []
    for n in range(runs):
        script += [ai("", call("lookup", city=f"city{n}")), ai(f"answer {n}")]
    journal = RunJournal(store)
    agent = create_agent(
        ScriptedChatModel(script),
        tools=[lookup],
        middleware=[InjectContext()],
        checkpointer=InMemorySaver(),
    ).with_config(callbacks=[journal])
    config = {"configurable": {"thread_id": "t"}}
    for n in range(runs):
        agent.invoke({"messages": [{"role": "user", "content": f"question {n}"}]}, config)
    journal.close()
    run_ids = list(dict.fromkeys(e.run_id for e in store.read("t")))
    return store, run_ids


def _all(store: MemoryEventStore, limit: int, **kw: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    before: int | None = None
    while True:
        page = build_timeline(store, "t", limit=limit, before_seq=before, **kw)
        items = list(page["items"]) + items
        if not page["has_more"]:
            return items
        before = page["next_before_seq"]


def test_hidden_context_is_left_out_unless_asked_for() -> None:
    """A hide_from_ui message a middleware adds is not shown by default; include_hidden shows it."""
    store, _ = _journaled_thread()
    shown = build_timeline(store, "t", limit=100)["items"]
    assert HINT not in [i.get("content") for i in shown]
    assert all(i["hidden"] is False for i in shown if "hidden" in i)
    everything = build_timeline(store, "t", limit=100, include_hidden=True)["items"]
    hints = [i for i in everything if i.get("content") == HINT]
    assert len(hints) == 2
    assert all(i["hidden"] is True and i["type"] == "human" for i in hints)
    assert [i for i in everything if not i.get("hidden")] == shown


def test_every_message_item_says_who_added_it() -> None:
    """The user's input is ``user``, the hint the middleware's, answers and results ``agent``."""
    store, _ = _journaled_thread(runs=1)
    items = build_timeline(store, "t", limit=100, include_hidden=True)["items"]
    by_content = {str(i["content"]): i["caller"] for i in items}
    assert by_content["question 0"] == "user"
    assert by_content[HINT] == "middleware:InjectContext"
    assert by_content["answer 0"] == "agent"
    assert by_content["city0: sunny"] == "agent"
    assert [i["type"] for i in items] == ["human", "human", "ai", "tool", "ai"]


def test_hidden_filter_applies_before_the_limit() -> None:
    """A page of ``limit`` items holds ``limit`` visible ones, hidden ones skipped, none lost."""
    store, _ = _journaled_thread(runs=3)
    visible = build_timeline(store, "t", limit=100)["items"]
    assert len(visible) == 12
    assert len(build_timeline(store, "t", limit=4)["items"]) == 4
    assert _all(store, limit=4) == visible
    assert len(_all(store, limit=3, include_hidden=True)) == 15


def test_run_id_keeps_one_runs_items_and_pages_through_them() -> None:
    """``run_id`` keeps exactly that run's items; paging walks them; an unknown run is empty."""
    store, run_ids = _journaled_thread(runs=3)
    every = build_timeline(store, "t", limit=100, include_hidden=True)["items"]
    for run_id in run_ids:
        mine = [i for i in every if i["run_id"] == run_id]
        assert len(mine) == 5
        assert _all(store, limit=2, run_id=run_id, include_hidden=True) == mine
    assert build_timeline(store, "t", run_id="no-such-run")["items"] == []


@pytest.mark.parametrize("run_id", ["", " padded ", "bad\x00id", 7])
def test_a_bad_run_id_is_a_caller_error(run_id: Any) -> None:
    """A run id the journal could never have written raises ValueError, not an empty page."""
    store, _ = _journaled_thread(runs=1)
    with pytest.raises(ValueError, match="run_id"):
        build_timeline(store, "t", run_id=run_id)
