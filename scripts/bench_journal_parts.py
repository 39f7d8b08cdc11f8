"""Benchmark: where a journaled agent run's overhead goes, part by part, in CPU time.

Records the callbacks of one fake 200-superstep ``create_agent`` run (the run of
``scripts/bench_journal.py``), then, ``--runs`` times each, measures in the calling thread's
CPU time (``time.thread_time``: other processes on the machine do not count) with the garbage
collector paused:

* ``callbacks``: the callback path, replayed into a fresh ``RunJournal`` whose events are
  collected instead of queued for its writer — what the agent's thread pays;
* ``build``: the writer thread turning those queued events into store batches, 150 queued
  items a batch as the writer takes them in such a run (message conversion, digests, context
  records, event ids, and whatever checks the writer makes before the store's);
* ``prepare``: ``SqliteEventStore.prepare`` of the batches (validation, encoding, caps);
* ``append``: ``SqliteEventStore.append`` of the batches into a fresh database (``prepare``
  included);
* ``writer append``: the same batches (built again) as the journal's writer appends them
  (``_append_unreturned``: the records it does not use are not built), into another fresh
  database.

Read ``build`` and ``prepare`` together when comparing trees: work moves between them (a
writer that checks and encodes what it builds leaves ``prepare`` less to do).

Reports the minimum (the least disturbed run) and the median of each, in ms per run and µs per
event. It reaches into the journal's parts (``_sink``, ``Writer._build``): a measurement tool,
not an example.

Usage: ``PYTHONPATH=. python scripts/bench_journal_parts.py [--runs 30]``
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal
from bench_journal import make_agent, run_config

from journal import MemoryEventStore, RunJournal, SqliteEventStore
from journal._queued import Pending
from journal._writer import Writer
from journal.spool import Spool

_CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chat_model_start",
    "on_llm_end",
    "on_tool_start",
    "on_tool_end",
)
_BATCH = 150


class Recorder(BaseCallbackHandler):
    """Keeps every callback of a run, in order, with its arguments."""

    run_inline = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name in _CALLBACKS:
            calls = object.__getattribute__(self, "calls")
            return lambda *args, **kwargs: calls.append((name, args, kwargs))
        return object.__getattribute__(self, name)


class Collector:
    """Stands in for the journal's writer: keeps what the callback path queues."""

    def __init__(self) -> None:
        self.items: list[Pending] = []

    def put(self, item: Pending) -> bool:
        self.items.append(item)
        return True

    def settled(self) -> None:
        pass

    def wake(self) -> None:
        pass


def cpu(action: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of ``action()`` in this thread, the collector paused; and its result."""
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        result = action()
        return time.thread_time() - start, result
    finally:
        gc.enable()


def replay(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]], tmp: Path) -> list[Pending]:
    """The callback path: ``calls`` into a fresh journal; what it queued."""
    journal = RunJournal(MemoryEventStore(), spool_path=tmp / "unused.jsonl")
    collector = Collector()
    journal._sink._writer = collector  # type: ignore[assignment]
    bound = [(getattr(journal, name), args, kwargs) for name, args, kwargs in calls]
    for method, args, kwargs in bound:
        method(*args, **kwargs)
    return collector.items


def _each(action: Callable[[Any], Any], batches: list[Any]) -> list[Any]:
    return [action(batch) for batch in batches]


def main() -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    load_before = os.getloadavg()
    recorder = Recorder()
    make_agent(args.steps).invoke({"messages": [HumanMessage("go")]}, run_config([recorder], "t"))
    times: dict[str, list[float]] = {"callbacks": [], "build": [], "prepare": [], "append": [],
                                     "writer append": []}  # fmt: skip
    events = 0
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        for run in range(args.runs + 1):
            spent, queued = cpu(partial(replay, recorder.calls, tmp))
            writer = Writer(MemoryEventStore(), Spool(tmp / "unused-writer.jsonl"))
            chunks = [queued[k : k + _BATCH] for k in range(0, len(queued), _BATCH)]
            built_in, batches = cpu(partial(_each, writer._build, chunks))
            store = SqliteEventStore(tmp / f"parts-{run}.db")
            prepared_in, _ = cpu(partial(_each, store.prepare, batches))
            appended_in, _ = cpu(partial(_each, store.append, batches))
            store.close()
            again = Writer(MemoryEventStore(), Spool(tmp / "unused-again.jsonl"))
            queued = replay(recorder.calls, tmp)
            chunks = [queued[k : k + _BATCH] for k in range(0, len(queued), _BATCH)]
            fresh = _each(again._build, chunks)
            store = SqliteEventStore(tmp / f"parts-writer-{run}.db")
            written_in, _ = cpu(partial(_each, store._append_unreturned, fresh))
            store.close()
            events = sum(map(len, batches))
            if run:  # the first round warms up
                for name, value in zip(
                    times, (spent, built_in, prepared_in, appended_in, written_in), strict=True
                ):
                    times[name].append(value)
    print(f"{len(recorder.calls)} callbacks, {events} events per run; {args.runs} runs\n")
    print("| part | min ms | median ms | min µs/event | median µs/event |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        low, mid = min(values), statistics.median(values)
        print(
            f"| {name} | {low * 1000:.2f} | {mid * 1000:.2f} | {low / events * 1e6:.1f} | "
            f"{mid / events * 1e6:.1f} |"
        )
    after = os.getloadavg()
    loads = ", ".join(f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, after, strict=True))
    print(f"\nload average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
