"""Benchmark: concurrent clients reading ``/history`` pages of a 100k-event thread while a
writer appends, against a real uvicorn server on 127.0.0.1 (in its own process).

Two phases run back to back in one invocation, each for ``--duration`` seconds with the same
clients and the same writer: ``history`` (timeline pages, the subject) and ``events`` (raw event
pages of the same size, the baseline), so the ratio between them is comparable even on a noisy
machine. Every client walks from the newest page back through ``next_before_seq`` (or forward
through ``next_after_seq``) for a few pages, then starts again.

    python scripts/bench_http.py                 # 50 clients, 30 s per phase, 100k events
    python scripts/bench_http.py --duration 5 --events 20000 --clients 10   # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from journal.sqlite import SqliteEventStore  # noqa: E402
from tests.http_data import summary_event, turn_events  # noqa: E402

THREAD = "bench-thread"
PAGE = 50
WALK = 5  # pages per walk before starting again from the newest


def build_thread(path: Path, events: int) -> int:
    """Fill ``path`` with a thread of about ``events`` events (reused if already there)."""
    store = SqliteEventStore(path)
    try:
        have = store.last_seq(THREAD)
        if have >= events:
            return have
        turn = have // 10 + 1
        batch: list[dict[str, Any]] = []
        while store.last_seq(THREAD) + len(batch) < events:
            batch += turn_events(THREAD, turn)
            if turn % 50 == 0:  # a compaction every 50 turns, like a long agent session
                ids = [f"h{t}" for t in range(turn - 49, turn + 1)]
                batch.append(summary_event(THREAD, f"run-{turn}", ids, f"Summary of turn {turn}"))
            turn += 1
            if len(batch) >= 2000:
                store.append(batch)
                batch = []
        if batch:
            store.append(batch)
        return store.last_seq(THREAD)
    finally:
        store.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server_process(db: Path) -> Iterator[str]:
    """``history.server.serve`` on the SQLite file, in a child process."""
    port = _free_port()
    code = (
        "from history.server.run import serve; from journal.sqlite import SqliteEventStore; "
        f"serve(SqliteEventStore({str(db)!r}), port={port}, log_level='warning')"
    )
    proc = subprocess.Popen([sys.executable, "-u", "-c", code], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/api/threads", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@dataclass
class Writer:
    """Appends one agent turn (10 events) every ``interval`` seconds from its own thread."""

    db: Path
    interval: float
    appended: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        store = SqliteEventStore(self.db)
        turn = 10_000_000
        try:
            while not self._stop.wait(self.interval):
                self.appended += len(store.append(turn_events(THREAD, turn)))
                turn += 1
        finally:
            store.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        thread = threading.Thread(target=self.run, name="bench-writer")
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()


@dataclass
class Result:
    """Latencies (seconds) and failures of one phase."""

    name: str
    seconds: float
    latencies: list[float]
    errors: int
    appended: int

    def row(self) -> str:
        lat = sorted(self.latencies)
        p50 = statistics.median(lat) * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        rps = len(lat) / self.seconds
        return (
            f"| {self.name} | {len(lat)} | {rps:.0f} | {p50:.1f} | {p99:.1f} | "
            f"{lat[-1] * 1000:.0f} | {self.errors} | {self.appended} |"
        )


async def client_loop(
    client: httpx.AsyncClient,
    kind: str,
    stop: float,
    size: int,
    latencies: list[float],
    errors: list[str],
) -> None:
    """Walk pages until ``stop`` (loop time); record each request's latency."""
    loop = asyncio.get_running_loop()
    rng = random.Random()
    path = f"/api/threads/{THREAD}/{kind}"
    while loop.time() < stop:
        params: dict[str, Any] = {"limit": PAGE}
        if kind == "events":  # forward walks from a random place, like a paging client
            params["after_seq"] = rng.randint(0, max(0, size - PAGE * WALK))
        for _ in range(WALK):
            started = loop.time()
            try:
                response = await client.get(path, params=params)
                response.raise_for_status()
                body = response.json()
            except httpx.HTTPStatusError as e:
                errors.append(f"{e.response.status_code} {e.response.text[:200]}")
                break
            except (httpx.HTTPError, ValueError) as e:
                errors.append(repr(e))
                break
            latencies.append(loop.time() - started)
            cursor = body["next_before_seq"] if kind == "history" else body["next_after_seq"]
            if cursor is None or loop.time() >= stop:
                break
            params["before_seq" if kind == "history" else "after_seq"] = cursor


async def phase(
    url: str, kind: str, clients: int, duration: float, size: int, writer: Writer
) -> Result:
    """Run ``clients`` concurrent walkers for ``duration`` seconds while ``writer`` appends."""
    latencies: list[float] = []
    errors: list[str] = []
    # Idle connections are dropped by the client before uvicorn's 5 s keep-alive timeout, so a
    # request never races the server closing its connection.
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=3
    )
    before = writer.appended
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        stop = started + duration
        await asyncio.gather(
            *(client_loop(client, kind, stop, size, latencies, errors) for _ in range(clients))
        )
        elapsed = loop.time() - started
    for error in sorted(set(errors)):
        print(f"{kind}: {errors.count(error)} x {error}")
    return Result(kind, elapsed, latencies, len(errors), writer.appended - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/runjournal-bench-http.db"))
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--write-interval", type=float, default=0.05)
    parser.add_argument("--phases", nargs="+", default=["history", "events"])
    args = parser.parse_args()

    started = time.monotonic()
    size = build_thread(args.db, args.events)
    print(f"thread {THREAD}: {size} events ({time.monotonic() - started:.1f} s to prepare)")
    writer = Writer(args.db, args.write_interval)
    with server_process(args.db) as url, writer.running():
        results = [
            asyncio.run(phase(url, kind, args.clients, args.duration, size, writer))
            for kind in args.phases
        ]
    print(
        f"\n{args.clients} clients, {args.duration:.0f} s per phase, page {PAGE}, writer: "
        f"10 events every {args.write_interval * 1000:.0f} ms\n"
    )
    print("| phase | requests | req/s | p50 ms | p99 ms | max ms | errors | events appended |")
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        print(result.row())
    if len(results) == 2:
        ratio = statistics.median(results[0].latencies) / statistics.median(results[1].latencies)
        print(f"\n{results[0].name}/{results[1].name} p50 latency ratio: {ratio:.2f}")
    if any(r.errors for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
