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

from journal.encoding import NOT_PLAIN, dumps_plain, encode_plain, plain_kind
from journal.errors import StoreClosedError
from journal.events import (
    EventFilter,
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    prepare_mapping,
    valid_unicode,
    validate_id,
)
from journal.truncation import DEFAULT_CONTENT_CAPS, DEFAULT_METADATA_CAP, fit_content, fit_metadata

__all__ = ["EventLike", "FilterValue", "PreparedBatch", "RunEventStore", "encoded_texts"]

EventLike = NewEvent | Mapping[str, Any]
FilterValue = str | Iterable[str] | None

_DEFAULT_PAGE = 1000
#: Seqs are 64-bit (PostgreSQL bigint, SQLite INTEGER): larger cursors read like this one.
_MAX_CURSOR = 2**63 - 1
P = ParamSpec("P")
T = TypeVar("T")


class PreparedBatch(list[NewEvent]):
    """The events :meth:`RunEventStore.prepare` validated, with ``texts``: the canonical JSON
    of each one's content and metadata, in the same order (encoded once, for every use)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[tuple[str, str]] = []


def encoded_texts(events: Sequence[NewEvent]) -> list[tuple[str, str]]:
    """The canonical JSON of each event's content and metadata: a prepared batch's own texts,
    else encoded now (a backend called with events that did not go through ``prepare``)."""
    texts = getattr(events, "texts", None)
    if isinstance(texts, list) and len(texts) == len(events):
        return texts
    return [(dumps_plain(e.content), dumps_plain(e.metadata)) for e in events]


def _text(value: Any, kind: int) -> str:
    if kind == NOT_PLAIN:
        kind = plain_kind(value)
        if kind == NOT_PLAIN:  # assigned after validation: the rules first
            return dumps_plain(value)
    return encode_plain(value, kind)


def _filter_set(name: str, value: FilterValue) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})
    try:
        items = frozenset(value)
    except TypeError:
        raise TypeError(f"{name} must be a string, a collection of strings, or None") from None
    if not all(isinstance(v, str) for v in items):
        raise TypeError(f"{name} must contain only strings")
    if not all(valid_unicode(v) for v in items):
        raise ValueError(f"{name} must contain valid Unicode (a value has a lone surrogate)")
    return items


def _check_cursor(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return min(value, _MAX_CURSOR)


class RunEventStore(ABC):
    """An append-only store of run events, numbered by a gap-free per-thread ``seq``.

    Subclasses implement the underscore hooks; the public methods validate input, apply the
    content caps and the metadata cap (``metadata_cap`` bytes; an ``llm.start`` ``context``
    record is never cut, see :mod:`journal.truncation`) and enforce the contract in the module
    docstring.
    """

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
        if isinstance(events, NewEvent | Mapping):
            raise TypeError("append takes a sequence of events; wrap a single event in a list")
        prepared = PreparedBatch()
        for index, raw in enumerate(events):
            if isinstance(raw, NewEvent):
                if type(raw) is not NewEvent:  # a RunEvent (e.g. copied): drop its seq
                    event = NewEvent(**raw.model_dump(exclude={"seq"}))
                else:  # read-only from here: backends copy what they keep, caps copy below
                    event = raw
                content_kind, metadata_kind = plain_kind(event.content), NOT_PLAIN
            elif isinstance(raw, Mapping):
                try:
                    event, content_kind, metadata_kind = prepare_mapping(raw)
                except ValueError as e:
                    raise ValueError(f"event {index} of the batch is invalid: {e}") from e
            else:
                raise TypeError(
                    f"event {index} of the batch is a {type(raw).__name__}; "
                    "expected a NewEvent or a mapping"
                )
            content = _text(event.content, content_kind)
            cap = self.content_caps[event.category]
            original = None
            if len(content) > cap // 4 and len(content.encode("utf-8")) > cap:
                shrunk, original = fit_content(event.content, cap)
                content = _text(shrunk, NOT_PLAIN)
            metadata_text = _text(event.metadata, metadata_kind)
            metadata = event.metadata
            limit = self.metadata_cap
            if len(metadata_text) > limit // 4 and len(metadata_text.encode("utf-8")) > limit:
                metadata = fit_metadata(event.event_type, metadata, limit)
            if original is not None:
                metadata = {**metadata, "truncated": True, "original_bytes": original}
            if original is not None or metadata is not event.metadata:
                update: dict[str, Any] = {"metadata": metadata}
                if original is not None:
                    update["content"] = shrunk
                event = event.model_copy(update=update)
                metadata_text = _text(metadata, NOT_PLAIN)
            prepared.append(event)
            prepared.texts.append((content, metadata_text))
        return prepared

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
        args = self._read_args(
            thread_id, after_seq, before_seq, limit, category, event_type, run_id
        )
        self._check_open()
        if args[4].matches_nothing or args[3] == 0:
            return []
        return self._read(*args)

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
        validate_id(thread_id, "thread_id")
        flt = self._make_filter(category, event_type, run_id)
        self._check_open()
        if flt.matches_nothing:
            return 0
        return self._count(thread_id, flt)

    def list_threads(self, *, limit: int | None = None, offset: int = 0) -> list[ThreadSummary]:
        """Threads with at least one event, most recently active first."""
        offset = _check_cursor("offset", offset) or 0
        limit = _check_cursor("limit", limit)
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
        args = self._read_args(
            thread_id, after_seq, before_seq, limit, category, event_type, run_id
        )
        self._check_open()
        if args[4].matches_nothing or args[3] == 0:
            return []
        return await self._aread(*args)

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

    @staticmethod
    def _make_filter(
        category: FilterValue, event_type: FilterValue, run_id: FilterValue
    ) -> EventFilter:
        return EventFilter(
            category=_filter_set("category", category),
            event_type=_filter_set("event_type", event_type),
            run_id=_filter_set("run_id", run_id),
        )

    def _read_args(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        category: FilterValue,
        event_type: FilterValue,
        run_id: FilterValue,
    ) -> tuple[str, int | None, int | None, int | None, EventFilter]:
        validate_id(thread_id, "thread_id")
        return (
            thread_id,
            _check_cursor("after_seq", after_seq),
            _check_cursor("before_seq", before_seq),
            _check_cursor("limit", limit),
            self._make_filter(category, event_type, run_id),
        )

    @staticmethod
    async def _in_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio  # here, not at the top: reading a store from the CLI never needs it

        return await asyncio.to_thread(func, *args, **kwargs)

    # -- backend hooks -----------------------------------------------------------------------

    @abstractmethod
    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        """Write validated events in one transaction (see the contract)."""

    @abstractmethod
    def _read(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        """Read with validated cursors; ``flt`` never matches nothing; ``limit`` is never 0."""

    @abstractmethod
    def _last_seq(self, thread_id: str) -> int: ...

    @abstractmethod
    def _count(self, thread_id: str, flt: EventFilter) -> int: ...

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

    async def _aread(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        return await self._in_thread(self._read, thread_id, after_seq, before_seq, limit, flt)
