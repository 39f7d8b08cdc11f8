"""What a model call received: its exact input, with what changed it marked, and its size.

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
* ``unresolved`` — the journal cannot rebuild it (``reason`` as :func:`history.verify` says,
  or ``not_a_message``: what is stored for it is no message object).

``markers`` lists the compactions and removals that shaped this context, each with
``before_index`` (where in ``messages`` it took effect): the summary markers whose summary is
in the input, and the removals after the latest of them (at most ``MAX_MARKERS``, newest).

``tokens``: ``count`` is the provider's ``input_tokens`` from the call's ``llm.end`` when it
reported them (``source: "provider"``), else ``approximate`` (``source: "approximate"``:
LangChain's ``count_tokens_approximately``, about 4 characters a token, which the
summarization middleware uses for its triggers too). ``messages`` is a page (``offset``,
``limit``, at most ``max_bytes`` of JSON, at least one message); ``message_count`` counts all.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Final

from history._catalog import (
    MESSAGE_TYPES,
    MODEL_CALL,
    REMOVE,
    SUMMARIZE,
    TIMELINE_TYPES,
    as_str,
    is_agent_call,
    message_id,
    payload_ids,
    summary_message_id,
)
from history._reads import Plan, Read
from history._search import event_at, find_call_start, llm_run_id, nearest_event
from history._spans import read_upto
from history._walk import StateWalk, call_record
from journal._runs import call_usage
from journal.catalog import stored_message_id
from journal.encoding import dumps_plain
from journal.events import RunEvent

__all__ = [
    "CHECKPOINT_EVERY",
    "MAX_MARKERS",
    "WalkCache",
    "approximate_tokens",
    "context_plan",
    "event_at",
    "find_call_start",
]

#: The most markers one context lists.
MAX_MARKERS: Final = 20
#: Events a walk reads between two checkpoints it leaves in a :class:`WalkCache`.
CHECKPOINT_EVERY: Final = 5000
_PAGE: Final = 1000
_TYPES: Final = (*TIMELINE_TYPES, MODEL_CALL)
_ENDS: Final = ("llm.end", "llm.error")
_STATUS: Final = {"llm.end": "ok", "llm.error": "error"}


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


@dataclass
class _Index:
    """What a walk learns besides the state, appended in seq order: each message event's seqs
    by message id, each summary message's marker, the markers. The checkpoints of one thread
    share it, each reading it up to its own seq (``upto``)."""

    seqs: dict[str, list[int]] = field(default_factory=dict)
    summaries: dict[str, int] = field(default_factory=dict)
    markers: list[dict[str, Any]] = field(default_factory=list)
    upto: int = 0  # every event up to here is in

    def add(self, event: RunEvent) -> None:
        """Take in ``event`` unless it is in already (walks that resume overlap)."""
        if event.seq <= self.upto:
            return
        self.upto = event.seq
        if event.event_type in MESSAGE_TYPES:
            self.seqs.setdefault(message_id(event) or f"\0seq-{event.seq}", []).append(event.seq)
        elif event.event_type in (SUMMARIZE, REMOVE):
            marker = self._marker(event)
            if marker is not None:
                self.markers.append(marker)
                if marker["summary_id"] is not None:
                    self.summaries.setdefault(marker["summary_id"], event.seq)

    def seq_of(self, mid: str | None, upto: int) -> int | None:
        """The seq of the latest message event of ``mid`` at or before ``upto``."""
        seqs = self.seqs.get(mid) if mid is not None else None
        if not seqs:
            return None
        at = bisect_right(seqs, upto)
        return seqs[at - 1] if at else None

    def summary_of(self, mid: str | None, upto: int) -> int | None:
        """The seq of the compaction that injected summary ``mid``, if at or before ``upto``."""
        seq = self.summaries.get(mid) if mid is not None else None
        return seq if seq is not None and seq <= upto else None

    def markers_upto(self, upto: int) -> list[dict[str, Any]]:
        """The markers at or before ``upto``."""
        return self.markers[: bisect_right(self.markers, upto, key=lambda m: m["seq"])]

    def _marker(self, event: RunEvent) -> dict[str, Any] | None:
        """The marker of a compaction or removal (``None``: a reorder that removes nothing)."""
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
        found = [s for s in (self.seq_of(i, event.seq) for i in ids) if s is not None]
        return {
            "kind": kind,
            "seq": event.seq,
            "count": count if isinstance(count, int) and not isinstance(count, bool) else len(ids),
            "message_ids": ids,
            "first_seq": min(found) if found else None,
            "last_seq": max(found) if found else None,
            "summary_id": summary_message_id(event) if kind == "summary" else None,
            "inferred": bool(event.metadata.get("inferred")),
        }


@dataclass
class _Point:
    """A walk fed every timeline and ``llm.start`` event up to ``upto``; never fed again."""

    upto: int
    walk: StateWalk

    def resume(self) -> StateWalk:
        """A copy to feed further (the entries themselves are shared: they do not change)."""
        w = self.walk
        return replace(
            w, entries=dict(w.entries), fed=dict(w.fed), inline=dict(w.inline),
            checked=set(w.checked), calls=OrderedDict(w.calls),
        )  # fmt: skip


@dataclass
class _Walked:
    index: _Index
    points: list[_Point]  # ascending by upto


class WalkCache:
    """Walks of a few threads kept between context requests, with a checkpoint every
    ``CHECKPOINT_EVERY`` events, so that the context of another call of the same thread
    resumes from the nearest checkpoint before it instead of reading the thread from seq 1.

    Sound because a thread is append-only: a walk up to a seq stays right while the thread's
    first event is the same one (a deleted thread written again has other event ids, and
    misses). Bounded: ``threads`` threads (least recently used go), ``points`` checkpoints
    each. One per app; used from one event loop.
    """

    def __init__(self, threads: int = 4, points: int = 32) -> None:
        self._threads: OrderedDict[tuple[str, str], _Walked] = OrderedDict()
        self._max_threads = threads
        self._max_points = points

    def walked(self, thread_id: str, identity: str) -> _Walked:
        """The walks of the thread whose first event is ``identity`` (new if none)."""
        key = (thread_id, identity)
        found = self._threads.pop(key, None) or _Walked(_Index(), [])
        self._threads[key] = found
        while len(self._threads) > self._max_threads:
            self._threads.popitem(last=False)
        return found

    def keep(self, walked: _Walked, point: _Point) -> None:
        """Keep ``point`` (at most ``points``: the oldest checkpoints go first)."""
        if any(p.upto == point.upto for p in walked.points):
            return
        insort(walked.points, point, key=lambda p: p.upto)
        if len(walked.points) > self._max_points:
            walked.points.pop(0)


def _nearest(points: list[_Point], seq: int) -> _Point | None:
    at = bisect_right(points, seq, key=lambda p: p.upto)
    return points[at - 1] if at else None


def _classify(
    walk: StateWalk, known: _Index, upto: int, index: int, entry: tuple[str | None, str]
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
        marker = known.summary_of(mid, upto)
        if marker is not None:
            return {**row, "origin": "summary", "marker_seq": marker}
        seq = known.seq_of(mid, upto)
        return {**row, "origin": "state", "seq": seq, "truncated": held.truncated}
    original = known.seq_of(mid, upto)
    if original is not None:
        return {**row, "origin": "edited", "original_seq": original}
    return {**row, "origin": "added"}


def _rebuilt_exactly(row: dict[str, Any]) -> bool:
    """Whether a row is the message the call received: resolved, and not cut by the store
    (what :func:`history.verify` names ``truncated``)."""
    return row["origin"] != "unresolved" and not row.get("truncated")


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


def _walk_to(thread_id: str, upto: int, cache: WalkCache | None) -> Plan[tuple[_Index, StateWalk]]:
    """Plan: the thread walked up to ``upto``, resumed from ``cache`` when it can be."""
    first: list[RunEvent] = yield Read(thread_id, {"after_seq": 0, "limit": 1})
    walked = _Walked(_Index(), []) if cache is None else cache.walked(thread_id, first[0].event_id)
    point = _nearest(walked.points, upto)
    walk, cursor = (point.resume(), point.upto) if point else (StateWalk(thread_id), 0)
    fed, more = 0, cursor < upto
    while more:
        page, more = yield from read_upto(thread_id, cursor, upto, _PAGE, {"event_type": _TYPES})
        for event in page:
            walked.index.add(event)
            walk.feed((event,))
        cursor, fed = (page[-1].seq if page else cursor), fed + len(page)
        if cache is not None and more and fed >= CHECKPOINT_EVERY:
            kept = _Point(cursor, walk)
            cache.keep(walked, kept)
            walk, fed = kept.resume(), 0  # the kept walk is never fed again
    if cache is not None and (point is None or point.upto < upto):
        cache.keep(walked, _Point(upto, walk))
    return walked.index, walk


def context_plan(
    thread_id: str,
    seq: int,
    *,
    offset: int = 0,
    limit: int = 200,
    max_bytes: int = 4 << 20,
    cache: WalkCache | None = None,
) -> Plan[dict[str, Any]]:
    """Plan: the input of the model call at ``seq`` (see the module docstring); ``cache``
    keeps walks between calls (results are the same with or without it)."""
    start = yield from find_call_start(thread_id, (yield from event_at(thread_id, seq)))
    known, walk = yield from _walk_to(thread_id, start.seq, cache)
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
        rows = [_classify(walk, known, start.seq, i, e) for i, e in enumerate(walk.call or [])]
    else:  # journaled before records existed: the state view, as replay gives it
        rows = [
            {
                "index": i,
                "id": stored_message_id(c),
                "digest": None,
                "type": _type(c),
                "message": c,
                "origin": "state",
                "seq": known.seq_of(stored_message_id(c), start.seq),
            }
            for i, c in enumerate(walk.contents())
        ]
    for row in rows:  # a store takes any JSON: a stored message of another shape is none
        if row["message"] is not None and not isinstance(row["message"], dict):
            row.update(message=None, origin="unresolved", reason="not_a_message")
    contents = [r["message"] for r in rows if r["message"] is not None]
    end = yield from nearest_event(
        thread_id, start.seq, True, _ENDS, lambda e: llm_run_id(e) == llm_run_id(start)
    )
    reported = call_usage(end.metadata)["input_tokens"] if end is not None else 0
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
        "llm_run_id": llm_run_id(start),
        "caller": as_str(md.get("caller")),
        "model": (as_str(end.metadata.get("model")) if end is not None else None)
        or as_str(md.get("model")),
        "agent_call": is_agent_call(start),
        "recorded": recorded,
        "exact": recorded and all(map(_rebuilt_exactly, rows)),
        "status": "running" if end is None else _STATUS[end.event_type],
        "message_count": len(rows),
        "messages": page_rows,
        "offset": offset,
        "next_offset": following if following < len(rows) else None,
        "size_limited": following < min(len(rows), offset + limit),
        "markers": _place(known.markers_upto(start.seq), rows),
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
