"""Pages bounded in bytes as well as in events: what an HTTP response or a stream batch holds.

A page read by count alone can be huge (a thousand 1 MB messages). The plans here read in
chunks sized from what they have seen and stop once the page's events reach ``max_bytes``
(measured on their canonical JSON ``content`` and ``metadata``); a page always holds at least
one event, so a cursor that follows ``has_more`` walks every event, however large. Memory per
page stays within about ``max_bytes`` plus one chunk. A backward page can leave events out
(``keep``): those are read past, and neither fill the page nor count towards its bytes.
:class:`ScanChunks` sizes the reads of a scan that keeps no events (search, the per-call
series) the same way, by the text of the events it has seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from history._reads import Plan, Read
from journal.encoding import dumps_plain
from journal.events import RunEvent

__all__ = [
    "DEFAULT_PAGE_BYTES",
    "BoundedPage",
    "ScanChunks",
    "backward_page",
    "event_bytes",
    "forward_page",
]

#: The default byte bound of one response page or stream batch.
DEFAULT_PAGE_BYTES: Final = 4 * 1024 * 1024
#: Events of the first read of a page (later reads are sized from the events seen).
_FIRST_CHUNK: Final = 8
#: A scan reads small pages first and larger ones while events are small, so that one read
#: holds about this many characters of event text (a page of 200 messages at the 1 MiB cap
#: would hold 200 MB).
_SCAN_TEXT: Final = 4 * 1024 * 1024
_FIRST_SCAN_CHUNK: Final = 20
#: Bytes an event's other fields take in a response (ids, type, time, seq, JSON syntax).
_FIELDS_BYTES: Final = 400


def event_bytes(event: RunEvent) -> int:
    """About how many bytes ``event`` takes in a JSON response."""
    return len(dumps_plain(event.content)) + len(dumps_plain(event.metadata)) + _FIELDS_BYTES


@dataclass(frozen=True)
class BoundedPage:
    """Events of one page (ascending by seq) and whether more follow."""

    events: list[RunEvent]
    has_more: bool
    """More matching events follow this page (in the direction it was read)."""
    size_limited: bool
    """The page ended before ``limit`` events because it reached ``max_bytes``."""


def _next_chunk(seen: int, size: int, room: int, wanted: int) -> int:
    average = max(1, size // max(1, seen))
    return max(1, min(wanted, room // average + 1))


def forward_page(
    thread_id: str, after_seq: int, limit: int, max_bytes: int, filters: dict[str, Any]
) -> Plan[BoundedPage]:
    """Plan: up to ``limit`` events with seq > ``after_seq`` within ``max_bytes``."""
    return _page(thread_id, "after_seq", after_seq, limit, max_bytes, filters)


def backward_page(
    thread_id: str,
    before_seq: int,
    limit: int,
    max_bytes: int,
    filters: dict[str, Any],
    keep: Callable[[RunEvent], bool] | None = None,
) -> Plan[BoundedPage]:
    """Plan: the newest ``limit`` events with seq < ``before_seq`` that fit ``max_bytes``;
    with ``keep``, only the events it accepts (``has_more``: more accepted ones follow)."""
    return _page(thread_id, "before_seq", before_seq, limit, max_bytes, filters, keep)


def _page(
    thread_id: str,
    direction: str,
    cursor: int,
    limit: int,
    max_bytes: int,
    filters: dict[str, Any],
    keep: Callable[[RunEvent], bool] | None = None,
) -> Plan[BoundedPage]:
    forward = direction == "after_seq"
    taken: list[RunEvent] = []  # in reading order
    size = 0
    chunk = min(limit + 1, _FIRST_CHUNK)
    while True:
        wanted = limit + 1 - len(taken)  # one more than the page: does more follow?
        request = min(chunk, wanted)
        read: list[RunEvent] = yield Read(
            thread_id, {direction: cursor, "limit": request, **filters}
        )
        for event in read if forward else reversed(read):
            if keep is not None and not keep(event):
                continue
            if len(taken) == limit:
                return _result(taken, forward, has_more=True, limited=False)
            cost = event_bytes(event)
            if taken and size + cost > max_bytes:
                return _result(taken, forward, has_more=True, limited=True)
            taken.append(event)
            size += cost
        if len(read) < request:
            return _result(taken, forward, has_more=False, limited=False)
        cursor = read[-1].seq if forward else read[0].seq
        chunk = _next_chunk(len(taken), size, max(0, max_bytes - size), wanted)


def _result(taken: list[RunEvent], forward: bool, *, has_more: bool, limited: bool) -> BoundedPage:
    events = taken if forward else taken[::-1]
    return BoundedPage(events=events, has_more=has_more, size_limited=limited)


class ScanChunks:
    """The size of a scan's next read: :data:`_FIRST_SCAN_CHUNK` first, then as many events as
    hold about :data:`_SCAN_TEXT` characters at the size of those read so far, at most
    ``most``."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.size = min(_FIRST_SCAN_CHUNK, most)
        self._events = 0
        self._chars = 0

    def seen(self, events: int, chars: int) -> None:
        """A read returned ``events`` events holding about ``chars`` characters of text."""
        self._events += events
        self._chars += chars
        if self._events:
            per_event = max(self._chars / self._events, 1.0)
            self.size = min(self.most, max(_FIRST_SCAN_CHUNK, int(_SCAN_TEXT / per_event)))
