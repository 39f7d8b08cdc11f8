"""``MemoryEventStore``: the store contract in process memory, for tests and ephemeral use.

Runs and usage are kept as the events arrive (:mod:`journal._runs`): a fold per run, in order
of first seq, indexed by run id, and usage buckets per thread. Each record's canonical texts
(as ``prepare`` encoded them) are kept beside it, so a page copied to another store is neither
walked nor encoded again there (:func:`journal.copy.copy_store`).
"""

from __future__ import annotations

import bisect
import copy
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from journal._batch import KnownEvents
from journal._runs import Buckets, RunFold, add_buckets, by_first_seq, project, thread_usage
from journal.events import (
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    ThreadUsage,
    construct,
)
from journal.store import ReadQuery, RunEventStore
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["MemoryEventStore"]

_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None)})


def _copy_value(value: Any) -> Any:
    """A deep copy of JSON data (dicts and lists are rebuilt, scalars shared), much cheaper
    than ``copy.deepcopy``; anything else (never in a validated event) by ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _copy_value(item) for key, item in value.items()}
    if kind is list:
        return [_copy_value(item) for item in value]
    return value if kind in _IMMUTABLE else copy.deepcopy(value)


def _copy(event: NewEvent, seq: int) -> RunEvent:
    """A stored record of ``event`` at ``seq``, sharing no mutable value with it (its fields
    are valid already: it was prepared or stored)."""
    values = dict(event.__dict__)
    values["content"] = _copy_value(values["content"])
    values["metadata"] = _copy_value(values["metadata"])
    values["seq"] = seq
    return construct(RunEvent, values)


class MemoryEventStore(RunEventStore):
    """A thread-safe in-memory ``RunEventStore``; every result is a deep copy."""

    _takes_records = True

    def __init__(
        self,
        *,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        super().__init__(content_caps=content_caps, metadata_cap=metadata_cap)
        self._lock = threading.Lock()
        self._threads: dict[str, list[RunEvent]] = {}
        # each record's canonical texts (content, metadata) as prepare encoded them, by seq
        # (None: appended without them): a page copied out hands them on, never re-encoded
        self._texts: dict[str, list[tuple[str, str] | None]] = {}
        self._by_id: dict[str, RunEvent] = {}
        self._runs: dict[str, list[RunFold]] = {}  # thread -> its runs by first seq
        self._run_ids: dict[str, dict[str, RunFold]] = {}  # run id -> thread -> its run
        self._usage: dict[str, Buckets] = {}

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return self._append_telling(events)[0]

    def _append_telling(self, events: Sequence[NewEvent]) -> tuple[list[RunEvent], set[str]]:
        with self._lock:
            staged: dict[str, RunEvent] = {}
            heads: dict[str, int] = {}
            result: list[RunEvent] = []
            texts: list[tuple[str, str]] | None = getattr(events, "texts", None)
            if not (isinstance(texts, list) and len(texts) == len(events)):
                texts = None
            staged_texts: list[tuple[str, str] | None] = []
            for index, event in enumerate(events):
                existing = self._by_id.get(event.event_id) or staged.get(event.event_id)
                if existing is not None:
                    result.append(existing)
                    continue
                thread = event.thread_id
                seq = heads.get(thread, len(self._threads.get(thread, ()))) + 1
                heads[thread] = seq
                record = _copy(event, seq)
                staged[event.event_id] = record
                staged_texts.append(None if texts is None else texts[index])
                result.append(record)
            projection = project((r.seq, r) for r in staged.values())
            for record, text in zip(staged.values(), staged_texts, strict=True):  # commit:
                self._threads.setdefault(record.thread_id, []).append(record)  # nothing above
                self._texts.setdefault(record.thread_id, []).append(text)  # can fail half-way
                self._by_id[record.event_id] = record
            for (thread, run_id), fold in projection.runs.items():
                threads = self._run_ids.setdefault(run_id, {})
                stored = threads.get(thread)
                if stored is None:
                    threads[thread] = fold
                    self._runs.setdefault(thread, []).append(fold)
                else:
                    stored.merge(fold)
            for thread, buckets in projection.usage().items():
                add_buckets(self._usage.setdefault(thread, {}), buckets)
            return [_copy(r, r.seq) for r in result], set(staged)

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        with self._lock:
            events = self._threads.get(query.thread_id, [])
            window = query.window(events, _seq, query.filter.matches)
            return [_copy(e, e.seq) for e in window]

    def _stored_page(self, thread_id: str, after_seq: int, limit: int) -> KnownEvents:
        """The next ``limit`` records of ``thread_id`` after ``after_seq``, not copied, with
        their canonical texts where kept (:func:`journal.copy.copy_store`'s page, which only
        appends them: a target copies what it keeps, and neither validates nor encodes)."""
        self._check_open()
        page = KnownEvents()
        with self._lock:
            events = self._threads.get(thread_id, [])
            texts = self._texts.get(thread_id, [])
            start = bisect.bisect_right(events, after_seq, key=_seq)
            for record, text in zip(
                events[start : start + limit], texts[start : start + limit], strict=True
            ):
                if text is None:
                    page.add(record)
                else:
                    page.add(record, text[0], text[1])
        return page

    def _last_seq(self, thread_id: str) -> int:
        with self._lock:
            return len(self._threads.get(thread_id, ()))

    def _count(self, query: ReadQuery) -> int:
        with self._lock:
            return sum(1 for e in self._threads.get(query.thread_id, ()) if query.filter.matches(e))

    def _thread_ids_after(self, after: str | None, limit: int) -> list[str] | None:
        with self._lock:
            ids = sorted(t for t, events in self._threads.items() if events and t > (after or ""))
        return ids[:limit]

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        with self._lock:
            summaries = [
                ThreadSummary(
                    thread_id=thread_id,
                    event_count=len(events),
                    last_seq=events[-1].seq,
                    run_count=len(self._runs.get(thread_id, ())),
                    first_event_at=events[0].created_at,
                    last_event_at=events[-1].created_at,
                )
                for thread_id, events in self._threads.items()
                if events
            ]
        summaries.sort(key=lambda s: (s.last_event_at, s.thread_id), reverse=True)
        end = None if limit is None else offset + limit
        return summaries[offset:end]

    def _list_runs_page(self, query: ReadQuery) -> list[RunSummary]:
        with self._lock:
            runs = query.window(self._runs.get(query.thread_id, []), by_first_seq)
            return [run.summary() for run in runs]

    def _get_run(self, run_id: str, thread_id: str | None) -> RunSummary | None:
        with self._lock:
            threads = self._run_ids.get(run_id, {})
            if thread_id is not None:
                run = threads.get(thread_id)
                return None if run is None else run.summary()
            runs = sorted(threads.values(), key=lambda r: (r.started_at, r.thread_id))
            return runs[0].summary() if runs else None

    def _read_usage(self, thread_id: str) -> ThreadUsage:
        with self._lock:
            buckets = self._usage.get(thread_id, {})
            return thread_usage(
                thread_id,
                [(scope, key, dict(counts)) for (scope, key), counts in buckets.items()],
                len(self._runs.get(thread_id, ())),
            )

    def _delete_thread(self, thread_id: str) -> int:
        with self._lock:
            events = self._threads.pop(thread_id, [])
            self._texts.pop(thread_id, None)
            for event in events:
                self._by_id.pop(event.event_id, None)
            for run in self._runs.pop(thread_id, []):
                self._run_ids[run.run_id].pop(thread_id, None)
                if not self._run_ids[run.run_id]:
                    del self._run_ids[run.run_id]
            self._usage.pop(thread_id, None)
            return len(events)

    def _spool_identity(self) -> tuple[str, str]:
        # its events live and die with this object: no other store, nor process, is it
        return "memory", f"memory:{os.getpid()}:{id(self)}"

    def _close(self) -> None:
        with self._lock:
            self._threads.clear()
            self._texts.clear()
            self._by_id.clear()
            self._runs.clear()
            self._run_ids.clear()
            self._usage.clear()


def _seq(event: RunEvent) -> int:
    return event.seq
