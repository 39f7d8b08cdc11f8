"""A run's input that overwrites the state (``Overwrite([...])``) is left as the user wrote it.

LangGraph stores an overwrite's list as it is: its items get their ids only at the state's next
write, when the reducer runs on the stored list. The journal converted the items of the user's
own list to messages and gave them ids (a message object too, before LangGraph would), for a
run's input and for an ``update_state``'s values alike. The user's list was changed, so the
same list sent again resent a message id the thread held: the thread kept the earlier message
where, without the journal, a new one replaced it (the timeline lost the second question and
counted one removed message instead of two), and the model was sent ids LangGraph had not
given yet. Now the items are journaled under the ids the state gives them, before what the
nodes wrote meanwhile.

Then an item the state no longer held when the journal first saw it with ids — a summarizer
replaced it at the run's first step — was never journaled (the marker named messages no event
held, the tracked marker came before the messages it kept), and a stream stopped before any
state showed the ids journaled what its nodes wrote before its input, or lost the input for
good when the next run overwrote the state again. Now such an item is journaled all the same,
in its place among the user's, and what the nodes wrote waits for the next state seen.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Overwrite

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call

MODES = ["sync", "async"]
THREAD = "t"
ITEMS: dict[str, list[Any]] = {
    "dict": [{"role": "user", "content": "hi"}],
    "tuple": [("user", "hi")],
    "mixed": [("user", "hi"), {"role": "user", "content": "and you?"}],
}


def answer(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(f"answer after {len(messages)} messages")


@tool
def lookup(query: str) -> str:
    """Look the query up."""
    return f"found {query}"


def build(kind: str, model: ScriptedChatModel, **compile_kw: Any) -> Any:
    """A checkpointed create_agent, or a StateGraph whose one node calls ``model``."""
    if kind == "agent":
        tools = [lookup] if compile_kw.pop("tools", False) else []
        return create_agent(model, tools=tools, checkpointer=InMemorySaver(), **compile_kw)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    return builder.compile(checkpointer=InMemorySaver(), **compile_kw)


class Thread:
    """A graph on one thread, with or without a journal, driven sync or async."""

    def __init__(self, graph: Any, mode: str, journal: RunJournal | None) -> None:
        self.graph = graph if journal is None else graph.with_config(callbacks=[journal])
        self.mode = mode
        self.config: Any = {"configurable": {"thread_id": THREAD}}

    async def run(self, payload: Any) -> None:
        if self.mode == "async":
            await self.graph.ainvoke(payload, self.config)
        else:
            self.graph.invoke(payload, self.config)

    async def update(self, values: dict[str, Any], as_node: str) -> None:
        if self.mode == "async":
            await self.graph.aupdate_state(self.config, values, as_node=as_node)
        else:
            self.graph.update_state(self.config, values, as_node=as_node)

    def state(self) -> list[BaseMessage]:
        return list(self.graph.get_state(self.config).values["messages"])


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def with_ids(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def timeline(store: SqliteEventStore) -> list[Any]:
    return [
        i["removed_count"] if i["type"] == "removal_marker" else (i["type"], i["content"])
        for i in build_timeline(store, THREAD, limit=100)["items"]
    ]


def assert_replayed(store: SqliteEventStore, state: list[BaseMessage]) -> None:
    assert with_ids(replay(store, THREAD, view="state")) == with_ids(state)
    report = verify(store, THREAD)
    assert report["ok"] and not report["state_missing"], report


async def overwrite_twice(
    kind: str, mode: str, items: list[Any], journal: RunJournal | None
) -> list[list[BaseMessage]]:
    """A question, then the same ``Overwrite(items)`` list sent in two runs; the state after
    each overwrite run."""
    thread = Thread(build(kind, ScriptedChatModel(answer)), mode, journal)
    await thread.run({"messages": [("user", "first")]})
    states = []
    for _ in range(2):
        await thread.run({"messages": Overwrite(items)})
        states.append(thread.state())
    return states


@pytest.mark.parametrize("items", sorted(ITEMS))
@pytest.mark.parametrize("kind", ["agent", "graph"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_reused_overwrite_input_behaves_as_without_the_journal(
    tmp_path: Path, mode: str, kind: str, items: str
) -> None:
    """The same overwriting list sent twice is left as written; each run gives its items new
    ids, as without the journal; replay, verify and the timeline follow each rewrite."""
    truth = await overwrite_twice(kind, mode, copy.deepcopy(ITEMS[items]), None)
    written = copy.deepcopy(ITEMS[items])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        states = await overwrite_twice(kind, mode, written, journal)
        assert journal.flush(10)
    assert written == ITEMS[items]
    assert [shapes(s) for s in states] == [shapes(s) for s in truth]
    for runs in (truth, states):  # the second run's messages are new ones
        assert not {m.id for m in runs[0]} & {m.id for m in runs[1]}
    assert_replayed(store, states[-1])
    questions = [("human", m.content) for m in states[-1] if m.type == "human"]
    turn = [*questions, ("ai", states[-1][-1].content)]
    assert timeline(store) == [
        ("human", "first"),
        ("ai", "answer after 1 messages"),
        2,
        *turn,
        len(turn),
        *turn,
    ]


@pytest.mark.parametrize("kind", ["agent", "graph"])
@pytest.mark.parametrize("mode", MODES)
async def test_an_overwriting_message_object_gets_its_id_from_langgraph(
    tmp_path: Path, mode: str, kind: str
) -> None:
    """A message object without an id in an overwriting input reaches the model as without
    the journal (no id yet), every call replays exactly, and replay's state is the state's."""
    plain = ScriptedChatModel(answer)
    await Thread(build(kind, plain), mode, None).run({"messages": Overwrite([HumanMessage("hi")])})
    model = ScriptedChatModel(answer)
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(build(kind, model), mode, journal)
        await thread.run({"messages": Overwrite([HumanMessage("hi")])})
        assert journal.flush(10)
    assert [[m.id for m in call] for call in model.calls] == [[None]]
    assert model.calls == plain.calls
    starts = store.read(THREAD, event_type="llm.start")
    for start, received in zip(starts, model.calls, strict=True):
        assert replay(store, THREAD, upto_seq=start.seq, view="model") == received
    assert_replayed(store, thread.state())
    assert timeline(store) == [("human", "hi"), ("ai", "answer after 1 messages")]


@pytest.mark.parametrize("mode", MODES)
async def test_an_overwriting_input_of_a_tool_calling_agent_is_journaled_in_order(
    tmp_path: Path, mode: str
) -> None:
    """Parallel tool calls after an overwriting input: each message is journaled once, in
    the state's order (the input first), and replay's state is the state's."""
    script = [
        ai("", call("lookup", "c1", query="a"), call("lookup", "c2", query="b")),
        ai("done"),
    ]
    written = copy.deepcopy(ITEMS["dict"])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        agent = build("agent", ScriptedChatModel(script), tools=True)
        thread = Thread(agent, mode, journal)
        await thread.run({"messages": Overwrite(written)})
        assert journal.flush(10)
    assert written == ITEMS["dict"]
    assert_replayed(store, thread.state())
    events = store.read(THREAD, category="message")
    assert [e.content["data"]["id"] for e in events] == [m.id for m in thread.state()]
    assert timeline(store) == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", "found a"),
        ("tool", "found b"),
        ("ai", "done"),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_an_overwriting_input_paused_before_the_first_node_is_left_alone(
    tmp_path: Path, mode: str
) -> None:
    """A run paused at a breakpoint before its first node leaves the overwriting list as
    written; the resumed run journals its item under the state's id, before the answer."""
    written = copy.deepcopy(ITEMS["dict"])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        graph = build("graph", ScriptedChatModel(answer), interrupt_before=["model"])
        thread = Thread(graph, mode, journal)
        await thread.run({"messages": Overwrite(written)})
        assert written == ITEMS["dict"]
        await thread.run(None)
        assert journal.flush(10)
    assert written == ITEMS["dict"]
    assert_replayed(store, thread.state())
    assert timeline(store) == [("human", "hi"), ("ai", "answer after 1 messages")]


@pytest.mark.parametrize("mode", MODES)
async def test_an_update_state_overwrite_is_left_as_written(tmp_path: Path, mode: str) -> None:
    """An ``update_state`` that overwrites the messages with a dict leaves the values as
    written and the state as without the journal; the next run journals the dict under the
    state's id, after the rewrite's removal marker and before the run's own messages."""
    truth = Thread(build("agent", ScriptedChatModel(answer), tools=True), mode, None)
    await truth.run({"messages": [("user", "first")]})
    await truth.update({"messages": Overwrite(copy.deepcopy(ITEMS["dict"]))}, "model")
    await truth.run({"messages": [("user", "next")]})
    written = copy.deepcopy(ITEMS["dict"])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(build("agent", ScriptedChatModel(answer), tools=True), mode, journal)
        await thread.run({"messages": [("user", "first")]})
        await thread.update({"messages": Overwrite(written)}, "model")
        assert written == ITEMS["dict"]
        await thread.run({"messages": [("user", "next")]})
        assert journal.flush(10)
    assert written == ITEMS["dict"]
    assert shapes(thread.state()) == shapes(truth.state())
    assert_replayed(store, thread.state())
    assert timeline(store) == [
        ("human", "first"),
        ("ai", "answer after 1 messages"),
        2,
        ("human", "hi"),
        ("human", "next"),
        ("ai", "answer after 2 messages"),
    ]


@pytest.mark.parametrize("summarizer", [SummarizationMiddleware, TrackingSummarizationMiddleware])
@pytest.mark.parametrize("mode", MODES)
async def test_overwriting_items_a_summarizer_replaces_at_once_are_journaled(
    tmp_path: Path, mode: str, summarizer: type[SummarizationMiddleware]
) -> None:
    """Overwriting items summarized away at the run's first step are all journaled in input
    order, before the summary marker, which names them; replay's state is the state's."""
    counter = iter(range(1, 100))
    summarize = summarizer(
        ScriptedChatModel(lambda _: AIMessage(f"summary {next(counter)}")),
        trigger=("messages", 8),
        keep=("messages", 3),
    )
    agent = create_agent(
        ScriptedChatModel(answer), [], middleware=[summarize], checkpointer=InMemorySaver()
    )
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(agent, mode, journal)
        await thread.run({"messages": Overwrite([HumanMessage(f"q{i}") for i in range(11)])})
        assert journal.flush(10)
    assert_replayed(store, thread.state())
    questions = [("human", f"q{i}") for i in range(11)]
    assert shapes(replay(store, THREAD, view="full")) == [
        *questions,
        ("ai", "answer after 4 messages"),
    ]
    items = build_timeline(store, THREAD, limit=100)["items"]
    assert [i.get("content", i["type"]) for i in items] == [
        *(f"q{i}" for i in range(11)),
        "summary_marker",
        "answer after 4 messages",
    ]
    marker = items[11]
    assert marker["replaced_count"] == 8
    assert marker["replaced_message_ids"] == [i["id"] for i in items[:8]]
    assert (marker["first_replaced_seq"], marker["last_replaced_seq"]) == (
        items[0]["seq"],
        items[7]["seq"],
    )


def two_nodes() -> Any:
    """A graph whose two nodes answer one after the other."""
    builder = StateGraph(MessagesState)
    builder.add_node("m1", lambda s: {"messages": [AIMessage(f"answer to {len(s['messages'])}")]})
    builder.add_node("m2", lambda s: {"messages": [AIMessage("second")]})
    builder.add_edge(START, "m1")
    builder.add_edge("m1", "m2")
    builder.add_edge("m2", END)
    return builder.compile(checkpointer=InMemorySaver())


async def stop_after_first_chunk(thread: Thread, payload: Any) -> None:
    """Stream a run of ``thread`` and stop it after its first chunk (its first node)."""
    if thread.mode == "async":
        stream = thread.graph.astream(payload, thread.config, stream_mode="updates")
        async for _ in stream:
            break
        await stream.aclose()
    else:
        for _ in thread.graph.stream(payload, thread.config, stream_mode="updates"):
            break


@pytest.mark.parametrize("mode", MODES)
async def test_overwriting_streams_stopped_after_their_first_node_keep_their_items(
    tmp_path: Path, mode: str
) -> None:
    """Overwriting runs whose streams are stopped after their first node keep their items,
    journaled before that node's answer; replay's state and the timeline are the thread's."""
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(two_nodes(), mode, journal)
        await thread.run({"messages": [("user", "first")]})
        await stop_after_first_chunk(thread, {"messages": Overwrite(ITEMS["mixed"])})
        assert shapes(thread.state())[-1] == ("ai", "answer to 2")
        await stop_after_first_chunk(thread, {"messages": Overwrite(ITEMS["dict"])})
        await thread.run({"messages": [("user", "next")]})
        assert journal.flush(10)
    assert_replayed(store, thread.state())
    assert timeline(store) == [
        ("human", "first"),
        ("ai", "answer to 1"),
        ("ai", "second"),
        3,
        ("human", "hi"),
        ("human", "and you?"),
        ("ai", "answer to 2"),
        3,
        ("human", "hi"),
        ("ai", "answer to 1"),
        ("human", "next"),
        ("ai", "answer to 3"),
        ("ai", "second"),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_an_overwriting_stream_stopped_after_its_first_node_is_journaled_by_the_next_journal(
    tmp_path: Path, mode: str
) -> None:
    """A stopped overwriting stream, then the journal closes: its node's answer is journaled,
    its items are left to the next journal (the checkpoint holds them under ids no state
    showed this one), which journals them once, under those ids."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = two_nodes()
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        await stop_after_first_chunk(
            Thread(graph, mode, journal), {"messages": Overwrite(ITEMS["mixed"])}
        )
    assert timeline(store) == [("ai", "answer to 2")]
    with RunJournal(store, spool_path=tmp_path / "spool2.jsonl") as journal:
        thread = Thread(graph, mode, journal)
        await thread.run({"messages": [("user", "next")]})
        assert journal.flush(10)
    state = thread.state()
    assert shapes(replay(store, THREAD, view="state")) == shapes(state)
    journaled_ids = [e.content["data"]["id"] for e in store.read(THREAD, category="message")
                     if e.event_type != "message.remove"]  # fmt: skip
    assert sorted(journaled_ids) == sorted(m.id for m in state)
