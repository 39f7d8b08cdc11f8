"""A run's spans, rebuilt from its trace events (and what the viewer's readers share).

``spans_plan(thread_id, run_id, ...)`` reads one run (``store.read(thread, run_id=...)``) and
returns its span tree: the run at the root; under it a ``node`` span per LangGraph node step
of the root graph (``langgraph_step``, ``langgraph_node``); under those the ``model`` calls
(``llm.start`` → ``llm.end``/``llm.error``, joined by ``llm_run_id``) and ``tool`` calls
(``tool.start`` → ``tool.end``/``tool.error``, by ``tool_run_id``), and ``event`` marks
(``middleware:*``, ``custom:*``). Calls of a subagent (caller ``subagent:<graph>``) sit in a
``subagent`` span under the tool call that was open when they started (the latest one, if
several run in parallel), with their own node spans; a model called inside a tool sits under
that tool. Seq order is the order things happened in (one journal's buffer), so nesting is
decided by seqs, never by clocks.

Each span has ``start_ms``/``end_ms`` (milliseconds from the run's start, from ``created_at``;
``end_ms`` is ``None`` while it runs), ``duration_ms`` (the recorded latency of a call, else
``end_ms - start_ms``), ``status`` (``ok``, ``error``, ``running``, or ``unfinished``: the run
ended first), the error, a model call's ``usage`` (the store's rule,
``journal._runs.call_usage``: ``total_tokens`` = input + output when the provider reports it
missing or 0) and short excerpts of arguments and outputs. Node and subagent spans cover their
children. A response is bounded: at most ``limit`` spans and about
``max_bytes`` bytes (``truncated``/``size_limited`` say so), from at most ``READ_BUDGET`` events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from history._reads import LastSeq, Plan, Read
from history.errors import ThreadNotFoundError
from journal._runs import USAGE_KEYS, call_usage
from journal.encoding import dumps_plain
from journal.errors import JournalError
from journal.events import RunEvent

__all__ = [
    "READ_BUDGET",
    "NotFoundError",
    "as_dict",
    "as_str",
    "excerpt",
    "read_upto",
    "spans_plan",
    "text_of",
]

#: The most events one spans request reads (a run larger than this is shown in part).
READ_BUDGET: Final = 50_000
_PAGE: Final = 1000
_EXCERPT: Final = 500
_ERROR_CHARS: Final = 2000
_SPAN_BYTES: Final = 400  # a span's fixed fields in JSON
_ENDS: Final = ("llm.end", "llm.error")
_TOOL_ENDS: Final = ("tool.end", "tool.error")
_FIXED: Final = ("id", "parent", "kind", "name", "seq", "end_seq", "caller", "node", "step")
_TERMINAL: Final = {
    "run.end": "success",
    "run.error": "error",
    "run.cancel": "cancelled",
    "run.interrupt": "interrupted",
}


class NotFoundError(JournalError, LookupError):
    """The thread exists but holds no such run, seq or model call (HTTP 404)."""


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


def as_str(value: Any) -> str | None:
    """``value`` if it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def read_upto(
    thread_id: str, after_seq: int, upto: int | None, limit: int, filters: dict[str, Any]
) -> Plan[tuple[list[RunEvent], bool]]:
    """Plan: the first ``limit`` matching events with ``after_seq < seq <= upto`` (``None``: no
    bound), and whether the window holds more. (``read`` given both cursors returns the *last*
    ``limit`` events below ``before_seq``: a forward walk reads with ``after_seq`` alone.)"""
    page: list[RunEvent] = yield Read(
        thread_id, {"after_seq": after_seq, "limit": limit, **filters}
    )
    inside = [e for e in page if upto is None or e.seq <= upto]
    return inside, len(inside) == limit


def _step(metadata: dict[str, Any]) -> int | None:
    step = metadata.get("langgraph_step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


@dataclass
class _Span:
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
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Tree:
    """The spans of one run as its events are fed in seq order."""

    limit: int
    max_bytes: int
    spans: dict[str, _Span] = field(default_factory=dict)
    open_tools: list[_Span] = field(default_factory=list)
    groups: dict[tuple[str, ...], str] = field(default_factory=dict)
    size: int = 0
    truncated: bool = False
    size_limited: bool = False
    last_at: datetime | None = None

    def _add(self, span: _Span) -> _Span | None:
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

    def _group(self, key: tuple[str, ...], make: _Span) -> str | None:
        known = self.groups.get(key)
        if known is None and self._add(make) is not None:
            known = self.groups[key] = make.id
        return known

    def parent_of(self, event: RunEvent, kind: str) -> str | None:
        """Where a new call or mark of ``event`` goes (creating node/subagent spans)."""
        md = event.metadata
        caller, node, step = as_str(md.get("caller")), as_str(md.get("langgraph_node")), _step(md)
        opened = self.open_tools[-1] if self.open_tools else None
        scope = "run"
        if caller is not None and caller.startswith("subagent:"):
            scope = opened.id if opened is not None else "run"
            name = caller.removeprefix("subagent:")
            made = _new(event, f"subagent:{event.seq}", "subagent", name, scope, in_node=False)
            group = self._group(("subagent", scope, caller), made)
            if group is None:
                return None
            scope = group
        elif (
            kind == "model"
            and opened is not None
            and (opened.caller, opened.step, opened.node) == (caller, step, node)
        ):
            return opened.id  # a model called inside a tool of this node
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


def _new(
    event: RunEvent, span_id: str, kind: str, name: str, parent: str, *, in_node: bool = True
) -> _Span:
    """A span starting at ``event``, attributed to its caller (and node, if ``in_node``)."""
    md = event.metadata
    node, step = (as_str(md.get("langgraph_node")), _step(md)) if in_node else (None, None)
    caller = as_str(md.get("caller"))
    return _Span(span_id, kind, name, parent, event.seq, event.created_at, caller, node, step)


def _feed(tree: _Tree, event: RunEvent) -> None:
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
            error=excerpt(content.get("error"), _ERROR_CHARS),
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
            error=excerpt(content.get("error"), _ERROR_CHARS) or (text if failed else None),
        )
    elif event.category in ("middleware", "trace"):
        tree.mark(event)


def _ms(at: datetime | None, origin: datetime) -> float | None:
    return None if at is None else round((at - origin).total_seconds() * 1000, 3)


def _sum_usage(into: dict[str, int], usage: Any) -> None:
    for key in USAGE_KEYS:
        into[key] = into.get(key, 0) + int(as_dict(usage).get(key, 0))


def _render(tree: _Tree, root: _Span, ended: bool) -> list[dict[str, Any]]:
    spans = list(tree.spans.values())
    for span in spans:
        if span.kind in ("node", "subagent"):
            span.status = "ok"
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
            _sum_usage(parent.fields.setdefault("usage", {}), span.fields["usage"])
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


def spans_plan(
    thread_id: str, run_id: str, *, limit: int = 2000, max_bytes: int = 4 * 1024 * 1024
) -> Plan[dict[str, Any]]:
    """Plan: the spans of ``run_id`` in ``thread_id`` (see the module docstring)."""
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    lifecycle: list[RunEvent] = yield Read(
        thread_id, {"run_id": run_id, "category": "lifecycle", "limit": _PAGE}
    )
    first: list[RunEvent] = yield Read(thread_id, {"run_id": run_id, "limit": 1})
    if not first:
        raise NotFoundError(f"thread {thread_id!r} has no run {run_id!r}")
    tree = _Tree(limit, max_bytes)
    opening = lifecycle[0] if lifecycle else first[0]
    root = _Span("run", "run", run_id, None, opening.seq, opening.created_at)
    tree.spans["run"] = root
    cursor, read = 0, 0
    while read < READ_BUDGET:
        page: list[RunEvent] = yield Read(
            thread_id,
            {
                "run_id": run_id,
                "category": ["trace", "middleware"],
                "after_seq": cursor,
                "limit": min(_PAGE, READ_BUDGET - read),
            },
        )
        for event in page:
            _feed(tree, event)
        read += len(page)
        if len(page) < _PAGE:
            break
        cursor = page[-1].seq
    else:
        tree.truncated = True
    terminal = next((e for e in reversed(lifecycle) if e.event_type in _TERMINAL), None)
    info = as_dict(terminal.content) if terminal is not None else {}
    if terminal is not None:
        root.end, root.end_seq = terminal.created_at, terminal.seq
        root.status = _TERMINAL[terminal.event_type]
        duration = info.get("duration_ms")
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            root.latency_ms = float(duration)
    spans = _render(tree, root, ended=terminal is not None)
    usage: dict[str, int] = {key: 0 for key in USAGE_KEYS}
    models: list[str] = []
    for span in spans:
        if span["kind"] == "model" and span["status"] != "running":
            _sum_usage(usage, span.get("usage"))
            if isinstance(span.get("model"), str) and span["model"] not in models:
                models.append(span["model"])
    if isinstance(info.get("usage"), dict):  # the run's own totals count every call
        usage = call_usage(info)
    models += [m for m in as_dict(info.get("usage_by_model")) if m not in models]
    run = spans[0]
    return {
        "thread_id": thread_id,
        "run_id": run_id,
        "status": root.status if terminal is not None else "running",
        "started_at": root.start.isoformat(),
        "ended_at": root.end.isoformat() if root.end is not None else None,
        "duration_ms": run["duration_ms"],
        "error_type": as_str(info.get("error_type")),
        "error": excerpt(info.get("error"), _ERROR_CHARS),
        "models": models,
        "usage": usage,
        "llm_calls": sum(1 for s in spans if s["kind"] == "model"),
        "tool_calls": sum(1 for s in spans if s["kind"] == "tool"),
        "errors": sum(1 for s in spans[1:] if s["status"] == "error"),
        "spans": spans,
        "truncated": tree.truncated,
        "size_limited": tree.size_limited,
    }
