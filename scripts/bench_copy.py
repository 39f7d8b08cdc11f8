"""Benchmark: ``copy_store`` and ``runjournal import`` against raw ``executemany`` of the rows.

A source SQLite store holds ``--events`` events (default 100,000) in four threads, in the
realistic mix of ``bench_history.py`` (runs of human input, model calls with traces, tool calls
and results, summarization markers), exported once as JSON Lines, one file per thread (what
``runjournal export`` writes). Each round, into a fresh SQLite file each:

* ``copy_store``: :func:`journal.copy.copy_store` from the source store (between two SQLite
  stores a thread new to the target is copied in SQL, whole);
* ``copy_store from a memory store``: the same events copied from a ``MemoryEventStore``, page
  by page (pages of 500, each appended: the path of every other pair of backends);
* ``import``: :func:`journal.transfer.import_events` of the exported files (what
  ``runjournal import`` runs; batches of 500, the file read and parsed inside the timing);
* raw: ``executemany`` of the same rows, pre-encoded before the timing (canonical JSON text,
  integer microseconds), into the same schema (made by ``SqliteEventStore``, its triggers
  included), 500 rows and the head's move per transaction — no validation, no encoding, no
  runs or usage kept.

The sides alternate (the order flips every round), the first round warms up; events/s are
medians, with each side's ratio to raw (target: >= 0.5x).

The fixtures (the source store, the memory store's 100,000 records, the pre-encoded rows) are
frozen out of the garbage collector before the timing (``gc.freeze``): otherwise each full
collection during a side walks them too, a cost of this benchmark's process, not of the side.

``--parts``: the import and its parts instead, in microseconds per event (and raw / part):
the whole import; its stores of the rows alone (the same batches of rows, read from the files
before the timing and frozen out of the garbage collector: what storing them costs); reading
the files into those batches alone (no write); orjson's parse of every line alone; and raw.

Usage: ``PYTHONPATH=. python scripts/bench_copy.py [--events 100000] [--rounds 3] [--parts]``
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's journal

from bench_history import thread_events

from journal import MemoryEventStore, SqliteEventStore
from journal import _sqlite_schema as schema
from journal._sqlite_rows import to_micros
from journal.copy import copy_store
from journal.encoding import dumps
from journal.transfer import _row_batches, export_events, import_events

THREADS = 4
BATCH = 500


def source_store(path: Path, events: int) -> SqliteEventStore:
    """A store of ``events`` events spread over :data:`THREADS` threads."""
    store = SqliteEventStore(path)
    per_thread = events // THREADS
    for n in range(THREADS):
        pending: list[dict[str, Any]] = []
        for event in thread_events(per_thread):
            pending.append({**event, "thread_id": f"thread-{n}"})
            if len(pending) == 1000:
                store.append(pending)
                pending = []
        if pending:
            store.append(pending)
    return store


def encoded_rows(store: SqliteEventStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every event of ``store`` as the row the store writes, by thread."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for n in range(THREADS):
        thread = f"thread-{n}"
        rows[thread] = [
            (e.event_id, e.thread_id, e.seq, e.run_id, e.category, e.event_type,
             dumps(e.content), dumps(e.metadata), to_micros(e.created_at))
            for e in store.iter_events(thread)
        ]  # fmt: skip
    return rows


def timed(func: Callable[[], object]) -> float:
    """Seconds ``func`` takes."""
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def raw_insert(path: Path, rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """The rows into a fresh file of the store's schema, :data:`BATCH` per transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for thread, thread_rows in rows.items():
            for start in range(0, len(thread_rows), BATCH):
                chunk = thread_rows[start : start + BATCH]
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(schema.INSERT_EVENT_SQL, chunk)
                conn.execute(
                    schema.BUMP_HEAD_SQL,
                    (thread, chunk[-1][2], chunk[0][8], chunk[-1][8], 0),
                )
                conn.execute("COMMIT")
    finally:
        conn.close()


def import_parts(
    files: list[Path], import_side: Callable[[Path], None], raw_side: Callable[[Path], None]
) -> tuple[dict[str, Callable[[Path], None]], dict[str, Callable[[], None]]]:
    """The sides of ``--parts`` (the import, its stores of the rows alone, its reading alone,
    orjson's parse alone, raw; each called with a fresh target file, used or not), and the
    setup each side needs before its timing."""
    ready: list[Any] = []

    def read_batches(store: SqliteEventStore) -> Iterator[Any]:
        for file in files:
            with file.open("rb") as lines:
                yield from _row_batches(store, lines, BATCH)

    def read_before() -> None:
        ready.clear()
        with tempfile.TemporaryDirectory() as tmp, SqliteEventStore(Path(tmp) / "caps.db") as caps:
            ready.extend(read_batches(caps))  # read for a store of the same (default) caps
        gc.freeze()  # out of every collection: only the store's own objects are collected

    def stores(path: Path) -> None:
        with SqliteEventStore(path) as target:
            for batch in ready:
                target._import_rows(batch)
        ready.clear()

    def reading(path: Path) -> None:
        with SqliteEventStore(path) as caps:
            for _batch in read_batches(caps):
                pass

    def parsing(_: Path) -> None:
        for file in files:
            with file.open("rb") as lines:
                for line in lines:
                    orjson.loads(line)

    stores_name = "its stores of the rows alone (rows read before)"
    sides = {
        "import": import_side,
        stores_name: stores,
        "reading the lines into rows alone": reading,
        "orjson's parse of the lines alone": parsing,
        "raw": raw_side,
    }
    return sides, {stores_name: read_before}


def main() -> None:
    """Print a Markdown table of events/s per side and the ratios to raw."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", action="store_true", help="the import's parts, in µs/event")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = source_store(root / "source.db", args.events)
        total = sum(source.last_seq(f"thread-{n}") for n in range(THREADS))
        files = []
        for n in range(THREADS):
            files.append(root / f"thread-{n}.jsonl")
            with files[-1].open("w", encoding="utf-8") as out:
                export_events(source, f"thread-{n}", out)
        rows = encoded_rows(source)
        memory = MemoryEventStore()
        copy_store(source, memory)
        counter = iter(range(10**6))
        gc.freeze()  # the fixtures above stay out of every collection during the timing

        def fresh() -> Path:
            path = root / f"target-{next(counter)}.db"
            SqliteEventStore(path).close()  # the schema is made outside the timing
            return path

        def copy_side(path: Path) -> None:
            with SqliteEventStore(path) as target:
                copy_store(source, target, batch_size=BATCH)

        def page_side(path: Path) -> None:
            with SqliteEventStore(path) as target:
                copy_store(memory, target, batch_size=BATCH)

        def import_side(path: Path) -> None:
            with SqliteEventStore(path) as target:
                for file in files:
                    with file.open("rb") as lines:
                        import_events(target, lines, batch_size=BATCH)

        sides: dict[str, Callable[[Path], None]] = {
            "copy_store": copy_side,
            "copy_store from a memory store": page_side,
            "import": import_side,
            "raw": lambda path: raw_insert(path, rows),
        }
        setups: dict[str, Callable[[], None]] = {}
        if args.parts:
            sides, setups = import_parts(files, import_side, sides["raw"])
        rates: dict[str, list[float]] = {name: [] for name in sides}
        for round_no in range(args.rounds + 1):
            order = list(sides) if round_no % 2 else list(reversed(sides))
            for name in order:
                path = fresh()
                if name in setups:
                    setups[name]()
                seconds = timed(lambda: sides[name](path))  # noqa: B023 - called at once
                os.remove(path)
                if round_no:  # the first round warms up
                    rates[name].append(total / seconds)
        source.close()
        memory.close()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{total:,} events in {THREADS} threads, batches of {BATCH}, medians of {args.rounds}")
    print()
    raw = medians["raw"]
    if args.parts:
        print_table(
            ("part", "µs per event", "raw / part"),
            [(name, f"{1e6 / value:.1f}", value / raw) for name, value in medians.items()],
        )
        return
    print_table(
        ("side", "events/s", "/ raw"),
        [(name, f"{value:,.0f}", value / raw) for name, value in medians.items()],
    )


def print_table(header: tuple[str, str, str], rows: list[tuple[str, str, float]]) -> None:
    """A Markdown table of ``rows``: each a side, its figure (a text) and its ratio to raw."""
    print(f"| {' | '.join(header)} |")
    print("|---|---|---|")
    for name, figure, ratio in rows:
        print(f"| {name} | {figure} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
