"""Fault scenarios against real processes, stores and PostgreSQL: is anything lost?

Each scenario journals real ``create_agent`` runs (the deterministic fakes of ``tests/fakes.py``)
in child OS processes, injects one fault, then recovers the way an operator would (``recover``
on the spool, if one is left) and counts what the store holds:

* store down then exit (SQLite): another process holds the write lock while the app runs and
  exits without ``close()``;
* store down then exit (PostgreSQL): the server is stopped while the app runs and exits;
* recover racing a live writer: one process spools (store down) while another recovers the
  same spool file again and again;
* restart before recover: an app spools during an outage and exits; a restarted app writes the
  same threads once the store is back, before anyone runs ``recover``;
* torn spool: the spool ends in a line torn by a crash when the app spools again;
* SIGKILL mid-batch: a writer appending 200-event batches is killed at a random moment;
* PostgreSQL restart: the server restarts (every pooled connection dies) while the app runs.

Printed as a Markdown table: events expected, events stored, whether seq order is the order
the events happened in, events lost. Usage: ``python scripts/reliability.py [--runs 4]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.*

from journal import MemoryEventStore, RunEventStore, RunJournal, open_store  # noqa: E402
from journal.spool import recover_spool  # noqa: E402
from tests.postgres_server import PostgresServer, fresh_database_url  # noqa: E402
from tests.test_run_journal_failures import run_agent  # noqa: E402


@dataclass
class Outcome:
    """One row of the table."""

    fault: str
    expected: int
    stored: int
    ordered: bool
    recovered: int = 0
    """Events the operator's ``recover`` found in the spool afterwards."""


def _child(code: str, *, wait: bool = True) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    if wait:
        proc.wait(300)
    return proc


def _app(store_url: str, spool: Path, threads: list[str], *, close: bool = False) -> str:
    """Child code: one journal, one agent run per thread, exit (closing only if ``close``)."""
    return f"""
        from journal import RunJournal, open_store
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(open_store({store_url!r}), spool_path={str(spool)!r})
        for thread in {threads!r}:
            run_agent(journal, thread=thread)
        {"journal.close()" if close else "pass  # exit with the journal open"}
    """


def per_run() -> int:
    """Events one ``run_agent`` run journals."""
    store = MemoryEventStore()
    with (
        tempfile.TemporaryDirectory() as tmp,
        RunJournal(store, spool_path=Path(tmp) / "s.jsonl") as journal,
    ):
        run_agent(journal)
    return len(store.read("t1"))


def _count(store: RunEventStore, threads: list[str]) -> tuple[int, bool]:
    total, ordered = 0, True
    for thread in threads:
        events = store.read(thread)
        total += len(events)
        stamps = [e.created_at for e in events]
        ordered &= [e.seq for e in events] == list(range(1, len(events) + 1))
        ordered &= stamps == sorted(stamps)
    return total, ordered


_recovered = 0


def _recover(spool: Path, store: RunEventStore) -> None:
    global _recovered
    if spool.exists():
        _recovered += recover_spool(spool, store).events


def store_down_then_exit_sqlite(tmp: Path, runs: int) -> Outcome:
    """The app exits while another process holds the SQLite write lock."""
    db, spool = tmp / "locked.db", tmp / "locked.jsonl"
    url = f"sqlite:///{db}"
    open_store(url).close()
    threads = [f"t{n}" for n in range(runs)]
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        _child(_app(url, spool, threads))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_store(url) as store:
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome(
        "store down then exit (SQLite write lock held)", runs * per_run(), stored, ordered
    )


def store_down_then_exit_postgres(tmp: Path, runs: int, server: PostgresServer) -> Outcome:
    """The PostgreSQL server stops while the app runs; the app exits without ``close()``."""
    url, spool = fresh_database_url(server.url), tmp / "pg-down.jsonl"
    threads = [f"t{n}" for n in range(runs)]
    code = f"""
        import sys
        from journal import RunJournal, open_store
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(open_store({url!r}), spool_path={str(spool)!r})
        print("ready", flush=True)
        sys.stdin.readline()
        for thread in {threads!r}:
            run_agent(journal, thread=thread)
    """
    app = _interactive(code)
    server.stop_server()
    try:
        _go(app)
    finally:
        server.start_again()
    with open_store(url) as store:
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome("store down then exit (PostgreSQL stopped)", runs * per_run(), stored, ordered)


def _interactive(code: str) -> subprocess.Popen[str]:
    """A child that prints ``ready`` and waits for a line on stdin (see :func:`_go`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    app = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert app.stdout is not None
    while app.stdout.readline().strip() != "ready":
        pass  # log lines of the child
    return app


def _go(app: subprocess.Popen[str]) -> None:
    """Let an :func:`_interactive` child go on, and wait for it to end."""
    assert app.stdin is not None
    app.stdin.write("go\n")
    app.stdin.flush()
    app.wait(300)


def recover_racing_a_live_writer(tmp: Path, runs: int) -> Outcome:
    """``recover`` runs again and again while another process spools to the same file."""
    spool = tmp / "race.jsonl"
    threads = [f"t{n}" for n in range(runs * 5)]
    code = f"""
        from journal import RunJournal
        from tests.flaky_stores import FlakyStore
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(FlakyStore(down=True), spool_path={str(spool)!r},
                             retry_delays=(0.001,), max_batch=7)
        for thread in {threads!r}:
            run_agent(journal, thread=thread)
        journal.close()
    """
    target = tmp / "race.db"
    with open_store(f"sqlite:///{target}") as store:
        writer = _child(code, wait=False)
        while writer.poll() is None:
            _recover(spool, store)
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome("recover racing a live writer (2 processes)", len(threads) * per_run(),
                   stored, ordered)  # fmt: skip


def restart_before_recover(tmp: Path, runs: int) -> Outcome:
    """An app spools during an outage and exits; a restarted app writes the same threads."""
    db, spool = tmp / "restart.db", tmp / "restart.jsonl"
    url = f"sqlite:///{db}"
    open_store(url).close()
    threads = [f"t{n}" for n in range(runs)]
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        _child(_app(url, spool, threads, close=True))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _child(_app(url, spool, threads, close=True))  # the store is back: same threads again
    with open_store(url) as store:
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome("restart before recover", 2 * runs * per_run(), stored, ordered)


def torn_spool(tmp: Path, runs: int) -> Outcome:
    """The spool ends in a torn line (a crash mid-write) when the app spools again."""
    spool = tmp / "torn.jsonl"
    spool.write_text('{"event_id": "torn-by-a-crash", "thread_id": "t', encoding="utf-8")
    threads = [f"t{n}" for n in range(runs)]
    code = f"""
        from journal import RunJournal
        from tests.flaky_stores import FlakyStore
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(FlakyStore(down=True), spool_path={str(spool)!r},
                             retry_delays=(0.001,))
        for thread in {threads!r}:
            run_agent(journal, thread=thread)
    """
    _child(code)
    with open_store(f"sqlite:///{tmp / 'torn.db'}") as store:
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome("torn spool line, then more spooling", runs * per_run(), stored, ordered)


def sigkill_mid_batch(tmp: Path, runs: int) -> Outcome:
    """A writer of 200-event batches is killed; every batch it saw committed is stored whole."""
    db = tmp / "killed.db"
    code = f"""
        from journal import open_store
        from journal.testing import many
        store = open_store("sqlite:///{db}")
        n = 0
        while True:
            store.append(many(200, thread_id="t0"))
            n += 1
            print("committed", n, flush=True)
    """
    writer = _child(code, wait=False)
    assert writer.stdout is not None
    committed = 0
    for line in writer.stdout:  # log lines too: only "committed N" counts
        if not line.startswith("committed "):
            continue
        committed = int(line.split()[1])
        if committed >= 5 * runs:
            writer.send_signal(signal.SIGKILL)
            break
    writer.wait(60)
    with open_store(f"sqlite:///{db}") as store:
        stored, ordered = _count(store, ["t0"])
    whole = stored % 200 == 0 and stored >= committed * 200
    return Outcome("SIGKILL mid-batch (200-event batches)", committed * 200,
                   stored if whole else -stored, ordered)  # fmt: skip


def postgres_restart(tmp: Path, runs: int, server: PostgresServer) -> Outcome:
    """The server restarts while a long-lived app journals runs."""
    url, spool = fresh_database_url(server.url), tmp / "pg-restart.jsonl"
    threads = [f"t{n}" for n in range(runs * 2)]
    code = f"""
        import sys
        from journal import RunJournal, open_store
        from tests.test_run_journal_failures import run_agent
        journal = RunJournal(open_store({url!r}), spool_path={str(spool)!r})
        threads = {threads!r}
        for thread in threads[: len(threads) // 2]:
            run_agent(journal, thread=thread)
        journal.flush()
        print("ready", flush=True)
        sys.stdin.readline()
        for thread in threads[len(threads) // 2 :]:
            run_agent(journal, thread=thread)
        journal.close()
    """
    app = _interactive(code)
    server.restart()
    _go(app)
    with open_store(url) as store:
        _recover(spool, store)
        stored, ordered = _count(store, threads)
    return Outcome("PostgreSQL restart while the app runs", len(threads) * per_run(), stored,
                   ordered)  # fmt: skip


def main() -> None:
    """Run every scenario and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="agent runs per scenario step")
    args = parser.parse_args()
    logging.getLogger("runjournal").setLevel(logging.CRITICAL)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as name, PostgresServer() as server:
        tmp = Path(name)
        scenarios: list[Callable[[], Outcome]] = [
            lambda: store_down_then_exit_sqlite(tmp, args.runs),
            lambda: store_down_then_exit_postgres(tmp, args.runs, server),
            lambda: recover_racing_a_live_writer(tmp, args.runs),
            lambda: restart_before_recover(tmp, args.runs),
            lambda: torn_spool(tmp, args.runs),
            lambda: sigkill_mid_batch(tmp, args.runs),
            lambda: postgres_restart(tmp, args.runs, server),
        ]
        global _recovered
        for scenario in scenarios:
            started = time.monotonic()
            _recovered = 0
            outcome = scenario()
            outcome.recovered = _recovered
            outcomes.append(outcome)
            print(f"done: {outcome.fault} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    print(
        "| fault | events expected | events stored | seq order = time order | lost "
        "| left for `recover` |"
    )
    print("|---|---:|---:|:---:|---:|---:|")
    for o in outcomes:
        lost = o.expected - o.stored if o.stored >= 0 else "partial batch!"
        order = "yes" if o.ordered else "NO"
        print(f"| {o.fault} | {o.expected} | {o.stored} | {order} | {lost} | {o.recovered} |")


if __name__ == "__main__":
    main()
