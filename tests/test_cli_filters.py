"""The `runjournal history` filters and the run/usage commands on a real journaled SQLite store."""

from __future__ import annotations

import pytest

from journal import SqliteEventStore
from tests.cli_helpers import invoke_cli, invoke_json
from tests.test_timeline_filters import HINT, _journaled_thread


@pytest.fixture(scope="module")
def journaled(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """A SQLite store with thread ``t``: three real agent runs, each with a hidden hint."""
    path = tmp_path_factory.mktemp("cli-filters") / "j.db"
    store = SqliteEventStore(path)
    _, run_ids = _journaled_thread(runs=3, store=store)
    store.close()
    return f"sqlite:///{path}", run_ids


def test_history_leaves_hidden_context_out_unless_asked(journaled: tuple[str, list[str]]) -> None:
    """`history` hides hide_from_ui messages; --include-hidden prints them marked, with caller."""
    url, _ = journaled
    plain = invoke_cli("history", "t", "--store", url)
    assert plain.returncode == 0, plain.stderr
    assert "question 2" in plain.stdout and HINT not in plain.stdout
    shown = invoke_cli("history", "t", "--store", url, "--include-hidden")
    assert shown.stdout.count(f"(hidden) [middleware:InjectContext] {HINT}") == 3
    page = invoke_json("history", "t", "--store", url, "--include-hidden")
    assert sum(1 for i in page["items"] if i.get("hidden")) == 3


def test_history_run_id_prints_one_run(journaled: tuple[str, list[str]]) -> None:
    """`history --run-id` prints that run's messages only."""
    url, run_ids = journaled
    page = invoke_json("history", "t", "--store", url, "--run-id", run_ids[1])
    assert {i["run_id"] for i in page["items"]} == {run_ids[1]}
    assert [i["content"] for i in page["items"] if i["type"] == "human"] == ["question 1"]
    shown = invoke_cli("history", "t", "--store", url, "--run-id", run_ids[1])
    assert "question 1" in shown.stdout and "question 0" not in shown.stdout


def test_history_bad_run_id_is_a_one_line_error(journaled: tuple[str, list[str]]) -> None:
    """A malformed --run-id is a user error, not a traceback."""
    url, _ = journaled
    done = invoke_cli("history", "t", "--store", url, "--run-id", " x")
    assert done.returncode == 1 and "run_id" in done.stderr and "Traceback" not in done.stderr
