"""The offline demo: a real agent whose context gets compacted, journaled into a store.

:func:`run_demo` builds a ``create_agent`` travel assistant with two tools
(:mod:`history.cli.demo_tools`), the scripted model
:class:`~history.cli.demo_models.ScriptedAgentModel` and ``TrackingSummarizationMiddleware``
driven by the extractive
:class:`~history.cli.demo_models.ExtractiveSummaryModel` with a low trigger (8 messages, keep 4),
journals it with ``RunJournal`` and runs a conversation of :data:`DEMO_TURNS` turns.

Guarantees: no network and no API key; the same conversation, answers and compactions on
every run (at least 3 runs and 2 compactions); an earlier demo thread of the same id is
deleted first, so the thread holds exactly this conversation. The script's answers are
computed from what the tools returned and, in the last turn, from the (summarized) context
the model was sent.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from history.cli.demo_models import (
    SUMMARY_PREFIX,
    ExtractiveSummaryModel,
    ScriptedAgentModel,
    Step,
    first_sentence,
    message_text,
)
from history.cli.demo_tools import DEMO_TOOLS
from journal.run_journal import RunJournal
from journal.store import RunEventStore
from middleware.summarization import TrackingSummarizationMiddleware

__all__ = [
    "DEMO_THREAD_ID",
    "DEMO_TURNS",
    "DemoResult",
    "build_demo_agent",
    "demo_script",
    "run_demo",
]

DEMO_THREAD_ID: Final = "demo-trip"

#: What the user says, one run each.
DEMO_TURNS: Final = (
    "I'm planning a trip from Lisbon to Porto. How many people live in the two cities together?",
    "A train ticket costs 31 euros. What do return tickets for 3 people cost?",
    "The rail distance is 337 km. How many miles is that?",
    "Please remind me of everything we worked out so far.",
)

SYSTEM_PROMPT: Final = (
    "You are a careful travel assistant. Use the tools for facts and arithmetic; "
    "answer in one or two sentences."
)
_TRIGGER_MESSAGES: Final = 8
_KEEP_MESSAGES: Final = 4
_NAMESPACE: Final = uuid.UUID("5b0e1f4e-2d4b-4c4e-9a61-6b8f1d0c7a10")


@dataclass(frozen=True)
class DemoResult:
    """What a demo run did: its thread, run ids, answers, and the agent model's prompts.

    ``spooled`` counts events the store could not take (kept in the spool at ``spool_path``
    for ``runjournal recover``); 0 when the store was healthy.
    """

    thread_id: str
    run_ids: list[str]
    answers: list[str]
    model_calls: list[list[BaseMessage]]
    spooled: int = 0
    spool_path: str = ""


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _latest_results(messages: Sequence[BaseMessage]) -> list[str]:
    """The tool results after the last AI message: what the previous step's calls returned."""
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, message_text(message))
    return results


def _population(messages: Sequence[BaseMessage]) -> AIMessage:
    facts = [json.loads(r) for r in _latest_results(messages)]
    expression = " + ".join(str(f["population"]) for f in facts)
    return AIMessage("", tool_calls=[_call("calculate", "call-sum", expression=expression)])


def _population_answer(messages: Sequence[BaseMessage]) -> AIMessage:
    total = int(_latest_results(messages)[-1])
    facts = [
        json.loads(message_text(m))
        for m in messages
        if isinstance(m, ToolMessage) and m.name == "city_facts"
    ]
    parts = " and ".join(f"{f['city']} {f['population']:,}" for f in facts)
    return AIMessage(f"About {total:,} people live in the two cities together ({parts}).")


def _answer(template: str, parse: Callable[[str], Any] = str) -> Step:
    """A step that answers with ``template`` filled in from the last tool result."""

    def answer(messages: Sequence[BaseMessage]) -> AIMessage:
        return AIMessage(template.format(result=parse(_latest_results(messages)[-1])))

    return answer


def _recap(messages: Sequence[BaseMessage]) -> AIMessage:
    """Recap from the context the model was sent: summary points, then later answers."""
    points: list[str] = []
    for message in messages:
        text = message_text(message)
        if isinstance(message, HumanMessage) and text.startswith(SUMMARY_PREFIX):
            points += [
                re.sub(r"^- [^:]+: ", "", line.strip())
                for line in text.splitlines()
                if line.startswith("- The assistant said")
            ]
        elif isinstance(message, AIMessage) and text:
            points.append(first_sentence(text))
    listed = "\n".join(f"- {p}" for p in dict.fromkeys(points))
    return AIMessage(f"Here is what we worked out:\n{listed}")


def demo_script() -> list[Step]:
    """The agent model's steps for :data:`DEMO_TURNS` (tool calls, then answers from results)."""
    return [
        AIMessage(
            "",
            tool_calls=[
                _call("city_facts", "call-lisbon", city="Lisbon"),
                _call("city_facts", "call-porto", city="Porto"),
            ],
        ),
        _population,
        _population_answer,
        AIMessage("", tool_calls=[_call("calculate", "call-fare", expression="31 * 2 * 3")]),
        _answer("Return tickets for 3 people cost {result} euros."),
        AIMessage("", tool_calls=[_call("calculate", "call-miles", expression="337 / 1.609344")]),
        _answer("337 km is about {result:.1f} miles.", float),
        _recap,
    ]


def build_demo_agent(model: ScriptedAgentModel | None = None) -> Any:
    """The demo's compiled ``create_agent`` graph (with an in-memory checkpointer)."""
    summarization = TrackingSummarizationMiddleware(
        model=ExtractiveSummaryModel(),
        trigger=("messages", _TRIGGER_MESSAGES),
        keep=("messages", _KEEP_MESSAGES),
    )
    return create_agent(
        model=model or ScriptedAgentModel(demo_script()),
        tools=DEMO_TOOLS,
        system_prompt=SYSTEM_PROMPT,
        middleware=[summarization],
        checkpointer=InMemorySaver(),
    )


def run_demo(
    store: RunEventStore,
    *,
    thread_id: str = DEMO_THREAD_ID,
    spool_path: str | os.PathLike[str] | None = None,
) -> DemoResult:
    """Run the demo conversation journaled into ``store``; replaces an earlier ``thread_id``.

    Events the store cannot take go to the journal's spool at ``spool_path`` (default: the
    store's own, :func:`journal.spool.default_spool_path`).
    """
    store.delete_thread(thread_id)
    model = ScriptedAgentModel(demo_script())
    agent = build_demo_agent(model)
    journal = RunJournal(store, thread_id=thread_id, spool_path=spool_path)
    run_ids: list[str] = []
    answers: list[str] = []
    try:
        for number, text in enumerate(DEMO_TURNS, start=1):
            run_id = uuid.uuid5(_NAMESPACE, f"{thread_id}/{number}")
            config: Any = {
                "configurable": {"thread_id": thread_id},
                "callbacks": [journal],
                "run_id": run_id,
            }
            state = agent.invoke({"messages": [HumanMessage(text)]}, config)
            run_ids.append(str(run_id))
            answers.append(message_text(state["messages"][-1]))
    finally:
        journal.close()
    return DemoResult(
        thread_id=thread_id,
        run_ids=run_ids,
        answers=answers,
        model_calls=model.calls,
        spooled=journal.spooled_events,
        spool_path=str(journal.spool.path),
    )
