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
from journal._sqlite_runs import _MODELS, _TIMES, _to_row, _to_values, add_call
from journal.events import NewEvent

__all__ = ["keep_going", "start_run"]

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
_NO_USAGE: Final = (0,) * len(USAGE_KEYS)  # a call without usage
_UNKNOWN: Final = ("unknown", "unknown")  # its model and caller


def keep_going(
    thread_id: str,
    run_id: str,
    text: str | None,
    rows: Sequence[Sequence[Any]],
    events: Sequence[NewEvent],
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
        tail = _starting(thread_id, run_id, rows[0])
    return orjson.dumps([tail_run, _folded(tail, cells, rows, events), cells]).decode()


def start_run(
    thread_id: str,
    run_id: str,
    text: str | None,
    rows: Sequence[Sequence[Any]],
    events: Sequence[NewEvent],
) -> tuple[str, list[list[Any]]]:
    """``keep_heads`` for a batch of one thread whose events are all of ``run_id``, a run
    that is not the tail run of the thread's head (``text``, its ``kept`` as read; ``None``:
    a new thread): the thread's new ``kept`` and the runs rows to merge
    (:data:`journal._sqlite_runs.MERGE_RUN_SQL`, before the head's move,
    :data:`journal._sqlite_schema.MOVE_HEAD_KEPT_SQL`).

    As ``keep_heads`` does: the old tail (if any) and the batch's run each go into their
    row, the batch's run becomes the tail run (its later events the tail), and its calls
    are counted into the usage cells; the run is folded by :func:`keep_going`'s rules, from
    an empty fold at the batch's first event.
    """
    _, tail, cells = orjson.loads(text) if text is not None else (None, None, [])
    merged = [] if tail is None else [_to_row(tail)]
    folded = _folded(_starting(thread_id, run_id, rows[0]), cells, rows, events)
    merged.append(_to_row(folded))
    return orjson.dumps([run_id, None, cells]).decode(), merged


def _starting(thread_id: str, run_id: str, first: Sequence[Any]) -> list[Any]:
    """The values of an empty fold of ``run_id`` starting at the event of row ``first``."""
    values = _to_values(RunFold(thread_id, run_id, first[2], first[2], EPOCH, EPOCH))
    values[_TIMES[0]] = values[_TIMES[1]] = first[8]
    return values


def _folded(
    tail: list[Any],
    cells: list[list[Any]],
    rows: Sequence[Sequence[Any]],
    events: Sequence[NewEvent],
) -> list[Any]:
    """``tail`` (a fold's values) with the events of ``rows`` folded in, and their calls
    counted into the usage ``cells`` (in place)."""
    # What only adds up (the count, the calls and their usage) is added once, after the
    # loop (a fold merged in between adds its own: the same sums); the newest seq and time
    # are the last row's (a merged fold's are its event's, the same values).
    folded = tools = bare = 0  # bare: model calls without metadata (no usage, unknown names)
    calls: dict[tuple[str, str], list[Sequence[int]]] = {}  # (model, caller) -> each usage
    for row, event in zip(rows, events, strict=True):  # each event with its row
        kind = row[5]
        if kind in _MESSAGES:  # a message's text: RunFold.add's rules, on the values
            _message(tail, kind, event)
        elif kind in FOLDS_MORE or row[4] == "lifecycle":  # by the fold itself (folds_more)
            fold = RunFold.starting(row[2], event)
            fold.add(row[2], event)
            tail = merge_values(tail, _to_values(fold))
            folded += 1
            continue
        if kind == "llm.end":
            metadata = event.__dict__["metadata"]
            if not metadata:  # no usage, no model, no caller
                bare += 1
                continue
            model = short_name(metadata.get("model"))
            if model is not None and model not in tail[_MODELS]:
                tail[_MODELS].append(model)
            caller = short_name(metadata.get("caller")) or "unknown"
            key, usage = (model or "unknown", caller), usage_values(metadata)
            usages = calls.get(key)
            if usages is None:
                calls[key] = [usage]
            else:
                usages.append(usage)
        elif kind in TOOL_CALLS:
            tools += 1
    tail[_LAST_SEQ], tail[_LAST_AT] = rows[-1][2], rows[-1][8]
    tail[_COUNT] += len(rows) - folded
    tail[_TOOL_CALLS] += tools
    if bare:  # (their cell and another call's of unknown names add up alike)
        tail[_LLM_CALLS] += bare
        add_call(cells, *_UNKNOWN, (bare, *_NO_USAGE))
    for (model, caller), usages in calls.items():
        sums = usages[0] if len(usages) == 1 else [sum(c) for c in zip(*usages, strict=True)]
        tail[_LLM_CALLS] += len(usages)
        for index, value in enumerate(sums, start=_TOKENS):
            tail[index] += value
        add_call(cells, model, caller, (len(usages), *sums))
    return tail


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
