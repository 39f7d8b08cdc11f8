"""Kind hints known by construction: what the journal knows of the metadata it builds.

The writer hands the store each event's metadata with its :func:`journal.encoding.plain_kind`
(the store's ``prepare`` then encodes it without walking it). Metadata the callback path builds
itself has ASCII constant keys and values it knows (ids, spans, steps, a call's duration), so
its kind follows from a few of those values, checked here where they are made, instead of a
walk of the whole dict on the writer thread. A hint is always true: a value this cannot vouch
for makes it ``NOT_PLAIN`` ("not known"), and the writer walks the metadata as before.
"""

from __future__ import annotations

import math
from typing import Any, Final

from journal.encoding import NOT_PLAIN, PLAIN, PLAIN_NUMBERS, same_float_text

__all__ = ["combined_kind", "scalars_kind", "span_kind"]

_INT64_LIMIT: Final = 2**63


def scalars_kind(*values: Any) -> int:
    """``PLAIN`` when every value is ``None``, a bool, an ASCII ``str`` or an ``int`` of at
    most 63 bits; else ``NOT_PLAIN`` (not known: the writer walks the data).

    The kind hint of metadata the journal builds itself (its keys are ASCII constants): such
    values are plain JSON that orjson writes exactly as the encoding rules do, so a dict of
    them has this :func:`journal.encoding.plain_kind`. Anything else (a non-ASCII text, a
    subclass, a float) is left to the walk, which finds its true kind.
    """
    for value in values:
        kind = type(value)
        if kind is str:
            if not value.isascii():
                return NOT_PLAIN
        elif kind is int:
            if not -_INT64_LIMIT < value < _INT64_LIMIT:
                return NOT_PLAIN
        elif value is not None and kind is not bool:
            return NOT_PLAIN
    return PLAIN


def span_kind(value: float) -> int:
    """The ``plain_kind`` of a float (a call's ``latency_ms`` / ``duration_ms``)."""
    if type(value) is not float or not math.isfinite(value):
        return NOT_PLAIN
    return PLAIN if same_float_text(value) else PLAIN_NUMBERS


def combined_kind(*kinds: int) -> int:
    """The kind of a dict whose parts have ``kinds``: ``NOT_PLAIN`` if one is not known,
    else the largest."""
    return min(kinds) and max(kinds)
