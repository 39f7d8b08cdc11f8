"""Benchmark: what journaling costs a 200-superstep agent run, side by side in one process.

Runs a fake ``create_agent`` run (100 tool calls, 201 supersteps) sync and async, with: no
callbacks; a no-op ``BaseCallbackHandler`` (default, and ``run_inline``); LangChain's in-memory
``RunCollectorCallbackHandler``; ``RunJournal`` on ``SqliteEventStore`` (the final flush is
inside the timing); and two bounds of the journal's own share: ``RunJournal`` on a store whose
``append`` discards each batch (every event built and queued, its content and digests built by
the writer, nothing stored: what journaling costs before any store), and on a store whose
``append`` only runs ``prepare`` (the store's validation, encoding and caps of each batch, no
SQLite). Variants are
interleaved round by round so machine noise hits them alike; the report is the median of
``--runs`` rounds of wall time and of process CPU time (all threads, the journal's writer
included; steadier than wall time on a loaded machine), and their ratios to the no-op
handlers; then the machine's load average before and after (2 cores: below ~1.5 nothing else
was running to speak of).

Usage: ``python scripts/bench_journal.py [--runs 9] [--steps 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
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

from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore


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


def run_sync(agent: Any, callbacks: list[Any], thread: str) -> Timing:
    """Wall and CPU seconds of one sync run (plus the journal's final flush when journaled)."""
    config = run_config(callbacks, thread)
    start, cpu = time.perf_counter(), time.process_time()
    agent.invoke({"messages": [HumanMessage("go")]}, config)
    for handler in callbacks:
        if isinstance(handler, RunJournal):
            handler.flush()
    return time.perf_counter() - start, time.process_time() - cpu


async def run_async(agent: Any, callbacks: list[Any], thread: str) -> Timing:
    """Wall and CPU seconds of one async run (plus the journal's final flush when journaled)."""
    config = run_config(callbacks, thread)
    start, cpu = time.perf_counter(), time.process_time()
    await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
    for handler in callbacks:
        if isinstance(handler, RunJournal):
            await handler.aflush()
    return time.perf_counter() - start, time.process_time() - cpu


def bench(mode: str, runs: int, steps: int, journals: Journals) -> dict[str, list[Timing]]:
    """Interleaved timings per variant: one warm-up round, then ``runs`` measured rounds."""
    times: dict[str, list[Timing]] = {name: [] for name in variants(journals)}
    for round_no in range(runs + 1):
        for name, callbacks in variants(journals).items():
            agent = make_agent(steps)
            thread = f"{mode}-{name}-{round_no}"
            if mode == "sync":
                timing = run_sync(agent, callbacks(), thread)
            else:
                timing = asyncio.run(run_async(agent, callbacks(), thread))
            if round_no:
                times[name].append(timing)
    return times


def report(mode: str, times: dict[str, list[Timing]]) -> list[str]:
    """Markdown rows: median wall and CPU milliseconds, and their ratios to the no-op handlers."""
    wall = {name: statistics.median(t[0] for t in values) for name, values in times.items()}
    cpu = {name: statistics.median(t[1] for t in values) for name, values in times.items()}
    return [
        f"| {mode} | {name} | {wall[name] * 1000:.0f} | {wall[name] / wall['noop']:.2f} | "
        f"{wall[name] / wall['noop_inline']:.2f} | {cpu[name] * 1000:.0f} | "
        f"{cpu[name] / cpu['noop']:.2f} | {cpu[name] / cpu['noop_inline']:.2f} |"
        for name in times
    ]


def main() -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "bench.db")
        others: dict[str, RunEventStore] = {
            "discard": DiscardingStore(),
            "prepare": PreparingStore(),
        }
        journals = {
            name: RunJournal(s, spool_path=Path(tmp) / f"spool-{name}.jsonl")
            for name, s in {"sqlite": store, **others}.items()
        }
        rows = [
            "| mode | variant | wall ms | wall x noop | wall x noop_inline | CPU ms | CPU x noop "
            "| CPU x noop_inline |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for mode in ("sync", "async"):
            rows += report(mode, bench(mode, args.runs, args.steps, journals))
        for journal in journals.values():
            journal.close()
        events = sum(store.count(t.thread_id) for t in store.list_threads())
        store.close()
        dropped = sum(journal.dropped_events for journal in journals.values())
    print("\n".join(rows))
    print(f"\nevents journaled in SQLite in total: {events}; dropped (all journals): {dropped}")
    after = os.getloadavg()
    loads = ", ".join(f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, after, strict=True))
    print(f"load average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
