"""Benchmark: what journaling costs the 200-superstep agent run, in instructions (callgrind).

The wall-clock ratio of ``scripts/bench_journal.py`` (the target's measure) moves by 5-10 %
from one run to the next on a shared 2-core machine, more than the journal's margin under its
1.1x target and more than most single changes to the journal gain. Instruction counts do not
move with the load: each variant runs in a fresh process under ``valgrind --tool=callgrind``,
once with its setup alone and once with the setup and ``--runs`` measured runs, and the
difference divided by the runs is the variant's instructions per run. It is work, not time:
every thread is counted (callgrind runs them one at a time, so the writer's work is counted
whether or not it would have overlapped the agent's), SQLite's C code counts as much as the
interpreter's, an fsync or a wait on the GIL counts nothing. So it tells whether the journal's
work fits under the target, and which of two versions of the code does less of it; the
wall-clock ratio stays the target's own measure.

Variants, as in ``bench_journal.py``: ``noop_inline`` (the target's baseline), ``none`` (no
handler at all), ``run_journal`` (on SQLite) and ``journal_callbacks`` (its writer drops each
batch unbuilt: the callback path alone); and ``noop_chat``, the inline no-op with an
``on_chat_model_start`` of its own (``BaseCallbackHandler`` has none, so LangChain falls back
to ``on_llm_start`` with every prompt turned into a string): what any handler costs a run in
LangChain's dispatch alone.

Each process: the imports, the variant's callbacks (for ``run_journal``, a ``RunJournal`` on a
fresh ``SqliteEventStore``), one warm-up run, a full collection; then (measured) ``--runs``
runs, each of a fresh agent on a new thread after a full collection, the journal's final
flush inside; then the journal's and the store's close, in both. The same agent and fake model
as ``bench_journal.py``; ``PYTHONHASHSEED=0``.

Batches. The journal's writer stores a batch at least every ``flush_interval`` (0.1 s): under
callgrind a run is 30-100x slower, so it would store 30-100x more, smaller batches than in a
real run, and each batch's fixed cost (a transaction, the head read, a commit) would be
counted that many times. So the parent first times the run natively (``noop_inline``,
median of ``--calibrate`` runs) and counts the batches ``run_journal`` stores a run; each
child times its warm-up run and sets its writer's interval to 0.1 s times its own slowdown
(the private ``_writer.flush_interval``: a measurement, not an example). The batches a run
stored are printed beside the native count.

Usage: ``PYTHONPATH=. .venv/bin/python scripts/bench_journal_instructions.py [--runs 2]
[--variants noop_inline,run_journal] [--jobs 2]`` (needs ``valgrind``; ~5 min on this machine
for the default, ~10 for all five variants, two processes at a time). Counts repeat within
0.5 % from one run of the benchmark to the next.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import bench_journal as bj
from bench_instructions import callgrind

from journal import RunJournal, SqliteEventStore

MODES = ("sync", "async")
VARIANTS = ("noop_inline", "none", "noop_chat", "run_journal", "journal_callbacks")
INTERVAL = 0.1  # the writer's default flush interval, seconds


class ChatNoop(bj.InlineNoop):
    """The inline no-op with an ``on_chat_model_start`` of its own: what any handler costs the
    run in LangChain's dispatch, without the fallback to ``on_llm_start``."""

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Nothing."""


# the variants that journal nothing: their callbacks, made in the child
HANDLERS: dict[str, Callable[[], list[Any]]] = {
    "noop_inline": lambda: [bj.InlineNoop()],
    "none": lambda: [],
    "noop_chat": lambda: [ChatNoop()],
}


class Counting:
    """Counts the batches ``store`` stores (wraps its ``_append_unreturned``)."""

    def __init__(self, store: SqliteEventStore) -> None:
        self.batches = 0
        append = store._append_unreturned

        def counted(events: Any) -> Any:
            self.batches += 1
            return append(events)

        store._append_unreturned = counted  # type: ignore[method-assign]


def one_run(mode: str, callbacks: list[Any], thread: str, steps: int) -> float:
    """Wall seconds of one run of a fresh agent (and the journal's flush), after a collection."""
    agent = bj.make_agent(steps)
    gc.collect()
    started = time.perf_counter()
    if mode == "sync":
        bj.run_sync(agent, callbacks, thread, [])
    else:
        asyncio.run(bj.run_async(agent, callbacks, thread, []))
    return time.perf_counter() - started


def child(mode: str, variant: str, runs: int, steps: int, native: float, root: Path) -> None:
    """One variant's setup, its warm-up run and (``runs`` > 0) its measured runs; prints the
    batches stored a measured run as JSON."""
    store = SqliteEventStore(root / f"{mode}-{variant}-{runs}.db")
    counting = Counting(store)
    journal = RunJournal(store, spool_path=root / f"spool-{mode}-{variant}-{runs}.jsonl")
    if variant == "journal_callbacks":
        bj.callbacks_only(journal)
    callbacks = HANDLERS[variant]() if variant in HANDLERS else [journal]
    slowdown = one_run(mode, callbacks, f"{mode}-warm", steps) / native
    journal._writer.flush_interval = INTERVAL * max(slowdown, 1.0)
    before = counting.batches
    for n in range(runs):
        one_run(mode, callbacks, f"{mode}-{n}", steps)
    journal.close()
    store.close()
    batches = (counting.batches - before) / runs if runs else 0.0
    print(json.dumps({"batches": batches, "slowdown": slowdown}))


def instructions(
    mode: str, variant: str, runs: int, steps: int, native: float, root: Path
) -> tuple[int, dict[str, float]]:
    """The instructions callgrind counts for one child process, and what the child printed."""
    args = [mode, variant, str(runs), str(steps), repr(native), str(root)]
    count, printed = callgrind(__file__, ["--child", *args])
    return count, json.loads(printed.strip().splitlines()[-1])


def calibrate(mode: str, rounds: int, steps: int, root: Path) -> tuple[float, float]:
    """Natively, in this process: the median wall seconds of a ``noop_inline`` run, and the
    median batches a ``run_journal`` run stores, over ``rounds`` alternating rounds."""
    store = SqliteEventStore(root / f"calibrate-{mode}.db")
    counting = Counting(store)
    journal = RunJournal(store, spool_path=root / f"spool-calibrate-{mode}.jsonl")
    walls, batches = [], []
    for n in range(rounds + 1):
        wall = one_run(mode, [bj.InlineNoop()], f"{mode}-noop-{n}", steps)
        before = counting.batches
        one_run(mode, [journal], f"{mode}-journal-{n}", steps)
        if n:  # the first round warms up
            walls.append(wall)
            batches.append(counting.batches - before)
    journal.close()
    store.close()
    return statistics.median(walls), statistics.median(batches)


def main() -> None:
    """Print a Markdown table of instructions per run per variant and mode, and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="measured runs per process")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--calibrate", type=int, default=5, help="native rounds timed first")
    parser.add_argument("--jobs", type=int, default=2, help="processes under callgrind at once")
    parser.add_argument(
        "--variants", default="noop_inline,run_journal", help=f"of {', '.join(VARIANTS)}"
    )
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, variant, runs, steps, native, root = args.child
        child(mode, variant, int(runs), int(steps), float(native), Path(root))
        return
    names = ["noop_inline", *(n for n in args.variants.split(",") if n != "noop_inline")]
    if unknown := set(names) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (apt-get install valgrind)")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        native = {mode: calibrate(mode, args.calibrate, args.steps, root) for mode in MODES}
        jobs = [(mode, name, runs) for mode in MODES for name in names for runs in (0, args.runs)]
        with ThreadPoolExecutor(args.jobs) as pool:
            counted = dict(
                zip(
                    jobs,
                    pool.map(
                        lambda job: instructions(*job, args.steps, native[job[0]][0], root), jobs
                    ),
                    strict=True,
                )
            )
    print(
        f"{args.runs} measured runs per process, {args.steps} tool rounds, callgrind; native "
        "noop_inline run (median of "
        f"{args.calibrate}): "
        + ", ".join(f"{mode} {native[mode][0] * 1000:.0f} ms" for mode in MODES)
        + "\n"
    )
    print("| mode | variant | instructions per run (M) | x noop_inline | batches per run "
          "(native) | slowdown under callgrind |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for mode in MODES:
        per_run = {
            name: (counted[(mode, name, args.runs)][0] - counted[(mode, name, 0)][0]) / args.runs
            for name in names
        }
        for name in names:
            shown = counted[(mode, name, args.runs)][1]
            batches = "-"
            if name not in HANDLERS:
                batches = f"{shown['batches']:.1f} ({native[mode][1]:.0f})"
            print(
                f"| {mode} | {name} | {per_run[name] / 1e6:,.1f} | "
                f"{per_run[name] / per_run['noop_inline']:.3f} | {batches} | "
                f"{shown['slowdown']:.0f}x |"
            )
    after = os.getloadavg()
    loads = ", ".join(f"{a:.2f}->{b:.2f}" for a, b in zip(load_before, after, strict=True))
    print(f"\nload average (1, 5, 15 min) before->after: {loads}")


if __name__ == "__main__":
    main()
