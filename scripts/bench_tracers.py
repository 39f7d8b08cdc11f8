"""Benchmark: RunJournal side by side with LangSmith's tracer, Langfuse and DeerFlow's run journal.

The same fake ``create_agent`` run as ``bench_journal.py`` (``make_agent``: 100 tool calls, 201
supersteps), sync (``invoke``) and async (``ainvoke``), in one process, with:

* ``none``: no callbacks; ``noop_inline``: a no-op handler run inline (the baselines);
* ``run_journal``: ``RunJournal`` on ``SqliteEventStore`` (WAL, ``synchronous=NORMAL``), one
  journal for all runs, its ``flush()`` / ``aflush()`` inside the timing;
* ``langsmith`` and ``langsmith_plain``: LangChain's ``LangChainTracer`` (a new tracer per run,
  as LangChain makes one per run) on one ``langsmith.Client`` per variant, configured by
  default (auto-batch tracing, its background threads, the multipart endpoint), pointed at a
  discarding HTTP endpoint on 127.0.0.1 served by a thread of this process; the client's
  ``flush()`` (the tracer's ``wait_for_futures``) inside the timing. ``langsmith``'s endpoint
  answers ``/info`` with ``zstd_compression_enabled`` (as LangSmith's service does): the client
  serializes each run, writes it as multipart parts into a zstd stream on the calling thread
  and a background thread sends the stream; ``langsmith_plain``'s endpoint does not: each run
  is serialized on the calling thread, queued, and background threads send uncompressed
  multipart batches. The endpoint counts requests and body bytes; the bodies are read back
  after each run (outside the timing) to count the runs posted and patched;
* ``langfuse`` (when the ``langfuse`` package is installed; skipped otherwise): Langfuse's
  LangChain ``CallbackHandler`` (a new one per run; it is not ``run_inline``, so LangChain runs
  it on its thread pool in async runs) on one ``Langfuse`` client configured by default, whose
  OpenTelemetry batch span processor exports gzip-compressed OTLP protobuf to the local
  endpoint; the client's ``flush()`` inside the timing; the spans are counted from the bodies
  after each run;
* ``deerflow_jsonl`` and ``deerflow_memory`` (``--deerflow DIR``: DeerFlow's
  ``backend/packages/harness``, from a checkout or ``git archive``): DeerFlow's own
  ``RunJournal`` (``deerflow/runtime/journal.py``), one per run as its worker builds it
  (``run_id``, ``thread_id``, the event store, a progress reporter: here an async no-op), on its
  ``JsonlRunEventStore`` (one file per run, ``json.dumps`` and the write in a worker thread via
  ``asyncio.to_thread``, no fsync) or its ``MemoryRunEventStore``, its ``await flush()`` (what
  the worker's ``finally`` block calls) inside the timing. Async only: the journal stores
  through ``asyncio`` tasks; in a sync run (no running loop) every event stays in its buffer
  until an awaited ``flush()``. Its SQLAlchemy store (``db.py``) is not measured: SQLAlchemy is
  not installed here. DeerFlow's package ``__init__`` files import dependencies that are not
  installed (dotenv, its config, ...), so its packages are entered in ``sys.modules`` as empty
  stubs whose ``__path__`` is the checkout's directory, and the journal and the few modules it
  imports (``constants``, ``runtime.user_context``, ``utils.thread_id``,
  ``agents.human_input``, ``utils.messages``, ``runtime.events.catalog`` and the stores'
  ``base``, ``memory``, ``jsonl``) load from their files without any ``__init__``. DeerFlow
  declares Python >= 3.12; these modules parse and run on 3.11.

Protocol (``bench_journal.py``'s): one warm-up round, then ``--runs`` rounds, each running the
variants in a rotated order (round ``r`` starts at variant ``r``), a full ``gc.collect()``
before each timed run (outside the timing). Reported per mode and variant: the median wall
time and process CPU time (all threads), the median CPU time of the agent's thread (its
per-thread clock: the rest of the CPU was spent off it, in writers, senders and the endpoint),
the endpoint's own CPU, the medians of the per-round paired ratios to ``noop_inline`` and to
``none``, and what each recorded per run; then the load average before and after.

Usage: ``python scripts/bench_tracers.py [--runs 11] [--mode sync|async|both] [--deerflow DIR]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import io
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import types
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal
from bench_journal import InlineNoop, make_agent, run_config

from journal import RunJournal, SqliteEventStore

Recorded = dict[str, float]  # what a variant recorded in one run: a count or bytes per name


class Variant:
    """One side of the comparison: the callbacks of a run, the flush timed with it, and what
    the run recorded (read after the timing)."""

    modes: tuple[str, ...] = ("sync", "async")

    def __init__(self, name: str) -> None:
        self.name = name

    def callbacks(self, thread: str) -> list[Any]:
        """The run's callbacks."""
        return []

    def flush(self) -> None:
        """Make the run's records final (inside the timing of a sync run)."""

    async def aflush(self) -> None:
        """Make the run's records final (inside the timing of an async run)."""
        self.flush()

    def recorded(self, thread: str) -> Recorded:
        """What the run on ``thread`` recorded (after the timing)."""
        return {}


class Noop(Variant):
    """The inline no-op handler."""

    def callbacks(self, thread: str) -> list[Any]:
        return [InlineNoop()]


class Journaled(Variant):
    """RunJournal on SQLite; the file's logical growth (page count) read after each run."""

    def __init__(self, name: str, tmp: Path) -> None:
        super().__init__(name)
        self.path = tmp / "journal.db"
        self.store = SqliteEventStore(self.path)
        self.journal = RunJournal(self.store, spool_path=tmp / "spool.jsonl")
        self._size = self._db_bytes()

    def _db_bytes(self) -> int:
        with sqlite3.connect(self.path) as conn:  # a reader sees the WAL's committed pages
            count = conn.execute("PRAGMA page_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.close()
        return int(count * size)

    def callbacks(self, thread: str) -> list[Any]:
        return [self.journal]

    def flush(self) -> None:
        self.journal.flush()

    async def aflush(self) -> None:
        await self.journal.aflush()

    def recorded(self, thread: str) -> Recorded:
        size, self._size = self._size, self._db_bytes()
        return {"events": self.store.count(thread), "db bytes": self._size - size}

    def close(self) -> None:
        """Close the journal and its store."""
        self.journal.close()
        self.store.close()


class Endpoint:
    """A discarding LangSmith endpoint on 127.0.0.1 (a thread per connection of this process):
    answers ``/info`` and accepts every POST; keeps each body until ``take`` (to count runs
    after the timing), counts requests and bytes, and the CPU its threads spent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[tuple[str, str, bytes]] = []  # (path, content encoding, body)
        self.cpu = 0.0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, body: bytes, status: int = 200, kind: str = "json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", f"application/{kind}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                started = time.thread_time()
                zstd = "true" if self.path.startswith("/zstd/") else "false"
                if self.path.endswith("/info"):
                    flags = f'{{"zstd_compression_enabled": {zstd}}}'
                    self._reply(f'{{"version": "0.12.0", "instance_flags": {flags}}}'.encode())
                else:
                    self._reply(b"{}")
                with endpoint.lock:
                    endpoint.cpu += time.thread_time() - started

            def do_POST(self) -> None:
                started = time.thread_time()
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = self._read_chunked()
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                encoding = self.headers.get("Content-Encoding", "")
                with endpoint.lock:  # kept before the reply: the client's flush waits for it
                    endpoint.bodies.append((self.path, encoding, body))
                if "/otel/" in self.path:  # an empty ExportTraceServiceResponse
                    self._reply(b"", 200, "x-protobuf")
                else:
                    self._reply(b"{}", 202)
                with endpoint.lock:
                    endpoint.cpu += time.thread_time() - started

            def _read_chunked(self) -> bytes:
                out = io.BytesIO()
                while size := int(self.rfile.readline().strip() or b"0", 16):
                    out.write(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return out.getvalue()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, prefix: str) -> list[tuple[str, str, bytes]]:
        """The bodies received under ``prefix`` since the last call (and forget them)."""
        with self.lock:
            mine = [b for b in self.bodies if b[0].startswith(prefix)]
            self.bodies = [b for b in self.bodies if not b[0].startswith(prefix)]
        return mine

    def take_cpu(self) -> float:
        """The endpoint threads' CPU seconds since the last call."""
        with self.lock:
            cpu, self.cpu = self.cpu, 0.0
        return cpu

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


_RUN_PART = re.compile(rb'name="(post|patch)\.[0-9a-f-]{36}"')


class LangSmith(Variant):
    """LangChain's LangSmith tracer on a default ``langsmith.Client`` whose endpoint is local."""

    def __init__(self, name: str, endpoint: Endpoint, prefix: str) -> None:
        from langsmith import Client

        super().__init__(name)
        self.endpoint = endpoint
        self.prefix = prefix
        self.client = Client(api_url=endpoint.url + prefix, api_key="bench")
        self.client.info  # noqa: B018 - the /info answer, read once as the client does
        self.tracer: Any = None

    def callbacks(self, thread: str) -> list[Any]:
        from langchain_core.tracers.langchain import LangChainTracer

        self.tracer = LangChainTracer(project_name="bench", client=self.client)
        return [self.tracer]

    def flush(self) -> None:
        self.tracer.wait_for_futures()

    def recorded(self, thread: str) -> Recorded:
        import zstandard

        bodies = self.endpoint.take(self.prefix + "/runs")
        posts = patches = 0
        for _, encoding, body in bodies:
            if encoding == "zstd":
                body = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)).read()
            for match in _RUN_PART.finditer(body):
                if match.group(1) == b"post":
                    posts += 1
                else:
                    patches += 1
        return {
            "requests": len(bodies),
            "bytes sent": sum(len(b[2]) for b in bodies),
            "runs posted": posts,
            "runs patched": patches,
        }


class Langfuse(Variant):
    """Langfuse's LangChain ``CallbackHandler`` (a new one per run) on one ``Langfuse`` client,
    its OpenTelemetry exporter pointed at the local endpoint."""

    def __init__(self, name: str, endpoint: Endpoint, prefix: str) -> None:
        from langfuse import Langfuse as Client

        super().__init__(name)
        self.endpoint = endpoint
        self.prefix = prefix
        self.client = Client(
            public_key="pk-lf-bench", secret_key="sk-lf-bench", base_url=endpoint.url + prefix
        )

    def callbacks(self, thread: str) -> list[Any]:
        from langfuse.langchain import CallbackHandler

        return [CallbackHandler(public_key="pk-lf-bench")]

    def flush(self) -> None:
        self.client.flush()

    def recorded(self, thread: str) -> Recorded:
        import gzip

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        bodies = self.endpoint.take(self.prefix + "/")
        spans = 0
        for _, encoding, body in bodies:
            request = ExportTraceServiceRequest.FromString(
                gzip.decompress(body) if encoding == "gzip" else body
            )
            for resource in request.resource_spans:
                spans += sum(len(scope.spans) for scope in resource.scope_spans)
        return {
            "requests": len(bodies),
            "bytes sent": sum(len(b[2]) for b in bodies),
            "spans": spans,
        }


def load_deerflow(harness: Path) -> types.SimpleNamespace:
    """DeerFlow's journal and stores, loaded from ``harness``'s files under stub packages (its
    package ``__init__`` files, which import what is not installed here, are never run)."""
    root = harness / "deerflow"
    if not (root / "runtime" / "journal.py").is_file():
        raise SystemExit(f"--deerflow {harness}: no deerflow/runtime/journal.py under it")
    for package in (
        "",
        "runtime",
        "runtime/events",
        "runtime/events/store",
        "agents",
        "utils",
    ):
        name = "deerflow" + ("." + package.replace("/", ".") if package else "")
        stub = types.ModuleType(name)
        stub.__path__ = [str(root / package)]
        sys.modules[name] = stub
    journal = importlib.import_module("deerflow.runtime.journal")
    jsonl = importlib.import_module("deerflow.runtime.events.store.jsonl")
    memory = importlib.import_module("deerflow.runtime.events.store.memory")
    return types.SimpleNamespace(
        RunJournal=journal.RunJournal,
        JsonlRunEventStore=jsonl.JsonlRunEventStore,
        MemoryRunEventStore=memory.MemoryRunEventStore,
    )


async def _no_progress(snapshot: dict[str, Any]) -> None:
    """The worker's progress reporter writes the run row; here nothing."""


class DeerFlow(Variant):
    """DeerFlow's RunJournal, one per run, on one of its stores (async runs only)."""

    modes = ("async",)

    def __init__(self, name: str, deerflow: types.SimpleNamespace, store: Any) -> None:
        super().__init__(name)
        self.deerflow = deerflow
        self.store = store
        self.journal: Any = None
        self.run_ids: dict[str, str] = {}

    def callbacks(self, thread: str) -> list[Any]:
        run_id = str(uuid.uuid4())
        self.run_ids[thread] = run_id
        self.journal = self.deerflow.RunJournal(
            run_id=run_id,
            thread_id=thread,
            event_store=self.store,
            track_token_usage=True,
            progress_reporter=_no_progress,
        )
        return [self.journal]

    async def aflush(self) -> None:
        await self.journal.flush()

    def recorded(self, thread: str) -> Recorded:
        run_id = self.run_ids.pop(thread)
        events = asyncio.run(self.store.list_events(thread, run_id, limit=1_000_000))
        recorded: Recorded = {"events": len(events)}
        if hasattr(self.store, "_run_file"):
            recorded["file bytes"] = self.store._run_file(thread, run_id).stat().st_size
        return recorded


Timing = tuple[float, float, float]  # wall, process CPU (all threads), the agent thread's CPU


def run_sync(agent: Any, variant: Variant, thread: str) -> Timing:
    """One sync run with ``variant``'s flush inside the timing."""
    config = run_config(variant.callbacks(thread), thread)
    start, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
    agent.invoke({"messages": [HumanMessage("go")]}, config)
    variant.flush()
    return time.perf_counter() - start, time.process_time() - cpu, time.thread_time() - own


async def run_async(agent: Any, variant: Variant, thread: str) -> Timing:
    """One async run with ``variant``'s flush inside the timing."""
    config = run_config(variant.callbacks(thread), thread)
    start, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
    await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
    await variant.aflush()
    return time.perf_counter() - start, time.process_time() - cpu, time.thread_time() - own


class Results:
    """Per variant: the timings of each round, the endpoint's CPU, what each run recorded."""

    def __init__(self, names: list[str]) -> None:
        self.times: dict[str, list[Timing]] = {name: [] for name in names}
        self.endpoint_cpu: dict[str, list[float]] = {name: [] for name in names}
        self.recorded: dict[str, list[Recorded]] = {name: [] for name in names}


def bench(mode: str, runs: int, steps: int, variants: list[Variant], endpoint: Endpoint) -> Results:
    """One warm-up round, then ``runs`` rounds in a rotated order, a full collection before
    each run."""
    names = [v.name for v in variants]
    results = Results(names)
    for round_no in range(runs + 1):
        shift = round_no % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            agent = make_agent(steps)
            thread = f"{mode}-{variant.name}-{round_no}"
            gc.collect()
            endpoint.take_cpu()
            if mode == "sync":
                timing = run_sync(agent, variant, thread)
            else:
                timing = asyncio.run(run_async(agent, variant, thread))
            served = endpoint.take_cpu()
            recorded = variant.recorded(thread)
            if round_no:
                results.times[variant.name].append(timing)
                results.endpoint_cpu[variant.name].append(served)
                results.recorded[variant.name].append(recorded)
    return results


def paired(times: dict[str, list[Timing]], name: str, base: str) -> float:
    """Median over rounds of ``name``'s wall time over the same round's ``base`` run."""
    pairs = zip(times[name], times[base], strict=True)
    return statistics.median(t[0] / b[0] for t, b in pairs)


def describe(recorded: list[Recorded]) -> str:
    """What a variant recorded per run: each count's median (its range when it varied)."""
    if not recorded or not recorded[0]:
        return "-"
    parts = []
    for key in recorded[0]:
        values = [r[key] for r in recorded]
        low, mid, high = min(values), statistics.median(values), max(values)
        text = f"{mid:,.0f}" if low == high else f"{mid:,.0f} ({low:,.0f}-{high:,.0f})"
        parts.append(f"{key} {text}")
    return ", ".join(parts)


def report(mode: str, results: Results) -> list[str]:
    """Markdown rows of one mode."""
    rows = []
    for name, values in results.times.items():
        wall = statistics.median(t[0] for t in values) * 1000
        cpu = statistics.median(t[1] for t in values) * 1000
        own = statistics.median(t[2] for t in values) * 1000
        served = statistics.median(results.endpoint_cpu[name]) * 1000
        rows.append(
            f"| {mode} | {name} | {wall:.0f} | {paired(results.times, name, 'noop_inline'):.2f} "
            f"| {paired(results.times, name, 'none'):.2f} | {cpu:.0f} | {own:.0f} | "
            f"{f'{served:.1f}' if served else '-'} | {describe(results.recorded[name])} |"
        )
    return rows


def main() -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--mode", choices=("sync", "async", "both"), default="both")
    parser.add_argument(
        "--deerflow", type=Path, help="DeerFlow's backend/packages/harness (a checkout or archive)"
    )
    args = parser.parse_args()
    modes = ("sync", "async") if args.mode == "both" else (args.mode,)
    load_before = os.getloadavg()
    deerflow = load_deerflow(args.deerflow) if args.deerflow else None
    endpoint = Endpoint()
    rows = [
        "| mode | variant | wall ms | paired wall x noop_inline | paired wall x none | CPU ms "
        "| agent thread CPU ms | endpoint CPU ms | recorded per run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        journaled = Journaled("run_journal", Path(tmp))
        variants: list[Variant] = [
            Variant("none"),
            Noop("noop_inline"),
            journaled,
            LangSmith("langsmith", endpoint, "/zstd"),
            LangSmith("langsmith_plain", endpoint, "/plain"),
        ]
        try:
            variants.append(Langfuse("langfuse", endpoint, "/langfuse"))
        except ImportError:
            notes.append("langfuse: skipped (not installed)")
        if deerflow is None:
            notes.append("deerflow_jsonl, deerflow_memory: skipped (no --deerflow DIR)")
        else:
            jsonl = deerflow.JsonlRunEventStore(Path(tmp) / "deer-flow")
            variants += [
                DeerFlow("deerflow_jsonl", deerflow, jsonl),
                DeerFlow("deerflow_memory", deerflow, deerflow.MemoryRunEventStore()),
            ]
            notes.append(f"deerflow: {args.deerflow}; async runs only (see the docstring)")
        for mode in modes:
            chosen = [v for v in variants if mode in v.modes]
            rows += report(mode, bench(mode, args.runs, args.steps, chosen, endpoint))
        journaled.close()
        dropped = journaled.journal.dropped_events
    endpoint.close()
    print(f"{args.runs} rounds after a warm-up, rotated, {args.steps} tool rounds a run\n")
    print("\n".join(rows))
    print("\n" + "\n".join(notes))
    print(f"RunJournal dropped events: {dropped}")
    after = os.getloadavg()
    loads = ", ".join(f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, after, strict=True))
    print(f"load average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
