"""A batch on its way into a store and back: validated and capped in, records in input order out.

:func:`prepare_batch` is what :meth:`journal.store.RunEventStore.prepare` runs (the content caps
and the metadata cap, each event encoded once); :func:`records_in_order` is the common tail of
every backend's append (one record per input event, in input order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from journal.encoding import NOT_PLAIN, dumps_plain, encode_plain, plain_kind
from journal.events import NewEvent, RunEvent, construct, prepare_mapping
from journal.truncation import DEFAULT_CONTENT_CAPS, fit_content, fit_metadata

__all__ = [
    "EventLike",
    "PreparedBatch",
    "checked_caps",
    "encoded_texts",
    "prepare_batch",
    "records_in_order",
]

EventLike = NewEvent | Mapping[str, Any]


class PreparedBatch(list[NewEvent]):
    """The events :meth:`RunEventStore.prepare` validated, with ``texts``: the canonical JSON
    of each one's content and metadata, in the same order (encoded once, for every use)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[tuple[str, str]] = []


def encoded_texts(events: Sequence[NewEvent]) -> list[tuple[str, str]]:
    """The canonical JSON of each event's content and metadata: a prepared batch's own texts,
    else encoded now (a backend called with events that did not go through ``prepare``)."""
    texts = getattr(events, "texts", None)
    if isinstance(texts, list) and len(texts) == len(events):
        return texts
    return [(dumps_plain(e.content), dumps_plain(e.metadata)) for e in events]


def checked_caps(
    content_caps: Mapping[str, int] | None, metadata_cap: int
) -> tuple[Mapping[str, int], int]:
    """Every category's content cap (the defaults, overridden) and the metadata cap, checked."""
    if isinstance(metadata_cap, bool) or not isinstance(metadata_cap, int) or metadata_cap < 64:
        raise ValueError("metadata_cap must be an int >= 64 (bytes)")
    caps = dict(DEFAULT_CONTENT_CAPS)
    for category, cap in (content_caps or {}).items():
        if category not in caps:
            raise ValueError(f"content_caps has unknown category {category!r}")
        if not isinstance(cap, int) or cap < 64:
            raise ValueError(f"content_caps[{category!r}] must be an int >= 64")
        caps[category] = cap
    return caps, metadata_cap


def _text(value: Any, kind: int) -> str:
    if kind == NOT_PLAIN:
        kind = plain_kind(value)
        if kind == NOT_PLAIN:  # assigned after validation: the rules first
            return dumps_plain(value)
    return encode_plain(value, kind)


def _without_seq(event: RunEvent) -> dict[str, Any]:
    values = dict(event.__dict__)
    del values["seq"]
    return values


def prepare_batch(
    events: Iterable[EventLike], content_caps: Mapping[str, int], metadata_cap: int
) -> PreparedBatch:
    """Validate ``events`` and apply the caps (see :meth:`RunEventStore.prepare`)."""
    if isinstance(events, NewEvent | Mapping):
        raise TypeError("append takes a sequence of events; wrap a single event in a list")
    prepared = PreparedBatch()
    for index, raw in enumerate(events):
        if isinstance(raw, NewEvent):
            if type(raw) is NewEvent:  # read-only from here: backends copy what they keep,
                event = raw  # the caps copy below
            elif type(raw) is RunEvent:  # read back from a store (copied): validated there,
                event = construct(NewEvent, _without_seq(raw))  # so only its seq goes
            else:  # a subclass of the caller's: its fields are checked again
                event = NewEvent(**raw.model_dump(exclude={"seq"}))
            content_kind, metadata_kind = plain_kind(event.content), NOT_PLAIN
        elif isinstance(raw, Mapping):
            try:
                event, content_kind, metadata_kind = prepare_mapping(raw)
            except ValueError as e:
                raise ValueError(f"event {index} of the batch is invalid: {e}") from e
        else:
            raise TypeError(
                f"event {index} of the batch is a {type(raw).__name__}; "
                "expected a NewEvent or a mapping"
            )
        content = _text(event.content, content_kind)
        # an llm.end may carry the call's output message: capped like messages, not traces
        cap = content_caps["message" if event.event_type == "llm.end" else event.category]
        original = None
        if len(content) > cap // 4 and len(content.encode("utf-8")) > cap:
            shrunk, original = fit_content(event.content, cap)
            content = _text(shrunk, NOT_PLAIN)
        metadata = event.metadata
        if original is not None:  # the marks count against the metadata cap too
            marks = {"truncated": True, "original_bytes": original}
            metadata = fit_metadata(event.event_type, metadata, metadata_cap, marks)
        else:
            metadata_text = _text(metadata, metadata_kind)
            if (
                len(metadata_text) > metadata_cap // 4
                and len(metadata_text.encode("utf-8")) > metadata_cap
            ):
                metadata = fit_metadata(event.event_type, metadata, metadata_cap)
        if metadata is not event.metadata:
            update: dict[str, Any] = {"metadata": metadata}
            if original is not None:
                update["content"] = shrunk
            event = event.model_copy(update=update)
            metadata_text = _text(metadata, NOT_PLAIN)
        prepared.append(event)
        prepared.texts.append((content, metadata_text))
    return prepared


def records_in_order(events: Sequence[NewEvent], known: Mapping[str, RunEvent]) -> list[RunEvent]:
    """The stored record of each of ``events`` (``known``, by event id), in input order.

    An id repeated in the batch gets its own copy of the record: results never alias each
    other, so mutating one returned record never changes another.
    """
    result: list[RunEvent] = []
    seen: set[str] = set()
    for event in events:
        record = known[event.event_id]
        result.append(record.model_copy(deep=True) if event.event_id in seen else record)
        seen.add(event.event_id)
    return result
