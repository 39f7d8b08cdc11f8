"""The terminal view of a thread (rich): the conversation, tool calls folded, compactions marked.

* :func:`render_timeline` draws a timeline page (the shape ``build_timeline`` returns): one
  row a message, a rule where a new run starts, each tool call folded to one line
  (``▸ name(args)``), each tool result to one line (``↳ name: result``), and each compaction
  as a distinct framed block titled ``"N messages condensed"`` that shows the summary.
* :func:`render_messages` draws a list of LangChain messages (what ``replay`` returns) the
  same way; a summary message injected by a summarization middleware gets the condensed
  block.

Stored text is untrusted: it is always rendered as plain text, never as rich markup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from history.cli._text import shorten
from journal.catalog import is_summary_message

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "condensed_title",
    "content_text",
    "removed_title",
    "render_messages",
    "render_timeline",
]

_ROLE: Final = {
    "human": ("user", "bold cyan"),
    "ai": ("agent", "bold green"),
    "tool": ("tool", "magenta"),
    "system": ("system", "dim"),
}
_ARGS_LIMIT: Final = 80
_RESULT_LIMIT: Final = 120


def content_text(content: Any) -> str:
    """The readable text of a message ``content``: a string, or the text parts of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(json.dumps(block, ensure_ascii=False, default=str))
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False, default=str)


def condensed_title(replaced_count: int) -> str:
    """The title of a compaction block: ``"N messages condensed"``."""
    noun = "message" if replaced_count == 1 else "messages"
    return f"{replaced_count} {noun} condensed"


def _one_line(text: str, style: str) -> Text:
    """A folded entry: one terminal line whatever the width (cut with an ellipsis)."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _folded_call(call: Any) -> Text:
    if not isinstance(call, Mapping):
        return _one_line(f"▸ {shorten(str(call), _ARGS_LIMIT)}", "yellow")
    args = call.get("args", {})
    shown = (
        ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
        if isinstance(args, Mapping)
        else json.dumps(args, ensure_ascii=False, default=str)
    )
    return _one_line(f"▸ {call.get('name', '?')}({shorten(shown, _ARGS_LIMIT)})", "yellow")


def _row(kind: str, body: RenderableType) -> Table:
    label, style = _ROLE.get(kind, (kind, "bold"))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=6, no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(Text(label, style=style), body)
    return grid


def _message(
    kind: str,
    content: Any,
    *,
    tool_calls: Sequence[Any] = (),
    name: str | None = None,
    status: str | None = None,
    caller: str | None = None,
    hidden: bool = False,
) -> Table:
    text = content_text(content).strip()
    if kind == "tool":
        style = "red" if status == "error" else "dim"
        return _row(kind, _one_line(f"↳ {name or 'tool'}: {shorten(text, _RESULT_LIMIT)}", style))
    # who added it, when it was not the user or the lead agent; hidden context is dimmed
    by = f"[{caller}] " if caller not in (None, "user", "agent") else ""
    label = ("(hidden) " if hidden else "") + by
    parts: list[RenderableType] = []
    if text or label:
        parts.append(Text(label + text, style="dim" if hidden else ""))
    parts.extend(_folded_call(call) for call in tool_calls)
    return _row(kind, Group(*parts) if parts else Text("(empty)", style="dim"))


def _condensed(title: str, summary: str, subtitle: str | None = None) -> Panel:
    return Panel(
        Text(summary.strip() or "(no summary text)"),
        title=Text(title, style="bold yellow"),
        title_align="left",
        subtitle=subtitle,
        subtitle_align="right",
        border_style="yellow",
    )


def _seq_range(item: Mapping[str, Any], kind: str = "replaced") -> str | None:
    first, last = item.get(f"first_{kind}_seq"), item.get(f"last_{kind}_seq")
    if first is None or last is None:
        return None
    return f"seq {first}-{last}"


def removed_title(removed_count: int) -> str:
    """The title of a removal block: ``"N messages removed"``."""
    noun = "message" if removed_count == 1 else "messages"
    return f"{removed_count} {noun} removed"


def _removed(item: Mapping[str, Any]) -> Panel:
    ids = [str(i) for i in item.get("removed_message_ids") or ()]
    return Panel(
        Text(shorten(", ".join(ids), _RESULT_LIMIT) or "(no ids)", style="dim"),
        title=Text(removed_title(int(item.get("removed_count") or 0)), style="bold magenta"),
        title_align="left",
        subtitle=_seq_range(item, "removed"),
        subtitle_align="right",
        border_style="magenta",
    )


def render_timeline(page: Mapping[str, Any]) -> RenderableType:
    """A renderable of a timeline page: messages in seq order, runs ruled, markers framed."""
    parts: list[RenderableType] = []
    current_run: object = None
    for item in page.get("items", []):
        if item.get("run_id") != current_run:
            current_run = item.get("run_id")
            parts.append(Rule(Text(f"run {current_run}", style="dim"), style="dim"))
        if item.get("type") == "summary_marker":
            parts.append(
                _condensed(
                    condensed_title(int(item.get("replaced_count") or 0)),
                    content_text(item.get("summary")),
                    _seq_range(item),
                )
            )
            continue
        if item.get("type") == "removal_marker":
            parts.append(_removed(item))
            continue
        parts.append(
            _message(
                str(item.get("type")),
                item.get("content"),
                tool_calls=item.get("tool_calls") or (),
                name=item.get("name"),
                status=item.get("status"),
                caller=item.get("caller"),
                hidden=bool(item.get("hidden")),
            )
        )
    if not parts:
        parts.append(Text("(no messages on this page)", style="dim"))
    if page.get("has_more"):
        hint = f"older items: --before-seq {page.get('next_before_seq')}"
        parts.insert(0, Text(hint, style="dim"))
    return Group(*parts)


def render_messages(messages: Iterable[BaseMessage]) -> RenderableType:
    """A renderable of LangChain messages; a summarization's summary message is framed."""
    parts: list[RenderableType] = []
    for message in messages:
        if is_summary_message(message):
            summary = content_text(message.content)
            parts.append(_condensed("summary of earlier messages", summary))
            continue
        parts.append(
            _message(
                message.type,
                message.content,
                tool_calls=getattr(message, "tool_calls", None) or (),
                name=getattr(message, "name", None),
                status=getattr(message, "status", None),
            )
        )
    if not parts:
        parts.append(Text("(no messages)", style="dim"))
    return Group(*parts)
