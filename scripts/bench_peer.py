"""Benchmark: our SQLite append against the ``eventsourcing`` library's SQLite recorder.

Side by side in one process, alternating rounds, same machine, same payload (~200-byte JSON
objects), same durability (WAL; ``synchronous`` FULL, the peer's default, and NORMAL, our
default, each for both sides). Ours: ``SqliteEventStore.append`` of plain-dict events (user
input, fully validated; ids made by the store). Peer: ``SQLiteApplicationRecorder.insert_events``
of ``StoredEvent`` objects whose state is the same payload, JSON-encoded inside the timing (as
its mapper would), one aggregate per thread. Batches of 100 events (one transaction each) and
single-event appends; events/s are medians of ``--rounds`` rounds, and the ratio ours/peer.
A third side shows what bounds ours: raw ``executemany`` of rows encoded (ids included)
before the timing, and the head's move, into our own schema, its append-only guards
included — no validation, no encoding, no runs or usage kept. A fourth side, ``floor``, is
the least Python an append of user dicts can do into our schema: the same dicts as ours built
inside the timing, and for each event only its id (``new_event_id``), a clock read, its
content encoded (``orjson.dumps``) and its row tuple, then the raw side's ``executemany`` and
head move — no validation, no runs or usage kept, no records returned. What ours does beyond
the floor is what it promises (each event checked, runs and usage kept, records returned);
``ours / floor`` is how close it comes to that bound. A fifth side, ``guarded peer``, is
the peer's recorder with our database-level guarantees given to its table by the same means
as ours (:data:`PEER_GUARD`: a guard trigger that refuses REPLACE and a version out of order,
no UPDATE, no DELETE), checked to refuse them before the timing: ``ours / guarded peer``
compares the two stores with the same promise at the database. It runs for batches only:
the peer's connections cache one prepared statement (``cached_statements=True``), so it
prepares its insert again in every transaction, and with a trigger that compiles the
trigger's program too (measured with ``sqlite3`` alone, a one-row transaction into the
peer's table: +15-21 µs with the guard on a connection caching one statement, +1-2 µs on one
caching 128; in the peer's recorder, +30-45 µs); a single-event figure would measure that,
not the guard. A batch prepares it once per 100 events.

With ``--postgres``, the same batches against a throw-away PostgreSQL 15 cluster started here
(``tests/postgres_server.py``; test settings, ``fsync=off``), ours ``PostgresEventStore`` and the
peer's ``PostgresApplicationRecorder``, each in its own database of the same server.

With ``--phases``, where the time of our append goes instead: the steps of
``SqliteEventStore.append`` (batches of ``--batch`` events, default 100;
``synchronous=NORMAL``) timed one by one, as the store runs them, median microseconds per
event over ``--events`` events.

Usage: ``python scripts/bench_peer.py [--rounds 7] [--events 20000] [--postgres |
--phases [--batch 100]]``
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

from journal import SqliteEventStore
from journal import _sqlite_schema as schema
from journal._sqlite_rows import EPOCH, MICROSECOND, to_micros
from journal.events import new_event_id, utcnow

PAYLOAD = {"model": "bench-model", "usage": {"input_tokens": 120, "output_tokens": 40},
           "text": "the quick brown fox jumps over the lazy dog " * 3}  # fmt: skip


def payload(i: int) -> dict[str, Any]:
    return {**PAYLOAD, "i": i}


def ours(path: Path, synchronous: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    return ours_on(SqliteEventStore(path, synchronous=synchronous))


def ours_on(store: Any) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    threads = [f"thread-{n}" for n in range(8)]

    def append(start: int, count: int) -> None:
        thread = threads[start % len(threads)]
        store.append(
            [
                {
                    "thread_id": thread,
                    "run_id": "run-1",
                    "category": "trace",
                    "event_type": "llm.end",
                    "content": payload(start + k),
                }
                for k in range(count)
            ]
        )

    return append, store.close


def peer(path: Path, synchronous: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    datastore = SQLiteDatastore(str(path))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    if synchronous != "FULL":
        with datastore.get_connection(commit=True) as conn:  # the writer connection it reuses
            conn.cursor().execute(f"PRAGMA synchronous = {synchronous}")
    return peer_on(recorder), datastore.close


#: The guarantees our schema keeps at the database level (``journal._sqlite_schema``: an
#: insert takes its thread's next seq and REPLACE is refused, no UPDATE, no DELETE but a
#: thread's), given to the peer's table by the same means, a guard trigger on its keys: an
#: insert takes its aggregate's next version and a new rowid (the peer has no event id).
PEER_GUARD = (
    "CREATE TRIGGER stored_events_in_order BEFORE INSERT ON stored_events "
    "WHEN NEW.originator_version IS NOT COALESCE((SELECT MAX(originator_version) "
    "FROM stored_events WHERE originator_id = NEW.originator_id), 0) + 1 "
    "OR EXISTS (SELECT 1 FROM stored_events WHERE rowid = NEW.rowid) "
    "BEGIN SELECT RAISE(ABORT, 'append-only: the next version, a new row'); END",
    "CREATE TRIGGER stored_events_no_update BEFORE UPDATE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'append-only: UPDATE is rejected'); END",
    "CREATE TRIGGER stored_events_no_delete BEFORE DELETE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'append-only: DELETE is rejected'); END",
)


def peer_guarded(
    path: Path, synchronous: str
) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """The peer's recorder on its own table given :data:`PEER_GUARD`, checked to refuse
    what ours refuses (a REPLACE, a version out of order) before any timing."""
    datastore = SQLiteDatastore(str(path))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    with datastore.get_connection(commit=True) as conn:
        cursor = conn.cursor()
        if synchronous != "FULL":
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
        for statement in PEER_GUARD:
            cursor.execute(statement)
    check = "INSERT {}INTO stored_events VALUES ('guard-check', ?, 'bench:Check', x'00')"
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute(check.format(""), (1,))
        for verb, version in (("OR REPLACE ", 1), ("", 3), ("", 1)):
            try:
                conn.execute(check.format(verb), (version,))
            except sqlite3.IntegrityError:
                continue
            raise AssertionError(f"the peer's guard let INSERT {verb}version {version} in")
        for statement in ("UPDATE stored_events SET topic = 'x'", "DELETE FROM stored_events"):
            try:
                conn.execute(statement)
            except sqlite3.IntegrityError:
                continue
            raise AssertionError(f"the peer's guard let {statement!r} through")
    conn.close()
    return peer_on(recorder), datastore.close


def peer_on(recorder: Any) -> Callable[[int, int], None]:
    aggregates = [uuid.uuid4() for _ in range(8)]
    versions = dict.fromkeys(aggregates, 0)

    def append(start: int, count: int) -> None:
        aggregate = aggregates[start % len(aggregates)]
        first = versions[aggregate]
        versions[aggregate] = first + count
        recorder.insert_events(
            [
                StoredEvent(
                    originator_id=aggregate,
                    originator_version=first + k + 1,
                    topic="bench:LlmEnd",
                    state=json.dumps(payload(start + k)).encode(),
                )
                for k in range(count)
            ]
        )

    return append


def write_rows(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], thread: str, last: int
) -> None:
    """The raw and floor sides' transaction: the rows, then the head moved to ``last``."""
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(schema.INSERT_EVENT_SQL, rows)
    conn.execute(
        "INSERT INTO thread_heads (thread_id, last_seq, first_event_at, last_event_at) "
        "VALUES (?, ?, 0, 0) "
        "ON CONFLICT (thread_id) DO UPDATE SET last_seq = excluded.last_seq",
        (thread, last),
    )
    conn.execute("COMMIT")


def raw(
    path: Path, synchronous: str, total: int
) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """Rows of the first ``total`` payloads, encoded with their ids before any timing."""
    SqliteEventStore(path, synchronous=synchronous).close()  # the schema, triggers included
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    threads = [f"thread-{n}" for n in range(8)]
    heads = dict.fromkeys(threads, 0)
    texts = [json.dumps(payload(i)) for i in range(total)]
    ids = [new_event_id() for _ in range(total)]

    def append(start: int, count: int) -> None:
        thread = threads[start % len(threads)]
        first = heads[thread]
        rows = [
            (ids[start + k], thread, first + k + 1, "run-1", "trace", "llm.end",
             texts[start + k], "{}", 0)
            for k in range(count)
        ]  # fmt: skip
        write_rows(conn, rows, thread, first + count)
        heads[thread] = first + count

    return append, conn.close


def floor(path: Path, synchronous: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """The least Python an append of user dicts can do into our schema (module docstring)."""
    SqliteEventStore(path, synchronous=synchronous).close()  # the schema, triggers included
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    threads = [f"thread-{n}" for n in range(8)]
    heads = dict.fromkeys(threads, 0)

    def append(start: int, count: int) -> None:
        thread = threads[start % len(threads)]
        batch = [
            {"thread_id": thread, "run_id": "run-1", "category": "trace",
             "event_type": "llm.end", "content": payload(start + k)}
            for k in range(count)
        ]  # fmt: skip
        first = heads[thread]
        rows = [
            (new_event_id(), e["thread_id"], first + k + 1, e["run_id"], e["category"],
             e["event_type"], orjson.dumps(e["content"]).decode(), "{}", to_micros(utcnow()))
            for k, e in enumerate(batch)
        ]  # fmt: skip
        write_rows(conn, rows, thread, first + count)
        heads[thread] = first + count

    return append, conn.close


def ours_pg(url: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    from journal import open_store

    store = open_store(url)
    append, _ = ours_on(store)
    return append, store.close


def peer_pg(url: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    parsed = urlparse(url)
    datastore = PostgresDatastore(
        dbname=parsed.path.lstrip("/"),
        host=str(parsed.hostname),
        port=int(parsed.port or 5432),
        user=str(parsed.username),
        password="",
    )
    recorder = PostgresApplicationRecorder(datastore)
    recorder.create_table()
    return peer_on(recorder), datastore.close


def rate(append: Callable[[int, int], None], events: int, batch: int, offset: int) -> float:
    start = time.perf_counter()
    for n in range(0, events, batch):
        append(offset + n, batch)
    return events / (time.perf_counter() - start)


def compare(
    sides: dict[str, tuple[Callable[[int, int], None], Callable[[], None]]],
    rounds: int,
    events: int,
    batch: int,
) -> dict[str, float]:
    """Median events/s per side over ``rounds`` alternating rounds (after a warm-up)."""
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for round_no in range(rounds + 1):
        order = list(sides) if round_no % 2 else list(reversed(sides))  # alternate
        for name in order:
            measured = rate(sides[name][0], events, batch, round_no * events)
            if round_no:  # the first round warms up
                rates[name].append(measured)
    for _, close in sides.values():
        close()
    return {name: statistics.median(values) for name, values in rates.items()}


def postgres(rounds: int, events: int) -> None:
    """The PostgreSQL comparison, on a throw-away cluster."""
    from tests.postgres_server import PostgresServer, fresh_database_url

    print("| PostgreSQL batch | ours events/s | peer events/s | ours / peer |")
    print("|---|---|---|---|")
    with PostgresServer() as server:
        for batch in (100, 1):
            count = events if batch > 1 else max(events // 10, 200)
            sides = {
                "ours": ours_pg(fresh_database_url(server.url)),
                "peer": peer_pg(fresh_database_url(server.url)),
            }
            got = compare(sides, rounds, count, batch)
            print(
                f"| {batch} | {got['ours']:,.0f} | {got['peer']:,.0f} | "
                f"{got['ours'] / got['peer']:.2f} |"
            )


def phases(events: int, size: int) -> None:
    """Median µs per event of each step of our append (see the module docstring)."""
    from journal import _sqlite_runs as runs
    from journal._batch import prepare_batch, stored_record
    from journal._runs import project
    from journal._sqlite_tail import keep_going
    from journal._sqlite_write import _insert as insert

    spent: dict[str, list[float]] = {}

    def lap(step: str, since: float) -> float:
        now = time.perf_counter()
        spent.setdefault(step, []).append(now - since)
        return now

    warm_up = max(5_000 // size, 50)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "ours.db", synchronous="NORMAL")
        conns: list[sqlite3.Connection] = []
        store._run("take a connection", conns.append)
        conn = conns[0]
        for n in range(events // size + warm_up):  # the first batches warm up
            batch = [{"thread_id": f"thread-{n % 8}", "run_id": "run-1", "category": "trace",
                      "event_type": "llm.end", "content": payload(n * size + k)}
                     for k in range(size)]  # fmt: skip
            t = time.perf_counter()
            prepared = prepare_batch(batch, store.content_caps, store.metadata_cap)
            t = lap("prepare: validate, walk, encode (Python)", t)
            conn.execute("BEGIN IMMEDIATE")
            t = lap("BEGIN", t)
            heads: dict[str, list[int]] = {}
            stored: dict[str, str | None] = {}
            rows, numbered = [], []
            run_id, one_run = prepared[0].run_id, True
            for index, event in enumerate(prepared):  # as _sqlite_write._write does
                values = event.__dict__
                thread = values["thread_id"]
                at = (values["created_at"] - EPOCH) // MICROSECOND
                if thread not in heads:
                    t = lap("number, rows (Python)", t)
                    row = conn.execute(schema.HEAD_ROW_SQL, (thread,)).fetchone()
                    base, stored[thread] = (row[0], row[1]) if row else (0, None)
                    heads[thread] = [base, base, at, at]
                    t = lap("read the head (SQL)", t)
                head = heads[thread]
                seq = head[1] = head[1] + 1
                head[3] = at
                content, metadata = prepared.texts[index]
                one_run = one_run and values["run_id"] == run_id
                rows.append((values["event_id"], thread, seq, values["run_id"],
                             values["category"], values["event_type"], content, metadata,
                             at))  # fmt: skip
                numbered.append((seq, event))
            t = lap("number, rows (Python)", t)
            newest = rows[-1]
            going = None
            if one_run and len(heads) == 1:
                going = keep_going(newest[1], run_id, stored[newest[1]], rows, prepared)
            if going is not None:
                t = lap("runs and usage: fold into the head (Python)", t)
                insert(conn, rows)
                t = lap("insert the events (SQL)", t)
                conn.execute(schema.CONTINUE_HEAD_SQL, (newest[2], newest[8], going, newest[1]))
            else:  # a thread's first batch (warm-up only: every later one goes on)
                kept = runs.keep_heads(conn, project(numbered), stored)
                t = lap("runs and usage: fold into the head (Python)", t)
                insert(conn, rows)
                t = lap("insert the events (SQL)", t)
                for thread, (base, last, first_at, last_at) in heads.items():
                    conn.execute(
                        schema.MOVE_HEAD_KEPT_SQL,
                        (thread, last, first_at, last_at, base, kept[thread][0]),
                    )
            t = lap("move the head (SQL)", t)
            conn.execute("COMMIT")
            t = lap("COMMIT", t)
            for (seq, event), owned in zip(numbered, prepared.owned, strict=True):
                stored_record(event, seq, owned)
            lap("records (Python)", t)
        store.close()
    print(f"| step of an append ({size} events) | µs per event |")
    print("|---|---|")
    total = 0.0
    for step, laps in spent.items():
        if step == "number, rows (Python)":  # two laps per batch: before and after the read
            laps = [a + b for a, b in zip(laps[::2], laps[1::2], strict=True)]
        micros = statistics.median(laps[warm_up:]) / size * 1e6
        total += micros
        print(f"| {step} | {micros:.2f} |")
    print(f"| total | {total:.2f} |")


def main() -> None:
    """Run every case and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--batch", type=int, default=100, help="with --phases: events a batch")
    args = parser.parse_args()
    if args.phases:
        phases(args.events, args.batch)
        return
    if args.postgres:
        postgres(args.rounds, args.events)
        return
    rows = [
        "| synchronous | batch | ours events/s | peer events/s | ours / peer "
        "| raw into our schema events/s | raw / peer "
        "| floor events/s | floor / peer | ours / floor "
        "| guarded peer events/s | ours / guarded peer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for synchronous in ("FULL", "NORMAL"):
            for batch in (100, 1):
                events = args.events if batch > 1 else max(args.events // 10, 200)
                sides = {
                    "ours": ours(Path(tmp) / f"ours-{synchronous}-{batch}.db", synchronous),
                    "peer": peer(Path(tmp) / f"peer-{synchronous}-{batch}.db", synchronous),
                    "raw": raw(
                        Path(tmp) / f"raw-{synchronous}-{batch}.db",
                        synchronous,
                        (args.rounds + 1) * events,
                    ),
                    "floor": floor(Path(tmp) / f"floor-{synchronous}-{batch}.db", synchronous),
                }
                if batch > 1:  # (single events: see the module docstring)
                    sides["guarded"] = peer_guarded(
                        Path(tmp) / f"guarded-{synchronous}-{batch}.db", synchronous
                    )
                got = compare(sides, args.rounds, events, batch)
                ours_rate, peer_rate, raw_rate = got["ours"], got["peer"], got["raw"]
                floor_rate = got["floor"]
                guarded = (
                    f"{got['guarded']:,.0f} | {ours_rate / got['guarded']:.2f}"
                    if "guarded" in got
                    else "— | —"
                )
                rows.append(
                    f"| {synchronous} | {batch} | {ours_rate:,.0f} | {peer_rate:,.0f} | "
                    f"{ours_rate / peer_rate:.2f} | {raw_rate:,.0f} | {raw_rate / peer_rate:.2f} "
                    f"| {floor_rate:,.0f} | {floor_rate / peer_rate:.2f} "
                    f"| {ours_rate / floor_rate:.2f} "
                    f"| {guarded} |"
                )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
