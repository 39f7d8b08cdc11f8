"""Reading one event for the runs projection (:mod:`journal._runs`): names, token counts,
message texts and previews, each tolerant of absent or ill-typed values and bounded (see the
projection's module docstring for the bounds)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from journal._summaries import USAGE_KEYS
from journal.events import NewEvent

__all__ = [
    "NAME_CHARS",
    "PREVIEW_CHARS",
    "call_usage",
    "clean",
    "content_value",
    "hidden",
    "message_text",
    "preview",
    "short_name",
    "usage_values",
]

PREVIEW_CHARS: Final = 200
NAME_CHARS: Final = 256
_TOKEN_MAX: Final = 2**31 - 1
_TOTAL_INDEX: Final = USAGE_KEYS.index("total_tokens")
_NO_USAGE: Final = (0,) * len(USAGE_KEYS)
assert USAGE_KEYS[:2] == ("input_tokens", "output_tokens")


def clean(text: str, limit: int) -> str:
    """``text`` with NUL as U+FFFD (PostgreSQL text holds none), cut to ``limit`` with ``…``."""
    text = text if "\x00" not in text else text.replace("\x00", "\ufffd")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_name(value: Any) -> str | None:
    """A model or caller name: a non-empty string, cleaned and cut; else ``None``."""
    return clean(value, NAME_CHARS) if isinstance(value, str) and value else None


def _tokens(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    count = value if isinstance(value, int) else int(value) if math.isfinite(value) else 0
    return min(max(count, 0), _TOKEN_MAX)


def usage_values(metadata: Mapping[str, Any]) -> list[int]:
    """:func:`call_usage`'s counts, in :data:`USAGE_KEYS` order."""
    raw = metadata.get("usage")
    if not raw or (type(raw) is not dict and not isinstance(raw, Mapping)):
        return list(_NO_USAGE)
    values = list(map(raw.get, USAGE_KEYS, _NO_USAGE))
    for value in values:
        if type(value) is not int or not 0 <= value <= _TOKEN_MAX:
            values = [_tokens(value) for value in values]
            break
    if not values[_TOTAL_INDEX]:
        values[_TOTAL_INDEX] = min(values[0] + values[1], _TOKEN_MAX)
    return values


def call_usage(metadata: Mapping[str, Any]) -> dict[str, int]:
    """The :data:`USAGE_KEYS` of one ``llm.end``'s ``metadata.usage`` (zeros when absent)."""
    return dict(zip(USAGE_KEYS, usage_values(metadata), strict=True))


def _message_data(content: Any) -> Mapping[str, Any]:
    # a dict first: an ABC's isinstance costs more than the rest of a message's fold
    data = content.get("data") if type(content) is dict or isinstance(content, Mapping) else None
    return data if type(data) is dict or isinstance(data, Mapping) else {}


def message_text(content: Any) -> str:
    """The text of a stored message: its content if a string, else its text parts joined."""
    body = _message_data(content).get("content")
    if isinstance(body, str):
        return body
    if not isinstance(body, list):
        return ""
    parts = []
    for part in body:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text":
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def hidden(event: NewEvent) -> bool:
    """Whether a message event is hidden from the UI (``metadata.hidden``, else the content's
    ``additional_kwargs.hide_from_ui``)."""
    flag = event.metadata.get("hidden")
    if isinstance(flag, bool):
        return flag
    extra = _message_data(event.content).get("additional_kwargs")
    return isinstance(extra, Mapping) and bool(extra.get("hide_from_ui"))


def preview(event: NewEvent) -> str | None:
    """A message event's text cut to :data:`PREVIEW_CHARS`, ``None`` when it has none."""
    text = message_text(event.content)
    return clean(text, PREVIEW_CHARS) if text.strip() else None


def content_value(event: NewEvent, key: str) -> Any:
    """``content[key]`` of an event whose content is an object, else ``None``."""
    content = event.content
    return content.get(key) if type(content) is dict or isinstance(content, Mapping) else None
