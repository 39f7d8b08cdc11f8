"""Cold start of the CLI: ``runjournal threads`` / ``history T`` against ``sqlite-utils tables``.

Each command is a new process on the same SQLite database (one thread of ``--events`` message
events), run in turn, ``--repeat`` times; the table gives each median wall time and its ratio to
``sqlite-utils tables`` (target: at most 2x). ``python -c pass`` is the floor of any process.

Usage: ``python scripts/bench_imports.py [--repeat 9] [--events 200]`` (a few seconds).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from journal import NewEvent, SqliteEventStore


def _make_db(path: Path, events: int) -> None:
    store = SqliteEventStore(path)
    try:
        store.append(
            [
                NewEvent(
                    thread_id="t1",
                    run_id="r1",
                    category="message",
                    event_type="message.human",
                    content={"type": "human", "data": {"content": f"question {i}", "id": f"m{i}"}},
                    metadata={"message_id": f"m{i}"},
                )
                for i in range(events)
            ]
        )
    finally:
        store.close()


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    """Print the cold-start table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--events", type=int, default=200)
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        _make_db(db, args.events)
        url = f"sqlite:///{db}"
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "sqlite-utils tables DB": [str(bin_dir / "sqlite-utils"), "tables", str(db)],
            "runjournal threads": [str(bin_dir / "runjournal"), "threads", "--store", url],
            "runjournal history t1": [str(bin_dir / "runjournal"), "history", "t1", "--store", url],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):  # interleaved, so drift in machine load hits all alike
            for name, argv in commands.items():
                times[name].append(_seconds(argv))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["sqlite-utils tables DB"]
    print(f"| command (median of {args.repeat}) | s | x sqlite-utils |")
    print("|---|---:|---:|")
    for name, median in medians.items():
        print(f"| `{name}` | {median:.3f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
