"""The journal's vocabulary, written once: event names, the tag rule, stored message ids, and
what a removal or summary event does to the state's order.

Every package reads these from here — the middleware that dispatches ``summarization``, the
``RunJournal`` that records it as ``middleware:summarize``, and the history readers that find
it — so the names and the rules cannot drift apart. No I/O, no LangChain import.
"""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any, Final, NamedTuple

__all__ = [
    "MESSAGE_EVENT_TYPES",
    "MODEL_CALL_EVENT_TYPE",
    "PARENT_SPAN_KEY",
    "REMOVE_EVENT_TYPE",
    "SUMMARIZATION_EVENT",
    "SUMMARIZE_EVENT_TYPE",
    "SUMMARY_SOURCE",
    "TAG_RE",
    "OrderChange",
    "is_summary_message",
    "order_change",
    "sanitize_tag",
    "stored_message_id",
]

#: The custom event ``TrackingSummarizationMiddleware`` dispatches on each summarization.
SUMMARIZATION_EVENT: Final = "summarization"
#: ``additional_kwargs["lc_source"]`` of a summary message a summarization put into the state,
#: and the ``lc_source`` metadata of the summarizer's own model call.
SUMMARY_SOURCE: Final = "summarization"
#: The event a compaction is journaled as, and the event of any other removal.
SUMMARIZE_EVENT_TYPE: Final = "middleware:summarize"
REMOVE_EVENT_TYPE: Final = "message.remove"
#: The events that record a message added to the state.
MESSAGE_EVENT_TYPES: Final = ("message.human", "message.ai", "message.tool", "message.system")
#: The event of a model call (its input's ids and digests ride on it).
MODEL_CALL_EVENT_TYPE: Final = "llm.start"
#: The metadata key of trace and middleware events naming the LangChain run id of their
#: nearest traced ancestor: the tool or model call they run inside, else the node of the root
#: graph, else the root run (see :mod:`journal.event_catalog`).
PARENT_SPAN_KEY: Final = "parent_span_run_id"

#: The tag of an open family (``middleware:<tag>``, ``custom:<tag>``): letters, digits and
#: ``_ . - / :``, starting with a letter, digit or ``_``.
TAG_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/:]*\Z")  # match() anchors the start
_NOT_TAG_CHARS: Final = re.compile(r"[^A-Za-z0-9_.\-/:]")


def sanitize_tag(name: str, max_length: int) -> str:
    """``name`` made a valid tag (``TAG_RE``): other characters become ``_``, cut to length."""
    tag = _NOT_TAG_CHARS.sub("_", name) or "_"
    tag = tag if TAG_RE.match(tag) else f"_{tag}"
    return tag[:max_length]


def is_summary_message(message: Any) -> bool:
    """Whether ``message`` is a summary a summarization middleware put into the state."""
    kwargs = getattr(message, "additional_kwargs", None)
    return isinstance(kwargs, dict) and kwargs.get("lc_source") == SUMMARY_SOURCE


def stored_message_id(content: Any) -> str | None:
    """The state id of a message: of its stored form (``{"type", "data"}``) or the object."""
    if isinstance(content, dict):
        data = content.get("data")
        value = data.get("id") if isinstance(data, dict) else None
    else:
        value = getattr(content, "id", None)
    return value if isinstance(value, str) else None


def _listed_ids(payload: Any, key: str) -> list[str] | None:
    """The ids an event's content lists under ``key`` (its strings; ``None``: no list)."""
    value = payload.get(key) if isinstance(payload, dict) else None
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


class OrderChange(NamedTuple):
    """What a ``message.remove`` or ``middleware:summarize`` event does to the state."""

    #: The state becomes exactly these ids, in this order (``None``: it keeps its order).
    order: list[str] | None
    #: Else these ids leave it.
    removed: list[str]
    #: Ids a summary kept that the state did not hold (left out of ``order``).
    unheld: int = 0


def order_change(
    event_type: str, content: Any, held: Container[str], summary_id: str | None
) -> OrderChange | None:
    """What the event does to a state holding ``held`` (``None``: not such an event).

    A removal takes its ``removed_message_ids`` out; with ``state_message_ids`` (a rewrite,
    or a fork's state) the state becomes that list. A summary makes the state its
    ``state_message_ids`` (an inferred marker), or its summary (``summary_id``, the id the
    reader gives it) followed by the ``kept_message_ids`` the state holds (the tracking
    middleware's layout).
    """
    if event_type not in (REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE):
        return None
    order = _listed_ids(content, "state_message_ids")
    if order is not None:
        return OrderChange(order, [])
    if event_type == REMOVE_EVENT_TYPE:
        return OrderChange(None, _listed_ids(content, "removed_message_ids") or [])
    kept = _listed_ids(content, "kept_message_ids") or []
    order = [mid for mid in kept if mid in held]
    head = [] if summary_id is None else [summary_id]
    return OrderChange([*head, *order], [], len(kept) - len(order))
