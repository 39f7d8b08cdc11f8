"""The ordered, bounded buffer of a ``RunJournal`` and the background thread that writes it.

Guarantees:

* Events are written in the order they were put, per thread (a thread's events never overtake
  each other, whether they go to the store or to the spool).
* The writer flushes when ``max_batch`` events wait, at least every ``flush_interval`` seconds
  while events are queued, and on :meth:`wake` / :meth:`flush`. While nothing is queued and
  no spooled event waits for the store, its thread sleeps until the next :meth:`put` (no
  wake-up every interval in an idle process).
* A failed batch is retried with backoff under the same ``event_id`` values (the store skips
  ids it already holds, so an unknown outcome never duplicates). After the retry budget the
  batch goes to the spool, and so does every later event of the same thread while the spool
  holds events of it, so that seqs keep the order events happened in.
* When the store answers again (tried after ``down_cooldown``, also while idle, and at close),
  the writer replays the spool itself, in order, and the spooled threads write to the store
  directly again. A writer that starts with a spool left by an earlier process treats the
  threads it names the same way: their new events never take seqs before the older spooled
  ones.
* :meth:`close` (and the interpreter's exit) waits at most ``close_timeout`` seconds for the
  store (a build never reads it: what a batch needs of the store is read before, without the
  lock close takes, and not at all while the store is down or the writer closing); whatever
  is not stored by then, the batch in flight included, is written to the spool synchronously
  before it returns. A batch both stored late and spooled is stored once (the
  replay skips stored ``event_id`` values).
* A run's input message already stored in its thread (a history resent after a restart),
  whatever its type, is not written again (:mod:`journal._known_inputs`).
* An event whose content is :class:`Later` is settled by the callback path shortly after it
  was queued (whether a model's output is kept on its ``llm.end`` is known once the node that
  made the call ends). The writer writes what comes before it and waits there, at most
  ``SETTLE_LIMIT`` seconds (then it builds the content unsettled), so that no event overtakes
  it.
* Upkeep that makes a store's write slower (SQLite's WAL checkpoint) waits until nothing is
  queued (:meth:`journal.store.RunEventStore._writer_idle`), and none begins once
  :meth:`close` has: a :meth:`flush` or a :meth:`close` does not wait for it.
* The buffer is bounded: :meth:`put` returns ``False`` instead of growing past ``max_buffer``.
  Anything dropped is reported to ``on_drop`` and logged, never silent.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from journal._batch import KnownEvents
from journal._builder import BatchBuilder
from journal._delivery import Delivery
from journal._logging import get_logger
from journal._queued import Later, Pending
from journal.events import NewEvent
from journal.spool import Spool
from journal.store import RunEventStore

__all__ = ["SETTLE_LIMIT", "Writer"]

_log = get_logger(__name__)


#: Seconds the writer waits for a :class:`Later` content to be settled before building it.
SETTLE_LIMIT: Final = 1.0


class _Control:
    """A request executed by the writer thread in buffer order (flush marker, spool replay)."""

    def __init__(self, action: Callable[[], Any] | None = None) -> None:
        self.action = action
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


DropHandler = Callable[[str, int], None]
#: Seconds :meth:`Writer.close` (and the exit hook) waits for the store before spooling the rest.
DEFAULT_CLOSE_TIMEOUT: Final = 5.0


#: The writers whose thread runs, in the order they started. The interpreter's exit closes
#: them, the last started first, by one hook registered again at each start (so that it runs
#: before the hooks registered before the latest writer started, a store's ``close`` say, as
#: each writer's own hook did); a writer leaves at close (a hook per writer stayed registered
#: after it closed: a process making a journal per request kept one for every journal it
#: ever made).
_RUNNING: Final[weakref.WeakValueDictionary[int, Writer]] = weakref.WeakValueDictionary()
_EXIT_HOOK = threading.Lock()
#: How many exit hooks the interpreter held just after ``_close_at_exit`` was registered
#: (``None``: not registered yet): another count means another hook may come after it.
_hooks_after_ours: int | None = None


def _close_at_exit() -> None:
    with _EXIT_HOOK:
        writers = list(_RUNNING.values())
    for writer in reversed(writers):
        try:
            lost = not writer.close()
        except Exception as e:  # the next writers are closed all the same
            _log.error("journal_exit_close_failed", error_type=type(e).__name__)
            continue
        if lost:
            _log.error("journal_exit_events_lost", path=str(writer.spool.path))


def _exit_hooks() -> int | None:
    """How many exit hooks the interpreter holds (CPython tells; ``None`` elsewhere)."""
    count = getattr(atexit, "_ncallbacks", None)
    return count() if callable(count) else None


def _follow_at_exit(writer: Writer) -> None:
    """Have the interpreter's exit close ``writer`` (a running writer, not closed yet)."""
    global _hooks_after_ours
    with _EXIT_HOOK:
        _RUNNING[id(writer)] = writer
        # the last registered when a writer starts, not only the first time: a hook registered
        # since (a store's close) would run first, and the writers open then spool their events
        # (registered again only then: each unregister leaves the interpreter a slot)
        if _hooks_after_ours is None or _hooks_after_ours != _exit_hooks():
            atexit.unregister(_close_at_exit)
            atexit.register(_close_at_exit)
            _hooks_after_ours = _exit_hooks()  # (None where not told: registered each time)


def _unfollow_at_exit(writer: Writer) -> None:
    """``writer`` closed: the interpreter's exit has nothing more to do for it."""
    with _EXIT_HOOK:
        if _RUNNING.get(id(writer)) is writer:
            del _RUNNING[id(writer)]


class Writer:
    """A background thread that drains an ordered buffer into a store, spooling on failure."""

    def __init__(
        self,
        store: RunEventStore,
        spool: Spool,
        *,
        max_batch: int = 500,
        max_buffer: int = 100_000,
        flush_interval: float = 0.1,
        retry_delays: Sequence[float] = (0.05, 0.1, 0.2, 0.5, 1.0),
        down_cooldown: float = 1.0,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        on_drop: DropHandler | None = None,
        before_close: Callable[[], None] | None = None,
        prefetch: Callable[[list[Pending]], None] | None = None,
        built: Callable[[NewEvent], None] | None = None,
    ) -> None:
        self.store = store
        self.spool = spool
        self.max_batch = max_batch
        self.max_buffer = max_buffer
        self.flush_interval = flush_interval
        self.close_timeout = close_timeout
        self.on_drop = on_drop
        self.before_close = before_close
        self.prefetch = prefetch  # reads for a batch's build, ahead of it, outside _state
        self._delivery = Delivery(
            store,
            spool,
            retry_delays=retry_delays,
            down_cooldown=down_cooldown,
            dropped=self._dropped,
            claim_spool=self._spooling_in_flight,
        )
        self._items: deque[Pending | _Control] = deque()
        self._wake = threading.Event()
        # set by anything that gives an idle writer work (a put, a wake, a control, close);
        # the writer sleeps on it while nothing is queued and nothing spooled waits for the
        # store, instead of waking every flush_interval for nothing
        self._busy = threading.Event()
        self._asleep = False  # the writer is (about to be) asleep on _busy: a put sets it
        self._lock = threading.Lock()
        # held while taking a batch and while building it (no I/O), and to abandon the
        # writer at close; between the two, the batch taken is in _taken
        self._state = threading.Lock()
        # held while the writer spools its batch in flight (never with _state held on the way)
        self._spooling = threading.Lock()
        self._abandoned = False
        self._taken: list[Pending] = []
        self._in_flight: list[NewEvent] = []
        # writer thread (and _abandon, under _state); ``built`` sees each event it makes
        self._builder = BatchBuilder(self._dropped, built)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._closing = False  # close has begun: no upkeep (it would wait for it)
        self._waiting_since: float | None = None  # the writer waits for a Later to settle

    def may_read(self) -> bool:
        """Whether the store may be read for a build now (not closing, not down)."""
        return self._delivery.may_read()

    def read_failed(self) -> None:
        """A read for a build failed: the store is taken as down for a while."""
        self._delivery.read_failed()

    @property
    def spooled_count(self) -> int:
        """How many events went to the spool because the store could not take them."""
        return self._delivery.spooled_count

    # -- producer side (callback path: no I/O, O(1)) ---------------------------------------

    def put(self, item: Pending) -> bool:
        """Queue ``item``; ``False`` (nothing queued) when the buffer is full or closed."""
        if self._closed or len(self._items) >= self.max_buffer:
            return False
        self._items.append(item)
        if self._thread is None:
            self._start()
        if self._asleep:  # the first event after an idle spell: it is written by the interval
            self._busy.set()
        if len(self._items) >= self.max_batch:
            self.wake()
        return True

    def wake(self) -> None:
        """Ask the writer to write what is queued now, without waiting for it."""
        if not self._wake.is_set():
            self._wake.set()
            self._busy.set()

    def settled(self) -> None:
        """A :class:`Later` content was settled: wake the writer if it waits for one."""
        if self._waiting_since is not None:
            self.wake()

    def flush(self, timeout: float | None = None) -> bool:
        """Block until everything queued before the call is written or spooled.

        Returns ``False`` if ``timeout`` expired first.
        """
        return self._run_control(_Control(), timeout)

    def replay_spool(self, timeout: float | None = None) -> int:
        """Replay the spool into the store in buffer order; return how many events it held.

        Runs on the writer thread after everything queued before the call, so replayed events
        keep their place; once the spool is replayed, spooled threads write to the store again.
        """
        control = _Control(self._delivery.replay)
        if not self._run_control(control, timeout):
            raise TimeoutError("the spool replay did not finish in time")
        if control.error is not None:
            raise control.error
        return int(control.result)

    def close(self, timeout: float | None = None) -> bool:
        """Store what is queued, else spool it; stop the writer thread. Idempotent.

        Waits at most ``timeout`` seconds (``None``: ``close_timeout``) for the store, also to
        replay the spool when the store is back; then writes whatever is left, the batch in
        flight included, to the spool before returning (after the spool write of a batch the
        writer thread had begun, which it waits for: a batch goes to the spool once, and
        before what was queued after it). Returns ``False`` only if some event could be
        neither stored nor spooled (it is counted as dropped). Later puts are refused.
        """
        if self._closed:
            return True
        budget = self.close_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        failures = self._delivery.spool_failures
        self._closing = True
        if self.before_close is not None:  # last events of the owner (also at exit)
            try:
                self.before_close()
            except Exception as e:
                _log.error("journal_close_hook_failed", error_type=type(e).__name__)
        done = self._run_control(_Control(self._delivery.drain_spool), budget)
        self._closed = True
        self._wake.set()
        self._busy.set()
        ok = True if done else self._abandon()  # (after the writer's spooling, if any)
        thread = self._thread
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        _unfollow_at_exit(self)
        return ok and self._delivery.spool_failures == failures

    def _abandon(self) -> bool:
        """Spool, from the calling thread, the batch in flight and everything still queued."""
        with self._state:
            self._abandoned = True
            self._delivery.stop()
            events, self._in_flight = self._in_flight, []
            taken, self._taken = self._taken, []
            pending = [*taken, *(item for item in self._items if isinstance(item, Pending))]
            controls = [item for item in self._items if isinstance(item, _Control)]
            self._items.clear()
            events = [*events, *self._build(pending)]
        for control in controls:
            control.done.set()
        with self._spooling:  # after the batch the writer is spooling, if it is
            if not events:
                return True
            _log.warning("journal_close_spooling", path=str(self.spool.path), count=len(events))
            return self._delivery.to_spool(events)

    @contextmanager
    def _spooling_in_flight(self) -> Iterator[bool]:
        """Whether the writer spools its batch in flight itself (close did not take it),
        held while it does: close, which spools what is left after it, waits for it, so a
        batch is spooled once and a thread's events in their order (writer thread)."""
        with self._spooling:
            with self._state:
                ours = not self._abandoned
                if ours:
                    self._in_flight = []
            yield ours

    def _run_control(self, control: _Control, timeout: float | None) -> bool:
        if self._closed:  # no writer thread to hand it to: once it has stopped, run it here
            thread = self._thread
            if thread is not None:
                thread.join(timeout)
                if thread.is_alive():
                    return False
            self._execute(control)
            return True
        self._items.append(control)
        if self._thread is None:
            self._start()
        self._wake.set()
        self._busy.set()
        return control.done.wait(timeout)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._loop, name="runjournal-writer", daemon=True)
                thread.start()
                self._thread = thread
                # the thread is a daemon: write what is queued when the interpreter exits
                _follow_at_exit(self)

    # -- writer thread ---------------------------------------------------------------------

    def _loop(self) -> None:
        self._delivery.adopt_spool()
        while True:
            self._sleep_while_idle()
            self._wake.wait(self.flush_interval)  # a batch gathers, unless woken
            self._wake.clear()
            self._drain()
            if self._abandoned or (self._closed and not self._items):
                return
            if not self._items:
                self._delivery.drain_spool()  # idle: the store may be back
                if not self._closing:  # (close would wait for it: the thread's join)
                    self._delivery.idle()  # the store's upkeep, which no caller waits on now

    def _sleep_while_idle(self) -> None:
        """Sleep until there is work: nothing queued, nothing spooled that waits for the
        store to come back (those are retried every interval), not closing."""
        self._busy.clear()
        self._asleep = True  # before the look at the queue: a put after it sees the flag
        if not self._items and not self._closed and not self._delivery.spool_waits():
            self._busy.wait()
        self._asleep = False

    def _drain(self) -> None:
        while not self._abandoned:
            batch: list[Pending] = []
            control: _Control | None = None
            with self._state:
                if self._abandoned:
                    return
                while self._items and len(batch) < self.max_batch:
                    item = self._items.popleft()
                    if isinstance(item, _Control):
                        control = item
                        break
                    if isinstance(item.content, Later) and self._wait_for(item.content):
                        self._items.appendleft(item)  # it and what follows wait for it
                        break
                    batch.append(item)
                self._taken = batch
            if batch and self.prefetch is not None:  # may wait on the store: not under _state
                self.prefetch(batch)
            with self._state:
                if self._abandoned:  # close took the batch (and spooled it)
                    if control is not None:
                        control.done.set()
                    return
                events = self._safe_build(batch)
                self._taken = []
                self._in_flight = events
            if events:
                self._safe_write(events)
            with self._state:
                self._in_flight = []
            if control is not None:
                self._execute(control)
            elif not batch or (len(batch) < self.max_batch and not self._closed):
                # caught up: wait for a full batch, the flush interval or a wake, rather than
                # chase the run with a transaction per handful of events
                return

    def _wait_for(self, later: Later) -> bool:
        """Whether to stop at an unsettled ``later`` (until it settles or the limit passes)."""
        if later.settled:
            self._waiting_since = None
            return False
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        if now - self._waiting_since < SETTLE_LIMIT and not self._closed:
            return True
        self._waiting_since = None
        return False

    def _safe_build(self, batch: list[Pending]) -> KnownEvents:
        try:
            return self._build(batch)
        except Exception as e:  # pragma: no cover - _build guards each item
            _log.error("journal_writer_failed", count=len(batch), error_type=type(e).__name__)
            for item in batch:
                self._dropped(item.run_id, 1)
            return KnownEvents()

    def _safe_write(self, events: KnownEvents) -> None:
        """Write ``events``; an unexpected failure drops them (counted, logged)."""
        try:
            self._delivery.write(events)
        except Exception as e:
            _log.error("journal_writer_failed", count=len(events), error_type=type(e).__name__)
            for event in events:
                self._dropped(event.run_id, 1)

    def _execute(self, control: _Control) -> None:
        try:
            if control.action is not None:
                control.result = control.action()
        except BaseException as e:  # handed back to the caller waiting on it
            control.error = e
        finally:
            control.done.set()

    def _build(self, batch: list[Pending]) -> KnownEvents:
        """The store's events of ``batch`` (see :meth:`journal._builder.BatchBuilder.build`)."""
        return self._builder.build(batch)

    def _dropped(self, run_id: str, count: int) -> None:
        if self.on_drop is not None:
            self.on_drop(run_id, count)
