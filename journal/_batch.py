"""A batch on its way into a store and back: validated and capped in, records in input order out.

:func:`prepare_batch` is what :meth:`journal.store.RunEventStore.prepare` runs (the content caps
and the metadata cap, each event encoded once); :func:`records_in_order` is the common tail of
every backend's append (one record per input event, in input order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from orjson import OPT_SORT_KEYS as _SORT_KEYS
from orjson import dumps as _orjson_dumps

from journal.encoding import NOT_PLAIN, PLAIN, dumps_plain, encode_plain, plain_kind
from journal.events import NewEvent, RunEvent, construct, usual_event
from journal.truncation import DEFAULT_CONTENT_CAPS, fit_content, fit_metadata

__all__ = [
    "EventLike",
    "Hint",
    "KnownEvents",
    "PreparedBatch",
    "checked_caps",
    "encoded_texts",
    "prepare_batch",
    "records_in_order",
    "stored_record",
]

EventLike = NewEvent | Mapping[str, Any]
#: What is known of an event's content or metadata before it is encoded: its canonical text
#: (a ``str``), or its :func:`plain_kind` (an ``int``; ``NOT_PLAIN``: not known, walk it).
Hint = str | int
_NO_HINTS: Final = (NOT_PLAIN, NOT_PLAIN)
_EMPTY_OBJECT: Final = "{}"


class PreparedBatch(list[NewEvent]):
    """The events :meth:`RunEventStore.prepare` validated, with ``texts``: the canonical JSON
    of each one's content and metadata, in the same order (encoded once, for every use), and
    ``owned``: whether prepare built the event itself (from a mapping, a stored record, a cut),
    so that no one else holds it and it may become its own stored record
    (:func:`stored_record`); ``times``: each event's ``created_at`` in microseconds since the
    epoch, in the same order, where its maker knew them (a :class:`KnownEvents`' times), else
    ``None`` (the backend converts them)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[tuple[str, str]] = []
        self.owned: list[bool] = []
        self.times: list[int] | None = None


class KnownEvents(list[NewEvent]):
    """Events on their way into ``append`` that need no validation: read back from a store,
    or parsed and checked by the library (import), each with ``hints``: what is known of its
    content and metadata (their canonical texts, or their kinds).

    Made only by library code that hands it straight to ``append``: its events are taken as
    valid and its hints as true (a stored record's text is the one its value encodes to). A
    stored record (``RunEvent``) among them that the target stores unchanged at the seq it has
    is returned as the target's own record, not copied: the maker only compares the results
    with its page (:func:`journal.copy.copy_store`).
    ``handed_over``: the maker keeps no use of its ``NewEvent`` objects, so the store may make
    them its records. ``times``: each event's ``created_at`` in microseconds since the epoch
    (:func:`journal._sqlite_rows.to_micros` of it), in order, where the maker has them (the
    journal's writer builds the times from them); ``None`` else, and not used unless there is
    one for each event (:meth:`add` adds none).
    """

    def __init__(self, *, handed_over: bool = False) -> None:
        super().__init__()
        self.hints: list[tuple[Hint, Hint]] = []
        self.handed_over = handed_over
        self.times: list[int] | None = None

    def add(self, event: NewEvent, content: Hint = NOT_PLAIN, metadata: Hint = NOT_PLAIN) -> None:
        """Add ``event`` with what is known of its content and of its metadata."""
        self.append(event)
        self.hints.append((content, metadata))


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


def _text(value: Any, hint: Hint) -> str:
    """The canonical text of ``value``, known (``hint`` is it) or encoded now."""
    if isinstance(hint, str):  # a stored record's own text
        return hint
    if hint == PLAIN:  # the usual case: a fast encoder writes exactly the rules' bytes
        return _orjson_dumps(value, option=_SORT_KEYS).decode()
    if hint == NOT_PLAIN:
        if not value and type(value) is dict:
            return _EMPTY_OBJECT
        hint = plain_kind(value)
        if hint == NOT_PLAIN:  # assigned after validation: the rules first
            return dumps_plain(value)
    return encode_plain(value, hint)


def _stored_values(event: RunEvent) -> dict[str, Any]:
    values = dict(event.__dict__)
    del values["seq"]
    return values


def _validated(raw: Mapping[str, Any], index: int) -> tuple[NewEvent, int, int]:
    """``NewEvent(**raw)`` by the full validation (``raw`` is not of the usual kind), with the
    kinds of its content and metadata; its errors name the ``index``-th event of the batch."""
    try:
        event = NewEvent(**raw)
    except ValueError as e:
        raise ValueError(f"event {index} of the batch is invalid: {e}") from e
    return event, plain_kind(event.content), plain_kind(event.metadata)


def _event(raw: Any, index: int) -> tuple[NewEvent, Hint, Hint]:
    """The validated event of input ``raw`` (the ``index``-th of its batch) and the kinds of
    its content and metadata where known."""
    if type(raw) is dict or (not isinstance(raw, NewEvent) and isinstance(raw, Mapping)):
        usual = usual_event(raw)
        return usual if usual is not None else _validated(raw, index)
    if type(raw) is NewEvent:  # read-only from here: backends copy what they keep,
        return raw, NOT_PLAIN, NOT_PLAIN  # the caps copy below
    if type(raw) is RunEvent:  # read back from a store (copied): validated there,
        return construct(NewEvent, _stored_values(raw)), NOT_PLAIN, NOT_PLAIN  # its seq goes
    if isinstance(raw, NewEvent):  # a subclass of the caller's: its fields are checked again
        return NewEvent(**raw.model_dump(exclude={"seq"})), NOT_PLAIN, NOT_PLAIN
    raise TypeError(
        f"event {index} of the batch is a {type(raw).__name__}; expected a NewEvent or a mapping"
    )


def prepare_batch(
    events: Iterable[EventLike],
    content_caps: Mapping[str, int],
    metadata_cap: int,
    records: bool = False,
) -> PreparedBatch:
    """Validate ``events`` and apply the caps (see :meth:`RunEventStore.prepare`).

    ``records``: the backend takes a :class:`KnownEvents` page's stored records as they are
    (else each becomes a ``NewEvent``, as any other input).

    Each event's content and metadata are encoded once, and walked at most once (not at all
    when they come with their kinds or texts: a mapping's walk at validation, a
    :class:`KnownEvents`' hints).
    """
    if type(events) is not list and isinstance(events, NewEvent | Mapping):
        raise TypeError("append takes a sequence of events; wrap a single event in a list")
    if type(events) is KnownEvents:
        return _prepare_known(events, content_caps, metadata_cap, records)
    prepared = PreparedBatch()
    keep, keep_texts, keep_owned = prepared.append, prepared.texts.append, prepared.owned.append
    small, metadata_small = min(content_caps.values()) // 4, metadata_cap // 4
    for index, raw in enumerate(events):
        if type(raw) is not dict:
            event, content_hint, metadata_hint = _event(raw, index)
        elif (usual := usual_event(raw)) is not None:  # the usual input: a dict of usual fields
            event, content_hint, metadata_hint = usual
        else:
            event, content_hint, metadata_hint = _validated(raw, index)
        content, metadata = _texts(event.__dict__, content_hint, metadata_hint)
        if len(content) > small or len(metadata) > metadata_small:  # (else it fits any cap)
            event, content, metadata = _fitted(event, content, metadata, content_caps, metadata_cap)
        keep(event)
        keep_texts((content, metadata))
        keep_owned(event is not raw)
    return prepared


def _texts(values: dict[str, Any], content_hint: Hint, metadata_hint: Hint) -> tuple[str, str]:
    """The content and metadata texts of an event's ``values``: a hint that is a text is the
    text (a stored record's, the journal's writer's); plain data is orjson's (it writes the
    rules' bytes for it), empty metadata the empty object; else the rules' encoding."""
    if type(content_hint) is str:
        content = content_hint
    elif content_hint == PLAIN:
        content = _orjson_dumps(values["content"], option=_SORT_KEYS).decode()
    else:
        content = _text(values["content"], content_hint)
    if type(metadata_hint) is str:
        metadata = metadata_hint
    elif metadata_hint == PLAIN:
        value = values["metadata"]
        metadata = _orjson_dumps(value, option=_SORT_KEYS).decode() if value else _EMPTY_OBJECT
    else:
        metadata = _text(values["metadata"], metadata_hint)
    return content, metadata


def _prepare_known(
    events: KnownEvents, content_caps: Mapping[str, int], metadata_cap: int, records: bool
) -> PreparedBatch:
    """:func:`prepare_batch` of a :class:`KnownEvents` batch: no validation, each text the
    hint's or encoded by its kind, then the caps (the same loop without the input's cases).

    A stored record stays as it is where the backend takes ``records``: at its own seq it is
    its own record (:func:`stored_record`).
    """
    prepared = PreparedBatch()
    prepared.extend(events)  # an event replaced below (a copy, a cut) takes its place
    times = events.times  # (a copy, a cut or a new event keeps its created_at: the same times)
    if times is not None and len(times) == len(events):
        prepared.times = times
    texts = prepared.texts
    keep_text = texts.append
    handed_over = events.handed_over
    owned = prepared.owned = [handed_over] * len(events)  # True too where replaced
    small, metadata_small = min(content_caps.values()) // 4, metadata_cap // 4
    for raw, (content_hint, metadata_hint) in zip(events, events.hints, strict=True):
        event: NewEvent = raw
        if not records and type(raw) is RunEvent:
            event = construct(NewEvent, _stored_values(raw))
        values = event.__dict__
        content, metadata = _texts(values, content_hint, metadata_hint)
        # (a short text fits any cap; a category without one is refused, as by _fitted)
        if (
            len(content) > small
            or len(metadata) > metadata_small
            or values["category"] not in content_caps
        ):
            event, content, metadata = _fitted(event, content, metadata, content_caps, metadata_cap)
        if event is not raw:  # the batch's own now
            prepared[len(texts)] = event
            owned[len(texts)] = True
        keep_text((content, metadata))
    return prepared


def _fitted(
    event: NewEvent, content: str, metadata: str, content_caps: Mapping[str, int], metadata_cap: int
) -> tuple[NewEvent, str, str]:
    """``event`` and its texts, cut to the caps if either text is over its cap (a text of at
    most a quarter of a cap in characters is within it in UTF-8 bytes: not encoded)."""
    values = event.__dict__
    # an llm.end may carry the call's output message: capped like messages, not like traces
    kind = "message" if values["event_type"] == "llm.end" else values["category"]
    cap = content_caps[kind]
    if (len(content) > cap // 4 and len(content.encode("utf-8")) > cap) or (
        len(metadata) > metadata_cap // 4 and len(metadata.encode("utf-8")) > metadata_cap
    ):
        return _capped(event, content, metadata, cap, metadata_cap)
    return event, content, metadata


def _capped(
    event: NewEvent, content: str, metadata: str, cap: int, metadata_cap: int
) -> tuple[NewEvent, str, str]:
    """``event`` and its texts, cut to the caps (a copy when anything is cut)."""
    original = None
    if len(content) > cap // 4 and len(content.encode("utf-8")) > cap:
        shrunk, original = fit_content(event.content, cap)
    marks = None if original is None else {"truncated": True, "original_bytes": original}
    # the marks count against the metadata cap too
    fitted = fit_metadata(event.event_type, event.metadata, metadata_cap, marks)
    if fitted is event.metadata:  # it fits (an llm.start's exact context record aside)
        return event, content, metadata
    update: dict[str, Any] = {"metadata": fitted}
    if original is not None:
        update["content"] = shrunk
        content = _text(shrunk, NOT_PLAIN)
    return event.model_copy(update=update), content, _text(fitted, NOT_PLAIN)


def stored_record(event: NewEvent, seq: int, owned: bool) -> RunEvent:
    """The stored record of prepared ``event`` at ``seq``, sharing its field values.

    An event the batch ``owned`` becomes the record itself: one object per event on the
    write path (its class turns into ``RunEvent``, which adds only ``seq``); any other (the
    caller's own ``NewEvent``) is left as it is and a new record is built.
    """
    if type(event) is RunEvent:  # from KnownEvents: a record read back from a store
        if event.seq == seq:  # stored unchanged at the seq it had: the record is itself
            return event
        return construct(RunEvent, {**event.__dict__, "seq": seq})
    if owned and type(event) is NewEvent:
        values = event.__dict__
        values["seq"] = seq
        event.__pydantic_fields_set__.add("seq")
        object.__setattr__(event, "__class__", RunEvent)
        return event  # type: ignore[return-value]  # a RunEvent now (no cast call)
    return construct(RunEvent, {**event.__dict__, "seq": seq})


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
