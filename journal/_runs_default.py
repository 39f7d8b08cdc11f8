"""The base class's runs and usage, for a backend that keeps none: folded from its events.

What ``RunEventStore.list_runs`` / ``get_run`` / ``read_usage`` answer when a backend does not
override their hooks: every event of the thread is read through the public contract and folded
by :func:`journal._runs.project`, so a third-party backend gives the same answers as the
built-in ones, at O(events of the thread) per call (``get_run`` without a thread: O(threads)
reads). The built-in backends keep the projection at append time instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from journal._query import ReadQuery
from journal._runs import Projection, by_first_seq, project, thread_usage
from journal.events import RunSummary, ThreadUsage

if TYPE_CHECKING:
    from journal.store import RunEventStore

__all__ = ["find_run", "runs_page", "usage"]

_THREAD_PAGE = 1000


def _fold(store: RunEventStore, thread_id: str, run_id: str | None = None) -> Projection:
    return project((e.seq, e) for e in store.iter_events(thread_id, run_id=run_id))


def runs_page(store: RunEventStore, query: ReadQuery) -> list[RunSummary]:
    """The runs of ``query.thread_id`` its cursors select by ``first_seq``."""
    runs = list(_fold(store, query.thread_id).runs.values())  # in first_seq order
    return [run.summary() for run in query.window(runs, by_first_seq)]


def find_run(store: RunEventStore, run_id: str, thread_id: str | None) -> RunSummary | None:
    """The run ``run_id`` of ``thread_id``, or the one that started first in any thread."""
    if thread_id is not None:
        threads = [thread_id]
    else:
        threads, offset = [], 0
        while page := store.list_threads(limit=_THREAD_PAGE, offset=offset):
            threads += [t.thread_id for t in page]
            offset += len(page)
    found = [run for thread in threads for run in _fold(store, thread, run_id).runs.values()]
    if not found:
        return None
    return min(found, key=lambda run: (run.started_at, run.thread_id)).summary()


def usage(store: RunEventStore, thread_id: str) -> ThreadUsage:
    """The token usage of ``thread_id`` (zeros for a thread with no event)."""
    projection = _fold(store, thread_id)
    buckets = projection.usage().get(thread_id, {})
    return thread_usage(
        thread_id, ((scope, key, c) for (scope, key), c in buckets.items()), len(projection.runs)
    )
