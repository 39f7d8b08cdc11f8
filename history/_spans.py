"""A run's spans, rebuilt from its trace events (and what the viewer's readers share).

``spans_plan(thread_id, run_id, ...)`` reads one run (``store.read(thread, run_id=...)``) and
returns its span tree: the run at the root; under it a ``node`` span per LangGraph node step
of the root graph (``langgraph_step``, ``langgraph_node``); under those the ``model`` calls
(``llm.start`` → ``llm.end``/``llm.error``, joined by ``llm_run_id``) and ``tool`` calls
(``tool.start`` → ``tool.end``/``tool.error``, by ``tool_run_id``), and ``event`` marks
(``middleware:*``, ``custom:*``). Calls of a subagent (caller ``subagent:<graph>``) sit in a
``subagent`` span under the tool call that ran it, with their own node spans; a model called
inside a tool sits under that tool. The parent is the call each event names
(``journal.catalog.PARENT_SPAN_KEY``), so parallel subagents each stay under their own tool;
events written before it was named follow the order rule (the latest tool call still open):
see :mod:`history._span_tree`, which builds the tree.

Each span has ``start_ms``/``end_ms`` (milliseconds from the run's start, from ``created_at``;
``end_ms`` is ``None`` while it runs), ``duration_ms`` (the recorded latency of a call, else
``end_ms - start_ms``), ``status`` (``ok``, ``error``, ``running``, or ``unfinished``: the run
ended first), the error, a model call's ``usage`` (the store's rule,
``journal._runs.call_usage``: ``total_tokens`` = input + output when the provider reports it
missing or 0) and short excerpts of arguments and outputs. Node and subagent spans cover their
children; a node step the run's ``run.error`` names as the one that raised is an error.
``errors`` counts each failure once: the error spans with no error span under them. A
response is bounded: at most ``limit`` spans and about ``max_bytes`` bytes
(``truncated``/``size_limited`` say so), from at most ``READ_BUDGET`` events. ``last_seq`` is
the thread's last seq when the reads began: whoever follows the run's stream from it misses
no event the spans do not show (and may see again some they do).
"""

from __future__ import annotations

from typing import Any, Final

from history._catalog import utc_text
from history._reads import LastSeq, Plan, Read
from history._span_tree import (
    ERROR_CHARS,
    Span,
    SpanTree,
    as_dict,
    as_str,
    excerpt,
    feed,
    mark_failed,
    render_spans,
    sum_usage,
    text_of,
)
from history.errors import ThreadNotFoundError
from journal._runs import USAGE_KEYS, call_usage
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
_TERMINAL: Final = {
    "run.end": "success",
    "run.error": "error",
    "run.cancel": "cancelled",
    "run.interrupt": "interrupted",
}


class NotFoundError(JournalError, LookupError):
    """The thread exists but holds no such run, seq or model call (HTTP 404)."""


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


def spans_plan(
    thread_id: str, run_id: str, *, limit: int = 2000, max_bytes: int = 4 * 1024 * 1024
) -> Plan[dict[str, Any]]:
    """Plan: the spans of ``run_id`` in ``thread_id`` (see the module docstring)."""
    last_seq: int = yield LastSeq(thread_id)
    if last_seq == 0:
        raise ThreadNotFoundError(thread_id)
    lifecycle: list[RunEvent] = yield Read(
        thread_id, {"run_id": run_id, "category": "lifecycle", "limit": _PAGE}
    )
    first: list[RunEvent] = yield Read(thread_id, {"run_id": run_id, "limit": 1})
    if not first:
        raise NotFoundError(f"thread {thread_id!r} has no run {run_id!r}")
    tree = SpanTree(limit, max_bytes)
    opening = lifecycle[0] if lifecycle else first[0]
    root = Span("run", "run", run_id, None, opening.seq, opening.created_at)
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
            feed(tree, event)
        read += len(page)
        if len(page) < _PAGE:
            break
        cursor = page[-1].seq
    else:
        tree.truncated = True
    terminal = next((e for e in reversed(lifecycle) if e.event_type in _TERMINAL), None)
    info = as_dict(terminal.content) if terminal is not None else {}
    if terminal is not None:
        if terminal.event_type == "run.error":
            mark_failed(tree, terminal)
        root.end, root.end_seq = terminal.created_at, terminal.seq
        root.status = _TERMINAL[terminal.event_type]
        duration = info.get("duration_ms")
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            root.latency_ms = float(duration)
    spans = render_spans(tree, root, ended=terminal is not None)
    usage: dict[str, int] = {key: 0 for key in USAGE_KEYS}
    models: list[str] = []
    for span in spans:
        if span["kind"] == "model" and span["status"] != "running":
            sum_usage(usage, span.get("usage"))
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
        "started_at": utc_text(root.start),
        "ended_at": utc_text(root.end) if root.end is not None else None,
        "duration_ms": run["duration_ms"],
        "error_type": as_str(info.get("error_type")),
        "error": excerpt(info.get("error"), ERROR_CHARS),
        "models": models,
        "usage": usage,
        "llm_calls": sum(1 for s in spans if s["kind"] == "model"),
        "tool_calls": sum(1 for s in spans if s["kind"] == "tool"),
        "errors": _failures(spans),
        "spans": spans,
        "truncated": tree.truncated,
        "size_limited": tree.size_limited,
        "last_seq": last_seq,  # the thread's, before the reads: a follower starts after it
    }


def _failures(spans: list[dict[str, Any]]) -> int:
    """Error spans (the run's own left out) with no error span under them."""
    failed = [s for s in spans[1:] if s["status"] == "error"]
    above = {s["parent"] for s in failed}
    return sum(1 for s in failed if s["id"] not in above)
