"""Benchmark: what journaling costs a 200-superstep agent run, side by side in one process.

Runs a fake ``create_agent`` run (100 tool calls, 201 supersteps) sync and async, with: no
callbacks; a no-op ``BaseCallbackHandler`` (default, and ``run_inline``); LangChain's in-memory
``RunCollectorCallbackHandler``; ``RunJournal`` on ``SqliteEventStore`` (the final flush is
inside the timing); and three bounds of the journal's own share: ``RunJournal`` whose writer
drops each batch unbuilt (``journal_callbacks``: the callback path alone), on a store whose
``append`` discards each batch (``journal_discard``: every event built and queued, its content
and digests built by the writer, nothing stored: what journaling costs before any store), and
on a store whose ``append`` only runs ``prepare`` (``journal_prepare``: the store's validation,
encoding and caps of each batch, no SQLite).

Protocol. Variants are interleaved round by round so machine noise hits them alike, after one
warm-up round; each round runs them in a rotated order (round ``r`` starts at variant ``r``),
so that no variant always follows the same one. Before each timed run the garbage collector
runs a full collection (outside the timing): every run starts from the same collector state,
instead of inheriting the garbage of the variant before it or a full collection that the
allocations of earlier runs made due (~100 ms here, landing in about one run in twenty of any
variant). Collections that a run's own allocations trigger stay inside its timing; the table
reports them (young and full collections per run, ms in the collector), and the median time
of the full collection that follows each run of a variant (its garbage, and the next agent's
construction, alike for all): what a variant costs the collector is shown, not hidden.
``--legacy`` runs the earlier protocol (fixed order, no collection between runs) to compare.

Report, per variant: the median of ``--runs`` rounds of wall time and of process CPU time (all
threads, the journal's writer included; steadier than wall time on a loaded machine), the
median CPU time of the journal's writer thread per run (its per-thread clock: what the run's
CPU spent off the agent's thread, in building, the store and the collections it triggered;
read only, it changes no timing), and
their ratios to the no-op handlers (ratio of the medians, as before); beside it the median of
the per-round paired ratios to ``noop_inline`` (each round's run divided by that round's
``noop_inline`` run: the sound estimator for alternating rounds, since the two runs of a pair
share the machine's state of that moment); then the machine's load average before and after
(2 cores: below ~1.5 nothing else was running to speak of).

``--variants noop_inline,run_journal`` runs only those (``noop_inline`` always): four times
the rounds of the whole set in the same time, for the ratio a target names (the ``x noop``
columns are then ``nan``).

Usage: ``python scripts/bench_journal.py [--runs 9] [--steps 100] [--legacy] [--variants A,B]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from pydantic import PrivateAttr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal

from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from journal._batch import KnownEvents


class LeanScriptedModel(BaseChatModel):
    """A tool-calling fake that answers from a script and keeps no record (cheap per call)."""

    tool_rounds: int = 100
    disable_streaming: bool = True
    _count: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "lean-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> LeanScriptedModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self._count += 1
        usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        if self._count <= self.tool_rounds:
            call = {"name": "add", "args": {"a": self._count, "b": 1}, "id": f"c{self._count}"}
            message = AIMessage("", tool_calls=[call], usage_metadata=usage)
        else:
            message = AIMessage("done", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class InlineNoop(BaseCallbackHandler):
    """A no-op handler that runs inline (no thread-pool hop in async runs)."""

    run_inline = True


class DiscardingStore(MemoryEventStore):
    """A store that takes every batch and keeps nothing (the journal's cost without a store)."""

    def append(self, events: Any) -> list[Any]:
        list(events)
        return []


class PreparingStore(MemoryEventStore):
    """A store that validates and encodes every batch (``prepare``) and keeps nothing."""

    def append(self, events: Any) -> list[Any]:
        self.prepare(events)
        return []


def callbacks_only(journal: RunJournal) -> RunJournal:
    """``journal`` with a writer that drops each batch unbuilt: what the callback path costs
    alone (events attributed, stamped and queued; no content, digest or record built).

    Reaches into the writer (``_build``): a measurement, not an example.
    """
    journal._writer._build = lambda batch: KnownEvents()  # type: ignore[method-assign]
    return journal


def make_agent(steps: int) -> Any:
    """A fresh agent whose run has ``steps`` tool rounds."""
    return create_agent(LeanScriptedModel(tool_rounds=steps), [add])


Journals = dict[str, RunJournal]


def variants(journals: Journals) -> dict[str, Callable[[], list[Any]]]:
    """Callback lists per variant (a new collector per run, one journal per store kind)."""
    return {
        "none": lambda: [],
        "noop": lambda: [BaseCallbackHandler()],
        "noop_inline": lambda: [InlineNoop()],
        "run_collector": lambda: [RunCollectorCallbackHandler()],
        "run_journal": lambda: [journals["sqlite"]],
        "journal_callbacks": lambda: [journals["callbacks"]],
        "journal_discard": lambda: [journals["discard"]],
        "journal_prepare": lambda: [journals["prepare"]],
    }


def run_config(callbacks: list[Any], thread: str) -> Any:
    """The run config: callbacks, a recursion limit above 201 supersteps, a thread."""
    return {
        "callbacks": callbacks,
        "recursion_limit": 10_000,
        "configurable": {"thread_id": thread},
    }


Timing = tuple[float, float]  # (wall seconds, process CPU seconds: every thread, writer included)


def writer_cpu(callbacks: list[Any]) -> float:
    """CPU seconds the journals' writer threads in ``callbacks`` have used so far (Linux
    per-thread clocks; 0 where there is none): the part of a run's CPU spent off the agent's
    thread. Reads the writer's thread (``_writer._thread``): a measurement, not an example."""
    total = 0.0
    for handler in callbacks:
        thread = getattr(getattr(handler, "_writer", None), "_thread", None)
        if isinstance(handler, RunJournal) and thread is not None and thread.ident:
            total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return total


class GcWatch:
    """Counts the collections (young: generations 0-1; full: 2) and their time, per variant."""

    def __init__(self) -> None:
        self.variant: str | None = None
        self.stats: dict[str, list[float]] = {}  # variant -> [young, full, seconds]
        self.after: dict[str, list[float]] = {}  # variant -> the collection after each run
        self.writer: dict[str, list[float]] = {}  # variant -> writer threads' CPU per run
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if self.variant is None:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        stats = self.stats.setdefault(self.variant, [0.0, 0.0, 0.0])
        stats[1 if info["generation"] == 2 else 0] += 1
        stats[2] += time.perf_counter() - self._started

    def collect(self, variant: str | None) -> None:
        """A full collection outside any timing; its time counts as ``variant``'s leftover
        (the garbage its run left, and the next agent's construction, alike for all)."""
        started = time.perf_counter()
        gc.collect()
        if variant is not None:
            self.after.setdefault(variant, []).append(time.perf_counter() - started)

    def close(self) -> None:
        """Stop watching."""
        gc.callbacks.remove(self._callback)


def run_sync(agent: Any, callbacks: list[Any], thread: str, writer: list[float]) -> Timing:
    """Wall and CPU seconds of one sync run (plus the journal's final flush when journaled);
    appends the writer threads' CPU seconds of the run to ``writer``."""
    config = run_config(callbacks, thread)
    before = writer_cpu(callbacks)
    start, cpu = time.perf_counter(), time.process_time()
    agent.invoke({"messages": [HumanMessage("go")]}, config)
    for handler in callbacks:
        if isinstance(handler, RunJournal):
            handler.flush()
    timing = time.perf_counter() - start, time.process_time() - cpu
    writer.append(writer_cpu(callbacks) - before)
    return timing


async def run_async(agent: Any, callbacks: list[Any], thread: str, writer: list[float]) -> Timing:
    """Wall and CPU seconds of one async run (plus the journal's final flush when journaled);
    appends the writer threads' CPU seconds of the run to ``writer``."""
    config = run_config(callbacks, thread)
    before = writer_cpu(callbacks)
    start, cpu = time.perf_counter(), time.process_time()
    await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
    for handler in callbacks:
        if isinstance(handler, RunJournal):
            await handler.aflush()
    timing = time.perf_counter() - start, time.process_time() - cpu
    writer.append(writer_cpu(callbacks) - before)
    return timing


def bench(
    mode: str,
    runs: int,
    steps: int,
    journals: Journals,
    watch: GcWatch,
    legacy: bool = False,
    names: list[str] | None = None,
) -> dict[str, list[Timing]]:
    """Interleaved timings per variant (``names``: these, in this order; else all): one
    warm-up round, then ``runs`` measured rounds, in a rotated order with a full collection
    before each run (``legacy``: neither)."""
    names = names or list(variants(journals))
    times: dict[str, list[Timing]] = {name: [] for name in names}
    previous: str | None = None  # the variant whose garbage the next collection collects
    for round_no in range(runs + 1):
        shift = 0 if legacy else round_no % len(names)
        for name in names[shift:] + names[:shift]:
            callbacks = variants(journals)[name]
            agent = make_agent(steps)
            thread = f"{mode}-{name}-{round_no}"
            if not legacy:
                watch.collect(previous)
            previous = name if round_no else None
            watch.variant = name if round_no else None
            writer: list[float] = []
            if mode == "sync":
                timing = run_sync(agent, callbacks(), thread, writer)
            else:
                timing = asyncio.run(run_async(agent, callbacks(), thread, writer))
            watch.variant = None
            if round_no:
                times[name].append(timing)
                watch.writer.setdefault(name, []).extend(writer)
    return times


def paired(times: dict[str, list[Timing]], name: str, index: int) -> float:
    """Median over rounds of ``name``'s time divided by the same round's ``noop_inline``."""
    base = times["noop_inline"]
    return statistics.median(t[index] / b[index] for t, b in zip(times[name], base, strict=True))


def report(mode: str, times: dict[str, list[Timing]], watch: GcWatch) -> list[str]:
    """Markdown rows: median wall and CPU milliseconds, their ratios to the no-op handlers
    (ratio of medians, and the median of paired ratios), and collections per run."""
    wall = {name: statistics.median(t[0] for t in values) for name, values in times.items()}
    cpu = {name: statistics.median(t[1] for t in values) for name, values in times.items()}
    wall_noop, cpu_noop = wall.get("noop", math.nan), cpu.get("noop", math.nan)  # (if run)
    rows = []
    for name, values in times.items():
        young, full, spent = watch.stats.pop(name, [0.0, 0.0, 0.0])
        after = watch.after.pop(name, [])
        leftover = f"{statistics.median(after) * 1000:.0f}" if after else "-"
        writer = statistics.median(watch.writer.pop(name, [0.0])) * 1000
        runs = len(values)
        rows.append(
            f"| {mode} | {name} | {wall[name] * 1000:.0f} | {wall[name] / wall_noop:.2f} | "
            f"{wall[name] / wall['noop_inline']:.2f} | {paired(times, name, 0):.2f} | "
            f"{cpu[name] * 1000:.0f} | {cpu[name] / cpu_noop:.2f} | "
            f"{cpu[name] / cpu['noop_inline']:.2f} | {paired(times, name, 1):.2f} | "
            f"{young / runs:.1f} / {full / runs:.2f} | {spent / runs * 1000:.1f} | {leftover} | "
            f"{f'{writer:.1f}' if writer else '-'} |"
        )
    return rows


def main() -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument(
        "--legacy", action="store_true", help="fixed order, no collection between runs"
    )
    parser.add_argument(
        "--variants",
        help="comma-separated variants to run (noop_inline always; default: all), e.g. "
        "noop_inline,run_journal: more rounds in the same time for the ratio that matters",
    )
    args = parser.parse_args()
    names = None
    if args.variants:
        names = ["noop_inline", *(n for n in args.variants.split(",") if n != "noop_inline")]
        unknown = set(names) - set(variants({}))
        if unknown:
            parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "bench.db")
        others: dict[str, RunEventStore] = {
            "callbacks": DiscardingStore(),
            "discard": DiscardingStore(),
            "prepare": PreparingStore(),
        }
        journals = {
            name: RunJournal(s, spool_path=Path(tmp) / f"spool-{name}.jsonl")
            for name, s in {"sqlite": store, **others}.items()
        }
        callbacks_only(journals["callbacks"])
        rows = [
            "| mode | variant | wall ms | wall x noop | wall x noop_inline | paired wall x "
            "noop_inline | CPU ms | CPU x noop | CPU x noop_inline | paired CPU x noop_inline "
            "| gc young / full per run | gc ms per run | full collection after, ms | writer "
            "CPU ms per run |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        watch = GcWatch()
        for mode in ("sync", "async"):
            times = bench(mode, args.runs, args.steps, journals, watch, args.legacy, names)
            rows += report(mode, times, watch)
        watch.close()
        for journal in journals.values():
            journal.close()
        events = sum(store.count(t.thread_id) for t in store.list_threads())
        store.close()
        dropped = sum(journal.dropped_events for journal in journals.values())
    protocol = "legacy (fixed order, no collection between runs)" if args.legacy else "rotated"
    print(f"protocol: {protocol}; {args.runs} rounds after a warm-up\n")
    print("\n".join(rows))
    print(f"\nevents journaled in SQLite in total: {events}; dropped (all journals): {dropped}")
    after = os.getloadavg()
    loads = ", ".join(f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, after, strict=True))
    print(f"load average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
