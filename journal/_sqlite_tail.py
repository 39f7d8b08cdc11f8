"""The SQLite append's usual runs upkeep: a batch of the run its thread is in, folded
straight into the thread's head.

Most appends (a run's newest events, batched by the journal's writer or one at a time) only go
on with the run a thread's head holds as its tail (:mod:`journal._sqlite_runs`): then no run is
new and no runs row is written, and :func:`keep_going` folds the batch's rows into the stored
tail and usage cells themselves — no :class:`journal._runs.Projection`, no fold per run, no
merge. The answers are those of :func:`journal._sqlite_runs.keep_heads` for the same batch
(``tests/test_runs_going_on.py`` holds them to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson

from journal._runs import FOLDS_MORE, TOOL_CALLS, USAGE_COUNTS, USAGE_KEYS, RunFold
from journal._runs_read import hidden, preview, short_name, usage_values
from journal._runs_rows import RUN_COLUMNS, merge_values
from journal._sqlite_rows import EPOCH
from journal._sqlite_runs import _MODELS, _TIMES, _to_values, add_call
from journal.events import NewEvent

__all__ = ["keep_going"]

_LAST_SEQ: Final = RUN_COLUMNS.index("last_seq")
_LAST_AT: Final = RUN_COLUMNS.index("last_event_at")
_COUNT: Final = RUN_COLUMNS.index("event_count")
_LLM_CALLS: Final = RUN_COLUMNS.index("llm_calls")
_TOOL_CALLS: Final = RUN_COLUMNS.index("tool_calls")
_TOKENS: Final = RUN_COLUMNS.index("input_tokens")
_FIRST_HUMAN: Final = RUN_COLUMNS.index("first_human")
_LAST_AI: Final = RUN_COLUMNS.index("last_ai")
_MESSAGES: Final = frozenset({"message.human", "message.ai"})
assert RUN_COLUMNS[_TOKENS : _TOKENS + len(USAGE_COUNTS) - 1] == USAGE_COUNTS[1:]
_ONE_CALL: Final = (1, *(0,) * len(USAGE_KEYS))  # a call without usage


def keep_going(
    thread_id: str,
    run_id: str,
    text: str | None,
    rows: Sequence[Sequence[Any]],
    events: Sequence[tuple[int, NewEvent]],
) -> str | None:
    """``keep_heads`` (:mod:`journal._sqlite_runs`) for the usual append, from its rows: a
    batch of one thread whose events are all of ``run_id``, the run the thread's head
    (``text``, its ``kept`` as read) has as its tail run — the thread's new ``kept`` (the
    head's move is :data:`journal._sqlite_schema.CONTINUE_HEAD_SQL`, no runs row is
    written); ``None`` when the batch is not of that kind (then ``keep_heads`` decides).

    The events are folded into the stored tail itself, by the rules of
    :meth:`journal._runs.RunFold.add`: the usual ones here (any trace, a counted model or
    tool call, a human or AI message's text), the others (lifecycle events, ``llm.error``) by
    a :class:`RunFold` of the event merged in (:func:`journal._runs_rows.merge_values`), so
    those rules stay in one place.
    """
    if text is None:
        return None
    tail_run, tail, cells = orjson.loads(text)
    if tail_run != run_id:
        return None
    if tail is None:  # the tail starts at the batch's first event
        first = rows[0]
        tail = _to_values(RunFold(thread_id, run_id, first[2], first[2], EPOCH, EPOCH))
        tail[_TIMES[0]] = tail[_TIMES[1]] = first[8]
    for row, (_, event) in zip(rows, events, strict=True):
        kind = row[5]
        if kind in _MESSAGES:  # a message's text: RunFold.add's rules, on the values
            _message(tail, kind, event)
        elif kind in FOLDS_MORE or row[4] == "lifecycle":  # by the fold itself (folds_more)
            fold = RunFold.starting(row[2], event)
            fold.add(row[2], event)
            tail = merge_values(tail, _to_values(fold))
            continue
        tail[_LAST_SEQ], tail[_LAST_AT] = row[2], row[8]
        tail[_COUNT] += 1
        if kind == "llm.end":
            tail[_LLM_CALLS] += 1
            metadata = event.__dict__["metadata"]
            if not metadata:  # no usage, no model, no caller
                add_call(cells, "unknown", "unknown", _ONE_CALL)
                continue
            usage = usage_values(metadata)
            for index, value in enumerate(usage, start=_TOKENS):
                tail[index] += value
            model = short_name(metadata.get("model"))
            if model is not None and model not in tail[_MODELS]:
                tail[_MODELS].append(model)
            caller = short_name(metadata.get("caller")) or "unknown"
            add_call(cells, model or "unknown", caller, (1, *usage))
        elif kind in TOOL_CALLS:
            tail[_TOOL_CALLS] += 1
    return orjson.dumps([tail_run, tail, cells]).decode()


def _message(tail: list[Any], kind: str, event: NewEvent) -> None:
    """Fold a human or AI message into ``tail`` (besides its seq, time and count): the run's
    first non-hidden human text (``first_set``), its agent's last AI text (``last_set``)."""
    if kind == "message.human":
        if tail[_FIRST_HUMAN] is None and not hidden(event):
            tail[_FIRST_HUMAN] = preview(event)
    elif event.__dict__["metadata"].get("caller", "agent") == "agent":
        text = preview(event)
        if text is not None:
            tail[_LAST_AI] = text
