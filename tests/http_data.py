"""Journaled threads built by hand for the HTTP and viewer tests: turns of human/AI/tool
messages with traces and lifecycle events around them, and a summarization marker."""

from __future__ import annotations

from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from journal import RunEvent, RunEventStore, message_to_content

#: Markup that would run script if a page ever rendered stored text as HTML.
XSS: Final = "<img src=x onerror=alert(1)>"


def _event(
    thread_id: str, run_id: str, category: str, event_type: str, content: Any = None
) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "run_id": run_id,
        "category": category,
        "event_type": event_type,
        "content": content,
    }


def _message(thread_id: str, run_id: str, message: BaseMessage) -> dict[str, Any]:
    return _event(
        thread_id, run_id, "message", f"message.{message.type}", message_to_content(message)
    )


def turn_events(
    thread_id: str, turn: int, *, question: str | None = None, result: str | None = None
) -> list[dict[str, Any]]:
    """One run: a question, a tool call and its result, an answer, with traces around them."""
    run = f"run-{turn}"
    call_id = f"call-{turn}"
    return [
        _event(thread_id, run, "lifecycle", "run.start"),
        _message(thread_id, run, HumanMessage(question or f"Question {turn}?", id=f"h{turn}")),
        _event(thread_id, run, "trace", "llm.start"),
        _event(thread_id, run, "trace", "llm.end"),
        _message(
            thread_id,
            run,
            AIMessage(
                "",
                id=f"a{turn}",
                tool_calls=[{"name": "lookup", "args": {"q": turn}, "id": call_id}],
            ),
        ),
        _event(thread_id, run, "trace", "tool.start"),
        _event(thread_id, run, "trace", "tool.end"),
        _message(
            thread_id,
            run,
            ToolMessage(
                result or f"result {turn}", tool_call_id=call_id, name="lookup", id=f"t{turn}"
            ),
        ),
        _message(thread_id, run, AIMessage(f"Answer {turn}.", id=f"b{turn}")),
        _event(thread_id, run, "lifecycle", "run.end"),
    ]


def summary_event(
    thread_id: str, run_id: str, replaced_ids: list[str], summary: str
) -> dict[str, Any]:
    """A ``middleware:summarize`` event that condensed the messages ``replaced_ids``."""
    message = HumanMessage(summary, id=f"summary-{run_id}")
    return _event(
        thread_id,
        run_id,
        "middleware",
        "middleware:summarize",
        {
            "summary": summary,
            "replaced_count": len(replaced_ids),
            "kept_count": 0,
            "replaced_message_ids": replaced_ids,
            "kept_message_ids": [],
            "summary_message": message_to_content(message),
            "trigger": "messages",
            "tokens_before": 1000,
            "tokens_after": 100,
        },
    )


def removal_event(thread_id: str, run_id: str, removed_ids: list[str]) -> dict[str, Any]:
    """A ``message.remove`` event that deleted the messages ``removed_ids`` by id."""
    return _event(
        thread_id, run_id, "message", "message.remove", {"removed_message_ids": removed_ids}
    )


def seed_conversation(
    store: RunEventStore,
    thread_id: str,
    *,
    turns: int,
    marker_after: int | None = None,
    summary: str = "The user asked several questions; each was looked up and answered.",
    first_question: str | None = None,
    removal_after: int | None = None,
) -> list[RunEvent]:
    """Append ``turns`` runs to ``thread_id``; after turn ``marker_after``, a compaction of
    every message so far; after turn ``removal_after``, a removal of that turn's messages.
    Returns the stored events in seq order."""
    events: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        added = turn_events(thread_id, turn, question=first_question if turn == 1 else None)
        events += added
        if turn == marker_after:
            ids = [e["content"]["data"]["id"] for e in events if e["category"] == "message"]
            events.append(summary_event(thread_id, f"run-{turn}", ids, summary))
        if turn == removal_after:
            ids = [e["content"]["data"]["id"] for e in added if e["category"] == "message"]
            events.append(removal_event(thread_id, f"run-{turn}", ids))
    return store.append(events)
