"""Benchmark the history readers on SQLite threads of 1k, 10k and 100k events.

Measures, side by side in one run: ``build_timeline`` for the newest page and for a deep page
(a cursor 10 % into the thread, at least seq 400 so that the page is full), and
``replay(view="model")`` at the end of the thread, against a bare ``read`` of every event of
the same thread. Prints a Markdown table with medians, the
page-latency ratios against the first size (target: at most 2x at 100k) and replay throughput
in events/s.

Threads are written with the store's batched ``append`` (not by running agents), in a realistic
mix: runs of human input, model calls with traces, tool calls and results, and a
``middleware:summarize`` marker (with a payload as ``TrackingSummarizationMiddleware`` makes it)
whenever the simulated state reaches 24 messages.

Usage: ``python scripts/bench_history.py [--sizes 1000,10000,100000] [--repeat 30]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, message_to_dict

from history import build_timeline, replay
from journal import SqliteEventStore, message_to_content

THREAD = "bench"
TRIGGER = 24
KEEP = 6


def _event(
    run_id: str, category: str, event_type: str, content: Any, **meta: Any
) -> dict[str, Any]:
    return {
        "thread_id": THREAD,
        "run_id": run_id,
        "category": category,
        "event_type": event_type,
        "content": content,
        "metadata": meta,
    }


def thread_events(total: int) -> Iterator[dict[str, Any]]:
    """About ``total`` events of a long multi-run agent thread with periodic compactions."""
    state: list[str] = []
    produced = 0
    run = 0
    while produced < total:
        run += 1
        run_id = f"run-{run}"
        turn: list[dict[str, Any]] = [_event(run_id, "lifecycle", "run.start", {"graph": "x"})]
        human = HumanMessage(f"question {run} " * 8, id=str(uuid.uuid4()))
        turn.append(_event(run_id, "message", "message.human", message_to_content(human)))
        state.append(str(human.id))
        for step in range(3):
            if len(state) >= TRIGGER:
                replaced, kept = state[:-KEEP], state[-KEEP:]
                summary = HumanMessage(
                    "Here is a summary of the conversation to date:\n\n" + "facts " * 40,
                    id=str(uuid.uuid4()),
                    additional_kwargs={"lc_source": "summarization"},
                )
                payload = {
                    "summary": summary.content,
                    "summary_message": message_to_dict(summary),
                    "replaced_count": len(replaced),
                    "replaced_message_ids": replaced,
                    "kept_count": len(kept),
                    "kept_message_ids": kept,
                    "trigger": {"messages": TRIGGER},
                    "tokens_before": 4000,
                    "tokens_after": 900,
                }
                turn.append(_event(run_id, "trace", "custom:summarization", payload))
                turn.append(_event(run_id, "middleware", "middleware:summarize", payload))
                state = [str(summary.id), *kept]
            turn.append(_event(run_id, "trace", "llm.start", {"messages": []}, message_ids=state))
            call_id = f"call-{run}-{step}"
            answer = AIMessage(
                f"step {step} " * 10,
                id=str(uuid.uuid4()),
                tool_calls=[{"name": "lookup", "args": {"q": step}, "id": call_id}],
            )
            turn.append(_event(run_id, "trace", "llm.end", {"message_id": answer.id}))
            turn.append(_event(run_id, "message", "message.ai", message_to_content(answer)))
            turn.append(_event(run_id, "trace", "tool.start", {"name": "lookup", "args": {}}))
            turn.append(_event(run_id, "trace", "tool.end", {"name": "lookup", "output": "ok"}))
            result = ToolMessage("result " * 20, tool_call_id=call_id, id=str(uuid.uuid4()))
            turn.append(_event(run_id, "message", "message.tool", message_to_content(result)))
            state += [str(answer.id), str(result.id)]
        turn.append(_event(run_id, "lifecycle", "run.end", {"status": "success"}))
        for event in turn:
            if produced == total:
                return
            produced += 1
            yield event


def fill(store: SqliteEventStore, total: int, batch: int = 1000) -> None:
    """Write ``total`` events with the store's batched append."""
    pending: list[dict[str, Any]] = []
    for event in thread_events(total):
        pending.append(event)
        if len(pending) == batch:
            store.append(pending)
            pending = []
    if pending:
        store.append(pending)


def interleaved_medians(jobs: dict[int, Callable[[], object]], repeat: int) -> dict[int, float]:
    """Median seconds of each job, the jobs timed in turn in every round (noise hits all)."""
    samples: dict[int, list[float]] = {key: [] for key in jobs}
    for func in jobs.values():
        func()  # warm the page cache and the connection
    for _ in range(repeat):
        for key, func in jobs.items():
            start = time.perf_counter()
            func()
            samples[key].append(time.perf_counter() - start)
    return {key: statistics.median(values) for key, values in samples.items()}


def measure(sizes: list[int], directory: Path, repeat: int) -> dict[int, dict[str, float]]:
    """Fill one SQLite thread per size, then time every size side by side."""
    stores = {size: SqliteEventStore(directory / f"bench-{size}.db") for size in sizes}
    try:
        for size, store in stores.items():
            fill(store, size)

        def newest(store: SqliteEventStore) -> Callable[[], object]:
            return lambda: build_timeline(store, THREAD, limit=50)

        def deep(store: SqliteEventStore, size: int) -> Callable[[], object]:
            cursor = max(size // 10, 400)  # 10 % into the thread, and a full page below
            return lambda: build_timeline(store, THREAD, before_seq=cursor, limit=50)

        def model_view(store: SqliteEventStore) -> Callable[[], object]:
            return lambda: replay(store, THREAD, view="model")

        newest_s = interleaved_medians({n: newest(s) for n, s in stores.items()}, repeat)
        deep_s = interleaved_medians({n: deep(s, n) for n, s in stores.items()}, repeat)
        replay_s = interleaved_medians(
            {n: model_view(s) for n, s in stores.items()}, max(repeat // 10, 3)
        )
        read_s = interleaved_medians(
            {n: (lambda s=s: s.read(THREAD)) for n, s in stores.items()}, max(repeat // 10, 3)
        )
        results = {}
        for size, store in stores.items():
            read = store.count(
                THREAD,
                event_type=["message.human", "message.ai", "message.tool", "middleware:summarize"],
            )
            results[size] = {
                "events": float(store.last_seq(THREAD)),
                "newest_ms": newest_s[size] * 1000,
                "deep_ms": deep_s[size] * 1000,
                "replay_ms": replay_s[size] * 1000,
                "replay_eps": size / replay_s[size],
                "replay_read_eps": read / replay_s[size],
                "read_ms": read_s[size] * 1000,
            }
        return results
    finally:
        for store in stores.values():
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        results = measure(sizes, Path(tmp), args.repeat)
    base = results[sizes[0]]
    print(
        "| events | newest page ms | x 1k | deep page ms | x 1k | replay(model) ms "
        "| replay events/s (thread) | (message+marker events read)/s | read all ms "
        "| replay x read all |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        r = results[size]
        newest_x = r["newest_ms"] / base["newest_ms"]
        deep_x = r["deep_ms"] / base["deep_ms"]
        print(
            f"| {int(r['events']):,} | {r['newest_ms']:.2f} | {newest_x:.2f}"
            f" | {r['deep_ms']:.2f} | {deep_x:.2f} | {r['replay_ms']:.1f}"
            f" | {r['replay_eps']:,.0f} | {r['replay_read_eps']:,.0f}"
            f" | {r['read_ms']:.1f} | {r['replay_ms'] / r['read_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
