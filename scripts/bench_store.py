"""Benchmark of ``SqliteEventStore``: append throughput against raw executemany, page latency.

Usage::

    python scripts/bench_store.py            # full run (~1-2 minutes)
    python scripts/bench_store.py --quick    # smaller volumes, for a smoke test

Measured side by side in one run, so the ratios hold on a noisy machine:

* appends of ~1 KB events in batches of 1, 20, 100, 500: events/s through
  ``SqliteEventStore.append`` (events built beforehand, validation and encoding included) and
  through raw ``sqlite3.executemany`` of pre-encoded rows into an equivalent table (same
  columns, indexes, WAL and ``synchronous``), one transaction per batch;
* ``before_seq`` page reads of 50 events near the head and in the middle of a 100k-event
  thread versus a 1k-event thread of the same file (median of repeated reads).
"""

from __future__ import annotations

import argparse
import functools
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from journal import NewEvent, SqliteEventStore
from journal import _sqlite_schema as schema
from journal.encoding import dumps

PAD = "lorem ipsum dolor sit amet " * 37  # ~1 KB of content per event


def make_events(thread_id: str, count: int) -> list[NewEvent]:
    """``count`` trace events of about 1 KB each."""
    return [
        NewEvent(
            thread_id=thread_id,
            run_id="run-1",
            category="trace",
            event_type="llm.end",
            content={"i": i, "text": PAD},
            metadata={"model": "bench", "usage": {"input_tokens": i}},
        )
        for i in range(count)
    ]


def raw_table(path: Path, synchronous: str) -> sqlite3.Connection:
    """A connection to a file holding the same events table and indexes, configured alike."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    store = SqliteEventStore(path.with_suffix(".schema.db"), synchronous=synchronous)
    store.close()
    source = sqlite3.connect(path.with_suffix(".schema.db"))
    ddl = [
        row[0]
        for row in source.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN "
            "('table', 'index') AND sql IS NOT NULL ORDER BY type DESC"
        )
    ]
    source.close()
    for statement in ddl:
        conn.execute(statement)
    return conn


class Timer:
    """Accumulated wall and CPU seconds over several timed sections."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def run(self, func: Callable[[], object]) -> None:
        """Run ``func`` once, adding its wall and CPU time."""
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu


def bench_appends(
    workdir: Path, batch: int, total: int, synchronous: str, rounds: int = 5
) -> tuple[Timer, Timer]:
    """Time the store and raw executemany appending ``total`` events, ``batch`` per commit.

    The two alternate in ``rounds`` slices so that load from other processes hits both alike.
    """
    events = make_events(f"append-{batch}", total)
    rows = [
        (e.event_id, e.thread_id, n + 1, e.run_id, e.category, e.event_type,
         dumps(e.content), dumps(e.metadata), n)
        for n, e in enumerate(events)
    ]  # fmt: skip
    store = SqliteEventStore(workdir / f"store-{batch}.db", synchronous=synchronous)
    conn = raw_table(workdir / f"raw-{batch}.db", synchronous)

    def store_slice(lo: int, hi: int) -> None:
        for i in range(lo, hi, batch):
            store.append(events[i : min(i + batch, hi)])

    def raw_slice(lo: int, hi: int) -> None:
        for i in range(lo, hi, batch):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(schema.INSERT_EVENT_SQL, rows[i : min(i + batch, hi)])
            conn.execute("COMMIT")

    store_time, raw_time = Timer(), Timer()
    step = max(batch, total // rounds // batch * batch)
    for n, lo in enumerate(range(0, total, step)):
        hi = min(lo + step, total)
        order = [(store_time, store_slice), (raw_time, raw_slice)]
        for timer, func in order if n % 2 == 0 else order[::-1]:
            timer.run(functools.partial(func, lo, hi))
    store.close()
    conn.close()
    return store_time, raw_time


def median_ms(func: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``func`` in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_pages(workdir: Path, big: int, small: int, repeats: int) -> dict[str, float]:
    """Median latency of a 50-event before_seq page at the head and middle of two threads."""
    store = SqliteEventStore(workdir / "pages.db")
    for thread_id, count in (("big", big), ("small", small)):
        for i in range(0, count, 500):
            store.append(make_events(thread_id, min(500, count - i)))
    results: dict[str, float] = {}
    for thread_id, count in (("big", big), ("small", small)):
        for where, cursor in (("head", count + 1), ("middle", count // 2)):
            page = functools.partial(store.read, thread_id, before_seq=cursor, limit=50)
            results[f"{thread_id}-{where}"] = median_ms(page, repeats)
    store.close()
    return results


def main() -> None:
    """Run the benchmark and print a Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller volumes")
    parser.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"])
    args = parser.parse_args()
    per_size = 2_000 if args.quick else 10_000
    big, small = (20_000, 1_000) if args.quick else (100_000, 1_000)
    print(f"# bench_store ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print(f"sqlite {sqlite3.sqlite_version}, synchronous={args.synchronous}\n")
    print(
        "| batch | SqliteEventStore ev/s | raw executemany ev/s | ratio (wall) | ratio (CPU time) |"
    )
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        workdir = Path(tmp)
        for batch in (1, 20, 100, 500):
            total = min(per_size, 5_000) if batch == 1 else per_size
            st, raw = bench_appends(workdir, batch, total, args.synchronous)
            print(
                f"| {batch} | {total / st.wall:,.0f} | {total / raw.wall:,.0f} "
                f"| {raw.wall / st.wall:.2f} | {raw.cpu / st.cpu:.2f} |"
            )
        pages = bench_pages(workdir, big, small, repeats=200)
    print(f"\n| 50-event page (before_seq) | {big:,}-event thread | {small:,}-event thread "
          "| ratio |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for where in ("head", "middle"):
        b, s = pages[f"big-{where}"], pages[f"small-{where}"]
        print(f"| {where} | {b:.3f} ms | {s:.3f} ms | {b / s:.2f} |")


if __name__ == "__main__":
    main()
