"""RunJournal and middleware: summary markers, the summarizer's own call, record_middleware."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import dispatch_custom_event
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from history import replay
from journal import MemoryEventStore, RunEvent, RunJournal
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call, event_types
from tests.flaky_stores import journal_fixture, store_fixture  # noqa: F401 (fixtures)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def summarizing_run(
    journal: RunJournal,
) -> tuple[Any, dict[str, Any], ScriptedChatModel, ScriptedChatModel]:
    """Three tool rounds with a summarizer that fires once the state has 6 messages."""
    summarizer = ScriptedChatModel(lambda messages: ai("SUMMARY OF EARLIER TURNS"))
    summarizer.model_name = "summarizer-model"
    middleware = TrackingSummarizationMiddleware(
        model=summarizer, trigger=("messages", 6), keep=("messages", 2)
    )
    script = [ai("", call("add", a=i, b=i)) for i in range(3)] + [ai("all done")]
    model = ScriptedChatModel(script)
    agent: Any = create_agent(model, [add], middleware=[middleware], checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    agent.invoke({"messages": [HumanMessage("count")]}, cfg)
    return agent, cfg, summarizer, model


def seq_of(stored: list[RunEvent], message_id: str) -> int:
    """The seq of the message event with ``message_id``."""
    return next(
        e.seq for e in stored if e.category == "message" and e.metadata["message_id"] == message_id
    )


def test_summarization_is_marker_and_custom_trace(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """A summarization is recorded as custom:summarization and as middleware:summarize."""
    summarizing_run(journal)
    journal.flush(10)
    stored = store.read("t1")
    markers = [e for e in stored if e.event_type == "middleware:summarize"]
    customs = [e for e in stored if e.event_type == "custom:summarization"]
    assert len(markers) == 1 and len(customs) == 1
    assert markers[0].content == customs[0].content
    assert markers[0].content["summary"].endswith("SUMMARY OF EARLIER TURNS")
    assert markers[0].metadata["caller"] == "middleware:TrackingSummarizationMiddleware"
    assert markers[0].metadata["langgraph_node"] == "TrackingSummarizationMiddleware.before_model"
    assert isinstance(markers[0].metadata["langgraph_step"], int)


def test_marker_lands_between_replaced_and_later_messages(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """The marker's seq is above every replaced message and below every later message."""
    summarizing_run(journal)
    journal.flush(10)
    stored = store.read("t1")
    marker = next(e for e in stored if e.event_type == "middleware:summarize")
    replaced = marker.content["replaced_message_ids"]
    assert replaced
    assert all(seq_of(stored, mid) < marker.seq for mid in replaced)
    later = [e for e in stored if e.category == "message" and e.seq > marker.seq]
    assert later and not set(replaced) & {e.metadata["message_id"] for e in later}


def test_summarizer_call_is_trace_only(journal: RunJournal, store: MemoryEventStore) -> None:
    """The summarizer's own model call is a middleware trace, never a message.ai."""
    _, _, summarizer, _ = summarizing_run(journal)
    journal.flush(10)
    stored = store.read("t1")
    assert len(summarizer.calls) == 1
    summary_calls = [
        e
        for e in stored
        if e.event_type == "llm.start" and e.metadata["lc_source"] == "summarization"
    ]
    assert len(summary_calls) == 1
    assert summary_calls[0].metadata["caller"] == "middleware:TrackingSummarizationMiddleware"
    assert summary_calls[0].metadata["model"] == "summarizer-model"
    answers = [e.content["data"]["content"] for e in stored if e.event_type == "message.ai"]
    assert "SUMMARY OF EARLIER TURNS" not in answers
    assert len(answers) == 4


def test_agent_llm_start_carries_sent_message_ids(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """Each agent llm.start lists the ids of exactly the messages that model call received."""
    agent, cfg, _, model = summarizing_run(journal)
    journal.flush(10)
    stored = store.read("t1")
    starts = [e for e in stored if e.event_type == "llm.start" and e.metadata["caller"] == "agent"]
    sent = [[m.id for m in messages] for messages in model.calls]
    recorded = [[m.id for m in replay(store, "t1", upto_seq=e.seq, view="model")] for e in starts]
    assert recorded == sent
    final_state_ids = [m.id for m in agent.get_state(cfg).values["messages"]]
    assert sent[-1] == final_state_ids[:-1]


def test_record_middleware_adds_middleware_event(
    journal: RunJournal, store: MemoryEventStore
) -> None:
    """record_middleware from inside a hook adds middleware:<tag> to the hook's run."""

    class Redactor(AgentMiddleware):
        def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
            journal.record_middleware(
                "redact", name="Redactor", hook="before_model", action="redacted", changes=2
            )
            return None

    agent = create_agent(ScriptedChatModel([ai("ok")]), [], middleware=[Redactor()])
    agent.invoke(
        {"messages": [HumanMessage("x")]},
        {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
    )
    journal.flush(10)
    stored = store.read("t1")
    assert event_types(stored, "middleware") == ["middleware:redact"]
    event = next(e for e in stored if e.category == "middleware")
    assert event.content == {
        "name": "Redactor",
        "hook": "before_model",
        "action": "redacted",
        "changes": 2,
    }
    assert event.metadata["caller"] == "middleware:Redactor"
    assert event.metadata["langgraph_node"] == "Redactor.before_model"


def test_record_middleware_outside_a_run_says_what_to_do(journal: RunJournal) -> None:
    """record_middleware outside any hook raises ValueError explaining how to call it."""
    with pytest.raises(ValueError, match="inside a hook"):
        journal.record_middleware("x", name="n", hook="h", action="a")
    with pytest.raises(ValueError, match="tag"):
        journal.record_middleware("bad tag", name="n", hook="h", action="a")


def test_custom_event_with_any_name_is_traced(journal: RunJournal, store: MemoryEventStore) -> None:
    """A custom event becomes custom:<tag> with unusable characters replaced, data kept."""

    class Announcer(AgentMiddleware):
        def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
            dispatch_custom_event("progress report!", {"done": 1})
            return None

    agent: Any = create_agent(ScriptedChatModel([ai("ok")]), [], middleware=[Announcer()])
    agent.invoke(
        {"messages": [HumanMessage("x")]},
        {"configurable": {"thread_id": "t1"}, "callbacks": [journal]},
    )
    journal.flush(10)
    custom = [e for e in store.read("t1") if e.event_type.startswith("custom:")]
    assert [e.event_type for e in custom] == ["custom:progress_report_"]
    assert custom[0].content == {"done": 1}
    assert custom[0].metadata["name"] == "progress report!"
    assert custom[0].metadata["caller"] == "middleware:Announcer"


def test_subagent_summarization_is_trace_only(journal: RunJournal, store: MemoryEventStore) -> None:
    """A subagent's summarization inside a tool is a trace, never a marker of the parent thread."""
    sub_middleware = TrackingSummarizationMiddleware(
        ScriptedChatModel(lambda messages: ai("sub summary")),
        trigger=("messages", 4),
        keep=("messages", 2),
    )
    sub_script = [ai("", call("add", a=1, b=i)) for i in range(3)] + [ai("two")]
    sub: Any = create_agent(ScriptedChatModel(sub_script), [add], middleware=[sub_middleware])

    @tool
    def research(question: str) -> str:
        """Ask the research subagent."""
        return str(sub.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

    model = ScriptedChatModel([ai("", call("research", question="why")), ai("because")])
    agent: Any = create_agent(model, [research], checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    agent.invoke({"messages": [HumanMessage("ask")]}, cfg)
    journal.flush(10)
    stored = store.read("t1")
    assert event_types(stored).count("custom:summarization") >= 1
    assert "middleware:summarize" not in event_types(stored)
    state = agent.get_state(cfg).values["messages"]
    assert replay(store, "t1", view="state") == state


@pytest.mark.parametrize(
    "tag", [".dot_first", "-dash", "/slash", ":colon", "a b", "x\n", "", "x" * 200]
)
def test_record_middleware_rejects_at_the_call_what_the_store_would_drop(
    journal: RunJournal, tag: str
) -> None:
    """A tag the store's event_type rule rejects raises ValueError at the call."""
    with pytest.raises(ValueError, match="not a middleware tag"):
        journal.record_middleware(tag, name="n", hook="h", action="a", config={})
