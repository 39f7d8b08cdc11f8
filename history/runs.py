"""A thread's runs, newest first, and what its model calls cost (pure readers over the store).

``runs_page(store, thread_id, *, limit=20, before_seq=None)`` returns a :class:`RunsPage`
``{thread_id, runs, has_more, next_before_seq}``:

* ``runs`` are the newest ``limit`` runs (by their first event) whose first seq is below
  ``before_seq`` (all of them without it), **newest first**, each a JSON-ready
  :class:`journal.RunSummary`: status, error, started/ended, duration, models, token totals,
  model and tool call counts, the first human message and the last agent answer (previews).
* Following ``next_before_seq`` (``None`` on the last page) walks back to the first run: every
  run appears on exactly one page. A page costs O(limit) in the store, whatever the number of
  runs (the store keeps a summary per run as it appends).

``thread_usage(store, thread_id, *, run_limit=20)`` returns a :class:`UsageReport`: the token
totals of every model call of the thread (``totals``), the same per model (``by_model``: the
model the provider's response names, so a router or an alias is billed under the model that
answered), per caller (``by_caller``: ``agent``, ``middleware:<Class>``, ``subagent:<graph>``),
``run_count``, ``by_run`` (the newest ``run_limit`` runs' usage, newest first; older ones
through :func:`runs_page`) and ``active_run`` (the newest run still running among the newest
``max(run_limit, ACTIVE_RUN_WINDOW)`` runs, whatever ``run_limit``, with its usage so far, or
``None``). Each bucket has ``calls``, ``input_tokens``, ``output_tokens``,
``total_tokens``, ``cache_read_tokens`` and ``reasoning_tokens``. It reads a constant number of
rows, however long the thread: the store keeps the thread's totals as it appends.

An unknown thread raises :class:`history.errors.ThreadNotFoundError` (HTTP 404); a bad
``limit``/``before_seq``/``run_limit`` raises ``ValueError``/``TypeError`` (HTTP 422).
``aruns_page`` and ``athread_usage`` are the same functions on the store's async methods.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

from history._catalog import utc_text
from history._reads import Call, LastSeq, Plan, arun_plan, check_int, run_plan
from history.errors import ThreadNotFoundError
from journal.events import RunSummary
from journal.store import RunEventStore

__all__ = [
    "ACTIVE_RUN_WINDOW",
    "MAX_RUNS_LIMIT",
    "RunsPage",
    "UsageReport",
    "aruns_page",
    "athread_usage",
    "runs_page",
    "thread_usage",
]

#: The largest ``limit`` / ``run_limit`` accepted.
MAX_RUNS_LIMIT: Final = 500
#: ``active_run`` is the newest running run among at least this many newest runs.
ACTIVE_RUN_WINDOW: Final = 20
#: Above every seq: the newest page.
_TOP: Final = 2**63 - 1


class RunsPage(TypedDict):
    """A page of a thread's runs, newest first, and the cursor to the older ones."""

    thread_id: str
    runs: list[dict[str, Any]]
    has_more: bool
    next_before_seq: int | None


class UsageReport(TypedDict):
    """What a thread's model calls cost, in total and by model, caller and run."""

    thread_id: str
    totals: dict[str, int]
    by_model: dict[str, dict[str, int]]
    by_caller: dict[str, dict[str, int]]
    run_count: int
    by_run: list[dict[str, Any]]
    active_run: dict[str, Any] | None


def _newest_runs(
    thread_id: str, limit: int, before_seq: int | None
) -> Plan[tuple[list[RunSummary], bool]]:
    """Plan: the newest ``limit`` runs below ``before_seq``, newest first, and whether older
    ones exist (one store page of ``limit + 1``)."""
    last = yield LastSeq(thread_id)
    if last == 0:
        raise ThreadNotFoundError(thread_id)
    cursor = _TOP if before_seq is None else before_seq
    found: list[RunSummary] = yield Call(
        "list_runs", (thread_id,), {"before_seq": cursor, "limit": limit + 1}
    )
    has_more = len(found) > limit
    return list(reversed(found[-limit:] if limit else [])), has_more


def runs_page_plan(thread_id: str, limit: int, before_seq: int | None) -> Plan[RunsPage]:
    """Plan: one page of runs (the logic of :func:`runs_page`)."""
    check_int("limit", limit, 1, MAX_RUNS_LIMIT)
    if before_seq is not None:
        check_int("before_seq", before_seq, 1)
    runs, has_more = yield from _newest_runs(thread_id, limit, before_seq)
    return {
        "thread_id": thread_id,
        "runs": [run.model_dump(mode="json") for run in runs],
        "has_more": has_more,
        "next_before_seq": runs[-1].first_seq if has_more and runs else None,
    }


def _run_usage(run: RunSummary) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "started_at": utc_text(run.started_at),
        "ended_at": None if run.ended_at is None else utc_text(run.ended_at),
        "models": list(run.models),
        "usage": dict(run.usage),
        "llm_calls": run.llm_calls,
    }


def thread_usage_plan(thread_id: str, run_limit: int) -> Plan[UsageReport]:
    """Plan: the usage report (the logic of :func:`thread_usage`)."""
    check_int("run_limit", run_limit, 0, MAX_RUNS_LIMIT)
    # The running run is looked for among more runs than by_run lists, so that a small (or
    # zero) run_limit never hides it.
    runs, _ = yield from _newest_runs(thread_id, max(run_limit, ACTIVE_RUN_WINDOW), None)
    usage = yield Call("read_usage", (thread_id,))
    by_run = [_run_usage(run) for run in runs[:run_limit]]
    running = next((run for run in runs if run.status == "running"), None)
    active = None if running is None else _run_usage(running)
    return {
        "thread_id": thread_id,
        "totals": dict(usage.totals),
        "by_model": {model: dict(bucket) for model, bucket in usage.by_model.items()},
        "by_caller": {caller: dict(bucket) for caller, bucket in usage.by_caller.items()},
        "run_count": usage.run_count,
        "by_run": by_run,
        "active_run": active,
    }


def runs_page(
    store: RunEventStore, thread_id: str, *, limit: int = 20, before_seq: int | None = None
) -> RunsPage:
    """One page of the thread's runs, newest first (guarantees in the module docstring)."""
    return run_plan(store, runs_page_plan(thread_id, limit, before_seq))


async def aruns_page(
    store: RunEventStore, thread_id: str, *, limit: int = 20, before_seq: int | None = None
) -> RunsPage:
    """Async :func:`runs_page`, on the store's async methods (never blocks the loop)."""
    return await arun_plan(store, runs_page_plan(thread_id, limit, before_seq))


def thread_usage(store: RunEventStore, thread_id: str, *, run_limit: int = 20) -> UsageReport:
    """What the thread's model calls cost (guarantees in the module docstring)."""
    return run_plan(store, thread_usage_plan(thread_id, run_limit))


async def athread_usage(
    store: RunEventStore, thread_id: str, *, run_limit: int = 20
) -> UsageReport:
    """Async :func:`thread_usage`, on the store's async methods (never blocks the loop)."""
    return await arun_plan(store, thread_usage_plan(thread_id, run_limit))
