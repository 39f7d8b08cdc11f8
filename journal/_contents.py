"""The contents the writer thread computes for ``RunJournal`` (stored messages, call records).

The callback path queues live references (the message objects, the prompt list) wrapped in a
:class:`journal._writer.Lazy`; the writer calls the methods here when it builds the batch, so
conversions and digests never run on the agent's thread. :class:`Contents` owns the
:class:`journal.digests.ContextIndex`: it is touched by the builds of the writer thread only
(and of ``Writer``'s close, under the writer's lock). The digests of a thread journaled by an
earlier process are read from the store ahead of the build (:meth:`Contents.prefetch`,
outside that lock, so that a store that hangs never holds up ``close``), and so is what was
stored of a thread's state since it was last read, for the contents that ask
(:class:`journal._stored_state.StoredStates`); a build itself never reads the store.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage

from journal import _capture as cap
from journal._kinds import combined_kind, scalars_kind
from journal._known_inputs import stored_marks
from journal._queued import SKIP, Extra, Later, Lazy, Pending, Reads
from journal._stored_state import StoredStates
from journal.digests import CONTEXT_KEY, ContextIndex, record_kind
from journal.encoding import NOT_PLAIN, PLAIN, Plain
from journal.events import NewEvent
from journal.messages import MESSAGE_EVENT_TYPES, message_to_content
from journal.store import RunEventStore

__all__ = ["Contents", "ModelOutput"]

#: Characters of prompt text an ``llm.start`` excerpt keeps.
_PROMPT_BUDGET: Final = 4 * 1024
#: Messages an ``llm.start`` excerpt keeps at most (the last ones of the prompt).
_TAIL: Final = 3
_FETCHED_MAX: Final = 4096
_MESSAGE_TYPES: Final = tuple(MESSAGE_EVENT_TYPES.values())
#: ``Extra(*fields)`` with every field given (a named tuple's own constructor is a Python-level
#: call; the contents here are built once an event).
_new = tuple.__new__
_ID: Final = operator.attrgetter("id")


def _sent_tail(prompt: list[BaseMessage], ids: list[str | None]) -> list[BaseMessage]:
    """``prompt`` with its last :data:`_TAIL` messages as they were sent (``ids``: their ids
    then): a message whose id changed since (LangGraph gives a state's message without an
    id its id in place) copied under its id as sent; ``prompt`` itself when none did."""
    if list(map(_ID, prompt[-_TAIL:])) == ids[-_TAIL:]:  # the usual: no id changed
        return prompt
    sent = list(prompt)
    for index in range(max(len(sent) - _TAIL, 0), len(sent)):
        if sent[index].id != ids[index]:
            sent[index] = sent[index].model_copy(update={"id": ids[index]})
    return sent


class Contents:
    """Builds message and model-call contents on the writer thread (writer thread only)."""

    def __init__(
        self,
        store: RunEventStore,
        *,
        may_read: Callable[[], bool] = lambda: True,
        read_failed: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._may_read = may_read
        self._read_failed = read_failed
        self._fetched: dict[str, list[str]] = {}  # thread -> digests read, until it is met
        self._contexts = ContextIndex(stored_digests=self._stored_digests)
        self._states = StoredStates(store, may_read=may_read, read_failed=read_failed)

    def message(self, thread_id: str, message: BaseMessage, replacement: bool) -> Any:
        """A ``message.*`` event: the stored message and its digest; ``SKIP`` if a
        replacement did not change it."""
        result = self._contexts.message_event(thread_id, message, replacement)
        if result is None:
            return SKIP
        content, digest, text = result
        data = content.get("data")
        kwargs = data.get("additional_kwargs") if isinstance(data, dict) else None
        hidden = isinstance(kwargs, dict) and bool(kwargs.get("hide_from_ui"))
        # a hex digest and a bool: plain JSON by making
        return _new(Extra, (content, {"digest": digest, "hidden": hidden}, text, PLAIN, NOT_PLAIN))

    def model_call(
        self,
        thread_id: str,
        caller: str,
        llm_run_id: str,
        prompt: list[BaseMessage],
        ids: list[str | None],
    ) -> Extra:
        """An ``llm.start``: the prompt excerpt, and the exact record of the call's input,
        each message as it was sent (``ids``: the messages' ids when it was sent)."""
        record = self._contexts.call_record(thread_id, caller, llm_run_id, prompt, ids)
        tail, tail_kind = cap.prompt_tail_with_kind(_sent_tail(prompt, ids), _PROMPT_BUDGET, _TAIL)
        return _new(Extra, (tail, {CONTEXT_KEY: record}, None, record_kind(record), tail_kind))

    @staticmethod
    def tool_end(name: str, output: Any) -> Extra:
        """A ``tool.end``: the tool's name and a preview of its output (``text`` a str,
        ``chars`` a length), with its kind."""
        content = cap.tool_end_content(name, output)
        preview = content["output"]
        kind = scalars_kind(name, preview["text"], preview["status"])
        return _new(Extra, (content, {}, None, PLAIN, kind))

    def message_unless_stored(self, thread_id: str, message: BaseMessage, replacement: bool) -> Any:
        """:meth:`message`, or ``SKIP`` when the store holds that version as the message's
        latest (in the thread's state or, removed since, out of it): a result a paused run
        held back, which the journal that resumed the run (in another process) found in the
        state and stored."""
        built = self.message(thread_id, message, replacement)
        if built is not SKIP and self._states.holds(
            thread_id, str(message.id), built.metadata["digest"]
        ):
            return SKIP
        return built

    def removal_not_stored(self, thread_id: str, content: dict[str, Any]) -> dict[str, Any]:
        """A look's ``message.remove`` ``content`` without the removed ids the store holds as
        out of the state already: another journal's runs removed or summarized them away
        (their events say so) before this journal saw the state again."""
        removed = content["removed_message_ids"]
        left = set(self._states.left(thread_id, removed))
        if not left:
            return content
        return {**content, "removed_message_ids": [m for m in removed if m not in left]}

    def prefetch(self, batch: Sequence[Pending]) -> None:
        """What the build of ``batch`` needs of the store, read ahead of it (writer thread,
        outside the writer's lock): the digests of threads met for the first time, and what
        the contents that ask (:attr:`Lazy.reads`) need of their thread's stored state."""
        self.fetch_digests({item.thread_id for item in batch})
        needs: dict[str, Reads] = {}  # the state, where any content of the thread asks it
        for p in batch:
            reads = p.content.reads if type(p.content) is Lazy else None
            if reads is not None and needs.get(p.thread_id) != "state":
                needs[p.thread_id] = reads
        self._states.fetch(needs)

    @property
    def built(self) -> Callable[[NewEvent], None]:
        """What to call with each event the build makes: the answers for the rest of the
        batch count it (the stored states' own method: called once an event)."""
        return self._states.built

    def fetch_digests(self, thread_ids: Iterable[str]) -> None:
        """Read the digests of the stored messages of each thread the index has not met, for
        the next build (writer thread, outside the writer's lock). A store that is down (or
        the writer closing) is not asked: the thread's calls then inline what they received."""
        for thread_id in thread_ids:
            if thread_id in self._fetched or self._contexts.knows(thread_id):
                continue
            if not self._may_read():
                return
            try:
                marks = stored_marks(self._store, thread_id, _MESSAGE_TYPES)
            except Exception:  # the writes will spool anyway; calls inline instead
                self._read_failed()
                return
            if len(self._fetched) >= _FETCHED_MAX:  # threads read but never met (no message)
                self._fetched.clear()
            self._fetched[thread_id] = [digest for _, _, digest in marks]

    def _stored_digests(self, thread_id: str) -> list[str] | None:
        """The digests read ahead for a thread the index meets (``None``: not read)."""
        return self._fetched.pop(thread_id, None)

    def if_stored_before(self, thread_id: str, content: dict[str, Any]) -> Any:
        """The state order a fresh journal saw first of a thread: ``content`` if the store
        held messages of the thread before (their state may not be the graph's: a graph
        without a checkpointer starts each run anew), else ``SKIP`` (a new thread, whose
        messages are all journaled here in the state's order; or a store that could not be
        read, which then leaves the order as an earlier process journaled it)."""
        return content if self._contexts.stored_before(thread_id) else SKIP


class ModelOutput(Later):
    """The content of an ``llm.end``: ``output`` (the stored answer) is added unless the
    answer is journaled as a ``message.*`` event (settled by the callback path)."""

    __slots__ = ("_content", "_keep", "_message")

    def __init__(self, content: dict[str, Any], message: BaseMessage) -> None:
        super().__init__()
        self._content = content
        self._message = message
        self._keep = True

    @property
    def message_id(self) -> str | None:
        """The id of the model's answer."""
        return self._message.id

    def settle(self, keep: bool) -> None:
        """Decide whether the answer is kept here (``False``: it is a ``message.*`` event)."""
        self._keep = keep
        self.settled = True

    def build(self) -> Extra:
        """The content (with its kind); unsettled (the node did not end in time), the answer
        is kept."""
        content = self._content  # a message id and a count
        kind = scalars_kind(content["message_id"])
        if not self._keep:
            return _new(Extra, (content, {}, None, PLAIN, kind))
        output = message_to_content(self._message)  # a Plain, of a kind it knows
        kind = combined_kind(kind, output.kind) if type(output) is Plain else NOT_PLAIN
        return _new(Extra, ({**content, "output": output}, {}, None, PLAIN, kind))
