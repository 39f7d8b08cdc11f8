"""What a read asks for, validated once: cursors, limit and filters as a frozen ``ReadQuery``.

The public methods of :class:`journal.store.RunEventStore` build a ``ReadQuery`` from their
keyword arguments (raising ``ValueError``/``TypeError`` for bad input) and hand it to the
backend hooks, so every backend reads the same validated fields by name.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from journal._ids import valid_unicode, validate_id
from journal.events import EventFilter

__all__ = [
    "MAX_CURSOR",
    "FilterValue",
    "ReadQuery",
    "adapt_legacy_hook",
    "check_cursor",
    "make_filter",
]

T = TypeVar("T")

FilterValue = str | Iterable[str] | None
#: Seqs are 64-bit (PostgreSQL bigint, SQLite INTEGER): larger cursors read like this one.
MAX_CURSOR: Final = 2**63 - 1
_NO_FILTER: Final = EventFilter()


def _filter_set(name: str, value: FilterValue) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})
    try:
        items = frozenset(value)
    except TypeError:
        raise TypeError(f"{name} must be a string, a collection of strings, or None") from None
    if not all(isinstance(v, str) for v in items):
        raise TypeError(f"{name} must contain only strings")
    if not all(valid_unicode(v) for v in items):
        raise ValueError(f"{name} must contain valid Unicode (a value has a lone surrogate)")
    return items


def make_filter(category: FilterValue, event_type: FilterValue, run_id: FilterValue) -> EventFilter:
    """The ``EventFilter`` of the three keyword filters (``TypeError``/``ValueError`` if bad)."""
    return EventFilter(
        category=_filter_set("category", category),
        event_type=_filter_set("event_type", event_type),
        run_id=_filter_set("run_id", run_id),
    )


def check_cursor(name: str, value: int | None) -> int | None:
    """``value`` as a cursor or limit: ``None`` or an int >= 0, capped at ``MAX_CURSOR``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return min(value, MAX_CURSOR)


@dataclass(frozen=True, slots=True)
class ReadQuery:
    """A validated read of one thread, as the backend hooks receive it.

    ``after_seq`` keeps seq > after_seq, ``before_seq`` keeps seq < before_seq; ``filter``
    applies before ``limit``; with ``before_seq`` set, ``limit`` keeps the *last* ``limit``
    items of the window (:attr:`newest_first`), otherwise the first. Results ascend by seq.
    """

    thread_id: str
    after_seq: int | None = None
    before_seq: int | None = None
    limit: int | None = None
    filter: EventFilter = field(default=_NO_FILTER)

    @classmethod
    def of(
        cls,
        thread_id: str,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
        category: FilterValue = None,
        event_type: FilterValue = None,
        run_id: FilterValue = None,
    ) -> ReadQuery:
        """The query of the public arguments, validated (``ValueError``/``TypeError``)."""
        validate_id(thread_id, "thread_id")
        return cls(
            thread_id,
            check_cursor("after_seq", after_seq),
            check_cursor("before_seq", before_seq),
            check_cursor("limit", limit),
            make_filter(category, event_type, run_id),
        )

    @property
    def matches_nothing(self) -> bool:
        """True when the answer is empty whatever is stored (an empty filter, ``limit=0``)."""
        return self.limit == 0 or self.filter.matches_nothing

    @property
    def newest_first(self) -> bool:
        """Whether the page is the last ``limit`` items below ``before_seq`` (read backwards)."""
        return self.before_seq is not None and self.limit is not None

    def cursor_conditions(self, column: str, mark: str) -> tuple[list[str], list[int]]:
        """The SQL conditions of the cursors on ``column`` and their parameters (``mark`` is
        the driver's placeholder: ``?`` or ``%s``)."""
        conditions, params = [], []
        if self.after_seq is not None:
            conditions.append(f"{column} > {mark}")
            params.append(self.after_seq)
        if self.before_seq is not None:
            conditions.append(f"{column} < {mark}")
            params.append(self.before_seq)
        return conditions, params

    def window(
        self,
        items: Sequence[T],
        seq: Callable[[T], int],
        keep: Callable[[T], bool] | None = None,
    ) -> list[T]:
        """The page of ``items`` (ascending by ``seq``) this query selects; ``keep`` filters."""
        start = 0 if self.after_seq is None else bisect.bisect_right(items, self.after_seq, key=seq)
        stop = (
            len(items)
            if self.before_seq is None
            else bisect.bisect_left(items, self.before_seq, key=seq)
        )
        # walk from the cursor's side and stop at the limit: a page costs O(page), not O(thread)
        indexes = range(stop - 1, start - 1, -1) if self.newest_first else range(start, stop)
        picked = (items[i] for i in indexes)
        if keep is not None:
            picked = (item for item in picked if keep(item))
        window = list(picked if self.limit is None else itertools.islice(picked, self.limit))
        if self.newest_first:
            window.reverse()
        return window


#: The hooks that took the query's fields one by one before ``ReadQuery`` existed.
_LEGACY_PARAMETERS: Final = {
    "_read": ("thread_id", "after_seq", "before_seq", "limit", "flt"),
    "_aread": ("thread_id", "after_seq", "before_seq", "limit", "flt"),
    "_count": ("thread_id", "flt"),
}


def adapt_legacy_hook(name: str, hook: object) -> Callable[..., Any] | None:
    """A ``ReadQuery`` hook calling ``hook`` if it has the older positional form, else None.

    Before ``ReadQuery``, ``_read``/``_aread`` took ``(thread_id, after_seq, before_seq,
    limit, flt)`` and ``_count`` took ``(thread_id, flt)``; a backend written that way keeps
    working: its hook is wrapped to receive the query's fields in that order.
    """
    legacy = _LEGACY_PARAMETERS.get(name)
    if legacy is None or not callable(hook):
        return None
    try:
        parameters = list(inspect.signature(hook).parameters.values())[1:]  # after self
    except (TypeError, ValueError):
        return None
    if len(parameters) != len(legacy) or any(
        p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters
    ):
        return None

    def fields(query: ReadQuery) -> tuple[Any, ...]:
        if name == "_count":
            return (query.thread_id, query.filter)
        return (query.thread_id, query.after_seq, query.before_seq, query.limit, query.filter)

    if inspect.iscoroutinefunction(hook):

        @functools.wraps(hook)
        async def adapted_async(self: Any, query: ReadQuery) -> Any:
            return await hook(self, *fields(query))

        return adapted_async

    @functools.wraps(hook)
    def adapted(self: Any, query: ReadQuery) -> Any:
        return hook(self, *fields(query))

    return adapted
