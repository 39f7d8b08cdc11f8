"""Finding things in a thread: text search, the messages a marker took away, truncated events,
the model calls one by one.

* ``search_plan(thread_id, query)`` scans the thread newest first for ``query`` (case
  insensitive, literal) in the text of messages, the names and arguments of the tool calls AI
  messages make, tool names, arguments and outputs (``tool.*``), errors, and the outputs of
  model calls that are no thread message (``llm.end`` ``output``). A page holds at most
  ``limit`` hits (it ends with the event that reaches it) and scans at most ``scan``
  events: ``next_before_seq`` continues the search further back (``None``: it reached seq
  1). Each hit has an excerpt around the match.
* ``originals_plan(thread_id, seq)`` returns the journaled messages that the compaction or
  removal at ``seq`` took out of the state (timeline items, with their seqs), page by page,
  and the earlier summaries among them (a summary message has no message event of its own).
* ``truncations_plan(thread_id, ...)`` lists the message and middleware events of a seq window
  whose content or metadata the store cut to its caps, with their original size.
* ``calls_plan(thread_id, ...)`` pages through the thread's ended model calls (``llm.end`` and
  ``llm.error``) with their tokens, latency, model and caller: the per-call token series.
"""

from __future__ import annotations

import re
from typing import Any, Final

from history._bounded import DEFAULT_PAGE_BYTES, ScanChunks, event_bytes
from history._catalog import (
    MESSAGE_TYPES,
    MODEL_CALL,
    REMOVE,
    SUMMARIZE,
    message_data,
    message_id,
    payload_ids,
    summary_message_id,
)
from history._reads import LastSeq, Plan, Read
from history._spans import NotFoundError, as_dict, as_str, excerpt, read_upto, text_of
from history.errors import ThreadNotFoundError
from history.timeline import _message_item, is_hidden, taken_seq_range
from journal._runs import call_usage
from journal.encoding import dumps_plain
from journal.events import RunEvent

__all__ = [
    "MAX_QUERY",
    "calls_plan",
    "event_at",
    "find_call_start",
    "llm_run_id",
    "nearest_event",
    "originals_plan",
    "search_plan",
    "truncations_plan",
]

#: The longest query accepted.
MAX_QUERY: Final = 200
_CHUNK: Final = 200
_AROUND: Final = 60  # characters of excerpt on each side of a match
_TOOL_TYPES: Final = ("tool.start", "tool.end", "tool.error", "llm.end")
_SEARCHED: Final = (*MESSAGE_TYPES, *_TOOL_TYPES)
_ENDS: Final = ("llm.end", "llm.error")
_CALL_CHUNK: Final = 100
_SCAN: Final = 50  # events per read when looking for a call's other half
_SCAN_BUDGET: Final = 2000  # events read at most to find it


def event_at(thread_id: str, seq: int) -> Plan[RunEvent]:
    """Plan: the event stored at ``seq`` (``ThreadNotFoundError``/``NotFoundError`` else)."""
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    found: list[RunEvent] = yield Read(thread_id, {"after_seq": seq - 1, "limit": 1})
    if not found or found[0].seq != seq:
        raise NotFoundError(f"thread {thread_id!r} has no event at seq {seq}")
    return found[0]


def nearest_event(
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


def llm_run_id(event: RunEvent) -> str | None:
    """The ``llm_run_id`` of a model call event (joins its start and end)."""
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
        end = yield from nearest_event(
            thread_id,
            event.seq,
            False,
            ("llm.end",),
            lambda e: isinstance(e.content, dict) and e.content.get("message_id") == wanted,
        )
    elif end is None:
        raise NotFoundError(f"seq {event.seq} is a {kind} event, not a model call")
    llm = llm_run_id(end) if end is not None else None
    start = None
    if end is not None and llm is not None:
        start = yield from nearest_event(
            thread_id, end.seq, False, (MODEL_CALL,), lambda e: llm_run_id(e) == llm
        )
    if start is None:
        raise NotFoundError(f"no model call is recorded for the event at seq {event.seq}")
    return start


def _fields(event: RunEvent) -> list[tuple[str, str]]:
    """``(field, text)`` pairs of ``event`` that search looks in."""
    kind = event.event_type
    content = event.content if isinstance(event.content, dict) else {}
    if kind in MESSAGE_TYPES:
        data = message_data(event)
        found = [("text", text_of(data.get("content")))]
        for call in data.get("tool_calls") or ():
            if isinstance(call, dict):
                found.append(("tool_call", f"{call.get('name')} {dumps_plain(call.get('args'))}"))
        if kind == "message.tool" and isinstance(data.get("name"), str):
            found.append(("tool_name", data["name"]))
        return found
    if kind == "llm.end":
        output = content.get("output")
        stored = output.get("data") if isinstance(output, dict) else None
        return [("output", text_of(stored.get("content")))] if isinstance(stored, dict) else []
    name = content.get("name")
    found = [("tool_name", name)] if isinstance(name, str) else []
    if kind == "tool.start":
        found.append(("args", excerpt(content.get("args"), 100_000) or ""))
    elif kind == "tool.end":
        output = content.get("output")
        text = output.get("text") if isinstance(output, dict) else None
        found.append(("output", text if isinstance(text, str) else ""))
    else:
        found.append(("error", f"{content.get('error_type', '')}: {content.get('error', '')}"))
    return found


def _hit(event: RunEvent, fields: list[str], text: str, match: re.Match[str]) -> dict[str, Any]:
    begin = max(0, match.start() - _AROUND)
    end = min(len(text), match.end() + _AROUND)
    lead = "…" if begin > 0 else ""
    return {
        "seq": event.seq,
        "run_id": event.run_id,
        "event_type": event.event_type,
        "field": fields[0],
        "fields": fields,
        "message_id": message_id(event) if event.category == "message" else None,
        "excerpt": lead + text[begin:end] + ("…" if end < len(text) else ""),
        "match_start": len(lead) + match.start() - begin,
        "match_length": match.end() - match.start(),
        "hidden": event.category == "message" and is_hidden(event),
    }


def search_plan(
    thread_id: str,
    query: str,
    *,
    before_seq: int | None = None,
    limit: int = 50,
    scan: int = 5000,
) -> Plan[dict[str, Any]]:
    """Plan: hits of ``query`` in the thread, newest first (see the module docstring)."""
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY:
        raise ValueError(f"query must be 1 to {MAX_QUERY} characters, not blank")
    last = yield LastSeq(thread_id)
    if last == 0:
        raise ThreadNotFoundError(thread_id)
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    cursor = min(before_seq or last + 1, last + 1)
    hits: list[dict[str, Any]] = []
    scanned = 0
    reached_start = cursor <= 1
    chunks = ScanChunks(_CHUNK)
    while not reached_start and len(hits) < limit and scanned < scan:
        want = min(chunks.size, scan - scanned)
        page: list[RunEvent] = yield Read(
            thread_id, {"before_seq": cursor, "limit": want, "event_type": list(_SEARCHED)}
        )
        full, short, chars = False, len(page) < want, 0
        for event in reversed(page):
            scanned += 1
            cursor = event.seq
            fields = _fields(event)
            chars += sum(len(text) for _, text in fields)
            matched = [(f, t, m) for f, t in fields if (m := pattern.search(t))]
            if matched:
                _, text, found = matched[0]
                hits.append(_hit(event, [f for f, _, _ in matched], text, found))
            if len(hits) >= limit:
                full = True
                break
        chunks.seen(len(page), chars)
        del page  # not held while the next page is read
        reached_start = short and not full
    return {
        "thread_id": thread_id,
        "query": query,
        "hits": hits,
        "scanned": scanned,
        "has_more": not reached_start,
        "next_before_seq": None if reached_start else cursor,
    }


def originals_plan(
    thread_id: str,
    seq: int,
    *,
    after_seq: int | None = None,
    limit: int = 50,
    max_bytes: int = DEFAULT_PAGE_BYTES,
) -> Plan[dict[str, Any]]:
    """Plan: a page of the messages the marker at ``seq`` took out of the state: at most
    ``limit`` and about ``max_bytes`` (at least one); ``next_after_seq`` reads on."""
    marker = yield from event_at(thread_id, seq)
    key = "replaced_message_ids" if marker.event_type == SUMMARIZE else "removed_message_ids"
    ids = payload_ids(marker, key)
    if marker.event_type not in (SUMMARIZE, REMOVE) or not ids:
        raise NotFoundError(f"seq {seq} is no compaction or removal marker")
    first, last = yield from taken_seq_range(thread_id, marker, key)
    wanted = set(ids)
    items: list[Any] = []
    cursor = max(after_seq or 0, (first or seq) - 1)
    more = False
    size = 0
    window = first is not None and last is not None
    while window and not more:
        page, window = yield from read_upto(
            thread_id, cursor, last, _CHUNK, {"event_type": list(MESSAGE_TYPES)}
        )
        for event in page:
            if message_id(event) not in wanted:
                cursor = event.seq
                continue
            cost = event_bytes(event)
            if len(items) == limit or (items and size + cost > max_bytes):
                more = True
                break
            cursor, size = event.seq, size + cost
            item: dict[str, Any] = dict(_message_item(event))
            if event.metadata.get("truncated"):
                item["truncated"] = True
            items.append(item)
    earlier = []
    if after_seq is None:  # earlier summaries among the ids: found once, on the first page
        earlier = yield from _earlier_summaries(thread_id, seq, wanted)
    return {
        "thread_id": thread_id,
        "seq": seq,
        "kind": "summary" if marker.event_type == SUMMARIZE else "removal",
        "message_ids": ids,
        "first_seq": first,
        "last_seq": last,
        "items": items,
        "earlier_summaries": earlier,
        "has_more": more,
        "next_after_seq": cursor if more else None,
    }


def _earlier_summaries(thread_id: str, seq: int, ids: set[str]) -> Plan[list[dict[str, Any]]]:
    page: list[RunEvent] = yield Read(
        thread_id,
        {"before_seq": seq, "limit": _CHUNK, "category": "middleware", "event_type": SUMMARIZE},
    )
    found = []
    for event in page:
        payload = event.content if isinstance(event.content, dict) else {}
        sid = summary_message_id(event)
        if sid is not None and sid in ids:
            text = payload.get("summary")
            found.append(
                {"id": sid, "seq": event.seq, "summary": excerpt(text, 2000) if text else None}
            )
    return found


def truncations_plan(
    thread_id: str, *, after_seq: int, before_seq: int | None = None, limit: int = 1000
) -> Plan[dict[str, Any]]:
    """Plan: the truncated message/middleware events with ``after_seq < seq < before_seq``,
    reading at most ``limit`` of the window's events (``next_after_seq`` reads on)."""
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    upto = None if before_seq is None else before_seq - 1
    filters = {"category": ["message", "middleware"]}
    page, more = yield from read_upto(thread_id, after_seq, upto, limit, filters)
    cut = []
    for event in page:
        md = event.metadata
        if md.get("truncated") or md.get("metadata_truncated"):
            size = md.get("original_bytes")
            cut.append(
                {
                    "seq": event.seq,
                    "event_type": event.event_type,
                    "original_bytes": size if isinstance(size, int) else None,
                    "metadata_truncated": bool(md.get("metadata_truncated")),
                }
            )
    return {
        "thread_id": thread_id,
        "events": cut,
        "has_more": more,
        "next_after_seq": page[-1].seq if page else after_seq,
    }


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
        **call_usage({} if failed else md),
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
    points: list[dict[str, Any]] = []  # the calls' points, not their events: outputs are big
    more = True
    chunks = ScanChunks(_CALL_CHUNK)
    while len(points) <= limit:
        want = min(chunks.size, limit + 1 - len(points))
        key = "after_seq" if forward else "before_seq"
        page: list[RunEvent] = yield Read(thread_id, {key: cursor, "limit": want, **filters})
        points.extend(_call_point(e) for e in (page if forward else reversed(page)))
        chunks.seen(len(page), sum(len(t) for e in page for _, t in _fields(e)))
        if len(page) < want:
            more = False
            break
        cursor = page[-1].seq if forward else page[0].seq
        del page  # not held while the next page is read
    more = more and len(points) > limit
    points = points[:limit]
    calls = points if forward else points[::-1]
    return {
        "thread_id": thread_id,
        "calls": calls,
        "has_more": more,
        "next_before_seq": calls[0]["seq"] if more and not forward and calls else None,
        "next_after_seq": calls[-1]["seq"] if calls else after_seq,
    }
