"""What the history readers read: the event types they use and how to pick their fields.

Message events carry ``message_to_content(message)`` (``{"type", "data"}``; ``data.id`` is the
message's id in the graph state). ``middleware:summarize`` events carry the payload of
``TrackingSummarizationMiddleware`` (see :mod:`middleware.summarization`). Readers are lenient:
a truncated or odd payload yields ``None``/empty values, never an exception.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pydantic_core import to_jsonable_python

from journal.catalog import (
    MESSAGE_EVENT_TYPES,
    MODEL_CALL_EVENT_TYPE,
    REMOVE_EVENT_TYPE,
    SUMMARIZE_EVENT_TYPE,
    stored_message_id,
)
from journal.events import RunEvent

__all__ = [
    "MESSAGE_TYPES",
    "MODEL_CALL",
    "REMOVE",
    "SUMMARIZE",
    "TIMELINE_TYPES",
    "as_str",
    "is_agent_call",
    "message_data",
    "message_id",
    "payload_ids",
    "summary_message_id",
    "utc_text",
]

MESSAGE_TYPES: Final = MESSAGE_EVENT_TYPES
SUMMARIZE: Final = SUMMARIZE_EVENT_TYPE
REMOVE: Final = REMOVE_EVENT_TYPE
MODEL_CALL: Final = MODEL_CALL_EVENT_TYPE
#: Every event that changes the thread's ``messages`` state (and so the timeline).
TIMELINE_TYPES: Final = (*MESSAGE_TYPES, SUMMARIZE, REMOVE)


def is_agent_call(event: RunEvent) -> bool:
    """Whether an ``llm.start`` is a call of the thread's agent (not of a middleware's own
    model, such as the summarizer, nor of a subagent). A call with ``lc_source`` metadata is
    a LangChain middleware's own (the journal names such a call's caller after it; events
    journaled before it did have the caller ``agent``)."""
    metadata = event.metadata
    return metadata.get("caller") == "agent" and metadata.get("lc_source") is None


def message_data(event: RunEvent) -> dict[str, Any]:
    """The ``data`` dict of a message event's content, or ``{}`` if it has none."""
    content = event.content
    if isinstance(content, dict) and isinstance(content.get("data"), dict):
        data: dict[str, Any] = content["data"]
        return data
    return {}


def message_id(event: RunEvent) -> str | None:
    """The state id of the message a ``message.*`` event recorded, if it has one."""
    return stored_message_id(event.content)


def _payload(event: RunEvent) -> dict[str, Any]:
    return event.content if isinstance(event.content, dict) else {}


def payload_ids(event: RunEvent, key: str) -> list[str]:
    """The id list ``key`` (``replaced_message_ids``/``kept_message_ids``) of a marker."""
    value = _payload(event).get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, str)]


def summary_message_id(event: RunEvent) -> str | None:
    """The state id of the summary message a ``middleware:summarize`` event injected."""
    message = _payload(event).get("summary_message")
    if isinstance(message, dict) and isinstance(message.get("data"), dict):
        value = message["data"].get("id")
        return value if isinstance(value, str) else None
    return None


def as_str(value: Any) -> str | None:
    """``value`` if it is a string, else ``None`` (a stored field of another shape)."""
    return value if isinstance(value, str) else None


def utc_text(moment: datetime) -> str:
    """A time as a record's JSON (``model_dump(mode="json")``) and the HTTP API write it,
    ``...Z`` in UTC: the one form of every time the readers give."""
    return str(to_jsonable_python(moment))
