"""Message digests and the per-call context record of ``llm.start`` (what a model call received).

The digest of a message is the BLAKE2b-128 hex digest of the canonical JSON encoding
(:func:`journal.encoding.dumps`) of its stored form (:func:`journal.messages.message_to_content`):
equal messages have equal digests whatever library produced the bytes, and a stored message's
digest can be recomputed from what a store returns. Every ``message.*`` event carries the digest
of its message in ``metadata.digest``.

The context record (``llm.start`` ``metadata.context``) lists every message the call received,
in order (system message included), by id and digest, and inlines only the messages whose
digest the thread's journal does not hold yet (a request-only edit, a system prompt seen for the
first time, or any message the journal never recorded): a digest inlined once is only referenced
later, so a thread stores each distinct message once, not once per call. Its forms:

* ``{"messages": [{"id", "digest"}, ...], "inline": {digest: stored message}}`` — the whole list;
* ``{"base": <llm_run_id>, "keep": k, "messages": [...], "inline": {...}}`` — the first ``k``
  entries of the record of ``base`` (the journal's previous call of the same caller in the
  thread, whose ``llm.start`` comes earlier in the thread), then ``messages``. A conversation
  that only grows records each call in constant size; every ``KEYFRAME_EVERY`` calls (and
  after a restart) the record is whole again, so a lost event breaks at most that many
  records. Readers keep the latest 64 expanded records to resolve a ``base``.
"""

from __future__ import annotations

import hashlib
import operator
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from orjson import OPT_SORT_KEYS as _SORT_KEYS
from orjson import JSONEncodeError
from orjson import dumps as _orjson_dumps

from journal._kinds import scalars_kind
from journal.encoding import NOT_PLAIN, PLAIN, Plain, dumps, dumps_plain, encode_plain

if TYPE_CHECKING:  # reading digests must not load LangChain
    from langchain_core.messages import BaseMessage

__all__ = [
    "CONTEXT_KEY",
    "KEYFRAME_EVERY",
    "ContextIndex",
    "content_digest",
    "expand_record",
    "message_digest",
    "record_kind",
    "stored_digest",
]

#: The ``llm.start`` metadata key of the context record.
CONTEXT_KEY: Final = "context"
#: A record is whole at least once in this many calls of one caller of a thread.
KEYFRAME_EVERY: Final = 32
_THREADS: Final = 1024
_blake2b: Final = hashlib.blake2b
_new: Final = tuple.__new__  # ``_Seen(*fields)`` without its Python-level constructor
#: A digest's hasher before any input (copied: cheaper than making one with its size).
_BLAKE2B_16: Final = hashlib.blake2b(digest_size=16)

Entry = tuple[str | None, str]  # (message id, digest)


def content_digest(content: Any) -> str:
    """The digest of a stored message (plain JSON data, as ``message_to_content`` gives it)."""
    return _encoded_digest(content)[1]


def _encoded_digest(content: Any) -> tuple[str, str]:
    """The canonical text of ``content`` and its :func:`content_digest` (the text is kept:
    it is the text the store would encode again)."""
    text = dumps_plain(content)
    return text, _text_digest(text)


def _text_digest(text: str) -> str:
    """The digest of a stored message whose canonical text is ``text``."""
    return _blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _kind_text(content: Any, kind: int) -> str:
    """:func:`journal.encoding.dumps_plain` of ``content``, whose ``plain_kind`` is ``kind``
    (known: not walked again)."""
    return encode_plain(content, kind) if kind else dumps(content)


def _kind_text_digest(content: Any, kind: int) -> tuple[str, str]:
    """:func:`_kind_text` of ``content`` and its digest (:func:`_text_digest`)."""
    if kind == PLAIN:  # orjson's bytes are the text's UTF-8 (plain: no lone surrogate)
        try:
            raw = _orjson_dumps(content, option=_SORT_KEYS)
        except (TypeError, JSONEncodeError):  # pragma: no cover - plain data encodes
            pass
        else:
            hasher = _BLAKE2B_16.copy()
            hasher.update(raw)
            return raw.decode(), hasher.hexdigest()
    text = _kind_text(content, kind)
    return text, _text_digest(text)


def stored_digest(content: Any, metadata: dict[str, Any]) -> str:
    """The digest of a stored ``message.*`` event: as recorded, else computed."""
    recorded = metadata.get("digest")
    return recorded if isinstance(recorded, str) else content_digest(content)


def message_digest(message: BaseMessage) -> str:
    """The digest of ``message`` (see the module docstring)."""
    from journal.messages import message_to_content

    return content_digest(message_to_content(message))


class _Seen(NamedTuple):
    message: BaseMessage
    digest: str
    content: Any  # the message's content object when the digest was taken

    def matches(self, message: BaseMessage) -> bool:
        """Whether ``message`` is the digested one: the same object whose content was not
        replaced since (a message edited in place is digested again), or an equal copy of it
        as it was digested (compared only while the digested object is unchanged)."""
        if self.message is message:
            return self.content is message.content
        return self.content is self.message.content and self.message == message


def _traced_copy(seen: _Seen | None, message: BaseMessage) -> bool:
    """Whether ``message`` is the copy LangChain traces of the journaled message ``seen``
    (unchanged since): a chat model's callbacks get its messages with image and file blocks
    in another format (``_format_for_tracing``), and the model the messages themselves."""
    if seen is None or type(message.content) is not list:
        return False
    original = seen.message
    if seen.content is not original.content or type(original.content) is not list:
        return False
    # (imported here: the readers import this module without LangChain's models)
    try:
        from langchain_core.language_models.chat_models import _format_for_tracing
    except ImportError:  # pragma: no cover - a LangChain that traces the messages themselves
        return False
    traced = _format_for_tracing([original])[0]
    return traced is not original and traced == message


@dataclass(slots=True)
class _LastCall:
    llm_run_id: str
    entries: list[Entry]
    ids: list[str | None]  # each entry's message id (kept, not rebuilt at every call)
    chain: int  # records since the last whole one
    messages: Sequence[BaseMessage]  # what the call received (its entries' messages)
    contents: list[Any]  # each message's content object then
    logged: int  # len(_ThreadIndex.log) then
    known_ids: set[str | None]  # the set of ``ids`` (whether a change of the log touches one)


@dataclass(slots=True)
class _ThreadIndex:
    journaled: dict[str, _Seen] = field(default_factory=dict)  # latest message event per id
    recent: dict[str, _Seen] = field(default_factory=dict)  # last copy a call received per id
    digests: set[str] = field(default_factory=set)  # every digest the journal holds
    #: whether the store held messages of the thread when this index met it (``None``: it
    #: could not be read: the store was down, or the journal closing)
    stored_before: bool | None = False
    calls: dict[str, _LastCall] = field(default_factory=dict)  # the last call per caller
    log: list[str] = field(default_factory=list)  # the id of each change of ``journaled``


def _common_prefix(a: list[Entry], b: list[Entry], start: int = 0) -> int:
    """How many entries ``a`` and ``b`` share at their start (``start`` known to be equal)."""
    n = min(len(a), len(b))
    k = start
    while k < n and a[k] == b[k]:
        k += 1
    return k


_CONTENT: Final = operator.attrgetter("content")
_ID: Final = operator.attrgetter("id")


def _unchanged_prefix(
    last: _LastCall,
    messages: Sequence[BaseMessage],
    contents: list[Any],
    ids: list[Any],
    log: list[str],
) -> int:
    """How many of ``messages`` are, from the start, the very objects ``last`` received, with
    the same content objects and ids, and journaled under no new digest since.

    ``contents`` and ``ids``: each message's content object and id now (read once per call:
    an attribute of a pydantic message costs more than the comparisons). Those messages get
    the entries ``last`` recorded: what the full look-up would give them again. A
    conversation that grows passes the whole previous prompt in one pass at C speed.
    """
    prev = last.messages
    n = len(prev)
    if (
        n <= len(messages)
        and n == len(last.ids)
        and all(map(operator.is_, messages[:n], prev))
        and all(map(operator.is_, contents[:n], last.contents))
        and ids[:n] == last.ids
        and (len(log) == last.logged or set(log[last.logged :]).isdisjoint(last.ids))
    ):
        return n
    changed = set(log[last.logged :])
    k, n = 0, min(n, len(messages), len(last.ids))
    prev_contents, prev_ids = last.contents, last.ids
    while k < n:
        if (
            messages[k] is not prev[k]
            or contents[k] is not prev_contents[k]
            or ids[k] != prev_ids[k]
            or prev_ids[k] in changed
        ):
            break
        k += 1
    return k


def _grown(
    last: _LastCall, messages: Sequence[BaseMessage], ids: list[str | None], log: list[str]
) -> int | None:
    """When ``messages`` (``ids``: theirs as sent) begin with the whole prompt ``last``
    received, unchanged (what :func:`_unchanged_prefix` finds in its first pass): its length;
    else ``None``. The contents of ``last`` are then those of its messages now.

    The usual call of a conversation that grows: the ids as sent are compared as one list,
    each message's content is read once and compared as it is read (no copies of the prompt);
    the ids journaled since are looked up in ``last``'s set of ids, not compared with each of
    its ids.
    """
    prev = last.messages
    n = len(prev)
    if (
        n > len(messages)
        or n != len(last.ids)
        or (len(log) != last.logged and not last.known_ids.isdisjoint(log[last.logged :]))
        or (ids[:n] if len(ids) != n else ids) != last.ids
        or not all(map(operator.is_, messages, prev))  # (map stops at the shorter)
        or not all(map(operator.is_, map(_CONTENT, messages), last.contents))
    ):
        return None
    return n


def expand_record(record: dict[str, Any], earlier: Mapping[str, list[Entry]]) -> list[Entry] | None:
    """The full ``(id, digest)`` list of a record; ``earlier``: the expanded records of earlier
    calls by ``llm_run_id``. ``None`` when a delta's base is not among them."""
    raw = record.get("messages")
    items = raw if isinstance(raw, list) else []
    own: list[Entry] = []
    for item in items:
        item = item if isinstance(item, dict) else {}
        mid, digest = item.get("id"), item.get("digest")
        own.append(
            (mid if isinstance(mid, str) else None, digest if isinstance(digest, str) else "")
        )
    base = record.get("base")
    if base is None:
        return own
    keep = record.get("keep")
    previous = earlier.get(base) if isinstance(base, str) else None
    if previous is None or not isinstance(keep, int) or not 0 <= keep <= len(previous):
        return None
    return [*previous[:keep], *own]


def record_kind(record: dict[str, Any]) -> int:
    """The :func:`journal.encoding.plain_kind` of a record :meth:`ContextIndex.call_record`
    made, from what is not plain by making: the message ids, the base, the inlined messages
    (``message_to_content``'s, each of a known kind). Digests, keys and ``keep`` are plain."""
    kind = scalars_kind(record.get("base"), *[entry["id"] for entry in record["messages"]])
    inline = record["inline"]
    if not inline:  # the usual call of a conversation that grows: no message inlined
        return kind
    kinds = [kind]
    for content in inline.values():
        kinds.append(content.kind if type(content) is Plain else NOT_PLAIN)
    return min(kinds) and max(kinds)


class ContextIndex:
    """What the writer knows of each thread's journaled messages (writer thread only).

    Digests are computed once per message object: a message a call receives unchanged (the
    same object, or an equal copy, as middleware that deep-copies the request sends) reuses the
    digest of the message event or of the copy an earlier call received. ``stored_digests``
    tells, once per thread this index meets, the digests of the messages already in the store
    (a thread journaled by an earlier process), so they are referenced, not inlined again
    (``None``: they could not be read).
    Bounded: the least recently used threads are forgotten.
    """

    def __init__(
        self,
        capacity: int = _THREADS,
        stored_digests: Callable[[str], Collection[str] | None] | None = None,
    ) -> None:
        from journal.messages import message_to_content, message_to_plain

        self._to_content = message_to_content
        self._to_plain = message_to_plain
        self._stored_digests = stored_digests
        self._capacity = capacity
        self._threads: OrderedDict[str, _ThreadIndex] = OrderedDict()

    def knows(self, thread_id: str) -> bool:
        """Whether this index holds ``thread_id`` (its stored digests asked already)."""
        return thread_id in self._threads

    def stored_before(self, thread_id: str) -> bool | None:
        """Whether the store held messages of ``thread_id`` when this index met it (a thread
        journaled before this process); ``None`` when that could not be read."""
        return self._thread(thread_id).stored_before

    def _thread(self, thread_id: str) -> _ThreadIndex:
        index = self._threads.get(thread_id)
        if index is None:
            index = self._threads[thread_id] = _ThreadIndex()
            if self._stored_digests is not None:  # a thread journaled before this process
                stored = self._stored_digests(thread_id)
                index.stored_before = None if stored is None else bool(stored)
                index.digests.update(stored or ())
            if len(self._threads) > self._capacity:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(thread_id)
        return index

    def message_event(
        self, thread_id: str, message: BaseMessage, replacement: bool
    ) -> tuple[dict[str, Any], str, str] | None:
        """The stored form (a ``dict`` of its own, no one else's), digest and canonical text
        (``dumps_plain`` of the stored form) of a ``message.*`` event's message.

        ``replacement``: the id is already journaled; ``None`` when the message did not change
        (nothing to journal).
        """
        index = self._thread(thread_id)
        mid = str(message.id)
        if replacement:
            known = index.journaled.get(mid)
            if known is not None and known.matches(message):
                return None
        content, kind = self._to_plain(message)  # a dict of its own: the event's content
        text, digest = _kind_text_digest(content, kind)
        if replacement:
            known = index.journaled.get(mid)
            if known is not None and known.digest == digest:
                return None
            if known is None and digest in index.digests:  # stored, by an earlier process
                index.journaled[mid] = _Seen(message, digest, message.content)
                index.log.append(mid)
                return None
        index.journaled[mid] = _new(_Seen, (message, digest, message.content))
        index.log.append(mid)
        index.digests.add(digest)
        return content, digest, text

    def call_record(
        self,
        thread_id: str,
        caller: str,
        llm_run_id: str,
        messages: Sequence[BaseMessage],
        ids: list[str | None] | None = None,
    ) -> dict[str, Any]:
        """The context record of one model call that received ``messages``, each as it was
        sent: ``ids`` each message's id when the call was sent (a list the index keeps;
        ``None``: their ids now). A message whose id is no longer its id as sent (LangGraph
        gives a state's message without an id its id in place) is recorded by that id and
        the digest of its copy under that id."""
        if ids is None:
            ids = list(map(_ID, messages))
        index = self._thread(thread_id)
        journaled, recent = index.journaled, index.recent
        last = index.calls.get(caller)
        # the messages this caller's previous call received, unchanged since, have the same
        # entries (their digests were taken then): only what follows is looked at
        grown = None if last is None else _grown(last, messages, ids, index.log)
        if grown is not None:
            reused = grown
            contents = list(map(_CONTENT, messages[reused:]))  # what follows last's
            entries: list[Entry] = []  # what follows last's entries (all of them reused)
        else:
            contents = list(map(_CONTENT, messages))
            reused = (
                0 if last is None else _unchanged_prefix(last, messages, contents, ids, index.log)
            )
            entries = last.entries[:reused] if last is not None else []
        inline: dict[str, Any] = {}
        sent = (
            zip(messages[reused:], ids[reused:], strict=True)
            if reused
            else zip(messages, ids, strict=True)
        )
        for message, mid in sent:
            if message.id != mid:  # its id changed since the call was sent: as it was sent
                message = message.model_copy(update={"id": mid})
            known = journaled.get(mid) if mid is not None else None
            if known is None or not known.matches(message):
                if _traced_copy(known, message):  # the model received the journaled one
                    entries.append((mid, known.digest))  # type: ignore[union-attr]
                    continue
                known = recent.get(mid) if mid is not None else None
                if known is None or not known.matches(message):
                    content = self._to_content(message)
                    known = _new(_Seen, (message, content_digest(content), message.content))
                    if known.digest not in index.digests:
                        inline[known.digest] = content
                        index.digests.add(known.digest)
                    if mid is not None:
                        recent[mid] = known
            entries.append((mid, known.digest))
        if grown is not None and last is not None:  # (grown: there was a last call)
            # nothing fails from here: last becomes this call's, its lists extended in place
            # (a call that failed above left it as it was)
            listed = [{"id": mid, "digest": digest} for mid, digest in entries]
            last.entries += entries
            last.contents += contents
            last.known_ids.update(ids[reused:])
            base = last.llm_run_id
            last.llm_run_id, last.ids, last.messages = llm_run_id, ids, messages
            last.logged = len(index.log)
            if reused and last.chain < KEYFRAME_EVERY:  # the base's entries are all its first
                last.chain += 1
                return {"base": base, "keep": reused, "messages": listed, "inline": inline}
            last.chain = 0
            listed = [{"id": mid, "digest": digest} for mid, digest in last.entries]
            return {"messages": listed, "inline": inline}
        keep = 0
        if last is not None and last.chain < KEYFRAME_EVERY:
            keep = _common_prefix(last.entries, entries, reused)
        listed = [{"id": mid, "digest": digest} for mid, digest in entries[keep:]]
        if last is None or not keep:
            index.calls[caller] = _LastCall(
                llm_run_id, entries, ids, 0, messages, contents, len(index.log), set(ids)
            )
            return {"messages": listed, "inline": inline}
        index.calls[caller] = _LastCall(
            llm_run_id, entries, ids, last.chain + 1, messages, contents, len(index.log), set(ids)
        )
        return {"base": last.llm_run_id, "keep": keep, "messages": listed, "inline": inline}
