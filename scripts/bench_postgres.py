"""Benchmark ``PostgresEventStore`` appends against raw psycopg ``executemany``, in one run.

Starts its own throw-away PostgreSQL 15 cluster (``tests/postgres_server.py``), then measures
events/s, side by side and in alternating rounds so noise hits both alike:

* one writer, batches of 1, 20, 100 and 500 events per transaction: ``store.append(batch)``
  versus raw ``cursor.executemany`` of the same rows (canonical JSON encoding included) into
  an equivalent table (same columns, json types, unique constraints and indexes; seq computed
  by the client, no head row, no idempotency check);
* 1, 2 and 4 concurrent writer processes, each on its own thread, batches of 100, store versus
  raw.

Target: store appends at 100 events per transaction reach at least half of the raw rate.

Usage: ``python scripts/bench_postgres.py [--rounds 3] [--events 20000]``.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.postgres_server

from journal import NewEvent
from journal.encoding import dumps
from journal.postgres import PostgresEventStore
from tests.postgres_server import PostgresServer, fresh_database_url

BATCHES = (1, 20, 100, 500)
PROCESSES = (1, 2, 4)

RAW_TABLE = """
CREATE TABLE raw_events (
    thread_id text NOT NULL, seq bigint NOT NULL, event_id text NOT NULL, run_id text NOT NULL,
    category text NOT NULL, event_type text NOT NULL, content json NOT NULL,
    metadata json NOT NULL, created_at timestamptz NOT NULL,
    UNIQUE (thread_id, seq), UNIQUE (event_id)
);
CREATE INDEX raw_events_run ON raw_events (thread_id, run_id, seq);
CREATE INDEX raw_events_category ON raw_events (thread_id, category, seq);
"""
RAW_INSERT = (
    "INSERT INTO raw_events (thread_id, seq, event_id, run_id, category, event_type, content, "
    "metadata, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def _events(thread_id: str, count: int) -> list[NewEvent]:
    """Typical trace events: ~300 bytes of content, a little metadata."""
    return [
        NewEvent(
            thread_id=thread_id,
            run_id="run-1",
            category="trace",
            event_type="llm.end",
            content={"text": "token " * 40, "index": i, "usage": {"in": 120, "out": 48}},
            metadata={"model": "fake", "langgraph_step": i, "latency_ms": 12.5},
        )
        for i in range(count)
    ]


def _store_rate(url: str, thread_id: str, count: int, batch: int) -> float:
    events = _events(thread_id, count)
    with PostgresEventStore(url, max_size=1) as store:
        start = time.perf_counter()
        for i in range(0, count, batch):
            store.append(events[i : i + batch])
        return count / (time.perf_counter() - start)


def _raw_rate(url: str, thread_id: str, count: int, batch: int) -> float:
    events = _events(thread_id, count)
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor:
        start = time.perf_counter()
        for i in range(0, count, batch):
            rows = [
                (e.thread_id, i + k + 1, e.event_id, e.run_id, e.category, e.event_type,
                 dumps(e.content), dumps(e.metadata), e.created_at)
                for k, e in enumerate(events[i : i + batch])
            ]  # fmt: skip
            with conn.transaction():
                cursor.executemany(RAW_INSERT, rows)
        return count / (time.perf_counter() - start)


def _worker(kind: str, url: str, count: int, batch: int, barrier: Any, out: Any) -> None:
    logging.disable(logging.INFO)
    logging.getLogger("runjournal").setLevel(logging.WARNING)
    thread_id = f"{kind}-{uuid.uuid4().hex[:8]}"
    barrier.wait()
    rate = (_store_rate if kind == "store" else _raw_rate)(url, thread_id, count, batch)
    out.put(count / rate)  # elapsed seconds


def _parallel_rate(kind: str, url: str, processes: int, count: int) -> float:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(kind, url, count, 100, barrier, out))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    elapsed: list[float] = [out.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join()
    return processes * count / max(elapsed)


def main() -> None:
    """Run the benchmark and print Markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=20_000, help="events per batched run")
    args = parser.parse_args()
    logging.getLogger("runjournal").setLevel(logging.WARNING)
    with PostgresServer() as server:
        url = fresh_database_url(server.url)
        PostgresEventStore(url).close()  # migrate once
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(RAW_TABLE)
        single: dict[tuple[str, int], list[float]] = {}
        multi: dict[tuple[str, int], list[float]] = {}
        for round_ in range(args.rounds):
            for batch in BATCHES:
                count = args.events // 10 if batch == 1 else args.events  # 1/txn is slow
                for kind, rate in (("store", _store_rate), ("raw", _raw_rate)):
                    thread_id = f"{kind}-{round_}-{batch}"
                    single.setdefault((kind, batch), []).append(rate(url, thread_id, count, batch))
            for processes in PROCESSES:
                for kind in ("store", "raw"):
                    value = _parallel_rate(kind, url, processes, args.events // 4)
                    multi.setdefault((kind, processes), []).append(value)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    print(f"\nOne writer, events/s (median of {args.rounds} rounds)\n")
    print("| events per transaction | store append | raw executemany | store / raw |")
    print("|---:|---:|---:|---:|")
    for batch in BATCHES:
        store, raw = (statistics.median(single[(k, batch)]) for k in ("store", "raw"))
        print(f"| {batch} | {store:,.0f} | {raw:,.0f} | {store / raw:.2f} |")
    print(f"\nConcurrent writer processes, distinct threads, 100 events per transaction, "
          f"aggregate events/s (median of {args.rounds} rounds)\n")  # fmt: skip
    print("| processes | store append | raw executemany | store / raw |")
    print("|---:|---:|---:|---:|")
    for processes in PROCESSES:
        store, raw = (statistics.median(multi[(k, processes)]) for k in ("store", "raw"))
        print(f"| {processes} | {store:,.0f} | {raw:,.0f} | {store / raw:.2f} |")
    print(f"\nrun at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
