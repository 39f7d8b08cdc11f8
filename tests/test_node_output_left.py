"""A node's output is left as the node wrote it, as a run's input is.

The journal converted the message-like items (dicts, ``(role, text)`` tuples) of a node's
returned list to messages in place and wrote its own ids into a returned dict. A node that
returns the same object on every run (a module-level constant, a cached list) got it changed:
on the next run the journal's id made ``add_messages`` replace the first answer, so the thread
held 3 messages where it held 4 without the journal, and a node's ``Overwrite([dict])`` left a
message object in the state where LangGraph leaves the dict. Now the items are journaled under
the ids the state gives them, where the next state shows them; one no state shows with an id (a
node's last ``Overwrite([dict])``, a stopped stream's answer) is journaled all the same at the
journal's close or the next rewrite, under an id of the journal's, as a run's input is.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
)
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Overwrite

from history import replay, verify
from journal import RunJournal, SqliteEventStore
from journal._contents import Contents
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_overwritten_input import (
    THREAD,
    Thread,
    assert_replayed,
    shapes,
    stop_after_first_chunk,
    timeline,
)

MODES = ["sync", "async"]
ANSWERS: dict[str, Any] = {
    "list": [{"role": "assistant", "content": "ok"}],
    "tuple": [("assistant", "ok")],
    "lone": {"role": "assistant", "content": "ok"},
}


async def journaled(
    tmp_path: Path, mode: str, graph: Any, runs: list[Any], *written: Any
) -> tuple[Thread, SqliteEventStore, list[BaseMessage]]:
    """``runs`` on ``graph`` with a journal, after the same runs without one; the journaled
    thread, its store, and the state without the journal. ``written``: the objects the nodes
    return, which must come out as they went in."""
    before = copy.deepcopy(list(written))
    truth = Thread(graph, mode, None)
    truth.config = {"configurable": {"thread_id": "truth"}}
    for payload in runs:
        await truth.run(copy.deepcopy(payload))
    assert list(written) == before
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(graph, mode, journal)
        for payload in runs:
            await thread.run(copy.deepcopy(payload))
        assert journal.flush(10)
    assert list(written) == before
    return thread, store, truth.state()


def _assert_replayed_as_sent(store: SqliteEventStore, model: ScriptedChatModel) -> list[Any]:
    """Each of the two model calls replays (``view="model"``) as the model received it; its
    ``llm.start`` events."""
    starts = store.read(THREAD, event_type="llm.start")
    assert len(starts) == len(model.calls) == 2
    for start, sent in zip(starts, model.calls, strict=True):
        replayed = replay(store, THREAD, upto_seq=start.seq, view="model")
        assert [(m.type, m.id, m.content) for m in replayed] == [
            (m.type, m.id, m.content) for m in sent
        ]
    return starts


def _one_node_graph(node: Any) -> Any:
    """START -> ``node`` (named "model") -> END, with an in-memory checkpointer."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", node)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    return builder.compile(checkpointer=InMemorySaver())


def one_node(output: Any) -> Any:
    """START -> ``reply`` (returning ``output()``) -> END, checkpointed."""
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda s: output())
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=InMemorySaver())


QUESTIONS = [{"messages": [("user", "q1")]}, {"messages": [("user", "q2")]}]


@pytest.mark.parametrize("form", sorted(ANSWERS))
@pytest.mark.parametrize("mode", MODES)
async def test_a_constant_answer_returned_twice_is_two_answers(
    tmp_path: Path, mode: str, form: str
) -> None:
    """A node returning the same message-like object on two runs leaves it unchanged and the
    thread holds both answers, as without the journal; replay, verify and timeline follow."""
    answer = copy.deepcopy(ANSWERS[form])
    graph = one_node(lambda: {"messages": answer})
    thread, store, truth = await journaled(tmp_path, mode, graph, QUESTIONS, answer)
    state = thread.state()
    assert (
        shapes(state)
        == shapes(truth)
        == [
            ("human", "q1"),
            ("ai", "ok"),
            ("human", "q2"),
            ("ai", "ok"),
        ]
    )
    assert_replayed(store, state)
    assert timeline(store) == shapes(state)


@pytest.mark.parametrize("mode", MODES)
async def test_a_nodes_overwrite_is_left_as_written(tmp_path: Path, mode: str) -> None:
    """A node's ``Overwrite([dict])`` leaves the dict in the state as without the journal; a
    later node's write gives it its id, under which it is journaled, before that write."""
    items = [{"role": "user", "content": "start over"}]
    builder = StateGraph(MessagesState)
    builder.add_node("reset", lambda s: {"messages": Overwrite(items)})
    builder.add_node("model", lambda s: {"messages": [AIMessage(f"after {len(s['messages'])}")]})
    builder.add_edge(START, "reset")
    builder.add_edge("reset", "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    thread, store, truth = await journaled(tmp_path, mode, graph, QUESTIONS, items)
    state = thread.state()
    assert shapes(state) == shapes(truth) == [("human", "start over"), ("ai", "after 1")]
    assert_replayed(store, state)
    assert timeline(store) == [
        ("human", "q1"),
        1,
        ("human", "start over"),
        ("ai", "after 1"),
        ("human", "q2"),
        3,
        ("human", "start over"),
        ("ai", "after 1"),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_nodes_last_overwrite_leaves_the_dict_in_the_state(
    tmp_path: Path, mode: str
) -> None:
    """A node's ``Overwrite([dict])`` with no later write leaves the state holding the dict,
    as without the journal."""
    items = [{"role": "user", "content": "start over"}]
    graph = one_node(lambda: {"messages": Overwrite(items)})
    thread, _, truth = await journaled(tmp_path, mode, graph, QUESTIONS[:1], items)
    assert thread.state() == truth == items


@pytest.mark.parametrize("mode", MODES)
async def test_a_nodes_last_overwrite_replaced_by_the_next_input_is_journaled(
    tmp_path: Path, mode: str
) -> None:
    """A node's ``Overwrite([dict])`` that no state shows with an id, replaced by the next
    run's overwriting input, is journaled all the same, under an id of the journal's,
    after the rewrite's removal marker."""
    items = [{"role": "user", "content": "start over"}]
    graph = one_node(lambda: {"messages": Overwrite(items)})
    runs = [QUESTIONS[0], {"messages": Overwrite([("user", "new")])}]
    thread, store, truth = await journaled(tmp_path, mode, graph, runs, items)
    assert thread.state() == truth == items
    assert timeline(store)[:4] == [("human", "q1"), 1, ("human", "start over"), 1]


@pytest.mark.parametrize("mode", MODES)
async def test_a_nodes_last_overwrite_at_close_is_left_to_the_next_journal(
    tmp_path: Path, mode: str
) -> None:
    """A node's ``Overwrite([dict])`` the state still holds without an id when the journal
    closes is not journaled under an id of its own (the next write gives it LangGraph's):
    the next journal journals it once, under that id."""
    items = [{"role": "user", "content": "start over"}]
    graph = one_node(lambda: {"messages": Overwrite(items)})
    thread, store, _ = await journaled(tmp_path, mode, graph, QUESTIONS[:1], items)
    assert timeline(store) == [("human", "q1"), 1]
    with RunJournal(store, spool_path=tmp_path / "spool2.jsonl") as journal:
        await Thread(graph, mode, journal).run(QUESTIONS[1])
        assert journal.flush(10)
    assert items == [{"role": "user", "content": "start over"}]
    history = thread.graph.get_state_history(thread.config)
    given = {m.id for s in history for m in s.values.get("messages", []) if hasattr(m, "id")}
    journaled_ids = [e.content["data"]["id"] for e in store.read(THREAD, category="message")
                     if e.event_type == "message.human"]  # fmt: skip
    assert len(journaled_ids) == len(set(journaled_ids)) == 3  # q1, start over, q2
    assert set(journaled_ids) <= given  # LangGraph's ids, none of the journal's


def answer_then_count() -> Any:
    """START -> ``m1`` (returning the same dict answer each run) -> ``m2`` -> END."""
    builder = StateGraph(MessagesState)
    builder.add_node("m1", lambda s: {"messages": [NOTED]})
    builder.add_node("m2", lambda s: {"messages": [AIMessage(f"after {len(s['messages'])}")]})
    builder.add_edge(START, "m1")
    builder.add_edge("m1", "m2")
    builder.add_edge("m2", END)
    return builder.compile(checkpointer=InMemorySaver())


NOTED = {"role": "assistant", "content": "noted"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_dict_answer_of_a_stopped_stream_waits_for_the_next_state(
    tmp_path: Path, mode: str
) -> None:
    """A stream stopped after a node answered with a dict: the answer is journaled under
    the state's id once the next run shows it, before that run's input; the dict is left
    as written and replay's state is the state's."""
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(answer_then_count(), mode, journal)
        await thread.run({"messages": [("user", "first")]})
        await stop_after_first_chunk(thread, {"messages": [("user", "stop")]})
        await thread.run({"messages": [("user", "next")]})
        assert journal.flush(10)
    assert NOTED == {"role": "assistant", "content": "noted"}
    state = thread.state()
    assert_replayed(store, state)
    assert timeline(store) == shapes(state)
    assert shapes(state) == [
        ("human", "first"),
        ("ai", "noted"),
        ("ai", "after 2"),
        ("human", "stop"),
        ("ai", "noted"),
        ("human", "next"),
        ("ai", "noted"),
        ("ai", "after 7"),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_dict_answer_of_a_stopped_stream_is_journaled_once_by_the_next_journal(
    tmp_path: Path, mode: str
) -> None:
    """A stream stopped after a node answered with a dict, and the journal closed: its
    close journals no copy of the answer under an id of its own (the checkpoint holds it
    under LangGraph's); the next journal journals the input and the answer once each."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = answer_then_count()
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        await stop_after_first_chunk(Thread(graph, mode, journal), {"messages": [("user", "stop")]})
    with RunJournal(store, spool_path=tmp_path / "spool2.jsonl") as journal:
        thread = Thread(graph, mode, journal)
        await thread.run({"messages": [("user", "next")]})
        assert journal.flush(10)
    state = thread.state()
    assert_replayed(store, state)
    journaled_ids = [e.content["data"]["id"] for e in store.read(THREAD, category="message")
                     if e.event_type != "message.remove"]  # fmt: skip
    assert sorted(journaled_ids) == sorted(m.id for m in state)


@tool
def jump(place: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Jump to ``place``."""
    result = {"role": "tool", "content": f"at {place}", "tool_call_id": tool_call_id}
    return Command(update={"messages": [result]})


NOTE = {"messages": [{"role": "user", "content": "be brief"}]}


class Note(AgentMiddleware):
    """Adds the same note (a dict) before the model answers a question."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return NOTE if state["messages"][-1].content in ("q1", "q2") else None


def agent_reply(messages: list[BaseMessage]) -> AIMessage:
    if isinstance(messages[-1], HumanMessage):
        return ai("going", call("jump", place=f"p{len(messages)}"))
    return ai(f"done after {len(messages)}")


@pytest.mark.parametrize("mode", MODES)
async def test_an_agents_dict_writes_are_journaled_in_order(tmp_path: Path, mode: str) -> None:
    """create_agent with a hook returning the same dict note each run and a tool returning a
    ``Command`` with a dict result: both are left as written, the state is as without the
    journal, each message journaled once, in the state's order."""
    graph = create_agent(
        ScriptedChatModel(agent_reply),
        tools=[jump],
        middleware=[Note()],
        checkpointer=InMemorySaver(),
    )
    thread, store, truth = await journaled(tmp_path, mode, graph, QUESTIONS, NOTE)
    state = thread.state()
    turn = [("human", "be brief"), ("ai", "going")]
    assert shapes(state) == shapes(truth)
    assert shapes(state) == [
        ("human", "q1"),
        *turn,
        ("tool", "at p2"),
        ("ai", "done after 4"),
        ("human", "q2"),
        *turn,
        ("tool", "at p7"),
        ("ai", "done after 9"),
    ]
    assert_replayed(store, state)
    assert timeline(store) == shapes(state)
    events = store.read(THREAD, category="message")
    assert [e.content["data"]["id"] for e in events] == [m.id for m in state]


CALLS = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"name": "lookup", "args": {"query": "a"}, "id": "c1"},
        {"name": "lookup", "args": {"query": "b"}, "id": "c2"},
    ],
}
DONE = {"role": "assistant", "content": "done"}


@tool
def lookup(query: str) -> str:
    """Look ``query`` up."""
    return f"found {query}"


@pytest.mark.parametrize("mode", MODES)
async def test_a_dict_tool_call_is_journaled_before_its_results(tmp_path: Path, mode: str) -> None:
    """A node's dict AI message with tool calls, then a tools node: the call is journaled
    under the state's id, before its results in call order; the constants are unchanged."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [DONE if state["messages"][-1].type == "tool" else CALLS]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread, store, truth = await journaled(tmp_path, mode, graph, QUESTIONS, CALLS, DONE)
    state = thread.state()
    turn = [("ai", ""), ("tool", "found a"), ("tool", "found b"), ("ai", "done")]
    assert shapes(state) == shapes(truth) == [("human", "q1"), *turn, ("human", "q2"), *turn]
    assert_replayed(store, state)
    assert timeline(store) == shapes(state)


@pytest.mark.parametrize("mode", MODES)
async def test_parallel_dict_writes_are_journaled_once(tmp_path: Path, mode: str) -> None:
    """Two parallel nodes writing dicts in one superstep (the later in task order finishing
    first): each is journaled once under its state id, before the next step's answer, and
    replay's state is the state's."""
    first_done = threading.Event()
    written = {
        "a": {"messages": [{"role": "assistant", "content": "from a"}]},
        "b": {"messages": [("assistant", "from b")]},
    }

    def node_a(state: MessagesState) -> dict[str, Any]:
        first_done.wait(5)  # b finishes first
        first_done.clear()
        return written["a"]

    def node_b(state: MessagesState) -> dict[str, Any]:
        first_done.set()
        return written["b"]

    builder = StateGraph(MessagesState)
    builder.add_node("a", node_a)
    builder.add_node("b", node_b)
    builder.add_node("join", lambda s: {"messages": [AIMessage(f"{len(s['messages'])} seen")]})
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge(["a", "b"], "join")
    builder.add_edge("join", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    thread, store, truth = await journaled(tmp_path, mode, graph, QUESTIONS, written)
    state = thread.state()
    turn = [("ai", "from a"), ("ai", "from b")]
    assert shapes(state) == shapes(truth)
    assert shapes(state) == [
        ("human", "q1"),
        *turn,
        ("ai", "3 seen"),
        ("human", "q2"),
        *turn,
        ("ai", "7 seen"),
    ]
    assert_replayed(store, state)
    messages = [i for i in timeline(store) if isinstance(i, tuple)]
    assert sorted(messages) == sorted(shapes(state))
    assert messages[3] == ("ai", "3 seen")  # the step's dicts are journaled before it


@pytest.mark.parametrize("mode", MODES)
async def test_an_edit_with_dict_messages_is_left_as_written(tmp_path: Path, mode: str) -> None:
    """A node rewriting the state (``RemoveMessage(REMOVE_ALL_MESSAGES)`` and a dict) on two
    runs, and one removing a message beside a dict: left as written, the state is as without
    the journal, replay follows each edit."""
    rewrite = [RemoveMessage(id=REMOVE_ALL_MESSAGES), {"role": "user", "content": "summary"}]

    def trim(state: MessagesState) -> dict[str, Any]:
        if len(state["messages"]) > 3:
            return {"messages": rewrite}
        return {"messages": [RemoveMessage(id=str(state["messages"][0].id)), ("user", "gist")]}

    builder = StateGraph(MessagesState)
    builder.add_node("trim", trim)
    builder.add_node("model", lambda s: {"messages": [AIMessage(f"after {len(s['messages'])}")]})
    builder.add_edge(START, "trim")
    builder.add_edge("trim", "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    runs = [{"messages": [("user", f"q{n}")]} for n in range(4)]
    thread, store, truth = await journaled(tmp_path, mode, graph, runs, rewrite)
    state = thread.state()
    assert shapes(state) == shapes(truth)
    assert_replayed(store, state)


def double_checking(model: ScriptedChatModel) -> Any:
    """START -> a node that asks the model again with a new question (no id) and returns the
    question and the answer -> END: LangGraph gives the question its id after the call."""

    def node(state: MessagesState) -> dict[str, Any]:
        question = HumanMessage("please double-check")
        return {"messages": [question, model.invoke([*state["messages"], question])]}

    return _one_node_graph(node)


@pytest.mark.parametrize("mode", MODES)
async def test_a_message_sent_without_an_id_is_recorded_as_sent(tmp_path: Path, mode: str) -> None:
    """A model call's record keeps a prompt message without an id as sent, though the node
    returns that message and it has its id before the writer builds the record."""
    model = ScriptedChatModel(lambda messages: ai(f"answer after {len(messages)}"))
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(double_checking(model), mode, journal)
        for question in QUESTIONS:
            await thread.run(question)
        assert journal.flush(10)
    _assert_replayed_as_sent(store, model)


def renaming(model: ScriptedChatModel, built: threading.Event) -> Any:
    """START -> a node that asks the model again with a question under a draft id, renames
    the question in place once answered (``built`` set then) and returns it with the answer
    -> END."""

    def node(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        question = HumanMessage("please double-check", id=f"draft {n}")
        answer = model.invoke([*state["messages"], question])
        question.id = f"final {n}"  # after the call was sent
        built.set()
        return {"messages": [question, answer]}

    return _one_node_graph(node)


@pytest.mark.parametrize("mode", MODES)
async def test_a_message_renamed_after_the_call_was_sent_is_recorded_as_sent(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model call's record and excerpt give a prompt message under the id it was sent
    with, though the node renames it in place before the writer builds the record; replay
    gives what the model received, verify agrees."""
    renamed = threading.Event()
    model_call = Contents.model_call

    def held(*args: Any) -> Any:  # the writer builds the record after the rename
        assert renamed.wait(10)
        return model_call(*args)

    monkeypatch.setattr(Contents, "model_call", held)
    model = ScriptedChatModel(lambda messages: ai(f"answer after {len(messages)}"))
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        thread = Thread(renaming(model, renamed), mode, journal)
        for question in QUESTIONS:
            renamed.clear()
            await thread.run(question)
            assert journal.flush(10)
    for start, sent in zip(_assert_replayed_as_sent(store, model), model.calls, strict=True):
        assert [m["id"] for m in start.content["messages"]] == [m.id for m in sent[-3:]]
    assert sent[-1].id.startswith("draft") and thread.state()[-2].id.startswith("final")
    assert verify(store, THREAD)["ok"]
