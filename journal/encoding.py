"""One canonical JSON encoding of event ``content`` and ``metadata``, shared by every backend.

Any Python value encodes; an append never fails because of its payload. The rule:

* ``None``, ``bool``, ``int``, ``str`` stay as they are; finite ``float`` too. Two exceptions,
  because no backend could store them: lone surrogates (``"\\ud800"``, not valid Unicode, so
  not encodable as UTF-8) become U+FFFD in strings and keys, and an ``int`` too long for
  Python's decimal conversion (``sys.get_int_max_str_digits()``) becomes ``{"$int": "<hex>"}``.
* Non-finite floats become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has
  no such numbers, and PostgreSQL's JSONB rejects them).
* ``datetime`` / ``date`` / ``time`` become ISO 8601 strings; naive datetimes are kept naive.
* ``UUID``, ``Decimal``, ``Path`` and ``Enum`` members become ``str(value)`` (an ``Enum``
  becomes the encoding of its ``.value``).
* ``bytes`` / ``bytearray`` / ``memoryview`` become ``{"$bytes": "<base64>"}``.
* ``list``, ``tuple`` and other sequences become lists; ``set`` / ``frozenset`` become lists
  sorted by their canonical encoding.
* Mappings become objects; non-string keys become ``str(key)``.
* LangChain messages become ``message_to_dict`` form (``{"type", "data"}``), which
  ``messages_from_dict`` turns back into an equal message; other LangChain ``Serializable``
  objects (documents, prompt values) and pydantic models become ``model_dump()``; dataclasses
  become their fields.
* A cycle becomes ``{"$cycle": "<type name>"}``; nesting deeper than ``MAX_DEPTH`` becomes
  ``{"$depth": "<type name>"}`` (such a marker, the rules' own output, stays as it is, so that
  encoding encoded data changes nothing); anything else becomes
  ``{"$repr": "<repr, at most 200 chars>", "$type": "<module.qualname>"}``.

Objects are emitted with sorted keys and no whitespace, so equal values encode to equal text.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import decimal
import enum
import json
import math
import pathlib
import re
import sys
import uuid
from collections.abc import Mapping
from typing import Any, Final, cast

import orjson

__all__ = [
    "MAX_DEPTH",
    "NOT_PLAIN",
    "PLAIN",
    "PLAIN_NUMBERS",
    "Plain",
    "container_kind",
    "dumps",
    "dumps_plain",
    "dumps_record",
    "encode_plain",
    "jsonable_with_kind",
    "loads",
    "plain",
    "plain_kind",
    "same_float_text",
    "to_jsonable",
]

MAX_DEPTH = 64
_REPR_LIMIT = 200
_SURROGATES: Final = re.compile("[\ud800-\udfff]")
# Ints up to this many bits have fewer decimal digits (~602) than any allowed
# sys.get_int_max_str_digits() (>= 640): only bigger ones need the conversion checked.
_SAFE_INT_BITS: Final = 2000


def _type_name(value: object) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"


def _text(value: str) -> str:
    """``value`` with lone surrogates (unencodable as UTF-8) replaced by U+FFFD."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", value)
    return value


def _int(value: int) -> int | dict[str, str]:
    if value.bit_length() > _SAFE_INT_BITS:
        try:
            str(value)
        except ValueError:  # more digits than the interpreter converts to text
            return {"$int": hex(value)}
    return int(value)


def _plain_scalar(value: object) -> bool:
    """Whether ``value`` is already canonical JSON as is (float is not: NaN, Infinity)."""
    kind = type(value)
    if kind is str:
        return cast(str, value).isascii()
    if kind is int:
        return cast(int, value).bit_length() <= _SAFE_INT_BITS
    return value is None or kind is bool


def _float(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _marked_repr(value: object) -> dict[str, str]:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not fail an append
        text = "<unrepresentable>"
    return {"$repr": _text(text[:_REPR_LIMIT]), "$type": _text(_type_name(value))}


def _sort_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class Plain(dict[str, Any]):
    """A mapping known to be plain JSON data already: :func:`to_jsonable`'s own output.

    :func:`to_jsonable` copies it shallowly instead of walking it again, so data the library
    encoded once (a message it journals) is not encoded twice; ``kind`` is its
    :func:`plain_kind`. Made only by :func:`plain`.
    """

    kind: int = 2


def plain(value: Any) -> Any:
    """``to_jsonable(value)``, marked so that a later ``to_jsonable`` does not walk it again."""
    # plain data (the usual case) is walked once: its kind is the one to_jsonable would find
    kind = NOT_PLAIN if type(value) is Plain else plain_kind(value)
    encoded = value if kind else to_jsonable(value)
    if type(encoded) is not dict:
        return encoded
    marked = Plain(encoded)
    marked.kind = kind or plain_kind(encoded)
    return marked


def _valid_text(value: str) -> bool:
    return _SURROGATES.search(value) is None


#: What :func:`plain_kind` says of a value.
NOT_PLAIN: Final = 0  # the rules change something: encode it with to_jsonable
PLAIN: Final = 1  # plain JSON orjson writes as the rules do (see same_float_text)
PLAIN_NUMBERS: Final = 2  # plain JSON with numbers only the json module formats canonically
_INT64_BITS: Final = 63
_INT64_LIMIT: Final = 2**_INT64_BITS  # |int| below it: at most _INT64_BITS bits
#: Below this magnitude (zero aside) orjson writes floats its own way (``1e-7``, ``0.00001``)
#: where the rules, the json module, write ``repr`` (``1e-07``, ``1e-05``).
_ORJSON_FLOAT_MIN: Final = 1e-4
#: From this magnitude up a float may be what orjson reads for an int beyond 64 bits (the json
#: module reads an int): such data is not plain in orjson's sense.
_ORJSON_FLOAT_MAX: Final = 2.0**63
#: Floats that probe the forms where float formatters differ: exponent signs and digits,
#: the switch to exponent notation, the shortest round-trip digits, the bounds.
_FLOAT_PROBES: Final = (0.0, -0.0, 1e-4, 0.00012345678901234, 0.1, 0.3, 2 / 3, 12.345, 100.0,
                        1e15, 123456789012345.6, 1e16, 1234567890123456.8, 1e22, 1.5e300,
                        5e-4, -2.5e-4, 1.7976931348623157e308, -9007199254740993.0)  # fmt: skip


def _orjson_floats_agree() -> bool:
    """Whether this orjson writes every probe float as the json module does (``repr``)."""
    return all(orjson.dumps(x) == repr(x).encode() for x in _FLOAT_PROBES)


#: Whether orjson writes floats from :data:`_ORJSON_FLOAT_MIN` up as the rules do (another
#: orjson version might not: then every float is formatted by the json module).
_FAST_FLOATS: Final = _orjson_floats_agree()


def same_float_text(value: float) -> bool:
    """Whether orjson and the rules agree on the finite float ``value``: orjson writes it
    exactly as the rules do, and its value read from that text is the json module's. True
    for zero and magnitudes from :data:`_ORJSON_FLOAT_MIN` below :data:`_ORJSON_FLOAT_MAX`
    (a property test holds orjson to it)."""
    return _FAST_FLOATS and (value == 0.0 or _ORJSON_FLOAT_MIN <= abs(value) < _ORJSON_FLOAT_MAX)


def _scalar_kind(value: Any, kind: type) -> int | None:
    """The kind of a scalar; ``None`` when ``value`` is no scalar (a container, or else)."""
    if kind is str:
        return PLAIN if value.isascii() or _SURROGATES.search(value) is None else NOT_PLAIN
    if kind is int:
        bits = cast(int, value).bit_length()
        if bits <= _INT64_BITS:
            return PLAIN
        return PLAIN_NUMBERS if bits <= _SAFE_INT_BITS else NOT_PLAIN
    if kind is bool or value is None:
        return PLAIN
    if kind is float:
        if not math.isfinite(value):
            return NOT_PLAIN
        return PLAIN if same_float_text(value) else PLAIN_NUMBERS
    if kind is Plain:
        return cast(int, value.kind)
    return None


def plain_kind(root: Any) -> int:
    """Whether ``root`` is canonical JSON data as is (the rules above change nothing in it),
    and whether it holds numbers only the json module formats canonically.

    One tight pass over exact types; anything unusual (a subclass, a tuple, a non-finite float,
    a lone surrogate, a huge int, deep nesting, a cycle) answers ``NOT_PLAIN``.
    """
    kind = type(root)
    if kind is dict or kind is list:
        return _container_kind(root, 0)
    return _scalar_kind(root, kind) or NOT_PLAIN


def _is_depth_marker(value: Any) -> bool:
    """Whether ``value`` is exactly the marker the rules put in place of data too deep."""
    if type(value) is not dict or len(value) != 1:
        return False
    name = value.get("$depth")
    return type(name) is str and (name.isascii() or _valid_text(name))


def _container_kind(value: dict[Any, Any] | list[Any], depth: int, keys_plain: bool = False) -> int:
    """:func:`plain_kind` of a dict or a list at nesting ``depth`` (recursion stops at
    ``MAX_DEPTH``: a call per container costs less than a stack of them).

    ``keys_plain``: the caller knows ``value``'s keys are ASCII ``str`` (a model's dump of
    a known schema): only its values are walked."""
    if depth >= MAX_DEPTH:
        return PLAIN if _is_depth_marker(value) else NOT_PLAIN
    result = PLAIN
    if type(value) is dict:  # dicts and lists share one loop over their values
        if not keys_plain:
            for key in value:
                if type(key) is not str or not (key.isascii() or _valid_text(key)):
                    return NOT_PLAIN
        items: Any = value.values()
    else:
        items = value
    for item in items:
        item_kind = type(item)
        if item_kind is str:  # the usual leaves first, without a call
            if item.isascii():
                continue
        elif item_kind is int:
            if -_INT64_LIMIT < item < _INT64_LIMIT:
                continue
        elif item_kind is dict or item_kind is list:
            if item:  # an empty one is plain at any depth below the limit
                inner = _container_kind(item, depth + 1)
                if inner == NOT_PLAIN:
                    return NOT_PLAIN
                if inner > result:
                    result = inner
            elif depth + 1 >= MAX_DEPTH:  # an empty one too deep: the rules mark it
                return NOT_PLAIN
            continue
        elif item is None or item_kind is bool:
            continue
        found = _scalar_kind(item, item_kind)
        if not found:  # None (no scalar: a tuple, a set, an object...) or NOT_PLAIN
            return NOT_PLAIN
        if found > result:
            result = found
    return result


#: :func:`plain_kind` of a ``dict`` or a ``list`` (exact types) is ``container_kind(value, 0)``:
#: the hot callers (an event's content and metadata) skip the dispatch; ``container_kind(value,
#: depth, True)`` is the kind of a dict at ``depth`` whose keys are known ASCII ``str``.
container_kind: Final = _container_kind


def encode_plain(value: Any, kind: int) -> str:
    """The canonical text of ``value``, whose :func:`plain_kind` is ``kind`` (not NOT_PLAIN).

    ``PLAIN`` data (no big int, no float orjson writes its own way: :func:`same_float_text`)
    a fast encoder writes (its output for such data is exactly the json module's: same
    escapes, same key order, same numbers, no spaces); otherwise the json module.
    """
    if kind == PLAIN:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except (TypeError, orjson.JSONEncodeError):  # pragma: no cover - plain data encodes
            pass
    return _canonical(value)


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Data that already is plain JSON is returned as is (not copied); anything else is encoded
    into new containers by the rules above.
    """
    if type(value) is Plain:
        return dict(value)
    if plain_kind(value):
        return value
    return _encode(value, 0, set())


def jsonable_with_kind(value: Any) -> tuple[Any, int]:
    """``to_jsonable(value)`` and its :func:`plain_kind` (never ``NOT_PLAIN``), walking plain
    data once."""
    if type(value) is Plain:
        return dict(value), value.kind
    kind = plain_kind(value)
    if kind == NOT_PLAIN:
        value = to_jsonable(value)
        kind = plain_kind(value)
    return value, kind


def _encode(value: Any, depth: int, active: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, enum.Enum):
        return _encode(value.value, depth, active)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal | pathlib.PurePath):
        return _text(str(value))  # a path may hold surrogate-escaped bytes
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if depth >= MAX_DEPTH:
        return dict(value) if _is_depth_marker(value) else {"$depth": _type_name(value)}
    marker = id(value)
    if marker in active:
        return {"$cycle": _type_name(value)}
    active.add(marker)
    try:
        return _encode_container(value, depth + 1, active)
    finally:
        active.discard(marker)


def _encode_container(value: Any, depth: int, active: set[int]) -> Any:
    if type(value) is Plain:
        return dict(value)
    if isinstance(value, Mapping):
        if all(type(k) is str and k.isascii() and _plain_scalar(v) for k, v in value.items()):
            return dict(value)  # flat and plain: no per-item walk (ids, usage, args)
        return {_text(str(k)): _encode(v, depth, active) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(_plain_scalar(v) for v in value):
            return list(value)
        return [_encode(v, depth, active) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_encode(v, depth, active) for v in value), key=_sort_key)
    dumped = _dump_object(value)
    if dumped is not _NOTHING:
        return _encode(dumped, depth, active)
    return _marked_repr(value)


_NOTHING = object()


def _dump_object(value: Any) -> Any:
    """Turn a known rich object into plain containers, or return ``_NOTHING``."""
    # A LangChain message exists only once LangChain is loaded: never load it to find out.
    messages = sys.modules.get("langchain_core.messages")
    if messages is not None and isinstance(value, messages.BaseMessage):
        return messages.message_to_dict(value)
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        model_dump = getattr(value, "model_dump", None)
        if callable(model_dump) and not isinstance(value, type):
            return model_dump()
    except Exception:  # an object that fails to dump becomes a marked repr
        return _NOTHING
    return _NOTHING


def dumps(value: Any) -> str:
    """Encode ``value`` to canonical JSON text: sorted keys, no whitespace, UTF-8 kept as is."""
    return _canonical(to_jsonable(value))


def dumps_record(fields: Mapping[str, Any]) -> str:
    """The canonical JSON of an object of ``fields`` (string keys), each value encoded as a
    document of its own: its depth counts from itself (an event's content nests as deep as
    a store takes it, one level more in the line). Equal to :func:`dumps` of ``fields``
    wherever no value nests ``MAX_DEPTH`` levels."""
    items = ",".join(f"{_canonical(key)}:{dumps(fields[key])}" for key in sorted(fields))
    return "{" + items + "}"


# One shared encoder: json.dumps with options builds a new one per call, a hot-path cost.
_ENCODER = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
)


def _canonical(plain: Any) -> str:
    return _ENCODER.encode(plain)


def dumps_plain(value: Any) -> str:
    """The text :func:`dumps` gives for ``value``, fast when ``value`` is plain JSON data.

    Meant for data that already went through :func:`to_jsonable` (an event's validated
    ``content``/``metadata``); anything else takes :func:`dumps`, so it never fails either.
    """
    kind = plain_kind(value)
    if kind == NOT_PLAIN:  # not plain after all (e.g. assigned after validation)
        return dumps(value)
    return encode_plain(value, kind)


def loads(text: str | bytes) -> Any:
    """Decode JSON text written by :func:`dumps` (or any JSON text): the json module's value.

    orjson reads it when orjson's value re-encodes to the very text, which holds for canonical
    text without floats in exponent form: then the values agree (orjson reads an int beyond
    64 bits as a float, which re-encodes differently). Anything else (other text, ``NaN``,
    lone surrogates, deep nesting…) the json module reads, with its errors.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        value = orjson.loads(raw)
        if orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == raw:
            return value
    except (orjson.JSONDecodeError, TypeError):
        pass
    return json.loads(text)
