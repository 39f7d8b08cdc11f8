"""Benchmark of the offline demo and the CLI's transfer commands, side by side in one run.

* demo: the demo conversation (4 runs, 3 compactions) with no callbacks vs journaled by
  ``RunJournal`` into SQLite (``run_demo``, final flush included); and ``runjournal demo``
  end to end as a user runs it (a new process: imports, run, timeline).
* transfer: ``export`` and ``import`` of an N-event thread through the command line (in
  process) vs the store's own ``iter_events`` / batched ``append`` (the practical limit).

Usage: ``python scripts/bench_cli.py [--repeat 5] [--events 20000]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from langchain_core.messages import HumanMessage

from history.cli.demo import DEMO_TURNS, build_demo_agent, demo_script, run_demo
from history.cli.demo_models import ScriptedAgentModel
from history.cli.main import cli
from journal import NewEvent, SqliteEventStore


def _median_seconds(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _plain_demo() -> None:
    agent = build_demo_agent(ScriptedAgentModel(demo_script()))
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for text in DEMO_TURNS:
        agent.invoke({"messages": [HumanMessage(text)]}, config)


def bench_demo(folder: Path, repeat: int) -> None:
    """The demo runs: plain, journaled, and the whole command in a new process."""
    store = SqliteEventStore(folder / "demo.db")
    _plain_demo()  # warm-up: first-call costs (imports, pydantic schemas) hit neither side
    run_demo(store, thread_id="bench")
    plain = _median_seconds(_plain_demo, repeat)
    journaled = _median_seconds(lambda: run_demo(store, thread_id="bench"), repeat)
    store.close()
    url = f"sqlite:///{folder / 'cli-demo.db'}"
    command = [sys.executable, "-m", "history.cli", "demo", "--store", url]
    whole = _median_seconds(
        lambda: subprocess.run(command, check=True, capture_output=True), max(3, repeat // 2)
    )
    print("| demo | median s | x plain |")
    print("|---|---:|---:|")
    print(f"| agent only, no callbacks | {plain:.3f} | 1.00 |")
    print(f"| run_demo (RunJournal on SQLite, flush) | {journaled:.3f} | {journaled / plain:.2f} |")
    print(f"| `runjournal demo` (new process, end to end) | {whole:.3f} | {whole / plain:.2f} |")


def _fill(store: SqliteEventStore, thread_id: str, count: int) -> None:
    text = "x" * 900
    for start in range(0, count, 500):
        store.append(
            [
                NewEvent(
                    thread_id=thread_id,
                    run_id=f"r{n // 100}",
                    category="trace",
                    event_type="custom:bench",
                    content={"n": n, "text": text},
                )
                for n in range(start, min(start + 500, count))
            ]
        )


def bench_transfer(folder: Path, events: int, repeat: int) -> None:
    """export/import through the CLI vs the store's own calls."""
    source = folder / "source.db"
    with SqliteEventStore(source) as store:
        _fill(store, "t", events)
    runner = CliRunner()
    dump = folder / "t.jsonl"

    def cli_export() -> None:
        runner.invoke(cli, ["export", "t", "--store", f"sqlite:///{source}", "-o", str(dump)])

    def raw_read() -> None:
        with SqliteEventStore(source) as store:
            for _ in store.iter_events("t"):
                pass

    counter = iter(range(1_000_000))

    def cli_import() -> None:
        target = f"sqlite:///{folder / f'import-{next(counter)}.db'}"
        done = runner.invoke(cli, ["import", str(dump), "--store", target])
        assert done.exit_code == 0, done.output

    cli_export()
    parsed = [
        NewEvent(**{k: v for k, v in json.loads(line).items() if k != "seq"})
        for line in dump.read_text("utf-8").splitlines()
    ]

    def raw_append() -> None:
        with SqliteEventStore(folder / f"raw-{next(counter)}.db") as target:
            for start in range(0, len(parsed), 500):
                target.append(parsed[start : start + 500])

    rows = [
        ("store.iter_events (read all)", _median_seconds(raw_read, repeat)),
        ("`runjournal export` (read + JSON Lines)", _median_seconds(cli_export, repeat)),
        ("store.append, batches of 500 (parsed events)", _median_seconds(raw_append, repeat)),
        ("`runjournal import` (parse + validate + append)", _median_seconds(cli_import, repeat)),
    ]
    print(f"\n| {events:,} events | median s | events/s |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {events / seconds:,.0f} |")


def main() -> None:
    """Run both benchmarks and print Markdown tables (library logs: warnings only)."""
    logging.getLogger("runjournal").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_demo(Path(tmp), args.repeat)
        bench_transfer(Path(tmp), args.events, args.repeat)


if __name__ == "__main__":
    main()
