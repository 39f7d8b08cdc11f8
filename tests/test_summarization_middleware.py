"""TrackingSummarizationMiddleware: same behaviour as upstream, plus one event per summarization."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any, cast
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph.message import REMOVE_ALL_MESSAGES

import middleware.summarization as summarization_module
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call
from tests.logs import capture_logs


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city} is a city"


class CustomEvents(BaseCallbackHandler):
    """Collects every custom event a run dispatches."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, dict[str, Any]]] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data, dict(metadata or {})))

    def payloads(self) -> list[dict[str, Any]]:
        return [data for name, data, _ in self.events if name == "summarization"]


def summarizer() -> ScriptedChatModel:
    """A summary model that numbers its summaries."""
    counter = itertools.count(1)
    return ScriptedChatModel(lambda messages: AIMessage(f"summary {next(counter)}"))


def tool_turns(turns: int, tools_per_turn: int = 1) -> list[AIMessage]:
    """A script: ``turns`` answers with tool calls, then a final answer."""
    script = [
        ai("", *[call("lookup", city=f"c{t}-{i}") for i in range(tools_per_turn)])
        for t in range(turns)
    ]
    return [*script, ai("done")]


def build_agent(
    model: ScriptedChatModel, mw: SummarizationMiddleware[Any, Any] | None = None
) -> Any:
    return create_agent(
        model,
        tools=[lookup],
        system_prompt="You are terse.",
        middleware=[mw] if mw is not None else [],
        checkpointer=InMemorySaver(),
    )


def compactions(snapshots: list[list[BaseMessage]]) -> list[tuple[list[str], BaseMessage]]:
    """Each step whose state lost messages: (ids that disappeared, the message that arrived)."""
    found = []
    for before, after in itertools.pairwise(snapshots):
        after_ids = {m.id for m in after}
        gone = [cast(str, m.id) for m in before if m.id not in after_ids]
        if gone:
            before_ids = {m.id for m in before}
            (new,) = [m for m in after if m.id not in before_ids]
            found.append((gone, new))
    return found


def run_sync(agent: Any, text: str, handler: CustomEvents, thread: str = "t") -> list[Any]:
    config: RunnableConfig = {"configurable": {"thread_id": thread}, "callbacks": [handler]}
    return [
        list(chunk["messages"])
        for chunk in agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode="values")
    ]


async def run_async(agent: Any, text: str, handler: CustomEvents, thread: str = "t") -> list[Any]:
    config: RunnableConfig = {"configurable": {"thread_id": thread}, "callbacks": [handler]}
    return [
        list(chunk["messages"])
        async for chunk in agent.astream(
            {"messages": [HumanMessage(text)]}, config, stream_mode="values"
        )
    ]


def check_payloads(payloads: list[dict[str, Any]], snapshots: list[list[BaseMessage]]) -> None:
    """Every compaction of the state has exactly one payload that describes it exactly."""
    seen = compactions(snapshots)
    assert len(payloads) == len(seen)
    for payload, (gone, summary) in zip(payloads, seen, strict=True):
        assert payload["replaced_message_ids"] == gone
        assert payload["replaced_count"] == len(gone)
        assert payload["summary_message"]["data"]["id"] == summary.id
        assert payload["summary_message"]["data"]["content"] == summary.content
        assert payload["summary"] == summary.content
        assert summary.additional_kwargs.get("lc_source") == "summarization"
        assert payload["kept_count"] == len(payload["kept_message_ids"])


def test_no_event_when_below_the_trigger() -> None:
    """A run that never reaches the trigger dispatches no summarization event."""
    mw = TrackingSummarizationMiddleware(summarizer(), trigger=("messages", 50))
    handler = CustomEvents()
    run_sync(build_agent(ScriptedChatModel(tool_turns(2)), mw), "hi", handler)
    assert handler.payloads() == []


def test_each_compaction_dispatches_one_exact_event_sync() -> None:
    """Several compactions in one sync run: one event each, replaced ids = ids that left state."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 5), keep=("messages", 2)
    )
    handler = CustomEvents()
    snapshots = run_sync(build_agent(ScriptedChatModel(tool_turns(5)), mw), "hi", handler)
    payloads = handler.payloads()
    assert len(payloads) >= 2
    check_payloads(payloads, snapshots)
    assert all(p["trigger"] == {"messages": 5} for p in payloads)
    assert [p["summary"] for p in payloads] == [
        f"Here is a summary of the conversation to date:\n\nsummary {i}"
        for i in range(1, len(payloads) + 1)
    ]


async def test_each_compaction_dispatches_one_exact_event_async() -> None:
    """The same under ainvoke-style async streaming: config is injected into abefore_model."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 5), keep=("messages", 2)
    )
    handler = CustomEvents()
    snapshots = await run_async(build_agent(ScriptedChatModel(tool_turns(5)), mw), "hi", handler)
    assert len(handler.payloads()) >= 2
    check_payloads(handler.payloads(), snapshots)
    _, _, metadata = handler.events[0]
    assert metadata["thread_id"] == "t"
    assert metadata["langgraph_node"] == "TrackingSummarizationMiddleware.before_model"


def test_token_trigger_reports_tokens_and_the_clause() -> None:
    """Under a token trigger the payload names that clause and counts tokens before and after."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=[("messages", 1000), ("tokens", 120)], keep=("messages", 2)
    )
    handler = CustomEvents()
    model = ScriptedChatModel(tool_turns(4))
    snapshots = run_sync(build_agent(model, mw), "tell me about cities " * 10, handler)
    payloads = handler.payloads()
    assert payloads
    check_payloads(payloads, snapshots)
    for payload in payloads:
        assert payload["trigger"] == {"tokens": 120}
        assert payload["tokens_before"] >= 120
        assert payload["tokens_before"] > payload["tokens_after"] > 0


def test_tool_results_stay_with_their_ai_call() -> None:
    """A cut that would fall between an AI call and its tool results keeps the pair together."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 6), keep=("messages", 2)
    )
    handler = CustomEvents()
    snapshots = run_sync(
        build_agent(ScriptedChatModel(tool_turns(3, tools_per_turn=3)), mw), "hi", handler
    )
    payloads = handler.payloads()
    check_payloads(payloads, snapshots)
    # keep=2 would cut inside a turn of 3 tool results: the cut moves back to the AI call
    assert any(p["kept_count"] > 2 for p in payloads)
    for state in snapshots:
        call_ids = {c["id"] for m in state if isinstance(m, AIMessage) for c in m.tool_calls}
        for message in state:
            if isinstance(message, ToolMessage):
                assert message.tool_call_id in call_ids


def test_compaction_on_the_first_model_call_of_a_run() -> None:
    """A run whose input crosses the trigger is compacted before its first model call."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 3), keep=("messages", 1)
    )
    handler = CustomEvents()
    model = ScriptedChatModel([ai("one"), ai("two")])
    agent = build_agent(model, mw)
    run_sync(agent, "first", handler)
    assert handler.payloads() == []
    snapshots = run_sync(agent, "second", handler)
    (payload,) = handler.payloads()
    check_payloads([payload], snapshots)
    first_call_of_run_2 = model.calls[1]
    assert first_call_of_run_2[1].id == payload["summary_message"]["data"]["id"]
    assert payload["replaced_count"] == 2  # "first" and "one"; "second" is kept


def test_upstream_middleware_gives_no_event_tracked_one_does() -> None:
    """Same setup: upstream SummarizationMiddleware dispatches nothing, the tracked one does."""
    results = {}
    for cls in (SummarizationMiddleware, TrackingSummarizationMiddleware):
        handler = CustomEvents()
        mw = cls(summarizer(), trigger=("messages", 5), keep=("messages", 2))
        snapshots = run_sync(build_agent(ScriptedChatModel(tool_turns(4)), mw), "hi", handler)
        results[cls] = (handler.payloads(), [[m.content for m in s] for s in snapshots])
    upstream_payloads, upstream_states = results[SummarizationMiddleware]
    tracked_payloads, tracked_states = results[TrackingSummarizationMiddleware]
    assert upstream_payloads == []
    assert len(tracked_payloads) >= 1
    assert tracked_states == upstream_states


class Raising(BaseCallbackHandler):
    """A handler whose custom-event callback raises (and is not swallowed by LangChain)."""

    raise_error = True

    def __init__(self, error: Exception) -> None:
        self.error = error

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        raise self.error


def test_a_failing_dispatch_never_breaks_the_run() -> None:
    """A handler that raises on the event is logged and the run still summarizes and finishes."""
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 5), keep=("messages", 2)
    )
    agent = build_agent(ScriptedChatModel(tool_turns(3)), mw)
    config: RunnableConfig = {
        "configurable": {"thread_id": "t"},
        "callbacks": [Raising(RuntimeError("journal down"))],
    }
    with capture_logs() as logs:
        result = agent.invoke({"messages": [HumanMessage("hi")]}, config)
    assert result["messages"][-1].content == "done"
    failures = [e for e in logs if e["event"] == "summarization_dispatch_failed"]
    assert failures and failures[0]["error_type"] == "RuntimeError"
    assert failures[0]["thread_id"] == "t"
    assert "journal down" not in repr(logs)


def state_over_trigger() -> dict[str, list[AnyMessage]]:
    messages: list[AnyMessage] = []
    for i in range(4):
        messages += [HumanMessage(f"q{i}", id=f"h{i}"), AIMessage(f"a{i}", id=f"a{i}")]
    return {"messages": messages}


def direct_middleware() -> TrackingSummarizationMiddleware:
    return TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 4), keep=("messages", 3)
    )


@pytest.fixture
def failing_dispatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[BaseException], None]]:
    """Make both dispatch functions raise a chosen exception."""

    def arm(error: BaseException) -> None:
        def sync(*args: Any, **kwargs: Any) -> None:
            raise error

        async def asynchronous(*args: Any, **kwargs: Any) -> None:
            raise error

        monkeypatch.setattr(summarization_module, "dispatch_custom_event", sync)
        monkeypatch.setattr(summarization_module, "adispatch_custom_event", asynchronous)

    yield arm


@pytest.mark.parametrize("error", [GraphInterrupt(()), KeyboardInterrupt()])
def test_interrupts_propagate_from_dispatch(
    failing_dispatch: Callable[[BaseException], None], error: BaseException
) -> None:
    """Graph interrupts and KeyboardInterrupt raised while dispatching are not swallowed."""
    failing_dispatch(error)
    with pytest.raises(type(error)):
        direct_middleware().before_model(cast(Any, state_over_trigger()), cast(Any, None))


@pytest.mark.parametrize("error", [GraphInterrupt(()), asyncio.CancelledError()])
async def test_cancellation_propagates_from_async_dispatch(
    failing_dispatch: Callable[[BaseException], None], error: BaseException
) -> None:
    """Cancellation and graph interrupts raised by the async dispatch propagate."""
    failing_dispatch(error)
    with pytest.raises(type(error)):
        await direct_middleware().abefore_model(cast(Any, state_over_trigger()), cast(Any, None))


def test_dispatch_without_a_parent_run_is_swallowed() -> None:
    """Called outside any run (no callbacks, dispatch raises), the hook still returns the update."""
    state = state_over_trigger()
    with capture_logs() as logs:
        update = direct_middleware().before_model(cast(Any, state), cast(Any, None))
    assert update is not None
    assert [e["event"] for e in logs] == ["summarization_dispatch_failed"]


def test_payload_is_computed_from_the_update_not_from_lengths() -> None:
    """replaced = original ids not put back; the summary is the message absent from the state."""
    mw = direct_middleware()
    original = state_over_trigger()["messages"]
    injected = HumanMessage("anything at all")
    update = {
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), original[5], injected, original[7]]
    }
    payload = mw.summarization_payload(original, update)
    assert payload is not None
    assert payload["replaced_message_ids"] == ["h0", "a0", "h1", "a1", "h2", "h3"]
    assert payload["replaced_count"] == 6
    assert payload["kept_message_ids"] == ["a2", "a3"]
    assert injected.id is not None
    assert payload["summary_message"]["data"]["id"] == injected.id
    assert payload["summary"] == "anything at all"
    assert payload["trigger"] == {"messages": 4}
    assert mw.summarization_payload(original, None) is None
    assert mw.summarization_payload(original, {"messages": [AIMessage("x")]}) is None


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_langgraph_injects_the_config_into_both_hooks(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The dispatch receives the run's config (not None) in invoke and in ainvoke."""
    configs: list[Any] = []

    def spy(name: str, data: Any, *, config: Any = None) -> None:
        configs.append(config)

    async def aspy(name: str, data: Any, *, config: Any = None) -> None:
        configs.append(config)

    monkeypatch.setattr(summarization_module, "dispatch_custom_event", spy)
    monkeypatch.setattr(summarization_module, "adispatch_custom_event", aspy)
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 5), keep=("messages", 2)
    )
    agent = build_agent(ScriptedChatModel(tool_turns(3)), mw)
    config: RunnableConfig = {"configurable": {"thread_id": "injected"}}
    if mode == "sync":
        agent.invoke({"messages": [HumanMessage("hi")]}, config)
    else:
        await agent.ainvoke({"messages": [HumanMessage("hi")]}, config)
    assert configs
    assert all(c is not None and c["configurable"]["thread_id"] == "injected" for c in configs)


def _counting(fail_on_summary: bool = False) -> tuple[list[int], Callable[[Any], int]]:
    """A token counter that records its calls (and fails on a list holding a summary)."""
    calls: list[int] = []

    def count(messages: Any) -> int:
        calls.append(len(messages))
        summaries = [m for m in messages if m.additional_kwargs.get("lc_source") == "summarization"]
        if fail_on_summary and summaries:
            raise RuntimeError("counter broke")
        return 10 * len(messages)

    return calls, count


def test_payload_counts_tokens_at_most_twice() -> None:
    """Building the payload counts the state once before and once after the update."""
    calls, count = _counting()
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 4), keep=("messages", 3), token_counter=count
    )
    state = state_over_trigger()
    original = list(state["messages"])
    update = mw.before_model(cast(Any, state), cast(Any, None))
    assert update is not None
    calls.clear()
    payload = mw.summarization_payload(original, update)
    assert payload is not None and payload["trigger"] == {"messages": 4}
    assert len(calls) <= 2


def test_failing_payload_never_breaks_the_run_after_the_summary() -> None:
    """A token counter failing on the summarized state is logged; the summary update stands."""
    _, count = _counting(fail_on_summary=True)
    mw = TrackingSummarizationMiddleware(
        summarizer(), trigger=("messages", 4), keep=("messages", 3), token_counter=count
    )
    with capture_logs() as logs:
        update = mw.before_model(cast(Any, state_over_trigger()), cast(Any, None))
    assert update is not None and isinstance(update["messages"][0], RemoveMessage)
    failures = [e for e in logs if e["event"] == "summarization_dispatch_failed"]
    assert [e["error_type"] for e in failures] == ["RuntimeError"]
