"""The ``RunEventStore`` contract, written once: every backend inherits these guarantees.

Guarantees (every backend, checked by ``journal.testing.StoreContract``):

* **Append-only.** No method updates an event; ``delete_thread`` is the only deletion.
* **Gap-free seq.** Events of one thread get seq 1, 2, 3… in commit order, with no gap and no
  duplicate, whatever the number of concurrent writers. Threads are independent.
* **All-or-nothing batches.** ``append`` validates the whole batch first and writes it in one
  transaction: if any event is invalid or the write fails, nothing of the batch is stored.
* **Idempotent.** ``event_id`` is the idempotency key: appending an event whose ``event_id`` is
  already stored returns the stored record and takes no new seq (a retry after an unknown
  outcome is always safe). An ``event_id`` repeated inside one batch is stored once.
* **Copies.** Returned events are new objects; mutating them never changes the store.
* **Filters.** ``category``, ``event_type`` and ``run_id`` each take ``None`` (no filter), a
  string, or a collection of strings; an empty collection matches nothing. Filters apply
  before ``limit``.
* **Cursors.** ``after_seq`` keeps seq > after_seq; ``before_seq`` keeps seq < before_seq; both
  make a window. With ``before_seq`` set, ``limit`` keeps the *last* ``limit`` events of the
  window (the page just below the cursor); otherwise the first. Results always ascend by seq.

Sync and async methods come in pairs (``append``/``aappend``…). The async ones never block the
event loop: by default they run the sync body in a worker thread; a backend with a native async
driver overrides the ``_a*`` hooks.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ParamSpec, Self, TypeVar

from journal._batch import EventLike, PreparedBatch, encoded_texts, prepare_batch
from journal._query import FilterValue, ReadQuery, adapt_legacy_hook, check_cursor
from journal.errors import StoreClosedError
from journal.events import (
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    validate_id,
)
from journal.truncation import DEFAULT_CONTENT_CAPS, DEFAULT_METADATA_CAP

__all__ = [
    "EventLike",
    "FilterValue",
    "PreparedBatch",
    "ReadQuery",
    "RunEventStore",
    "encoded_texts",
]

_DEFAULT_PAGE = 1000
P = ParamSpec("P")
T = TypeVar("T")


class RunEventStore(ABC):
    """An append-only store of run events, numbered by a gap-free per-thread ``seq``.

    Subclasses implement the underscore hooks; the public methods validate input, apply the
    content caps and the metadata cap (``metadata_cap`` bytes; an ``llm.start`` ``context``
    record is never cut, see :mod:`journal.truncation`) and enforce the contract in the module
    docstring. Reads reach the hooks as a validated :class:`ReadQuery` (``_read(query)``,
    ``_aread(query)``, ``_count(query)``); a backend whose hooks still take the query's fields
    one by one (``_read(thread_id, after_seq, before_seq, limit, flt)``, ``_count(thread_id,
    flt)``) is adapted when its class is created.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("_read", "_aread", "_count"):
            adapted = adapt_legacy_hook(name, cls.__dict__.get(name))
            if adapted is not None:
                setattr(cls, name, adapted)

    def __init__(
        self,
        *,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        if isinstance(metadata_cap, bool) or not isinstance(metadata_cap, int) or metadata_cap < 64:
            raise ValueError("metadata_cap must be an int >= 64 (bytes)")
        self.metadata_cap = metadata_cap
        caps = dict(DEFAULT_CONTENT_CAPS)
        if content_caps:
            for category, cap in content_caps.items():
                if category not in caps:
                    raise ValueError(f"content_caps has unknown category {category!r}")
                if not isinstance(cap, int) or cap < 64:
                    raise ValueError(f"content_caps[{category!r}] must be an int >= 64")
                caps[category] = cap
        self.content_caps: Mapping[str, int] = caps
        self._closed = False
        self._close_lock = threading.Lock()

    # -- input preparation (shared by every backend) ---------------------------------------

    def prepare(self, events: Iterable[EventLike]) -> list[NewEvent]:
        """Validate a batch and apply the content caps; raise before anything is written.

        Returns a :class:`PreparedBatch`: the events, each encoded once (canonical JSON of its
        content and metadata, which the size check and the backend both use). A ``NewEvent``
        that needs no change is passed on as is, not copied: backends must not mutate
        prepared events, and must copy what they keep.
        """
        return prepare_batch(events, self.content_caps, self.metadata_cap)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"{type(self).__name__} is closed")

    # -- public sync API ---------------------------------------------------------------------

    def append(self, events: Iterable[EventLike]) -> list[RunEvent]:
        """Append a batch atomically; return the stored records in input order.

        New events get the next seqs of their thread; an already-stored ``event_id`` returns
        its original record. Raises ``ValueError``/``TypeError`` for invalid input (nothing is
        written) and ``StoreError`` when the backend fails (nothing is written).
        """
        prepared = self.prepare(events)
        self._check_open()
        if not prepared:
            return []
        return self._append(prepared)

    def read(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> list[RunEvent]:
        """Events of ``thread_id`` ascending by seq, within the cursors, filters and limit."""
        query = self._query(thread_id, after_seq, before_seq, limit, category, event_type, run_id)
        return [] if query is None else self._read(query)

    def iter_events(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        page_size: int = _DEFAULT_PAGE,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> Iterator[RunEvent]:
        """Every matching event of ``thread_id`` after ``after_seq``, fetched page by page."""
        if page_size < 1:
            raise ValueError("page_size must be >= 1")
        cursor = after_seq or 0
        while True:
            page = self.read(
                thread_id,
                after_seq=cursor,
                limit=page_size,
                category=category,
                event_type=event_type,
                run_id=run_id,
            )
            yield from page
            if len(page) < page_size:
                return
            cursor = page[-1].seq

    def last_seq(self, thread_id: str) -> int:
        """The highest seq of ``thread_id``, or 0 if the thread has no event."""
        validate_id(thread_id, "thread_id")
        self._check_open()
        return self._last_seq(thread_id)

    def count(
        self,
        thread_id: str,
        *,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> int:
        """How many events of ``thread_id`` match the filters."""
        query = ReadQuery.of(thread_id, category=category, event_type=event_type, run_id=run_id)
        self._check_open()
        if query.matches_nothing:
            return 0
        return self._count(query)

    def list_threads(self, *, limit: int | None = None, offset: int = 0) -> list[ThreadSummary]:
        """Threads with at least one event, most recently active first."""
        offset = check_cursor("offset", offset) or 0
        limit = check_cursor("limit", limit)
        self._check_open()
        return self._list_threads(limit, offset)

    def list_runs(self, thread_id: str) -> list[RunSummary]:
        """The runs of ``thread_id`` in order of their first event."""
        validate_id(thread_id, "thread_id")
        self._check_open()
        return self._list_runs(thread_id)

    def delete_thread(self, thread_id: str) -> int:
        """Delete every event of ``thread_id`` (retention); return how many were deleted.

        A later append to the same ``thread_id`` starts again at seq 1.
        """
        validate_id(thread_id, "thread_id")
        self._check_open()
        return self._delete_thread(thread_id)

    def close(self) -> None:
        """Release connections; later calls raise ``StoreClosedError``. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public async API (same semantics) --------------------------------------------------

    async def aappend(self, events: Iterable[EventLike]) -> list[RunEvent]:
        """Async :meth:`append`."""
        prepared = self.prepare(events)
        self._check_open()
        if not prepared:
            return []
        return await self._aappend(prepared)

    async def aread(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> list[RunEvent]:
        """Async :meth:`read`."""
        query = self._query(thread_id, after_seq, before_seq, limit, category, event_type, run_id)
        return [] if query is None else await self._aread(query)

    async def aiter_events(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        page_size: int = _DEFAULT_PAGE,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> AsyncIterator[RunEvent]:
        """Async :meth:`iter_events`."""
        if page_size < 1:
            raise ValueError("page_size must be >= 1")
        cursor = after_seq or 0
        while True:
            page = await self.aread(
                thread_id,
                after_seq=cursor,
                limit=page_size,
                category=category,
                event_type=event_type,
                run_id=run_id,
            )
            for event in page:
                yield event
            if len(page) < page_size:
                return
            cursor = page[-1].seq

    async def alast_seq(self, thread_id: str) -> int:
        """Async :meth:`last_seq`."""
        return await self._in_thread(self.last_seq, thread_id)

    async def acount(
        self,
        thread_id: str,
        *,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> int:
        """Async :meth:`count`."""
        return await self._in_thread(
            self.count, thread_id, category=category, event_type=event_type, run_id=run_id
        )

    async def alist_threads(
        self, *, limit: int | None = None, offset: int = 0
    ) -> list[ThreadSummary]:
        """Async :meth:`list_threads`."""
        return await self._in_thread(self.list_threads, limit=limit, offset=offset)

    async def alist_runs(self, thread_id: str) -> list[RunSummary]:
        """Async :meth:`list_runs`."""
        return await self._in_thread(self.list_runs, thread_id)

    async def adelete_thread(self, thread_id: str) -> int:
        """Async :meth:`delete_thread`."""
        return await self._in_thread(self.delete_thread, thread_id)

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await self._in_thread(self.close)

    # -- helpers -----------------------------------------------------------------------------

    def _query(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        category: FilterValue,
        event_type: FilterValue,
        run_id: FilterValue,
    ) -> ReadQuery | None:
        """The validated query of a read; ``None`` when it can match nothing."""
        query = ReadQuery.of(
            thread_id,
            after_seq=after_seq,
            before_seq=before_seq,
            limit=limit,
            category=category,
            event_type=event_type,
            run_id=run_id,
        )
        self._check_open()
        return None if query.matches_nothing else query

    @staticmethod
    async def _in_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio  # here, not at the top: reading a store from the CLI never needs it

        return await asyncio.to_thread(func, *args, **kwargs)

    # -- backend hooks -----------------------------------------------------------------------

    @abstractmethod
    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        """Write validated events in one transaction (see the contract)."""

    @abstractmethod
    def _read(self, query: ReadQuery) -> list[RunEvent]:
        """The events ``query`` selects (see :class:`ReadQuery`); never ``matches_nothing``."""

    @abstractmethod
    def _last_seq(self, thread_id: str) -> int: ...

    @abstractmethod
    def _count(self, query: ReadQuery) -> int:
        """How many events of ``query.thread_id`` pass ``query.filter`` (cursors unset)."""

    @abstractmethod
    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]: ...

    @abstractmethod
    def _list_runs(self, thread_id: str) -> list[RunSummary]: ...

    @abstractmethod
    def _delete_thread(self, thread_id: str) -> int: ...

    @abstractmethod
    def _close(self) -> None: ...

    async def _aappend(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return await self._in_thread(self._append, events)

    async def _aread(self, query: ReadQuery) -> list[RunEvent]:
        return await self._in_thread(self._read, query)
