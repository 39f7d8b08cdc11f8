"""What the store reports about threads, runs and usage (re-exported by :mod:`journal.events`).

How runs and usage are read out of the events is :mod:`journal._runs`, in one place.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import BaseModel, Field

__all__ = [
    "USAGE_KEYS",
    "RunSummary",
    "ThreadSummary",
    "ThreadUsage",
    "UsageTotals",
    "status_from_lifecycle",
]


class ThreadSummary(BaseModel):
    """One thread as ``list_threads`` reports it."""

    thread_id: str
    event_count: int
    last_seq: int
    run_count: int
    first_event_at: datetime
    last_event_at: datetime


#: The token counts of a run's ``usage`` (and of :class:`UsageTotals`, with ``calls``).
USAGE_KEYS: Final = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "reasoning_tokens",
)


def _zero_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


class RunSummary(BaseModel):
    """One run of a thread as ``list_runs`` / ``get_run`` report it.

    ``status`` comes from the run's last lifecycle event: ``running`` (only ``run.start`` or
    ``run.resume``), ``success`` (``run.end``), ``error``, ``cancelled``, ``interrupted``, or
    ``unknown`` when the run has no lifecycle event. ``ended_at`` is the ``created_at`` of
    that event when it is terminal (``run.end/error/cancel/interrupt``; ``None`` while
    running) and ``duration_ms`` its ``duration_ms`` (else ``ended_at - started_at``);
    ``error_type``/``error`` come from a ``run.error``'s content. ``models`` are the distinct
    models of its ``llm.end`` and ``llm.error`` events (``metadata.model``: the one that
    answered, the one a failed call asked for) in order of first use; ``usage`` always has the keys
    ``input_tokens``, ``output_tokens``, ``total_tokens``, ``cache_read_tokens`` and
    ``reasoning_tokens``, summed over the run's ``llm.end`` events (a total reported as 0
    or missing counts as input + output). ``llm_calls`` counts ``llm.end``/``llm.error``,
    ``tool_calls`` ``tool.end``/``tool.error``. ``first_human`` is the text of the first
    ``message.human`` not hidden from the UI, ``last_ai`` of the last ``message.ai`` of the
    agent, each at most 200 characters (cut with ``…``). Every field added after the first
    ones has a default, so older code still builds a summary.
    """

    run_id: str
    thread_id: str
    first_seq: int
    last_seq: int
    event_count: int
    started_at: datetime
    last_event_at: datetime
    status: str
    ended_at: datetime | None = None
    duration_ms: float | None = None
    error_type: str | None = None
    error: str | None = None
    models: list[str] = Field(default_factory=list)
    usage: dict[str, int] = Field(default_factory=_zero_usage)
    llm_calls: int = 0
    tool_calls: int = 0
    first_human: str | None = None
    last_ai: str | None = None


class UsageTotals(BaseModel):
    """Token usage summed over model calls (``llm.end`` events): ``calls`` is their number."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    reasoning_tokens: int = 0


class ThreadUsage(BaseModel):
    """A thread's token usage as ``read_usage`` reports it: sums over every ``llm.end``.

    ``by_model`` is keyed by ``llm.end`` ``metadata.model`` (``"unknown"`` when absent),
    ``by_caller`` by ``metadata.caller`` (``agent``, ``middleware:<Class>``,
    ``subagent:<graph>``…; ``"unknown"`` when absent); both sum to ``totals``. ``run_count``
    is the number of runs of the thread. An unknown thread has zeros everywhere.
    """

    thread_id: str
    totals: UsageTotals = Field(default_factory=UsageTotals)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)
    by_caller: dict[str, UsageTotals] = Field(default_factory=dict)
    run_count: int = 0


def status_from_lifecycle(event_type: str | None) -> str:
    """Map a run's last lifecycle ``event_type`` to a ``RunSummary.status``."""
    return {
        None: "unknown",
        "run.start": "running",
        "run.resume": "running",
        "run.end": "success",
        "run.error": "error",
        "run.cancel": "cancelled",
        "run.interrupt": "interrupted",
    }.get(event_type, "unknown")
