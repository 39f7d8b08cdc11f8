"""A thread's ``messages`` state, rebuilt event by event, and each model call's input resolved.

:class:`StateWalk` is fed a thread's events in seq order (``message.*``, ``message.remove``,
``middleware:summarize`` and ``llm.start``) and keeps what replay and verify need: the state's
messages (stored contents, with their digests), and every message a call record inlined. The
rules, written once for :func:`history.replay` and :func:`history.verify`:

* ``message.*``: the message enters the state; an id the state holds is replaced in place
  (``add_messages``).
* ``message.remove``: its ``removed_message_ids`` leave the state; with ``state_message_ids``
  (a rewrite, or the state of a run forked from an earlier checkpoint) the state becomes
  exactly that list, in that order: each id is the latest version journaled of it, removed
  or summarized away since included (a fork brings such messages back); ids not journaled
  yet are filled by the ``message.*`` events that follow.
* ``middleware:summarize``: the state becomes ``state_message_ids`` (inferred markers) or
  ``[summary_message, *kept_message_ids]`` (the tracking middleware's layout).
  (These two order rules are :func:`journal.catalog.order_change`, which the journal's
  writer follows too.)
* ``llm.start``: its record (``metadata.context``, see :mod:`journal.digests`) lists every input
  message by id and digest (a record may extend the previous record of the same caller). An
  entry resolves to the state's message with that id when its digest matches, else to a copy
  inlined by this or an earlier call of the thread.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from history._catalog import MESSAGE_TYPES, MODEL_CALL, REMOVE, SUMMARIZE, message_id
from journal.catalog import order_change, stored_message_id
from journal.digests import CONTEXT_KEY, Entry, content_digest, expand_record
from journal.events import RunEvent

__all__ = ["Problem", "StateWalk", "call_record"]

_PENDING: Final = None  # an id a rewrite placed whose message event follows
_BASES: Final = 64  # expanded records kept for the deltas that follow (several journals)


@dataclass(slots=True)
class _Entry:
    content: Any
    digest: str | None  # as recorded; computed on first use when the event has none
    truncated: bool = False
    computed: bool = False

    def digest_of(self, recompute: bool) -> str:
        """The digest (``recompute``: of the stored content, once, whatever was recorded)."""
        if self.digest is None or (recompute and not self.computed):
            self.digest = content_digest(self.content)
            self.computed = True
        return self.digest


@dataclass(slots=True)
class Problem:
    """An input message of a call that the journal cannot rebuild exactly."""

    index: int
    message_id: str | None
    digest: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "index": self.index,
            "message_id": self.message_id,
            "digest": self.digest,
            "reason": self.reason,
        }


def call_record(event: RunEvent) -> dict[str, Any] | None:
    """The context record of an ``llm.start``, or ``None`` (journaled before records existed,
    or malformed)."""
    record = event.metadata.get(CONTEXT_KEY)
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        return None
    return record


@dataclass
class StateWalk:
    """The state of one thread as its events are fed in seq order (see the module doc)."""

    thread_id: str
    verify: bool = False  # recompute every digest from the stored content
    entries: dict[str, _Entry | None] = field(default_factory=dict)
    # every message fed, by id, its latest version: an order may place one the state lost
    fed: dict[str, _Entry] = field(default_factory=dict)
    inline: dict[str, Any] = field(default_factory=dict)
    checked: set[str] = field(default_factory=set)  # inline digests recomputed and matching
    # the expanded records of the latest calls, by llm_run_id (a delta's base is among them)
    calls: OrderedDict[str, list[Entry]] = field(default_factory=OrderedDict)
    call: list[Entry] | None = None  # the input of the last ``llm.start`` fed (None: unknown)
    missing: int = 0  # ids the state should hold but whose message was never journaled
    kept_missing: int = 0  # ids a tracked summary kept that the replayed state did not hold

    def feed(self, events: Iterable[RunEvent]) -> None:
        """Apply ``events`` (ascending seq) to the state."""
        for event in events:
            kind = event.event_type
            if kind in MESSAGE_TYPES:
                self._add(event)
            elif kind == REMOVE:
                self._remove(event)
            elif kind == SUMMARIZE:
                self._compact(event)
            elif kind == MODEL_CALL:
                self._call(event)

    def _call(self, event: RunEvent) -> None:
        record = call_record(event)
        self.call = None
        if record is None:
            return
        inline = record.get("inline")
        if isinstance(inline, dict):
            for digest, content in inline.items():
                self.inline.setdefault(digest, content)
        self.call = expand_record(record, self.calls)
        base = record.get("base")
        if isinstance(base, str) and base in self.calls:
            self.calls.move_to_end(base)
        llm_run_id = event.metadata.get("llm_run_id")
        if self.call is not None and isinstance(llm_run_id, str):
            self.calls.pop(llm_run_id, None)
            self.calls[llm_run_id] = self.call
            while len(self.calls) > _BASES:
                self.calls.popitem(last=False)

    def _add(self, event: RunEvent) -> None:
        recorded = event.metadata.get("digest")
        mid = message_id(event) or f"\0seq-{event.seq}"
        self.entries[mid] = self.fed[mid] = _Entry(
            event.content,
            recorded if isinstance(recorded, str) else None,
            bool(event.metadata.get("truncated")),
        )

    def _reorder(self, order: list[str], injected: dict[str, _Entry]) -> None:
        self.fed.update(injected)
        entries: dict[str, _Entry | None] = {}
        for mid in order:
            entries[mid] = self.fed.get(mid, _PENDING)
        self.entries = entries

    def _remove(self, event: RunEvent) -> None:
        change = order_change(event.event_type, event.content, self.entries, None)
        if change is None:
            return
        if change.order is not None:
            self._reorder(change.order, {})
            return
        for mid in change.removed:
            self.entries.pop(mid, None)

    def _compact(self, event: RunEvent) -> None:
        payload = event.content if isinstance(event.content, dict) else {}
        summary = payload.get("summary_message")
        injected: dict[str, _Entry] = {}
        sid = stored_message_id(summary) or f"\0seq-{event.seq}"
        if isinstance(summary, dict):
            injected[sid] = _Entry(summary, None)
        change = order_change(event.event_type, payload, self.entries, next(iter(injected), None))
        if change is None or change.order is None:
            return
        self.kept_missing += change.unheld
        self._reorder(change.order, injected)

    def _inline_ok(self, digest: str, copy: Any) -> bool:
        if digest not in self.checked and content_digest(copy) == digest:
            self.checked.add(digest)
        return digest in self.checked

    def contents(self, state: dict[str, _Entry | None] | None = None) -> list[Any]:
        """The stored messages of ``state`` (default: the current one), in order; ids still
        waiting for their message are left out and counted in ``missing``."""
        entries = self.entries if state is None else state
        out = [entry.content for entry in entries.values() if entry is not None]
        self.missing += len(entries) - len(out)
        return out

    def snapshot(self) -> dict[str, _Entry | None]:
        """A copy of the current state (cheap: the entries are shared)."""
        return dict(self.entries)

    def resolve(
        self, entries: list[Entry] | None, state: dict[str, _Entry | None] | None = None
    ) -> tuple[list[Any], list[Problem]]:
        """A call's input from its entries (``None``: its record extends a record the journal
        lacks), against ``state`` (default: the current one)."""
        if entries is None:
            return [], [Problem(0, None, None, "record_base_missing")]
        current = self.entries if state is None else state
        contents: list[Any] = []
        problems: list[Problem] = []
        for index, (mid, digest) in enumerate(entries):
            if not digest:
                problems.append(Problem(index, mid, None, "no_digest"))
                continue
            entry = current.get(mid) if mid is not None else None
            if entry is not None and entry.digest_of(self.verify) == digest:
                contents.append(entry.content)
                continue
            copy = self.inline.get(digest)
            if copy is not None and (not self.verify or self._inline_ok(digest, copy)):
                contents.append(copy)
                continue
            if copy is not None:
                reason = "inline_digest_mismatch"
            elif entry is not None:
                reason = "truncated" if entry.truncated else "content_differs"
            elif mid is not None and mid in current:
                reason = "message_not_journaled"
            else:
                reason = "not_in_state"
            problems.append(Problem(index, mid, digest, reason))
        return contents, problems
