"""``copy_store``: copy threads from one store to another, keeping seqs, ids and timestamps.

Guarantees:

* **Exact.** Every copied event keeps its ``event_id``, ``seq``, ``run_id``, ``created_at``,
  ``content`` and ``metadata``: a target thread reads back equal to its source thread (give
  the target content caps at least as large as the source's, or big contents are cut again).
* **Idempotent and resumable.** A target thread that already holds a prefix of the source
  thread is checked event by event and only the rest is appended; re-running copies nothing
  twice, and a copy interrupted half-way resumes where it stopped.
* **Never silently wrong.** A target thread that is not a prefix of its source thread (other
  events, or more of them), that receives other writes during the copy, or whose source
  thread is deleted and written again between two pages (its event at the page's boundary
  changed) raises :class:`CopyConflictError` naming the thread and the seq; nothing is
  overwritten. A source thread written again between two pages with the very event at the
  boundary (same id and values: a re-import of an edited export) and other changes before
  it is not seen by that copy; the next copy's prefix check reports it.

Any two backends work (memory, SQLite, PostgreSQL); events travel in pages of ``batch_size``,
each appended as one all-or-nothing batch. Between two SQLite stores a thread new to the
target is copied in SQL instead, whole, in one transaction (its rows as the source stored
them; ``progress`` is then called once for the thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from journal._batch import KnownEvents
from journal._logging import get_logger
from journal.errors import CopyConflictError
from journal.events import RunEvent, validate_id
from journal.memory import MemoryEventStore
from journal.sqlite import SqliteEventStore
from journal.store import RunEventStore

__all__ = ["CopyConflictError", "CopySummary", "ProgressCallback", "copy_store"]

log = get_logger(__name__)

#: Called as ``progress(thread_id, count)`` after each page: ``count`` more source events are
#: now in the target (copied, or found already there). The counts add up to the events copied
#: plus those already present, so a progress bar over all source events ends full.
ProgressCallback = Callable[[str, int], None]

_PAGE_LIST_THREADS = 1000


@dataclass(frozen=True)
class CopySummary:
    """What :func:`copy_store` did: threads visited, events appended, events already there."""

    threads: int
    copied: int
    already_present: int


def copy_store(
    source: RunEventStore,
    target: RunEventStore,
    *,
    thread_ids: Iterable[str] | None = None,
    batch_size: int = 500,
    progress: ProgressCallback | None = None,
) -> CopySummary:
    """Copy ``thread_ids`` (default: every thread of ``source``) into ``target``.

    Each target thread must be empty or an exact prefix of its source thread; it ends equal
    to the source thread as it was when its copy began. Raises :class:`CopyConflictError` if
    a target thread diverges, ``ValueError``/``TypeError`` for bad arguments, and the stores'
    ``StoreError`` when a backend fails (pages already appended stay; re-run to resume).
    """
    if source is target or _same_place(source, target):
        raise ValueError("source and target are the same store; copy between two stores")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if isinstance(thread_ids, str):
        raise TypeError("thread_ids takes a collection of thread ids; wrap one id in a list")
    threads = (
        list(_all_threads(source))
        if thread_ids is None
        else [validate_id(t, "thread_ids") for t in dict.fromkeys(thread_ids)]
    )
    copied = present = 0
    for thread_id in threads:
        thread_copied, thread_present = _copy_thread(
            source, target, thread_id, batch_size, progress
        )
        copied += thread_copied
        present += thread_present
    summary = CopySummary(threads=len(threads), copied=copied, already_present=present)
    log.info("store_copied", threads=summary.threads, copied=copied, already_present=present)
    return summary


def _same_place(source: RunEventStore, target: RunEventStore) -> bool:
    """Whether two store objects keep their events in one SQLite file (under any name). Two
    PostgreSQL stores are not compared: one URL can name two stores (a role's own schema on
    ``search_path``) and two URLs one; a copy onto its own database copies nothing."""
    if isinstance(source, SqliteEventStore) and isinstance(target, SqliteEventStore):
        there = target.path
        return source.path.exists() and there.exists() and source.path.samefile(there)
    return False


def _all_threads(store: RunEventStore) -> Iterator[str]:
    """Every thread of ``store`` with events when the walk began: in id order, which writes
    during the copy cannot change (by recency, a thread written meanwhile would move ahead of
    the pages already read and be missed), else, for a backend without it, by recency."""
    after: str | None = None
    while (ids := store._thread_ids_after(after, _PAGE_LIST_THREADS)) is not None:
        yield from ids
        if len(ids) < _PAGE_LIST_THREADS:
            return
        after = ids[-1]
    offset = 0
    seen: set[str] = set()
    while True:
        page = store.list_threads(limit=_PAGE_LIST_THREADS, offset=offset)
        for summary in page:
            if summary.thread_id not in seen:  # recency order can shift between pages
                seen.add(summary.thread_id)
                yield summary.thread_id
        if len(page) < _PAGE_LIST_THREADS:
            return
        offset += len(page)


def _copy_thread(
    source: RunEventStore,
    target: RunEventStore,
    thread_id: str,
    batch_size: int,
    progress: ProgressCallback | None,
) -> tuple[int, int]:
    """Copy one thread; return (events appended, events already present)."""
    end = source.last_seq(thread_id)  # a fixed end: later source writes wait for a re-run
    if end and isinstance(source, SqliteEventStore) and isinstance(target, SqliteEventStore):
        copied = target._copy_thread_from(source, thread_id, end)  # a whole thread, in SQL
        if copied is not None:
            if progress is not None:
                progress(thread_id, copied)
            log.debug("thread_copied", thread_id=thread_id, count=copied, already_present=0)
            return copied, 0
    present, anchor = _check_prefix(source, target, thread_id, end, batch_size, progress)
    copied = 0
    while present + copied < end:
        after = present + copied
        page = _page(source, thread_id, after, min(batch_size, end - after), anchor)
        stored = target.append(page)
        for want, got in zip(page, stored, strict=True):
            if got is want:  # the target stored the record unchanged at its seq
                continue
            if not (type(got) is RunEvent and got.__dict__ == want.__dict__) and got != want:
                raise CopyConflictError(_mismatch(thread_id, cast(RunEvent, want), got))
        copied += len(page)
        anchor = cast(RunEvent, page[-1])
        if progress is not None:
            progress(thread_id, len(page))
    log.debug("thread_copied", thread_id=thread_id, count=copied, already_present=present)
    return copied, present


def _page(
    source: RunEventStore, thread_id: str, after: int, limit: int, anchor: RunEvent | None
) -> KnownEvents:
    """The source's next page of stored records, as :class:`KnownEvents`: the target does
    not validate them again, nor encode them where the source has their canonical texts.

    The page is read with the source's event at ``after``, in the same read, which must be
    ``anchor`` (the last event the target has): so a source thread deleted and written again
    since the last page raises :class:`CopyConflictError` before the page is appended."""
    start = after - 1 if anchor is not None else after
    wanted = limit + after - start
    if isinstance(source, SqliteEventStore | MemoryEventStore):
        page = source._stored_page(thread_id, start, wanted)
    else:
        page = KnownEvents()
        for record in source.read(thread_id, after_seq=start, limit=wanted):
            page.add(record)
    if anchor is not None:
        if not page or page[0] != anchor:
            raise CopyConflictError(_rewritten(thread_id, after))
        del page[0], page.hints[0]
    if not page:
        raise CopyConflictError(
            f"source thread {thread_id!r} lost events during the copy (seq {after + 1}); "
            "was it deleted?"
        )
    return page


def _rewritten(thread_id: str, seq: int) -> str:
    return (
        f"source thread {thread_id!r} changed during the copy (its event at seq {seq} is no "
        "longer the one copied or counted): was it deleted and written again? Delete the "
        "target thread and copy again"
    )


def _check_prefix(
    source: RunEventStore,
    target: RunEventStore,
    thread_id: str,
    end: int,
    batch_size: int,
    progress: ProgressCallback | None,
) -> tuple[int, RunEvent | None]:
    """Check the target thread is a prefix of the source; return its length and its last
    event."""
    have = target.last_seq(thread_id)
    if have > end:
        raise CopyConflictError(
            f"target thread {thread_id!r} has {have} events, the source only {end}: "
            "it is not a copy of this source"
        )
    cursor = 0
    last: RunEvent | None = None
    while cursor < have:
        before = min(cursor + batch_size, have) + 1
        theirs = source.read(thread_id, after_seq=cursor, before_seq=before)
        ours = target.read(thread_id, after_seq=cursor, before_seq=before)
        if not ours or theirs != ours:
            seq = next((o.seq for t, o in zip(theirs, ours, strict=False) if t != o), cursor + 1)
            raise CopyConflictError(
                f"target thread {thread_id!r} differs from the source at seq {seq}: "
                "it is not a copy of this source"
            )
        cursor += len(ours)
        last = ours[-1]
        if progress is not None:
            progress(thread_id, len(ours))
    return have, last


def _mismatch(thread_id: str, want: RunEvent, got: RunEvent) -> str:
    if (got.thread_id, got.seq) == (want.thread_id, want.seq):
        return (
            f"target stored event {want.event_id!r} of thread {thread_id!r} differently "
            "(are its content caps smaller than the source's?)"
        )
    return (
        f"target thread {thread_id!r} diverged while copying: source event "
        f"{want.event_id!r} (seq {want.seq}) is stored in thread {got.thread_id!r} at seq "
        f"{got.seq}"
    )
