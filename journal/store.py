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
* **Runs and usage.** ``list_runs`` pages runs by ``first_seq`` with the same cursor rule,
  ``get_run`` finds a run by id alone, ``read_usage`` sums a thread's token usage; all of them
  read out of the events by one projection (:mod:`journal._runs`) and agree with the events
  stored so far, a running run's included.

Sync and async methods come in pairs (``append``/``aappend``…). The async ones never block the
event loop: by default they run the sync body in a worker thread; a backend with a native async
driver overrides the ``_a*`` hooks.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Final, ParamSpec, Self, TypeAlias, TypeVar

from journal import _runs_default
from journal._batch import EventLike, PreparedBatch, checked_caps, encoded_texts, prepare_batch
from journal._query import FilterValue, ReadQuery, adapt_legacy_hook, check_cursor
from journal.errors import StoreClosedError
from journal.events import (
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    ThreadUsage,
    validate_id,
)
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = [
    "EventLike",
    "FilterValue",
    "MessageMark",
    "PreparedBatch",
    "ReadQuery",
    "RunEventStore",
    "encoded_texts",
]

_DEFAULT_PAGE = 1000
P = ParamSpec("P")
T = TypeVar("T")

#: ``(seq, message id, recorded digest)`` of a stored message event (see
#: :meth:`RunEventStore._message_marks`).
MessageMark: TypeAlias = tuple[int, str | None, str]


def changed(store: Any, public: str, base: Any, hook: str, own: Any) -> bool:
    """Whether ``store``'s class has another ``public`` method than ``base`` or another
    ``hook`` than ``own`` (a subclass's, a patch set on the class), or the instance its own
    of either: a backend's shortcut around them would skip what they do."""
    kind, mine = type(store), store.__dict__
    return (
        getattr(kind, public) is not base
        or getattr(kind, hook) is not own
        or public in mine
        or hook in mine
    )


class RunEventStore(ABC):
    """An append-only store of run events, numbered by a gap-free per-thread ``seq``.

    Subclasses implement the underscore hooks; the public methods validate input, apply the
    content caps and the metadata cap (``metadata_cap`` bytes; an ``llm.start`` ``context``
    record is never cut, see :mod:`journal.truncation`) and enforce the contract in the module
    docstring. Reads reach the hooks as a validated :class:`ReadQuery`; hooks in the older
    positional form are adapted (see :mod:`journal.testing` for the hook signatures).
    """

    #: Whether ``_append`` takes a copied page's stored records (``RunEvent``) as they are;
    #: else (a third-party backend) it gets ``NewEvent``s, as from any other input.
    _takes_records: ClassVar[bool] = False

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
        self.content_caps, self.metadata_cap = checked_caps(content_caps, metadata_cap)
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
        return prepare_batch(events, self.content_caps, self.metadata_cap, self._takes_records)

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
        if self._closed:  # _check_open, inline: the append path runs it every time
            self._check_open()
        if not prepared:
            return []
        return self._append(prepared)

    def _append_unreturned(self, events: Iterable[EventLike]) -> None:
        """:meth:`append` for a caller that does not use the records it returns (the journal's
        writer): the same validation, errors and writes; a backend may skip building the
        records."""
        self.append(events)

    def _writer_idle(self) -> None:
        """The journal's writer has nothing queued: upkeep its appends left for then (SQLite:
        it starts the WAL checkpoint, which runs off the writer's thread, so that a flush or
        a close that comes next does not wait for it). Raises ``StoreError``; the writer logs
        it and goes on."""
        return  # (none by default)

    def _message_marks(
        self, thread_id: str, event_types: Sequence[str], after_seq: int | None = None
    ) -> list[MessageMark] | None:
        """For the journal's writer, which reads a thread's stored messages at its first look:
        ``(seq, message id, digest)`` of each event of ``thread_id`` of ``event_types`` after
        ``after_seq``, in seq order, the id as :func:`journal.catalog.stored_message_id` reads
        it from the content and the digest as the metadata records it (``metadata["digest"]``);
        or ``None`` when the backend does not answer this in one read, or when an event
        records no such digest (the caller then reads the events themselves). The base class
        answers ``None``."""
        return None

    def _marks_query(
        self,
        own_read: Callable[..., Any],
        thread_id: str,
        event_types: Sequence[str],
        after_seq: int | None,
    ) -> ReadQuery | None:
        """The query of a backend's one-read :meth:`_message_marks` (its arguments checked as
        a read checks them), whose own ``_read`` is ``own_read``; ``None`` when the marks are
        to come from the events: a subclass or a patch changes what a read answers, or no
        type filter is set."""
        if changed(self, "read", _BASE_READ, "_read", own_read):
            return None  # its own reads, then
        query = ReadQuery.of(thread_id, after_seq, None, None, None, event_types, None)
        self._check_open()
        return None if query.filter.event_type is None else query

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
        read = partial(self.read, thread_id, limit=page_size, category=category,
                       event_type=event_type, run_id=run_id)  # fmt: skip
        page = read(after_seq=after_seq)
        yield from page
        while len(page) == page_size:
            page = read(after_seq=page[-1].seq)
            yield from page

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
        query = self._query(thread_id, None, None, None, category, event_type, run_id)
        return 0 if query is None else self._count(query)

    def list_threads(self, *, limit: int | None = None, offset: int = 0) -> list[ThreadSummary]:
        """Threads with at least one event, most recently active first."""
        offset = check_cursor("offset", offset) or 0
        limit = check_cursor("limit", limit)
        self._check_open()
        return self._list_threads(limit, offset)

    def list_runs(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
    ) -> list[RunSummary]:
        """The runs of ``thread_id`` ascending by ``first_seq``, paged by it as :meth:`read` is.

        The newest page is ``list_runs(t, before_seq=2**63 - 1, limit=n)``; following
        ``page[0].first_seq`` back (or ``page[-1].first_seq`` with ``after_seq``) visits every
        run once. Built-in backends read O(page) rows.
        """
        query = ReadQuery.of(thread_id, after_seq=after_seq, before_seq=before_seq, limit=limit)
        self._check_open()
        return [] if query.limit == 0 else self._list_runs_page(query)

    def get_run(self, run_id: str, *, thread_id: str | None = None) -> RunSummary | None:
        """The run ``run_id`` (of ``thread_id`` if given; else, of the threads holding it, the
        one that started first, ties by thread id), or ``None``. Indexed in built-in backends."""
        validate_id(run_id, "run_id")
        if thread_id is not None:
            validate_id(thread_id, "thread_id")
        self._check_open()
        return self._get_run(run_id, thread_id)

    def read_usage(self, thread_id: str) -> ThreadUsage:
        """The token usage of ``thread_id``: sums over its ``llm.end`` events so far (zeros if
        none). Built-in backends read a per-thread aggregate kept at append (a few rows)."""
        validate_id(thread_id, "thread_id")
        self._check_open()
        return self._read_usage(thread_id)

    def delete_thread(self, thread_id: str) -> int:
        """Delete every event of ``thread_id`` (retention); return how many were deleted.

        A later append to the same ``thread_id`` starts again at seq 1.
        """
        validate_id(thread_id, "thread_id")
        self._check_open()
        return self._delete_thread(thread_id)

    def _spool_identity(self) -> tuple[str, str]:
        """A short name of this store and what tells its events' place apart on this machine
        (never a secret): what names a journal's default spool
        (:func:`journal.spool.default_spool_path`). This default, for a backend that says
        nothing of its place: its class, so that its instances share one spool."""
        kind = type(self)
        return kind.__name__, f"{kind.__module__}.{kind.__qualname__}"

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
        read = partial(self.aread, thread_id, limit=page_size, category=category,
                       event_type=event_type, run_id=run_id)  # fmt: skip
        page = await read(after_seq=after_seq)
        while True:
            for event in page:
                yield event
            if len(page) < page_size:
                return
            page = await read(after_seq=page[-1].seq)

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

    async def alist_runs(
        self,
        thread_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
    ) -> list[RunSummary]:
        """Async :meth:`list_runs`."""
        return await self._in_thread(
            self.list_runs, thread_id, after_seq=after_seq, before_seq=before_seq, limit=limit
        )

    async def aget_run(self, run_id: str, *, thread_id: str | None = None) -> RunSummary | None:
        """Async :meth:`get_run`."""
        return await self._in_thread(self.get_run, run_id, thread_id=thread_id)

    async def aread_usage(self, thread_id: str) -> ThreadUsage:
        """Async :meth:`read_usage`."""
        return await self._in_thread(self.read_usage, thread_id)

    async def adelete_thread(self, thread_id: str) -> int:
        """Async :meth:`delete_thread`."""
        return await self._in_thread(self.delete_thread, thread_id)

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await self._in_thread(self.close)

    # -- helpers -----------------------------------------------------------------------------

    def _query(self, thread_id: str, *cursors_and_filters: Any) -> ReadQuery | None:
        """The validated query of a read; ``None`` when it can match nothing."""
        query = ReadQuery.of(thread_id, *cursors_and_filters)
        self._check_open()
        return None if query.matches_nothing else query

    @staticmethod
    async def _in_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio  # here, not at the top: reading a store from the CLI never needs it

        return await asyncio.to_thread(func, *args, **kwargs)

    def _append_new(self, events: Iterable[EventLike]) -> tuple[list[RunEvent], set[str] | None]:
        """``append``, and the ids of the events this call stored (not stored before), as
        the write's own transaction saw them; ``None`` where the backend does not say
        (:func:`journal.transfer.import_events` counts what is new with it)."""
        prepared = self.prepare(events)
        self._check_open()
        if not prepared:
            return [], set()
        return self._append_telling(prepared)

    # -- backend hooks -----------------------------------------------------------------------

    @abstractmethod
    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        """Write validated events in one transaction (see the contract)."""

    def _append_telling(self, events: Sequence[NewEvent]) -> tuple[list[RunEvent], set[str] | None]:
        """``_append``, and the ids it stored (``None``: this backend does not say)."""
        return self._append(events), None

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

    def _thread_ids_after(self, after: str | None, limit: int) -> list[str] | None:
        """The ids of threads with events, in a fixed order, the first ``limit`` after
        ``after``: a walk that a write cannot reorder (``copy_store`` lists with it); ``None``
        when the backend has no such order (callers then page :meth:`list_threads`)."""
        return None

    # Runs and usage: by default folded from the thread's events, read through the contract
    # (journal._runs_default); every built-in backend keeps them at append time instead.

    def _list_runs_page(self, query: ReadQuery) -> list[RunSummary]:
        """The runs ``query`` selects by ``first_seq`` (``filter`` unset, ``limit`` never 0)."""
        return _runs_default.runs_page(self, query)

    def _get_run(self, run_id: str, thread_id: str | None) -> RunSummary | None:
        """The run ``run_id`` as :meth:`get_run` defines it (ids validated)."""
        return _runs_default.find_run(self, run_id, thread_id)

    def _read_usage(self, thread_id: str) -> ThreadUsage:
        """The usage of ``thread_id`` as :meth:`read_usage` defines it."""
        return _runs_default.usage(self, thread_id)

    @abstractmethod
    def _delete_thread(self, thread_id: str) -> int: ...

    @abstractmethod
    def _close(self) -> None: ...

    async def _aappend(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return await self._in_thread(self._append, events)

    async def _aread(self, query: ReadQuery) -> list[RunEvent]:
        return await self._in_thread(self._read, query)


#: :meth:`RunEventStore.read` as this module defines it, taken when it loads (a patch set on
#: the class later is a read of its own: see :meth:`RunEventStore._marks_query`).
_BASE_READ: Final = RunEventStore.read
