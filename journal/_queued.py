"""What the callback path queues for the journal's writer thread: events and their contents.

A :class:`Pending` event holds cheap references; its content may be computed by the writer
(:class:`Lazy`), or settled on the callback path shortly after it was queued (:class:`Later`),
so that conversions never run on the agent's thread. See :mod:`journal._writer`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple

from journal.encoding import NOT_PLAIN

__all__ = ["SKIP", "Extra", "Later", "Lazy", "Pending", "Reads"]

#: What a :class:`Lazy` asks of the store: the thread's stored messages (their latest
#: versions), or its stored state (which messages it holds, and their versions).
Reads = Literal["messages", "state"]


class Pending(NamedTuple):
    """An event as the callback path queues it: cheap references, converted by the writer."""

    thread_id: str
    run_id: str
    category: str
    event_type: str
    content: Any
    metadata: dict[str, Any]
    created_us: int
    #: The :func:`journal.encoding.plain_kind` of ``metadata`` where the callback path knows
    #: it by construction (:mod:`journal._kinds`), else ``NOT_PLAIN``: the writer walks it.
    metadata_kind: int


class Lazy(NamedTuple):
    """Content computed by the writer thread: ``func(*args)`` (keeps the callback path cheap).

    ``func`` returns the content, an :class:`Extra` (content plus metadata entries), or
    :data:`SKIP` (nothing to write: not an event, and not a drop). ``reads``: what ``func``
    asks of the store of the thread (:data:`Reads`), read ahead of the build that calls it
    (``journal._contents.Contents.prefetch``).
    """

    func: Callable[..., Any]
    args: tuple[Any, ...]
    reads: Reads | None = None


class Extra(NamedTuple):
    """What a :class:`Lazy` returns to add metadata entries computed by the writer.

    ``text``: the canonical text of ``content`` (``journal.encoding.dumps_plain`` of it, never
    anything else) when the builder encoded it already, so that the store does not again.
    Content with its text, when it is a ``dict``, becomes the event's content as it is (no
    one else may hold it); any other mapping is copied into one.
    """

    content: Any
    metadata: dict[str, Any]
    text: str | None = None
    #: The ``plain_kind`` of ``metadata`` when the builder knows it, else ``NOT_PLAIN``.
    metadata_kind: int = NOT_PLAIN
    #: The ``plain_kind`` of ``content`` when the builder knows it, else ``NOT_PLAIN``.
    content_kind: int = NOT_PLAIN


#: What a :class:`Lazy` returns when, on reflection, there is nothing to write.
SKIP: Final = object()


class Later:
    """Content settled on the callback path after it was queued; built by the writer.

    The writer does not build it (nor anything queued after it) until :attr:`settled` or
    ``journal._writer.SETTLE_LIMIT`` seconds passed; :meth:`build` then returns the content
    (and may return an :class:`Extra` or :data:`SKIP`, as a :class:`Lazy` does).
    """

    __slots__ = ("settled",)

    def __init__(self) -> None:
        self.settled = False

    def build(self) -> Any:
        """The content, settled or not (writer thread)."""
        raise NotImplementedError
