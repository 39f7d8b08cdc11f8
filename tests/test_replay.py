"""replay and restore_thread on hand-written journal events (exact model view, invariant 6)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph

from history import ThreadNotFoundError, areplay, arestore_thread, replay, restore_thread
from journal import MemoryEventStore
from tests.fakes import ScriptedChatModel, ai
from tests.logs import capture_logs
from tests.test_timeline import OPS, ThreadBuilder, sample_thread


def shape(messages: list[BaseMessage]) -> list[tuple[str, Any, str | None]]:
    return [(m.type, m.content, m.id) for m in messages]


def test_model_view_at_each_model_call_is_the_state_it_saw() -> None:
    """For every llm.start, the model view up to its seq equals the state at that call."""
    b = sample_thread()
    assert len(b.model_views) >= 6
    for seq, state in b.model_views.items():
        assert replay(b.store, "t", upto_seq=seq, view="model") == state


def test_full_view_is_every_message_in_order() -> None:
    """The full view is every journaled message, summaries excluded, and stops at upto_seq."""
    b = sample_thread()
    assert replay(b.store, "t") == b.full
    assert replay(b.store, "t", view="full") == b.full
    cut = b.seq_of[str(b.full[4].id)]
    assert replay(b.store, "t", upto_seq=cut) == b.full[:5]
    assert replay(b.store, "t", upto_seq=0) == []


def test_model_view_at_the_end_is_the_final_state() -> None:
    """With no upto_seq the model view is the last state: summary, kept and later messages."""
    b = sample_thread()
    final = replay(b.store, "t", view="model")
    assert final == b.state
    assert final[0].additional_kwargs["lc_source"] == "summarization"


def test_a_message_with_a_known_id_replaces_it() -> None:
    """Like add_messages, a message re-added with the same id replaces it in place."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.human("one")
    b.message(HumanMessage("edited", id=b.state[0].id))
    b.human("two")
    assert shape(replay(b.store, "t", view="model")) == shape(b.state)
    assert [m.content for m in b.state] == ["edited", "two"]
    assert len(replay(b.store, "t")) == 3


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=OPS,
    keep=st.integers(min_value=0, max_value=5),
)
def test_replay_is_exact_for_any_thread(ops: list[str], keep: int) -> None:
    """Whatever the mix of runs, tool turns and compactions, every model view is exact."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.play(ops, keep)
    for seq, state in b.model_views.items():
        assert replay(b.store, "t", upto_seq=seq, view="model") == state
    assert replay(b.store, "t", view="model") == b.state
    assert replay(b.store, "t") == b.full


def test_a_kept_message_missing_from_the_journal_is_logged() -> None:
    """A kept id the journal never recorded is skipped and logged, without its content."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.human("secret words")
    b.turn()
    b.state.append(HumanMessage("never journaled", id="ghost"))
    b.compact(keep=2)
    with capture_logs() as logs:
        messages = replay(b.store, "t", view="model")
    assert [m.id for m in messages[1:]] == [b.state[1].id]
    (entry,) = [e for e in logs if e["event"] == "replay_kept_message_missing"]
    assert entry["count"] == 1
    assert "never journaled" not in repr(logs)


def test_unknown_thread_and_bad_arguments() -> None:
    """Unknown thread -> ThreadNotFoundError; bad view or upto_seq -> ValueError/TypeError."""
    store = sample_thread().store
    with pytest.raises(ThreadNotFoundError):
        replay(store, "missing")
    with pytest.raises(ValueError, match="view"):
        replay(store, "t", view="everything")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="upto_seq"):
        replay(store, "t", upto_seq=-1)
    with pytest.raises(TypeError):
        replay(store, "t", upto_seq="3")  # type: ignore[arg-type]


async def test_async_replay_matches_sync() -> None:
    """areplay returns what replay returns, in both views."""
    b = sample_thread()
    for seq in [None, *b.model_views]:
        for view in ("full", "model"):
            expected = replay(b.store, "t", upto_seq=seq, view=view)
            got = await areplay(b.store, "t", upto_seq=seq, view=view)
            assert got == expected


def test_restore_thread_seeds_an_empty_checkpointer() -> None:
    """After restore_thread a fresh checkpointer's thread continues from the model view."""
    b = sample_thread()
    model = ScriptedChatModel([ai("continued")])
    agent = create_agent(model, tools=[], system_prompt="sys", checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "restored"}}
    restore_thread(b.store, "t", agent, config)
    agent.invoke({"messages": [HumanMessage("next question")]}, config)
    (sent,) = model.calls
    assert shape(sent[1:-1]) == shape(b.state)
    assert sent[-1].content == "next question"


async def test_arestore_thread_replaces_stale_state() -> None:
    """The async variant overwrites whatever the thread held with exactly the model view."""
    b = sample_thread()
    model = ScriptedChatModel([ai("stale answer"), ai("continued")])
    agent = create_agent(model, tools=[], system_prompt="sys", checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    await agent.ainvoke({"messages": [HumanMessage("stale")]}, config)
    await arestore_thread(b.store, "t", agent, config)
    state = await agent.aget_state(config)
    assert shape(state.values["messages"]) == shape(b.state)


def _plain_messages_graph() -> Any:
    """A graph whose ``messages`` channel has no reducer (the last value wins)."""

    class State(TypedDict):
        messages: list[BaseMessage]

    builder = StateGraph(State)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    return builder.compile(checkpointer=InMemorySaver())


def _functional_graph() -> Any:
    @entrypoint(checkpointer=InMemorySaver())
    def agent(question: str) -> str:
        return question

    return agent


def _added_messages_graph() -> Any:
    """A graph whose ``messages`` reducer is ``operator.add`` (it keeps a RemoveMessage)."""

    class State(TypedDict):
        messages: Annotated[list[BaseMessage], operator.add]

    builder = StateGraph(State)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("make", [_plain_messages_graph, _functional_graph, _added_messages_graph])
async def test_restore_thread_refuses_a_graph_without_a_messages_reducer(make: Any) -> None:
    """A graph with no ``messages`` reducer that clears (which would store the seed's clearing
    as a message) gets a clear error, sync and async, and its thread is left alone."""
    b = sample_thread()
    graph = make()
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match="'messages' channel with a reducer"):
        restore_thread(b.store, "t", graph, config)
    with pytest.raises(ValueError, match="'messages' channel with a reducer"):
        await arestore_thread(b.store, "t", graph, config)
    assert graph.get_state(config).values == {}


def test_a_message_cut_beyond_recognition_is_skipped_and_logged() -> None:
    """A message the content cap reduced to {"$truncated": ...} is logged; the rest replays."""
    b = ThreadBuilder(MemoryEventStore())
    b.new_run()
    b.human("kept")
    b.store.append(
        [
            {
                "thread_id": "t",
                "run_id": b.run_id,
                "category": "message",
                "event_type": "message.human",
                "content": {"$truncated": '{"data":{"content"'},
            }
        ]
    )
    with capture_logs() as logs:
        full = replay(b.store, "t")
        model = replay(b.store, "t", view="model")
    assert [m.content for m in full] == [m.content for m in model] == ["kept"]
    unreadable = [e for e in logs if e["event"] == "replay_message_unreadable"]
    assert [e["count"] for e in unreadable] == [1, 1]
