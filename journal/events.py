"""The event model: what a run journal records, and the rules every stored event obeys.

``NewEvent`` is what callers append (no ``seq``); ``RunEvent`` is what stores return (with the
per-thread ``seq`` the store assigned at commit). Validation errors are ``ValueError``
(pydantic's ``ValidationError`` is one) and name the offending field.

This is the public home of the event vocabulary; two parts live in private modules and are
re-exported here: the id rules (:mod:`journal._ids`: ``validate_id``, ``new_event_id``,
``journal_thread_id``…) and what stores report (:mod:`journal._summaries`: ``ThreadSummary``,
``RunSummary``, ``ThreadUsage``, ``UsageTotals``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from journal._ids import (
    MAPPED_THREAD_PREFIX,
    MAX_ID_LENGTH,
    journal_thread_id,
    new_event_id,
    utcnow,
    valid_unicode,
    validate_id,
)
from journal._summaries import (
    RunSummary,
    ThreadSummary,
    ThreadUsage,
    UsageTotals,
    status_from_lifecycle,
)
from journal.catalog import TAG_RE
from journal.encoding import (
    NOT_PLAIN,
    PLAIN,
    container_kind,
    jsonable_with_kind,
    plain_kind,
    to_jsonable,
)

__all__ = [
    "CATEGORIES",
    "FIXED_EVENT_TYPES",
    "MAPPED_THREAD_PREFIX",
    "MAX_EVENT_TYPE_LENGTH",
    "MAX_ID_LENGTH",
    "OPEN_FAMILIES",
    "EventFilter",
    "NewEvent",
    "RunEvent",
    "RunSummary",
    "ThreadSummary",
    "ThreadUsage",
    "UsageTotals",
    "journal_thread_id",
    "new_event_id",
    "status_from_lifecycle",
    "utcnow",
    "valid_unicode",
    "validate_id",
]

CATEGORIES: Final = frozenset({"lifecycle", "message", "trace", "middleware"})

FIXED_EVENT_TYPES: Final[dict[str, frozenset[str]]] = {
    "lifecycle": frozenset(
        {"run.start", "run.end", "run.error", "run.cancel", "run.interrupt", "run.resume"}
    ),
    "message": frozenset(
        {"message.human", "message.ai", "message.tool", "message.system", "message.remove"}
    ),
    "trace": frozenset(
        {"llm.start", "llm.end", "llm.error", "tool.start", "tool.end", "tool.error"}
    ),
    "middleware": frozenset(),
}

#: Open families ``family:<tag>`` allowed per category.
OPEN_FAMILIES: Final[dict[str, frozenset[str]]] = {
    "lifecycle": frozenset(),
    "message": frozenset(),
    "trace": frozenset({"custom"}),
    "middleware": frozenset({"middleware"}),
}

MAX_EVENT_TYPE_LENGTH: Final = 128
_TAG_RE: Final = TAG_RE  # the one tag rule (journal.catalog)


def validate_event_type(category: str, event_type: str) -> str:
    """Check ``event_type`` against the catalog of ``category``; raise ``ValueError`` if not."""
    if not isinstance(event_type, str) or not event_type:
        raise ValueError("event_type must be a non-empty string")
    if len(event_type) > MAX_EVENT_TYPE_LENGTH:
        raise ValueError(
            f"event_type is {len(event_type)} characters long; the limit is {MAX_EVENT_TYPE_LENGTH}"
        )
    if event_type in FIXED_EVENT_TYPES[category]:
        return event_type
    family, sep, tag = event_type.partition(":")
    if sep and family in OPEN_FAMILIES[category] and _TAG_RE.match(tag):
        return event_type
    allowed = sorted(FIXED_EVENT_TYPES[category]) + [f"{f}:<tag>" for f in OPEN_FAMILIES[category]]
    raise ValueError(
        f"event_type {event_type!r} is not valid for category {category!r}; expected one of "
        f"{', '.join(allowed)} (a tag is letters, digits and _ . - / :)"
    )


class NewEvent(BaseModel):
    """An event to append: every field of a stored event except ``seq``.

    ``content`` and ``metadata`` are turned into plain JSON data by the canonical encoding
    (:mod:`journal.encoding`) when the event is built, so any Python value is accepted.
    """

    model_config = ConfigDict(frozen=False, extra="forbid")

    event_id: str = Field(default_factory=new_event_id)
    thread_id: str
    run_id: str
    category: str
    event_type: str
    content: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("event_id", "thread_id", "run_id", mode="before")
    @classmethod
    def _check_id(cls, value: object, info: Any) -> str:
        if isinstance(value, uuid.UUID):
            value = str(value)
        return validate_id(value, info.field_name)

    @field_validator("category")
    @classmethod
    def _check_category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(
                f"category {value!r} is unknown; expected one of {', '.join(sorted(CATEGORIES))}"
            )
        return value

    @field_validator("content", mode="before")
    @classmethod
    def _encode_content(cls, value: Any) -> Any:
        return to_jsonable(value)

    @field_validator("metadata", mode="before")
    @classmethod
    def _encode_metadata(cls, value: Any) -> Any:
        if value is None:
            return {}
        encoded = to_jsonable(value)
        if not isinstance(encoded, dict):
            raise ValueError("metadata must be a mapping")
        return encoded

    @field_validator("created_at")
    @classmethod
    def _aware_utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("created_at must be timezone-aware")
        try:
            return value.astimezone(UTC)
        except OverflowError:  # e.g. year 1 at +05:00 is before datetime.min in UTC
            raise ValueError(f"created_at {value.isoformat()} is out of range in UTC") from None

    @model_validator(mode="after")
    def _check_event_type(self) -> NewEvent:
        validate_event_type(self.category, self.event_type)
        return self

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> NewEvent:
        """``NewEvent(**raw)``: the same event, and the same errors, fast for usual input.

        Fields of the usual kinds (string ids, a catalog event type seen before, plain JSON
        content and metadata, a UTC ``created_at``) are checked by hand and the event is built
        without pydantic's validation pass; anything else takes the full validation.
        """
        return prepare_mapping(raw)[0]


_FIELDS: Final = frozenset(NewEvent.model_fields)
E = TypeVar("E", bound=NewEvent)
_FIELD_SET: Final = set(NewEvent.model_fields)  # copied into each event built by hand
#: Event types already validated, each with its category (bounded).
_TYPE_CATEGORY: dict[str, str] = {}
_now: Final = datetime.now


_GOOD_IDS: dict[str, None] = {}  # thread and run ids seen valid lately (bounded)
_GOOD_IDS_MAX: Final = 4096


def _usual_id(value: object) -> bool:
    """Whether ``value`` is an id of the usual kind (a valid plain ``str``; else the full
    validation decides and says why)."""
    return (
        type(value) is str
        and 0 < len(value) <= MAX_ID_LENGTH
        and value.isprintable()
        and not value[0].isspace()
        and not value[-1].isspace()
        and valid_unicode(value)
    )


def _good_id(value: object) -> bool:
    """:func:`_usual_id`, remembered for thread and run ids (each comes again and again)."""
    if type(value) is not str:  # first: an unhashable value must not reach the dict
        return False
    if value in _GOOD_IDS:
        return True
    if not _usual_id(value):
        return False
    if len(_GOOD_IDS) >= _GOOD_IDS_MAX:
        _GOOD_IDS.clear()
    _GOOD_IDS[value] = None
    return True


# The four slots of a pydantic model, set directly: what ``model_construct`` sets, without
# its per-field bookkeeping (and half the cost of ``object.__setattr__`` per slot).
_set_values = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_new_object = object.__new__  # BaseModel has no __new__ of its own


def construct(cls: type[E], values: dict[str, Any]) -> E:
    """An event of ``cls`` from already-validated values for every field, not re-validated.

    ``model_construct`` minus its per-field bookkeeping: validation and ``model_construct``
    are the hot cost of reads and appends. Only valid for models without private attributes
    or post-init hooks (checked, else ``model_construct``). ``values`` becomes the event's
    own field dict (not copied).
    """
    if cls is not NewEvent and cls is not RunEvent and not _plain_model(cls):
        return cls.model_construct(**values)  # pragma: no cover - a model with private state
    event = _new_object(cls)
    _set_values(event, values)
    _set_fields_set(event, set(values))
    _set_extra(event, None)
    _set_private(event, None)
    return event


@functools.cache
def _plain_model(cls: type[BaseModel]) -> bool:
    return (
        not cls.__private_attributes__
        and cls.model_post_init is BaseModel.model_post_init
        and cls.model_config.get("extra") != "allow"
    )


def usual_event(raw: Mapping[str, Any]) -> tuple[NewEvent, int, int] | None:
    """``NewEvent(**raw)`` and the :func:`plain_kind` of its content and metadata when every
    field of ``raw`` is of a usual kind (checked by hand, no pydantic pass); else ``None``
    (the full validation decides, and says why).

    Usual: string ids (thread and run ids seen valid lately are remembered), a catalog event
    type seen before with its category, plain JSON content and metadata (or values the
    encoding turns into it), a UTC ``created_at`` or none.
    """
    if not raw.keys() <= _FIELDS:
        return None
    get = raw.get
    event_id = get("event_id")
    if event_id is None:
        if "event_id" in raw:
            return None  # an explicit None: the full validation says why
        event_id = new_event_id()  # valid by construction
    elif not _usual_id(event_id):
        return None
    thread_id, run_id = get("thread_id"), get("run_id")
    # the type first: an unhashable value must not reach the dict
    if type(thread_id) is not str or (thread_id not in _GOOD_IDS and not _good_id(thread_id)):
        return None
    if type(run_id) is not str or (run_id not in _GOOD_IDS and not _good_id(run_id)):
        return None
    category, event_type = get("category"), get("event_type")
    if type(event_type) is not str or type(category) is not str:
        return None
    if _TYPE_CATEGORY.get(event_type) != category and not _usual_type(category, event_type):
        return None
    created_at = get("created_at")
    if created_at is None and "created_at" not in raw:
        created_at = _now(UTC)
    elif type(created_at) is not datetime or created_at.tzinfo is not UTC:
        return None
    metadata = get("metadata")
    if metadata is None:
        metadata, metadata_kind = {}, PLAIN
    else:
        metadata_kind = container_kind(metadata, 0) if type(metadata) is dict else NOT_PLAIN
        if metadata_kind == NOT_PLAIN:
            metadata, metadata_kind = jsonable_with_kind(metadata)
            if type(metadata) is not dict:
                return None
    content = get("content")
    content_kind = container_kind(content, 0) if type(content) is dict else NOT_PLAIN  # usual
    if content_kind == NOT_PLAIN:
        content, content_kind = jsonable_with_kind(content)
    fields = {
        "event_id": event_id,
        "thread_id": thread_id,
        "run_id": run_id,
        "category": category,
        "event_type": event_type,
        "content": content,
        "metadata": metadata,
        "created_at": created_at,
    }
    event = _new_object(NewEvent)  # construct(NewEvent, fields), without its call
    _set_values(event, fields)
    _set_fields_set(event, _FIELD_SET.copy())
    _set_extra(event, None)
    _set_private(event, None)
    return event, content_kind, metadata_kind


def _usual_type(category: str, event_type: str) -> bool:
    """Whether ``event_type`` is valid for ``category`` (remembered; else the full
    validation says why)."""
    if category not in CATEGORIES:
        return False
    try:
        validate_event_type(category, event_type)
    except ValueError:
        return False
    if len(_TYPE_CATEGORY) >= _GOOD_IDS_MAX:
        _TYPE_CATEGORY.clear()
    _TYPE_CATEGORY[event_type] = category  # the catalog gives each type one category
    return True


def prepare_mapping(raw: Mapping[str, Any]) -> tuple[NewEvent, int, int]:
    """``NewEvent(**raw)`` (same event, same errors; fast for usual input) and the
    :func:`plain_kind` of its content and metadata."""
    usual = usual_event(raw)
    if usual is not None:
        return usual
    event = NewEvent(**raw)
    return event, plain_kind(event.content), plain_kind(event.metadata)


class RunEvent(NewEvent):
    """A stored event: a ``NewEvent`` plus the per-thread ``seq`` assigned at commit."""

    seq: int = Field(ge=1)


class EventFilter(BaseModel):
    """Keyword filters shared by ``read``/``count``/``iter_events``.

    Each is ``None`` (no filtering) or a collection of accepted values; an empty collection
    matches nothing.
    """

    model_config = ConfigDict(frozen=True)

    category: frozenset[str] | None = None
    event_type: frozenset[str] | None = None
    run_id: frozenset[str] | None = None

    def matches(self, event: NewEvent) -> bool:
        """Whether ``event`` passes every filter."""
        return (
            (self.category is None or event.category in self.category)
            and (self.event_type is None or event.event_type in self.event_type)
            and (self.run_id is None or event.run_id in self.run_id)
        )

    @property
    def matches_nothing(self) -> bool:
        """True when some filter is an empty collection."""
        return any(f is not None and not f for f in (self.category, self.event_type, self.run_id))
