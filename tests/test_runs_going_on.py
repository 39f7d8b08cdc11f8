"""The SQLite append's usual runs upkeep (a batch of the run the thread is in, folded straight
into the head's stored tail, :func:`journal._sqlite_tail.keep_going`; a run's first batch,
:func:`journal._sqlite_tail.start_run`) keeps exactly what the general path
(:func:`journal._runs.project` and :func:`journal._sqlite_runs.keep_heads`) keeps, for every
kind of event and every shape of metadata a caller may write."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from journal import _sqlite_runs as sqlite_runs
from journal import _sqlite_schema as sqlite_schema
from journal._runs import project
from journal._sqlite_rows import to_micros
from journal._sqlite_tail import keep_going, start_run
from journal.encoding import dumps
from journal.events import NewEvent
from journal.testing._helpers import T0

_KINDS = (
    ("trace", "llm.end"),
    ("trace", "llm.error"),
    ("trace", "llm.start"),
    ("trace", "tool.end"),
    ("trace", "tool.error"),
    ("trace", "custom:note"),
    ("lifecycle", "run.start"),
    ("lifecycle", "run.end"),
    ("lifecycle", "run.error"),
    ("lifecycle", "run.interrupt"),
    ("message", "message.ai"),
    ("message", "message.human"),
    ("message", "message.tool"),
    ("middleware", "middleware:summarize"),
)
_NAMES = st.one_of(
    st.none(), st.sampled_from(["m1", "m2", "", "agent", "x\x00y", "n" * 300]), st.integers()
)
_COUNTS = st.one_of(
    st.integers(min_value=-5, max_value=2**40),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
)
_USAGE = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(
            ["input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "other"]
        ),
        _COUNTS,
        max_size=4,
    ),
    st.integers(),
)
_METADATA = st.fixed_dictionaries(
    {}, optional={"model": _NAMES, "caller": _NAMES, "usage": _USAGE, "hidden": st.booleans()}
)
_TEXT = st.one_of(st.text(max_size=5), st.just("  "), st.lists(st.text(max_size=3), max_size=2))
_CONTENT = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"type": st.just("ai"), "data": st.fixed_dictionaries({"content": _TEXT})}
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "duration_ms": st.one_of(st.floats(), st.integers(), st.booleans()),
            "error_type": st.one_of(st.text(max_size=3), st.integers()),
            "error": st.text(max_size=3),
        },
    ),
)
_EVENT = st.tuples(st.sampled_from(_KINDS), _METADATA, _CONTENT)


def _events(specs: list[Any], first: int) -> list[tuple[int, NewEvent]]:
    """``(seq, event)`` of run ``r1`` of thread ``t1`` from ``specs``, seqs from ``first``."""
    numbered = []
    for offset, ((category, event_type), metadata, content) in enumerate(specs):
        seq = first + offset
        event = NewEvent(
            thread_id="t1", run_id="r1", category=category, event_type=event_type,
            content=content, metadata=metadata, created_at=T0 + timedelta(seconds=seq),
        )  # fmt: skip
        numbered.append((seq, event))
    return numbered


def _connection() -> sqlite3.Connection:
    """An in-memory database with the store's schema (the general path upserts runs rows)."""
    conn = sqlite3.connect(":memory:")
    sqlite_runs.prepare_connection(conn)
    sqlite_schema.migrate(Database(conn), 0)
    return conn


def _rows(numbered: list[tuple[int, NewEvent]]) -> list[tuple[Any, ...]]:
    return [
        (e.event_id, e.thread_id, seq, e.run_id, e.category, e.event_type, dumps(e.content),
         dumps(e.metadata), to_micros(e.created_at))
        for seq, e in numbered
    ]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_EVENT, min_size=1, max_size=4),
    st.lists(st.lists(_EVENT, min_size=1, max_size=6), min_size=1, max_size=3),
)
def test_a_run_going_on_keeps_what_the_general_path_keeps(
    first: list[Any], batches: list[list[Any]]
) -> None:
    """After a thread's first batch, every further batch of its run folded into the head's
    tail gives the very ``kept`` (tail and usage cells) the projection's path gives."""
    conn = _connection()
    numbered = _events(first, 1)
    heads = sqlite_runs.keep_heads(conn, project(numbered), {"t1": None})
    kept, goes_on = heads["t1"]
    assert not goes_on  # a new thread: its run is new
    seq = len(first) + 1
    for batch in batches:
        numbered = _events(batch, seq)
        seq += len(batch)
        expected, goes_on = sqlite_runs.keep_heads(conn, project(numbered), {"t1": kept})["t1"]
        assert goes_on
        got = keep_going("t1", "r1", kept, _rows(numbered), [e for _, e in numbered])
        assert got == expected
        kept = expected


def test_another_run_or_a_new_thread_takes_the_general_path() -> None:
    """A batch of a run that is not the head's tail run, or of a thread without a head, is
    left to the general path (no ``kept`` from the usual one)."""
    conn = _connection()
    numbered = _events([(("trace", "llm.end"), {}, None)], 1)
    kept, _ = sqlite_runs.keep_heads(conn, project(numbered), {"t1": None})["t1"]
    rows, events = _rows(numbered), [e for _, e in numbered]
    assert keep_going("t1", "r1", None, rows, events) is None
    assert keep_going("t1", "r2", kept, rows, events) is None
    assert keep_going("t1", "r1", kept, rows, events) is not None


def _of_run(numbered: list[tuple[int, NewEvent]], run_id: str) -> list[tuple[int, NewEvent]]:
    return [(seq, e.model_copy(update={"run_id": run_id})) for seq, e in numbered]


def _runs_table(conn: sqlite3.Connection) -> list[Any]:
    return conn.execute("SELECT * FROM runs ORDER BY thread_id, run_id").fetchall()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_EVENT, min_size=1, max_size=4), max_size=2),
    st.lists(_EVENT, min_size=1, max_size=6),
)
def test_a_runs_first_batch_keeps_what_the_general_path_keeps(
    before: list[list[Any]], batch: list[Any]
) -> None:
    """A batch of a run new to its thread (the thread's first, or after another run's batches:
    its tail empty or not) gives, by :func:`start_run`, the very ``kept`` the projection's
    path gives, and the same runs rows once merged."""
    general, usual = _connection(), _connection()
    kept: str | None = None
    seq = 1
    for earlier in before:  # run r1's batches, the same on both sides
        numbered = _events(earlier, seq)
        seq += len(earlier)
        for conn in (general, usual):
            text, _ = sqlite_runs.keep_heads(conn, project(numbered), {"t1": kept})["t1"]
        kept = text
    numbered = _of_run(_events(batch, seq), "r2")
    expected, goes_on = sqlite_runs.keep_heads(general, project(numbered), {"t1": kept})["t1"]
    assert not goes_on
    got, merged = start_run("t1", "r2", kept, _rows(numbered), [e for _, e in numbered])
    usual.executemany(sqlite_runs.MERGE_RUN_SQL, merged)
    assert got == expected
    assert _runs_table(usual) == _runs_table(general)
