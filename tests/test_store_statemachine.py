"""A hypothesis state machine: append/read/delete on a store against a plain reference model.

The model is a dict of lists; every rule runs on the store and on the model and compares the
results, runs and usage included (``list_runs`` pages, ``get_run``, ``read_usage``, recomputed
from the model's events by hand, not by the store's projection). It runs on
``MemoryEventStore`` and on ``SqliteEventStore`` (and on ``PostgresEventStore`` in
``test_store_statemachine_postgres``).
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from journal import MemoryEventStore, RunEvent, RunEventStore, RunSummary, SqliteEventStore

THREADS = ("a", "b")
RUNS = ("r1", "r2")
KINDS = (
    ("lifecycle", "run.start"),
    ("message", "message.ai"),
    ("trace", "custom:x"),
    ("trace", "llm.end"),
    ("lifecycle", "run.end"),
)
STATUS = {None: "unknown", "run.start": "running", "run.end": "success"}
CATEGORIES = tuple(sorted({c for c, _ in KINDS}))

Key = tuple[str, str, int, str, str, str, Any]


class ModelRun(NamedTuple):
    """What the model knows of a run, and what of a ``RunSummary`` is compared with it."""

    run_id: str
    first_seq: int
    last_seq: int
    event_count: int
    status: str
    llm_calls: int
    total_tokens: int
    started_at: datetime

    @classmethod
    def of(cls, run: RunSummary) -> ModelRun:
        """The compared fields of a stored run."""
        return cls(run.run_id, run.first_seq, run.last_seq, run.event_count, run.status,
                   run.llm_calls, run.usage["total_tokens"], run.started_at)  # fmt: skip


def _key(e: RunEvent) -> Key:
    return (e.event_id, e.thread_id, e.seq, e.run_id, e.category, e.event_type, e.content)


new_event = st.fixed_dictionaries(
    {
        "thread_id": st.sampled_from(THREADS),
        "run_id": st.sampled_from(RUNS),
        "kind": st.sampled_from(KINDS),
        "content": st.one_of(st.none(), st.integers(), st.text(max_size=5)),
        "tokens": st.integers(0, 50),
    }
)
filter_values = st.one_of(st.none(), st.lists(st.sampled_from(CATEGORIES), max_size=2))
cursor = st.one_of(st.none(), st.integers(0, 20))


class StoreMachine(RuleBasedStateMachine):
    """Drives a store and a reference model with the same operations."""

    def __init__(self) -> None:
        super().__init__()
        self.store = self.make_store()
        self.model: dict[str, list[Key]] = {t: [] for t in THREADS}
        self.tokens: dict[str, int] = {}  # event id -> input tokens of its llm.end
        self.started: dict[str, Any] = {}  # event id -> created_at the store recorded
        self.counter = 0

    def make_store(self) -> RunEventStore:
        """The store under test."""
        raise NotImplementedError

    def teardown(self) -> None:
        """Close the store."""
        self.store.close()

    def _known(self) -> dict[str, Key]:
        return {k[0]: k for events in self.model.values() for k in events}

    @rule(
        specs=st.lists(new_event, min_size=1, max_size=8),
        reuse=st.lists(st.integers(0, 1000), max_size=2),
        poison=st.booleans(),
    )
    def append(self, specs: list[dict[str, Any]], reuse: list[int], poison: bool) -> None:
        """Append a batch (some ids reused, maybe one invalid event) like the model does."""
        batch: list[dict[str, Any]] = []
        for spec in specs:
            self.counter += 1
            category, event_type = spec["kind"]
            batch.append(
                {
                    "event_id": f"e{self.counter}",
                    "thread_id": spec["thread_id"],
                    "run_id": spec["run_id"],
                    "category": category,
                    "event_type": event_type,
                    "content": spec["content"],
                    "metadata": {"usage": {"input_tokens": spec["tokens"], "output_tokens": 1}},
                }
            )
        known = sorted(self._known())
        for index in reuse:  # re-append stored ids (with other content) and repeat in-batch ids
            pool = known + [b["event_id"] for b in batch]
            batch.append({**batch[0], "event_id": pool[index % len(pool)], "content": "retry"})
        if poison:
            batch.insert(len(batch) // 2, {**batch[0], "event_id": "bad", "category": "nope"})
            with pytest.raises(ValueError):
                self.store.append(batch)
            return
        result = self.store.append(batch)
        expected: list[Key] = []
        staged: dict[str, Key] = {}
        for item in batch:
            key = self._known().get(item["event_id"]) or staged.get(item["event_id"])
            if key is None:
                thread = self.model[item["thread_id"]]
                key = (
                    item["event_id"],
                    item["thread_id"],
                    len(thread) + 1,
                    item["run_id"],
                    item["category"],
                    item["event_type"],
                    item["content"],
                )
                thread.append(key)
                staged[item["event_id"]] = key
            expected.append(key)
        assert [_key(e) for e in result] == expected
        for item, record in zip(batch, result, strict=True):
            self.tokens.setdefault(record.event_id, item["metadata"]["usage"]["input_tokens"])
            self.started.setdefault(record.event_id, record.created_at)

    @rule(
        thread=st.sampled_from(THREADS),
        after=cursor,
        before=cursor,
        limit=st.one_of(st.none(), st.integers(0, 3)),
        category=filter_values,
        run_id=st.one_of(st.none(), st.lists(st.sampled_from(RUNS), max_size=2)),
    )
    def read(
        self,
        thread: str,
        after: int | None,
        before: int | None,
        limit: int | None,
        category: list[str] | None,
        run_id: list[str] | None,
    ) -> None:
        """read returns the model's window, filtered, limited from the right end."""
        got = self.store.read(
            thread,
            after_seq=after,
            before_seq=before,
            limit=limit,
            category=category,
            run_id=run_id,
        )
        want = [
            k
            for k in self.model[thread]
            if (after is None or k[2] > after)
            and (before is None or k[2] < before)
            and (category is None or k[4] in category)
            and (run_id is None or k[3] in run_id)
        ]
        if limit is not None:
            want = want[max(len(want) - limit, 0) :] if before is not None else want[:limit]
        assert [_key(e) for e in got] == want

    @precondition(lambda self: any(self.model.values()))
    @rule(thread=st.sampled_from(THREADS))
    def delete(self, thread: str) -> None:
        """delete_thread removes the thread; the next append restarts at seq 1."""
        assert self.store.delete_thread(thread) == len(self.model[thread])
        for k in self.model[thread]:
            del self.tokens[k[0]], self.started[k[0]]
        self.model[thread] = []

    @rule(thread=st.sampled_from(THREADS), category=filter_values)
    def count(self, thread: str, category: list[str] | None) -> None:
        """count matches the model."""
        want = sum(1 for k in self.model[thread] if category is None or k[4] in category)
        assert self.store.count(thread, category=category) == want

    def _runs(self, thread: str) -> list[ModelRun]:
        """The model's runs of ``thread``, by first seq."""
        runs: dict[str, list[Key]] = {}
        for k in self.model[thread]:
            runs.setdefault(k[3], []).append(k)
        out = []
        for run_id, keys in runs.items():
            lifecycle = [k[5] for k in keys if k[4] == "lifecycle"]
            calls = [k for k in keys if k[5] == "llm.end"]
            out.append(
                ModelRun(
                    run_id=run_id,
                    first_seq=keys[0][2],
                    last_seq=keys[-1][2],
                    event_count=len(keys),
                    status=STATUS[lifecycle[-1] if lifecycle else None],
                    llm_calls=len(calls),
                    total_tokens=sum(self.tokens[k[0]] + 1 for k in calls),
                    started_at=self.started[keys[0][0]],
                )
            )
        return out

    @rule(
        thread=st.sampled_from(THREADS),
        before=st.one_of(st.none(), st.integers(0, 30)),
        after=st.one_of(st.none(), st.integers(0, 30)),
        limit=st.one_of(st.none(), st.integers(1, 3)),
    )
    def runs_page(
        self, thread: str, before: int | None, after: int | None, limit: int | None
    ) -> None:
        """A page of list_runs is the model's runs within the cursors, limited like read."""
        got = self.store.list_runs(thread, after_seq=after, before_seq=before, limit=limit)
        want = [
            r
            for r in self._runs(thread)
            if (after is None or r.first_seq > after) and (before is None or r.first_seq < before)
        ]
        if limit is not None:
            want = want[max(len(want) - limit, 0) :] if before is not None else want[:limit]
        assert [ModelRun.of(r) for r in got] == want

    @rule(run_id=st.sampled_from(RUNS), thread=st.one_of(st.none(), st.sampled_from(THREADS)))
    def run_by_id(self, run_id: str, thread: str | None) -> None:
        """get_run finds the run of the thread, or the one of any thread that started first."""
        found = self.store.get_run(run_id, thread_id=thread)
        candidates = [
            (r.started_at, t, r)
            for t in THREADS
            for r in self._runs(t)
            if r.run_id == run_id and thread in (None, t)
        ]
        want = min(candidates, key=lambda c: c[:2]) if candidates else None
        got = None if found is None else (found.started_at, found.thread_id, ModelRun.of(found))
        assert got == want

    @invariant()
    def usage_matches(self) -> None:
        """read_usage counts every llm.end of a thread and its runs, as the model does."""
        for thread in THREADS:
            usage = self.store.read_usage(thread)
            runs = self._runs(thread)
            assert usage.totals.calls == sum(r.llm_calls for r in runs)
            assert usage.totals.total_tokens == sum(r.total_tokens for r in runs)
            assert usage.run_count == len(runs)

    @invariant()
    def heads_match(self) -> None:
        """last_seq of every thread equals the model's length; list_threads counts agree."""
        for thread, events in self.model.items():
            assert self.store.last_seq(thread) == len(events)
        listed = {t.thread_id: (t.event_count, t.run_count) for t in self.store.list_threads()}
        assert listed == {t: (len(e), len({k[3] for k in e})) for t, e in self.model.items() if e}


class MemoryMachine(StoreMachine):
    """The state machine on ``MemoryEventStore``."""

    def make_store(self) -> RunEventStore:
        """A fresh in-memory store."""
        return MemoryEventStore()


class SqliteMachine(StoreMachine):
    """The state machine on ``SqliteEventStore`` (a fresh file per example)."""

    def make_store(self) -> RunEventStore:
        """A fresh SQLite file in a temporary directory."""
        self.tmp = Path(tempfile.mkdtemp(prefix="rj-sm-"))
        return SqliteEventStore(self.tmp / "sm.db")

    def teardown(self) -> None:
        """Close the store and remove its directory."""
        super().teardown()
        shutil.rmtree(self.tmp, ignore_errors=True)


_settings = settings(
    max_examples=80,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMemoryStoreMachine = MemoryMachine.TestCase
TestMemoryStoreMachine.settings = _settings
TestSqliteStoreMachine = SqliteMachine.TestCase
TestSqliteStoreMachine.settings = _settings
