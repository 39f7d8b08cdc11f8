"""Check that replay rebuilds every agent model call of a thread exactly.

``verify(store, thread_id)`` walks the thread once, in seq order, and for every agent model call
(an ``llm.start`` whose caller is the agent: not a middleware's own model such as the
summarizer, nor a subagent) rebuilds its input the way ``replay(..., upto_seq=<its seq>,
view="model")`` does, recomputing each message's digest from the stored content and comparing
it with the digest recorded at call time. A call is

* ``exact`` when every input message is rebuilt with the recorded digest;
* ``diverged`` when one is not: each such message is named (index, id, digest and a reason:
  ``not_in_state`` — the replayed state lacks it and no call inlined it; ``content_differs`` —
  the state holds another version; ``truncated`` — the store cut the message to its content
  cap; ``message_not_journaled`` — a rewrite placed it but its message event is missing;
  ``inline_digest_mismatch`` / ``no_digest`` / ``record_base_missing`` — the record itself is
  damaged, or extends a record the journal lacks);
* ``unrecorded`` when it was journaled without a record (before records existed).

It also checks the thread's last state: ``state_missing`` lists the ids an order event placed
in it (a rewrite's or a ``message.remove``'s ``state_message_ids``) whose message no event
holds, so replay's state lacks them. A state message the journal never learnt of and no order
names leaves no trace in the journal: verify cannot see it.

The report is plain JSON data: ``{thread_id, ok, calls, exact, diverged, unrecorded,
state_missing, results: [{seq, run_id, llm_run_id, model, message_count, status,
problems}]}``; ``ok`` is false when any call diverged or the state misses a message.
``averify`` is the async variant. An unknown thread raises
``history.errors.ThreadNotFoundError``.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

from history._catalog import MODEL_CALL, TIMELINE_TYPES, as_str, is_agent_call
from history._reads import LastSeq, Plan, Read, arun_plan, run_plan
from history._walk import StateWalk, call_record
from history.errors import ThreadNotFoundError
from journal.events import RunEvent
from journal.store import RunEventStore

__all__ = ["CallCheck", "VerifyReport", "averify", "verify"]

_PAGE: Final = 1000
_TYPES: Final = (*TIMELINE_TYPES, MODEL_CALL)


class CallCheck(TypedDict):
    """The check of one agent model call."""

    seq: int
    run_id: str
    llm_run_id: str | None
    model: str | None
    message_count: int
    status: str
    problems: list[dict[str, Any]]


class VerifyReport(TypedDict):
    """The outcome of :func:`verify` for one thread."""

    thread_id: str
    ok: bool
    calls: int
    exact: int
    diverged: int
    unrecorded: int
    state_missing: list[str]
    results: list[CallCheck]


def _check(walk: StateWalk, event: RunEvent) -> CallCheck:
    record = call_record(event)
    metadata = event.metadata
    check: CallCheck = {
        "seq": event.seq,
        "run_id": event.run_id,
        "llm_run_id": as_str(metadata.get("llm_run_id")),
        "model": as_str(metadata.get("model")),
        "message_count": 0,
        "status": "unrecorded",
        "problems": [],
    }
    if record is None:
        return check
    _, problems = walk.resolve(walk.call)
    check["message_count"] = len(walk.call or ())
    check["status"] = "diverged" if problems else "exact"
    check["problems"] = [p.as_dict() for p in problems]
    return check


def verify_plan(thread_id: str) -> Plan[VerifyReport]:
    """Plan: the report of :func:`verify`."""
    if (yield LastSeq(thread_id)) == 0:
        raise ThreadNotFoundError(thread_id)
    walk = StateWalk(thread_id, verify=True)
    results: list[CallCheck] = []
    cursor = 0
    while True:
        page: list[RunEvent] = yield Read(
            thread_id, {"after_seq": cursor, "limit": _PAGE, "event_type": _TYPES}
        )
        for event in page:
            walk.feed((event,))
            if event.event_type == MODEL_CALL and is_agent_call(event):
                results.append(_check(walk, event))
        if len(page) < _PAGE:
            break
        cursor = page[-1].seq
    counts = {status: 0 for status in ("exact", "diverged", "unrecorded")}
    for result in results:
        counts[result["status"]] += 1
    missing = [mid for mid, entry in walk.entries.items() if entry is None]
    return {
        "thread_id": thread_id,
        "ok": counts["diverged"] == 0 and not missing,
        "calls": len(results),
        "exact": counts["exact"],
        "diverged": counts["diverged"],
        "unrecorded": counts["unrecorded"],
        "state_missing": missing,
        "results": results,
    }


def verify(store: RunEventStore, thread_id: str) -> VerifyReport:
    """Check every agent model call of ``thread_id`` (see the module docstring)."""
    return run_plan(store, verify_plan(thread_id))


async def averify(store: RunEventStore, thread_id: str) -> VerifyReport:
    """Async :func:`verify`, on the store's async methods."""
    return await arun_plan(store, verify_plan(thread_id))
