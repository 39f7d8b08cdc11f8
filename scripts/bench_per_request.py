"""Benchmark: one journal per request against one journal kept, on a thread that has grown.

A server may make a ``RunJournal`` per request (per run). Such a journal meets the thread
anew: before its first build, its writer reads the digests of every message the thread stored
(for the calls' context records) and the versions of the messages it may have to drop as
repeats, and it journals the state's messages it has not seen (dropped as repeats by the
writer). This measures what that costs a run, side by side in one process: a fake
``create_agent`` run with a checkpointer (``--rounds`` tool calls a run) on a thread that
``--turns`` earlier runs grew, with

* ``kept``: one journal for every run (``flush()`` inside the timing);
* ``per_request``: a new journal per run, closed inside the timing;
* ``per_request_event_reads``: the same, with the store's one-read answer of those reads
  (``_message_marks``) turned off, so that the writer reads the events themselves (as before
  that read existed).

Variants rotate round by round after a warm-up; ``gc.collect()`` before each run (outside the
timing); the thread grows by a run each run, alike for all. Reports the median wall time and
the median of the per-round ratio to ``kept``, the thread's size, and the load average.

Usage: ``python scripts/bench_per_request.py [--runs 7] [--turns 100] [--rounds 10] [--postgres]``
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal
from bench_journal import LeanScriptedModel, add, run_config

from journal import RunEventStore, RunJournal, SqliteEventStore

VARIANTS = ("kept", "per_request", "per_request_event_reads")


@contextmanager
def a_store(postgres: bool, tmp: Path) -> Iterator[RunEventStore]:
    """A fresh SQLite file, or a fresh database on a throw-away PostgreSQL cluster."""
    if not postgres:
        store = SqliteEventStore(tmp / "bench.db")
        yield store
        store.close()
        return
    from journal.postgres import PostgresEventStore
    from tests.postgres_server import PostgresServer, fresh_database_url

    with PostgresServer() as server:
        store = PostgresEventStore(fresh_database_url(server.url))
        yield store
        store.close()


def one_run(store: RunEventStore, agent: Callable[[], Any], journal: RunJournal | None,
            question: str, spool: Path) -> float:  # fmt: skip
    """Wall seconds of a run of thread ``t`` on ``journal`` (flushed), else a new one (closed)."""
    runner = agent()
    gc.collect()
    start = time.perf_counter()
    used = journal or RunJournal(store, spool_path=spool)
    runner.invoke({"messages": [HumanMessage(question)]}, run_config([used], "t"))
    if journal is None:
        used.close()
    else:
        used.flush()
    return time.perf_counter() - start


def main() -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    saver = InMemorySaver()

    def agent() -> Any:
        return create_agent(LeanScriptedModel(tool_rounds=args.rounds), [add], checkpointer=saver)

    with tempfile.TemporaryDirectory() as raw, a_store(args.postgres, Path(raw)) as store:
        tmp = Path(raw)
        kept = RunJournal(store, spool_path=tmp / "kept.jsonl")
        for turn in range(args.turns):
            agent().invoke({"messages": [HumanMessage(f"q{turn}")]}, run_config([kept], "t"))
        assert kept.flush(60)
        before = len(store.read("t"))
        kind = type(store)
        one_read = kind._message_marks
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for r in range(args.runs + 1):
            for name in VARIANTS[r % 3 :] + VARIANTS[: r % 3]:
                kind._message_marks = (  # type: ignore[method-assign]
                    one_read if name != "per_request_event_reads" else lambda *a, **k: None
                )
                spent = one_run(store, agent, kept if name == "kept" else None, f"x{r}{name}",
                                tmp / f"{name}-{r}.jsonl")  # fmt: skip
                if r:  # the first round warms up
                    times[name].append(spent)
        kind._message_marks = one_read  # type: ignore[method-assign]
        after = len(store.read("t"))
        kept.close()
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}; thread events {before} -> {after}; {args.runs} rounds\n")
    print("| variant | wall ms | paired x kept |")
    print("|---|---|---|")
    for name, values in times.items():
        paired = statistics.median(a / b for a, b in zip(values, times["kept"], strict=True))
        print(f"| {name} | {statistics.median(values) * 1000:.0f} | {paired:.2f} |")
    loads = ", ".join(
        f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, os.getloadavg(), strict=True)
    )
    print(f"\nload average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
