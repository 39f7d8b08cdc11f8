"""A run forked from an earlier checkpoint (time travel) journals the state it runs on.

Forking a thread from a checkpoint taken before a compaction or a removal
(``graph.invoke(input, history[k].config)``, or ``graph.update_state(history[k].config, ...)``
and a run from the config it returns) brings messages the state had lost back into it. The
journal wrote the fork's state as an order (a ``message.remove`` that removed nothing), but
replay's walk only ordered the messages still in its state: the restored ones were left out
(replay's state missed them, ``verify`` found the fork's model call not in the state), and the
timeline showed nothing of the fork (nor of a ``RemoveMessage`` sent in a run's input, which
the same order event follows).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import StateSnapshot

from history import build_timeline, replay, verify
from history._context import WalkCache, context_plan
from history._reads import run_plan
from history._search import originals_plan
from journal import RunJournal, SqliteEventStore
from journal.store import RunEventStore
from tests.fakes import ScriptedChatModel
from tests.test_context_edits import MODES, QUESTIONS, THREAD, Harness, chain, trim_by_id
from tests.test_context_edits import harness as harness  # the fixture, used by name

FORKS = ["input", "update_state"]


def ids(messages: list[BaseMessage]) -> list[str]:
    """The messages' ids."""
    return [str(m.id) for m in messages]


def newest_holding(graph: Any, config: RunnableConfig, text: str, after: tuple[str, ...]) -> Any:
    """The newest checkpoint of the thread about to run ``after`` whose state holds a message
    containing ``text``."""
    snapshots: list[StateSnapshot] = list(graph.get_state_history(config))
    return next(
        s
        for s in snapshots
        if s.next == after and any(text in str(m.content) for m in s.values["messages"])
    )


async def fork(graph: Any, snapshot: Any, journal: RunJournal, how: str, mode: str) -> None:
    """A run from ``snapshot``: with a new question, or after an ``update_state`` there (which
    writes no message) from the config it returns."""
    if how == "input":
        config, inputs = snapshot.config, {"messages": [HumanMessage("forked question")]}
    elif mode == "sync":
        config, inputs = graph.update_state(snapshot.config, {"messages": []}), None
    else:
        config, inputs = await graph.aupdate_state(snapshot.config, {"messages": []}), None
    config = {**config, "callbacks": [journal]}
    if mode == "sync":
        graph.invoke(inputs, config)
    else:
        await graph.ainvoke(inputs, config)
    assert journal.flush(timeout=10)


def removal_markers(store: RunEventStore, thread_id: str) -> list[Any]:
    """The thread's removal markers, oldest first."""
    items = build_timeline(store, thread_id, limit=1000)["items"]
    return [item for item in items if item["type"] == "removal_marker"]


def check_fork(
    store: RunEventStore,
    thread_id: str,
    snapshot: Any,
    since: int,
    before: list[BaseMessage],
    after: list[BaseMessage],
    received: list[BaseMessage],
) -> None:
    """The fork brought back messages the state had lost; replay's state is the fork's, the
    fork's call replays exactly, and the timeline marks what the fork took out of the state
    (``since``: the thread's last seq before the fork)."""
    lost = [m for m in snapshot.values["messages"] if m.id not in set(ids(before))]
    assert set(ids(lost)) & set(ids(after))
    assert replay(store, thread_id, view="state") == after
    assert replay(store, thread_id, view="model") == received
    report = verify(store, thread_id)
    assert report["ok"] and report["exact"] == report["calls"], report
    # the first marker after the run began: what left the state between it and the fork point
    gone = [mid for mid in ids(before) if mid not in set(ids(snapshot.values["messages"]))]
    marker = next(m for m in removal_markers(store, thread_id) if m["seq"] > since)
    assert marker["removed_message_ids"] == gone


class SummarizingAgent:
    """``create_agent`` with LangChain's stock summarization (a low trigger), journaled."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = SqliteEventStore(tmp_path / "j.db")
        self.journal = RunJournal(self.store, spool_path=tmp_path / "spool.jsonl")
        summaries = itertools.count(1)
        summarizer = ScriptedChatModel(lambda m: AIMessage(f"summary {next(summaries)}"))
        answers = itertools.count(1)
        self.model = ScriptedChatModel(lambda m: AIMessage(f"answer {next(answers)}"))
        middleware = SummarizationMiddleware(
            summarizer, trigger=("messages", 5), keep=("messages", 2)
        )
        self.agent = create_agent(
            self.model, tools=[], middleware=[middleware], checkpointer=InMemorySaver()
        )

    def config(self) -> RunnableConfig:
        return {"configurable": {"thread_id": "t"}, "callbacks": [self.journal]}

    def state(self) -> list[BaseMessage]:
        return list(self.agent.get_state(self.config()).values["messages"])

    async def run(self, text: str, mode: str) -> None:
        inputs = {"messages": [HumanMessage(text)]}
        if mode == "sync":
            self.agent.invoke(inputs, self.config())
        else:
            await self.agent.ainvoke(inputs, self.config())
        assert self.journal.flush(timeout=10)
        assert replay(self.store, "t", view="state") == self.state()


@pytest.fixture
def summarizing(tmp_path: Path) -> Any:
    """A summarizing agent; its journal and store are closed afterwards."""
    made = SummarizingAgent(tmp_path)
    yield made
    made.journal.close(timeout=10)
    made.store.close()


@pytest.mark.parametrize("how", FORKS)
@pytest.mark.parametrize("point", ["before-first-compaction", "between-compactions"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_fork_from_before_a_compaction_is_replayed(
    summarizing: SummarizingAgent, mode: str, point: str, how: str
) -> None:
    """A run forked from a checkpoint before a summarization: replay's state is the fork's
    state (the summarized messages, an earlier summary, back in it) and verify is ok."""
    for n in range(4):
        await summarizing.run(f"question {n}", mode)
    assert len(summarizing.store.read("t", event_type="middleware:summarize")) == 2
    text = "question 0" if point == "before-first-compaction" else "summary 1"
    snapshot = newest_holding(summarizing.agent, summarizing.config(), text, ("model",))
    before, since = summarizing.state(), summarizing.store.last_seq("t")
    await fork(summarizing.agent, snapshot, summarizing.journal, how, mode)
    after = summarizing.state()
    assert any(text in str(m.content) for m in after)
    check_fork(summarizing.store, "t", snapshot, since, before, after, summarizing.model.calls[-1])


@pytest.mark.parametrize("how", FORKS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_fork_from_before_a_removal_is_replayed(
    harness: Callable[..., Harness], mode: str, how: str
) -> None:
    """A plain StateGraph that trims with RemoveMessage, forked from a checkpoint before its
    first trim: replay's state is the fork's and verify is ok."""
    h = harness(chain(("trim", trim_by_id)), "sqlite")
    await h.play(mode, QUESTIONS[:4])
    assert h.store.read(THREAD, event_type="message.remove")
    snapshot = newest_holding(h.graph, h.config(), QUESTIONS[0], ("trim",))
    before, since = h.state(), h.store.last_seq(THREAD)
    await fork(h.graph, snapshot, h.journal, how, mode)
    check_fork(h.store, THREAD, snapshot, since, before, h.state(), h.model.calls[-1])
    h.assert_every_call_replays_exactly()


def test_the_context_of_each_call_after_a_fork_is_exact_from_cached_walks(
    summarizing: SummarizingAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With walks cached every few events, each agent call's context (the fork's included) is
    rebuilt exactly and equals the uncached one, asked in any order."""
    import history._context as context_module

    monkeypatch.setattr(context_module, "CHECKPOINT_EVERY", 3)
    monkeypatch.setattr(context_module, "_PAGE", 2)
    for n in range(4):
        asyncio.run(summarizing.run(f"question {n}", "sync"))
    snapshot = newest_holding(summarizing.agent, summarizing.config(), "question 0", ("model",))
    asyncio.run(fork(summarizing.agent, snapshot, summarizing.journal, "input", "sync"))
    for n in range(2):  # and on from the fork
        asyncio.run(summarizing.run(f"question {n + 4}", "sync"))
    starts = [
        e.seq
        for e in summarizing.store.read("t", event_type="llm.start")
        if e.metadata["caller"] == "agent"
    ]
    assert len(starts) == len(summarizing.model.calls)
    cache = WalkCache()
    for seq in [*reversed(starts), *starts]:
        cached = run_plan(summarizing.store, context_plan("t", seq, cache=cache))
        assert cached == run_plan(summarizing.store, context_plan("t", seq)), seq
        assert cached["exact"], seq


@pytest.mark.parametrize("mode", MODES)
async def test_a_removal_in_a_runs_input_is_a_removal_marker(
    harness: Callable[..., Harness], mode: str
) -> None:
    """A RemoveMessage sent in a run's input: the timeline shows the removal, replay's state
    lacks the message."""
    h = harness(chain())
    await h.play(mode, QUESTIONS[:2])
    first = h.state()[0]
    inputs = {"messages": [RemoveMessage(id=str(first.id)), HumanMessage("again")]}
    await h.run(inputs, mode)
    assert replay(h.store, THREAD, view="state") == h.state()
    [marker] = removal_markers(h.store, THREAD)
    assert marker["removed_message_ids"] == [first.id]
    assert marker["first_removed_seq"] == marker["last_removed_seq"] == 2
    h.assert_every_call_replays_exactly()


def compact_at_four(state: Any) -> dict[str, Any]:
    """Keep only the newest message once the state holds four."""
    messages = state["messages"]
    if len(messages) < 4:
        return {}
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), messages[-1]]}


@pytest.mark.parametrize("mode", MODES)
def test_an_edit_after_a_fork_takes_the_messages_the_fork_brought_back(
    tmp_path: Path, mode: str
) -> None:
    """A rewrite after a fork that removes messages the fork brought back: its marker's seq
    range and its originals are those messages, journaled before the fork point."""
    builder = StateGraph(MessagesState)
    builder.add_node("compact", compact_at_four)
    builder.add_node(
        "chat", lambda s: {"messages": [AIMessage(f"reply to {s['messages'][-1].content}")]}
    )
    builder.add_edge(START, "compact")
    builder.add_edge("compact", "chat")
    builder.add_edge("chat", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}, "callbacks": [journal]}

    def invoke(payload: Any, run_config: Any) -> None:
        if mode == "async":
            asyncio.run(graph.ainvoke(payload, run_config))
        else:
            graph.invoke(payload, run_config)

    for text in ("q0", "q1", "q2"):  # the third run compacts
        invoke({"messages": [HumanMessage(text)]}, config)
    fork = newest_holding(graph, config, "q1", ("chat",))
    invoke({"messages": [HumanMessage("forked")]}, {**fork.config, "callbacks": [journal]})
    journal.close()

    assert replay(store, "t", view="state") == graph.get_state(config).values["messages"]
    messages = [e for e in store.read("t", category="message") if e.event_type != "message.remove"]
    seq_of = {e.content["data"]["content"]: e.seq for e in messages}
    last = [i for i in build_timeline(store, "t")["items"] if i["type"] == "removal_marker"][-1]
    assert (last["first_removed_seq"], last["last_removed_seq"]) == (seq_of["q0"], seq_of["q1"])
    originals = run_plan(store, originals_plan("t", last["seq"]))
    assert [m["content"] for m in originals["items"]] == ["q0", "reply to q0", "q1"]
