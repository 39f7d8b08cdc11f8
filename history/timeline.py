"""The history timeline: a thread's messages, summary and removal markers, page by page.

``build_timeline(store, thread_id, *, before_seq=None, limit=50, include_markers=True,
include_hidden=False, run_id=None)`` returns a :class:`TimelinePage` ``{thread_id, items,
has_more, next_before_seq}``. Guarantees:

* ``items`` ascend by ``seq``. Without ``before_seq`` the page is the newest ``limit`` items;
  with it, the newest ``limit`` items whose seq is below ``before_seq``.
* Following ``next_before_seq`` (``None`` on the last page) walks back to seq 1: every item of
  the thread appears on exactly one page, none lost, none repeated.
* A page is bounded in bytes as well (``max_bytes``, 4 MiB by default, measured on the events'
  JSON): when the newest ``limit`` items would pass it, the page holds the newest items that
  fit (at least one), ``has_more`` is true and ``size_limited`` is set.
* Filters apply before the limit: ``include_markers``; ``include_hidden`` (hidden messages,
  see below, are left out unless it is true); ``run_id`` (only the items of that run; a run
  the thread does not have gives an empty page). A page reads O(limit) events through the
  store's ``event_type`` (and ``run_id``) filters (and the hidden messages between them,
  which count neither towards the limit nor towards the byte bound), plus a bounded backward
  scan per marker (see below).
* Message items (``human``/``ai``/``tool``): ``id`` (the message's state id, or
  ``"message-<seq>"`` if it had none), ``seq``, ``run_id``, ``created_at`` (ISO 8601 UTC),
  ``content``, ``caller`` (who added it, as the journal spells it: ``user`` for the user's
  input, ``agent`` for the lead agent, ``middleware:<Class>``, ``subagent:<graph>``;
  ``None`` when the event does not say) and ``hidden`` (true for a message added with
  ``additional_kwargs["hide_from_ui"]``, such as context a middleware injects: not something
  the user typed); ``ai`` adds ``tool_calls``; ``tool`` adds ``tool_call_id``, ``name``,
  ``status``.
* Marker items (``summary_marker``): ``id = "summary-marker-<seq>"``, ``replaced_count``,
  ``summary``, ``replaced_message_ids``, ``first_replaced_seq`` and ``last_replaced_seq`` (the
  seq range of the journaled messages it condensed, ``None`` if none of them was journaled; a
  replaced id may be an earlier summary message, which has no message event), ``inferred``
  (journaled from a summarization middleware's rewrite rather than its own event).
* Removal markers (``removal_marker``, a ``message.remove`` that is no summarization):
  ``id = "removal-marker-<seq>"``, ``removed_count``, ``removed_message_ids``,
  ``first_removed_seq``, ``last_removed_seq``. Both marker kinds sit after every message they
  took out of the state and before everything that came later (invariant 5).
* A message journaled again under the same id (a node replaced it) is an item of its own with
  ``replacement: true``; its ``id`` is ``"<message id>@<seq>"`` so that item ids stay unique.
* An unknown thread raises :class:`history.errors.ThreadNotFoundError` (a ``LookupError``;
  HTTP 404). A bad ``limit``/``before_seq`` raises ``ValueError``/``TypeError`` (HTTP 422).

``abuild_timeline`` is the same function on the store's async methods.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

from history._bounded import DEFAULT_PAGE_BYTES, backward_page
from history._catalog import (
    MESSAGE_TYPES,
    REMOVE,
    SUMMARIZE,
    TIMELINE_TYPES,
    as_str,
    message_data,
    message_id,
    payload_ids,
    summary_message_id,
    utc_text,
)
from history._reads import LastSeq, Plan, Read, arun_plan, check_int, run_plan
from history.errors import ThreadNotFoundError
from journal.events import RunEvent, validate_id
from journal.store import RunEventStore

__all__ = [
    "MAX_PAGE_LIMIT",
    "TimelineItem",
    "TimelinePage",
    "abuild_timeline",
    "build_timeline",
    "is_hidden",
]

#: The largest ``limit`` a page accepts.
MAX_PAGE_LIMIT: Final = 1000
_SCAN_PAGE_MAX: Final = 500


class TimelineItem(TypedDict, total=False):
    """One timeline entry; which keys are present depends on ``type`` (see the module doc)."""

    type: Literal["human", "ai", "tool", "system", "summary_marker", "removal_marker"]
    id: str
    seq: int
    run_id: str
    created_at: str
    content: Any
    caller: str | None
    hidden: bool
    tool_calls: list[Any]
    tool_call_id: str | None
    name: str | None
    status: str | None
    replaced_count: int
    summary: str
    replaced_message_ids: list[str]
    first_replaced_seq: int | None
    last_replaced_seq: int | None
    inferred: bool
    replacement: bool
    removed_count: int
    removed_message_ids: list[str]
    first_removed_seq: int | None
    last_removed_seq: int | None


class TimelinePage(TypedDict):
    """A page of the timeline: items ascending by seq, and the cursor to the older page."""

    thread_id: str
    items: list[TimelineItem]
    has_more: bool
    next_before_seq: int | None
    size_limited: NotRequired[bool]


def _check_args(limit: int, before_seq: int | None) -> None:
    check_int("limit", limit, 1, MAX_PAGE_LIMIT)
    if before_seq is not None:
        check_int("before_seq", before_seq, 1)


def _base(event: RunEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "run_id": event.run_id,
        "created_at": utc_text(event.created_at),
    }


def is_hidden(event: RunEvent) -> bool:
    """Whether a message event records a message hidden from the UI (``hide_from_ui``).

    The journal says so in ``metadata.hidden``; events written before it did are read from
    the message's ``additional_kwargs``.
    """
    flag = event.metadata.get("hidden")
    if isinstance(flag, bool):
        return flag
    kwargs = message_data(event).get("additional_kwargs")
    return isinstance(kwargs, dict) and bool(kwargs.get("hide_from_ui"))


def _message_item(event: RunEvent) -> TimelineItem:
    data = message_data(event)
    caller = event.metadata.get("caller")
    kind = event.event_type.removeprefix("message.")
    mid = message_id(event) or f"message-{event.seq}"
    replacement = bool(event.metadata.get("replacement"))
    item: dict[str, Any] = {
        "type": kind,
        "id": f"{mid}@{event.seq}" if replacement else mid,
        **_base(event),
        "content": data.get("content", ""),
        "caller": caller if isinstance(caller, str) else None,
        "hidden": is_hidden(event),
    }
    if replacement:
        item["replacement"] = True
    if kind == "ai":
        calls = data.get("tool_calls")  # (a store takes any JSON: other shapes are left out)
        item["tool_calls"] = (
            [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
        )
    elif kind == "tool":
        item["tool_call_id"] = as_str(data.get("tool_call_id"))
        item["name"] = as_str(data.get("name"))
        item["status"] = as_str(data.get("status"))
    return item  # type: ignore[return-value]


def _survivors(event: RunEvent) -> set[str] | None:
    """Ids that were in the state just before ``event`` and are still there after it, when the
    event says (a rewrite or a summarization); ``None`` when it keeps all but what it names."""
    if event.event_type == SUMMARIZE:
        order = payload_ids(event, "state_message_ids") or payload_ids(event, "kept_message_ids")
        return set(order) - {summary_message_id(event) or ""}
    if isinstance(event.content, dict) and event.content.get("all"):
        return set(payload_ids(event, "state_message_ids"))
    return None


def taken_seq_range(
    thread_id: str, marker: RunEvent, key: str
) -> Plan[tuple[int | None, int | None]]:
    """Plan: the seq range of the journaled messages that ``marker`` took out of the state
    (the ids listed under ``key``).

    Scans backward from the marker over message and marker events only. Passing an earlier
    rewrite or summary narrows what is still missing to what it kept (anything else was
    journaled after it), so the scan stops as soon as nothing can still be found: it never
    reads further back than the oldest message of the state that was edited. A message a
    fork brought back (an order's ``restored_message_ids``) was journaled before edits that
    removed it: it is looked for further back without narrowing.
    """
    remaining = set(payload_ids(marker, key))
    restored: set[str] = set()
    seqs: list[int] = []
    cursor = marker.seq
    while remaining or restored:
        # each missing id is at least one more event back: read about that many at once
        # (a restored message may be far back: the largest pages then)
        size = _SCAN_PAGE_MAX if restored else min(len(remaining) + 8, _SCAN_PAGE_MAX)
        page: list[RunEvent] = yield Read(
            thread_id, {"before_seq": cursor, "limit": size, "event_type": TIMELINE_TYPES}
        )
        for event in reversed(page):
            if event.event_type in MESSAGE_TYPES:
                mid = message_id(event)
                if mid is not None and (mid in remaining or mid in restored):
                    remaining.discard(mid)
                    restored.discard(mid)
                    seqs.append(event.seq)
            else:
                back = remaining.intersection(payload_ids(event, "restored_message_ids"))
                restored |= back
                remaining -= back
                survivors = _survivors(event)
                if survivors is not None:
                    remaining &= survivors
            if not remaining and not restored:
                break
        if len(page) < size:
            break
        cursor = page[0].seq
    if not seqs:
        return None, None
    return min(seqs), max(seqs)


def marker_item(thread_id: str, event: RunEvent) -> Plan[TimelineItem]:
    """Plan: the ``summary_marker`` item of a ``middleware:summarize`` event."""
    payload = event.content if isinstance(event.content, dict) else {}
    replaced_ids = payload_ids(event, "replaced_message_ids")
    count = payload.get("replaced_count")
    summary = payload.get("summary")
    first, last = yield from taken_seq_range(thread_id, event, "replaced_message_ids")
    item: dict[str, Any] = {
        "type": "summary_marker",
        "id": f"summary-marker-{event.seq}",
        **_base(event),
        "replaced_count": count if isinstance(count, int) else len(replaced_ids),
        "summary": summary if isinstance(summary, str) else "",
        "replaced_message_ids": replaced_ids,
        "first_replaced_seq": first,
        "last_replaced_seq": last,
        "inferred": bool(event.metadata.get("inferred")),
    }
    return item  # type: ignore[return-value]


def _reorders_only(event: RunEvent) -> bool:
    """Whether a ``message.remove`` removes nothing (it only says the state's order)."""
    content = event.content if isinstance(event.content, dict) else {}
    return bool(content.get("all")) and not payload_ids(event, "removed_message_ids")


def removal_item(thread_id: str, event: RunEvent) -> Plan[TimelineItem]:
    """Plan: the ``removal_marker`` item of a ``message.remove`` event."""
    removed_ids = payload_ids(event, "removed_message_ids")
    first, last = yield from taken_seq_range(thread_id, event, "removed_message_ids")
    item: dict[str, Any] = {
        "type": "removal_marker",
        "id": f"removal-marker-{event.seq}",
        **_base(event),
        "removed_count": len(removed_ids),
        "removed_message_ids": removed_ids,
        "first_removed_seq": first,
        "last_removed_seq": last,
    }
    return item  # type: ignore[return-value]


def timeline_plan(
    thread_id: str,
    before_seq: int | None,
    limit: int,
    include_markers: bool,
    max_bytes: int = DEFAULT_PAGE_BYTES,
    *,
    include_hidden: bool = False,
    run_id: str | None = None,
) -> Plan[TimelinePage]:
    """Plan: one timeline page (the logic of :func:`build_timeline`)."""
    _check_args(limit, before_seq)
    check_int("max_bytes", max_bytes, 1)
    if run_id is not None:
        validate_id(run_id, "run_id")
    filters: dict[str, Any] = {"event_type": TIMELINE_TYPES if include_markers else MESSAGE_TYPES}
    if run_id is not None:
        filters["run_id"] = run_id
    last = yield LastSeq(thread_id)
    if last == 0:
        raise ThreadNotFoundError(thread_id)
    cursor = last + 1 if before_seq is None else before_seq

    def shown(event: RunEvent) -> bool:
        # Decided while the page is read, so that what is left out counts neither towards
        # the limit nor towards the byte bound.
        if event.event_type == REMOVE:
            return not _reorders_only(event)  # the state's order only: nothing to show
        return event.event_type == SUMMARIZE or include_hidden or not is_hidden(event)

    page = yield from backward_page(thread_id, cursor, limit, max_bytes, filters, shown)
    items: list[TimelineItem] = []
    for event in page.events:
        if event.event_type == SUMMARIZE:
            items.append((yield from marker_item(thread_id, event)))
        elif event.event_type == REMOVE:
            items.append((yield from removal_item(thread_id, event)))
        else:
            items.append(_message_item(event))
    has_more, size_limited = page.has_more, page.size_limited
    first_seq = page.events[0].seq if page.events else None
    result: TimelinePage = {
        "thread_id": thread_id,
        "items": items,
        "has_more": has_more,
        "next_before_seq": first_seq if has_more else None,
    }
    if size_limited:
        result["size_limited"] = True
    return result


def build_timeline(
    store: RunEventStore,
    thread_id: str,
    *,
    before_seq: int | None = None,
    limit: int = 50,
    include_markers: bool = True,
    include_hidden: bool = False,
    run_id: str | None = None,
    max_bytes: int = DEFAULT_PAGE_BYTES,
) -> TimelinePage:
    """One page of the thread's timeline (guarantees in the module docstring).

    Raises ``ThreadNotFoundError`` for a thread without events, ``ValueError``/``TypeError``
    for a bad argument, ``StoreError`` when the store fails.
    """
    plan = timeline_plan(
        thread_id,
        before_seq,
        limit,
        include_markers,
        max_bytes,
        include_hidden=include_hidden,
        run_id=run_id,
    )
    return run_plan(store, plan)


async def abuild_timeline(
    store: RunEventStore,
    thread_id: str,
    *,
    before_seq: int | None = None,
    limit: int = 50,
    include_markers: bool = True,
    include_hidden: bool = False,
    run_id: str | None = None,
    max_bytes: int = DEFAULT_PAGE_BYTES,
) -> TimelinePage:
    """Async :func:`build_timeline`, on the store's async methods (never blocks the loop)."""
    plan = timeline_plan(
        thread_id,
        before_seq,
        limit,
        include_markers,
        max_bytes,
        include_hidden=include_hidden,
        run_id=run_id,
    )
    return await arun_plan(store, plan)
