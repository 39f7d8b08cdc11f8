"""Contract: runs and usage (``list_runs`` paging, ``get_run``, ``read_usage``).

Every backend answers as the base class's default does (the events of the thread folded by
:mod:`journal._runs`), however the events were batched; the tests build small real-shaped runs
with :func:`run_events`.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from blockbuster import blockbuster_ctx

from journal import _runs_default
from journal._query import ReadQuery
from journal.events import NewEvent, RunSummary
from journal.store import RunEventStore
from journal.testing._base import ContractBase
from journal.testing._helpers import T0, ev

__all__ = ["RunsContract", "human", "llm_end", "run_events"]

_NEWEST = 2**63 - 1


def human(text: Any, *, run_id: str = "r1", thread_id: str = "t1", **extra: Any) -> NewEvent:
    """A ``message.human`` whose content is a stored human message (``extra`` in its data)."""
    data = {"content": text, "additional_kwargs": {}, **extra}
    return ev(thread_id, run_id=run_id, category="message", event_type="message.human",
              content={"type": "human", "data": data}, metadata={"caller": "user"})  # fmt: skip


def ai(text: Any, *, run_id: str = "r1", thread_id: str = "t1", caller: str = "agent") -> NewEvent:
    """A ``message.ai`` written by ``caller``."""
    content = {"type": "ai", "data": {"content": text, "additional_kwargs": {}}}
    return ev(thread_id, run_id=run_id, category="message", event_type="message.ai",
              content=content, metadata={"caller": caller})  # fmt: skip


def llm_end(
    model: Any = "m1", *, run_id: str = "r1", thread_id: str = "t1", caller: Any = "agent",
    **usage: Any,
) -> NewEvent:  # fmt: skip
    """An ``llm.end`` of ``model`` with ``usage`` (token counts by name) in its metadata."""
    return ev(thread_id, run_id=run_id, event_type="llm.end",
              content={"message_id": None, "tool_call_count": 0},
              metadata={"model": model, "caller": caller, "usage": usage})  # fmt: skip


def lifecycle(kind: str, *, run_id: str = "r1", thread_id: str = "t1", **content: Any) -> NewEvent:
    """A lifecycle event ``run.<kind>`` with ``content``."""
    return ev(thread_id, run_id=run_id, category="lifecycle", event_type=f"run.{kind}",
              content=content or None)  # fmt: skip


def run_events(
    run_id: str, thread_id: str = "t1", *, calls: int = 2, end: str = "end"
) -> list[NewEvent]:
    """A whole run as the journal writes it: start, the human's input, model and tool calls,
    the agent's answer, and the terminal event ``run.<end>`` (none when ``end`` is empty)."""
    where = {"run_id": run_id, "thread_id": thread_id}
    events = [lifecycle("start", **where), human(f"question of {run_id}", **where)]
    for i in range(calls):
        events += [
            ev(thread_id, run_id=run_id, event_type="llm.start"),
            llm_end("m1" if i % 2 == 0 else "m2", input_tokens=10 + i, output_tokens=5, **where),
            ev(thread_id, run_id=run_id, event_type="tool.start"),
            ev(thread_id, run_id=run_id, event_type="tool.end"),
        ]
    events.append(ai(f"answer of {run_id}", **where))
    if end:
        events.append(lifecycle(end, duration_ms=12.5, **where))
    return events


def _timed(events: list[NewEvent]) -> list[NewEvent]:
    """The events one second apart from T0 (so times are exact and ordered)."""
    return [
        e.model_copy(update={"created_at": T0 + timedelta(seconds=i)}) for i, e in enumerate(events)
    ]


class RunsContract(ContractBase):
    """Runs and usage read out of the events, the same on every backend."""

    def _same_as_default(self, store: RunEventStore, thread_id: str) -> None:
        """Runs, usage and lookups equal what the base class folds from the stored events."""
        assert store.list_runs(thread_id) == _runs_default.runs_page(store, ReadQuery(thread_id))
        assert store.read_usage(thread_id) == _runs_default.usage(store, thread_id)
        for run in store.list_runs(thread_id):
            assert store.get_run(run.run_id, thread_id=thread_id) == run
            assert store.get_run(run.run_id) == _runs_default.find_run(store, run.run_id, None)

    # -- one run ------------------------------------------------------------------------------

    def test_a_run_reports_its_models_usage_counts_and_previews(self, store: RunEventStore) -> None:
        """A finished run has its status, times, models, token sums, counts and previews."""
        events = _timed([
            lifecycle("start"),
            human("hidden context", additional_kwargs={"hide_from_ui": True}),
            human([{"type": "text", "text": "What is "}, "the answer", {"type": "image"}]),
            llm_end("router-a", input_tokens=100, output_tokens=20, total_tokens=0,
                    cache_read_tokens=30, reasoning_tokens=7),
            ev(event_type="tool.start"), ev(event_type="tool.error"),
            ai(""),  # only tool calls: no preview
            ai("from a middleware", caller="middleware:Summarize"),
            ev(event_type="llm.error"),
            llm_end("m2", input_tokens=1, output_tokens=2, total_tokens=50),
            llm_end("router-a", input_tokens=3, output_tokens=4),
            ai("x" * 300),
            lifecycle("end", duration_ms=1234.5),
        ])  # fmt: skip
        store.append(events)
        [run] = store.list_runs("t1")
        assert (run.run_id, run.thread_id, run.status) == ("r1", "t1", "success")
        assert (run.first_seq, run.last_seq, run.event_count) == (1, 13, 13)
        assert (run.started_at, run.last_event_at) == (T0, T0 + timedelta(seconds=12))
        assert run.ended_at == T0 + timedelta(seconds=12)
        assert run.duration_ms == 1234.5
        assert (run.error_type, run.error) == (None, None)
        assert run.models == ["router-a", "m2"]
        assert run.usage == {"input_tokens": 104, "output_tokens": 26, "total_tokens": 177,
                             "cache_read_tokens": 30, "reasoning_tokens": 7}  # fmt: skip
        assert (run.llm_calls, run.tool_calls) == (4, 1)
        assert run.first_human == "What is the answer"
        assert run.last_ai == "x" * 199 + "…"
        assert store.get_run("r1") == run
        self._same_as_default(store, "t1")

    def test_a_failed_run_shows_its_error(self, store: RunEventStore) -> None:
        """run.error gives status error, error_type and error; duration falls back to times."""
        failure = lifecycle("error", error_type="RateLimit", error="slow down")
        store.append(_timed([lifecycle("start"), human("hi"), ev(event_type="llm.error"), failure]))
        run = store.get_run("r1")
        assert run is not None
        assert (run.status, run.error_type, run.error) == ("error", "RateLimit", "slow down")
        assert run.ended_at == T0 + timedelta(seconds=3)
        assert run.duration_ms == 3000.0
        assert (run.llm_calls, run.last_ai, run.first_human) == (1, None, "hi")
        self._same_as_default(store, "t1")

    def test_a_running_run_is_visible_with_its_usage_so_far(self, store: RunEventStore) -> None:
        """Before its terminal event a run is running, not ended, and its usage is counted."""
        store.append([lifecycle("start"), llm_end(input_tokens=5, output_tokens=1)])
        run = store.get_run("r1")
        assert run is not None
        assert (run.status, run.ended_at, run.duration_ms) == ("running", None, None)
        assert store.read_usage("t1").totals.total_tokens == 6
        store.append([llm_end(input_tokens=2, output_tokens=2), lifecycle("end")])
        usage = store.read_usage("t1")
        assert (usage.totals.calls, usage.totals.total_tokens, usage.run_count) == (2, 10, 1)
        assert store.list_runs("t1")[0].status == "success"

    def test_a_resumed_run_is_running_again(self, store: RunEventStore) -> None:
        """run.interrupt then run.resume/run.start of the same run: running, no end time."""
        store.append([lifecycle("start"), lifecycle("interrupt", duration_ms=3)])
        assert store.list_runs("t1")[0].status == "interrupted"
        store.append([lifecycle("resume"), lifecycle("start")])
        [run] = store.list_runs("t1")
        assert (run.status, run.ended_at, run.duration_ms) == ("running", None, None)

    def test_odd_events_never_fail_and_count_as_nothing(self, store: RunEventStore) -> None:
        """Missing or ill-typed model, caller, usage and content are tolerated."""
        store.append([
            llm_end(None, caller=None, input_tokens="7", output_tokens=True, total_tokens=-5),
            llm_end(17, input_tokens=2.9, output_tokens=float("inf"), reasoning_tokens=10**30),
            ev(event_type="llm.end", metadata={"usage": "lots"}),
            ev(category="message", event_type="message.human", content="not a message"),
            ev(category="message", event_type="message.ai", content={"data": {"content": 5}}),
            ev(category="lifecycle", event_type="run.error", content=["not", "a", "dict"]),
            human("nul\x00here"),
        ])  # fmt: skip
        [run] = store.list_runs("t1")
        assert run.usage == {"input_tokens": 2, "output_tokens": 0, "total_tokens": 2,
                             "cache_read_tokens": 0, "reasoning_tokens": 2**31 - 1}  # fmt: skip
        assert (run.models, run.status, run.error_type, run.last_ai) == ([], "error", None, None)
        assert run.first_human == "nul\ufffdhere"
        usage = store.read_usage("t1")
        assert usage.totals.calls == 3
        assert set(usage.by_model) == {"unknown"} and set(usage.by_caller) == {"agent", "unknown"}
        self._same_as_default(store, "t1")

    # -- usage --------------------------------------------------------------------------------

    def test_usage_sums_the_threads_model_calls_by_model_and_caller(
        self, store: RunEventStore
    ) -> None:
        """Thread usage totals, by model and by caller, equal the sums over llm.end events."""
        store.append([
            llm_end("a", run_id="r1", input_tokens=10, output_tokens=5, cache_read_tokens=2),
            llm_end("b", run_id="r1", caller="middleware:Title", input_tokens=1, output_tokens=1,
                    total_tokens=9),
            llm_end("a", run_id="r2", caller="subagent:research", input_tokens=4,
                    output_tokens=0, reasoning_tokens=3),
            ev(run_id="r3", event_type="llm.start"),
        ])  # fmt: skip
        store.append([llm_end("a", thread_id="other", input_tokens=1000)])
        usage = store.read_usage("t1")
        assert usage.thread_id == "t1" and usage.run_count == 3
        assert usage.totals.model_dump() == {"calls": 3, "input_tokens": 15, "output_tokens": 6,
            "total_tokens": 28, "cache_read_tokens": 2, "reasoning_tokens": 3}  # fmt: skip
        assert {m: u.total_tokens for m, u in usage.by_model.items()} == {"a": 19, "b": 9}
        assert {c: u.calls for c, u in usage.by_caller.items()} == {
            "agent": 1, "middleware:Title": 1, "subagent:research": 1}  # fmt: skip
        per_run = [r.usage["total_tokens"] for r in store.list_runs("t1")]
        assert per_run == [24, 4, 0] and sum(per_run) == usage.totals.total_tokens
        empty = store.read_usage("nobody")
        assert (empty.totals.calls, empty.by_model, empty.run_count) == (0, {}, 0)
        self._same_as_default(store, "t1")

    # -- many runs --------------------------------------------------------------------------

    @pytest.fixture
    def runs23(self, store: RunEventStore) -> RunEventStore:
        """23 runs in thread t1, their events interleaved two runs at a time."""
        events: list[NewEvent] = []
        for pair in range(0, 23, 2):
            runs = [run_events(f"r{n:02d}", calls=n % 3) for n in range(pair, min(pair + 2, 23))]
            for group in zip(*runs, strict=False):
                events += group
            events += [e for run in runs for e in run[len(runs[-1]) :]]
        store.append(events)
        return store

    def test_paging_back_and_forward_visits_every_run_once(self, runs23: RunEventStore) -> None:
        """before_seq pages (newest first) and after_seq pages walk all runs, no repeat."""
        every = runs23.list_runs("t1")
        assert [r.run_id for r in every] == [f"r{n:02d}" for n in range(23)]
        assert [r.first_seq for r in every] == sorted(r.first_seq for r in every)
        back: list[RunSummary] = []
        cursor = _NEWEST
        while page := runs23.list_runs("t1", before_seq=cursor, limit=5):
            assert len(page) <= 5 and page == sorted(page, key=lambda r: r.first_seq)
            back = page + back
            cursor = page[0].first_seq
        forward: list[RunSummary] = []
        cursor = 0
        while page := runs23.list_runs("t1", after_seq=cursor, limit=4):
            forward += page
            cursor = page[-1].first_seq
        assert back == forward == every
        newest = runs23.list_runs("t1", before_seq=_NEWEST, limit=3)
        assert [r.run_id for r in newest] == ["r20", "r21", "r22"]
        assert runs23.list_runs("t1", limit=0) == []
        assert runs23.list_runs("t1", before_seq=every[0].first_seq) == []
        self._same_as_default(runs23, "t1")

    def test_runs_are_the_same_however_the_events_were_batched(self) -> None:
        """One batch, one event per append, or random chunks give equal runs and usage."""
        events = [e for n in range(6) for e in run_events(f"r{n}", calls=n % 3, end="")]
        events += [lifecycle("end", run_id="r1"), llm_end(run_id="r0", input_tokens=1)]
        events += [human("later", run_id="r2"), ai("", run_id="r3"), ai("late", run_id="r3")]
        rng = random.Random(7)
        answers = []
        for chunking in ("whole", "single", "random"):
            store = self.create_store()
            try:
                start = 0
                while start < len(events):
                    size = {"whole": len(events), "single": 1}.get(chunking, rng.randint(1, 9))
                    store.append(events[start : start + size])
                    start += size
                answers.append((store.list_runs("t1"), store.read_usage("t1")))
                self._same_as_default(store, "t1")
            finally:
                store.close()
        assert answers[0] == answers[1] == answers[2]

    # -- lookup by id -----------------------------------------------------------------------

    def test_get_run_finds_a_run_by_id_alone(self, store: RunEventStore) -> None:
        """get_run finds any thread's run; a run id in two threads gives the earlier one."""
        later = [e.model_copy(update={"created_at": T0 + timedelta(hours=1)})
                 for e in run_events("shared", "b")]  # fmt: skip
        earlier = [e.model_copy(update={"created_at": T0}) for e in run_events("shared", "c")]
        store.append(later)
        store.append([*run_events("solo", "a"), *earlier])
        solo = store.get_run("solo")
        assert solo is not None and solo.thread_id == "a" and solo.status == "success"
        found = store.get_run("shared")
        assert found is not None and found.thread_id == "c"
        in_b = store.get_run("shared", thread_id="b")
        assert in_b is not None and in_b.thread_id == "b" and in_b.first_seq == 1
        assert store.get_run("shared", thread_id="a") is None
        assert store.get_run("never") is None
        for thread in ("a", "b", "c"):
            self._same_as_default(store, thread)

    def test_bad_arguments_are_caller_errors(self, store: RunEventStore) -> None:
        """Bad ids and cursors raise ValueError/TypeError naming the argument."""
        with pytest.raises(ValueError, match="run_id"):
            store.get_run(" x")
        with pytest.raises(ValueError, match="thread_id"):
            store.get_run("r1", thread_id="")
        with pytest.raises(ValueError, match="thread_id"):
            store.read_usage("a\x00b")
        with pytest.raises(ValueError, match="before_seq"):
            store.list_runs("t1", before_seq=-1)
        with pytest.raises(TypeError, match="limit"):
            store.list_runs("t1", limit=1.5)  # type: ignore[arg-type]

    # -- retention ----------------------------------------------------------------------------

    def test_delete_thread_removes_its_runs_and_usage(self, store: RunEventStore) -> None:
        """After delete_thread the thread has no runs and zero usage; others keep theirs."""
        store.append([*run_events("r1", "a"), *run_events("r1", "b")])
        store.delete_thread("a")
        assert store.list_runs("a") == [] and store.read_usage("a").totals.calls == 0
        found = store.get_run("r1")
        assert found is not None and found.thread_id == "b"
        store.append(run_events("r9", "a", calls=1))
        assert [r.run_id for r in store.list_runs("a")] == ["r9"]
        assert store.read_usage("a").totals.calls == 1 and store.read_usage("a").run_count == 1
        assert [t.run_count for t in store.list_threads() if t.thread_id == "a"] == [1]

    # -- content cap of llm.end -------------------------------------------------------------

    def test_llm_end_content_is_capped_like_a_message(self) -> None:
        """llm.end content (a call's output) gets the message cap, other traces the trace cap."""
        store = self.create_store(content_caps={"trace": 300, "message": 3000})
        try:
            output = {"type": "ai", "data": {"content": "o" * 1000}}
            big = {"type": "ai", "data": {"content": "p" * 5000}}
            store.append([
                ev(event_type="llm.end", content={"message_id": "m", "output": output}),
                ev(event_type="llm.start", content={"messages": "q" * 1000}),
                ev(event_type="llm.end", content={"message_id": "m", "output": big}),
            ])  # fmt: skip
            whole, start, cut = store.read("t1")
            assert whole.content["output"] == output and "truncated" not in whole.metadata
            assert start.metadata["truncated"] is True
            assert cut.metadata["truncated"] is True and cut.metadata["original_bytes"] > 5000
            assert cut.content["output"]["type"] == "ai"
            assert cut.content["output"]["data"]["content"].startswith("ppp")
        finally:
            store.close()

    # -- async --------------------------------------------------------------------------------

    async def test_async_runs_and_usage_match_sync_without_blocking(
        self, store: RunEventStore
    ) -> None:
        """alist_runs, aget_run and aread_usage answer like their sync twins, off the loop."""
        await store.aappend([*run_events("r1"), *run_events("r2")])
        with blockbuster_ctx(scanned_modules=["journal"]):
            runs = await store.alist_runs("t1", before_seq=_NEWEST, limit=1)
            run = await store.aget_run("r1", thread_id="t1")
            usage = await store.aread_usage("t1")
        assert runs == store.list_runs("t1", before_seq=_NEWEST, limit=1)
        assert run == store.get_run("r1") and usage == store.read_usage("t1")
