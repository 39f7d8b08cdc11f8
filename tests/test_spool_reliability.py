"""The spool under faults: torn lines, a live writer in another process, bad lines, full disks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from journal import MemoryEventStore, RunJournal, SqliteEventStore, recover_spool
from journal.spool import Spool, read_spool
from journal.testing import ev
from tests.cli_helpers import ROOT, assert_user_error, cli_env, run_cli
from tests.flaky_stores import FlakyStore
from tests.test_run_journal_failures import FAST_RETRY, run_agent

#: A line too deeply nested for Python's JSON parser (it raises RecursionError).
DEEP_LINE = "[" * 200_000 + "]" * 200_000


def test_torn_last_line_never_swallows_the_next_event(tmp_path: Path) -> None:
    """An event spooled after a torn fragment starts on its own line and is recovered."""
    path = tmp_path / "spool.jsonl"
    path.write_text('{"event_id": "torn-by-a-crash", "thread_', encoding="utf-8")
    store = FlakyStore(down=True)
    with RunJournal(store, spool_path=path, retry_delays=FAST_RETRY) as journal:
        run_agent(journal)
    spooled = journal.spooled_events
    assert spooled > 0
    target = MemoryEventStore()
    done = recover_spool(path, target)
    assert done.events == spooled == len(target.read("t1"))
    assert done.skipped_lines == 1 and done.bad_lines == (1,)


def test_recover_racing_a_live_writer_in_another_process_loses_nothing(tmp_path: Path) -> None:
    """recover_spool run again and again while another process spools keeps every event."""
    path = tmp_path / "spool.jsonl"
    writer = textwrap.dedent(
        f"""
        import sys
        from journal.spool import Spool
        from journal.testing import ev
        spool = Spool({str(path)!r})
        for n in range(400):
            spool.append([ev(thread_id="race", content=n) for _ in range(3)])
        print("done", flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer], cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, text=True
    )
    store = SqliteEventStore(tmp_path / "target.db")
    try:
        while proc.poll() is None:
            recover_spool(path, store, batch_size=7)
        assert proc.stdout is not None and proc.stdout.read().strip() == "done"
        recover_spool(path, store)
        stored = store.read("race")
        assert len(stored) == 1200
        assert [e.content for e in stored] == sorted(e.content for e in stored)
    finally:
        proc.wait(60)
        store.close()


def test_recover_keeps_deep_and_bad_lines_by_number_and_stores_the_good(tmp_path: Path) -> None:
    """A line too deep to parse is named by its number and kept; the good lines are stored."""
    path = tmp_path / "spool.jsonl"
    good = [ev(thread_id="deep", content=n) for n in range(3)]
    Spool(path).append(good[:1])
    with path.open("a", encoding="utf-8") as f:
        f.write(DEEP_LINE + "\n")
        f.write('{"not": "an event"}\n')
    Spool(path).append(good[1:])
    target = MemoryEventStore()
    done = recover_spool(path, target)
    assert [e.event_id for e in target.read("deep")] == [e.event_id for e in good]
    assert done.events == 3 and done.bad_lines == (2, 3) and not done.removed
    kept = path.read_text(encoding="utf-8").splitlines()
    assert kept == [DEEP_LINE, '{"not": "an event"}']  # only the bad lines are left
    assert read_spool(path) == []


def test_cli_recover_names_a_deep_line_without_a_traceback(tmp_path: Path) -> None:
    """`runjournal recover` stores the good events and names the deep line by its number."""
    path = tmp_path / "spool.jsonl"
    Spool(path).append([ev(thread_id="deep")])
    with path.open("a", encoding="utf-8") as f:
        f.write(DEEP_LINE + "\n")
    done = run_cli("recover", path, "--store", f"sqlite:///{tmp_path / 'r.db'}", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["recovered"] == 1 and report["bad_lines"] == [2] and not report["removed"]
    assert "line 2" in done.stderr


def test_cli_import_names_a_deep_line_without_a_traceback(tmp_path: Path) -> None:
    """`runjournal import` of a too-deep line is a one-line error naming the line."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(ev(thread_id="x").model_dump(mode="json")) + "\n" + DEEP_LINE)
    done = run_cli("import", path, "--store", f"sqlite:///{tmp_path / 'i.db'}")
    assert_user_error(done, "line 2")


def test_spool_counts_are_exact_when_the_file_size_limit_is_hit(tmp_path: Path) -> None:
    """With a file-size limit mid-spool, recovered == spooled and spooled + dropped == made."""
    path = tmp_path / "spool.jsonl"
    script = textwrap.dedent(
        f"""
        import resource
        from journal import RunJournal
        from tests.flaky_stores import FlakyStore
        from tests.test_run_journal_failures import run_agent
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))
        journal = RunJournal(FlakyStore(down=True), spool_path={str(path)!r},
                             retry_delays=(0.01,), max_batch=40)
        for n in range(6):
            run_agent(journal, thread=f"t{{n}}")
        journal.close()
        print(journal.spooled_events, journal.dropped_events)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    spooled, dropped = map(int, done.stdout.strip().splitlines()[-1].split())
    assert dropped > 0
    target = MemoryEventStore()
    report = recover_spool(path, target)
    assert report.events == spooled
    store = MemoryEventStore()
    with RunJournal(store, spool_path=tmp_path / "healthy.jsonl") as healthy:
        run_agent(healthy)
    assert spooled + dropped == 6 * len(store.read("t1"))
