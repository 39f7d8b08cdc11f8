"""RunJournal on real create_agent graphs: the exact event sequence per category."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, wrap_tool_call
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from journal import MemoryEventStore, RunEvent, RunJournal
from tests.fakes import ScriptedChatModel, ai, call, event_types
from tests.flaky_stores import journal_fixture, store_fixture  # noqa: F401 (fixtures)

SYNC_MODES = ["invoke", "stream"]
ASYNC_MODES = ["ainvoke", "astream_events"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def slow_add(a: int, b: int, delay: float) -> int:
    """Add two numbers after ``delay`` seconds."""
    time.sleep(delay)
    return a + b


@tool
def explode(x: int) -> int:
    """Always fails."""
    raise ValueError("tool exploded")


@tool
def jump(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Answer through a Command that carries the tool message."""
    return Command(update={"messages": [ToolMessage(f"jumped {x}", tool_call_id=tool_call_id)]})


@pytest.fixture
def blockbuster() -> Iterator[None]:
    """Blocking calls on the event loop thread raise while the test runs."""
    with blockbuster_ctx():
        yield


def config(journal: RunJournal, thread: str = "t1") -> Any:
    """A run config journaled into ``thread`` (``Any``: the agents' typed overloads vary)."""
    return {"configurable": {"thread_id": thread}, "callbacks": [journal]}


def drive(agent: Any, inputs: Any, cfg: dict[str, Any], mode: str) -> None:
    """Run ``agent`` to completion through a sync entry point."""
    if mode == "invoke":
        agent.invoke(inputs, cfg)
    else:
        for _ in agent.stream(inputs, cfg):
            pass


async def adrive(agent: Any, inputs: Any, cfg: dict[str, Any], mode: str) -> None:
    """Run ``agent`` to completion through an async entry point."""
    if mode == "ainvoke":
        await agent.ainvoke(inputs, cfg)
    else:
        async for _ in agent.astream_events(inputs, cfg, version="v2"):
            pass


def events(journal: RunJournal, store: MemoryEventStore, thread: str = "t1") -> list[RunEvent]:
    """Every stored event of ``thread`` after a flush."""
    assert journal.flush(10)
    return store.read(thread)


def one_tool_agent() -> Any:
    """An agent that calls ``add`` once, then answers."""
    model = ScriptedChatModel([ai("", call("add", a=1, b=2)), ai("three")])
    return create_agent(model, [add], checkpointer=InMemorySaver())


EXPECTED = {
    "lifecycle": ["run.start", "run.end"],
    "message": ["message.human", "message.ai", "message.tool", "message.ai"],
    "trace": ["llm.start", "llm.end", "tool.start", "tool.end", "llm.start", "llm.end"],
}


def assert_one_tool_run(stored: list[RunEvent]) -> None:
    """The single-tool run produced exactly the expected sequence in every category."""
    for category, expected in EXPECTED.items():
        assert event_types(stored, category) == expected, category
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert stored[0].event_type == "run.start" and stored[-1].event_type == "run.end"
    stamps = [e.created_at for e in stored]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    end = stored[-1].content
    assert end["status"] == "success"
    assert end["usage"]["input_tokens"] == 20 and end["usage"]["output_tokens"] == 10
    assert end["usage_by_model"]["scripted-model"]["calls"] == 2
    assert end["message_counts"] == {"human": 1, "ai": 2, "tool": 1}
    assert end["dropped_events"] == 0


@pytest.mark.parametrize("mode", SYNC_MODES)
def test_sync_run_records_exact_sequence(
    journal: RunJournal, store: MemoryEventStore, mode: str
) -> None:
    """invoke and stream journal the same exact event sequence per category."""
    drive(one_tool_agent(), {"messages": [HumanMessage("add 1 and 2")]}, config(journal), mode)
    assert_one_tool_run(events(journal, store))


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_async_run_records_exact_sequence(
    journal: RunJournal, store: MemoryEventStore, mode: str, blockbuster: None
) -> None:
    """ainvoke and astream_events(v2) journal the same sequence without blocking the loop."""
    cfg = config(journal)
    await adrive(one_tool_agent(), {"messages": [HumanMessage("add 1 and 2")]}, cfg, mode)
    assert await journal.aflush(10)
    assert_one_tool_run(await store.aread("t1"))


def test_trace_metadata_attributes_calls(journal: RunJournal, store: MemoryEventStore) -> None:
    """Traces carry caller, step, node, model, usage, tool name, args and durations."""
    drive(one_tool_agent(), {"messages": [HumanMessage("hi")]}, config(journal), "invoke")
    stored = events(journal, store)
    llm_start = next(e for e in stored if e.event_type == "llm.start")
    assert llm_start.metadata["caller"] == "agent"
    assert llm_start.metadata["langgraph_node"] == "model"
    assert llm_start.metadata["langgraph_step"] == 1
    assert llm_start.metadata["model"] == "scripted-model"
    assert llm_start.metadata["message_count"] == 1
    assert llm_start.content["messages"][0]["text"] == "hi"
    llm_end = next(e for e in stored if e.event_type == "llm.end")
    assert llm_end.metadata["usage"]["total_tokens"] == 15
    assert llm_end.metadata["latency_ms"] >= 0
    tool_start = next(e for e in stored if e.event_type == "tool.start")
    assert tool_start.content == {"name": "add", "args": {"a": 1, "b": 2}}
    assert tool_start.metadata["langgraph_node"] == "tools"
    tool_end = next(e for e in stored if e.event_type == "tool.end")
    assert tool_end.metadata["duration_ms"] >= 0
    assert tool_end.metadata["tool_call_id"] == tool_start.metadata["tool_call_id"]


def test_parallel_tool_results_follow_call_order(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """Results of parallel calls are journaled in call order even when they finish reversed."""
    first = call("slow_add", a=1, b=1, delay=0.3)
    second = call("slow_add", a=2, b=2, delay=0.0)
    third = call("slow_add", a=3, b=3, delay=0.1)
    model = ScriptedChatModel([ai("", first, second, third), ai("done")])
    agent: Any = create_agent(model, [slow_add], checkpointer=InMemorySaver())
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("go")]}, cfg)
    stored = events(journal, store)
    tools = [e for e in stored if e.event_type == "message.tool"]
    assert [e.metadata["tool_call_id"] for e in tools] == [first["id"], second["id"], third["id"]]
    ends = [e.metadata["tool_call_id"] for e in stored if e.event_type == "tool.end"]
    assert ends == [second["id"], third["id"], first["id"]]  # they really finished reversed
    state_ids = [m.id for m in agent.get_state(cfg).values["messages"]]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == state_ids


def test_tool_error_handled_by_middleware_is_error_tool_message(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A raised tool error turned into a result is tool.error plus a status=error message."""

    @wrap_tool_call
    def errors_as_results(request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except ValueError as e:
            return ToolMessage(str(e), tool_call_id=request.tool_call["id"], status="error")

    model = ScriptedChatModel([ai("", call("explode", x=1)), ai("sorry")])
    agent: Any = create_agent(model, [explode], middleware=[errors_as_results])
    agent.invoke({"messages": [HumanMessage("boom")]}, config(journal))
    stored = events(journal, store)
    assert event_types(stored, "lifecycle") == ["run.start", "run.end"]
    assert "tool.error" in event_types(stored, "trace")
    tool_msg = next(e for e in stored if e.event_type == "message.tool")
    assert tool_msg.content["data"]["status"] == "error"
    assert tool_msg.content["data"]["content"] == "tool exploded"


def test_unhandled_tool_error_is_one_run_error(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A tool error that fails the run gives tool.error and exactly one run.error."""
    model = ScriptedChatModel([ai("", call("explode", x=1)), ai("never")])
    agent: Any = create_agent(model, [explode])
    with pytest.raises(ValueError, match="tool exploded"):
        agent.invoke({"messages": [HumanMessage("boom")]}, config(journal))
    stored = events(journal, store)
    assert event_types(stored, "lifecycle") == ["run.start", "run.error"]
    assert event_types(stored, "trace").count("tool.error") == 1
    error = stored[-1].content
    assert error["status"] == "error" and error["error_type"] == "ValueError"
    assert "message.tool" not in event_types(stored)


def test_tool_returning_command_is_unwrapped(journal: RunJournal, store: MemoryEventStore) -> None:
    """A tool returning a Command journals the tool message its update carries."""
    model = ScriptedChatModel([ai("", call("jump", x=4)), ai("landed")])
    agent: Any = create_agent(model, [jump], checkpointer=InMemorySaver())
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("jump")]}, cfg)
    stored = events(journal, store)
    tool_msg = next(e for e in stored if e.event_type == "message.tool")
    assert tool_msg.content["data"]["content"] == "jumped 4"
    state_ids = [m.id for m in agent.get_state(cfg).values["messages"]]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == state_ids


def test_model_error_is_one_run_error(journal: RunJournal, store: MemoryEventStore) -> None:
    """A failing model gives llm.error and one run.error, not one per nested chain."""
    agent: Any = create_agent(ScriptedChatModel([RuntimeError("model down")]), [add])
    with pytest.raises(RuntimeError):
        agent.invoke({"messages": [HumanMessage("hi")]}, config(journal))
    stored = events(journal, store)
    assert event_types(stored, "lifecycle") == ["run.start", "run.error"]
    assert event_types(stored, "trace") == ["llm.start", "llm.error"]
    assert stored[-1].content["error"] == "model down"


async def test_cancelled_async_run_is_run_cancel(
    journal: RunJournal, store: MemoryEventStore, blockbuster: None
) -> None:
    """Cancelling an async run journals run.cancel (and no run.end or run.error)."""
    started = asyncio.Event()

    @tool
    async def wait_forever(x: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.sleep(60)
        return "late"

    model = ScriptedChatModel([ai("", call("wait_forever", x=1)), ai("never")])
    agent: Any = create_agent(model, [wait_forever])
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("wait")]}, config(journal)))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await journal.aflush(10)
    stored = await store.aread("t1")
    assert event_types(stored, "lifecycle") == ["run.start", "run.cancel"]
    assert stored[-1].content["reason"] == "CancelledError"


def test_interrupt_and_resume(journal: RunJournal, store: MemoryEventStore) -> None:
    """A human-in-the-loop pause is run.interrupt; the resumed run has run.resume then run.end."""
    model = ScriptedChatModel([ai("", call("add", a=2, b=3)), ai("five")])
    hitl = HumanInTheLoopMiddleware(interrupt_on={"add": True})
    agent: Any = create_agent(model, [add], checkpointer=InMemorySaver(), middleware=[hitl])
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("add")]}, cfg)
    paused = events(journal, store)
    assert event_types(paused, "lifecycle") == ["run.start", "run.interrupt"]
    interrupt = paused[-1].content
    assert interrupt["status"] == "interrupted" and len(interrupt["interrupts"]) == 1
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    stored = events(journal, store)
    runs = [e.run_id for e in stored if e.event_type == "run.start"]
    assert len(runs) == 2
    second = [e for e in stored if e.run_id == runs[1]]
    assert event_types(second, "lifecycle") == ["run.start", "run.resume", "run.end"]
    assert event_types(second, "message") == ["message.tool", "message.ai"]
    state_ids = [m.id for m in agent.get_state(cfg).values["messages"]]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == state_ids


def test_nested_subgraph_node_is_attributed_to_subagent(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A compiled agent used as a node: its calls are subagent traces, its output state messages."""
    sub_model = ScriptedChatModel([ai("", call("add", a=1, b=1)), ai("two")])
    researcher = create_agent(sub_model, [add], name="researcher")
    graph = StateGraph(MessagesState)
    graph.add_node("researcher", researcher)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", END)
    app: Any = graph.compile(checkpointer=InMemorySaver())
    cfg = config(journal)
    app.invoke({"messages": [HumanMessage("research")]}, cfg)
    stored = events(journal, store)
    llm_callers = {e.metadata["caller"] for e in stored if e.event_type == "llm.start"}
    assert llm_callers == {"subagent:researcher"}
    state_ids = [m.id for m in app.get_state(cfg).values["messages"]]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == state_ids
    assert event_types(stored, "lifecycle") == ["run.start", "run.end"]


def test_subagent_inside_tool_is_trace_only(journal: RunJournal, store: MemoryEventStore) -> None:
    """A subagent run inside a tool adds traces, never messages to the parent thread."""
    sub = create_agent(ScriptedChatModel([ai("", call("add", a=1, b=1)), ai("two")]), [add])

    @tool
    def research(question: str) -> str:
        """Ask the research subagent."""
        result = sub.invoke({"messages": [HumanMessage(question)]})
        return str(result["messages"][-1].content)

    sub.name = "researcher"
    model = ScriptedChatModel([ai("", call("research", question="why")), ai("because")])
    agent: Any = create_agent(model, [research], checkpointer=InMemorySaver())
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("ask")]}, cfg)
    stored = events(journal, store)
    assert event_types(stored, "message") == [
        "message.human",
        "message.ai",
        "message.tool",
        "message.ai",
    ]
    callers = [e.metadata["caller"] for e in stored if e.event_type == "llm.start"]
    assert callers[0] == "agent" and callers[-1] == "agent"
    assert set(callers[1:-1]) == {"subagent:researcher"} and len(callers) == 4
    assert event_types(stored, "lifecycle") == ["run.start", "run.end"]


def test_keyboard_interrupt_is_run_cancel(journal: RunJournal, store: MemoryEventStore) -> None:
    """A KeyboardInterrupt during a sync run journals run.cancel with its reason."""

    @tool
    def interrupted(x: int) -> int:
        """Simulates Ctrl-C while the tool runs."""
        raise KeyboardInterrupt

    model = ScriptedChatModel([ai("", call("interrupted", x=1)), ai("never")])
    agent: Any = create_agent(model, [interrupted])
    with pytest.raises(KeyboardInterrupt):
        agent.invoke({"messages": [HumanMessage("stop")]}, config(journal))
    stored = events(journal, store)
    assert event_types(stored, "lifecycle") == ["run.start", "run.cancel"]
    assert stored[-1].content["reason"] == "KeyboardInterrupt"


def test_rejected_call_result_from_middleware_keeps_state_order(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A human rejection's tool result (written by the middleware) is journaled in state order."""
    first, second = call("add", a=1, b=1), call("add", a=2, b=2)
    model = ScriptedChatModel([ai("", first, second), ai("done")])
    hitl = HumanInTheLoopMiddleware(interrupt_on={"add": True})
    agent: Any = create_agent(model, [add], checkpointer=InMemorySaver(), middleware=[hitl])
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("add twice")]}, cfg)
    decisions = [{"type": "approve"}, {"type": "reject", "message": "not this one"}]
    agent.invoke(Command(resume={"decisions": decisions}), cfg)
    stored = events(journal, store)
    state = agent.get_state(cfg).values["messages"]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == [
        m.id for m in state
    ]
    rejected = next(
        e
        for e in stored
        if e.event_type == "message.tool" and e.metadata["tool_call_id"] == second["id"]
    )
    assert rejected.metadata["caller"] == "middleware:HumanInTheLoopMiddleware"
    assert rejected.content["data"]["status"] == "error"


def test_parallel_calls_approved_after_interrupt_keep_call_order(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """Calls approved in a resumed run are journaled in call order, not completion order."""
    first = call("slow_add", a=1, b=1, delay=0.3)
    second = call("slow_add", a=2, b=2, delay=0.0)
    model = ScriptedChatModel([ai("", first, second), ai("done")])
    hitl = HumanInTheLoopMiddleware(interrupt_on={"slow_add": True})
    agent: Any = create_agent(model, [slow_add], checkpointer=InMemorySaver(), middleware=[hitl])
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("add")]}, cfg)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "approve"}]}), cfg)
    stored = events(journal, store)
    tools = [e.metadata["tool_call_id"] for e in stored if e.event_type == "message.tool"]
    assert tools == [first["id"], second["id"]]
    state = agent.get_state(cfg).values["messages"]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == [
        m.id for m in state
    ]


@tool
def ask_human(question: str) -> str:
    """Ask a human and return the answer."""
    return str(interrupt(question))


def test_call_interrupted_inside_its_tool_keeps_call_order(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A call whose tool interrupts is answered on resume, before the later calls' results."""
    first, second = call("ask_human", question="ok?"), call("add", a=1, b=2)
    model = ScriptedChatModel([ai("", first, second), ai("done")])
    agent: Any = create_agent(model, [ask_human, add], checkpointer=InMemorySaver())
    cfg = config(journal)
    agent.invoke({"messages": [HumanMessage("ask then add")]}, cfg)
    agent.invoke(Command(resume="yes"), cfg)
    stored = events(journal, store)
    tools = [e.metadata["tool_call_id"] for e in stored if e.event_type == "message.tool"]
    assert tools == [first["id"], second["id"]]
    state = agent.get_state(cfg).values["messages"]
    assert [e.content["data"]["id"] for e in stored if e.category == "message"] == [
        m.id for m in state
    ]


def test_results_held_by_a_paused_run_are_written_at_close(
    store: MemoryEventStore, tmp_path: Path
) -> None:
    """Closing a journal (a restart) while a run is paused keeps the results it held back."""
    first, second = call("ask_human", question="ok?"), call("add", a=1, b=2)
    model = ScriptedChatModel([ai("", first, second), ai("done")])
    agent: Any = create_agent(model, [ask_human, add], checkpointer=InMemorySaver())
    with RunJournal(store, spool_path=tmp_path / "a.jsonl") as before:
        agent.invoke({"messages": [HumanMessage("ask then add")]}, config(before))
    with RunJournal(store, spool_path=tmp_path / "b.jsonl") as after:
        agent.invoke(Command(resume="yes"), config(after))
    stored = store.read("t1")
    tools = [e.metadata["tool_call_id"] for e in stored if e.event_type == "message.tool"]
    assert sorted(tools) == sorted([first["id"], second["id"]])
    assert event_types(stored, "message").count("message.tool") == 2


def test_journal_passed_to_a_nested_call_journals_that_run(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """An agent invoked inside another runnable, journal in its own config, is a journaled run."""
    agent = one_tool_agent()
    outer = RunnableLambda(lambda inputs: agent.invoke(inputs, config(journal)))
    outer.invoke({"messages": [HumanMessage("add 1 and 2")]})
    assert_one_tool_run(events(journal, store))


class _ChainRetriever(BaseRetriever):
    """A retriever that runs a small chain (a nested run the journal must keep inside)."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        chain = RunnableLambda(lambda q: [Document(page_content=q.upper())])
        docs: list[Document] = chain.invoke(query, {"callbacks": run_manager.get_child()})
        return docs


def test_chain_inside_a_retriever_stays_inside_the_run(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A chain run by a retriever inside a tool starts no run of its own."""
    retriever = _ChainRetriever()

    @tool
    def search(query: str) -> str:
        """Search the documents."""
        return retriever.invoke(query)[0].page_content

    model = ScriptedChatModel([ai("", call("search", query="x")), ai("found")])
    agent: Any = create_agent(model, [search], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("find x")]}, config(journal))
    assert event_types(events(journal, store), "lifecycle") == ["run.start", "run.end"]


async def test_work_left_running_after_a_cancel_starts_no_run(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A sync tool still running after its run was cancelled adds no run to the thread."""
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    @tool
    def lingering(x: int) -> str:
        """Runs a chain after its run is gone."""
        started.set()
        release.wait(10)
        RunnableLambda(lambda v: v).invoke(x)
        finished.set()
        return "late"

    model = ScriptedChatModel([ai("", call("lingering", x=1)), ai("never")])
    agent: Any = create_agent(model, [lingering])
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("go")]}, config(journal)))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await asyncio.to_thread(finished.wait, 10)
    assert await journal.aflush(10)
    stored = await store.aread("t1")
    assert event_types(stored, "lifecycle") == ["run.start", "run.cancel"]
