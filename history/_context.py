"""What a model call received: its exact input, with what changed it marked, and its size;
and a thread's model calls one by one (the per-call token series).

``context_plan(thread_id, seq)`` takes the seq of an ``llm.start``, of its ``llm.end`` /
``llm.error``, or of a ``message.ai`` (the call that produced that answer) and returns the
call's input messages, system message first, rebuilt from the call's record exactly as
:func:`history.replay` rebuilds it (``view="model"`` at the ``llm.start``, the same
:class:`history._walk.StateWalk`): for an agent call the two are equal; for any other call (a
subagent's, a middleware's own model) it is that call's record resolved the same way.

Each message says where it came from (``origin``):

* ``state``   — the thread's message as journaled (``seq``: its ``message.*`` event);
* ``summary`` — a summary a compaction put into the state (``marker_seq``);
* ``edited``  — a request-only edit: the call received another version of the journaled
  message with this id (``original_seq``), e.g. a tool result cleared by context editing;
* ``added``   — in the request only: the system prompt, a message a middleware injected into
  the request, a subagent's own messages;
* ``unresolved`` — the journal cannot rebuild it (``reason`` as :func:`history.verify` says).

``markers`` lists the compactions and removals that shaped this context, each with
``before_index`` (where in ``messages`` it took effect): the summary markers whose summary is
in the input, and the removals after the latest of them (at most ``MAX_MARKERS``, newest).

``tokens``: ``count`` is the provider's ``input_tokens`` from the call's ``llm.end`` when it
reported them (``source: "provider"``), else ``approximate`` (``source: "approximate"``:
LangChain's ``count_tokens_approximately``, about 4 characters a token, which the
summarization middleware uses for its triggers too). ``messages`` is a page (``offset``,
``limit``, at most ``max_bytes`` of JSON, at least one message); ``message_count`` counts all.

``calls_plan(thread_id, ...)`` pages through the thread's ended model calls (``llm.end`` and
``llm.error``) with their tokens, latency, model and caller.
"""

from __future__ import annotations

from typing import Any, Final

from history._catalog import (
    MESSAGE_TYPES,
    MODEL_CALL,
    REMOVE,
    SUMMARIZE,
    TIMELINE_TYPES,
    is_agent_call,
    message_id,
    payload_ids,
    summary_message_id,
)
from history._reads import LastSeq, Plan, Read
from history._spans import NotFoundError, as_dict, as_str, read_upto, usage_of
from history._walk import StateWalk, call_record
from history.errors import ThreadNotFoundError
from journal.catalog import stored_message_id
from journal.encoding import dumps_plain
from journal.events import RunEvent

__all__ = [
    "MAX_MARKERS",
    "approximate_tokens",
    "calls_plan",
    "context_plan",
    "event_at",
    "find_call_start",
]

#: The most markers one context lists.
MAX_MARKERS: Final = 20
_PAGE: Final = 1000
_SCAN: Final = 50  # events per read when looking for a call's other half
_SCAN_BUDGET: Final = 2000  # events read at most to find it
_TYPES: Final = (*TIMELINE_TYPES, MODEL_CALL)
_ENDS: Final = ("llm.end", "llm.error")
_STATUS: Final = {"llm.end": "ok", "llm.error": "error"}
_CALL_CHUNK: Final = 100


def event_at(thread_id: str, seq: int) -> Plan[RunEvent]:
    """Plan: the event stored at ``seq`` (``ThreadNotFoundError``/``NotFoundError`` else)."""
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    found: list[RunEvent] = yield Read(thread_id, {"after_seq": seq - 1, "limit": 1})
    if not found or found[0].seq != seq:
        raise NotFoundError(f"thread {thread_id!r} has no event at seq {seq}")
    return found[0]


def _scan(
    thread_id: str, cursor: int, forward: bool, types: tuple[str, ...], match: Any
) -> Plan[RunEvent | None]:
    """Plan: the nearest event of ``types`` from ``cursor`` on which ``match`` holds."""
    read = 0
    key = "after_seq" if forward else "before_seq"
    while read < _SCAN_BUDGET:
        page: list[RunEvent] = yield Read(
            thread_id, {key: cursor, "limit": _SCAN, "category": "trace", "event_type": types}
        )
        for event in page if forward else reversed(page):
            if match(event):
                return event
        read += len(page)
        if len(page) < _SCAN:
            return None
        cursor = page[-1].seq if forward else page[0].seq
    return None


def _llm_run_id(event: RunEvent) -> str | None:
    value = event.metadata.get("llm_run_id")
    return value if isinstance(value, str) else None


def find_call_start(thread_id: str, event: RunEvent) -> Plan[RunEvent]:
    """Plan: the ``llm.start`` of the call ``event`` belongs to (itself, its end, or the AI
    message it produced)."""
    kind = event.event_type
    if kind == MODEL_CALL:
        return event
    end: RunEvent | None = event if kind in _ENDS else None
    if kind == "message.ai":
        wanted = message_id(event)
        end = yield from _scan(
            thread_id,
            event.seq,
            False,
            ("llm.end",),
            lambda e: isinstance(e.content, dict) and e.content.get("message_id") == wanted,
        )
    elif end is None:
        raise NotFoundError(f"seq {event.seq} is a {kind} event, not a model call")
    llm = _llm_run_id(end) if end is not None else None
    start = None
    if end is not None and llm is not None:
        start = yield from _scan(
            thread_id, end.seq, False, (MODEL_CALL,), lambda e: _llm_run_id(e) == llm
        )
    if start is None:
        raise NotFoundError(f"no model call is recorded for the event at seq {event.seq}")
    return start


def approximate_tokens(contents: list[Any]) -> int:
    """LangChain's ``count_tokens_approximately`` of stored messages (unreadable ones skipped)."""
    from langchain_core.messages.utils import count_tokens_approximately

    from journal.messages import content_to_message

    messages = []
    for content in contents:
        try:
            messages.append(content_to_message(content))
        except ValueError:  # cut to {"$truncated": ...} by the store's content cap
            continue
    return count_tokens_approximately(messages)


def _seq_range(ids: list[str], seqs: dict[str, int]) -> tuple[int | None, int | None]:
    found = [seqs[i] for i in ids if i in seqs]
    return (min(found), max(found)) if found else (None, None)


def _marker(event: RunEvent, seqs: dict[str, int]) -> dict[str, Any] | None:
    """The marker a compaction or removal makes (``None``: a reorder that removes nothing)."""
    payload = event.content if isinstance(event.content, dict) else {}
    if event.event_type == SUMMARIZE:
        ids = payload_ids(event, "replaced_message_ids")
        count = payload.get("replaced_count")
        kind = "summary"
    else:
        ids = payload_ids(event, "removed_message_ids")
        if not ids:
            return None
        count, kind = len(ids), "removal"
    first, last = _seq_range(ids, seqs)
    return {
        "kind": kind,
        "seq": event.seq,
        "count": count if isinstance(count, int) and not isinstance(count, bool) else len(ids),
        "message_ids": ids,
        "first_seq": first,
        "last_seq": last,
        "summary_id": summary_message_id(event) if kind == "summary" else None,
        "inferred": bool(event.metadata.get("inferred")),
    }


def _classify(
    walk: StateWalk,
    index: int,
    entry: tuple[str | None, str],
    seqs: dict[str, int],
    summaries: dict[str, int],
) -> dict[str, Any]:
    mid, digest = entry
    contents, problems = walk.resolve([entry])
    row: dict[str, Any] = {"index": index, "id": mid, "digest": digest or None}
    if problems:
        return {**row, "origin": "unresolved", "reason": problems[0].reason, "message": None}
    content = contents[0]
    row.update(type=_type(content), message=content)
    held = walk.entries.get(mid) if mid is not None else None
    if held is not None and held.digest_of(False) == digest:
        if mid is not None and mid in summaries:
            return {**row, "origin": "summary", "marker_seq": summaries[mid]}
        return {**row, "origin": "state", "seq": seqs.get(mid or ""), "truncated": held.truncated}
    if mid is not None and mid in seqs:
        return {**row, "origin": "edited", "original_seq": seqs[mid]}
    return {**row, "origin": "added"}


def _place(markers: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The markers that shaped ``rows``, each with ``before_index``."""
    at_summary = {r.get("marker_seq"): r["index"] for r in rows if r["origin"] == "summary"}
    floor = max((s for s in at_summary if isinstance(s, int)), default=0)
    placed = []
    for marker in markers:
        if marker["kind"] == "summary":
            if marker["seq"] not in at_summary:
                continue
            where = at_summary[marker["seq"]]
        else:
            if marker["seq"] < floor:
                continue
            after = marker["last_seq"] or 0
            where = next(
                (r["index"] for r in rows if isinstance(r.get("seq"), int) and r["seq"] > after),
                len(rows),
            )
        placed.append({**marker, "before_index": where})
    return placed[-MAX_MARKERS:]


def context_plan(
    thread_id: str, seq: int, *, offset: int = 0, limit: int = 200, max_bytes: int = 4 << 20
) -> Plan[dict[str, Any]]:
    """Plan: the input of the model call at ``seq`` (see the module docstring)."""
    start = yield from find_call_start(thread_id, (yield from event_at(thread_id, seq)))
    walk = StateWalk(thread_id)
    seqs: dict[str, int] = {}  # latest message event per id
    summaries: dict[str, int] = {}  # summary message id -> its marker's seq
    markers: list[dict[str, Any]] = []
    cursor, more = 0, True
    while more:
        page, more = yield from read_upto(
            thread_id, cursor, start.seq, _PAGE, {"event_type": _TYPES}
        )
        for event in page:
            if event.event_type in MESSAGE_TYPES:
                seqs[message_id(event) or f"\0seq-{event.seq}"] = event.seq
            elif event.event_type in (SUMMARIZE, REMOVE):
                marker = _marker(event, seqs)
                if marker is not None:
                    markers.append(marker)
                    if marker["summary_id"] is not None:
                        summaries[marker["summary_id"]] = event.seq
            walk.feed((event,))
        cursor = page[-1].seq if page else cursor
    recorded = call_record(start) is not None
    if recorded and walk.call is None:  # a delta whose base record the journal lacks
        rows = [
            {
                "index": 0,
                "id": None,
                "digest": None,
                "origin": "unresolved",
                "reason": "record_base_missing",
                "message": None,
            }
        ]
    elif recorded:
        rows = [_classify(walk, i, e, seqs, summaries) for i, e in enumerate(walk.call or [])]
    else:  # journaled before records existed: the state view, as replay gives it
        rows = [
            {
                "index": i,
                "id": stored_message_id(c),
                "digest": None,
                "type": _type(c),
                "message": c,
                "origin": "state",
                "seq": seqs.get(stored_message_id(c) or ""),
            }
            for i, c in enumerate(walk.contents())
        ]
    contents = [r["message"] for r in rows if r["message"] is not None]
    end = yield from _scan(
        thread_id, start.seq, True, _ENDS, lambda e: _llm_run_id(e) == _llm_run_id(start)
    )
    reported = usage_of(end.metadata)["input_tokens"] if end is not None else 0
    approx = approximate_tokens(contents)
    page_rows: list[dict[str, Any]] = []
    size = 0
    for row in rows[offset : offset + limit]:
        cost = len(dumps_plain(row))
        if page_rows and size + cost > max_bytes:
            break
        page_rows.append(row)
        size += cost
    following = offset + len(page_rows)
    md = start.metadata
    return {
        "thread_id": thread_id,
        "seq": start.seq,
        "end_seq": end.seq if end is not None else None,
        "run_id": start.run_id,
        "llm_run_id": _llm_run_id(start),
        "caller": md.get("caller") if isinstance(md.get("caller"), str) else None,
        "model": (end.metadata.get("model") if end is not None else None) or md.get("model"),
        "agent_call": is_agent_call(start),
        "recorded": recorded,
        "exact": recorded and all(r["origin"] != "unresolved" for r in rows),
        "status": "running" if end is None else _STATUS[end.event_type],
        "message_count": len(rows),
        "messages": page_rows,
        "offset": offset,
        "next_offset": following if following < len(rows) else None,
        "size_limited": following < min(len(rows), offset + limit),
        "markers": _place(markers, rows),
        "tokens": {
            "count": reported if reported > 0 else approx,
            "source": "provider" if reported > 0 else "approximate",
            "input_tokens": reported if reported > 0 else None,
            "approximate": approx,
        },
    }


def _type(content: Any) -> str | None:
    kind = content.get("type") if isinstance(content, dict) else None
    return kind if isinstance(kind, str) else None


def _call_point(event: RunEvent) -> dict[str, Any]:
    md, content = event.metadata, as_dict(event.content)
    failed = event.event_type == "llm.error"
    latency = md.get("latency_ms")
    return {
        "seq": event.seq,
        "run_id": event.run_id,
        "llm_run_id": as_str(md.get("llm_run_id")),
        "caller": as_str(md.get("caller")),
        "model": as_str(md.get("model")),
        "status": "error" if failed else "ok",
        "latency_ms": latency if isinstance(latency, int | float) else None,
        "message_id": as_str(content.get("message_id")),
        **usage_of({} if failed else md),
    }


def calls_plan(
    thread_id: str,
    *,
    before_seq: int | None = None,
    after_seq: int | None = None,
    run_id: str | None = None,
    limit: int = 500,
) -> Plan[dict[str, Any]]:
    """Plan: a page of the thread's ended model calls, ascending by seq. Without ``after_seq``
    the newest ``limit`` below ``before_seq`` (``next_before_seq`` walks back); with it, the
    first ``limit`` after it (``next_after_seq`` reads on)."""
    if before_seq is not None and after_seq is not None:
        raise ValueError("give before_seq or after_seq, not both")
    last = yield LastSeq(thread_id)
    if last == 0:
        raise ThreadNotFoundError(thread_id)
    forward = after_seq is not None
    cursor = after_seq if after_seq is not None else (before_seq or last + 1)
    filters: dict[str, Any] = {"category": "trace", "event_type": list(_ENDS)}
    if run_id is not None:
        filters["run_id"] = run_id
    taken: list[RunEvent] = []
    more = True
    while len(taken) <= limit:
        want = min(_CALL_CHUNK, limit + 1 - len(taken))
        key = "after_seq" if forward else "before_seq"
        page: list[RunEvent] = yield Read(thread_id, {key: cursor, "limit": want, **filters})
        taken.extend(page if forward else reversed(page))
        if len(page) < want:
            more = False
            break
        cursor = page[-1].seq if forward else page[0].seq
    more = more and len(taken) > limit
    taken = taken[:limit]
    events = taken if forward else taken[::-1]
    return {
        "thread_id": thread_id,
        "calls": [_call_point(e) for e in events],
        "has_more": more,
        "next_before_seq": events[0].seq if more and not forward and events else None,
        "next_after_seq": events[-1].seq if events else after_seq,
    }
