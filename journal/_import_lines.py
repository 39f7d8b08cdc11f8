"""Reading a line exactly as :func:`journal.transfer.export_events` writes it, cheaply.

An exported line is the canonical JSON of a stored event: every field, keys sorted, no
whitespace. :func:`exported_line` proves a line is exactly that and then takes the canonical
texts of its content and metadata from the line itself, so the target store neither walks nor
encodes them again. It answers ``None`` for any other line, and the caller reads that one the
checked way (which also says what is wrong with it): this reader never accepts a line the
checked reading would reject, and never yields other values or other texts than it.
:func:`exported_row` is that reading (:func:`exported_line` is built on it): the row a SQLite
store writes (the line's texts, its time in microseconds), and the event's field values only
where they are needed (the runs fold reads them for some types).

Why the proof holds: orjson parses the line; the line is compared with the text orjson gives
for an event object of the parsed values (the fields in sorted key order, content and metadata
encoded by orjson), and the top-level strings are checked by hand (ids, the catalog, the time
stamp's export form), none of them holding a character JSON escapes, so each one's JSON text
is itself in quotes. Equal, the line is orjson's encoding of exactly that object. orjson's text
of parsed JSON is the canonical one except for small floats (below 1e-4 its forms differ from
the json module's: ``1e-7`` for ``1e-07``; :func:`journal.encoding.same_float_text`) and except
where the rules change the data (nesting deeper than ``MAX_DEPTH``; lone surrogates and huge
ints orjson does not read as such). So content or metadata holding such a float comes with its
kind, not its text (the store encodes it by the rules); nesting near the limit sends the line
to the checked path.
"""

from __future__ import annotations

import re
from collections.abc import Container
from datetime import datetime
from typing import Any, Final, cast

import orjson

from journal._batch import Hint
from journal._sqlite_rows import to_micros
from journal.encoding import MAX_DEPTH, PLAIN_NUMBERS, same_float_text
from journal.events import _TYPE_CATEGORY, MAX_ID_LENGTH, RunEvent, _usual_type, construct

__all__ = ["EXPORTED_TIME", "exported_line", "exported_row"]

#: ``created_at`` as export writes it (UTC, ``Z``, at most microseconds): a form whose
#: ``datetime.fromisoformat`` value is exactly pydantic's.
EXPORTED_TIME: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z\Z", re.ASCII)

_SORT_KEYS: Final = orjson.OPT_SORT_KEYS
_loads, _dumps = orjson.loads, orjson.dumps
_FIELD_COUNT: Final = 9  # the eight fields of an event and its seq
_DEEP: Final = MAX_DEPTH - 4  # nesting from here on: the checked path (the rules mark depth)
#: Containers shorter than this cannot nest _DEEP levels (each level takes two characters).
_SHALLOW_CHARS: Final = 2 * _DEEP
_USUAL_TIME_CHARS: Final = len("2026-01-02T03:04:05.678901Z")

# Remembered once checked (each bounded: cleared when full, as open families take any tag)
_plain_ids: dict[str, None] = {}  # thread and run ids
_second_micros: dict[str, int] = {}  # a time stamp's first 19 characters -> µs of that second
_REMEMBERED_MAX: Final = 4096


def _plain_id(value: str) -> bool:
    """Whether ``value`` (a ``str``) is a valid ASCII id that JSON writes as it is, in quotes.

    For ASCII text this is exactly :func:`journal.events.validate_id`'s rule (printable ASCII
    has no control characters, and a space is its only whitespace); any other id, and one
    with a character JSON escapes (``"``, ``\\``), is left to the checked path.
    """
    return (
        0 < len(value) <= MAX_ID_LENGTH
        and value.isascii()
        and value.isprintable()
        and value[0] != " "
        and value[-1] != " "
        and '"' not in value
        and "\\" not in value
    )


def _new_id(value: str) -> bool:
    """:func:`_plain_id` for a thread or run id not seen yet, remembered when it is one."""
    if not _plain_id(value):
        return False
    if len(_plain_ids) >= _REMEMBERED_MAX:
        _plain_ids.clear()
    _plain_ids[value] = None
    return True


def _has_float(value: Any, depth: int) -> bool | None:
    """Whether parsed JSON ``value`` (a dict or list at ``depth``) holds a float orjson
    writes its own way (not :func:`same_float_text`); ``None`` when it nests :data:`_DEEP`
    levels or more."""
    if depth >= _DEEP:
        return None
    found: bool | None = False
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if kind is float and not same_float_text(item):
            found = True
        elif (kind is dict or kind is list) and item:
            inner = _has_float(item, depth + 1)
            if inner is None:
                return None
            found = found or inner
    return found


def _hint(value: Any, text: str) -> Hint | None:
    """What the store is told of parsed ``value`` whose orjson text is ``text``: the text
    itself when it is the canonical one, the kind when a float orjson writes its own way is
    in it (the store encodes it by the rules); ``None``: nested too deep for this path."""
    if type(value) is float:
        return text if same_float_text(value) else PLAIN_NUMBERS
    # orjson writes a float below 1e-4 as "0.0000..." or with "e-", and one of 2**63 or more
    # with "e+": a text without any of them holds none it writes its own way (a "." alone is
    # a float orjson writes as the rules do, or text); one too short or with too few
    # brackets nests no deeper than _DEEP. Each one-character test goes first: it is a
    # memchr, several times cheaper than the search for two or six characters it spares
    if (
        ("." not in text or "0.0000" not in text)
        and ("+" not in text or "e+" not in text)
        and ("-" not in text or "e-" not in text)
        and (len(text) < _SHALLOW_CHARS or text.count("{") + text.count("[") < _DEEP)
    ):
        return text
    if type(value) is not dict and type(value) is not list:
        return text  # a string or a number: a float is above
    has_float = _has_float(value, 0)
    if has_float is None:
        return None
    return PLAIN_NUMBERS if has_float else text


def _created_at(at: str) -> datetime | None:
    """The time of a time stamp in the export form, ``None`` for any other."""
    if not EXPORTED_TIME.match(at):
        return None
    try:
        return datetime.fromisoformat(at)
    except ValueError:  # the form matched, the date does not exist (February 30th)
        return None


def _micros(at: str) -> int | None:
    """:func:`_created_at` as stored (:func:`journal._sqlite_rows.to_micros`). The usual
    stamp (six digits of microseconds) costs a look-up of its second, once that second was
    read the full way: the rest of such a stamp is six ASCII digits and the ``Z``."""
    if len(at) == _USUAL_TIME_CHARS and at[19] == "." and at[26] == "Z":
        second = _second_micros.get(at[:19])
        fraction = at[20:26]
        if second is not None and fraction.isascii() and fraction.isdigit():
            return second + int(fraction)
    created_at = _created_at(at)
    if created_at is None:
        return None
    micros = to_micros(created_at)
    if len(at) == _USUAL_TIME_CHARS:
        if len(_second_micros) >= _REMEMBERED_MAX:
            _second_micros.clear()
        _second_micros[at[:19]] = micros - created_at.microsecond
    return micros


class _EveryType:
    """The container of every event type (:func:`exported_line` takes every field)."""

    def __contains__(self, event_type: object) -> bool:
        return True


_EVERY_TYPE: Final = _EveryType()


def exported_line(line: str) -> tuple[RunEvent, Hint, Hint, int] | None:
    """The event of ``line`` (a record with the seq it had), what is known of its content's
    and its metadata's canonical texts, and that seq, when ``line`` is exactly an exported
    event (a trailing newline allowed); else ``None``.
    """
    read = exported_row(line, _EVERY_TYPE)
    if read is None:
        return None
    row, fields = read  # every type's values are taken
    values = cast(dict[str, Any], fields)
    values["seq"] = seq = row[2]
    return construct(RunEvent, values), row[6], row[7], seq


def exported_row(
    line: str, whole: Container[str]
) -> tuple[list[Any], dict[str, Any] | None] | None:
    """The stored row of ``line`` when it is exactly an exported event, and, when its type
    is in ``whole``, the event's field values (but its seq); else ``None``.

    The row: ``[event_id, thread_id, seq, run_id, category, event_type, content, metadata,
    created_at]``, as :data:`journal._sqlite_schema.INSERT_EVENT_SQL` takes it (the time
    in microseconds), with the seq the line had, and in place of the content's and the
    metadata's texts what is known of them (:func:`_hint`: the canonical text, a ``str``,
    unless a float orjson writes its own way is in them).
    """
    try:
        raw = _loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(raw) is not dict or len(raw) != _FIELD_COUNT:
        return None
    # The values in the line's order: an exported line has its keys in this (sorted) order,
    # which the comparison below proves (any other line differs from the text it builds).
    category, content, at, event_id, event_type, metadata, run_id, seq, thread_id = raw.values()
    if type(seq) is not int or seq < 1 or type(metadata) is not dict:
        return None
    content_text = _dumps(content, option=_SORT_KEYS).decode()
    metadata_text = _dumps(metadata, option=_SORT_KEYS).decode() if metadata else "{}"
    end = '"}\n' if line.endswith("\n") else '"}'
    try:  # equal: the line is orjson's text of these values, its strings written unescaped
        exact = line == "".join(
            ('{"category":"', category, '","content":', content_text, ',"created_at":"', at,
             '","event_id":"', event_id, '","event_type":"', event_type, '","metadata":',
             metadata_text, ',"run_id":"', run_id, '","seq":', str(seq), ',"thread_id":"',
             thread_id, end)
        )  # fmt: skip
    except TypeError:  # a field that is no string
        return None
    if not exact:
        return None
    micros = _micros(at)
    if not (  # the ids and types seen before are remembered
        micros is not None
        and (_TYPE_CATEGORY.get(event_type) == category or _usual_type(category, event_type))
        and _plain_id(event_id)
        and (thread_id in _plain_ids or _new_id(thread_id))
        and (run_id in _plain_ids or _new_id(run_id))
    ):
        return None
    content_hint = _hint(content, content_text)
    metadata_hint = _hint(metadata, metadata_text) if metadata else metadata_text
    if content_hint is None or metadata_hint is None:
        return None
    row = [event_id, thread_id, seq, run_id, category, event_type, content_hint, metadata_hint,
           micros]  # fmt: skip
    if event_type not in whole:
        return row, None
    fields = {"event_id": event_id, "thread_id": thread_id, "run_id": run_id,
              "category": category, "event_type": event_type, "content": content,
              "metadata": metadata, "created_at": datetime.fromisoformat(at)}  # fmt: skip
    return row, fields  # (the time is valid: its micros are)
