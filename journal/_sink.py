"""Where the callback path hands events to the writer: stamped in order, drops counted.

:class:`EventSink` gives each event its ``created_at`` (microseconds, strictly increasing in
buffer order) and queues it for the background :class:`journal._writer.Writer` in the same
step, so the buffer's order is the order events happened in. It never blocks and does no I/O.
An event the buffer cannot take, or one the writer later drops, is counted against its run
and the journal, and logged: never silent.
"""

from __future__ import annotations

import time
from typing import Any

from journal._logging import get_logger
from journal._queued import Pending
from journal._run_state import RunState, SpinLock
from journal._writer import Writer
from journal.encoding import NOT_PLAIN

__all__ = ["EventSink"]

_log = get_logger(__name__)
_new = tuple.__new__
_time_ns = time.time_ns  # (one global look-up a queued event)


class EventSink:
    """Stamps and queues events; counts what is dropped.

    :meth:`emit` is called under the callback path's one lock (the tracker's), which keeps
    stamps and buffer order together; the drop counters have a lock of their own, since the
    writer thread reports drops too.
    """

    __slots__ = ("_last_us", "_lock", "_runs", "_writer", "dropped_events")

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._lock = SpinLock()
        self._last_us = 0
        # the runs still going, by id: a drop the writer reports later is counted in its run
        self._runs: dict[str, RunState] = {}
        self.dropped_events = 0

    def emit(
        self,
        run: RunState,
        category: str,
        event_type: str,
        content: Any,
        metadata: dict[str, Any],
        metadata_kind: int = NOT_PLAIN,
    ) -> None:
        """Queue one event of ``run``, stamped now (later than every event queued before).

        ``metadata_kind``: the ``plain_kind`` of ``metadata`` when the caller built it of
        values it knows (:func:`journal._kinds.scalars_kind`), else ``NOT_PLAIN``."""
        now = _time_ns() // 1000
        if now <= self._last_us:
            now = self._last_us + 1
        self._last_us = now
        # tuple.__new__: a named tuple's own constructor is a Python-level call
        item = (run.thread_id, run.run_id, category, event_type, content, metadata, now,
                metadata_kind)  # fmt: skip
        pending = _new(Pending, item)
        if self._writer.put(pending):
            return
        with self._lock:
            run.dropped += 1
            self.dropped_events += 1
        _log.warning(
            "journal_event_dropped", run_id=run.run_id, event_type=event_type, reason="buffer_full"
        )

    def run_started(self, run: RunState) -> None:
        """``run`` is going: drops the writer reports for it count in its terminal event."""
        with self._lock:
            self._runs[run.run_id] = run

    def run_ended(self, run: RunState) -> None:
        """``run`` has ended: later drops count for the journal only."""
        with self._lock:
            self._runs.pop(run.run_id, None)

    def writer_dropped(self, run_id: str, count: int) -> None:
        """The writer dropped ``count`` events of ``run_id`` (it logged why)."""
        with self._lock:
            self.dropped_events += count
            run = self._runs.get(run_id)
            if run is not None:
                run.dropped += count

    def settled(self) -> None:
        """Content queued earlier was settled (see :class:`journal._writer.Later`)."""
        self._writer.settled()

    def wake(self) -> None:
        """Ask the writer to write what is queued now (a run ended)."""
        self._writer.wake()
