"""How the journal's writer thread gets a batch into the store, or else into the spool.

:class:`Delivery` is the store side of :class:`journal._writer.Writer` (writer thread only,
except :meth:`Delivery.to_spool` at close): it appends a batch with retries under the same
``event_id`` values, spools it after the retry budget, keeps a spooled thread's later events
behind its spooled ones, replays the spool once the store answers again, and drops input
messages the store already holds (:mod:`journal._known_inputs`). Guarantees: see
:mod:`journal._writer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from journal._batch import KnownEvents
from journal._known_inputs import KnownInputs, select
from journal._logging import get_logger
from journal.events import NewEvent
from journal.spool import Spool, recover_spool, spooled_threads
from journal.store import RunEventStore

__all__ = ["Delivery"]

_log = get_logger(__name__)


class Delivery:
    """Appends batches to the store, with retry, spooling and spool replay."""

    def __init__(
        self,
        store: RunEventStore,
        spool: Spool,
        *,
        retry_delays: Sequence[float],
        down_cooldown: float,
        dropped: Callable[[str, int], None],
        claim_spool: Callable[[], AbstractContextManager[bool]] = lambda: nullcontext(True),
    ) -> None:
        self.store = store
        self.spool = spool
        self.retry_delays = tuple(retry_delays)
        self.down_cooldown = down_cooldown
        self.spooled_count = 0
        self.spool_failures = 0  # appends to the spool that failed (their events dropped)
        self._dropped = dropped
        self._spooled_threads: set[str] = set()
        self._known_inputs = KnownInputs(store)
        self._down_until = 0.0
        self._stopped = False
        #: entered right before a written batch goes to the spool, for as long as it goes:
        #: whether this side spools it (``False``: close took it, and spools it)
        self._claim_spool = claim_spool

    def stop(self) -> None:
        """Stop retrying and spooling from the writer thread (close spools what is left)."""
        self._stopped = True

    def adopt_spool(self) -> None:
        """A spool left by an earlier process: its threads wait for it to be replayed."""
        if not self.spool.path.exists():  # the usual case: no lock file is made for nothing
            return
        try:
            threads = spooled_threads(self.spool.path)
        except OSError as e:
            _log.error("journal_spool_unreadable", path=str(self.spool.path), error=str(e))
            return
        if threads:
            _log.warning("journal_spool_found", path=str(self.spool.path), count=len(threads))
            self._spooled_threads |= threads
            self.drain_spool()

    def write(self, events: KnownEvents) -> None:
        """Store ``events`` (retrying), else spool them; a spooled thread's stay spooled."""
        if self._spooled_threads:
            self.drain_spool()  # the spool first: its events happened before these
        events = self._known_inputs.drop_repeats(events, ask_store=not self._store_down())
        spooled = self._spooled_threads
        to_spool: list[NewEvent]
        if self._store_down():
            to_spool, to_store = list(events), KnownEvents()
        elif spooled:
            to_spool = [e for e in events if e.thread_id in spooled]
            to_store = select(events, lambda e: None if e.thread_id in spooled else e)
        else:
            to_spool, to_store = [], events
        if to_store and not self._append_with_retry(to_store):
            self._down_until = time.monotonic() + self.down_cooldown
            to_spool = [*to_spool, *to_store]
            to_spool.sort(key=lambda e: e.created_at)  # keep buffer order across the split
        if to_spool and not self._stopped:
            with self._claim_spool() as ours:  # else close took the batch, and spools it
                if ours:
                    self.to_spool(to_spool)

    def to_spool(self, events: Sequence[NewEvent]) -> bool:
        """Append ``events`` to the spool; ``False`` (they are counted as dropped) if it fails."""
        try:
            self.spool.append(events)
        except OSError as e:
            _log.error(
                "journal_spool_failed",
                path=str(self.spool.path),
                count=len(events),
                error_type=type(e).__name__,
            )
            for event in events:
                self._dropped(event.run_id, 1)
            self.spool_failures += 1
            return False
        self._spooled_threads.update(e.thread_id for e in events)
        self.spooled_count += len(events)
        _log.warning("journal_events_spooled", path=str(self.spool.path), count=len(events))
        return True

    def drain_spool(self) -> None:
        """Replay the spool if threads wait for it and the store may be back (never raises)."""
        if not self._spooled_threads or self._store_down() or self._stopped:
            return
        try:
            count = self.replay()
        except Exception as e:
            self._down_until = time.monotonic() + self.down_cooldown
            _log.info("journal_spool_drain_failed", error_type=type(e).__name__)
            return
        _log.info("journal_spool_drained", path=str(self.spool.path), count=count)

    def replay(self) -> int:
        """Replay the spool into the store (raises if the store fails); spooled threads write
        to the store directly again. Returns how many events it held."""
        count = recover_spool(self.spool.path, self.store).events
        self._spooled_threads.clear()
        self._down_until = 0.0
        return count

    def idle(self) -> None:
        """Nothing is queued: the store's upkeep left for then (never raises)."""
        if self._stopped or self._store_down():
            return
        try:
            self.store._writer_idle()
        except Exception as e:
            _log.info("journal_store_upkeep_failed", error_type=type(e).__name__)

    def spool_waits(self) -> bool:
        """Whether spooled events wait for the store to come back (to be replayed)."""
        return bool(self._spooled_threads)

    def may_read(self) -> bool:
        """Whether the writer may read the store now: not stopped (closing), not down."""
        return not self._stopped and not self._store_down()

    def read_failed(self) -> None:
        """A read of the store failed: take it as down for ``down_cooldown``."""
        self._down_until = time.monotonic() + self.down_cooldown

    def _store_down(self) -> bool:
        return time.monotonic() < self._down_until

    def _append_with_retry(self, events: KnownEvents) -> bool:
        for attempt, delay in enumerate((*self.retry_delays, None)):
            try:
                self.store._append_unreturned(events)  # the records are not used
                return True
            except (ValueError, TypeError):
                return self._append_one_by_one(events)
            except Exception as e:
                _log.warning(
                    "journal_append_failed",
                    attempt=attempt + 1,
                    count=len(events),
                    error_type=type(e).__name__,
                )
                if delay is None or self._stopped:
                    return False
                time.sleep(delay)
        return False  # pragma: no cover - the loop always returns

    def _append_one_by_one(self, events: KnownEvents) -> bool:
        for event, hints in zip(events, events.hints, strict=True):
            one = KnownEvents(handed_over=events.handed_over)
            one.add(event, *hints)
            try:
                self.store._append_unreturned(one)
            except (ValueError, TypeError):
                _log.warning(
                    "journal_event_rejected",
                    run_id=event.run_id,
                    event_type=event.event_type,
                    count=1,
                )
                self._dropped(event.run_id, 1)
            except Exception:
                return False  # pragma: no cover - the batch as a whole is retried later
        return True
