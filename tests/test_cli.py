"""The ``runjournal`` command line, through its real entry point on real SQLite stores."""

from __future__ import annotations

import io
import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from rich.console import Console

from history.cli.render import render_messages, render_timeline
from journal import NewEvent, open_store
from journal.spool import Spool
from journal.testing import ev
from tests.cli_helpers import (
    assert_user_error,
    cli_env,
    cli_json,
    invoke_cli,
    invoke_json,
    run_cli,
    serving,
)

THREAD = "demo-trip"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A SQLite store holding the demo thread, made by `runjournal demo`; (url, stdout)."""
    folder = tmp_path_factory.mktemp("cli")
    url = f"sqlite:///{folder / 'demo.db'}"
    done = run_cli("demo", "--store", url, cwd=folder)
    assert done.returncode == 0, done.stderr
    return url, done.stdout


def _read_all(url: str, thread_id: str) -> list[dict[str, Any]]:
    with open_store(url) as store:
        return [e.model_dump() for e in store.read(thread_id)]


def test_demo_prints_the_timeline_with_condensed_blocks_and_the_browser_hint(
    demo_store: tuple[str, str],
) -> None:
    """`demo` prints the conversation, each compaction as a condensed block, and how to serve."""
    url, out = demo_store
    items = invoke_json("history", THREAD, "--store", url)["items"]
    markers = [i for i in items if i["type"] == "summary_marker"]
    assert len(markers) >= 2
    for marker in markers:
        assert f"{marker['replaced_count']} messages condensed" in out
    assert "runjournal serve" in out and f"/threads/{THREAD}" in out
    assert "About 777,000 people live in the two cities together" in out


def test_demo_database_has_markers_and_replays_every_model_call_exactly(
    demo_store: tuple[str, str],
) -> None:
    """The CLI demo's store: >= 3 runs, >= 2 markers (each condensed something), exact replay.

    For every agent model call, `replay --upto-seq <its llm.start> --view model` gives the
    messages whose ids the journal recorded as sent to the model, and `verify` agrees.
    """
    url, _ = demo_store
    stored = _read_all(url, THREAD)
    assert len({e["run_id"] for e in stored}) >= 3
    markers = [e for e in stored if e["event_type"] == "middleware:summarize"]
    assert len(markers) >= 2 and all(m["content"]["replaced_count"] > 0 for m in markers)
    starts = [
        e
        for e in stored
        if e["event_type"] == "llm.start" and e["metadata"].get("caller") == "agent"
    ]
    assert len(starts) >= 3
    report = invoke_json("verify", THREAD, "--store", url)
    assert report["ok"] and report["exact"] == report["calls"] == len(starts)
    for start, check in zip(starts, report["results"], strict=True):
        replayed = invoke_json(
            "replay", THREAD, "--store", url, "--upto-seq", str(start["seq"]), "--view", "model"
        )
        assert len(replayed) == check["message_count"] == start["metadata"]["message_count"]
        assert replayed[0]["type"] == "system"


def test_demo_hints_name_the_program_as_started_when_path_does_not_find_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After scripts/demo.sh (.venv/bin/runjournal, not on PATH) the hints say that path."""
    from history.cli.main import command_name

    program = tmp_path / ".venv" / "bin" / "runjournal"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert command_name(".venv/bin/runjournal") == ".venv/bin/runjournal"
    monkeypatch.setenv("PATH", str(program.parent))
    assert command_name(str(program)) == "runjournal"
    assert command_name("/usr/lib/python3/history/cli.py") == "runjournal"


def test_demo_into_memory_with_a_markup_thread_id_prints_it_literally_and_no_dead_hints() -> None:
    """`demo --store memory:// --thread-id '[/]x'`: the id shown as typed; no look-again hints."""
    done = invoke_cli("demo", "--store", "memory://", "--thread-id", "[/]x :smile:")
    assert done.returncode == 0, done.stderr
    assert "thread [/]x :smile:" in done.stdout
    assert "memory://, which is gone now" in done.stdout and "Look again" not in done.stdout


def test_threads_json_lists_the_demo_thread(demo_store: tuple[str, str]) -> None:
    """`threads --json` reports the thread with its event and run counts."""
    url, _ = demo_store
    threads = invoke_json("threads", "--store", url)
    assert [t["thread_id"] for t in threads] == [THREAD]
    assert threads[0]["run_count"] == 4
    assert threads[0]["event_count"] == threads[0]["last_seq"] == len(_read_all(url, THREAD))


def test_history_renders_markers_where_the_json_page_has_them(demo_store: tuple[str, str]) -> None:
    """`history` shows each marker's "N messages condensed" block with its summary text."""
    url, _ = demo_store
    page = invoke_json("history", THREAD, "--store", url)
    assert [i["seq"] for i in page["items"]] == sorted(i["seq"] for i in page["items"])
    rendered = run_cli("history", THREAD, "--store", url)
    assert rendered.returncode == 0, rendered.stderr
    for marker in (i for i in page["items"] if i["type"] == "summary_marker"):
        assert f"{marker['replaced_count']} messages condensed" in rendered.stdout
        assert (
            f"seq {marker['first_replaced_seq']}-{marker['last_replaced_seq']}" in rendered.stdout
        )
    assert "▸ city_facts(" in rendered.stdout  # tool calls are folded to one line


def test_every_json_output_writes_times_as_the_http_api_does(demo_store: tuple[str, str]) -> None:
    """`history --json` and `usage --json` write a UTC time as `events --json`, `runs --json`
    and the HTTP API do (`...Z`), not in a second form (`+00:00`)."""
    from fastapi.testclient import TestClient

    from history.server import create_app

    url, _ = demo_store
    times = {e["seq"]: e["created_at"] for e in invoke_json("events", THREAD, "--store", url)}
    page = invoke_json("history", THREAD, "--store", url, "--limit", "1000")
    shown = [(i["seq"], i["created_at"]) for i in page["items"] if "created_at" in i]
    assert shown and all(at == times[seq] and at.endswith("Z") for seq, at in shown), shown
    with open_store(url) as store, TestClient(create_app(store)) as client:
        served = client.get(f"/api/threads/{THREAD}/history", params={"limit": 1000}).json()
        assert [i.get("created_at") for i in served["items"]] == [
            i.get("created_at") for i in page["items"]
        ]
        served_usage = client.get(f"/api/threads/{THREAD}/usage").json()
    usage = invoke_json("usage", THREAD, "--store", url)
    stamps = [r["started_at"] for r in usage["by_run"]]
    assert stamps == [r["started_at"] for r in served_usage["by_run"]] and stamps
    assert all(stamp.endswith("Z") for stamp in stamps)


def test_history_limit_says_its_range_and_refuses_what_the_timeline_cannot_page(
    demo_store: tuple[str, str],
) -> None:
    """`history --limit` shows its 1..MAX_PAGE_LIMIT range in the help and refuses more."""
    from history.timeline import MAX_PAGE_LIMIT

    url, _ = demo_store
    shown = invoke_cli("history", "--help")
    assert f"1<=x<={MAX_PAGE_LIMIT}" in shown.stdout, shown.stdout
    refused = invoke_cli("history", THREAD, "--store", url, "--limit", str(MAX_PAGE_LIMIT + 1))
    assert refused.returncode == 2 and "--limit" in refused.stderr, refused
    assert invoke_json("history", THREAD, "--store", url, "--limit", str(MAX_PAGE_LIMIT))["items"]


def test_history_pages_walk_back_with_before_seq(demo_store: tuple[str, str]) -> None:
    """`history` pages back to seq 1 via --before-seq; --no-include-markers drops markers."""
    url, _ = demo_store
    everything = [i["seq"] for i in invoke_json("history", THREAD, "--store", url)["items"]]
    seen: list[int] = []
    cursor: list[str] = []
    while True:
        page = invoke_json("history", THREAD, "--store", url, "--limit", "15", *cursor)
        seen = [i["seq"] for i in page["items"]] + seen
        if not page["has_more"]:
            break
        cursor = ["--before-seq", str(page["next_before_seq"])]
    assert seen == everything
    plain = invoke_json("history", THREAD, "--store", url, "--no-include-markers")
    assert {i["type"] for i in plain["items"]} == {"human", "ai", "tool"}


def test_events_filters_and_cursors_carry_the_library_names(demo_store: tuple[str, str]) -> None:
    """`events` applies --category/--event-type/--run-id, --after-seq and --limit."""
    url, _ = demo_store
    stored = _read_all(url, THREAD)
    middleware = invoke_json("events", THREAD, "--store", url, "--category", "middleware")
    assert [e["seq"] for e in middleware] == [
        e["seq"] for e in stored if e["category"] == "middleware"
    ]
    first_run = stored[0]["run_id"]
    page = invoke_json(
        "events", THREAD, "--store", url, "--run-id", first_run, "--event-type", "llm.start",
        "--event-type", "llm.end", "--after-seq", "3", "--limit", "2",
    )  # fmt: skip
    expected = [
        e["seq"]
        for e in stored
        if e["run_id"] == first_run and e["event_type"] in ("llm.start", "llm.end") and e["seq"] > 3
    ][:2]
    assert [e["seq"] for e in page] == expected and len(expected) == 2
    table = run_cli("events", THREAD, "--store", url, "--limit", "3")
    assert table.returncode == 0 and "run.start" in table.stdout


@pytest.mark.parametrize("width", ["80", "60"])
def test_events_and_verify_keep_their_seq_and_run_columns_on_a_narrow_or_piped_output(
    demo_store: tuple[str, str], tmp_path: Path, width: str
) -> None:
    """At 80 columns (a pipe's width) or fewer, every row still shows its seq and its run:
    the long texts (content, problems) shrink or fold, the numbers never vanish."""
    from journal import SqliteEventStore
    from journal.transfer import export_events, import_events

    url, _ = demo_store
    stored = _read_all(url, THREAD)
    lines = io.StringIO()
    with open_store(url) as store:
        export_events(store, THREAD, lines)
    changed = lines.getvalue().replace("Lisbon", "Lisboa").encode()  # diverges every call
    long_type = "middleware:TrackingSummarizationMiddleware"  # as long as event types get
    with SqliteEventStore(tmp_path / "changed.db") as target:
        import_events(target, changed.splitlines(keepends=True))
        target.append([ev(THREAD, run_id=stored[-1]["run_id"], category="middleware",
                          event_type=long_type, content={"n": 1})])  # fmt: skip
        last = target.read(THREAD)[-5:]
    changed_url = f"sqlite:///{tmp_path / 'changed.db'}"
    narrow = cli_env(COLUMNS=width)
    table = run_cli(
        "events", THREAD, "--store", changed_url, "--after-seq", str(last[0].seq - 1), env=narrow
    )
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row.split()[0] for row in rows] == [str(e.seq) for e in last], table.stdout
    assert all(e.run_id[:8] in row for e, row in zip(last, rows, strict=True)), table.stdout
    assert all(len(line) <= int(width) for line in table.stdout.splitlines())
    report = json.loads(run_cli("verify", THREAD, "--store", changed_url, "--json").stdout)
    checked = run_cli("verify", THREAD, "--store", changed_url, env=narrow)
    assert checked.returncode == 1 and report["diverged"] > 0  # diverged calls fail verify
    seqs = [line.split()[0] for line in checked.stdout.splitlines() if line[:5].strip().isdigit()]
    assert seqs == [str(call["seq"]) for call in report["results"]], checked.stdout
    assert "content_" in checked.stdout  # the problem, folded, not cut off


def test_runs_json_lists_each_run_in_order(demo_store: tuple[str, str]) -> None:
    """`runs --json` gives the 4 demo runs newest first, each finished successfully."""
    url, _ = demo_store
    page = cli_json("runs", THREAD, "--store", url)
    runs = page["runs"]
    assert len(runs) == 4 and page["has_more"] is False
    assert [r["status"] for r in runs] == ["success"] * 4
    assert [r["first_seq"] for r in runs] == sorted((r["first_seq"] for r in runs), reverse=True)
    assert runs[-1]["first_seq"] == 1


def test_replay_views_and_upto_seq(demo_store: tuple[str, str]) -> None:
    """`replay` gives every message (full), the compacted state, or the last model input."""
    url, _ = demo_store
    full = cli_json("replay", THREAD, "--store", url, "--view", "full")
    state = invoke_json("replay", THREAD, "--store", url, "--view", "state")
    model = invoke_json("replay", THREAD, "--store", url, "--view", "model")
    messages = [e for e in _read_all(url, THREAD) if e["category"] == "message"]
    assert len(full) == len(messages)
    assert state[0]["data"]["additional_kwargs"]["lc_source"] == "summarization"
    assert len(state) < len(full)
    assert model[0]["type"] == "system" and model[1]["data"]["id"] == state[0]["data"]["id"]
    early = invoke_json("replay", THREAD, "--store", url, "--upto-seq", str(messages[1]["seq"]))
    assert [m["data"]["id"] for m in early] == [m["content"]["data"]["id"] for m in messages[:2]]
    shown = invoke_cli("replay", THREAD, "--store", url, "--view", "state")
    assert shown.returncode == 0 and "summary of earlier messages" in shown.stdout


def test_export_then_import_into_an_empty_store_reproduces_identical_events(
    demo_store: tuple[str, str], tmp_path: Path
) -> None:
    """export -> import into an empty store gives the same events (ids, seqs, times, content)."""
    url, _ = demo_store
    exported = run_cli("export", THREAD, "--store", url)
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    imported = run_cli("import", "-", "--store", target, "--batch-size", "7", input=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.strip() == f"imported {len(lines)} events from stdin"
    assert _read_all(target, THREAD) == _read_all(url, THREAD)
    again = invoke_json("import", "-", "--store", target, input=exported.stdout)
    assert again == {
        "source": "stdin",
        "imported": 0,
        "already_present": len(lines),
        "renumbered": 0,
    }
    assert len(_read_all(target, THREAD)) == len(lines)  # idempotent: nothing stored twice
    moved = exported.stdout.replace(f'"thread_id":"{THREAD}"', '"thread_id":"moved"')
    assert moved != exported.stdout  # same event ids under another thread id: still present
    again = invoke_json("import", "-", "--store", target, input=moved)
    assert (again["imported"], again["already_present"]) == (0, len(lines))


def test_export_to_a_file(demo_store: tuple[str, str], tmp_path: Path) -> None:
    """`export --output FILE` writes one JSON event a line, in seq order."""
    url, _ = demo_store
    out = tmp_path / "thread.jsonl"
    done = invoke_cli("export", THREAD, "--store", url, "--output", out, "--after-seq", "5")
    assert done.returncode == 0, done.stderr
    seqs = [json.loads(line)["seq"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert seqs == [e["seq"] for e in _read_all(url, THREAD) if e["seq"] > 5]


def _event_line(seq: int, **changes: Any) -> str:
    event = NewEvent(thread_id="t", run_id="r", category="lifecycle", event_type="run.start")
    return json.dumps({**event.model_dump(mode="json"), "seq": seq, **changes})


@pytest.mark.parametrize(
    ("bad_line", "words"),
    [
        ("{not json", ["line 4", "not JSON"]),
        ('["a list"]', ["line 4", "JSON object"]),
        (_event_line(4, category="nonsense"), ["line 4", "category"]),
    ],
)
def test_import_of_a_malformed_line_names_it_and_imports_nothing_of_its_batch(
    tmp_path: Path, bad_line: str, words: list[str]
) -> None:
    """A malformed line: one error line with its number, exit 1, its batch not imported."""
    lines = [_event_line(n) for n in range(1, 4)] + [bad_line] + [_event_line(5)]
    file = tmp_path / "events.jsonl"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'target.db'}"
    done = invoke_cli("import", file, "--store", url, "--batch-size", "2")
    assert_user_error(done, *words, "nothing of its batch")
    # batch 1 (lines 1-2) was written; batch 2 (lines 3-4) was not, nor anything after it
    assert len(_read_all(url, "t")) == 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["history", "no-such-thread"], ["no-such-thread"]),
        (["events", "no-such-thread"], ["no-such-thread"]),
        (["runs", "no-such-thread"], ["no-such-thread"]),
        (["replay", "no-such-thread"], ["no-such-thread"]),
        (["export", "no-such-thread"], ["no-such-thread"]),
        (["threads", "--store", "mysql://x/y"], ["bad store URL", "mysql"]),
        (["threads", "--store", "sqlite:///{tmp}/missing.db"], ["no store at"]),
        (["threads", "--store", "sqlite:///{tmp}/empty.db"], ["no store at"]),
        (["import", "{tmp}/missing.jsonl"], ["cannot read", "missing.jsonl"]),
        (["import", "{tmp}"], ["cannot read"]),
        (["recover", "{tmp}/missing-spool.jsonl"], ["no spool file"]),
        (["export", "demo-trip", "--output", "{tmp}/no/such/dir/x.jsonl"], ["cannot write"]),
        (["threads", "--store", "sqlite:///{tmp}/not-a-db.txt"], ["not a runjournal database"]),
        (["import", "{tmp}/latin1.jsonl"], ["latin1.jsonl: line 3: not UTF-8"]),
    ],
)
def test_user_errors_print_one_line_and_exit_1(
    demo_store: tuple[str, str], tmp_path: Path, args: list[str], words: list[str]
) -> None:
    """Unknown thread, bad store URL, missing/corrupt store, unreadable file: one line, exit 1."""
    url, _ = demo_store
    (tmp_path / "not-a-db.txt").write_text("this is not a database\n" * 100)
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "latin1.jsonl").write_bytes("\n\ncaf\xe9\n".encode("latin-1"))
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--store" not in args:
        args += ["--store", url]
    assert_user_error(invoke_cli(*args), *words)


@pytest.mark.parametrize("command", [["threads"], ["events", "t"], ["usage", "t"]])
def test_a_read_leaves_a_database_of_other_tables_untouched(
    tmp_path: Path, command: list[str]
) -> None:
    """Pointed at an application's own SQLite file, a read command says it is no runjournal
    store and writes none of runjournal's tables into it."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    done = invoke_cli(*command, "--store", f"sqlite:///{path}")
    assert_user_error(done, "not a runjournal store")
    with sqlite3.connect(path) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    assert names == ["customers"]


def test_user_error_through_the_entry_point_has_no_traceback(
    demo_store: tuple[str, str],
) -> None:
    """The real entry point prints an unknown thread as one line on stderr and exits 1."""
    url, _ = demo_store
    assert_user_error(run_cli("runs", "nope", "--store", url), "'nope'")


def test_store_comes_from_the_environment_by_default(demo_store: tuple[str, str]) -> None:
    """Without --store the commands read $RUNJOURNAL_STORE."""
    url, _ = demo_store
    done = run_cli("threads", "--json", env=cli_env(RUNJOURNAL_STORE=url))
    assert done.returncode == 0, done.stderr
    assert [t["thread_id"] for t in json.loads(done.stdout)] == [THREAD]


def test_recover_replays_a_spool_once(tmp_path: Path) -> None:
    """`recover SPOOL` stores the spooled events in order, removes the file, and is idempotent."""
    events = [
        NewEvent(
            thread_id="spooled",
            run_id="r1",
            category="message",
            event_type="message.human",
            content=HumanMessage(f"hello {n}", id=f"h{n}"),
        )
        for n in range(5)
    ]
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(events)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(spool.path.read_bytes())
    url = f"sqlite:///{tmp_path / 'store.db'}"
    done = run_cli("recover", spool.path, "--store", url, "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    assert not spool.path.exists()
    assert [e["event_id"] for e in _read_all(url, "spooled")] == [e.event_id for e in events]
    again = invoke_cli("recover", copy, "--store", url, "--no-remove", "--json")
    assert again.returncode == 0 and copy.exists()
    assert json.loads(again.stdout) == {
        "spool": str(copy),
        "recovered": 5,
        "skipped": 0,
        "bad_lines": [],
        "removed": False,
    }
    assert len(_read_all(url, "spooled")) == len(events)


def test_recover_never_deletes_a_file_with_lines_that_are_not_spooled_events(
    tmp_path: Path,
) -> None:
    """A non-spool file is a user error and kept; a spool with a torn line is stored and kept."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n\nnot a spool at all\n", encoding="utf-8")
    done = invoke_cli("recover", notes, "--store", url)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("runjournal: error: ")
    assert "notes.md" in done.stderr and "kept" in done.stderr
    assert notes.exists()
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(
        [NewEvent(thread_id="t", run_id="r", category="lifecycle", event_type="run.start")]
    )
    with spool.path.open("a", encoding="utf-8") as f:
        f.write('{"thread_id": "t", "run_id"')  # torn by a crash
    report = invoke_json("recover", spool.path, "--store", url)
    assert report == {
        "spool": str(spool.path),
        "recovered": 1,
        "skipped": 1,
        "bad_lines": [2],
        "removed": False,
    }
    assert spool.path.exists() and len(_read_all(url, "t")) == 1


def test_copy_moves_every_thread_and_is_idempotent(
    demo_store: tuple[str, str], tmp_path: Path
) -> None:
    """`copy --from URL --to URL` reproduces the events; a second run copies nothing twice."""
    url, _ = demo_store
    target = f"sqlite:///{tmp_path / 'copied.db'}"
    first = run_cli("copy", "--from", url, "--to", target, "--batch-size", "9", "--json")
    assert first.returncode == 0, first.stderr
    count = len(_read_all(url, THREAD))
    assert json.loads(first.stdout) == {"threads": 1, "copied": count, "already_present": 0}
    again = invoke_json("copy", "--from", url, "--to", target, "--thread-id", THREAD)
    assert again == {"threads": 1, "copied": 0, "already_present": count}
    assert _read_all(target, THREAD) == _read_all(url, THREAD)


def test_copy_into_a_diverged_thread_is_a_user_error(
    demo_store: tuple[str, str], tmp_path: Path
) -> None:
    """A target thread that is not a prefix of the source: one error line, nothing written."""
    url, _ = demo_store
    target = f"sqlite:///{tmp_path / 'other.db'}"
    with open_store(target) as store:
        store.append([NewEvent(thread_id=THREAD, run_id="x", category="lifecycle",
                               event_type="run.start")])  # fmt: skip
    assert_user_error(invoke_cli("copy", "--from", url, "--to", target), THREAD)
    assert len(_read_all(target, THREAD)) == 1


def test_copy_of_an_unknown_thread_is_a_user_error(
    demo_store: tuple[str, str], tmp_path: Path
) -> None:
    """`copy --thread-id` naming no thread of the source: one error line, no target written."""
    url, _ = demo_store
    target = tmp_path / "target.db"
    done = invoke_cli("copy", "--from", url, "--to", f"sqlite:///{target}", "--thread-id", "nope")
    assert_user_error(done, "'nope'")
    with open_store(f"sqlite:///{target}") as store:
        assert store.list_threads() == []


def test_serve_answers_the_api_and_stops_on_sigint(demo_store: tuple[str, str]) -> None:
    """`serve` serves the store's threads over HTTP (with --token) until interrupted."""
    url, _ = demo_store
    with serving("--store", url, "--token", "x") as base:
        answer = httpx.get(f"{base}/api/threads", headers={"Authorization": "Bearer x"})
        assert answer.status_code == 200
        assert [t["thread_id"] for t in answer.json()["threads"]] == [THREAD]
        assert httpx.get(f"{base}/api/threads").status_code == 401


def test_serve_on_a_port_in_use_or_an_unknown_host_is_a_one_line_user_error(
    demo_store: tuple[str, str],
) -> None:
    """`serve` on a taken port or a host that does not resolve: one line, exit 1, nothing run."""
    url, _ = demo_store
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = invoke_cli("serve", "--store", url, "--port", port)
    assert_user_error(done, f"127.0.0.1:{port}", "in use")
    done = invoke_cli("serve", "--store", url, "--host", "no-such-host.invalid")
    assert_user_error(done, "no-such-host.invalid")


def test_every_command_has_help_from_its_docstring() -> None:
    """`runjournal --help` lists every command; each command's help is its docstring."""
    import click

    from history.cli.main import cli

    done = run_cli("--help")
    assert done.returncode == 0, done.stderr
    for name, command in cli.commands.items():
        assert name in done.stdout
        text = command.get_help(click.Context(command, info_name=name))
        assert (command.help or "").split("\n")[0] in " ".join(text.split())
        assert "--store" in text or name == "copy"


def _render(renderable: object) -> str:
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_render_timeline_folds_tool_calls_and_frames_compactions() -> None:
    """A page renders tool calls and results on one line each and a marker as a framed block."""
    page = {
        "thread_id": "t",
        "has_more": True,
        "next_before_seq": 3,
        "items": [
            {"type": "ai", "seq": 3, "run_id": "r1", "content": "",
             "tool_calls": [{"name": "lookup", "args": {"q": "x" * 300}, "id": "c"}]},
            {"type": "tool", "seq": 4, "run_id": "r1", "content": "line1\nline2 " + "y" * 300,
             "name": "lookup", "status": "error"},
            {"type": "summary_marker", "seq": 9, "run_id": "r2", "replaced_count": 7,
             "summary": "- the gist", "first_replaced_seq": 3, "last_replaced_seq": 8},
            {"type": "human", "seq": 10, "run_id": "r2",
             "content": [{"type": "text", "text": "block text"}]},
        ],
    }  # fmt: skip
    text = _render(render_timeline(page))
    lines = text.splitlines()
    assert "older items: --before-seq 3" in lines[0]
    assert sum("▸ lookup(" in line for line in lines) == 1
    assert any("↳ lookup: line1 line2" in line and line.rstrip().endswith("…") for line in lines)
    assert "7 messages condensed" in text and "seq 3-8" in text and "- the gist" in text
    assert "block text" in text and text.count("run r") == 2


def test_render_prints_stored_text_literally_never_as_markup() -> None:
    """Markup in stored text ([bold], [link=…]) is shown as typed, in messages and summaries."""
    hostile = "[bold red]boom[/bold red] [link=https://evil.example]click[/link]"
    page = {
        "thread_id": "t",
        "has_more": False,
        "next_before_seq": None,
        "items": [
            {"type": "human", "seq": 1, "run_id": "r", "content": hostile},
            {"type": "summary_marker", "seq": 2, "run_id": "r", "replaced_count": 1,
             "summary": hostile, "first_replaced_seq": None, "last_replaced_seq": None},
        ],
    }  # fmt: skip
    text = _render(render_timeline(page))
    assert text.count(hostile) == 2
    assert "1 message condensed" in text
    replayed = _render(
        render_messages(
            [
                HumanMessage(hostile, additional_kwargs={"lc_source": "summarization"}),
                HumanMessage(hostile),
            ]
        )
    )
    assert replayed.count(hostile) == 2 and "summary of earlier messages" in replayed


def test_names_the_user_typed_are_printed_literally_never_as_markup(
    demo_store: tuple[str, str], tmp_path: Path
) -> None:
    """A file name or store path with [bold] or :emoji: codes is printed as typed."""
    url, _ = demo_store
    exported = tmp_path / "[bold]x :smile:.jsonl"
    assert invoke_cli("export", THREAD, "--store", url, "--output", exported).returncode == 0
    target = f"sqlite:///{tmp_path / '[bold]y.db'}"
    done = invoke_cli("import", exported, "--store", target)
    assert done.returncode == 0, done.stderr
    assert f"events from {exported}" in " ".join(done.stderr.split())


def test_progress_bars_draw_only_on_a_terminal() -> None:
    """Progress bars are drawn on a terminal and stay silent when stderr is a pipe or file."""
    from history.cli.common import progress_bar

    for terminal in (True, False):
        sink = io.StringIO()
        console = Console(file=sink, force_terminal=terminal, width=80)
        with progress_bar(console, "export", 10) as bar:
            bar.advance(bar.task_ids[0], 10)
        assert bar.disable is not terminal
        assert ("export" in sink.getvalue()) is terminal


def test_every_command_help_shows_an_example() -> None:
    """Each command's --help ends its description with a runnable example, as sqlite-utils does."""
    from click.testing import CliRunner

    from history.cli.main import cli

    runner = CliRunner()
    for name in sorted(cli.commands):
        shown = runner.invoke(cli, [name, "--help"])
        assert shown.exit_code == 0, name
        example = shown.output.split("Example:\n", 1)[1].splitlines()[0].strip()
        assert example.startswith(f"runjournal {name}"), (name, example)
