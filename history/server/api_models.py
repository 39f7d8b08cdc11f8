"""Response models of the HTTP API: what ``/openapi.json`` promises every client.

Events, threads and runs reuse the journal's own models (``RunEvent``, ``ThreadSummary``,
``RunSummary``), so the wire format is the store's format. Timeline items follow the page shape of
``history.build_timeline`` (ARCHITECTURE.md, "Timeline"); they allow extra fields so the builder
can add information without breaking the API.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from journal.events import MAX_ID_LENGTH, RunEvent, RunSummary, ThreadSummary, UsageTotals

__all__ = [
    "AiItem",
    "DeleteResult",
    "ErrorBody",
    "EventPage",
    "HistoryItem",
    "HistoryPage",
    "HumanItem",
    "RunList",
    "RunUsage",
    "SummaryMarkerItem",
    "ThreadList",
    "ToolItem",
    "UsageBucket",
    "UsageReport",
]


class ErrorBody(BaseModel):
    """The body of a 401, 404 or 503 answer."""

    detail: str


class ThreadList(BaseModel):
    """One page of threads, most recently active first."""

    threads: list[ThreadSummary]
    offset: int = Field(ge=0, description="Position of the first thread of this page.")
    has_more: bool = Field(description="True when threads exist beyond this page.")


class EventPage(BaseModel):
    """Raw events of a thread ascending by ``seq``; follow ``next_after_seq`` for more."""

    thread_id: str
    events: list[RunEvent]
    has_more: bool = Field(description="True when more matching events follow this page.")
    size_limited: bool = Field(
        default=False,
        description="True when the page ended before ``limit`` events because it reached the "
        "server's byte bound (``has_more`` is then true: read on from ``next_after_seq``).",
    )
    next_after_seq: int | None = Field(
        description="The seq of the last event returned (``after_seq`` if none): pass it "
        "back as ``after_seq`` to read on, now if ``has_more``, later to poll."
    )
    next_before_seq: int | None = Field(
        default=None,
        description="Read backwards (``before_seq`` given) and ``has_more``: the seq of the "
        "first event returned, to pass back as ``before_seq`` for the older page.",
    )


class RunList(BaseModel):
    """A page of a thread's runs, newest first; follow ``next_before_seq`` for older ones."""

    thread_id: str
    runs: list[RunSummary]
    has_more: bool = Field(default=False, description="True when older runs exist.")
    next_before_seq: int | None = Field(
        default=None,
        description="When ``has_more``: the first seq of the oldest run here, to pass back as "
        "``before_seq`` for the older page.",
    )


#: Token totals of some model calls: the store's own model, one definition for both.
UsageBucket = UsageTotals


class RunUsage(BaseModel):
    """One run's model usage."""

    run_id: str
    status: str
    started_at: datetime
    ended_at: datetime | None = None
    models: list[str] = Field(default_factory=list)
    usage: dict[str, int] = Field(default_factory=dict)
    llm_calls: int = 0


class UsageReport(BaseModel):
    """What a thread's model calls cost: totals, by model (as the response names it), by
    caller, the newest runs, and the run still running (its usage so far)."""

    thread_id: str
    totals: UsageBucket
    by_model: dict[str, UsageBucket]
    by_caller: dict[str, UsageBucket]
    run_count: int
    by_run: list[RunUsage] = Field(description="The newest runs, newest first.")
    active_run: RunUsage | None = None


class DeleteResult(BaseModel):
    """What ``DELETE /api/threads/{thread_id}`` removed."""

    thread_id: str
    deleted: int = Field(ge=0, description="How many events were deleted.")


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    seq: int = Field(ge=1)
    run_id: str
    created_at: datetime


class _MessageItem(_Item):
    """A message of the thread: who added it, and whether it is hidden from the UI."""

    caller: str | None = Field(
        default=None,
        description="Who added the message: user, agent (the lead agent), "
        "middleware:<Class> or subagent:<graph>; null when the event does not say.",
    )
    hidden: bool = Field(
        default=False,
        description="True for a message added with hide_from_ui (injected context, not "
        "something the user typed); left out of /history unless include_hidden=true.",
    )


class HumanItem(_MessageItem):
    """A human message of the timeline."""

    type: Literal["human"]
    content: Any = None


class SystemItem(_MessageItem):
    """A system message in the thread's state (one the client sent, or a node wrote)."""

    type: Literal["system"]
    content: Any = None


class AiItem(_MessageItem):
    """An AI message; ``tool_calls`` lists the tools it asked for."""

    type: Literal["ai"]
    content: Any = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class ToolItem(_MessageItem):
    """A tool result (errors included) answering the AI tool call ``tool_call_id``."""

    type: Literal["tool"]
    content: Any = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None


class SummaryMarkerItem(_Item):
    """A compaction: ``replaced_count`` messages were condensed into ``summary`` here."""

    type: Literal["summary_marker"]
    replaced_count: int
    summary: str | None = None
    replaced_message_ids: list[str] = Field(default_factory=list)
    first_replaced_seq: int | None = None
    last_replaced_seq: int | None = None
    inferred: bool = False


class RemovalMarkerItem(_Item):
    """A removal without a summary: ``removed_count`` messages left the state here."""

    type: Literal["removal_marker"]
    removed_count: int
    removed_message_ids: list[str] = Field(default_factory=list)
    first_removed_seq: int | None = None
    last_removed_seq: int | None = None


HistoryItem = Annotated[
    HumanItem | AiItem | ToolItem | SystemItem | SummaryMarkerItem | RemovalMarkerItem,
    Field(discriminator="type"),
]


class HistoryPage(BaseModel):
    """One page of the ``/history`` timeline; items ascend by ``seq``.

    Without ``before_seq`` the page holds the newest items; following ``next_before_seq`` walks
    back to seq 1 without losing or repeating an item.
    """

    thread_id: str = Field(max_length=MAX_ID_LENGTH)
    items: list[HistoryItem]
    has_more: bool
    next_before_seq: int | None
    size_limited: bool = Field(
        default=False,
        description="True when the page holds fewer than ``limit`` items because they reached "
        "the server's byte bound (``has_more`` is then true: read on from ``next_before_seq``).",
    )
