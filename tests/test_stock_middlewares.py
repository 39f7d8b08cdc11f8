"""LangChain's stock agent middlewares under the journal, each next to the stock summarization.

Real ``create_agent`` runs (sync and async, three questions on one thread) with a scripted
model whose answers carry e-mail addresses and call three tools, one of which fails every
other call. Each middleware edits the run its own way: PII redaction rewrites messages under
their ids, tool and model retries repeat calls, a fallback model answers for a failing one,
call limits end the run or answer calls with errors, the to-do list adds a tool and its
state, context editing clears old tool results from the model's request. After the runs the
journal's state view equals the checkpoint, every agent model call replays exactly what the
model received, ``verify`` agrees, and the timeline marks each compaction the stock
summarization made. The same holds for a structured answer through a tool (``ToolStrategy``:
the model node writes the call and its result, and a malformed answer is retried).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents import middleware as mw
from langchain.agents.structured_output import ToolStrategy
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from history import build_timeline, replay, verify
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call


class Prompts(BaseCallbackHandler):
    """Keeps the messages each chat model call received, by the call's run id."""

    run_inline = True

    def __init__(self) -> None:
        self.sent: dict[str, list[BaseMessage]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], *, run_id: UUID, **kw: Any
    ) -> None:
        self.sent[str(run_id)] = [m.model_copy(deep=True) for m in messages[0]]


def tools() -> list[Any]:
    """``add``, ``lookup`` (its answer holds an address) and ``flaky`` (fails every other
    call: a fresh counter per agent)."""
    failures = itertools.count()

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def lookup(q: str) -> str:
        """Look a name up."""
        return f"write to bob{q}@example.com"

    @tool
    def flaky(a: int) -> int:
        """Echo ``a``, failing every other call."""
        if next(failures) % 2 == 0:
            raise ValueError("flaky failed")
        return a

    return [add, lookup, flaky]


def agent_model(*, flaky: bool = False) -> ScriptedChatModel:
    """Calls tools after a question and after every third answer, else answers; every text
    holds an e-mail address."""

    def step(messages: list[BaseMessage]) -> Any:
        answers = sum(1 for m in messages if m.type == "ai")
        if messages[-1].type == "human" or answers % 3 == 0:
            calls = [call("add", a=answers, b=1), call("lookup", q=str(answers))]
            if flaky:
                calls.append(call("flaky", a=answers))
            return ai(f"asking ann{answers}@example.com", *calls)
        return ai(f"done {answers}, see carl@example.com")

    return ScriptedChatModel(step)


def failing_every_other(model: ScriptedChatModel) -> ScriptedChatModel:
    """``model``'s answers, but every other call raises first."""
    attempts = itertools.count()
    answer = model._every
    assert answer is not None

    def step(messages: list[BaseMessage]) -> Any:
        if next(attempts) % 2 == 0:
            raise RuntimeError("model unavailable")
        return answer(messages)

    return ScriptedChatModel(step)


def summarization() -> mw.SummarizationMiddleware:
    """LangChain's own summarization, compacting often."""
    summarizer = ScriptedChatModel(lambda messages: ai("summary of the talk"))
    return mw.SummarizationMiddleware(
        model=summarizer, trigger=("messages", 8), keep=("messages", 3)
    )


Setup = Callable[[], tuple[ScriptedChatModel, list[Any]]]

SETUPS: dict[str, Setup] = {
    "pii_redact": lambda: (
        agent_model(),
        [
            mw.PIIMiddleware(
                "email", apply_to_input=True, apply_to_output=True, apply_to_tool_results=True
            )
        ],
    ),
    "pii_hash_and_mask": lambda: (
        agent_model(),
        [
            mw.PIIMiddleware("email", strategy="hash", apply_to_tool_results=True),
            mw.PIIMiddleware("url", strategy="mask"),
        ],
    ),
    "tool_retry": lambda: (
        agent_model(flaky=True),
        [mw.ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)],
    ),
    "tool_error": lambda: (
        agent_model(flaky=True),
        [mw.ToolErrorMiddleware(on_error=lambda error, request: f"failed: {error}")],
    ),
    "model_retry": lambda: (
        failing_every_other(agent_model()),
        [mw.ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)],
    ),
    "model_fallback": lambda: (
        failing_every_other(agent_model()),
        [mw.ModelFallbackMiddleware(agent_model())],
    ),
    "model_call_limit": lambda: (
        agent_model(),
        [mw.ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")],
    ),
    "tool_call_limit": lambda: (
        agent_model(),
        [mw.ToolCallLimitMiddleware(run_limit=2, exit_behavior="continue")],
    ),
    "tool_call_limit_end": lambda: (
        agent_model(),
        [mw.ToolCallLimitMiddleware(tool_name="add", thread_limit=2, exit_behavior="end")],
    ),
    "todo_list": lambda: (agent_model(), [mw.TodoListMiddleware()]),
    "context_editing": lambda: (
        agent_model(),
        [mw.ContextEditingMiddleware(edits=[mw.ClearToolUsesEdit(trigger=50, keep=1)])],
    ),
}


class Weather(BaseModel):
    """The structured answer."""

    city: str
    degrees: int


def weather_model() -> ScriptedChatModel:
    """Calls ``add`` after a question, then answers through the ``Weather`` tool: first
    without ``degrees`` (malformed: LangChain answers the call with an error and asks again),
    then whole."""

    def step(messages: list[BaseMessage]) -> Any:
        if messages[-1].type == "human":
            return ai("", call("add", a=1, b=2))
        if sum(1 for m in messages if m.type == "ai") % 2 == 1:
            return ai("", call("Weather", city="Oslo"))
        return ai("", call("Weather", city="Oslo", degrees=21))

    return ScriptedChatModel(step)


def run_thread(
    tmp_path: Path, setup: Setup, mode: str, **options: Any
) -> tuple[Any, Any, Prompts, str]:
    """Three questions on one thread through ``setup``'s agent (``options``: more of
    ``create_agent``'s); the agent, its store, the prompts its model calls received, and the
    thread."""
    store = SqliteEventStore(tmp_path / "journal.db")
    journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
    prompts = Prompts()
    model, middleware = setup()
    agent = create_agent(
        model,
        tools(),
        middleware=[*middleware, summarization()],
        checkpointer=InMemorySaver(),
        **options,
    )
    thread = "stock"
    config: Any = {
        "configurable": {"thread_id": thread},
        "callbacks": [journal, prompts],
        "recursion_limit": 60,
    }
    for n in range(3):
        inputs = {"messages": [HumanMessage(f"question {n} from dave{n}@example.com")]}
        if mode == "sync":
            agent.invoke(inputs, config)
        else:
            asyncio.run(agent.ainvoke(inputs, config))
    assert journal.flush(10)
    journal.close()
    return agent, store, prompts, thread


def assert_journal_follows(agent: Any, store: Any, prompts: Prompts, thread: str) -> None:
    """Replay's state equals the checkpoint, each agent call replays as sent, verify agrees,
    and each stock compaction has its marker."""
    state = agent.get_state({"configurable": {"thread_id": thread}}).values["messages"]
    assert replay(store, thread, view="state") == state
    starts = [e for e in store.read(thread, event_type="llm.start")
              if e.metadata["caller"] == "agent"]  # fmt: skip
    assert starts and all(e.metadata["llm_run_id"] in prompts.sent for e in starts)
    for start in starts:
        sent = prompts.sent[start.metadata["llm_run_id"]]
        assert replay(store, thread, upto_seq=start.seq, view="model") == sent, start.seq
    report = verify(store, thread)
    assert report["ok"] and report["exact"] == report["calls"] == len(starts), report
    compactions = store.read(thread, event_type="middleware:summarize")
    kinds = [item["type"] for item in build_timeline(store, thread)["items"]]
    assert compactions and kinds.count("summary_marker") == len(compactions)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", list(SETUPS))
def test_a_stock_middleware_keeps_replay_verify_and_markers_right(
    tmp_path: Path, name: str, mode: str
) -> None:
    """Replay's state equals the checkpoint, each agent call replays as sent, verify agrees,
    and each stock compaction has its marker."""
    assert_journal_follows(*run_thread(tmp_path, SETUPS[name], mode))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_structured_answer_through_a_tool_keeps_replay_and_verify_right(
    tmp_path: Path, mode: str
) -> None:
    """A ``ToolStrategy`` answer, malformed once and retried, journals what the checkpoint
    holds."""
    agent, store, prompts, thread = run_thread(
        tmp_path, lambda: (weather_model(), []), mode, response_format=ToolStrategy(Weather)
    )
    values = agent.get_state({"configurable": {"thread_id": thread}}).values
    assert values["structured_response"] == Weather(city="Oslo", degrees=21)
    results = store.read(thread, event_type="message.tool")  # kept after compactions too
    texts = [e.content["data"]["content"] for e in results]
    assert any(text.startswith("Error: Failed to parse structured output") for text in texts)
    assert_journal_follows(agent, store, prompts, thread)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_pii_redaction_is_journaled_as_the_middlewares_replacement(
    tmp_path: Path, mode: str
) -> None:
    """What the user wrote is kept; the redacted text follows as the middleware's
    replacement of the same message."""
    _, store, _, thread = run_thread(tmp_path, SETUPS["pii_redact"], mode)
    humans = store.read(thread, event_type="message.human")
    first = [e for e in humans if e.content["data"]["content"].startswith("question 0")]
    assert [e.content["data"]["content"] for e in first] == [
        "question 0 from dave0@example.com",
        "question 0 from [REDACTED_EMAIL]",
    ]
    original, redacted = first
    assert original.metadata["caller"] == "user"
    assert redacted.metadata["replacement"] is True
    assert redacted.metadata["caller"] == "middleware:PIIMiddleware[email]"
    assert redacted.metadata["message_id"] == original.metadata["message_id"]
