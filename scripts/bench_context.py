"""Benchmark: what the per-call context record stores, and how fast ``verify`` checks a thread.

1. Bytes per ``llm.start``: a real ``create_agent`` thread (system prompt, one tool call per
   turn) journaled into SQLite; for the model calls whose input held about 10 and about 100
   messages, the stored size of the event (content + metadata, canonical JSON) and of its
   context record, next to the size of the messages that call received (what storing the
   conversation per call would cost). Plain agent, and the same agent behind
   ``ContextEditingMiddleware(ClearToolUsesEdit)`` (request-only edits, inlined once).
2. ``verify`` throughput: the same kind of thread grown to about 10,000 events; the wall time
   of ``verify`` (model calls checked per second), of ``replay(view="model")`` at the end, and
   of a bare ``read`` of every event, medians of ``--runs``.

Usage: ``python scripts/bench_context.py [--runs 5] [--events 10000]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from history import replay, verify
from history.cli.demo_models import ScriptedAgentModel
from journal import RunJournal, SqliteEventStore, dumps
from journal.messages import message_to_content
from tests.fakes import ai, call

THREAD = "bench"


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city} has a long history and many sights worth a day or two. " * 3


def script(turns: int) -> list[Any]:
    replies: list[Any] = []
    for t in range(turns):
        replies += [ai("", call("lookup", city=f"city {t}")), ai(f"City {t} is worth it. " * 4)]
    return replies


def journal_thread(path: Path, turns: int, middleware: list[Any]) -> tuple[Any, Any]:
    """Run ``turns`` questions through a journaled agent; return the store and the model."""
    store = SqliteEventStore(path)
    model = ScriptedAgentModel(script(turns))
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt="You are a travel assistant. Answer briefly.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    with RunJournal(store, spool_path=path.with_suffix(".spool")) as journal:
        config: Any = {"configurable": {"thread_id": THREAD}, "callbacks": [journal]}
        for t in range(turns):
            agent.invoke({"messages": [HumanMessage(f"Tell me about city {t}.")]}, config)
    return store, model


def size(value: Any) -> int:
    return len(dumps(value).encode("utf-8"))


def record_sizes(store: Any, model: Any, label: str) -> list[str]:
    """Rows: bytes stored per llm.start at ~10 and ~100 input messages."""
    starts = [e for e in store.read(THREAD, event_type="llm.start")]
    rows = []
    for target in (10, 100):
        index = min(range(len(model.calls)), key=lambda i: abs(len(model.calls[i]) - target))
        event, received = starts[index], model.calls[index]
        record = event.metadata["context"]
        conversation = sum(size(message_to_content(m)) for m in received)
        form = "extends the previous" if "base" in record else "whole"
        rows.append(
            f"| {label} | {len(received)} | {size(event.content) + size(event.metadata)} | "
            f"{size(record)} ({form}) | {len(record['inline'])} | {conversation} |"
        )
    keyframes = [s for s in starts if "base" not in s.metadata["context"]]
    total = sum(size(s.content) + size(s.metadata) for s in starts)
    rows.append(
        f"| {label}: all {len(starts)} calls | - | {total // len(starts)} (mean) | "
        f"{len(keyframes)} whole records | - | - |"
    )
    return rows


def timed(func: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Run both parts and print Markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            "| agent | input messages | llm.start bytes | context record bytes | inlined "
            "| bytes of the messages it received |",
            "|---|---|---|---|---|---|",
        ]
        store, model = journal_thread(Path(tmp) / "plain.db", 50, [])
        rows += record_sizes(store, model, "plain")
        store.close()
        clear = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=300, keep=2)])
        store, model = journal_thread(Path(tmp) / "edits.db", 50, [clear])
        rows += record_sizes(store, model, "clear tool uses")
        store.close()
        print("\n".join(rows))

        turns = max(1, args.events // 12)  # about 12 events per turn
        store, model = journal_thread(Path(tmp) / "big.db", turns, [])
        events = store.count(THREAD)
        report = verify(store, THREAD)
        assert report["ok"], report["diverged"]
        read_s = timed(lambda: store.read(THREAD), args.runs)
        verify_s = timed(lambda: verify(store, THREAD), args.runs)
        replay_s = timed(lambda: replay(store, THREAD, view="model"), args.runs)
        store.close()
    print()
    print(
        "| thread events | agent model calls | read all (ms) | verify (ms) | calls/s | "
        "replay model view (ms) | replay x read |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {events} | {report['calls']} | {read_s * 1000:.0f} | {verify_s * 1000:.0f} | "
        f"{report['calls'] / verify_s:,.0f} | {replay_s * 1000:.0f} | {replay_s / read_s:.2f} |"
    )


if __name__ == "__main__":
    main()
