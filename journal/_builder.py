"""How the journal's writer thread turns queued items into the store's events.

:class:`BatchBuilder` is the building half of :class:`journal._writer.Writer` (writer thread
only, and ``Writer``'s close under its lock): it computes each item's content (a
:class:`journal._queued.Lazy` or a settled :class:`journal._queued.Later`), checks the event
once, gives it its final ``event_id`` (:func:`journal._ids.new_event_ids`, a millisecond's
ids in sequence) and hands the batch over as
:class:`journal._batch.KnownEvents` with what is known of each content and metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from datetime import timedelta as _timedelta
from typing import Final

from journal._batch import Hint, KnownEvents
from journal._ids import new_event_ids
from journal._kinds import combined_kind
from journal._logging import get_logger
from journal._queued import SKIP, Extra, Later, Lazy, Pending
from journal.encoding import NOT_PLAIN, container_kind, jsonable_with_kind
from journal.events import (
    _FIELD_SET,
    CATEGORIES,
    NewEvent,
    _new_object,
    _set_extra,
    _set_fields_set,
    _set_private,
    _set_values,
    validate_event_type,
    validate_id,
)

__all__ = ["BatchBuilder"]

_log = get_logger(__name__)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_GOOD_IDS_MAX: Final = 4096  # thread and run ids checked already (bounded)


class BatchBuilder:
    """Builds the store's events of queued items; reports what it drops to ``dropped``, and
    each event it makes to ``built`` (before it builds the next item's content)."""

    __slots__ = ("_built", "_dropped", "_good_ids", "_good_types")

    def __init__(
        self, dropped: Callable[[str, int], None], built: Callable[[NewEvent], None] | None = None
    ) -> None:
        self._dropped = dropped
        self._built = built
        self._good_ids: set[str] = set()
        self._good_types: dict[str, str] = {}  # event type -> its category, checked

    def build(self, batch: list[Pending]) -> KnownEvents:
        """Turn queued items into the store's events, with their final ``event_id``.

        Each event is checked once, here (ids per distinct id, the event type per distinct
        pair, content and metadata made plain JSON when they are not), and handed to the
        store as :class:`KnownEvents` with what is known of its content and metadata (the
        canonical text of a message, encoded for its digest; else their kinds: known by
        construction where the journal made them, :mod:`journal._kinds`, else found by a
        walk), so that the store's ``prepare`` neither validates, walks nor encodes them
        again. Content that is not plain JSON (a tool's odd object) is encoded by the rules
        here, as ``prepare`` would. An item that fails the checks is dropped (counted,
        logged), as the store's one-by-one retry would drop it.
        """
        events = KnownEvents(handed_over=True)
        events.times = []  # each event's created_at in µs, for the store's rows
        # (KnownEvents.add, inline: with the time, a call an event less)
        keep, hint, keep_time = events.append, events.hints.append, events.times.append
        built = self._built
        good_ids, good_types = self._good_ids, self._good_types
        next_id = iter(new_event_ids(len(batch))).__next__  # (an item dropped leaves one unused)
        # the second the last event was made in (a batch's events share a few): its start in
        # microseconds since the epoch and its fields, so that an event's time is one call
        start = end = 0
        year, month, day, hour, minute, second = 1970, 1, 1, 0, 0, 0
        for p in batch:
            # one unpacking: a field of a named tuple read by name costs a call each
            (
                thread_id,
                run_id,
                category,
                event_type,
                content,
                metadata,
                created_us,
                metadata_kind,
            ) = p
            content_kind = NOT_PLAIN
            text: str | None = None
            kind = type(content)
            if kind is Lazy or (kind is not dict and isinstance(content, Later)):
                try:
                    if kind is Lazy:  # (unpacked at once: a field read by name is a call)
                        func, args, _ = content
                        content = func(*args)
                    else:
                        content = content.build()
                except Exception:  # a broken object must not stop the writer
                    _log.warning("journal_event_invalid", run_id=run_id, count=1)
                    self._dropped(run_id, 1)
                    continue
                if content is SKIP:
                    continue
                if type(content) is Extra:  # (unpacked at once: a field read by name is a call)
                    content, extra, text, extra_kind, content_kind = content
                    if extra:  # (a dict's ``|`` copies its table at once: half the cost)
                        metadata = (
                            metadata | extra if type(metadata) is dict else {**metadata, **extra}
                        )
                        if extra_kind != metadata_kind:  # (the kind of equal kinds is theirs)
                            metadata_kind = combined_kind(metadata_kind, extra_kind)
            content_hint: Hint
            metadata_hint: Hint = metadata_kind
            try:
                if (
                    thread_id not in good_ids
                    or run_id not in good_ids
                    or good_types.get(event_type) != category
                ):
                    self._check(p)
                if content_kind:  # made by the writer of plain values, of that kind
                    content_hint = content_kind
                elif text is None:  # (a dict walked without the dispatch: the usual)
                    content_hint = (
                        container_kind(content, 0) if type(content) is dict else NOT_PLAIN
                    )
                    if content_hint == NOT_PLAIN:
                        content, content_hint = jsonable_with_kind(content)
                else:  # a message, encoded for its digest: its text is the store's text
                    content_hint = text  # (its content a dict of its own, else copied)
                    if type(content) is not dict:
                        content = dict(content)
                if not metadata_kind:  # else the journal's own, of that kind by making
                    metadata, metadata_hint = jsonable_with_kind(metadata)
                    if type(metadata) is not dict:
                        raise TypeError("metadata must be a mapping")
            except (ValueError, TypeError):
                _log.warning("journal_event_rejected", run_id=run_id, event_type=event_type,
                             count=1)  # fmt: skip
                self._dropped(run_id, 1)
                continue
            if not start <= created_us < end:
                start, year, month, day, hour, minute, second = _second(created_us)
                end = start + 1_000_000
            values = {
                "event_id": next_id(),
                "thread_id": thread_id,
                "run_id": run_id,
                "category": category,
                "event_type": event_type,
                "content": content,
                "metadata": metadata,
                # the time ``_EPOCH + timedelta(microseconds=created_us)`` is
                "created_at": datetime(
                    year, month, day, hour, minute, second, created_us - start, UTC
                ),
            }
            event = _new_object(NewEvent)  # construct(NewEvent, values), without its call
            _set_values(event, values)
            _set_fields_set(event, _FIELD_SET.copy())
            _set_extra(event, None)
            _set_private(event, None)
            keep(event)
            hint((content_hint, metadata_hint))
            keep_time(created_us)
            if built is not None:
                built(event)
        return events

    def _check(self, p: Pending) -> None:
        """Raise ``ValueError`` unless ``p``'s ids and event type are valid (each distinct id
        and pair is checked once; the event id and ``created_at`` are valid by construction)."""
        good = self._good_ids
        if p.thread_id not in good or p.run_id not in good:
            if len(good) >= _GOOD_IDS_MAX:
                good.clear()
            good.add(validate_id(p.thread_id, "thread_id"))
            good.add(validate_id(p.run_id, "run_id"))
        if self._good_types.get(p.event_type) != p.category:
            if p.category not in CATEGORIES:
                raise ValueError(f"category {p.category!r} is unknown")
            validate_event_type(p.category, p.event_type)
            self._good_types[p.event_type] = p.category


def _second(created_us: int) -> tuple[int, int, int, int, int, int, int]:
    """The second (UTC) of the time ``created_us`` microseconds after the epoch: its start in
    microseconds since the epoch, and its year, month, day, hour, minute and second."""
    start = created_us - created_us % 1_000_000
    at = _EPOCH + _timedelta(0, 0, start)
    return start, at.year, at.month, at.day, at.hour, at.minute, at.second
