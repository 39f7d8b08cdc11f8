"""The id rules: what a usable thread, run or event id is, and how new ids are made.

Re-exported by :mod:`journal.events` (their public home); no I/O, no pydantic.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import time
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "MAPPED_THREAD_PREFIX",
    "MAX_ID_LENGTH",
    "journal_thread_id",
    "new_event_id",
    "utcnow",
    "valid_unicode",
    "validate_id",
]

MAX_ID_LENGTH: Final = 256
_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")

_RANDOM = random.Random()  # seeded from os.urandom; reseeded in a forked child
os.register_at_fork(after_in_child=_RANDOM.seed)
_MS_MASK: Final = (1 << 48) - 1
_LOW_MASK: Final = (1 << 62) - 1


def new_event_id() -> str:
    """A new event id: a UUID version 7 (RFC 9562) string, time-ordered by the millisecond.

    Ids made one after the other sort together, so a store's unique index on ``event_id`` grows
    at its end instead of at random places; 74 random bits keep them unique across processes.
    """
    random_bits = _RANDOM.getrandbits(74)
    value = (
        ((time.time_ns() // 1_000_000) & _MS_MASK) << 80
        | 0x7 << 76
        | (random_bits >> 62) << 64
        | 0b10 << 62
        | random_bits & _LOW_MASK
    )
    text = f"{value:032x}"  # str(uuid.UUID(int=value)), without building the UUID
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def utcnow() -> datetime:
    """The current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def valid_unicode(value: str) -> bool:
    """Whether ``value`` has no lone surrogate, so it encodes as UTF-8 (every backend needs it)."""
    return value.isascii() or _SURROGATE_RE.search(value) is None


def validate_id(value: object, field: str) -> str:
    """Return ``value`` if it is a usable id, else raise ``ValueError`` naming ``field``.

    An id is a non-empty string of at most ``MAX_ID_LENGTH`` characters with no control
    characters, no lone surrogates (invalid Unicode) and no leading or trailing whitespace.
    """
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{field} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{field} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}")
    if _CONTROL_RE.search(value):
        raise ValueError(f"{field} must not contain control characters")
    if not valid_unicode(value):
        raise ValueError(f"{field} must be valid Unicode (it contains a lone surrogate)")
    if value != value.strip():
        raise ValueError(f"{field} must not start or end with whitespace")
    return value


#: Prefix of the journal id an unusable thread id is mapped to (see :func:`journal_thread_id`).
MAPPED_THREAD_PREFIX: Final = "thread-sha256:"


def journal_thread_id(value: str) -> str:
    """``value`` if it is a valid id, else a stable valid id made from it.

    A LangGraph ``thread_id`` may be any string; a journal id may not (see
    :func:`validate_id`). An unusable one (surrounding whitespace, control characters, lone
    surrogates, over ``MAX_ID_LENGTH`` characters, empty) maps to ``thread-sha256:<hex>``, the
    SHA-256 of its UTF-8 bytes (lone surrogates escaped): the same input always maps to the
    same id, and two inputs share one only if they are equal or one of them is itself a
    mapped id chosen on purpose.
    """
    try:
        return validate_id(value, "thread_id")
    except ValueError:
        raw = value.encode("utf-8", errors="surrogatepass")
        return MAPPED_THREAD_PREFIX + hashlib.sha256(raw).hexdigest()
