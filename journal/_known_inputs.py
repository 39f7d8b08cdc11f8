"""Which input messages a thread already holds in the store (writer thread only).

A caller without a checkpointer resends the whole history every run. Within one process the
journal's per-thread memory skips messages it already journaled; after a restart that memory is
empty, so the writer also asks the store, once per thread, which messages it holds and drops
the repeats of a run's input: its human and system messages (:data:`INPUT_TYPES`), and the
answers and tool results it carries (:data:`HISTORY_TYPES`, journaled ``caller: "user"``; the
store is asked for those only for a thread whose input has one). This runs on the writer
thread (it does I/O), never on the callback path.

A repeat is the same message id with the digest of its latest stored version; the same id
with another content (an earlier one too: an edit back) is the user's edit of the message (a
client that keeps its ids): journaled as a ``replacement``, as the journal does when it
remembers the message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

from journal._batch import KnownEvents
from journal._logging import get_logger
from journal.catalog import stored_message_id
from journal.digests import stored_digest
from journal.encoding import NOT_PLAIN
from journal.events import NewEvent, RunEvent
from journal.store import MessageMark, RunEventStore

__all__ = [
    "HISTORY_TYPES",
    "INPUT_TYPES",
    "MESSAGE_TYPES",
    "KnownInputs",
    "Versions",
    "as_edit",
    "is_input",
    "message_id_of",
    "select",
    "stored_marks",
    "versions",
]

#: A thread's stored inputs: message id -> the digest of its latest stored version.
Versions = dict[str, str]

_log = get_logger(__name__)
_CAPACITY: Final = 4096
#: The events of a run's input messages (a resent history repeats them): human and system.
INPUT_TYPES: Final = ("message.human", "message.system")
#: The events of the answers and tool results a run's input carries (a seeded or resent
#: history), told from a node's by their ``caller``.
HISTORY_TYPES: Final = ("message.ai", "message.tool")
#: Every ``message.*`` event that journals a message of the state.
MESSAGE_TYPES: Final = (*INPUT_TYPES, *HISTORY_TYPES)
_USER: Final = "user"  # the caller of a run's input


message_id_of = stored_message_id  # the catalog's rule, under the name the writer uses


def is_input(event: NewEvent) -> bool:
    """Whether ``event`` journals a message of a run's input, which a resent history repeats
    (never a ``replacement``: an edit is journaled whatever the store holds)."""
    if event.metadata.get("replacement"):
        return False
    if event.event_type in INPUT_TYPES:
        return True
    return event.event_type in HISTORY_TYPES and event.metadata.get("caller") == _USER


#: The event types read from the store together with each compared message's (another
#: event type is not a message the writer compares).
_TYPES_OF: Final = {
    **dict.fromkeys(INPUT_TYPES, INPUT_TYPES),
    **dict.fromkeys(HISTORY_TYPES, HISTORY_TYPES),
}


def versions(stored: list[RunEvent]) -> Versions:
    """The latest version of each message of ``stored`` (a thread's ``message.*`` events,
    in seq order)."""
    out: Versions = {}
    for event in stored:
        mid = message_id_of(event.content)
        if mid is not None:
            out[mid] = stored_digest(event.content, event.metadata)
    return out


def stored_marks(
    store: RunEventStore, thread_id: str, types: Sequence[str], after_seq: int | None = None
) -> list[MessageMark]:
    """``(seq, message id, digest)`` of ``thread_id``'s stored events of ``types`` after
    ``after_seq``, in seq order (the id and digest :func:`versions` takes): in one read where
    the store answers it (:meth:`RunEventStore._message_marks`), else from the events."""
    marks = store._message_marks(thread_id, types, after_seq)
    if marks is not None:
        return marks
    events = store.read(thread_id, event_type=list(types), after_seq=after_seq)
    return [(e.seq, message_id_of(e.content), stored_digest(e.content, e.metadata)) for e in events]


def as_edit(event: NewEvent, known: Versions) -> NewEvent | None:
    """``event`` (an input, see :func:`is_input`) as it is to be stored given the thread's ``known``
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


class _Stored:
    """What the store held of a thread's messages of some event types when last asked."""

    __slots__ = ("seq", "versions")

    def __init__(self) -> None:
        self.versions: Versions = {}
        self.seq = 0  # the last seq read

    def add(self, stored: list[MessageMark]) -> None:
        """Take in ``stored``, the marks of the events read after :attr:`seq`, in seq order."""
        found = self.versions
        for _, mid, digest in stored:
            if mid is not None:
                found[mid] = digest
        if stored:
            self.seq = max(self.seq, stored[-1][0])


class KnownInputs:
    """A bounded per-thread cache of the message ids already stored, with their versions.

    The first input of a thread reads what the store holds; each later batch with an input
    of the thread reads only what was stored since (another process's runs of the thread, or
    its catch-up: a journal that has not seen those messages journals them again as input).
    """

    def __init__(self, store: RunEventStore) -> None:
        self._store = store
        # thread -> the event types read from the store -> what it held of them
        self._threads: OrderedDict[str, dict[tuple[str, ...], _Stored]] = OrderedDict()

    def _known(
        self,
        thread_id: str,
        types: tuple[str, ...],
        ask_store: bool,
        asked: set[tuple[str, tuple[str, ...]]] | None = None,
    ) -> Versions | None:
        """The versions stored of ``thread_id``'s messages of ``types``; read from the store
        (what was stored since the last read) when ``ask_store`` and not in ``asked`` yet."""
        read = self._threads.get(thread_id)
        known = None
        if read is not None:
            self._threads.move_to_end(thread_id)
            known = read.get(types)
        key = (thread_id, types)
        if not ask_store or (asked is not None and key in asked):
            return None if known is None else known.versions
        try:
            stored = stored_marks(self._store, thread_id, types, known.seq if known else None)
        except Exception:  # the store is down: the write will fail and spool anyway
            return None
        if asked is not None:
            asked.add(key)
        if read is None:
            read = self._threads[thread_id] = {}
            if len(self._threads) > _CAPACITY:
                self._threads.popitem(last=False)
        if known is None:
            known = read[types] = _Stored()
        known.add(stored)
        return known.versions

    def drop_repeats(self, events: KnownEvents, *, ask_store: bool = True) -> KnownEvents:
        """``events`` without the input events (:func:`is_input`) whose message is already
        stored (``events`` itself when none is dropped).

        ``ask_store=False`` (the store is known to be down) uses what is cached only: the
        spool's replay drops the repeats it lets through.
        """
        asking = ask_store
        asked: set[tuple[str, tuple[str, ...]]] = set()  # read once a batch, at its first input
        changed: dict[int, NewEvent | None] = {}  # batch index -> its event's replacement
        types_of = _TYPES_OF.get
        for index, event in enumerate(events):
            types = types_of(event.event_type)
            if types is None:  # not a message the writer compares (most events)
                continue
            if not is_input(event):  # a node's message (or an edit): its version is the latest
                self._latest(event, types)
                continue
            known = self._known(event.thread_id, types, asking, asked)
            if known is None:
                asking = False  # one failed look-up per batch, not one per thread
                continue
            kept = as_edit(event, known)
            if kept is None:
                _log.info("journal_input_already_stored", run_id=event.run_id)
            if kept is not event:
                changed[index] = kept
        if not changed:
            return events
        out = KnownEvents(handed_over=events.handed_over)  # as select() makes it
        for index, (event, hints) in enumerate(zip(events, events.hints, strict=True)):
            new = changed.get(index, event)
            if new is event:
                out.add(event, *hints)
            elif new is not None:  # its metadata changed: encoded by the rules
                out.add(new, hints[0], NOT_PLAIN)
        return out

    def _latest(self, event: NewEvent, types: tuple[str, ...]) -> None:
        """A node's message (or an edit) of ``types``: its version is the latest of its id in
        what is cached of the thread (:meth:`_known` without asking, inline: the thread's
        messages are cached only once an input of it was looked up)."""
        read = self._threads.get(event.thread_id)
        if read is None:
            return
        self._threads.move_to_end(event.thread_id)
        stored = read.get(types)
        if stored is None:
            return
        mid = message_id_of(event.content)
        if mid is not None:
            stored.versions[mid] = stored_digest(event.content, event.metadata)
