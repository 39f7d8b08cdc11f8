"""Per-category content caps: oversize ``content`` is shrunk to fit, as valid JSON.

The rule: when the canonical encoding of ``content`` is larger than the category's cap (in
UTF-8 bytes), every string in it is cut to the longest common length that makes the whole fit
(cut on a character boundary, with ``…`` appended); the structure (keys, list items, message
``type``/``data``) is kept, so a truncated message still turns back into a message. If even
empty strings do not fit, ``content`` becomes ``{"$truncated": "<prefix of the JSON text>"}``.
A truncated event gets ``metadata.truncated = true`` and ``metadata.original_bytes``.

``metadata`` has a cap too (``DEFAULT_METADATA_CAP``, 64 KiB): oversize metadata is shrunk by
the same rule and marked ``metadata_truncated = true`` and ``metadata_original_bytes``. One
entry is exempt: the ``context`` record of an ``llm.start`` event (ids and digests of the
model's input, which replay depends on) is always kept whole, whatever its size; the cap
applies to the other entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from journal.encoding import dumps_plain as dumps

__all__ = [
    "DEFAULT_CONTENT_CAPS",
    "DEFAULT_METADATA_CAP",
    "ContentCaps",
    "fit_content",
    "fit_metadata",
    "utf8_prefix",
]

#: Default caps in bytes: trace events 16 KiB, every other category 1 MiB.
DEFAULT_CONTENT_CAPS: Final[Mapping[str, int]] = {
    "trace": 16 * 1024,
    "lifecycle": 1024 * 1024,
    "message": 1024 * 1024,
    "middleware": 1024 * 1024,
}

#: Default cap of an event's ``metadata`` in bytes (an ``llm.start`` context record excepted).
DEFAULT_METADATA_CAP: Final = 64 * 1024
#: The metadata entry of an ``llm.start`` event that no cap ever cuts.
EXACT_METADATA: Final[Mapping[str, str]] = {"llm.start": "context"}

ContentCaps = Mapping[str, int]
_ELLIPSIS: Final = "…"


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding has at most ``max_bytes`` bytes."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[: max(max_bytes, 0)].decode("utf-8", errors="ignore")


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + _ELLIPSIS
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v, limit) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def _surely_fits(value: Any, budget: int) -> bool:
    """Whether a cheap upper bound of the UTF-8 size of ``dumps(value)`` is within ``budget``.

    A JSON-escaped character takes at most 6 bytes, a number or literal at most 24 (ints beyond
    18 digits and anything not plain JSON data take the exact path).
    """
    stack = [value]
    total = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += 6 * len(item) + 2
        elif kind is dict:
            total += 2 + 2 * len(item)  # braces, colons, commas
            for key, child in item.items():
                if type(key) is not str:
                    return False
                total += 6 * len(key) + 2
                stack.append(child)
        elif kind is list:
            total += 2 + len(item)
            stack.extend(item)
        elif item is None or kind is bool or kind is float:
            total += 24
        elif kind is int and -(10**18) < item < 10**18:
            total += 20
        else:
            return False
        if total > budget:
            return False
    return True


def fit_content(content: Any, cap: int) -> tuple[Any, int | None]:
    """Return ``(content, None)`` if it fits ``cap`` bytes, else ``(shrunk, original_bytes)``.

    ``content`` must already be plain JSON data (see :func:`journal.encoding.to_jsonable`).
    """
    if _surely_fits(content, cap):
        return content, None
    size = len(dumps(content).encode("utf-8"))
    if size <= cap:
        return content, None
    low, high = 0, _longest_string(content)
    best: Any = None
    while low <= high:  # binary search on the common string length
        mid = (low + high) // 2
        candidate = _cut_strings(content, mid)
        if len(dumps(candidate).encode("utf-8")) <= cap:
            best, low = candidate, mid + 1
        else:
            high = mid - 1
    if best is None:
        overhead = len(dumps({"$truncated": ""}).encode("utf-8"))
        text = dumps(content)
        prefix = utf8_prefix(text, cap - overhead)
        while len(dumps({"$truncated": prefix}).encode("utf-8")) > cap and prefix:
            prefix = prefix[:-1]  # JSON escaping can grow the text; shrink until it fits
        best = {"$truncated": prefix}
    return best, size


def fit_metadata(
    event_type: str, metadata: dict[str, Any], cap: int, marks: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``metadata`` with ``marks`` (a cut content's, say) as is if they fit ``cap`` bytes,
    else shrunk by the content rule and marked, so that the result, marks included, fits.

    The exact record of ``EXACT_METADATA`` (an ``llm.start`` ``context``) is neither counted
    nor cut. The result fits, so it is its own result: metadata fitted once is never cut again
    (a stored record appended again, copied or imported, keeps its metadata).
    """
    extra = dict(marks or {})
    exempt = EXACT_METADATA.get(event_type)
    rest = {**metadata, **extra}
    if exempt is not None and exempt in metadata:
        rest = {k: v for k, v in rest.items() if k != exempt}
    if _surely_fits(rest, cap) or len(dumps(rest).encode("utf-8")) <= cap:
        return {**metadata, **extra} if extra else metadata
    own = {**extra, "metadata_truncated": True, "metadata_original_bytes": 0}
    reserve = len(dumps(own).encode("utf-8")) + 20  # the byte count's digits, a comma
    plain = {k: v for k, v in rest.items() if k not in extra}
    fitted, original = fit_content(plain, max(cap - reserve, 0))
    out = dict(fitted)
    if exempt is not None and exempt in metadata:
        out[exempt] = metadata[exempt]
    out["metadata_truncated"] = True
    out["metadata_original_bytes"] = (
        original if original is not None else len(dumps(plain).encode("utf-8"))
    )
    out.update(extra)
    return out
