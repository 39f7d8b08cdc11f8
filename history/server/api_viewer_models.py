"""Response models of the viewer's routes (:mod:`history.server.api_viewer`).

They mirror what the pure readers return (:mod:`history._context`, :mod:`history._spans`,
:mod:`history._search`); every field a reader may leave out has a default, so the OpenAPI
document is the exact promise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from history.server.api_models import AiItem, HumanItem, ToolItem

__all__ = [
    "CallPage",
    "CallPoint",
    "ContextMarker",
    "ContextMessage",
    "ContextTokens",
    "EarlierSummary",
    "MarkerOriginals",
    "ModelContext",
    "RunSpans",
    "SearchHit",
    "SearchPage",
    "Span",
    "TokenUsage",
    "TruncatedEvent",
    "Truncations",
]


class TokenUsage(BaseModel):
    """Token counts; ``total_tokens`` is input + output when the provider reported 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    reasoning_tokens: int = 0


class ContextMessage(BaseModel):
    """One input message of a model call and where it came from."""

    index: int = Field(ge=0, description="Position in the call's input.")
    id: str | None = None
    digest: str | None = None
    type: str | None = Field(default=None, description="human, ai, tool, system, …")
    origin: Literal["state", "summary", "edited", "added", "unresolved"] = Field(
        description="state: the journaled message; summary: a compaction's summary; edited: "
        "a request-only version of the journaled message original_seq; added: in the request "
        "only (system prompt, injected, a subagent's own); unresolved: not rebuildable."
    )
    message: dict[str, Any] | None = Field(
        default=None, description="The message as stored ({type, data}); null if unresolved."
    )
    seq: int | None = Field(default=None, description="Its message event (origin state).")
    marker_seq: int | None = Field(default=None, description="The compaction (origin summary).")
    original_seq: int | None = Field(
        default=None, description="The journaled version of this id (origin edited)."
    )
    truncated: bool = Field(default=False, description="The store cut the stored message.")
    reason: str | None = Field(default=None, description="Why it is unresolved.")


class ContextMarker(BaseModel):
    """A compaction or removal that shaped the context, placed at ``before_index``."""

    kind: Literal["summary", "removal"]
    seq: int
    count: int
    message_ids: list[str]
    first_seq: int | None = None
    last_seq: int | None = None
    summary_id: str | None = None
    inferred: bool = False
    before_index: int = Field(ge=0, description="Where in the messages it took effect.")


class ContextTokens(BaseModel):
    """The size of the context: reported by the provider, else approximate."""

    count: int
    source: Literal["provider", "approximate"]
    input_tokens: int | None = Field(default=None, description="As the provider reported.")
    approximate: int = Field(description="LangChain's count_tokens_approximately.")


class ModelContext(BaseModel):
    """The exact input of one model call (a page of its messages)."""

    thread_id: str
    seq: int = Field(description="The call's llm.start.")
    end_seq: int | None = Field(default=None, description="Its llm.end / llm.error.")
    run_id: str
    llm_run_id: str | None = None
    caller: str | None = None
    model: str | None = None
    agent_call: bool = Field(description="A call of the thread's agent: equals replay(model).")
    recorded: bool = Field(description="The call has a context record.")
    exact: bool = Field(
        description="Every message was rebuilt exactly (none unresolved, none cut by the store)."
    )
    status: Literal["ok", "error", "running"]
    message_count: int
    messages: list[ContextMessage]
    offset: int
    next_offset: int | None = Field(description="Pass as offset for the next messages.")
    size_limited: bool = False
    markers: list[ContextMarker]
    tokens: ContextTokens


class Span(BaseModel):
    """One span of a run: the run, a node step, a subagent, a model or tool call, a mark."""

    id: str
    parent: str | None = None
    kind: Literal["run", "node", "subagent", "model", "tool", "event"]
    name: str
    seq: int
    end_seq: int | None = None
    caller: str | None = None
    node: str | None = None
    step: int | None = None
    start_ms: float = Field(description="Milliseconds from the run's start.")
    end_ms: float | None = Field(default=None, description="None while it runs.")
    duration_ms: float | None = None
    status: str = Field(
        description="ok, error, running, unfinished; the run: its status (success, …)."
    )
    model: str | None = None
    request_model: str | None = None
    usage: TokenUsage | None = None
    message_count: int | None = None
    message_id: str | None = None
    context: bool = Field(default=False, description="A model call with a context record.")
    input: str | None = Field(default=None, description="The last input message (excerpt).")
    args: str | None = Field(default=None, description="Tool arguments (excerpt).")
    output: str | None = Field(default=None, description="Output (excerpt).")
    tool_call_id: str | None = None
    error_type: str | None = None
    error: str | None = None
    truncated: bool = Field(default=False, description="The store cut one of its events.")


class RunSpans(BaseModel):
    """A run and its span tree (parents before children, in the order they started)."""

    thread_id: str
    run_id: str
    status: str
    started_at: datetime
    ended_at: datetime | None = None
    duration_ms: float | None = None
    error_type: str | None = None
    error: str | None = None
    models: list[str]
    usage: TokenUsage
    llm_calls: int
    tool_calls: int
    errors: int
    spans: list[Span]
    truncated: bool = Field(description="The run has more spans than returned.")
    size_limited: bool = Field(description="Spans stopped at the response's byte bound.")
    last_seq: int = Field(
        description="The thread's last seq when the spans were read: a follower of the run's "
        "stream from it (after_seq) misses no event they do not show."
    )


class CallPoint(TokenUsage):
    """One ended model call (its llm.end or llm.error)."""

    seq: int
    run_id: str
    llm_run_id: str | None = None
    caller: str | None = None
    model: str | None = None
    status: Literal["ok", "error"]
    latency_ms: float | None = None
    message_id: str | None = None


class CallPage(BaseModel):
    """Model calls ascending by seq: the per-call token series."""

    thread_id: str
    calls: list[CallPoint]
    has_more: bool
    next_before_seq: int | None = Field(description="Older calls: pass as before_seq.")
    next_after_seq: int | None = Field(description="Newer calls: pass as after_seq.")


class SearchHit(BaseModel):
    """An event whose text matched, with an excerpt around the first match."""

    seq: int
    run_id: str
    event_type: str
    field: str = Field(description="Where the excerpt is from: text, tool_call, args, …")
    fields: list[str] = Field(description="Every field of the event that matched.")
    message_id: str | None = None
    excerpt: str
    match_start: int = Field(ge=0, description="Offset of the match in the excerpt.")
    match_length: int = Field(ge=0)
    hidden: bool = False


class SearchPage(BaseModel):
    """Hits newest first; ``next_before_seq`` searches further back."""

    thread_id: str
    query: str
    hits: list[SearchHit]
    scanned: int = Field(description="Events looked at for this page.")
    has_more: bool = Field(description="Older events are left to search.")
    next_before_seq: int | None


class EarlierSummary(BaseModel):
    """An earlier summary message among a compaction's replaced ids."""

    id: str
    seq: int = Field(description="The compaction that made it.")
    summary: str | None = None


class MarkerOriginals(BaseModel):
    """The messages a compaction or removal took out of the state (a page)."""

    thread_id: str
    seq: int
    kind: Literal["summary", "removal"]
    message_ids: list[str]
    first_seq: int | None = None
    last_seq: int | None = None
    items: list[Annotated[HumanItem | AiItem | ToolItem, Field(discriminator="type")]]
    earlier_summaries: list[EarlierSummary]
    has_more: bool
    next_after_seq: int | None


class TruncatedEvent(BaseModel):
    """A message or middleware event the store cut to its caps."""

    seq: int
    event_type: str
    original_bytes: int | None = None
    metadata_truncated: bool = False


class Truncations(BaseModel):
    """Truncated events of a seq window."""

    thread_id: str
    events: list[TruncatedEvent]
    has_more: bool
    next_after_seq: int
