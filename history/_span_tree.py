"""The span tree of one run, built from its trace and middleware events fed in seq order.

:class:`SpanTree` turns calls (``llm.start`` → ``llm.end``/``llm.error`` by ``llm_run_id``,
``tool.start`` → ``tool.end``/``tool.error`` by ``tool_run_id``) and marks (``middleware:*``,
``custom:*``) into spans, under ``node`` spans (a LangGraph node step) and ``subagent`` spans
(the calls of a nested graph, under the call that ran it); :func:`render_spans` gives their
extents, usage and status. Used by :mod:`history._spans`, which reads the events.

Where a span goes: an event that names its parent span (metadata
``journal.catalog.PARENT_SPAN_KEY``: the LangChain run id of the tool or model call it runs
inside, else of its node of the root graph) sits under that call's span — in a ``subagent``
span when its caller is a subagent the call ran, so parallel subagents each stay under their
own tool. Events written before that key existed follow the order rule: a subagent's calls go
under the latest tool call still open when they started, a model call under an open tool call
of its own node. Seq order is the order things happened in (one journal's buffer), so nesting
is decided by seqs and run ids, never by clocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from history._catalog import as_str
from journal._runs import USAGE_KEYS, call_usage
from journal.catalog import PARENT_SPAN_KEY
from journal.encoding import dumps_plain
from journal.events import RunEvent

__all__ = [
    "ERROR_CHARS",
    "Span",
    "SpanTree",
    "as_dict",
    "as_str",
    "excerpt",
    "feed",
    "mark_failed",
    "render_spans",
    "sum_usage",
    "text_of",
]

_EXCERPT: Final = 500
#: Longest error text a span keeps.
ERROR_CHARS: Final = 2000
_SPAN_BYTES: Final = 400  # a span's fixed fields in JSON
_ENDS: Final = ("llm.end", "llm.error")
_TOOL_ENDS: Final = ("tool.end", "tool.error")
_FIXED: Final = ("id", "parent", "kind", "name", "seq", "end_seq", "caller", "node", "step")


def text_of(content: Any) -> str:
    """The text of a message content: the string, or the ``text`` parts of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else p.get("text", "")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        ]
        return "\n".join(parts)
    return ""


def excerpt(value: Any, limit: int = _EXCERPT) -> str | None:
    """``value`` as text (JSON unless a string), cut to ``limit`` characters with ``…``."""
    if value is None:
        return None
    text = value if isinstance(value, str) else dumps_plain(value)
    return text if len(text) <= limit else text[:limit] + "…"


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one (stored payloads may be anything)."""
    return value if isinstance(value, dict) else {}


def _step(metadata: dict[str, Any]) -> int | None:
    step = metadata.get("langgraph_step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


@dataclass
class Span:
    """One span as it is built (``render_spans`` gives its public form)."""

    id: str
    kind: str
    name: str
    parent: str | None
    seq: int
    start: datetime
    caller: str | None = None
    node: str | None = None
    step: int | None = None
    end: datetime | None = None
    end_seq: int | None = None
    latency_ms: float | None = None
    status: str = "running"
    failed: bool = False  # a node step the run's ``run.error`` names as the one that raised
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class SpanTree:
    """The spans of one run as its events are fed in seq order."""

    limit: int
    max_bytes: int
    spans: dict[str, Span] = field(default_factory=dict)
    open_tools: list[Span] = field(default_factory=list)
    groups: dict[tuple[str, ...], str] = field(default_factory=dict)
    size: int = 0
    truncated: bool = False
    size_limited: bool = False
    last_at: datetime | None = None

    def _add(self, span: Span) -> Span | None:
        """Keep ``span`` if the response has room for it."""
        cost = _SPAN_BYTES + sum(len(v) for v in span.fields.values() if isinstance(v, str))
        if len(self.spans) - 1 >= self.limit:  # the root does not count
            self.truncated = True
        elif self.size + cost > self.max_bytes and len(self.spans) > 1:
            self.size_limited = True
        else:
            self.size += cost
            self.spans[span.id] = span
            return span
        return None

    def _group(self, key: tuple[str, ...], make: Span) -> str | None:
        known = self.groups.get(key)
        if known is None and self._add(make) is not None:
            known = self.groups[key] = make.id
        return known

    def parent_of(self, event: RunEvent, kind: str) -> str | None:
        """Where a new call or mark of ``event`` goes (creating node/subagent spans)."""
        md = event.metadata
        caller, node, step = as_str(md.get("caller")), as_str(md.get("langgraph_node")), _step(md)
        named = as_str(md.get(PARENT_SPAN_KEY))
        if named is not None:  # the journal named the call it runs inside (if any has a span)
            call = self.spans.get(f"tool:{named}") or self.spans.get(f"llm:{named}")
            if call is not None and call.caller == caller:
                return call.id  # inside that call, in the same graph
        else:  # written before parents were named: the order rule
            call = self.open_tools[-1] if self.open_tools else None
            if (
                kind == "model"
                and call is not None
                and (call.caller, call.step, call.node) == (caller, step, node)
            ):
                return call.id  # a model called inside a tool of this node
        scope = "run"
        if caller is not None and caller.startswith("subagent:"):
            scope = call.id if call is not None else "run"
            name = caller.removeprefix("subagent:")
            made = _new(event, f"subagent:{event.seq}", "subagent", name, scope, in_node=False)
            group = self._group(("subagent", scope, caller), made)
            if group is None:
                return None
            scope = group
        if node is None:
            return scope
        made = _new(event, f"node:{event.seq}", "node", node, scope)
        return self._group(("node", scope, str(step), node), made)

    def start(self, event: RunEvent, span_id: str, kind: str, name: str, **fields: Any) -> None:
        parent = self.parent_of(event, kind)
        if parent is None:
            return
        span = _new(event, span_id, kind, name, parent)
        span.fields = {k: v for k, v in fields.items() if v is not None}
        if event.metadata.get("truncated"):
            span.fields["truncated"] = True
        if self._add(span) is not None and kind == "tool":
            self.open_tools.append(span)

    def finish(
        self, event: RunEvent, span_id: str, status: str, latency: Any, **fields: Any
    ) -> None:
        span = self.spans.get(span_id)
        if span is None or span.end is not None:
            return
        span.end, span.end_seq, span.status = event.created_at, event.seq, status
        if isinstance(latency, int | float) and not isinstance(latency, bool):
            span.latency_ms = float(latency)
        span.fields.update({k: v for k, v in fields.items() if v is not None})
        if event.metadata.get("truncated"):
            span.fields["truncated"] = True
        if span in self.open_tools:
            self.open_tools.remove(span)

    def mark(self, event: RunEvent) -> None:
        parent = self.parent_of(event, "event")
        if parent is not None:
            span = _new(event, f"event:{event.seq}", "event", event.event_type, parent)
            span.end, span.end_seq, span.status = event.created_at, event.seq, "ok"
            self._add(span)


def mark_failed(tree: SpanTree, error: RunEvent) -> None:
    """The node step a ``run.error`` names (if it names one) raised: its span is an error,
    made (at the error) when none of its events had made it."""
    if as_str(error.metadata.get("langgraph_node")) is None:
        return  # written before run.error named the node, or no node raised
    span = tree.spans.get(tree.parent_of(error, "event") or "")
    if span is not None and span.kind == "node":
        span.failed = True
        span.end = span.end or error.created_at


def _new(
    event: RunEvent, span_id: str, kind: str, name: str, parent: str, *, in_node: bool = True
) -> Span:
    """A span starting at ``event``, attributed to its caller (and node, if ``in_node``)."""
    md = event.metadata
    node, step = (as_str(md.get("langgraph_node")), _step(md)) if in_node else (None, None)
    caller = as_str(md.get("caller"))
    return Span(span_id, kind, name, parent, event.seq, event.created_at, caller, node, step)


def feed(tree: SpanTree, event: RunEvent) -> None:
    """Add one trace or middleware event of the run (in seq order) to ``tree``."""
    kind, md, content = event.event_type, event.metadata, as_dict(event.content)
    tree.last_at = event.created_at
    if kind == "llm.start":
        llm = as_str(md.get("llm_run_id")) or f"seq-{event.seq}"
        prompt = content.get("messages")
        last = prompt[-1] if isinstance(prompt, list) and prompt else {}
        tree.start(
            event,
            f"llm:{llm}",
            "model",
            as_str(md.get("model")) or "model",
            model=as_str(md.get("model")),
            input=excerpt(as_dict(last).get("text")),
            message_count=md.get("message_count"),
            context=isinstance(md.get("context"), dict),
        )
    elif kind in _ENDS:
        llm = as_str(md.get("llm_run_id")) or ""
        failed = kind == "llm.error"
        output = as_dict(content.get("output"))
        tree.finish(
            event,
            f"llm:{llm}",
            "error" if failed else "ok",
            md.get("latency_ms"),
            model=as_str(md.get("model")),
            request_model=as_str(md.get("request_model")),
            usage=None if failed else call_usage(md),
            message_id=as_str(content.get("message_id")),
            output=excerpt(text_of(as_dict(output.get("data")).get("content")) or None),
            error_type=as_str(content.get("error_type")),
            error=excerpt(content.get("error"), ERROR_CHARS),
        )
    elif kind == "tool.start":
        tool = as_str(md.get("tool_run_id")) or f"seq-{event.seq}"
        name = as_str(content.get("name")) or "tool"
        tree.start(
            event,
            f"tool:{tool}",
            "tool",
            name,
            args=excerpt(content.get("args")),
            tool_call_id=as_str(md.get("tool_call_id")),
        )
    elif kind in _TOOL_ENDS:
        tool = as_str(md.get("tool_run_id")) or ""
        output = as_dict(content.get("output"))
        failed = kind == "tool.error" or output.get("status") == "error"
        text = excerpt(output.get("text"))
        tree.finish(
            event,
            f"tool:{tool}",
            "error" if failed else "ok",
            md.get("duration_ms"),
            output=text,
            error_type=as_str(content.get("error_type")),
            error=excerpt(content.get("error"), ERROR_CHARS) or (text if failed else None),
        )
    elif event.category in ("middleware", "trace"):
        tree.mark(event)


def _ms(at: datetime | None, origin: datetime) -> float | None:
    return None if at is None else round((at - origin).total_seconds() * 1000, 3)


def sum_usage(into: dict[str, int], usage: Any) -> None:
    """Add ``usage``'s ``USAGE_KEYS`` into ``into``."""
    for key in USAGE_KEYS:
        into[key] = into.get(key, 0) + int(as_dict(usage).get(key, 0))


def render_spans(tree: SpanTree, root: Span, ended: bool) -> list[dict[str, Any]]:
    """The spans of ``tree`` in creation order (``root`` first), each with its extent,
    duration, status and fields; ``ended``: the run has its terminal event."""
    spans = list(tree.spans.values())
    for span in spans:
        if span.kind in ("node", "subagent"):
            span.status = "error" if span.failed else "ok"
        elif span.end is None and span is not root:
            span.status = "unfinished" if ended else "running"
    # children were created after their parents: a reverse pass spreads extents, usage and
    # "running" upward
    for span in reversed(spans):
        parent = tree.spans.get(span.parent) if span.parent else None
        if parent is None or parent is root:
            continue
        parent.start = min(parent.start, span.start)
        reach = span.end or (root.end if ended else tree.last_at) or span.start
        parent.end = reach if parent.end is None else max(parent.end, reach)
        if isinstance(span.fields.get("usage"), dict):
            sum_usage(parent.fields.setdefault("usage", {}), span.fields["usage"])
        if span.status == "running" and parent.kind in ("node", "subagent"):
            parent.status = "running"
    out = []
    for span in spans:
        start_ms = _ms(span.start, root.start) or 0.0
        end_ms = _ms(span.end, root.start)
        duration = span.latency_ms
        if duration is None and end_ms is not None:
            duration = round(end_ms - start_ms, 3)
        fixed = {name: getattr(span, name) for name in _FIXED}
        out.append({**fixed, "start_ms": start_ms, "end_ms": end_ms, "duration_ms": duration})
        out[-1]["status"] = span.status
        out[-1].update(span.fields)
    return out
