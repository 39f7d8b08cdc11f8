"""Which human input messages a thread already holds in the store (writer thread only).

A caller without a checkpointer resends the whole history every run. Within one process the
journal's per-thread memory skips messages it already journaled; after a restart that memory is
empty, so the writer also asks the store, once per thread, which ``message.human`` ids it holds
and drops repeats. This runs on the writer thread (it does I/O), never on the callback path.

A repeat is the same message id with the digest of its latest stored version; the same id
with another content (an earlier one too: an edit back) is the user's edit of the message (a
client that keeps its ids): journaled as a ``replacement``, as the journal does when it
remembers the message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from journal._batch import KnownEvents
from journal._logging import get_logger
from journal.catalog import stored_message_id
from journal.digests import stored_digest
from journal.encoding import NOT_PLAIN
from journal.events import NewEvent, RunEvent
from journal.store import RunEventStore

__all__ = [
    "INPUT_TYPES",
    "KnownInputs",
    "Versions",
    "as_edit",
    "message_id_of",
    "select",
    "versions",
]

#: A thread's stored inputs: message id -> the digest of its latest stored version.
Versions = dict[str, str]

_log = get_logger(__name__)
_CAPACITY: Final = 4096
#: The events of a run's input messages (a resent history repeats them): human and system.
INPUT_TYPES: Final = ("message.human", "message.system")


message_id_of = stored_message_id  # the catalog's rule, under the name the writer uses


def versions(stored: list[RunEvent]) -> Versions:
    """The latest version of each input message of ``stored`` (a thread's ``message.human``
    events, in seq order)."""
    out: Versions = {}
    for event in stored:
        mid = message_id_of(event.content)
        if mid is not None:
            out[mid] = stored_digest(event.content, event.metadata)
    return out


def as_edit(event: NewEvent, known: Versions) -> NewEvent | None:
    """``event`` (a ``message.human``) as it is to be stored given the thread's ``known``
    versions (updated): itself for a new message, ``None`` for a repeat, a ``replacement``
    for another version of a known one."""
    mid = message_id_of(event.content)
    if mid is None:
        return event
    digest = stored_digest(event.content, event.metadata)
    latest = known.get(mid)
    known[mid] = digest
    if latest is None:
        return event
    if digest == latest:
        return None
    return event.model_copy(update={"metadata": {**event.metadata, "replacement": True}})


def select(events: KnownEvents, keep: Callable[[NewEvent], NewEvent | None]) -> KnownEvents:
    """The events of ``events`` that ``keep`` returns (``None``: left out; another event:
    in its place), with their hints, in order (``events`` itself when it keeps them all)."""
    kept = [keep(event) for event in events]
    if all(new is old for new, old in zip(kept, events, strict=True)):
        return events
    out = KnownEvents(handed_over=events.handed_over)
    for event, hints, new in zip(events, events.hints, kept, strict=True):
        if new is event:
            out.add(event, *hints)
        elif new is not None:  # its metadata changed: encoded by the rules
            out.add(new, hints[0], NOT_PLAIN)
    return out


class KnownInputs:
    """A bounded per-thread cache of the human message ids already stored."""

    def __init__(self, store: RunEventStore) -> None:
        self._store = store
        self._threads: OrderedDict[str, Versions] = OrderedDict()

    def _known(self, thread_id: str, ask_store: bool) -> Versions | None:
        known = self._threads.get(thread_id)
        if known is not None:
            self._threads.move_to_end(thread_id)
            return known
        if not ask_store:
            return None
        try:
            stored = self._store.read(thread_id, event_type=list(INPUT_TYPES))
        except Exception:  # the store is down: the write will fail and spool anyway
            return None
        known = self._threads[thread_id] = versions(stored)
        if len(self._threads) > _CAPACITY:
            self._threads.popitem(last=False)
        return known

    def drop_repeats(self, events: KnownEvents, *, ask_store: bool = True) -> KnownEvents:
        """``events`` without the input events (:data:`INPUT_TYPES`) whose message is already stored
        (``events`` itself when none is dropped).

        ``ask_store=False`` (the store is known to be down) uses what is cached only: the
        spool's replay drops the repeats it lets through.
        """
        asking = ask_store

        def keep(event: NewEvent) -> NewEvent | None:
            nonlocal asking
            if event.event_type not in INPUT_TYPES or event.metadata.get("replacement"):
                return event
            known = self._known(event.thread_id, asking)
            if known is None:
                asking = False  # one failed look-up per batch, not one per thread
                return event
            kept = as_edit(event, known)
            if kept is None:
                _log.info("journal_input_already_stored", run_id=event.run_id)
            return kept

        return select(events, keep)
