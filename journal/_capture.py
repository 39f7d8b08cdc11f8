"""Cheap extraction from callback arguments: messages, ids, usage, summaries.

Everything here runs on the callback path, so it only walks what a step *adds* (a node's
output, the root input, one model response) and never serialises node inputs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.constants import START
from langgraph.errors import ParentCommand
from langgraph.types import Overwrite

from journal._edits import OVERWRITTEN
from journal._kinds import scalars_kind
from journal.catalog import is_summary_message
from journal.encoding import PLAIN

__all__ = [
    "ERROR_TEXT_LIMIT",
    "PUSH_TASK",
    "ModelResponse",
    "NodeWrites",
    "add_usage",
    "assign_input_ids",
    "error_summary",
    "input_summary",
    "is_summary",
    "model_response",
    "node_writes",
    "output_messages",
    "output_preview",
    "output_writes",
    "parent_command",
    "prompt_tail",
    "prompt_tail_with_kind",
    "reads_state",
    "removes_messages",
    "scalar_params",
    "text_of",
    "tool_call_id_of",
    "tool_calls_of",
    "tool_end_content",
    "update_writes",
    "written_ids",
]

#: Longest error text kept in an event (the rest is cut).
ERROR_TEXT_LIMIT: Final = 2000
#: Longest tool output text kept in ``tool.end`` (the full result is the ``message.tool``).
PREVIEW_LIMIT: Final = 1000
#: A token count above this is taken for garbage (it would not survive a JSON round trip).
_MAX_TOKENS: Final = 2**53
_NO_DETAILS: Final[dict[str, Any]] = {}
_NO_OVERWRITE: Final[tuple[bool, Any]] = (False, None)
_MESSAGE_TYPES: Final = frozenset({"human", "ai", "tool", "system", "chat", "function"})
_SCALARS: Final = frozenset({str, int, float, bool})
_OVERWRITE: Final = "__overwrite__"  # LangGraph's tag of an Overwrite as a dict
#: LangGraph's mark of a *push* task (first part of its ``langgraph_path``, its trigger): a
#: ``Send``'s node run with the ``Send``'s argument, a node error handler, a functional task.
PUSH_TASK: Final = "__pregel_push"
_NS_SEP: Final = "|"  # between the levels of a checkpoint namespace
_NS_END: Final = ":"  # between a level's node name and its task id


#: ``tuple.__new__``: a named tuple's own constructor is a Python-level call (the callback
#: path's ``NodeWrites`` and ``ModelResponse``)
_new = tuple.__new__


def _new_id() -> str:
    return str(uuid.uuid4())


def _overwrite(raw: Any) -> tuple[bool, Any]:
    """Whether a write's value bypasses the reducer, and the value it sets: an ``Overwrite``
    or one of the dict forms LangGraph reads as one (``{"__overwrite__": value}``, and the
    JSON form ``{"type": "__overwrite__", "value": value}``)."""
    if type(raw) is list:  # the usual write (the callback path: no isinstance)
        return _NO_OVERWRITE
    if isinstance(raw, Overwrite):
        return True, raw.value
    if isinstance(raw, dict):
        if len(raw) == 1 and _OVERWRITE in raw:
            return True, raw[_OVERWRITE]
        if raw.get("type") == _OVERWRITE and "value" in raw:
            return True, raw["value"]
    return False, None


def _normalise(
    container: dict[str, Any],
    key: str,
    keep_removals: bool = False,
    written: bool = False,
    reduced: bool = True,
) -> list[BaseMessage]:
    """The messages under ``container[key]``, each with the id the state will hold if known.

    ``add_messages`` keeps an existing id, so an id assigned here is the one the state holds.
    A message object without an id is given one in place (``add_messages`` would give it one
    the same way). Message-like items (dicts, ``(role, text)`` tuples, strings) are converted,
    never changed, nor is the list holding them: they are the user's or the node's own
    objects (a run's input, an ``update_state``'s values, a node's output), which may be
    sent or returned again and must not carry a message id the thread holds by then. A
    converted message comes back without an id (the state's id becomes known when the state
    is next seen).
    ``RemoveMessage`` items are left out unless ``keep_removals``. An overwrite (see
    :func:`_overwrite`) is read as its value, each item in the state as it is (no reducer
    runs on it), led by :data:`journal._edits.OVERWRITTEN` when ``keep_removals``.
    ``written``: a node's output (see :func:`_overwritten`). ``reduced``: the reducer runs on
    the value now, so a message object without an id gets one in place (else it is left
    without).
    """
    return _normalise_value(container.get(key), keep_removals, written, reduced)


def _normalise_value(
    raw: Any,
    keep_removals: bool = False,
    written: bool = False,
    reduced: bool = True,
    overwrite: tuple[bool, Any] | None = None,
) -> list[BaseMessage]:
    """:func:`_normalise` of the value ``raw`` (``overwrite``: :func:`_overwrite` of it, when
    the caller has it)."""
    overwrites, value = _overwrite(raw) if overwrite is None else overwrite
    if overwrites:
        return _overwritten(value, keep_removals, written)
    if raw is None:
        return []
    if type(raw) is list:  # the usual write, first (the callback path)
        items: list[Any] = raw
    elif isinstance(raw, BaseMessage | str | dict) or (
        isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[0], str)
    ):
        items = [raw]
    elif isinstance(raw, list | tuple):
        items = raw if isinstance(raw, list) else list(raw)
    else:
        return []
    out: list[BaseMessage] = []
    for item in items:
        if isinstance(item, BaseMessage):
            message = item
            if message.id is None and reduced and message.type in _MESSAGE_TYPES:
                message.id = _new_id()
        else:
            try:
                message = convert_to_messages([item])[0]
            except (ValueError, TypeError, NotImplementedError):
                continue  # not a message; LangGraph will report it to the caller
        if message.type not in _MESSAGE_TYPES:
            if keep_removals and message.type == "remove":
                out.append(message)
            continue  # RemoveMessage and other state operations are not messages
        out.append(message)
    return out


def _overwritten(value: Any, keep_removals: bool, written: bool = False) -> list[BaseMessage]:
    """The messages an overwrite sets the state to (see :func:`_normalise`).

    LangGraph stores the value itself; its items get their ids at the state's next write (the
    reducer runs on the stored list then, giving a message object its id in place). A
    message-like item comes back without an id (the state's id is known once a state shows
    it); a user's message object too (a run's input, an ``update_state``'s values: the user
    may send it again), while a node's (``written``) gets its id in place now, the one the
    reducer keeps. A ``RemoveMessage`` in it removes nothing."""
    messages = _normalise({"messages": value}, "messages", reduced=written)
    return [OVERWRITTEN, *messages] if keep_removals else messages


def assign_input_ids(inputs: Any) -> list[BaseMessage]:
    """The messages of a root input, each with the id the state will hold: a message
    object's set in place, a message-like item's (a dict, a tuple, a string) not known yet
    (``None``: the user's input is not changed, see :func:`_normalise`).

    The input is a state dict, or a ``Command`` whose ``update`` dict adds messages. An
    input that overwrites the state (see :func:`_overwrite`) starts with
    :data:`journal._edits.OVERWRITTEN`; its items without an id, message objects too, come
    back without one (see :func:`_overwritten`).
    """
    update = _input_update(inputs)
    if update is None:
        return []
    overwrite, value = _overwrite(update.get("messages"))
    if overwrite:
        return _overwritten(value, keep_removals=True)
    return _normalise(update, "messages")


def update_writes(values: Any) -> list[list[BaseMessage]]:
    """Each write an ``update_state``'s ``values`` make to ``messages``, ``RemoveMessage``
    items included (as :func:`output_writes`): a message object with the id the state will
    hold (set in place, before LangGraph's writers take it), a message-like item without one
    (the user's values are not changed, as a run's input: see :func:`_normalise`), and in
    an overwrite, a message object without an id too (see :func:`_overwritten`)."""
    writes = [_normalise(update, "messages", keep_removals=True) for update in _updates(values)]
    return [w for w in writes if w]


def _input_update(inputs: Any) -> dict[str, Any] | None:
    """The dict a root input writes to the state: the input itself, or a ``Command``'s
    ``update``."""
    if isinstance(inputs, dict):
        return inputs
    update = getattr(inputs, "update", None)  # langgraph.types.Command
    if isinstance(update, dict) and hasattr(inputs, "resume"):
        return update
    return None


def reads_state(metadata: Mapping[str, Any]) -> bool:
    """Whether a node of a graph, by its callback ``metadata``, is given the graph's state.

    Not a push task (its input is a ``Send``'s argument, or the failed task's for an error
    handler), nor a node the run's input triggers (its input is that input): a graph's
    ``__start__`` node (seen when ``START`` has a conditional edge), a functional
    ``@entrypoint``.
    """
    path = metadata.get("langgraph_path")
    triggers = metadata.get("langgraph_triggers")
    if isinstance(path, tuple | list) and path and path[0] == PUSH_TASK:
        return False
    return not (isinstance(triggers, tuple | list) and (PUSH_TASK in triggers or START in triggers))


def parent_command(error: BaseException, namespace: str | None, node: str | None) -> Any:
    """The ``Command`` whose update the graph of a node applies as the node's writes when the
    node (checkpoint ``namespace``, name ``node``) raised ``error``, else ``None``.

    A ``Command(graph=Command.PARENT)`` made inside a subgraph is raised as ``ParentCommand``
    (a ``GraphBubbleUp``), its ``graph`` set to the namespace of the graph it is for at each
    level it leaves; the task of that graph's node applies it (LangGraph's ``run_with_retry``
    compares the same three names).
    """
    if not isinstance(error, ParentCommand) or not error.args or namespace is None:
        return None
    command = error.args[0]
    recast = _NS_SEP.join(
        part.split(_NS_END)[0] for part in namespace.split(_NS_SEP) if not part.isdigit()
    )
    graph = getattr(command, "graph", None)
    return command if isinstance(graph, str) and graph in (namespace, recast, node) else None


def tool_call_id_of(message: BaseMessage) -> str | None:
    """The ``tool_call_id`` of a tool message; ``None`` for any other message.

    Asked by type first: a missing attribute of a pydantic model costs a raised and caught
    ``AttributeError`` (microseconds), on every message of the callback path.
    """
    return getattr(message, "tool_call_id", None) if message.type == "tool" else None


def tool_calls_of(message: BaseMessage) -> list[Any]:
    """The tool calls of an AI message; empty for any other message (see
    :func:`tool_call_id_of`)."""
    return (getattr(message, "tool_calls", None) or []) if message.type == "ai" else []


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a summary a summarization middleware put into the state."""
    return is_summary_message(message)


def _updates(output: Any) -> Iterator[dict[str, Any]]:
    if isinstance(output, dict):
        yield output
        return
    update = getattr(output, "update", None)  # langgraph.types.Command
    if isinstance(update, dict):
        yield update
        return
    if isinstance(output, list | tuple):
        for item in output:
            if isinstance(item, dict):
                yield item
            else:
                inner = getattr(item, "update", None)
                if isinstance(inner, dict):
                    yield inner


def output_messages(output: Any) -> list[BaseMessage]:
    """The messages a node writes to ``messages`` (dict, ``Command`` or a list of them)."""
    messages: list[BaseMessage] = []
    for update in _updates(output):
        messages.extend(_normalise(update, "messages", written=True))
    return messages


def output_writes(output: Any) -> list[list[BaseMessage]]:
    """Each write a node makes to ``messages``, ``RemoveMessage`` items included, in order.

    A node output that is a list of updates (or ``Command``) makes one write per item, which
    LangGraph applies one after the other. The output is left as written: a message-like
    item comes back without an id (see :func:`_normalise`).
    """
    writes = [
        _normalise(update, "messages", keep_removals=True, written=True)
        for update in _updates(output)
    ]
    return [w for w in writes if w]


class NodeWrites(NamedTuple):
    """What a node output writes to ``messages``, read in one pass (see :func:`node_writes`)."""

    writes: list[list[BaseMessage]]  # as :func:`output_writes` gives them
    removes: bool  # as :func:`removes_messages` says

    def messages(self) -> list[BaseMessage]:
        """The written messages, as :func:`output_messages` gives them (no removals)."""
        return [m for write in self.writes for m in write if m.type != "remove"]

    def ids(self) -> set[str]:
        """The ids of the written messages and removals (what :func:`written_ids` reads)."""
        return {m.id for write in self.writes for m in write if isinstance(m.id, str)}


def node_writes(output: Any) -> NodeWrites:
    """:func:`output_writes` and :func:`removes_messages` of a node output in one pass."""
    writes: list[list[BaseMessage]] = []
    removes = False
    # (the usual outputs without the generator: a dict, or the model node's exact list of
    # updates, dicts or ``Command``s; the callback path)
    updates: Any
    if type(output) is dict:
        updates = (output,)
    elif type(output) is list:
        updates = [u if isinstance(u, dict) else getattr(u, "update", None) for u in output]
    else:
        updates = _updates(output)
    for update in updates:
        if not isinstance(update, dict):  # (a list's item that is no update)
            continue
        raw = update.get("messages")
        if type(raw) is list:  # the usual write: no overwrite, read in one pass
            write, removed = _list_write(raw)
            removes = removes or removed
        else:
            overwrite = _overwrite(raw)
            if not removes:
                removes = _removes_value(raw, overwrite[0])
            write = _normalise_value(raw, True, True, True, overwrite)
        if write:
            writes.append(write)
    return _new(NodeWrites, (writes, removes))


def _list_write(raw: list[Any]) -> tuple[list[BaseMessage], bool]:
    """``_normalise_value(raw, True, True, True)`` of a node's exact list write and whether
    it removes messages (:func:`_removes_value`), in one pass."""
    out: list[BaseMessage] = []
    removes = False
    for item in raw:
        if isinstance(item, BaseMessage):
            message = item
            if message.type == "remove":
                removes = True
            elif message.id is None and message.type in _MESSAGE_TYPES:
                message.id = _new_id()
        else:
            try:
                message = convert_to_messages([item])[0]
            except (ValueError, TypeError, NotImplementedError):
                continue  # not a message; LangGraph will report it to the caller
        if message.type not in _MESSAGE_TYPES:
            if message.type == "remove":
                out.append(message)
            continue  # other state operations are not messages
        out.append(message)
    return out, removes


def _removes(update: dict[str, Any]) -> bool:
    raw = update.get("messages")
    return _removes_value(raw, _overwrite(raw)[0])


def _removes_value(raw: Any, overwrite: bool) -> bool:
    """:func:`_removes` of the value ``raw`` (``overwrite``: whether it is an overwrite)."""
    if overwrite:
        return True
    for item in raw if type(raw) is list or isinstance(raw, list | tuple) else (raw,):
        if isinstance(item, BaseMessage) and item.type == "remove":
            return True
    return False


def removes_messages(output: Any) -> bool:
    """Whether a node output removes messages (``RemoveMessage``): a rewrite of the history."""
    return any(_removes(update) for update in _updates(output))


def input_summary(inputs: Any) -> dict[str, Any]:
    """A small description of a root input (kind, keys, message count), never its content."""
    if isinstance(inputs, dict):
        raw = inputs.get("messages")
        count = len(raw) if isinstance(raw, list | tuple) else (0 if raw is None else 1)
        return {"kind": "state", "keys": sorted(map(str, inputs)), "message_count": count}
    if hasattr(inputs, "resume") and hasattr(inputs, "goto"):
        return {"kind": "command", "resume": getattr(inputs, "resume", None) is not None}
    return {"kind": type(inputs).__name__}


def prompt_tail(
    messages: Sequence[BaseMessage], budget: int, max_messages: int = 3
) -> dict[str, Any]:
    """The prompt's last messages as ``{"type", "id", "text"}`` within ``budget`` characters.

    Runs on the writer thread. Replay does not need the prompt (``llm.start`` lists every
    message id); this is only a readable excerpt, so its cost stays flat as the thread grows.
    """
    return prompt_tail_with_kind(messages, budget, max_messages)[0]


def prompt_tail_with_kind(
    messages: Sequence[BaseMessage], budget: int, max_messages: int = 3
) -> tuple[dict[str, Any], int]:
    """:func:`prompt_tail` and its :func:`journal.encoding.plain_kind` (its keys ASCII
    constants, its count an int: its kind is that of each message's type, id and text)."""
    kept: list[dict[str, Any]] = []
    used = 0
    ascii_only = True  # every type, id and text an ASCII str (or no id): PLAIN
    for message in reversed(messages[-max_messages:]):
        content = message.content
        text = content if type(content) is str else text_of(content)  # (the usual: a str)
        room = budget - used
        if room <= 0:
            break
        name, mid, text = message.type, message.id, text[:room]
        kept.append({"type": name, "id": mid, "text": text})
        used += len(text)
        if ascii_only and not (
            type(name) is str
            and name.isascii()
            and type(text) is str
            and text.isascii()
            and (mid is None or (type(mid) is str and mid.isascii()))
        ):
            ascii_only = False
    kept.reverse()
    tail = {"messages": kept, "omitted_messages": len(messages) - len(kept)}
    if ascii_only:
        return tail, PLAIN
    return tail, scalars_kind(*[v for m in kept for v in m.values()])


def text_of(content: Any) -> str:
    """The text of a message content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str | dict)
        ]
        return "".join(parts)
    return str(content)


def tool_end_content(name: str, output: Any) -> dict[str, Any]:
    """The content of ``tool.end``: the tool's name and a preview of its output (writer)."""
    return {"name": name, "output": output_preview(output)}


def output_preview(output: Any, limit: int = PREVIEW_LIMIT) -> dict[str, Any]:
    """A tool output as ``{"text", "status", "chars"}``, the text cut to ``limit`` (writer)."""
    content = getattr(output, "content", output)
    if type(content) is str:  # the usual: a tool message's text
        text = content
    else:
        text = text_of(content) if isinstance(content, str | list) else repr(content)
    return {"text": text[:limit], "status": getattr(output, "status", None), "chars": len(text)}


def scalar_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The scalar entries of a model's invocation parameters (tool schemas are left out)."""
    scalars: dict[str, Any] = {}
    if not params:
        return scalars
    for k, v in params.items():  # (a loop, not a comprehension: one call less)
        # exact types first: the usual case, without isinstance
        if (type(v) in _SCALARS or isinstance(v, str | int | float)) and not k.startswith("_"):
            scalars[k] = v
    return scalars


class ModelResponse(NamedTuple):
    """What a model call answered: its message, usage, and the model the response names."""

    message: BaseMessage | None
    usage: dict[str, int]  # empty when the provider reported none
    model: str | None  # ``response_metadata`` ``model_name`` / ``model``; None if not named


def _tokens(value: Any) -> int:
    """A reported token count as a non-negative int (0 when missing or malformed)."""
    if type(value) is int:
        return value if 0 < value < _MAX_TOKENS else 0
    if type(value) is float and 0 < value < _MAX_TOKENS:
        return int(value)
    return 0


def _usage(
    input_tokens: Any,
    output_tokens: Any,
    total_tokens: Any,
    cache_read: Any,
    cache_creation: Any,
    reasoning: Any,
) -> dict[str, int]:
    """The usage record: total = input + output when the provider reports it missing or 0."""
    # (an int in range is its own count, without the call: the callback path; _tokens
    # gives the same for it)
    inputs = (
        input_tokens
        if type(input_tokens) is int and 0 < input_tokens < _MAX_TOKENS
        else _tokens(input_tokens)
    )
    outputs = (
        output_tokens
        if type(output_tokens) is int and 0 < output_tokens < _MAX_TOKENS
        else _tokens(output_tokens)
    )
    total = (
        total_tokens
        if type(total_tokens) is int and 0 < total_tokens < _MAX_TOKENS
        else _tokens(total_tokens)
    )
    return {
        "input_tokens": inputs,
        "output_tokens": outputs,
        "total_tokens": total or inputs + outputs,
        "cache_read_tokens": _tokens(cache_read) if cache_read is not None else 0,
        "cache_creation_tokens": _tokens(cache_creation) if cache_creation is not None else 0,
        "reasoning_tokens": _tokens(reasoning) if reasoning is not None else 0,
    }


def _details(raw: dict[str, Any], key: str) -> dict[str, Any]:
    details = raw.get(key)
    return details if isinstance(details, dict) else _NO_DETAILS


def model_response(response: Any) -> ModelResponse:
    """The :class:`ModelResponse` of an ``LLMResult`` (usage from the message's
    ``usage_metadata``, else the provider's ``token_usage`` in ``llm_output``)."""
    try:
        message: BaseMessage | None = getattr(response.generations[0][0], "message", None)
    except (AttributeError, IndexError, TypeError):
        message = None
    llm_output = getattr(response, "llm_output", None)
    if not isinstance(llm_output, dict):
        llm_output = _NO_DETAILS
    raw = getattr(message, "usage_metadata", None)
    usage: dict[str, int] = {}
    if isinstance(raw, dict) and raw:
        # (_details, written out: the callback path)
        inputs = raw.get("input_token_details")
        if not isinstance(inputs, dict):
            inputs = _NO_DETAILS
        outputs = raw.get("output_token_details")
        if not isinstance(outputs, dict):
            outputs = _NO_DETAILS
        usage = _usage(
            raw.get("input_tokens"),
            raw.get("output_tokens"),
            raw.get("total_tokens"),
            inputs.get("cache_read"),
            inputs.get("cache_creation"),
            outputs.get("reasoning"),
        )
    else:
        token_usage = llm_output.get("token_usage")
        if isinstance(token_usage, dict) and token_usage:
            usage = _usage(
                token_usage.get("prompt_tokens"),
                token_usage.get("completion_tokens"),
                token_usage.get("total_tokens"),
                _details(token_usage, "prompt_tokens_details").get("cached_tokens"),
                None,
                _details(token_usage, "completion_tokens_details").get("reasoning_tokens"),
            )
    metadata = getattr(message, "response_metadata", None)
    named = None
    if isinstance(metadata, dict):
        named = metadata.get("model_name") or metadata.get("model")
    if not named:
        named = llm_output.get("model_name") or llm_output.get("model")
    return _new(ModelResponse, (message, usage, str(named) if named else None))


def written_ids(output: Any) -> set[str]:
    """The ids of the messages a node output writes to ``messages`` (nothing is changed)."""
    ids: set[str] = set()
    for update in _updates(output):
        raw = update.get("messages")
        for item in raw if isinstance(raw, list | tuple) else [raw]:
            mid = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
            if isinstance(mid, str):
                ids.add(mid)
    return ids


def add_usage(total: dict[str, int], usage: Mapping[str, int]) -> None:
    """Add ``usage`` into ``total`` key by key."""
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


def error_summary(error: BaseException) -> dict[str, str]:
    """``{"error_type", "error"}`` of an exception, its text cut to ``ERROR_TEXT_LIMIT``."""
    return {"error_type": type(error).__name__, "error": str(error)[:ERROR_TEXT_LIMIT]}
