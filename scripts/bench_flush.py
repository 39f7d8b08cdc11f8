"""Benchmark: how long a caller waits in ``RunJournal.flush()`` after each agent run.

Runs the fake 200-superstep ``create_agent`` run of ``scripts/bench_journal.py`` ``--runs``
times in a row (after ``--warmup`` runs), journaled by one ``RunJournal`` into one
``SqliteEventStore``, each run on a thread of its own, and measures the ``flush()`` that
follows each run: what a server that answers once the run's events are stored, or a
``close``, waits for. A collection runs before each run (outside the timing). The journal's
writer writes during the run; the flush waits for what is left (the last batch) and for
anything the store does in its commits, such as a WAL checkpoint. Reports the flush's
median, 90th percentile and maximum, how many flushes took over 5 ms, the run's median
(the flush included), the WAL file's size at the end, and the machine's load average.

Usage: ``PYTHONPATH=. python scripts/bench_flush.py [--runs 60] [--warmup 3]``
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal
from bench_journal import make_agent, run_config

from journal import RunJournal, SqliteEventStore


def measure(runs: int, warmup: int, directory: Path) -> tuple[list[float], list[float], int]:
    """Flush and run milliseconds of each measured run, and the WAL's size at the end."""
    path = directory / "flush.db"
    store = SqliteEventStore(path)
    journal = RunJournal(store)
    flushes: list[float] = []
    walls: list[float] = []
    try:
        for number in range(warmup + runs):
            agent = make_agent(100)
            gc.collect()
            started = time.perf_counter()
            agent.invoke({"messages": [HumanMessage("go")]}, run_config([journal], f"t{number}"))
            ran = time.perf_counter()
            journal.flush()
            done = time.perf_counter()
            if number >= warmup:
                flushes.append(1000 * (done - ran))
                walls.append(1000 * (done - started))
        wal = path.with_name(path.name + "-wal")
        size = wal.stat().st_size if wal.exists() else 0
    finally:
        journal.close()
        store.close()
    return flushes, walls, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        flushes, walls, wal = measure(args.runs, args.warmup, Path(tmp))
    ordered = sorted(flushes)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    print(f"{args.runs} runs after {args.warmup} warm-up runs, one journal, one SQLite file\n")
    print(
        "| flush median ms | flush p90 ms | flush max ms | flushes over 5 ms | run median ms "
        "| WAL at the end, MB |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {statistics.median(flushes):.2f} | {p90:.2f} | {ordered[-1]:.2f} "
        f"| {sum(f > 5 for f in flushes)} | {statistics.median(walls):.1f} | {wal / 1e6:.1f} |"
    )
    after = os.getloadavg()
    print(
        "\nload average (1, 5, 15 min) before->after: "
        + ", ".join(f"{b:.2f}->{a:.2f}" for b, a in zip(load_before, after, strict=True))
    )


if __name__ == "__main__":
    main()
