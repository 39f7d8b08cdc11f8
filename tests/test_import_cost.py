"""Imports stay cheap: each entry point loads only the stacks it uses (checked in a new process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT_STACK = ("langgraph", "langchain_core", "langchain")
HTTP_STACK = ("fastapi", "starlette", "uvicorn")


def loaded_after(code: str) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    program = textwrap.dedent(code) + "\nimport sys\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return {name.split(".")[0] for name in done.stdout.split()}


def test_errors_and_package_root_do_not_load_the_agent_stack() -> None:
    """``import journal.errors`` and ``import journal`` load neither LangGraph nor LangChain."""
    loaded = loaded_after("import journal.errors\nimport journal\nimport middleware")
    assert not loaded & {*AGENT_STACK, *HTTP_STACK, "psycopg"}


def test_opening_and_reading_a_store_does_not_load_the_agent_stack(tmp_path: Path) -> None:
    """Opening a SQLite store, appending and reading through the contract never loads LangChain."""
    loaded = loaded_after(
        f"""
        from journal import NewEvent, open_store
        store = open_store("sqlite:///{tmp_path / "s.db"}")
        store.append([NewEvent(thread_id="t", run_id="r", category="lifecycle",
                               event_type="run.start", content={{}}, metadata={{}})])
        assert [e.seq for e in store.read("t")] == [1]
        assert [t.thread_id for t in store.list_threads()] == ["t"]
        store.close()
        """
    )
    assert not loaded & {*AGENT_STACK, *HTTP_STACK}


def test_pure_readers_import_neither_fastapi_nor_click() -> None:
    """``import history`` (timeline, replay, verify) loads no HTTP stack, no click, no LangChain."""
    loaded = loaded_after("import history\nfrom history import build_timeline, replay, verify")
    assert not loaded & {*HTTP_STACK, "click", *AGENT_STACK}


def test_create_app_stays_a_lazy_public_name() -> None:
    """``history.create_app`` still resolves, and loading it is what brings in FastAPI."""
    loaded = loaded_after(
        "import history\nassert callable(history.create_app)\n"
        "from history import create_app\nassert create_app is history.create_app"
    )
    assert "fastapi" in loaded


def test_replay_and_verify_stay_functions_after_their_modules_load() -> None:
    """``history.replay``/``history.verify`` are the functions even once their modules load."""
    loaded_after(
        """
        import history._replay, history._verify, history
        from history import replay, verify
        assert callable(replay) and callable(verify), (replay, verify)
        """
    )


def test_reading_commands_load_no_http_or_agent_stack(tmp_path: Path) -> None:
    """``runjournal threads`` and ``runjournal history T`` load neither FastAPI nor LangChain."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for argv in (["threads"], ["history", "t"]):
        loaded = loaded_after(
            f"""
            from journal import NewEvent, open_store
            store = open_store({url!r})
            store.append([NewEvent(thread_id="t", run_id="r", category="lifecycle",
                                   event_type="run.start", content={{}}, metadata={{}})])
            store.close()
            import sys
            from history.cli.main import main
            sys.argv = ["runjournal", *{argv!r}, "--store", {url!r}]
            try:
                main()
            except SystemExit as e:
                assert not e.code, e.code
            """
        )
        assert not loaded & {*HTTP_STACK, *AGENT_STACK}, argv
