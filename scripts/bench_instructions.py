"""Benchmark: ``runjournal import`` against raw ``executemany``, in instructions (callgrind).

Wall-clock ratios on this machine move by 5-10% from one run to the next, more than most
single changes to the import gain. Instruction counts do not: each side runs in a fresh
process under ``valgrind --tool=callgrind``, once with its setup alone and once with the
setup and the measured work, and the difference divided by the events is the side's
instructions per event (the same from run to run within ~1%; the events' ids are new in each
run, so the data is not byte for byte the same). It is not time (a cache miss
or an fsync costs no instruction: raw's FULL commits weigh more in wall time than here), so
it decides between two versions of the code, and the wall-clock ratio of
``scripts/bench_copy.py`` stays the target's measure.

Sides, on the events of ``bench_copy.py`` (its threads, one exported file each):

* import: ``import_events`` of the files into a fresh SQLite store, batches of 500;
* reading alone: the same files read into the import's batches of rows, nothing stored;
* storing alone: those batches, read in the setup, stored (numbering, the runs fold, SQLite);
* raw: ``executemany`` of the same rows, pre-encoded in the setup, into a fresh file of the
  store's schema (``bench_copy.raw_insert``).

Usage: ``PYTHONPATH=. .venv/bin/python scripts/bench_instructions.py [--events 8000]``
(needs ``valgrind``; ~3.5 min for 8,000 events on this machine).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_copy as bc

from journal.sqlite import SqliteEventStore
from journal.transfer import _row_batches, export_events, import_events

SIDES = ("import", "reading alone", "storing alone", "raw")
_COLLECTED = re.compile(r"Collected : (\d+)")
_WARM_LINES = 600  # read and stored in both modes: caches and code paths warm alike


def child(side: str, measured: bool, root: Path) -> None:
    """One side's setup, then (``measured``) its work, in this process."""
    files = sorted(root.glob("thread-*.jsonl"))
    with (root / "rows.pickle").open("rb") as f:
        rows = pickle.load(f)
    with SqliteEventStore(root / "warm.db") as warm, files[0].open("rb") as lines:
        import_events(warm, list(lines)[:_WARM_LINES], batch_size=bc.BATCH)
    target = root / f"target-{side.replace(' ', '-')}-{measured}.db"
    with SqliteEventStore(target) as store:  # the schema is made in the setup
        batches = []
        if side == "storing alone":  # read in the setup, for a store of the same caps
            for file in files:
                with file.open("rb") as lines:
                    batches += _row_batches(store, lines, bc.BATCH)
        if measured and side == "storing alone":
            for batch in batches:
                store._import_rows(batch)
        for file in files if measured and side in ("import", "reading alone") else ():
            with file.open("rb") as lines:
                if side == "import":
                    import_events(store, lines, batch_size=bc.BATCH)
                else:
                    for _batch in _row_batches(store, lines, bc.BATCH):
                        pass
    if measured and side == "raw":
        bc.raw_insert(target, rows)


def callgrind(script: str, args: list[str]) -> tuple[int, str]:
    """The instructions callgrind counts for ``script`` run with ``args`` in a fresh process
    (every thread), and what it printed."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    done = subprocess.run(
        [*command, script, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict and set layouts each run
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise SystemExit(f"callgrind reported no count:\n{done.stderr[-2000:]}")
    return int(found.group(1)), done.stdout


def instructions(side: str, measured: bool, root: Path) -> int:
    """The instructions callgrind counts for one child process."""
    return callgrind(__file__, ["--child", side, str(int(measured)), str(root)])[0]


def main() -> None:
    """Print a Markdown table of instructions per event per side and the ratios to raw."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=8000)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        side, measured, root = args.child
        child(side, measured == "1", Path(root))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with bc.source_store(root / "source.db", args.events) as source:
            total = sum(source.last_seq(f"thread-{n}") for n in range(bc.THREADS))
            for n in range(bc.THREADS):
                with (root / f"thread-{n}.jsonl").open("w", encoding="utf-8") as out:
                    export_events(source, f"thread-{n}", out)
            with (root / "rows.pickle").open("wb") as f:
                pickle.dump(bc.encoded_rows(source), f)
        per_event = {
            side: (instructions(side, True, root) - instructions(side, False, root)) / total
            for side in SIDES
        }
    print(f"{total:,} events in {bc.THREADS} threads, batches of {bc.BATCH}, callgrind\n")
    raw = per_event["raw"]
    bc.print_table(
        ("side", "instructions per event", "raw / side"),
        [(side, f"{value:,.0f}", raw / value) for side, value in per_event.items()],
    )


if __name__ == "__main__":
    main()
