"""A node whose input is not the graph's state never stands for the state.

LangGraph gives a ``Send("worker", arg)`` task (a *push* task) the ``Send``'s argument as its
input, and the graph's ``__start__`` node (run when ``START`` has a conditional edge) and a
functional ``@entrypoint`` the run's input. The journal took the input of the first node of
a run, or of a step after parallel writes, for the thread's state: when that input had
``messages`` (a worker sent only the latest question, or the new input alone), a
``message.remove`` dropped every earlier message from replay until the run ended — the
model calls made meanwhile failed verify, the timeline showed removal markers. The journal
now compares its order with the state at the next node that reads the state (LangGraph
starts a step's ``Send`` tasks before its other nodes), or with the root's output.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai

MODES = ["sync", "async"]
THREAD = "t"
CONFIG: Any = {"configurable": {"thread_id": THREAD}}
QUESTIONS = ["first question", "second question", "third question"]


def shapes(messages: Sequence[Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def answering() -> ScriptedChatModel:
    """A model that says how many messages it saw."""
    return ScriptedChatModel(lambda ms: ai(f"saw {len(ms)} messages"))


class Thread:
    """A journaled graph on one thread, driven sync or async, and the checks of its journal."""

    def __init__(self, tmp_path: Path, graph: Any, mode: str) -> None:
        self.store = SqliteEventStore(tmp_path / "j.db")
        self.journal = RunJournal(self.store, spool_path=tmp_path / "spool.jsonl")
        self.graph = graph.with_config(callbacks=[self.journal])
        self.mode = mode

    def ask(self, question: str) -> None:
        payload = {"messages": [HumanMessage(question)]}
        if self.mode == "async":
            asyncio.run(self.graph.ainvoke(payload, CONFIG))
        else:
            self.graph.invoke(payload, CONFIG)

    def state(self) -> list[BaseMessage]:
        return list(self.graph.get_state(CONFIG).values["messages"])

    def assert_replayed(self, *agent_models: ScriptedChatModel) -> None:
        """Replay's state is the checkpoint's, verify passes, no message was shown removed,
        and at each agent model call (made by ``agent_models``, in order) the replayed
        state holds what the call was sent, in its order."""
        self.journal.flush()
        assert shapes(replay(self.store, THREAD, view="state")) == shapes(self.state())
        report = verify(self.store, THREAD)
        assert report["ok"], report
        items = build_timeline(self.store, THREAD, limit=200)["items"]
        assert [i for i in items if i["type"] == "removal_marker"] == []
        starts = [
            e
            for e in self.store.read(THREAD, event_type="llm.start", limit=1000)
            if e.metadata["caller"] == "agent"
        ]
        sent = [call for model in agent_models for call in model.calls]
        assert len(starts) == len(sent) == report["calls"]
        for start, received in zip(starts, sent, strict=True):
            ids = {m.id for m in received}
            at_call = replay(self.store, THREAD, upto_seq=start.seq, view="state")
            assert shapes([m for m in at_call if m.id in ids]) == shapes(received)

    def close(self) -> None:
        self.journal.close(timeout=10)
        self.store.close()


@pytest.fixture
def thread(tmp_path: Path) -> Any:
    made: list[Thread] = []

    def factory(graph: Any, mode: str) -> Thread:
        made.append(Thread(tmp_path, graph, mode))
        return made[-1]

    yield factory
    for t in made:
        t.close()


def worker(arg: dict[str, Any]) -> dict[str, Any]:
    """A Send task: works on the messages it was sent (not the state)."""
    return {"messages": [AIMessage(f"worked on: {arg['messages'][-1].content}")]}


def model_node(model: ScriptedChatModel) -> Callable[[MessagesState], dict[str, Any]]:
    return lambda state: {"messages": [model.invoke(state["messages"])]}


def send_latest(state: MessagesState) -> list[Send]:
    return [Send("worker", {"messages": state["messages"][-1:]})]


def fan_from_start(model: ScriptedChatModel) -> Any:
    """START's conditional edge sends the latest message to a worker; then the model."""
    g = StateGraph(MessagesState)
    g.add_node("worker", worker)
    g.add_node("model", model_node(model))
    g.add_conditional_edges(START, send_latest, ["worker"])
    g.add_edge("worker", "model")
    g.add_edge("model", END)
    return g.compile(checkpointer=InMemorySaver())


def send_after_parallel(model: ScriptedChatModel, *, same_step: bool) -> Any:
    """A planner, two parallel nodes (``a`` ends after ``b``, so the journal sees their
    writes out of the state's order), then ``a`` sends its message to a worker; the model
    runs after the worker, or beside it (``same_step``)."""
    b_done = threading.Event()

    def planner(state: MessagesState) -> dict[str, Any]:
        b_done.clear()
        return {"messages": [AIMessage("plan")]}

    def a(state: MessagesState) -> dict[str, Any]:
        assert b_done.wait(10)
        return {"messages": [AIMessage("from a")]}

    def b(state: MessagesState) -> dict[str, Any]:
        b_done.set()
        return {"messages": [AIMessage("from b")]}

    def route(state: MessagesState) -> list[Any]:
        return [*send_latest(state), "model"] if same_step else send_latest(state)

    g = StateGraph(MessagesState)
    for name, node in (("planner", planner), ("a", a), ("b", b), ("worker", worker)):
        g.add_node(name, node)
    g.add_node("model", model_node(model))
    g.add_edge(START, "planner")
    g.add_edge("planner", "a")
    g.add_edge("planner", "b")
    g.add_conditional_edges("a", route, ["worker", "model"])
    g.add_edge("worker", END if same_step else "model")
    g.add_edge("model", END)
    return g.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("mode", MODES)
def test_a_send_from_start_keeps_the_threads_history(thread: Any, mode: str) -> None:
    """A worker sent the latest question by START's conditional edge: replay's state keeps
    every earlier message, at each model call and after each run."""
    model = answering()
    t = thread(fan_from_start(model), mode)
    for question in QUESTIONS:
        t.ask(question)
        t.assert_replayed(model)
    assert [m.content for m in t.state()][-3:] == [
        "third question",
        "worked on: third question",
        "saw 8 messages",
    ]


@pytest.mark.parametrize("same_step", [False, True], ids=["model-after", "model-beside"])
@pytest.mark.parametrize("mode", MODES)
def test_a_send_after_parallel_writes_is_no_state(thread: Any, mode: str, same_step: bool) -> None:
    """A Send task starts the step after parallel writes: the state's order is taken from
    the model node (after the worker or in its step), never from the worker's input."""
    model = answering()
    t = thread(send_after_parallel(model, same_step=same_step), mode)
    for question in QUESTIONS[:2]:
        t.ask(question)
        t.assert_replayed(model)
    contents = [m.content for m in t.state()]
    assert contents[:4] == ["first question", "plan", "from a", "from b"]


@pytest.mark.parametrize("mode", MODES)
def test_an_entrypoints_input_is_no_state(thread: Any, mode: str) -> None:
    """A functional @entrypoint given ``{"messages": [question]}``: its input is not taken
    for the thread's state; replay's state is the returned messages after each run."""
    model = answering()

    @entrypoint(checkpointer=InMemorySaver())
    def chat(inputs: dict[str, Any], *, previous: Any = None) -> dict[str, Any]:
        messages = add_messages((previous or {}).get("messages", []), inputs["messages"])
        return {"messages": add_messages(messages, [model.invoke(messages)])}

    t = thread(chat, mode)
    for question in QUESTIONS:
        t.ask(question)
        t.assert_replayed(model)
    assert len(t.state()) == 6
