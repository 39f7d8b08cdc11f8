"""How a LangChain message is stored as the ``content`` of a ``message.*`` event.

The content is ``langchain_core.messages.message_to_dict(message)`` — ``{"type": ..., "data":
{...}}`` — which :func:`content_to_message` turns back into an equal ``BaseMessage``.
"""

from __future__ import annotations

from typing import Any, Final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from pydantic import BaseModel

from journal.encoding import NOT_PLAIN, container_kind, jsonable_with_kind, plain

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
    content: dict[str, Any] = plain(_message_dict(message))
    return content


#: The message classes whose dump's keys are their schema's names (fields and computed
#: fields), all ASCII: a dump of one without extra fields needs only its values walked for its
#: kind.
_SCHEMA_KEYS: Final = frozenset(
    cls
    for cls in (AIMessage, HumanMessage, ToolMessage, SystemMessage)
    if all(
        type(name) is str and name.isascii()
        for name in (*cls.model_fields, *cls.model_computed_fields)
    )
)


#: The standard message classes whose ``model_dump`` is pydantic's own: their
#: ``message_to_dict`` is their type and their serializer's output, taken without the keyword
#: pass of ``model_dump`` (its defaults are the serializer's).
_OWN_DUMP: Final = frozenset(
    cls
    for cls in (AIMessage, HumanMessage, ToolMessage, SystemMessage)
    if cls.model_dump is BaseModel.model_dump
)


def _message_dict(message: BaseMessage) -> dict[str, Any]:
    """``message_to_dict(message)``: a new dict, and a new dump of the message."""
    cls = type(message)
    if cls in _OWN_DUMP:
        return {"type": message.type, "data": cls.__pydantic_serializer__.to_python(message)}
    return message_to_dict(message)


def message_to_plain(message: BaseMessage) -> tuple[dict[str, Any], int]:
    """The stored form of ``message`` (what :func:`message_to_content` holds, as a ``dict`` of
    its own) and its :func:`journal.encoding.plain_kind`, for a caller that encodes it now:
    no :class:`journal.encoding.Plain` copy of it is made."""
    content = _message_dict(message)
    kind = _schema_dump_kind(message, content)
    if kind == NOT_PLAIN:  # not known so (or not plain): the walk, and the rules if need be
        content, kind = jsonable_with_kind(content)
    return content, kind


def _schema_dump_kind(message: BaseMessage, dump: dict[str, Any]) -> int:
    """``plain_kind(dump)`` of ``message_to_dict(message)`` for a message of a class in
    :data:`_SCHEMA_KEYS` without extra fields (whose dump's keys are its fields' names, ASCII
    by the check there, and ``"type"`` and ``"data"``), walking the values only; else (or when
    it is not plain) ``NOT_PLAIN``."""
    if type(message) not in _SCHEMA_KEYS or message.__pydantic_extra__:
        return NOT_PLAIN
    name, data = dump["type"], dump["data"]
    if type(name) is not str or not name.isascii() or type(data) is not dict:
        return NOT_PLAIN
    return container_kind(data, 1, True)


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
