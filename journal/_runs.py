"""The runs and usage projection: the one place that reads runs and token usage out of events.

I/O-free. :func:`project` folds a batch of events (each with its seq) into one
:class:`RunFold` per run and the usage of its model calls (:meth:`Projection.usage`: usage
:data:`Buckets` per thread); :meth:`RunFold.merge` merges a fold into the stored one. The
default ``RunEventStore`` methods fold a whole thread, every built-in backend folds each
appended batch and merges it into its runs and usage tables, and each migration's backfill
folds the events already stored: the answers are the same whichever way the events arrived
(batched, one by one, or backfilled).

What is read (all optional, tolerated when absent or of the wrong type):

* every event: ``seq``, ``created_at``, ``run_id``;
* lifecycle events: their type (the status); a terminal one (``run.end/error/cancel/
  interrupt``) gives ``ended_at`` and ``content.duration_ms``; ``run.error`` gives
  ``content.error_type`` / ``content.error``;
* ``llm.end``: ``metadata.model``, ``metadata.caller``, ``metadata.usage`` (``input_tokens``,
  ``output_tokens``, ``total_tokens`` — input + output when missing or 0 —,
  ``cache_read_tokens``, ``reasoning_tokens``); ``llm.error``: ``metadata.model`` (the model
  the failed call asked for: a run's models are those of its ended and failed calls, in order
  of first use); ``llm.end``/``llm.error`` and ``tool.end``/``tool.error`` are counted;
* ``message.human`` (first one not hidden: ``metadata.hidden``, else the content's
  ``additional_kwargs.hide_from_ui``) and ``message.ai`` (last one with ``metadata.caller``
  ``agent``, or no caller): their text, cut to :data:`PREVIEW_CHARS`. Messages without text
  (an AI message that only calls tools) are skipped.

Bounds, so that no stored event can make an append fail: token counts are ints clamped to
``0..2**31-1`` per call (a float is truncated, anything else is 0); model and caller names are
cut to 256 characters, ``error_type`` to 256 and ``error`` to 4,096; NUL characters in any
text become U+FFFD (PostgreSQL text cannot hold them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, Final, cast

from journal._runs_read import (
    NAME_CHARS,
    PREVIEW_CHARS,
    call_usage,
    clean,
    content_value,
    hidden,
    message_text,
    preview,
    short_name,
    usage_values,
)
from journal._summaries import (
    USAGE_KEYS,
    RunSummary,
    ThreadUsage,
    UsageTotals,
    status_from_lifecycle,
)
from journal.events import NewEvent

__all__ = [
    "FOLDS_MORE",
    "MERGE_RULES",
    "PREVIEW_CHARS",
    "TOOL_CALLS",
    "TOTAL",
    "USAGE_COUNTS",
    "USAGE_KEYS",
    "Buckets",
    "Projection",
    "RunFold",
    "add_buckets",
    "by_first_seq",
    "call_usage",
    "folds_more",
    "message_text",
    "project",
    "thread_usage",
    "union_models",
]

USAGE_COUNTS: Final = ("calls", *USAGE_KEYS)
#: Usage bucket scopes: the thread's total (key ``""``), per model, per caller.
TOTAL: Final = ("total", "")
_TERMINAL: Final = frozenset({"run.end", "run.error", "run.cancel", "run.interrupt"})
_MODEL_CALLS: Final = frozenset({"llm.end", "llm.error"})
_TOOL_CALLS: Final = frozenset({"tool.end", "tool.error"})
#: The event types that change a run's fold beyond its seqs, times and event count (with the
#: lifecycle category): the common trace event costs no more than that.
_FOLDED: Final = _MODEL_CALLS | _TOOL_CALLS | {"message.human", "message.ai"}
_ERROR_CHARS: Final = 4096
#: The model and tool calls a run counts (``llm_calls``, ``tool_calls``).
TOOL_CALLS: Final = _TOOL_CALLS
#: Beyond the lifecycle category, the event types :meth:`RunFold.add` reads more of than
#: the seqs, times, counts and an ``llm.end``'s usage and model (see :func:`folds_more`).
FOLDS_MORE: Final = frozenset({"llm.error", "message.human", "message.ai"})


def folds_more(event_type: str, category: str) -> bool:
    """Whether :meth:`RunFold.add` of such an event does more than count it, take its seq and
    time, count a tool call or add an ``llm.end``'s usage and model: a lifecycle event, an
    ``llm.error``, a human or AI message (a fold of the run's stored values folds the others
    itself, :func:`journal._sqlite_tail.keep_going`)."""
    return category == "lifecycle" or event_type in FOLDS_MORE


#: A thread's usage: ``(scope, key)`` -> counts of :data:`USAGE_COUNTS`.
Buckets = dict[tuple[str, str], dict[str, int]]


# -- a run ---------------------------------------------------------------------------------


def _zero_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


@dataclass
class RunFold:
    """What the events of one run (or of a part of it, in seq order) say about it.

    ``lifecycle`` is the type of its newest lifecycle event; ``ended_at``,
    ``terminal_duration_ms``, ``error_type`` and ``error`` belong to that event (set only
    when it is terminal, the error fields only for ``run.error``).
    """

    thread_id: str
    run_id: str
    first_seq: int
    last_seq: int
    started_at: datetime
    last_event_at: datetime
    event_count: int = 0
    lifecycle: str | None = None
    ended_at: datetime | None = None
    terminal_duration_ms: float | None = None
    error_type: str | None = None
    error: str | None = None
    models: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=_zero_usage)
    llm_calls: int = 0
    tool_calls: int = 0
    first_human: str | None = None
    last_ai: str | None = None

    @classmethod
    def starting(cls, seq: int, event: NewEvent) -> RunFold:
        """An empty fold of ``event``'s run, starting at it (add the event next)."""
        return cls(event.thread_id, event.run_id, seq, seq, event.created_at, event.created_at)

    def add(self, seq: int, event: NewEvent) -> tuple[list[int], str | None] | None:
        """Fold the run's next event in; for an ``llm.end``, the call's usage (in
        :data:`USAGE_KEYS` order) and model."""
        self.last_seq, self.last_event_at = seq, event.created_at
        self.event_count += 1
        kind = event.event_type
        if kind not in _FOLDED and event.category != "lifecycle":
            return None  # most events: nothing more
        if event.category == "lifecycle":
            self._lifecycle(event)
        elif kind in _MODEL_CALLS:
            self.llm_calls += 1
            if kind == "llm.error":  # the model it asked for: a run may have no other call
                self._uses(short_name(event.metadata.get("model")))
            else:
                usage = usage_values(event.metadata)
                totals = self.usage
                for key, value in zip(USAGE_KEYS, usage, strict=True):
                    totals[key] += value
                model = short_name(event.metadata.get("model"))
                self._uses(model)
                return usage, model
        elif kind in _TOOL_CALLS:
            self.tool_calls += 1
        elif kind == "message.human":
            if self.first_human is None and not hidden(event):
                self.first_human = preview(event)
        elif kind == "message.ai" and event.metadata.get("caller", "agent") == "agent":
            self.last_ai = preview(event) or self.last_ai
        return None

    def _uses(self, model: str | None) -> None:
        if model is not None and model not in self.models:
            self.models.append(model)

    def _lifecycle(self, event: NewEvent) -> None:
        self.lifecycle = event.event_type
        terminal = event.event_type in _TERMINAL
        self.ended_at = event.created_at if terminal else None
        duration = content_value(event, "duration_ms")
        valid = isinstance(duration, int | float) and not isinstance(duration, bool)
        self.terminal_duration_ms = (
            float(duration) if terminal and valid and math.isfinite(duration) else None
        )
        error_type = content_value(event, "error_type") if event.event_type == "run.error" else None
        error = content_value(event, "error") if event.event_type == "run.error" else None
        self.error_type = clean(error_type, NAME_CHARS) if isinstance(error_type, str) else None
        self.error = clean(error, _ERROR_CHARS) if isinstance(error, str) else None

    def merge(self, newer: RunFold) -> None:
        """Merge ``newer`` (the same run's later events) into this fold, by :data:`MERGE_RULES`."""
        for name, rule in MERGE_RULES.items():
            setattr(self, name, _MERGE[rule](getattr(self, name), getattr(newer, name), newer))

    def summary(self) -> RunSummary:
        """The run as ``list_runs`` reports it (new objects: nothing shared with the fold)."""
        duration = self.terminal_duration_ms
        if duration is None and self.ended_at is not None:
            duration = (self.ended_at - self.started_at) / timedelta(milliseconds=1)
        return RunSummary(
            run_id=self.run_id,
            thread_id=self.thread_id,
            first_seq=self.first_seq,
            last_seq=self.last_seq,
            event_count=self.event_count,
            started_at=self.started_at,
            last_event_at=self.last_event_at,
            status=status_from_lifecycle(self.lifecycle),
            ended_at=self.ended_at,
            duration_ms=duration if self.ended_at is not None else None,
            error_type=self.error_type,
            error=self.error,
            models=list(self.models),
            usage=dict(self.usage),
            llm_calls=self.llm_calls,
            tool_calls=self.tool_calls,
            first_human=self.first_human,
            last_ai=self.last_ai,
        )


def by_first_seq(run: RunFold) -> int:
    """The key runs are paged by (``list_runs``): their first seq."""
    return run.first_seq


# How a stored fold and a newer one combine, field by field. Written once as data: the
# PostgreSQL backend renders the same rules as SQL (journal._postgres_schema), the others
# apply them here.
_FOLD_FIELDS: Final = frozenset(f.name for f in fields(RunFold))
#: field -> rule: ``keep`` (the older value), ``newer``, ``add`` (counts; usage key by key),
#: ``lifecycle`` (the newer value if the newer part has a lifecycle event), ``first_set``
#: (the older value unless unset), ``last_set`` (the newer value unless unset), ``union``
#: (the older list, then the newer values not in it, in order).
MERGE_RULES: Final[dict[str, str]] = {
    "first_seq": "keep",
    "started_at": "keep",
    "last_seq": "newer",
    "last_event_at": "newer",
    "event_count": "add",
    "lifecycle": "lifecycle",
    "ended_at": "lifecycle",
    "terminal_duration_ms": "lifecycle",
    "error_type": "lifecycle",
    "error": "lifecycle",
    "models": "union",
    "usage": "add",
    "llm_calls": "add",
    "tool_calls": "add",
    "first_human": "first_set",
    "last_ai": "last_set",
}
assert set(MERGE_RULES) == _FOLD_FIELDS - {"thread_id", "run_id"}


def _add(old: Any, new: Any, _: RunFold) -> Any:
    if isinstance(old, dict):
        return {key: old[key] + new[key] for key in old}
    return old + new


def union_models(old: list[str], new: list[str]) -> list[str]:
    """The ``union`` rule: the older models, then the newer ones not among them, in order."""
    return [*old, *(m for m in new if m not in old)]


_MERGE: Final[dict[str, Callable[[Any, Any, RunFold], Any]]] = {
    "keep": lambda old, new, newer: old,
    "newer": lambda old, new, newer: new,
    "add": _add,
    "lifecycle": lambda old, new, newer: new if newer.lifecycle is not None else old,
    "first_set": lambda old, new, newer: old if old is not None else new,
    "last_set": lambda old, new, newer: new if new is not None else old,
    "union": lambda old, new, newer: union_models(old, new),
}


# -- a batch -------------------------------------------------------------------------------


@dataclass
class Projection:
    """What a batch of events adds: a fold per ``(thread_id, run_id)`` (in order of first
    appearance), and the model calls' usage, read as buckets by :meth:`usage`."""

    runs: dict[tuple[str, str], RunFold] = field(default_factory=dict)
    #: ``(thread_id, model, caller)`` -> counts of :data:`USAGE_COUNTS`
    calls: dict[tuple[str, str, str], dict[str, int]] = field(default_factory=dict)

    def add(self, seq: int, event: NewEvent) -> None:
        """Fold ``event`` (stored at ``seq``; events of a thread come in seq order) in."""
        key = (event.thread_id, event.run_id)
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = RunFold.starting(seq, event)
        call = run.add(seq, event)
        if call is not None:
            self.count_call(event, *call)

    def count_call(self, event: NewEvent, usage: list[int], model: str | None) -> None:
        """Count the model call ``event`` (an ``llm.end`` of ``usage`` and ``model``)."""
        caller = short_name(event.metadata.get("caller")) or "unknown"
        cell = (event.thread_id, model or "unknown", caller)
        counts = self.calls.get(cell)
        if counts is None:
            self.calls[cell] = {"calls": 1, **dict(zip(USAGE_KEYS, usage, strict=True))}
        else:
            counts["calls"] += 1
            for name, value in zip(USAGE_KEYS, usage, strict=True):
                counts[name] += value

    def usage(self) -> dict[str, Buckets]:
        """Per thread with a model call: its buckets — the total, each model, each caller."""
        threads: dict[str, Buckets] = {}
        for (thread_id, model, caller), counts in self.calls.items():
            buckets = threads.setdefault(thread_id, {})
            add_buckets(
                buckets, {TOTAL: counts, ("model", model): counts, ("caller", caller): counts}
            )
        return threads


def project(events: Iterable[tuple[int, NewEvent]]) -> Projection:
    """The :class:`Projection` of ``(seq, event)`` pairs (each thread's in seq order)."""
    projection = Projection()
    runs = projection.runs
    key: tuple[str, str] | None = None
    run: RunFold | None = None
    for seq, event in events:  # a batch is mostly one run: its fold is found once
        values = event.__dict__
        if key is None or values["run_id"] != key[1] or values["thread_id"] != key[0]:
            key = (values["thread_id"], values["run_id"])
            run = runs.get(key)
            if run is None:
                run = runs[key] = RunFold.starting(seq, event)
        call = cast(RunFold, run).add(seq, event)
        if call is not None:
            projection.count_call(event, *call)
    return projection


def add_buckets(total: Buckets, more: Buckets) -> None:
    """Add the counts of ``more`` into ``total`` bucket by bucket."""
    for bucket, counts in more.items():
        into = total.setdefault(bucket, dict.fromkeys(USAGE_COUNTS, 0))
        for name, value in counts.items():
            into[name] += value


def thread_usage(
    thread_id: str, buckets: Iterable[tuple[str, str, Mapping[str, int]]], run_count: int
) -> ThreadUsage:
    """The ``ThreadUsage`` of stored ``(scope, key, counts)`` buckets."""
    usage = ThreadUsage(thread_id=thread_id, run_count=run_count)
    for scope, key, counts in buckets:
        totals = UsageTotals(**{name: int(counts[name]) for name in USAGE_COUNTS})
        if (scope, key) == TOTAL:
            usage.totals = totals
        elif scope == "model":
            usage.by_model[key] = totals
        elif scope == "caller":
            usage.by_caller[key] = totals
    return usage
