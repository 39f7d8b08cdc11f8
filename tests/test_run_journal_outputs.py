"""What any model said, who said it, what it cost: llm.end outputs, callers, hidden, usage."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, wrap_model_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from history import replay
from journal import MemoryEventStore, RunEvent, RunJournal
from tests.fakes import ScriptedChatModel, ai, call, routed_ai
from tests.flaky_stores import journal_fixture, store_fixture  # noqa: F401 (fixtures)

HIDDEN_CONTEXT = "Context for the agent: the user prefers metric units."


def model(script: Any, name: str) -> ScriptedChatModel:
    """A scripted chat model that names itself ``name`` in its requests."""
    fake = ScriptedChatModel(script)
    fake.model_name = name
    return fake


class TitleMiddleware(AgentMiddleware):
    """Names the conversation with its own model before the agent starts (a title generator)."""

    def __init__(self, titler: ScriptedChatModel) -> None:
        super().__init__()
        self.titler = titler

    def before_agent(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.titler.invoke([HumanMessage(f"Title for: {state['messages'][0].content}")])
        return None

    async def abefore_agent(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        await self.titler.ainvoke([HumanMessage(f"Title for: {state['messages'][0].content}")])
        return None


class ContextMiddleware(AgentMiddleware):
    """Adds a hidden context message before the first model call (DeerFlow's convention)."""

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        if any(m.additional_kwargs.get("hide_from_ui") for m in state["messages"]):
            return None
        hidden = HumanMessage(HIDDEN_CONTEXT, additional_kwargs={"hide_from_ui": True})
        return {"messages": [hidden]}

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_model(state, runtime)


def lead_with_everything() -> tuple[Any, dict[str, ScriptedChatModel]]:
    """A lead agent behind a model router, a subagent called inside a tool, a title
    middleware with its own model, and a middleware that adds hidden context."""
    sub = create_agent(
        model([ai("", call("lookup", key="rain")), ai("It rains 40 mm.")], "sub-model"),
        [lookup],
        name="researcher",
    )

    @tool
    def research(question: str) -> str:
        """Ask the research subagent."""
        return str(sub.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

    models = {
        "lead": model(
            [routed_ai("", call("research", question="rain?")), routed_ai("40 mm of rain.")],
            "router-alias",
        ),
        "title": model([ai("Rain in the city")], "title-model"),
    }
    middleware = [TitleMiddleware(models["title"]), ContextMiddleware()]
    agent = create_agent(
        models["lead"], [research], middleware=middleware, checkpointer=InMemorySaver()
    )
    return agent, models


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key}: 40 mm"


def stored(journal: RunJournal, store: MemoryEventStore, thread: str = "t1") -> list[RunEvent]:
    """Every stored event of ``thread`` after a flush."""
    assert journal.flush(10)
    return store.read(thread)


def answer_texts(events: list[RunEvent]) -> list[Any]:
    """The content of each message.ai event, in order."""
    return [e.content["data"]["content"] for e in events if e.event_type == "message.ai"]


def answers_of(events: list[RunEvent]) -> dict[str, tuple[RunEvent, list[RunEvent]]]:
    """Per model call: its llm.end and the message.ai events journaling its answer."""
    ends = [e for e in events if e.event_type == "llm.end"]
    return {
        e.metadata["llm_run_id"]: (
            e,
            [
                m
                for m in events
                if m.event_type == "message.ai"
                and m.content["data"]["id"] == e.content["message_id"]
            ],
        )
        for e in ends
    }


def assert_every_answer_journaled_once(events: list[RunEvent]) -> None:
    """Each model call's answer is in the journal as message.ai or as llm.end output, once."""
    for end, messages in answers_of(events).values():
        kept = "output" in end.content
        assert kept != bool(messages), (end.metadata["caller"], end.content)
        assert len(messages) <= 1
        if kept:
            assert end.content["output"]["data"]["id"] == end.content["message_id"]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_every_model_output_is_journaled_once_with_its_caller(
    journal: RunJournal, store: MemoryEventStore, mode: str
) -> None:
    """Lead answers are message.ai; the subagent's and the title model's answers are kept
    on their llm.end (caller named), never both; hidden context is marked hidden."""
    agent, _ = lead_with_everything()
    cfg: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    inputs = {"messages": [HumanMessage("How much rain?")]}
    if mode == "invoke":
        agent.invoke(inputs, cfg)
    else:
        await agent.ainvoke(inputs, cfg)
    events = stored(journal, store)
    assert_every_answer_journaled_once(events)
    by_caller: dict[str, list[RunEvent]] = {}
    for end, _ in answers_of(events).values():
        by_caller.setdefault(end.metadata["caller"], []).append(end)
    assert sorted(by_caller) == [
        "agent",
        "middleware:TitleMiddleware",
        "subagent:researcher",
    ]
    assert all("output" not in e.content for e in by_caller["agent"])
    assert len(by_caller["agent"]) == 2
    (title,) = by_caller["middleware:TitleMiddleware"]
    assert title.content["output"]["data"]["content"] == "Rain in the city"
    sub_texts = [e.content["output"]["data"]["content"] for e in by_caller["subagent:researcher"]]
    assert sub_texts == ["", "It rains 40 mm."]
    assert by_caller["subagent:researcher"][0].content["tool_call_count"] == 1
    messages = [e for e in events if e.category == "message" and e.event_type != "message.remove"]
    seen = [
        (e.event_type, e.metadata["caller"], e.metadata["hidden"], e.content["data"]["content"])
        for e in messages
    ]
    assert seen == [
        ("message.human", "user", False, "How much rain?"),
        ("message.human", "middleware:ContextMiddleware", True, HIDDEN_CONTEXT),
        ("message.ai", "agent", False, ""),
        ("message.tool", "agent", False, "It rains 40 mm."),
        ("message.ai", "agent", False, "40 mm of rain."),
    ]
    state = agent.get_state(cfg).values["messages"]
    assert replay(store, "t1", view="state") == state


def test_usage_is_counted_under_the_model_the_response_names(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A router's answers count under the billed model: total = input + output when reported
    as 0, cache reads and writes and reasoning tokens kept; the request's model is kept too."""
    agent, _ = lead_with_everything()
    agent.invoke(
        {"messages": [HumanMessage("How much rain?")]},
        {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
    )
    events = stored(journal, store)
    lead = [e for e in events if e.event_type == "llm.end" and e.metadata["caller"] == "agent"]
    for end in lead:
        assert end.metadata["model"] == "provider-model-2025"
        assert end.metadata["request_model"] == "router-alias"
        assert end.metadata["usage"] == {
            "input_tokens": 120,
            "output_tokens": 30,
            "total_tokens": 150,
            "cache_read_tokens": 80,
            "cache_creation_tokens": 16,
            "reasoning_tokens": 12,
        }
    sub = [e for e in events if e.event_type == "llm.end" and e.metadata["caller"] != "agent"]
    assert {(e.metadata["model"], e.metadata["request_model"]) for e in sub} == {
        ("sub-model", "sub-model"),
        ("title-model", "title-model"),
    }
    end = next(e for e in events if e.event_type == "run.end").content
    by_model = end["usage_by_model"]
    assert sorted(by_model) == ["provider-model-2025", "sub-model", "title-model"]
    assert by_model["provider-model-2025"] == {
        "calls": 2,
        "input_tokens": 240,
        "output_tokens": 60,
        "total_tokens": 300,
        "cache_read_tokens": 160,
        "cache_creation_tokens": 32,
        "reasoning_tokens": 24,
    }
    assert by_model["sub-model"]["calls"] == 2 and by_model["title-model"]["calls"] == 1
    assert by_model["sub-model"]["total_tokens"] == 2 * 15
    assert end["usage"]["total_tokens"] == 300 + 3 * 15
    assert end["usage"]["reasoning_tokens"] == 24


def test_an_answer_a_middleware_replaces_is_kept_on_its_llm_end(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """When wrap_model_call puts another message in the state, the model's own answer is
    kept on llm.end and the replacement is the message.ai."""

    @wrap_model_call
    def redact(request: Any, handler: Any) -> Any:
        handler(request)  # the model answers; the state gets something else
        return AIMessage("[redacted]")

    agent: Any = create_agent(model([ai("the secret is 42")], "m"), [], middleware=[redact])
    agent.invoke(
        {"messages": [HumanMessage("secret?")]},
        {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
    )
    events = stored(journal, store)
    assert_every_answer_journaled_once(events)
    (end,) = [e for e in events if e.event_type == "llm.end"]
    assert end.content["output"]["data"]["content"] == "the secret is 42"
    answers = [e.content["data"]["content"] for e in events if e.event_type == "message.ai"]
    assert answers == ["[redacted]"]


def test_graph_nodes_that_call_models_keep_what_they_do_not_write(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A router node's classification (not written) is kept on llm.end; the answer a node
    writes after a pause is its message.ai alone, the writer waiting for the node to end."""
    classifier = model([ai("weather")], "classifier")
    answerer = model([ai("Sunny.")], "answerer")

    def route(state: MessagesState) -> dict[str, Any]:
        classifier.invoke(state["messages"])
        return {}

    def answer(state: MessagesState) -> dict[str, Any]:
        reply = answerer.invoke(state["messages"])
        time.sleep(0.3)  # longer than the writer's flush interval
        return {"messages": [reply]}

    graph = StateGraph(MessagesState)
    graph.add_node("route", route)
    graph.add_node("answer", answer)
    graph.add_edge(START, "route")
    graph.add_edge("route", "answer")
    graph.add_edge("answer", END)
    app: Any = graph.compile(checkpointer=InMemorySaver())
    app.invoke(
        {"messages": [HumanMessage("weather?")]},
        {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
    )
    events = stored(journal, store)
    assert_every_answer_journaled_once(events)
    ends = {e.metadata["model"]: e for e in events if e.event_type == "llm.end"}
    assert ends["classifier"].content["output"]["data"]["content"] == "weather"
    assert "output" not in ends["answerer"].content
    assert [e.content["data"]["content"] for e in events if e.event_type == "message.ai"] == [
        "Sunny."
    ]


def test_a_subgraph_node_loses_no_model_output(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A compiled agent used as a node: every answer of its model is in the journal."""
    researcher = create_agent(
        model([ai("", call("lookup", key="x")), ai("done")], "sub"), [lookup], name="researcher"
    )
    graph = StateGraph(MessagesState)
    graph.add_node("researcher", researcher)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", END)
    app: Any = graph.compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    app.invoke({"messages": [HumanMessage("look x up")]}, cfg)
    events = stored(journal, store)
    journaled = {e.content["data"]["id"] for e in events if e.event_type == "message.ai"}
    for end, _ in answers_of(events).values():
        assert "output" in end.content or end.content["message_id"] in journaled
    state_ids = [m.id for m in app.get_state(cfg).values["messages"]]
    assert [e.content["data"]["id"] for e in events if e.category == "message"] == state_ids


def test_a_long_output_is_capped_and_marked(tmp_path: Path) -> None:
    """A subagent's long answer on llm.end is cut by the store's cap and marked truncated."""
    store = MemoryEventStore(content_caps={"trace": 2048, "message": 2048})
    long_text = "rain " * 2000

    @tool
    def ask(question: str) -> str:
        """Ask a model directly."""
        return str(model([ai(long_text)], "inner").invoke([HumanMessage(question)]).content)

    agent: Any = create_agent(model([ai("", call("ask", question="q")), ai("ok")], "lead"), [ask])
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        agent.invoke(
            {"messages": [HumanMessage("go")]},
            {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
        )
    (inner,) = [
        e for e in store.read("t1") if e.event_type == "llm.end" and e.metadata["model"] == "inner"
    ]
    assert inner.metadata["truncated"] is True
    assert inner.metadata["original_bytes"] > 10_000
    assert len(str(inner.content)) < 4096


class _HeldStore(MemoryEventStore):
    """A store whose appends wait until released (``entered`` is set when one waits)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def _append(self, events: Any) -> Any:
        self.entered.set()
        assert self.release.wait(10)
        return super()._append(events)


class _Editor(AgentMiddleware):
    """Edits the model's answer in place after the model call, without writing it back."""

    def __init__(self, before_edit: Any) -> None:
        super().__init__()
        self.before_edit = before_edit

    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.before_edit()
        last: BaseMessage = state["messages"][-1]
        last.content = "edited in place"
        return None


def test_an_answer_edited_in_place_is_journaled_as_the_writer_finds_it(tmp_path: Path) -> None:
    """A message is converted when the writer writes its event: an in-place edit made
    before that (the writer busy) is in the journal, one made after a flush() is not."""
    held = _HeldStore()
    with RunJournal(held, spool_path=tmp_path / "a.jsonl") as journal:

        class Busy(AgentMiddleware):
            def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
                journal.flush(timeout=0)  # the writer takes what is queued and blocks in append
                assert held.entered.wait(10)
                return None

        agent: Any = create_agent(
            model([ai("original")], "m"), [], middleware=[Busy(), _Editor(lambda: None)]
        )
        agent.invoke(
            {"messages": [HumanMessage("hi")]},
            {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
        )
        held.release.set()
    answers = [
        e.content["data"]["content"] for e in held.read("t1") if e.event_type == "message.ai"
    ]
    assert answers == ["edited in place"]

    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "b.jsonl") as journal:
        agent = create_agent(
            model([ai("original")], "m"), [], middleware=[_Editor(lambda: journal.flush(10))]
        )
        agent.invoke(
            {"messages": [HumanMessage("hi")]},
            {"configurable": {"thread_id": "t2"}, "callbacks": [journal]},
        )
    answers = [
        e.content["data"]["content"] for e in store.read("t2") if e.event_type == "message.ai"
    ]
    assert answers == ["original"]


def test_a_node_that_runs_on_after_its_call_does_not_hold_the_journal(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """The writer waits for a node to say whether it writes its model's answer, but not
    without bound: the call's llm.end is stored while the node still runs."""
    go_on = threading.Event()
    thinker = model([ai("a thought")], "thinker")

    def think(state: MessagesState) -> dict[str, Any]:
        thinker.invoke(state["messages"])
        assert go_on.wait(20)
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("think", think)
    graph.add_edge(START, "think")
    graph.add_edge("think", END)
    app: Any = graph.compile()
    cfg = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    runner = threading.Thread(target=app.invoke, args=({"messages": [HumanMessage("hm")]}, cfg))
    runner.start()
    deadline = time.monotonic() + 15
    while not store.read("t1", event_type="llm.end") and time.monotonic() < deadline:
        time.sleep(0.05)
    ends = store.read("t1", event_type="llm.end")
    still_running = runner.is_alive()
    go_on.set()
    runner.join(10)
    assert still_running and len(ends) == 1
    assert ends[0].content["output"]["data"]["content"] == "a thought"
