"""An ``update_state`` of a journaled thread is journaled as the write to the state it is.

LangGraph runs the writers of the node an update is applied as (``as_node``) under a chain
named ``<graph name>UpdateState`` when that node has more than one writer (an agent's model
node, a node with a conditional edge), else without any callback. The journal took that
chain for a run: ``run.start``/``run.end`` (a run in the runs view), and at its end the
chain's output — only the update's values — for the whole state, so a ``message.remove``
dropped every earlier message from replay. An update no callback announced was never
journaled at all: replay's state missed its messages.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call

MODES = ["sync", "async"]
THREAD = "t"
CONFIG: Any = {"configurable": {"thread_id": THREAD}}


@tool
def lookup(query: str) -> str:
    """Look the query up."""
    return f"found {query}"


def shapes(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def script() -> list[AIMessage]:
    """Two agent runs: the first calls the tool, then answers; the second answers."""
    return [ai("", call("lookup", "call-1", query="q")), ai("first answer"), ai("second answer")]


class Session:
    """A journaled graph on one thread, driven sync or async."""

    def __init__(self, tmp_path: Path, graph: Any, mode: str, *, bind: bool = True) -> None:
        self.store = SqliteEventStore(tmp_path / "j.db")
        self.journal = RunJournal(self.store, spool_path=tmp_path / "spool.jsonl")
        self.mode = mode
        self.bound = bind
        self.graph = graph.with_config(callbacks=[self.journal]) if bind else graph
        self.config: Any = CONFIG if bind else {**CONFIG, "callbacks": [self.journal]}

    def invoke(self, payload: Any) -> None:
        if self.mode == "async":
            asyncio.run(self.graph.ainvoke(payload, self.config))
        else:
            self.graph.invoke(payload, self.config)

    def update(self, values: dict[str, Any], as_node: str) -> None:
        if self.mode == "async":
            asyncio.run(self.graph.aupdate_state(self.config, values, as_node=as_node))
        else:
            self.graph.update_state(self.config, values, as_node=as_node)

    def state(self) -> list[BaseMessage]:
        return list(self.graph.get_state(CONFIG).values["messages"])

    def assert_replayed(self) -> None:
        """Replay's state is the checkpoint's, and every model call replays exactly."""
        self.journal.flush()
        assert shapes(replay(self.store, THREAD, view="state")) == shapes(self.state())
        assert verify(self.store, THREAD)["ok"]

    def runs(self) -> list[Any]:
        return self.store.list_runs(THREAD)


def edit_the_thread(s: Session, as_node: str, *, announced: bool) -> str:
    """Run, then add a note, remove the first message and edit the note by update_state,
    then run again; ``announced``: LangGraph tells the callbacks of each update. Returns
    the removed message's id."""
    s.invoke({"messages": [HumanMessage("first question")]})
    s.assert_replayed()
    s.update({"messages": [HumanMessage("a note", id="note-1")]}, as_node)
    if announced:
        s.assert_replayed()
    first = s.state()[0]
    s.update({"messages": [RemoveMessage(id=str(first.id))]}, as_node)
    if announced:
        s.assert_replayed()
    s.update({"messages": [HumanMessage("an edited note", id="note-1")]}, as_node)
    if announced:
        s.assert_replayed()
    s.invoke({"messages": [HumanMessage("second question")]})
    s.assert_replayed()
    s.journal.close()
    assert [r.status for r in s.runs()] == ["success", "success"]
    starts = s.store.read(THREAD, event_type="run.start")
    assert [e.content["graph"] for e in starts] == ["LangGraph", "LangGraph"]
    notes = s.store.read(THREAD, event_type="message.human")
    edits = [e for e in notes if e.content["data"]["id"] == "note-1"]
    assert [e.content["data"]["content"] for e in edits] == ["a note", "an edited note"][
        -len(edits) :
    ]
    assert {e.metadata["caller"] for e in edits} == {"user"}
    items = build_timeline(s.store, THREAD, limit=100)["items"]
    shown = [i for i in items if str(i["id"]).split("@")[0] == "note-1"]
    assert shown[-1]["content"] == "an edited note"
    assert [bool(i.get("replacement")) for i in shown] == [False, True][: len(shown)]
    return str(first.id)


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_bound_with_the_journal_journals_its_state_updates(
    tmp_path: Path, mode: str
) -> None:
    """update_state through with_config(callbacks=[journal]) on an agent with a tool: each
    added, removed and replaced message is journaled as the user's, no run is made of it,
    and replay's state equals the checkpoint after every step."""
    agent = create_agent(ScriptedChatModel(script()), tools=[lookup], checkpointer=InMemorySaver())
    s = Session(tmp_path, agent, mode)
    removed = edit_the_thread(s, "model", announced=True)
    removals = s.store.read(THREAD, event_type="message.remove")
    assert [(e.content, e.metadata["caller"]) for e in removals] == [
        ({"removed_message_ids": [removed]}, "user")
    ]


@pytest.mark.parametrize("mode", MODES)
def test_an_update_no_callback_announces_is_journaled_at_the_next_run(
    tmp_path: Path, mode: str
) -> None:
    """An agent without tools: LangGraph runs the model node's one writer silently; the
    next run journals what the state gained (the note, its edit) as the user's writes."""
    agent = create_agent(
        ScriptedChatModel([ai("first answer"), ai("second answer")]),
        tools=[],
        checkpointer=InMemorySaver(),
    )
    s = Session(tmp_path, agent, mode)
    edit_the_thread(s, "model", announced=False)


def chat_graph(branching: bool) -> Any:
    """A StateGraph with one model node; ``branching``: it leaves by a conditional edge (two
    writers, an update announced to the callbacks), else by a plain edge (one writer)."""
    model = ScriptedChatModel([ai("first answer"), ai("second answer")])

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    if branching:
        builder.add_conditional_edges("chat", lambda state: END, [END])
    else:
        builder.add_edge("chat", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("branching", [True, False], ids=["two-writers", "one-writer"])
@pytest.mark.parametrize("mode", MODES)
def test_a_state_graph_with_the_journal_in_the_config_journals_its_updates(
    tmp_path: Path, mode: str, branching: bool
) -> None:
    """A compiled StateGraph, the journal passed in update_state's config: the updates are
    journaled (at once when LangGraph announces them, else at the next run)."""
    s = Session(tmp_path, chat_graph(branching), mode, bind=False)
    edit_the_thread(s, "chat", announced=branching)


@pytest.mark.parametrize("mode", MODES)
def test_an_update_before_any_run_of_the_journal_is_journaled_with_the_next_run(
    tmp_path: Path, mode: str
) -> None:
    """A journal that follows no run of the thread yet (a new process) journals an update
    with the next run, never as a run of its own."""
    agent = create_agent(ScriptedChatModel(script()), tools=[lookup], checkpointer=InMemorySaver())
    s = Session(tmp_path, agent, mode)
    s.invoke({"messages": [HumanMessage("first question")]})
    s.journal.close()
    s.journal = RunJournal(s.store, spool_path=tmp_path / "spool2.jsonl")
    s.graph = agent.with_config(callbacks=[s.journal])
    s.update({"messages": [HumanMessage("a note", id="note-1")]}, "model")
    s.journal.flush()
    assert [r.status for r in s.runs()] == ["success"]
    s.invoke({"messages": [HumanMessage("second question")]})
    s.assert_replayed()
    s.journal.close()
    assert [r.status for r in s.runs()] == ["success", "success"]
    humans = s.store.read(THREAD, event_type="message.human")
    note = [e for e in humans if e.content["data"]["id"] == "note-1"]
    assert len(note) == 1 and note[0].metadata["caller"] == "user"


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_tool_call_at_a_breakpoint_is_journaled(tmp_path: Path, mode: str) -> None:
    """Human in the loop: the run stops before its tools, the user replaces the AI message
    (same id, another call) by update_state, the run resumes: replay follows every step."""
    model = ScriptedChatModel(script())
    agent = create_agent(
        model, tools=[lookup], checkpointer=InMemorySaver(), interrupt_before=["tools"]
    )
    s = Session(tmp_path, agent, mode)
    s.invoke({"messages": [HumanMessage("first question")]})
    s.assert_replayed()
    asked = s.state()[-1]
    edited = AIMessage("", id=asked.id, tool_calls=[call("lookup", "call-2", query="edited")])
    s.update({"messages": [edited]}, "model")
    s.assert_replayed()
    s.invoke(None)
    s.assert_replayed()
    s.journal.close()
    assert [r.status for r in s.runs()] == ["interrupted", "success"]
    tools = s.store.read(THREAD, event_type="message.tool")
    assert [e.content["data"]["tool_call_id"] for e in tools] == ["call-2"]


@pytest.mark.parametrize(
    "values",
    [
        {"messages": [HumanMessage("a note without an id")]},
        {"messages": [{"role": "user", "content": "a note as a dict"}]},
        {"messages": [("user", "a note as a tuple")]},
        {"messages": "a note as a bare string"},
    ],
    ids=["message", "dict", "tuple", "string"],
)
@pytest.mark.parametrize("mode", MODES)
def test_an_update_s_message_without_an_id_is_journaled_under_the_state_s_id(
    tmp_path: Path, mode: str, values: dict[str, Any]
) -> None:
    """A message an update writes without an id is journaled under the state's id; the
    update's values stay as the user wrote them (a message-like item is placed at the next
    run's first look at the state)."""
    agent = create_agent(ScriptedChatModel(script()), tools=[lookup], checkpointer=InMemorySaver())
    s = Session(tmp_path, agent, mode)
    s.invoke({"messages": [HumanMessage("first question")]})
    written = copy.deepcopy(values)
    s.update(values, "model")
    if isinstance(values["messages"], list) and isinstance(values["messages"][0], BaseMessage):
        s.assert_replayed()  # a message object gets its id in place, as LangGraph gives it
    else:
        assert values == written
    s.invoke({"messages": [HumanMessage("second question")]})
    s.assert_replayed()
    s.journal.close()
    assert [r.status for r in s.runs()] == ["success", "success"]
