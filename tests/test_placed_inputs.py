"""Input messages without an id are journaled under the id the state gives them, wherever the
journal first sees that state.

A run's input is left as the user wrote it, so a dict, a tuple or a string has no id until
LangGraph's reducer gives it one; the journal finds it in the state by kind and content. It
took the first unseen match from the start of the state (after a restart, an earlier message
of the same text: the new one was never journaled), never looked for it at a breakpoint before
the first node (lost for good when another journal resumed the run), and left the run's start
unknown (a cached node's answer after it was not journaled). A graph without a checkpointer,
whose state starts anew each run, got a removal marker for the previous run's messages.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import CachePolicy, Command

from history import build_timeline, replay, verify
from journal import MemoryEventStore, RunJournal, SqliteEventStore, recover_spool
from tests.fakes import ScriptedChatModel
from tests.flaky_stores import FlakyStore
from tests.test_cached_nodes import chain_graph
from tests.test_summarization_middleware import summarizer

MODES = ["sync", "async"]


def shapes(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def graph_of(*names: str, cached: str | None = None, **compile_kw: Any) -> Any:
    """START -> each node in turn -> END; each node answers with what it saw."""
    builder = StateGraph(MessagesState)
    for name in names:
        model = ScriptedChatModel(lambda ms, n=name: AIMessage(f"{n} after {ms[-1].content}"))
        policy = None
        if name == cached:
            policy = CachePolicy(key_func=lambda s: str(s["messages"][-1].content))
        builder.add_node(
            name,
            lambda s, m=model: {"messages": [m.invoke(s["messages"])]},
            cache_policy=policy,
        )
    for a, b in zip((START, *names), (*names, END), strict=True):
        builder.add_edge(a, b)
    return builder.compile(**compile_kw)


def run(graph: Any, payload: Any, thread: str, journal: RunJournal, mode: str) -> Any:
    config = {"configurable": {"thread_id": thread}, "callbacks": [journal]}
    if mode == "async":
        return asyncio.run(graph.ainvoke(payload, config))
    return graph.invoke(payload, config)


def assert_replayed(store: SqliteEventStore, graph: Any, thread: str) -> None:
    state = graph.get_state({"configurable": {"thread_id": thread}}).values["messages"]
    assert shapes(replay(store, thread, view="state")) == shapes(state)
    report = verify(store, thread)
    assert report["ok"] and not report["state_missing"], report


@pytest.mark.parametrize("mode", MODES)
def test_a_repeated_text_after_a_restart_is_the_new_message(tmp_path: Path, mode: str) -> None:
    """The same text sent again as a dict after a journal restart is journaled as the new one."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", checkpointer=InMemorySaver())
    for spool in ("first", "second"):  # a new journal (a restart) for the second run
        with RunJournal(store, spool_path=tmp_path / spool) as journal:
            run(graph, {"messages": [{"role": "user", "content": "ok"}]}, "t", journal, mode)
    assert_replayed(store, graph, "t")
    texts = [i["content"] for i in build_timeline(store, "t")["items"]]
    assert texts == ["ok", "model after ok", "ok", "model after ok"]
    # the new journal's look at the earlier turns journaled nothing again, counted nothing
    assert len([e for e in store.read("t") if e.event_type in ("message.human", "message.ai")]) == 4
    ends = store.read("t", event_type="run.end")
    assert [e.content["message_counts"] for e in ends] == [{"human": 1, "ai": 1}] * 2


@pytest.mark.parametrize("restart", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_an_input_paused_before_the_first_node_is_journaled(
    tmp_path: Path, mode: str, restart: bool
) -> None:
    """A dict input of a run paused before its first node is journaled when the run pauses."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", checkpointer=InMemorySaver(), interrupt_before=["model"])
    journal = RunJournal(store, spool_path=tmp_path / "first")
    run(graph, {"messages": [{"role": "user", "content": "q1"}]}, "t", journal, mode)
    journal.flush()
    assert_replayed(store, graph, "t")
    if restart:
        journal.close()
        journal = RunJournal(store, spool_path=tmp_path / "second")
    run(graph, None, "t", journal, mode)
    journal.close()
    assert_replayed(store, graph, "t")
    texts = [i["content"] for i in build_timeline(store, "t")["items"]]
    assert texts == ["q1", "model after q1"]


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_answer_after_a_dict_input_is_journaled(tmp_path: Path, mode: str) -> None:
    """A cached node's answer to a dict input is journaled, after the input, as the agent's."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model", cached="model", checkpointer=InMemorySaver(), cache=InMemoryCache())
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for thread in ("a", "b"):  # b's answer comes from the cache
            run(graph, {"messages": [{"role": "user", "content": "hello"}]}, thread, journal, mode)
    for thread in ("a", "b"):
        assert_replayed(store, graph, thread)
    answers = store.read("b", event_type="message.ai")
    assert [(e.metadata["caller"], e.content["data"]["content"]) for e in answers] == [
        ("agent", "model after hello")
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_first_node_is_the_agents_not_the_users(tmp_path: Path, mode: str) -> None:
    """A cached node that runs first in a later run of a thread writes the agent's message."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of(
        "draft", "model", cached="draft", checkpointer=InMemorySaver(), cache=InMemoryCache()
    )
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        run(graph, {"messages": [HumanMessage("same")]}, "a", journal, mode)
        run(graph, {"messages": [HumanMessage("other")]}, "t", journal, mode)
        run(graph, {"messages": [HumanMessage("same")]}, "t", journal, mode)  # draft: cached
    assert_replayed(store, graph, "t")
    callers = {
        e.content["data"]["content"]: e.metadata["caller"]
        for e in store.read("t")
        if e.event_type == "message.ai"
    }
    assert callers == {
        "draft after other": "agent",
        "model after draft after other": "agent",
        "draft after same": "agent",
        "model after draft after same": "agent",
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_graph_without_a_checkpointer_shows_no_removals(tmp_path: Path, mode: str) -> None:
    """A graph without a checkpointer starts each run anew: no removal marker, no lost turn."""
    store = SqliteEventStore(tmp_path / "j.db")
    graph = graph_of("model")
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for text in ("q1", "q2", "q3"):
            out = run(graph, {"messages": [{"role": "user", "content": text}]}, "t", journal, mode)
    items = build_timeline(store, "t")["items"]
    assert [(i["type"], i["content"]) for i in items] == [
        (kind, text)
        for q in ("q1", "q2", "q3")
        for kind, text in (("human", q), ("ai", f"model after {q}"))
    ]
    assert shapes(replay(store, "t", view="state")) == shapes(out["messages"])


def agent_of(*answers: str) -> Any:
    """A tool-less agent (its model node has one writer: an update_state there runs no
    callback) with a checkpointer."""
    return create_agent(
        ScriptedChatModel([AIMessage(a) for a in answers]), tools=[], checkpointer=InMemorySaver()
    )


@pytest.mark.parametrize("restart", [False, True])
def test_an_input_of_a_stream_stopped_before_any_node_is_journaled(
    tmp_path: Path, restart: bool
) -> None:
    """A dict input of a stream stopped at its first chunk (LangGraph saved it) is journaled as
    the user's by the next run, by a new journal too."""
    store = SqliteEventStore(tmp_path / "j.db")
    agent = agent_of("a1")
    journal = RunJournal(store, spool_path=tmp_path / "first")
    config: Any = {"configurable": {"thread_id": "t"}}
    stream = agent.stream(
        {"messages": [{"role": "user", "content": "first"}]},
        {**config, "callbacks": [journal]},
        stream_mode="values",
    )
    next(stream)  # the input state
    stream.close()
    if restart:
        journal.close()
        journal = RunJournal(store, spool_path=tmp_path / "second")
    run(agent, {"messages": [HumanMessage("second")]}, "t", journal, "sync")
    journal.close()
    assert_replayed(store, agent, "t")
    first = next(
        e
        for e in store.read("t", event_type="message.human")
        if e.content["data"]["content"] == "first"
    )
    assert first.metadata["caller"] == "user"


@pytest.mark.parametrize("next_input", ["message", "none"])
@pytest.mark.parametrize("restart", [False, True])
def test_an_update_no_callback_saw_is_journaled_by_the_next_look(
    tmp_path: Path, restart: bool, next_input: str
) -> None:
    """An update_state applied without callbacks is journaled at the next look at the state: a
    new journal's first, or the end of a run that ran no node (a resume with nothing to do)."""
    store = SqliteEventStore(tmp_path / "j.db")
    agent = agent_of("a1", "a2", "a3")
    journal = RunJournal(store, spool_path=tmp_path / "first")
    run(agent, {"messages": [("user", "q0")]}, "t", journal, "sync")
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.update_state(config, {"messages": [HumanMessage("a note")]})
    if restart:
        journal.close()
        journal = RunJournal(store, spool_path=tmp_path / "second")
    run(
        agent,
        {"messages": [("user", "q1")]} if next_input == "message" else None,
        "t",
        journal,
        "sync",
    )
    journal.flush()
    assert_replayed(store, agent, "t")
    run(agent, {"messages": [("user", "q2")]}, "t", journal, "sync")
    journal.close()
    assert_replayed(store, agent, "t")
    notes = [
        e
        for e in store.read("t", event_type="message.human")
        if e.content["data"]["content"] == "a note"
    ]
    assert [e.metadata["caller"] for e in notes] == ["user"]


@pytest.mark.parametrize("mode", MODES)
def test_the_input_a_start_branch_passes_on_is_the_users(tmp_path: Path, mode: str) -> None:
    """With a conditional edge from START (its node passes the input on), a dict input is the
    user's message, and a cached answer after it is journaled."""
    model = ScriptedChatModel(lambda ms: AIMessage(f"answer to {ms[-1].content}"))
    builder = StateGraph(MessagesState)
    policy = CachePolicy(key_func=lambda s: str(s["messages"][-1].content))
    builder.add_node(
        "model", lambda s: {"messages": [model.invoke(s["messages"])]}, cache_policy=policy
    )
    builder.add_conditional_edges(START, lambda s: "model", ["model"])
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=InMemorySaver(), cache=InMemoryCache())
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for thread in ("a", "b"):  # b's answer comes from the cache
            run(graph, {"messages": [{"role": "user", "content": "hello"}]}, thread, journal, mode)
    for thread in ("a", "b"):
        assert_replayed(store, graph, thread)
        events = store.read(thread)
        assert [
            (e.event_type, e.metadata.get("caller"))
            for e in events
            if e.event_type.startswith("message.")
        ] == [
            ("message.human", "user"),
            ("message.ai", "agent"),
        ]


@pytest.mark.parametrize("mode", MODES)
def test_two_journals_taking_turns_on_a_thread_store_each_message_once(
    tmp_path: Path, mode: str
) -> None:
    """Two long-lived journals (two processes' stores on one file) taking turns on a thread:
    each sees the other's messages in the state and journals them as input again; each is
    stored once, and the timeline is the conversation."""
    graph = graph_of("model", checkpointer=InMemorySaver())
    journals = [
        RunJournal(SqliteEventStore(tmp_path / "j.db"), spool_path=tmp_path / f"spool-{n}")
        for n in range(2)
    ]
    for turn in range(4):
        run(graph, {"messages": [HumanMessage(f"q{turn}")]}, "t", journals[turn % 2], mode)
        journals[turn % 2].flush()
    for journal in journals:
        journal.close()
    store = SqliteEventStore(tmp_path / "j.db")
    assert_replayed(store, graph, "t")
    stored = [
        e.content["data"]["id"]
        for e in store.read("t")
        if e.event_type in ("message.human", "message.ai")
    ]
    assert len(stored) == len(set(stored)) == 8
    texts = [i["content"] for i in build_timeline(store, "t")["items"]]
    assert texts == [t for n in range(4) for t in (f"q{n}", f"model after q{n}")]


@tool
def danger(x: str) -> str:
    """A tool a human approves first."""
    return f"did {x}"


@tool
def echo(x: str) -> str:
    """A tool that needs no approval."""
    return x


def _danger_script(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if last.type == "human" and "danger" in str(last.content):
        calls = [
            {"name": "danger", "args": {"x": "it"}, "id": "c1"},
            {"name": "echo", "args": {"x": "hi"}, "id": "c2"},
        ]  # parallel: the step after them checks the state's order
        return AIMessage("", tool_calls=calls)
    return AIMessage(f"ok after {len(messages)}")


def test_a_summary_the_state_holds_at_a_restart_while_paused_stays_a_marker(
    tmp_path: Path,
) -> None:
    """A run that compacts, then pauses for a human, resumed by a new journal: the summary in
    the state is no human message of the resumed run (its marker has it)."""
    agent = create_agent(
        ScriptedChatModel(_danger_script),
        [danger, echo],
        middleware=[
            SummarizationMiddleware(summarizer(), trigger=("messages", 5), keep=("messages", 2)),
            HumanInTheLoopMiddleware(interrupt_on={"danger": True}),
        ],
        checkpointer=InMemorySaver(),
    )
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store, spool_path=tmp_path / "first")
    for text in ("q0", "q1", "now the danger"):  # the third compacts, then pauses
        run(agent, {"messages": [HumanMessage(text)]}, "t", journal, "sync")
    journal.close()
    journal = RunJournal(store, spool_path=tmp_path / "second")
    run(agent, Command(resume={"decisions": [{"type": "approve"}]}), "t", journal, "sync")
    journal.close()
    assert_replayed(store, agent, "t")
    summaries = [
        e.seq
        for e in store.read("t", event_type="message.human")
        if e.content["data"].get("additional_kwargs", {}).get("lc_source")
    ]
    assert summaries == []
    items = build_timeline(store, "t")["items"]
    assert "summary_marker" in [i["type"] for i in items]
    assert not [i for i in items if i["type"] == "human" and "summary" in str(i["content"])]


def test_a_turn_spooled_while_another_journal_ran_the_thread_is_stored_once(
    tmp_path: Path,
) -> None:
    """A journal spools a turn while its store is down; another journal's next run finds that
    turn in the state and stores it; the spool's replay then stores none of it again."""
    shared = MemoryEventStore()
    flaky = FlakyStore()
    flaky.inner = shared  # the same store, down for this journal alone
    graph = graph_of("model", checkpointer=InMemorySaver())
    spooling = RunJournal(flaky, spool_path=tmp_path / "spool-a", retry_delays=(0.01,))
    other = RunJournal(shared, spool_path=tmp_path / "spool-b")
    run(graph, {"messages": [HumanMessage("q0")]}, "t", spooling, "sync")
    spooling.flush()
    flaky.down = True
    run(graph, {"messages": [HumanMessage("q1")]}, "t", spooling, "sync")
    spooling.flush()
    run(graph, {"messages": [HumanMessage("q2")]}, "t", other, "sync")
    other.close()
    flaky.down = False
    spooling.close()
    recover_spool(tmp_path / "spool-a", shared)  # what close left spooled
    assert_replayed(shared, graph, "t")
    stored = [
        e.content["data"]["id"]
        for e in shared.read("t")
        if e.event_type != "message.remove" and e.category == "message"
    ]
    assert len(stored) == len(set(stored)) == 6


def _remove_then_readd(state: Any) -> dict[str, Any]:
    """On "drop": remove the seeded answer (a1)."""
    if state["messages"][-1].content == "drop":
        return {"messages": [RemoveMessage(id="a1")]}
    return {}


def _readd(state: Any) -> dict[str, Any]:
    """On "drop": write the seeded answer back, same id and content."""
    if state["messages"][-1].content == "drop":
        return {"messages": [AIMessage("seeded answer", id="a1")]}
    return {"messages": [AIMessage(f"ok {state['messages'][-1].content}")]}


def test_a_message_removed_and_written_back_while_spooled_is_replayed(tmp_path: Path) -> None:
    """A seeded answer removed and written back in a run whose events were spooled: the spool's
    replay keeps the write-back (the stored copy it repeats had left the state)."""
    graph = chain_graph([("remove", _remove_then_readd, None), ("readd", _readd, None)])
    flaky = FlakyStore()
    journal = RunJournal(flaky, spool_path=tmp_path / "spool", retry_delays=(0.01,))
    seeded = [HumanMessage("h0", id="h0"), AIMessage("seeded answer", id="a1"), HumanMessage("q1")]
    run(graph, {"messages": seeded}, "t", journal, "sync")
    journal.flush()
    flaky.down = True
    run(graph, {"messages": [HumanMessage("drop")]}, "t", journal, "sync")
    journal.flush()
    flaky.down = False
    journal.close()
    recover_spool(tmp_path / "spool", flaky.inner)
    assert_replayed(flaky.inner, graph, "t")


@pytest.mark.parametrize("mode", MODES)
def test_a_cached_summary_is_in_the_replayed_state(tmp_path: Path, mode: str) -> None:
    """A summary a cached node writes (no callback, no marker) is journaled from the state."""
    model = ScriptedChatModel(lambda ms: AIMessage(f"answer to {ms[-1].content}"))

    def condense(state: Any) -> dict[str, Any]:
        summary = HumanMessage("summary so far", additional_kwargs={"lc_source": "summarization"})
        return {"messages": [summary]}

    policy = CachePolicy(key_func=lambda s: str(s["messages"][-1].content))
    answer = ("model", lambda s: {"messages": [model.invoke(s["messages"])]}, None)
    graph = chain_graph([("condense", condense, policy), answer])
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for thread in ("a", "b"):  # b's summary comes from the cache
            run(graph, {"messages": [HumanMessage("hello")]}, thread, journal, mode)
    for thread in ("a", "b"):
        assert_replayed(store, graph, thread)


def test_an_update_no_callback_saw_shows_what_it_removed(tmp_path: Path) -> None:
    """An update applied without callbacks that removes one message and adds another: the
    next run's look at the state shows the removal as a marker, and replays the state."""
    graph = graph_of("model", checkpointer=InMemorySaver())
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool") as journal:
        for text in ("q0", "q1"):
            run(graph, {"messages": [HumanMessage(text, id=text)]}, "t", journal, "sync")
        config: Any = {"configurable": {"thread_id": "t"}}
        graph.update_state(
            config, {"messages": [RemoveMessage(id="q0"), HumanMessage("note")]}, as_node="model"
        )
        run(graph, {"messages": [HumanMessage("q2")]}, "t", journal, "sync")
    assert_replayed(store, graph, "t")
    markers = [i for i in build_timeline(store, "t")["items"] if i["type"] == "removal_marker"]
    assert [m["removed_message_ids"] for m in markers] == [["q0"]]


def test_turns_spooled_between_another_journals_are_stored_once(tmp_path: Path) -> None:
    """A journal whose store is down spools every other turn of a thread another journal runs
    meanwhile: the spool's replay stores none of the messages the other journal stored (a
    spooled order that does not list a later message is no removal of it)."""
    shared = MemoryEventStore()
    flaky = FlakyStore(down=True)
    flaky.inner = shared
    graph = graph_of("model", checkpointer=InMemorySaver())
    spooling = RunJournal(flaky, spool_path=tmp_path / "spool-a", retry_delays=(0.01,))
    other = RunJournal(shared, spool_path=tmp_path / "spool-b")
    for turn in range(4):
        journal = other if turn % 2 else spooling
        run(graph, {"messages": [HumanMessage(f"q{turn}")]}, "t", journal, "sync")
        journal.flush()
    other.close()
    spooling.close()
    recover_spool(tmp_path / "spool-a", shared)
    stored = [
        e.content["data"]["id"]
        for e in shared.read("t")
        if e.category == "message" and e.event_type != "message.remove"
    ]
    assert len(stored) == len(set(stored)) == 8


def stop_at_first_values(graph: Any, payload: Any, thread: str, journal: RunJournal) -> None:
    """Stream a run and stop it at its first ``values`` chunk (the input, before any node)."""
    config = {"configurable": {"thread_id": thread}, "callbacks": [journal]}
    for _ in graph.stream(payload, config, stream_mode="values"):
        break


@pytest.mark.parametrize("stops", [1, 2])
@pytest.mark.parametrize("form", ["tuple", "str"])
def test_inputs_of_streams_stopped_before_any_node_are_journaled_once_after_a_restart(
    tmp_path: Path, form: str, stops: int
) -> None:
    """Runs stopped before any node read the state, then the journal closes (one journal a
    request): the checkpoint holds their inputs under ids no state showed the journal, so
    its close journals no copy of its own; the next journal journals each once, under
    LangGraph's id."""
    graph = graph_of("model", checkpointer=InMemorySaver())
    store = SqliteEventStore(tmp_path / "j.db")
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        for n in range(stops):
            text = f"stopped {n}"
            stop_at_first_values(
                graph, {"messages": [("user", text) if form == "tuple" else text]}, "t", journal
            )
    with RunJournal(store, spool_path=tmp_path / "spool2.jsonl") as journal:
        run(graph, {"messages": [("user", "next")]}, "t", journal, "sync")
    assert_replayed(store, graph, "t")
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    journaled = [e.content["data"]["id"] for e in store.read("t", category="message")
                 if e.event_type != "message.remove"]  # fmt: skip
    assert sorted(journaled) == sorted(m.id for m in state)
