"""Which human input messages a thread already holds in the store (writer thread only).

A caller without a checkpointer resends the whole history every run. Within one process the
journal's per-thread memory skips messages it already journaled; after a restart that memory is
empty, so the writer also asks the store, once per thread, which ``message.human`` ids it holds
and drops repeats. This runs on the writer thread (it does I/O), never on the callback path.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from journal._batch import KnownEvents
from journal._logging import get_logger
from journal.catalog import stored_message_id
from journal.events import NewEvent
from journal.store import RunEventStore

__all__ = ["KnownInputs", "message_id_of", "select"]

_log = get_logger(__name__)
_CAPACITY: Final = 4096


message_id_of = stored_message_id  # the catalog's rule, under the name the writer uses


def select(events: KnownEvents, keep: Callable[[NewEvent], bool]) -> KnownEvents:
    """The events of ``events`` that ``keep`` accepts, with their hints, in order
    (``events`` itself when it keeps them all)."""
    kept = [keep(event) for event in events]
    if all(kept):
        return events
    out = KnownEvents(handed_over=events.handed_over)
    for event, hints, ok in zip(events, events.hints, kept, strict=True):
        if ok:
            out.add(event, *hints)
    return out


class KnownInputs:
    """A bounded per-thread cache of the human message ids already stored."""

    def __init__(self, store: RunEventStore) -> None:
        self._store = store
        self._threads: OrderedDict[str, set[str]] = OrderedDict()

    def _known(self, thread_id: str, ask_store: bool) -> set[str] | None:
        known = self._threads.get(thread_id)
        if known is not None:
            self._threads.move_to_end(thread_id)
            return known
        if not ask_store:
            return None
        try:
            stored = self._store.read(thread_id, event_type="message.human")
        except Exception:  # the store is down: the write will fail and spool anyway
            return None
        known = {mid for e in stored if (mid := message_id_of(e.content)) is not None}
        self._threads[thread_id] = known
        if len(self._threads) > _CAPACITY:
            self._threads.popitem(last=False)
        return known

    def drop_repeats(self, events: KnownEvents, *, ask_store: bool = True) -> KnownEvents:
        """``events`` without the ``message.human`` events whose message is already stored
        (``events`` itself when none is dropped).

        ``ask_store=False`` (the store is known to be down) uses what is cached only: the
        spool's replay drops the repeats it lets through.
        """
        asking = ask_store

        def keep(event: NewEvent) -> bool:
            nonlocal asking
            if event.event_type != "message.human" or event.metadata.get("replacement"):
                return True
            known = self._known(event.thread_id, asking)
            if known is None:
                asking = False  # one failed look-up per batch, not one per thread
            message_id = message_id_of(event.content)
            if known is not None and message_id is not None:
                if message_id in known:
                    _log.info("journal_input_already_stored", run_id=event.run_id)
                    return False
                known.add(message_id)
            return True

        return select(events, keep)
