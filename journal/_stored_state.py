"""A thread's ``messages`` state as its stored events rebuild it (writer thread only).

Another journal (a process taking turns on the thread) journals what its runs do, and this
journal sees only the state those runs leave. What it then would journal may already be
stored: a removal of messages the other journal's compaction replaced, a tool result a paused
run held back that the other journal stored when it resumed the run. :class:`StoredStates`
reads what was stored of a thread since it last asked (``message.*``, ``message.remove`` and
``middleware:summarize`` events, ahead of a build: the build itself never reads the store) and
answers from it. The rules are replay's (``history`` documents them): a ``message.*`` event
puts its message in the state, a removal takes its ids out (with ``state_message_ids`` the
state becomes that list), a summary's marker makes the state its ``state_message_ids``, or
the summary followed by the ``kept_message_ids``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Final

from journal.catalog import (
    MESSAGE_EVENT_TYPES,
    REMOVE_EVENT_TYPE,
    SUMMARIZE_EVENT_TYPE,
    stored_message_id,
)
from journal.digests import stored_digest
from journal.events import RunEvent
from journal.store import RunEventStore

__all__ = ["StoredStates"]

_TYPES: Final = [*MESSAGE_EVENT_TYPES, REMOVE_EVENT_TYPE, SUMMARIZE_EVENT_TYPE]
_CAPACITY: Final = 256  # threads remembered (the least recently asked about go first)


def _ids(payload: dict[str, Any], key: str) -> list[str] | None:
    value = payload.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


class _State:
    """What the stored events of one thread, up to :attr:`seq`, say of its state."""

    __slots__ = ("order", "seq", "versions")

    def __init__(self) -> None:
        self.seq = 0
        self.order: dict[str, None] = {}  # the state's message ids
        self.versions: dict[str, str] = {}  # every stored message id -> its latest digest

    def feed(self, events: list[RunEvent]) -> None:
        """Apply ``events`` (read after :attr:`seq`, ascending)."""
        for event in events:
            payload = event.content if isinstance(event.content, dict) else {}
            if event.event_type == REMOVE_EVENT_TYPE:
                order = _ids(payload, "state_message_ids")
                if order is not None:
                    self.order = dict.fromkeys(order)
                for removed in _ids(payload, "removed_message_ids") or ():
                    self.order.pop(removed, None)
            elif event.event_type == SUMMARIZE_EVENT_TYPE:
                self._compact(payload)
            elif (mid := stored_message_id(event.content)) is not None:
                self.versions[mid] = stored_digest(event.content, event.metadata)
                self.order[mid] = None
            self.seq = event.seq

    def _compact(self, payload: dict[str, Any]) -> None:
        order = _ids(payload, "state_message_ids")
        if order is None:  # the tracking middleware's layout: the summary, then what it kept
            summary = stored_message_id(payload.get("summary_message"))
            kept = [mid for mid in _ids(payload, "kept_message_ids") or () if mid in self.order]
            order = [summary, *kept] if summary is not None else kept
        self.order = dict.fromkeys(order)


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
        self._read: set[str] = set()  # the threads read for the coming build

    def fetch(self, thread_ids: Iterable[str]) -> None:
        """Read what was stored of each thread since it was last read, for the next build
        (not while the store is down or the writer closing: the build then knows nothing)."""
        self._read = set()
        for thread_id in thread_ids:
            if not self._may_read():
                return
            state = self._states.pop(thread_id, None) or _State()
            try:
                events = self._store.read(thread_id, event_type=_TYPES, after_seq=state.seq)
            except Exception:  # the writes will spool anyway; nothing is known then
                self._read_failed()
                return
            state.feed(events)
            self._states[thread_id] = state
            self._read.add(thread_id)
            if len(self._states) > _CAPACITY:
                self._states.popitem(last=False)

    def left(self, thread_id: str, ids: list[str]) -> list[str]:
        """The ids of ``ids`` that the store holds as stored and out of the thread's state
        (none if the thread was not read for this build)."""
        state = self._states.get(thread_id) if thread_id in self._read else None
        if state is None:
            return []
        return [mid for mid in ids if mid in state.versions and mid not in state.order]

    def holds(self, thread_id: str, message_id: str, digest: str) -> bool:
        """Whether the store holds ``message_id`` in that version (``digest``) as its latest,
        in the thread's state (``False`` if the thread was not read for this build)."""
        state = self._states.get(thread_id) if thread_id in self._read else None
        if state is None:
            return False
        return state.versions.get(message_id) == digest and message_id in state.order
