"""The id rules: what a usable thread, run or event id is, and how new ids are made.

Re-exported by :mod:`journal.events` (their public home); no I/O, no pydantic.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import threading
import time
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "MAPPED_THREAD_PREFIX",
    "MAX_ID_LENGTH",
    "journal_thread_id",
    "new_event_id",
    "new_event_ids",
    "utcnow",
    "valid_unicode",
    "validate_id",
]

MAX_ID_LENGTH: Final = 256
_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")

_RANDOM = random.Random()  # seeded from os.urandom; reseeded in a forked child
_MS_MASK: Final = (1 << 48) - 1
_LOW_MAX: Final = (1 << 48) - 1  # the last group of the text: 12 hex digits
_START_BITS: Final = 47  # a millisecond's sequence starts in the lower half of the last group
_STEP_BITS: Final = 16  # each id adds 1..2**16 to it: at least 2**31 ids in one millisecond
_PAD_BIT: Final = 1 << 48  # above the last group: its hex text is "0x1" and the group's 12 digits


class _Sequence(threading.local):
    """This OS thread's ids of the current millisecond: their shared first 24 characters
    (the time, the version, 26 random bits) and the last one's low 48 bits."""

    ms = -1
    prefix = ""
    low = _LOW_MAX


_sequence: Final = _Sequence()


def _after_fork() -> None:
    _RANDOM.seed()
    _sequence.ms = -1  # a child never goes on with its parent's sequence


os.register_at_fork(after_in_child=_after_fork)


def new_event_id() -> str:
    """A new event id: a UUID version 7 (RFC 9562) string, time-ordered by the millisecond.

    Ids made one after the other sort together, so a store's unique index on ``event_id`` grows
    at its end instead of at random places. Within a millisecond an OS thread's ids follow one
    another (RFC 9562's "monotonic random", method 2): the first one's 74 bits after the time
    and version are random, each next one adds a random 1..65536 to its low 48 bits, so ids stay
    unique across threads and processes (each has its own random start), and the text of a new
    id is only its last group (the rest is the millisecond's). An id is an idempotency key, not
    a secret: the next id of a thread lies within 2**16 of the last one.
    """
    ms = time.time_ns() // 1_000_000
    sequence = _sequence
    low = sequence.low + _RANDOM.getrandbits(_STEP_BITS) + 1
    if ms != sequence.ms or low > _LOW_MAX:  # a new millisecond (or a full one): a new start
        sequence.prefix, low = _start(ms)
        sequence.ms = ms
    sequence.low = low
    return f"{sequence.prefix}{low:012x}"


def new_event_ids(count: int) -> list[str]:
    """``count`` new event ids: those ``count`` calls of :func:`new_event_id` one after the
    other would make (each reads the clock), with this thread's sequence read and written
    once instead of at every id."""
    sequence = _sequence
    now, prefix, low = sequence.ms, sequence.prefix, sequence.low
    clock, step = time.time_ns, _RANDOM.getrandbits
    ids: list[str] = []
    for _ in range(count):
        ms = clock() // 1_000_000
        low += step(_STEP_BITS) + 1
        if ms != now or low > _LOW_MAX:
            prefix, low = _start(ms)
            now = ms
        # ``f"{low:012x}"``: the hex digits below a 49th bit (no format spec to parse)
        ids.append(prefix + hex(low | _PAD_BIT)[3:])
    sequence.ms, sequence.prefix, sequence.low = now, prefix, low
    return ids


def _start(ms: int) -> tuple[str, int]:
    """A new start of millisecond ``ms``: the text its ids share, and the first one's low
    48 bits."""
    bits = _RANDOM.getrandbits(12 + 14 + _START_BITS)
    head = f"{ms & _MS_MASK:012x}"
    rand_a, variant = 0x7000 | bits >> 61, 0x8000 | (bits >> _START_BITS) & 0x3FFF
    return f"{head[:8]}-{head[8:]}-{rand_a:04x}-{variant:04x}-", bits & ((1 << _START_BITS) - 1)


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
