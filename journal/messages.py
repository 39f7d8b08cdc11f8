"""How a LangChain message is stored as the ``content`` of a ``message.*`` event.

The content is ``langchain_core.messages.message_to_dict(message)`` — ``{"type": ..., "data":
{...}}`` — which :func:`content_to_message` turns back into an equal ``BaseMessage``.
"""

from __future__ import annotations

from typing import Any, Final

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from journal.encoding import jsonable_with_kind, plain

__all__ = [
    "MESSAGE_EVENT_TYPES",
    "content_to_message",
    "message_event_type",
    "message_to_content",
    "message_to_plain",
]

#: LangChain message ``type`` -> the ``message.*`` event type that records it.
MESSAGE_EVENT_TYPES: Final = {
    "human": "message.human",
    "ai": "message.ai",
    "tool": "message.tool",
    "system": "message.system",
}


def message_to_content(message: BaseMessage) -> dict[str, Any]:
    """The stored form of ``message`` (plain JSON data; encoding it again costs nothing)."""
    content: dict[str, Any] = plain(message_to_dict(message))
    return content


def message_to_plain(message: BaseMessage) -> tuple[dict[str, Any], int]:
    """The stored form of ``message`` (what :func:`message_to_content` holds, as a ``dict`` of
    its own) and its :func:`journal.encoding.plain_kind`, for a caller that encodes it now:
    no :class:`journal.encoding.Plain` copy of it is made."""
    content, kind = jsonable_with_kind(message_to_dict(message))
    return content, kind


def content_to_message(content: Any) -> BaseMessage:
    """Turn a stored message back into a ``BaseMessage``; ``ValueError`` if it is not one."""
    if not isinstance(content, dict) or "type" not in content or "data" not in content:
        raise ValueError("content is not a stored message (expected {'type': ..., 'data': ...})")
    try:
        return messages_from_dict([content])[0]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"content is not a valid stored message: {e}") from e


def message_event_type(message: BaseMessage) -> str | None:
    """The ``message.*`` event type for ``message``, or ``None`` for other message kinds."""
    return MESSAGE_EVENT_TYPES.get(message.type)
