"""The journaled thread the viewer is shown on: real ``create_agent`` runs that do everything
the viewer has to show (built here; the checks below pin down that the thread really holds it).

Six runs of one agent (a scripted model that records every input it receives), journaled by
``RunJournal``:

1. a research question (hostile markup in it): the agent calls ``research``, a tool that runs
   a ``create_agent`` subagent with a tool of its own;
2. a lookup whose tool fails (a ``wrap_tool_call`` middleware turns the exception into an
   error result, as retry/fallback middleware does) next to a tool whose name is markup;
3. two ordinary turns: LangChain's stock ``SummarizationMiddleware`` compacts the thread and
   ``ContextEditingMiddleware`` clears old tool results in the model's requests (request-only
   edits); a middleware injects a hidden (``hide_from_ui``) context message;
4. "forget": a middleware removes two messages by id (``RemoveMessage``);
5. a tool that raises: the run fails (its error text is markup too).

Models: the agent's is named with markup; the subagent's and the summarizer's are others.
Token usage grows with the input, so every call reports other numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from journal import MemoryEventStore, RunEvent, RunEventStore, RunJournal
from tests.fakes import ScriptedChatModel, ai, call
from tests.http_data import XSS

THREAD: Final = "viewer-rich"
AGENT_MODEL: Final = f"agent-model {XSS}"
SUB_MODEL: Final = "researcher-model"
MARKUP_TOOL: Final = f"lookup{XSS}"
RUN_ERROR: Final = f"exploded {XSS}"
QUESTIONS: Final = (
    f"Research tides {XSS} please",
    "Look up the harbour and the weather",
    "What did the research say?",
    "And the weather tomorrow?",
    "Please forget the weather part",
    "Now blow up",
)


def _reply(content: str, *calls: dict[str, Any]) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    """An answer whose reported input tokens grow with the input (100 per message)."""

    def step(messages: Sequence[BaseMessage]) -> AIMessage:
        n = len(messages)
        usage = {"input_tokens": 100 * n, "output_tokens": 7 + n, "total_tokens": 107 * n + 7}
        return AIMessage(content, tool_calls=list(calls), usage_metadata=usage)  # type: ignore[arg-type]

    return step


def agent_script() -> list[Any]:
    """The lead agent's answers, one per model call, in order."""
    return [
        _reply("", call("research", "c-research", question="tides")),
        _reply("The tides turn twice a day."),
        _reply("", call("flaky", "c-flaky", place="harbour"), call(MARKUP_TOOL, "c-markup", q=1)),
        _reply(f"The harbour lookup failed; the weather is {XSS} fine."),
        _reply("The research said the tides turn twice a day."),
        _reply("", call("weather", "c-weather", day="tomorrow")),
        _reply("Tomorrow it rains."),
        _reply("Done: I forgot it."),
        _reply("", call("explode", "c-explode")),
    ]


class FailureToResult(AgentMiddleware[Any, Any]):
    """Turns a ``ValueError`` of a tool into an error result (the run goes on)."""

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(request)
        except ValueError as e:
            return _failed(request, e)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        try:
            return await handler(request)
        except ValueError as e:
            return _failed(request, e)


def _failed(request: Any, error: Exception) -> ToolMessage:
    call_ = request.tool_call
    return ToolMessage(
        f"failed: {error}", tool_call_id=call_["id"], name=call_["name"], status="error"
    )


class HiddenContext(AgentMiddleware[Any, Any]):
    """Before the model answers the weather question, injects a hidden context message."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, HumanMessage) and "weather tomorrow" in str(last.content):
            note = HumanMessage(
                "(context: the user is in Porto)", additional_kwargs={"hide_from_ui": True}
            )
            return {"messages": [note]}
        return None


class Forget(AgentMiddleware[Any, Any]):
    """On "forget", removes the weather question's tool call and result by id."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1]
        if not (isinstance(last, HumanMessage) and "forget" in str(last.content)):
            return None
        gone = [
            m
            for m in messages
            if (isinstance(m, AIMessage) and any(c["name"] == "weather" for c in m.tool_calls))
            or (isinstance(m, ToolMessage) and m.name == "weather")
        ]
        return {"messages": [RemoveMessage(id=str(m.id)) for m in gone]} if gone else None


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def flaky(place: str) -> str:
    """Looks a place up; the service is down."""
    raise ValueError(f"lookup service down for {place}")


@tool
def weather(day: str) -> str:
    """The weather of a day."""
    return f"rain {day}"


@tool
def explode() -> str:
    """Always fails, beyond what the middleware handles."""
    raise RuntimeError(RUN_ERROR)


def _markup_tool() -> StructuredTool:
    def lookup(q: int) -> str:
        return f"found {q} {XSS}"

    return StructuredTool.from_function(lookup, name=MARKUP_TOOL, description="Look up.")


@dataclass
class RichThread:
    """The journaled thread, and what each model actually received."""

    store: RunEventStore
    thread_id: str
    model: ScriptedChatModel
    sub_model: ScriptedChatModel
    summarizer: ScriptedChatModel
    run_ids: list[str] = field(default_factory=list)

    def events(self, event_type: str | list[str] | None = None) -> list[RunEvent]:
        """The thread's events (of ``event_type``)."""
        return self.store.read(self.thread_id, event_type=event_type)

    def agent_starts(self) -> list[RunEvent]:
        """The ``llm.start`` events of the lead agent's calls, in order."""
        return [e for e in self.events("llm.start") if e.metadata.get("caller") == "agent"]


def build_rich_thread(store: RunEventStore, tmp_path: Path, thread_id: str = THREAD) -> RichThread:
    """Run the six turns into ``store`` (see the module docstring)."""
    sub_model = ScriptedChatModel(
        [_reply("", call("add", "c-add", a=2, b=2)), _reply("Tides: twice a day (2+2=4).")],
        model_name=SUB_MODEL,
    )
    researcher = create_agent(sub_model, [add], name="researcher")

    @tool
    def research(question: str) -> str:
        """Ask the research subagent."""
        result = researcher.invoke({"messages": [HumanMessage(question)]})
        return str(result["messages"][-1].content)

    counter = itertools.count(1)
    summarizer = ScriptedChatModel(
        lambda messages: AIMessage(f"summary {next(counter)}: tides, harbour, weather"),
        model_name="summary-model",
    )
    model = ScriptedChatModel(agent_script(), model_name=AGENT_MODEL)
    agent = create_agent(
        model,
        [research, flaky, _markup_tool(), weather, explode],
        system_prompt="You help sailors.",
        middleware=[
            FailureToResult(),
            HiddenContext(),
            SummarizationMiddleware(summarizer, trigger=("messages", 12), keep=("messages", 4)),
            Forget(),
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=60, keep=1)]),
        ],
        checkpointer=InMemorySaver(),
    )
    journal = RunJournal(store, spool_path=tmp_path / "viewer-spool.jsonl")
    thread = RichThread(store, thread_id, model, sub_model, summarizer)
    config: Any = {"configurable": {"thread_id": thread_id}, "callbacks": [journal]}
    try:
        for question in QUESTIONS:
            try:
                agent.invoke({"messages": [HumanMessage(question)]}, config)
            except RuntimeError as e:
                assert str(e) == RUN_ERROR
        assert journal.flush(timeout=10)
    finally:
        journal.close()
    thread.run_ids = [r.run_id for r in store.list_runs(thread_id)]
    return thread


def build_truncated_thread(tmp_path: Path, thread_id: str = "cut") -> MemoryEventStore:
    """A store with a small message cap and one real run whose 10,000-character question the
    store cuts to fit it."""
    store = MemoryEventStore(content_caps={"message": 3000, "trace": 16384})
    agent = create_agent(ScriptedChatModel([ai("noted")]), [], checkpointer=InMemorySaver())
    journal = RunJournal(store, spool_path=tmp_path / "cut-spool.jsonl")
    config: Any = {"configurable": {"thread_id": thread_id}, "callbacks": [journal]}
    try:
        agent.invoke({"messages": [HumanMessage("x" * 10_000)]}, config)
    finally:
        journal.close()
    return store


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> RichThread:
    """The rich thread in a memory store."""
    return build_rich_thread(MemoryEventStore(), tmp_path_factory.mktemp("rich"))


def test_the_thread_holds_everything_the_viewer_must_show(rich: RichThread) -> None:
    """A subagent inside a tool, a failed tool, a compaction, a removal, a request-only edit,
    a hidden message and a failed run are all journaled."""
    starts = rich.events("llm.start")
    callers = {e.metadata["caller"] for e in starts}
    assert {"agent", "subagent:researcher", "middleware:SummarizationMiddleware"} <= callers
    assert any(e.event_type == "tool.error" for e in rich.events(["tool.error"]))
    tools = [e.content["data"] for e in rich.events("message.tool")]
    assert any(t["status"] == "error" and t["name"] == "flaky" for t in tools)
    assert len(rich.events("middleware:summarize")) >= 1
    removals = rich.events("message.remove")
    assert any(e.content.get("removed_message_ids") for e in removals)
    humans = [e.content["data"] for e in rich.events("message.human")]
    assert any(h["additional_kwargs"].get("hide_from_ui") for h in humans)
    statuses = [r.status for r in rich.store.list_runs(rich.thread_id)]
    assert statuses == ["success"] * 5 + ["error"]
    assert len(rich.agent_starts()) == len(rich.model.calls) == len(agent_script())
    assert len(rich.sub_model.calls) == 2 and len(rich.summarizer.calls) >= 1


def test_some_model_request_was_edited_by_context_editing(rich: RichThread) -> None:
    """ClearToolUsesEdit cleared a tool result in at least one request (not in the state)."""
    cleared = [
        m
        for received in rich.model.calls
        for m in received
        if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing")
    ]
    assert cleared, "no request-only edit happened"
