"""A thread's ``messages`` state as its stored events rebuild it (writer thread only).

Another journal (a process taking turns on the thread) journals what its runs do, and this
journal sees only the state those runs leave. What it then would journal may already be
stored: a removal of messages the other journal's compaction replaced, a tool result a paused
run held back that the other journal stored when it resumed the run. :class:`StoredStates`
reads what was stored of a thread since it last asked, ahead of a build (the build itself
never reads the store): its ``message.*`` events where only the stored versions are asked
about, with its ``message.remove`` and ``middleware:summarize`` events where the state is.
The build feeds it the events it builds for such a thread as it goes, so that an answer
counts what the batch wrote before it (whatever the batching). The rules are replay's: a
``message.*`` event puts its message in the state, the order events change it as
:func:`journal.catalog.order_change` says.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from journal._queued import Reads
from journal.catalog import (
    MESSAGE_EVENT_TYPES,
    REMOVE_EVENT_TYPE,
    SUMMARIZE_EVENT_TYPE,
    order_change,
    stored_message_id,
)
from journal.digests import stored_digest
from journal.events import NewEvent, RunEvent
from journal.store import RunEventStore

__all__ = ["StoredStates"]

_TYPES: Final = frozenset([*MESSAGE_EVENT_TYPES, REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE])
_READ: Final[dict[Reads, list[str]]] = {"messages": [*MESSAGE_EVENT_TYPES], "state": [*_TYPES]}
_CAPACITY: Final = 256  # threads remembered (the least recently asked about go first)


class _State:
    """What the stored events of one thread say of its state: the messages' versions up to
    :attr:`message_seq`, their order up to :attr:`seq` (never later)."""

    __slots__ = ("message_seq", "order", "seq", "versions")

    def __init__(self) -> None:
        self.seq = 0
        self.message_seq = 0
        self.order: dict[str, None] = {}  # the state's message ids
        self.versions: dict[str, str] = {}  # every stored message id -> its latest digest

    def copy(self) -> _State:
        """An independent copy."""
        other = _State()
        other.seq, other.message_seq = self.seq, self.message_seq
        other.order, other.versions = dict(self.order), dict(self.versions)
        return other

    def feed(self, events: list[RunEvent], reads: Reads) -> None:
        """Apply ``events``, ascending: read after :attr:`seq` (``reads == "state"``), or
        the ``message.*`` events alone after :attr:`message_seq` (the order stays as it was
        at :attr:`seq`)."""
        if not events:
            return
        if reads == "state":
            for event in events:
                self.apply(event.event_type, event.content, event.metadata)
            self.seq = events[-1].seq
        else:
            for event in events:
                mid = stored_message_id(event.content)
                if mid is not None:
                    self.versions[mid] = stored_digest(event.content, event.metadata)
        self.message_seq = max(self.message_seq, events[-1].seq)

    def apply(self, event_type: str, content: Any, metadata: dict[str, Any]) -> None:
        """Apply one event (stored, or built for the store)."""
        if event_type in MESSAGE_EVENT_TYPES:
            mid = stored_message_id(content)
            if mid is not None:
                self.versions[mid] = stored_digest(content, metadata)
                self.order[mid] = None
            return
        summary = content.get("summary_message") if isinstance(content, dict) else None
        change = order_change(event_type, content, self.order, stored_message_id(summary))
        if change is None:
            return
        if change.order is not None:
            self.order = dict.fromkeys(change.order)
        else:
            for mid in change.removed:
                self.order.pop(mid, None)


class StoredStates:
    """The stored states of the threads a build asks about (a bounded cache)."""

    def __init__(
        self,
        store: RunEventStore,
        *,
        may_read: Callable[[], bool],
        read_failed: Callable[[], None],
    ) -> None:
        self._store = store
        self._may_read = may_read
        self._read_failed = read_failed
        self._states: OrderedDict[str, _State] = OrderedDict()
        # the threads read for the coming build, and what was read of each
        self._read: dict[str, Reads] = {}
        # the states of those threads with the events built so far (copies, made on the first)
        self._built: dict[str, _State] = {}

    def fetch(self, needs: Mapping[str, Reads]) -> None:
        """Read what was stored of each thread since it was last read (what ``needs`` says
        of it), for the next build (not while the store is down or the writer closing: the
        build then knows nothing)."""
        self._read, self._built = {}, {}
        for thread_id, reads in needs.items():
            if not self._may_read():
                return
            state = self._states.pop(thread_id, None) or _State()
            after = state.seq if reads == "state" else max(state.seq, state.message_seq)
            try:
                events = self._store.read(thread_id, event_type=_READ[reads], after_seq=after)
            except Exception:  # the writes will spool anyway; nothing is known then
                self._read_failed()
                return
            state.feed(events, reads)
            self._states[thread_id] = state
            self._read[thread_id] = reads
            if len(self._states) > _CAPACITY:
                self._states.popitem(last=False)

    def built(self, event: NewEvent) -> None:
        """The build made ``event`` (before what it builds next): answers count it."""
        thread_id = event.thread_id
        if thread_id not in self._read or event.event_type not in _TYPES:
            return
        state = self._built.get(thread_id) or self._states.get(thread_id)
        if state is None:  # evicted by the threads read after it
            return
        if thread_id not in self._built:
            state = self._built[thread_id] = state.copy()
        state.apply(event.event_type, event.content, event.metadata)

    def left(self, thread_id: str, ids: list[str]) -> list[str]:
        """The ids of ``ids`` that the store holds as stored and out of the thread's state
        (none if the thread's state was not read for this build)."""
        state = self._state(thread_id) if self._read.get(thread_id) == "state" else None
        if state is None:
            return []
        return [mid for mid in ids if mid in state.versions and mid not in state.order]

    def holds(self, thread_id: str, message_id: str, digest: str) -> bool:
        """Whether the store holds ``message_id`` in that version (``digest``) as its latest,
        in the thread's state or out of it (``False`` if the thread was not read for this
        build)."""
        state = self._state(thread_id)
        return state is not None and state.versions.get(message_id) == digest

    def _state(self, thread_id: str) -> _State | None:
        if thread_id not in self._read:
            return None
        state = self._built.get(thread_id)
        return self._states.get(thread_id) if state is None else state
