"""Runs and usage on real journaled runs, and from a backend that keeps none (the defaults)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from journal import (
    MemoryEventStore,
    NewEvent,
    RunEvent,
    RunEventStore,
    RunJournal,
    SqliteEventStore,
    ThreadSummary,
    copy_store,
)
from journal._sqlite_runs import page_statement, run_statement
from journal.store import ReadQuery
from journal.testing import StoreContract
from journal.testing._runs import run_events
from tests.fakes import ScriptedChatModel, ai, call


class MinimalStore(RunEventStore):
    """Only the abstract hooks, written plainly, as a third-party backend might be."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.Lock()
        self._threads: dict[str, list[RunEvent]] = {}
        self._ids: dict[str, RunEvent] = {}

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        with self._lock:
            staged: dict[str, RunEvent] = {}
            result = []
            for event in events:
                record = self._ids.get(event.event_id) or staged.get(event.event_id)
                if record is None:
                    mine = [s for s in staged.values() if s.thread_id == event.thread_id]
                    seq = len(self._threads.get(event.thread_id, [])) + len(mine) + 1
                    record = staged[event.event_id] = RunEvent(**event.model_dump(), seq=seq)
                result.append(record.model_copy(deep=True))
            for record in staged.values():
                self._threads.setdefault(record.thread_id, []).append(record)
                self._ids[record.event_id] = record
            return result

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        with self._lock:
            events = self._threads.get(query.thread_id, [])
            page = query.window(events, lambda e: e.seq, query.filter.matches)
            return [e.model_copy(deep=True) for e in page]

    def _last_seq(self, thread_id: str) -> int:
        with self._lock:
            return len(self._threads.get(thread_id, []))

    def _count(self, query: ReadQuery) -> int:
        with self._lock:
            return sum(map(query.filter.matches, self._threads.get(query.thread_id, [])))

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        with self._lock:
            threads = [
                ThreadSummary(thread_id=t, event_count=len(es), last_seq=len(es),
                              run_count=len({e.run_id for e in es}),
                              first_event_at=es[0].created_at, last_event_at=es[-1].created_at)
                for t, es in self._threads.items() if es
            ]  # fmt: skip
        threads.sort(key=lambda t: (t.last_event_at, t.thread_id), reverse=True)
        return threads[offset : None if limit is None else offset + limit]

    def _delete_thread(self, thread_id: str) -> int:
        with self._lock:
            events = self._threads.pop(thread_id, [])
            for event in events:
                del self._ids[event.event_id]
            return len(events)

    def _close(self) -> None:
        pass


class TestMinimalStore(StoreContract):
    """A backend with only the abstract hooks meets the whole contract, runs and usage too."""

    def create_store(self, **options: Any) -> RunEventStore:
        """A fresh minimal store."""
        return MinimalStore(**options)


# -- real runs ------------------------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def journal_runs(store: RunEventStore, tmp_path: Path) -> None:
    """Three real agent runs in thread t1: a tool-using one, a failed one, a short one."""
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        config: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
        script = [ai("", call("add", a=1, b=2), tokens=7), ai("", call("add", a=3, b=4)),
                  ai("3 and 7", tokens=20)]  # fmt: skip
        create_agent(ScriptedChatModel(script), [add]).invoke(
            {
                "messages": [
                    HumanMessage("context", additional_kwargs={"hide_from_ui": True}),
                    HumanMessage("add things"),
                ]
            },
            config,
        )
        with pytest.raises(RuntimeError, match="model down"):
            create_agent(ScriptedChatModel([RuntimeError("model down")]), []).invoke(
                {"messages": [HumanMessage("again")]}, config
            )
        create_agent(ScriptedChatModel([ai("bye", tokens=3)]), []).invoke(
            {"messages": [HumanMessage("thanks")]}, config
        )


@pytest.fixture
def journaled(tmp_path: Path) -> SqliteEventStore:
    """A SQLite store holding the three real runs."""
    store = SqliteEventStore(tmp_path / "real.db")
    journal_runs(store, tmp_path)
    return store


def test_real_runs_report_status_error_models_usage_and_previews(
    journaled: SqliteEventStore,
) -> None:
    """Real agent runs: status, error, models, token sums, counts and previews are right."""
    tools_run, failed, short = journaled.list_runs("t1")
    assert (tools_run.status, tools_run.error_type) == ("success", None)
    assert tools_run.models == ["scripted-model"]
    assert tools_run.usage == {"input_tokens": 37, "output_tokens": 15, "total_tokens": 52,
                               "cache_read_tokens": 0, "reasoning_tokens": 0}  # fmt: skip
    assert (tools_run.llm_calls, tools_run.tool_calls) == (3, 2)
    assert (tools_run.first_human, tools_run.last_ai) == ("add things", "3 and 7")
    [end] = journaled.read("t1", run_id=tools_run.run_id, event_type="run.end")
    assert (
        tools_run.ended_at == end.created_at and tools_run.duration_ms == end.content["duration_ms"]
    )
    assert (failed.status, failed.error_type, failed.error) == (
        "error",
        "RuntimeError",
        "model down",
    )
    assert (failed.first_human, failed.last_ai, failed.usage["total_tokens"]) == ("again", None, 0)
    assert (short.status, short.first_human, short.last_ai) == ("success", "thanks", "bye")
    assert journaled.get_run(failed.run_id) == failed


def test_real_thread_usage_is_the_sum_over_its_model_calls(journaled: SqliteEventStore) -> None:
    """read_usage equals the sums over the thread's llm.end events and over its runs."""
    usage = journaled.read_usage("t1")
    ends = journaled.read("t1", event_type="llm.end")
    assert usage.totals.calls == len(ends) == 4
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        assert getattr(usage.totals, key) == sum(e.metadata["usage"][key] for e in ends)
        assert getattr(usage.totals, key) == sum(r.usage[key] for r in journaled.list_runs("t1"))
    assert set(usage.by_model) == {"scripted-model"} and set(usage.by_caller) == {"agent"}
    assert usage.run_count == 3


def test_defaults_answer_like_the_built_in_backends(
    journaled: SqliteEventStore, tmp_path: Path
) -> None:
    """A backend keeping no runs (the base class's defaults) answers as SQLite and memory do."""
    minimal, memory = MinimalStore(), MemoryEventStore()
    copy_store(journaled, minimal)
    (tmp_path / "again").mkdir()
    journal_runs(memory, tmp_path / "again")  # the same kind of runs, written live
    for store in (journaled, memory):
        expected = store.list_runs("t1")
        copy = MinimalStore()
        copy_store(store, copy)
        assert copy.list_runs("t1") == expected
        assert copy.read_usage("t1") == store.read_usage("t1")
        assert copy.list_runs("t1", before_seq=2**63 - 1, limit=2) == expected[-2:]
        assert [copy.get_run(r.run_id) for r in expected] == expected
    assert minimal.list_runs("t1") == journaled.list_runs("t1")


@pytest.mark.parametrize(
    ("kind", "index"),
    [
        ("newest page", "runs_thread_first_seq"),
        ("page after", "runs_thread_first_seq"),
        ("by id", "runs_run_id"),
        ("by id in a thread", "sqlite_autoindex_runs_1"),
    ],
)
def test_sqlite_runs_are_read_through_an_index(tmp_path: Path, kind: str, index: str) -> None:
    """A page of runs and a lookup by id search an index of the runs table, never scan it."""
    with SqliteEventStore(tmp_path / "plan.db") as store:
        for n in range(40):
            store.append(run_events(f"r{n}", f"t{n % 4}", calls=1))
    statement, params = {
        "newest page": page_statement(ReadQuery("t1", None, 2**63 - 1, 20)),
        "page after": page_statement(ReadQuery("t1", 30, None, 20)),
        "by id": run_statement("r5", None),
        "by id in a thread": run_statement("r5", "t1"),
    }[kind]
    conn = sqlite3.connect(tmp_path / "plan.db")
    try:
        plan = " | ".join(
            str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + statement, params)
        )
    finally:
        conn.close()
    assert f"SEARCH runs USING INDEX {index}" in plan
    assert "SCAN runs" not in plan and "TEMP B-TREE" not in plan


def test_postgres_append_statement_is_converted_once_by_psycopg() -> None:
    """The append statement is short enough for psycopg to cache its conversion (4 KiB)."""
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    from journal._postgres_schema import APPEND_THREAD

    assert len(APPEND_THREAD) <= MAX_CACHED_STATEMENT_LENGTH
