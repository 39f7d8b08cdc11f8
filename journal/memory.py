"""``MemoryEventStore``: the store contract in process memory, for tests and ephemeral use."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from journal.events import (
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    status_from_lifecycle,
)
from journal.store import ReadQuery, RunEventStore
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["MemoryEventStore"]


class MemoryEventStore(RunEventStore):
    """A thread-safe in-memory ``RunEventStore``; every result is a deep copy."""

    def __init__(
        self,
        *,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        super().__init__(content_caps=content_caps, metadata_cap=metadata_cap)
        self._lock = threading.Lock()
        self._threads: dict[str, list[RunEvent]] = {}
        self._by_id: dict[str, RunEvent] = {}

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        with self._lock:
            staged: dict[str, RunEvent] = {}
            heads: dict[str, int] = {}
            result: list[RunEvent] = []
            for event in events:
                existing = self._by_id.get(event.event_id) or staged.get(event.event_id)
                if existing is not None:
                    result.append(existing)
                    continue
                thread = event.thread_id
                seq = heads.get(thread, len(self._threads.get(thread, ()))) + 1
                heads[thread] = seq
                record = RunEvent(**event.model_dump(), seq=seq)
                staged[event.event_id] = record
                result.append(record)
            for record in staged.values():  # commit: nothing above can fail half-way
                self._threads.setdefault(record.thread_id, []).append(record)
                self._by_id[record.event_id] = record
            return [r.model_copy(deep=True) for r in result]

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        with self._lock:
            events = self._threads.get(query.thread_id, [])
            window = query.window(events, _seq, query.filter.matches)
            return [e.model_copy(deep=True) for e in window]

    def _last_seq(self, thread_id: str) -> int:
        with self._lock:
            return len(self._threads.get(thread_id, ()))

    def _count(self, query: ReadQuery) -> int:
        with self._lock:
            return sum(1 for e in self._threads.get(query.thread_id, ()) if query.filter.matches(e))

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        with self._lock:
            summaries = [
                ThreadSummary(
                    thread_id=thread_id,
                    event_count=len(events),
                    last_seq=events[-1].seq,
                    run_count=len({e.run_id for e in events}),
                    first_event_at=events[0].created_at,
                    last_event_at=events[-1].created_at,
                )
                for thread_id, events in self._threads.items()
                if events
            ]
        summaries.sort(key=lambda s: (s.last_event_at, s.thread_id), reverse=True)
        end = None if limit is None else offset + limit
        return summaries[offset:end]

    def _list_runs(self, thread_id: str) -> list[RunSummary]:
        with self._lock:
            events = list(self._threads.get(thread_id, ()))
        runs: dict[str, list[RunEvent]] = {}
        for event in events:
            runs.setdefault(event.run_id, []).append(event)
        summaries = []
        for run_id, run_events in runs.items():
            lifecycle = [e.event_type for e in run_events if e.category == "lifecycle"]
            summaries.append(
                RunSummary(
                    run_id=run_id,
                    thread_id=thread_id,
                    first_seq=run_events[0].seq,
                    last_seq=run_events[-1].seq,
                    event_count=len(run_events),
                    started_at=run_events[0].created_at,
                    last_event_at=run_events[-1].created_at,
                    status=status_from_lifecycle(lifecycle[-1] if lifecycle else None),
                )
            )
        return summaries

    def _delete_thread(self, thread_id: str) -> int:
        with self._lock:
            events = self._threads.pop(thread_id, [])
            for event in events:
                self._by_id.pop(event.event_id, None)
            return len(events)

    def _close(self) -> None:
        with self._lock:
            self._threads.clear()
            self._by_id.clear()


def _seq(event: RunEvent) -> int:
    return event.seq
