"""Benchmark: runs and usage on long SQLite threads — ``read_usage`` and the newest runs page.

Threads of 1k, 10k and 100k events in one SQLite file, 15 events per run (``run.start``, the
human's message, two model calls with a tool each, the last model call, the answer,
``run.end``: ~67 to ~6,667 runs), each run appended as one batch as a journal flushes it. Then,
alternating between the threads so that load hits them alike, the median time of
``read_usage(thread)`` and of the newest page ``list_runs(thread, before_seq=2**63 - 1,
limit=20)`` (what the kept runs and usage tables answer), and for contrast the same usage
folded from the thread's events (what the base class's default does for a backend that keeps
no runs). The target: the 100k figure at most 2x the 1k figure.

Usage: ``python scripts/bench_runs.py [--sizes 1000,10000,100000] [--repeat 200]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from journal import SqliteEventStore
from journal import _runs_default as default

EVENTS_PER_RUN = 15
NEWEST = 2**63 - 1


def run_batch(thread: str, run: int) -> list[dict[str, Any]]:
    """The 15 events of one run, as ``RunJournal`` writes them (shapes, not sizes)."""
    run_id = f"{thread}-run-{run}"

    def event(category: str, event_type: str, content: Any = None, **meta: Any) -> dict[str, Any]:
        return {"thread_id": thread, "run_id": run_id, "category": category,
                "event_type": event_type, "content": content, "metadata": meta}  # fmt: skip

    def message(kind: str, text: str, caller: str) -> dict[str, Any]:
        content = {"type": kind, "data": {"content": text, "additional_kwargs": {}}}
        return event("message", f"message.{kind}", content, caller=caller)

    def model_call(tokens: int) -> list[dict[str, Any]]:
        usage = {"input_tokens": tokens, "output_tokens": 40, "total_tokens": tokens + 40,
                 "cache_read_tokens": tokens // 2}  # fmt: skip
        return [
            event("trace", "llm.start", {"messages": []}, model="bench-model", caller="agent"),
            event(
                "trace",
                "llm.end",
                {"message_id": None, "tool_call_count": 1},
                model="bench-model",
                usage=usage,
                caller="agent",
            ),
        ]

    events = [event("lifecycle", "run.start", {"graph": "agent"}),
              message("human", f"question {run}", "user")]  # fmt: skip
    for step in range(2):
        events += model_call(1000 + step)
        events += [message("ai", "", "agent"), event("trace", "tool.start", {"name": "t"}),
                   event("trace", "tool.end", {"name": "t"})]  # fmt: skip
    events += model_call(2000)[1:]
    end = event("lifecycle", "run.end", {"status": "success", "duration_ms": 12.0})
    events += [message("ai", f"answer {run}", "agent"), end]
    assert len(events) == EVENTS_PER_RUN
    return events


def median_ms(func: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``func`` in milliseconds over ``repeat`` calls (after one warm-up)."""
    func()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    """Build the threads, time the reads side by side, print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "runs.db")
        started = time.perf_counter()
        for size in sizes:
            for run in range(size // EVENTS_PER_RUN):
                store.append(run_batch(f"t{size}", run))
        print(f"built {sum(sizes):,} events in {time.perf_counter() - started:.1f} s\n")
        cases: dict[str, Callable[[str], object]] = {
            "read_usage": store.read_usage,
            "list_runs newest page (20)": lambda t: store.list_runs(t, before_seq=NEWEST, limit=20),
        }
        results: dict[tuple[str, int], list[float]] = {}
        for round_no in range(args.rounds):
            order = sizes if round_no % 2 == 0 else sizes[::-1]  # alternate
            for size in order:
                for name, case in cases.items():
                    got = median_ms(lambda: case(f"t{size}"), args.repeat)  # noqa: B023
                    results.setdefault((name, size), []).append(got)
        folded = {
            size: median_ms(lambda: default.usage(store, f"t{size}"), 3)  # noqa: B023
            for size in sizes
        }
        runs = {size: len(store.list_runs(f"t{size}")) for size in sizes}
        store.close()
    header = " | ".join(f"{s:,} events ({runs[s]:,} runs)" for s in sizes)
    print(f"| call | {header} | {sizes[-1]:,} / {sizes[0]:,} |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for name in cases:
        medians = [statistics.median(results[(name, s)]) for s in sizes]
        cells = " | ".join(f"{m:.3f} ms" for m in medians)
        print(f"| {name} | {cells} | {medians[-1] / medians[0]:.2f} |")
    cells = " | ".join(f"{folded[s]:.1f} ms" for s in sizes)
    print(f"| usage folded from the events (default) | {cells} | "
          f"{folded[sizes[-1]] / folded[sizes[0]]:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
