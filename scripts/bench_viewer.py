"""Benchmark the web viewer's first paint: a 100k-event thread against a 1k-event thread.

Both threads live in one SQLite file, served by ``runjournal serve`` in its own process; a
headless Chromium (Playwright) opens ``/threads/<id>`` in a fresh browser context each time
(no cache carried over). Measured from the navigation's start, with the viewer's own
performance marks: ``first page`` (the newest timeline page is in the DOM), ``first paint``
(the frame after it), ``calls`` (the tokens-per-call sparkline drawn), and the wall time until
Playwright sees the first timeline item. The sizes alternate in every round, their order
flipping each round, so load from other processes hits both alike; the table gives medians.
Then the readers behind the viewer's API routes are timed in-process on the same file, the
same way (the newest timeline page, the per-call series, the newest run's spans, the context
of the newest model call without the walk cache ("cold", the first click on a thread) and of
an earlier call each round with it ("warm", every click after that), a search that finds
nothing (one bounded scan), the originals of the newest compaction): over local HTTP a ~40 ms
delayed-ACK floor would hide their cost.

Threads are written with the store's batched ``append`` in the shape ``RunJournal`` writes:
runs of a human question, three model calls (``llm.start``/``llm.end`` with usage, the AI
message), tool calls and results, and a ``middleware:summarize`` compaction whenever the
simulated state reaches 24 messages.

Usage: ``python scripts/bench_viewer.py [--sizes 1000,100000] [--rounds 15]``
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from history._context import WalkCache, context_plan
from history._reads import run_plan
from history._search import calls_plan, originals_plan, search_plan
from history._spans import spans_plan
from history.timeline import timeline_plan
from journal import SqliteEventStore, message_to_content
from journal.digests import content_digest

CHROMIUM = "/usr/bin/chromium"
TRIGGER, KEEP = 24, 6
MARKS = ("runjournal:first-page", "runjournal:first-paint", "runjournal:calls")


def _event(thread: str, run: str, category: str, kind: str, content: Any, **md: Any) -> dict:
    return {
        "thread_id": thread,
        "run_id": run,
        "category": category,
        "event_type": kind,
        "content": content,
        "metadata": md,
    }


def _message(thread: str, run: str, message: Any, digests: dict[str, str], **md: Any) -> dict:
    content = message_to_content(message)
    digests[str(message.id)] = content_digest(content)
    kind = f"message.{message.type}"
    return _event(thread, run, "message", kind, content, digest=digests[str(message.id)], **md)


def thread_events(thread: str, total: int) -> Iterator[dict[str, Any]]:
    """About ``total`` events of a long multi-run agent thread with periodic compactions;
    every model call has its context record (the system prompt inlined the first time)."""
    state: list[str] = []
    digests: dict[str, str] = {}
    system = message_to_content(SystemMessage("You are a benchmark agent."))
    system_digest = content_digest(system)
    produced, run = 0, 0
    while produced < total:
        run += 1
        rid = f"run-{run}"
        turn = [_event(thread, rid, "lifecycle", "run.start", {"graph": "LangGraph"})]
        human = HumanMessage(f"question {run} " * 8, id=str(uuid.uuid4()))
        turn.append(_message(thread, rid, human, digests, caller="user"))
        state.append(str(human.id))
        for step in range(3):
            if len(state) >= TRIGGER:
                replaced, kept = state[:-KEEP], state[-KEEP:]
                summary = HumanMessage(
                    "Summary: " + "facts " * 40,
                    id=str(uuid.uuid4()),
                    additional_kwargs={"lc_source": "summarization"},
                )
                payload = {
                    "summary": summary.content,
                    "summary_message": message_to_content(summary),
                    "replaced_count": len(replaced),
                    "replaced_message_ids": replaced,
                    "kept_count": len(kept),
                    "kept_message_ids": kept,
                }
                turn.append(_event(thread, rid, "middleware", "middleware:summarize", payload))
                digests[str(summary.id)] = content_digest(payload["summary_message"])
                state = [str(summary.id), *kept]
            llm = str(uuid.uuid4())
            call = {"caller": "agent", "langgraph_node": "model", "langgraph_step": step * 2}
            entries = [{"id": None, "digest": system_digest}]
            entries += [{"id": mid, "digest": digests[mid]} for mid in state]
            record = {"messages": entries, "inline": {} if run > 1 else {system_digest: system}}
            start = _event(thread, rid, "trace", "llm.start", {"messages": []}, context=record)
            start["metadata"].update(llm_run_id=llm, model="bench-model", **call)
            turn.append(start)
            answer = AIMessage(
                f"step {step} " * 10,
                id=str(uuid.uuid4()),
                tool_calls=[{"name": "lookup", "args": {"q": step}, "id": llm}],
            )
            usage = {"input_tokens": 100 * len(state), "output_tokens": 30, "total_tokens": 0}
            turn.append(
                _event(
                    thread,
                    rid,
                    "trace",
                    "llm.end",
                    {"message_id": answer.id},
                    llm_run_id=llm,
                    model="bench-model",
                    usage=usage,
                    latency_ms=120.0,
                    **call,
                )
            )
            turn.append(_message(thread, rid, answer, digests, **call))
            result = ToolMessage("result " * 20, tool_call_id=llm, id=str(uuid.uuid4()))
            turn.append(_message(thread, rid, result, digests))
            state += [str(answer.id), str(result.id)]
        turn.append(_event(thread, rid, "lifecycle", "run.end", {"status": "success"}))
        for event in turn:
            if produced == total:
                return
            produced += 1
            yield event


def fill(store: SqliteEventStore, thread: str, total: int) -> None:
    """Write ``total`` events with batched appends."""
    batch: list[dict[str, Any]] = []
    for event in thread_events(thread, total):
        batch.append(event)
        if len(batch) == 1000:
            store.append(batch)
            batch = []
    if batch:
        store.append(batch)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(url: str, port: int) -> subprocess.Popen[bytes]:
    cli = Path(sys.executable).with_name("runjournal")
    server = subprocess.Popen(
        [str(cli), "serve", "--store", url, "--port", str(port), "--log-level", "warning"]
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("the server did not start")


def _open(browser: Any, url: str) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_selector(".timeline > .item")
        wall = (time.perf_counter() - start) * 1000
        page.wait_for_function(
            "names => names.every(n => performance.getEntriesByName(n).length)",
            arg=list(MARKS),
            timeout=60_000,
        )
        marks = page.evaluate(
            "names => names.map(n => performance.getEntriesByName(n)[0].startTime)", list(MARKS)
        )
        return {"wall": wall, **dict(zip(MARKS, marks, strict=True))}
    finally:
        context.close()


def _readers(store: SqliteEventStore, thread: str) -> dict[str, Callable[[], object]]:
    """The viewer's routes on ``thread``, as the reads they make (the plans the routes run)."""
    starts = store.read(thread, before_seq=2**62, limit=100, event_type="llm.start")
    call = starts[-1]
    marker = store.read(thread, before_seq=2**62, limit=1, event_type="middleware:summarize")[0]
    walks = WalkCache()
    run_plan(store, context_plan(thread, call.seq, cache=walks))  # the viewer's first click
    earlier = iter(reversed(starts[:-1]))  # then one earlier call after another
    plans: dict[str, Callable[[], Any]] = {
        "history": lambda: timeline_plan(thread, None, 30, True),
        "calls": lambda: calls_plan(thread, limit=300),
        "spans": lambda: spans_plan(thread, call.run_id),
        "context (cold)": lambda: context_plan(thread, call.seq),
        "context (warm)": lambda: context_plan(thread, next(earlier).seq, cache=walks),
        "search": lambda: search_plan(thread, "no such text"),
        "originals": lambda: originals_plan(thread, marker.seq),
    }
    return {name: (lambda make=make: run_plan(store, make())) for name, make in plans.items()}


def _time_readers(path: Path, sizes: list[int], rounds: int) -> dict[int, dict[str, float]]:
    """Median ms of each reader per size, sizes alternating (order flipping) every round."""
    store = SqliteEventStore(path)
    try:
        readers = {size: _readers(store, f"t{size}") for size in sizes}
        samples = {size: {name: [] for name in readers[size]} for size in sizes}
        for number in range(rounds + 1):
            for size in sizes if number % 2 == 0 else sizes[::-1]:
                for name, read in readers[size].items():
                    start = time.perf_counter()
                    read()
                    if number:  # round 0 warms up
                        samples[size][name].append((time.perf_counter() - start) * 1000)
    finally:
        store.close()
    return {n: {k: statistics.median(v) for k, v in r.items()} for n, r in samples.items()}


def measure(
    sizes: list[int], rounds: int, directory: Path
) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """Median milliseconds per size and measure (sizes alternate, order flips each round):
    the page loads, then the API routes."""
    from playwright.sync_api import sync_playwright

    path = directory / "viewer.db"
    store = SqliteEventStore(path)
    for size in sizes:
        fill(store, f"t{size}", size)
    store.close()
    port = _free_port()
    server = _serve(f"sqlite:///{path}", port)
    samples: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            for size in sizes:  # warm-up: the server's first requests, the file cache
                _open(browser, f"http://127.0.0.1:{port}/threads/t{size}")
            for number in range(rounds):
                order = sizes if number % 2 == 0 else sizes[::-1]
                for size in order:
                    samples[size].append(_open(browser, f"http://127.0.0.1:{port}/threads/t{size}"))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    keys = ("wall", *MARKS)
    pages = {
        size: {key: statistics.median(s[key] for s in runs) for key in keys}
        for size, runs in samples.items()
    }
    return pages, _time_readers(path, sizes, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        results, api = measure(sizes, args.rounds, Path(tmp))
    after = os.getloadavg()
    base = results[sizes[0]]
    print(f"load average before {before[0]:.2f}, after {after[0]:.2f}; {args.rounds} rounds")
    print("| events | first page ms | x | first paint ms | x | sparkline ms | x | wall ms | x |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        r = results[size]
        cells = []
        for key in (*MARKS, "wall"):
            cells += [f"{r[key]:.0f}", f"{r[key] / base[key]:.2f}"]
        print(f"| {size:,} | " + " | ".join(cells) + " |")
    names = list(api[sizes[0]])
    print()
    print("| events | " + " | ".join(f"{n} ms | x" for n in names) + " |")
    print("|---:|" + "---:|---:|" * len(names))
    for size in sizes:
        cells = []
        for name in names:
            cells += [f"{api[size][name]:.1f}", f"{api[size][name] / api[sizes[0]][name]:.2f}"]
        print(f"| {size:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
