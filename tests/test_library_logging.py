"""In a host app the library never prints; it logs on standard ``runjournal`` loggers."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.logs import capture_logs

ROOT = Path(__file__).resolve().parents[1]

# A plain host program: no logging configured, a SQLite store, a journaled create_agent run whose
# tracking middleware summarizes (the debug "summarization_dispatched" used to print on stdout).
HOST_PROGRAM = textwrap.dedent(
    """
    import sys
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from journal import RunJournal, open_store
    from middleware import TrackingSummarizationMiddleware
    from tests.fakes import ScriptedChatModel, ai, call

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    store = open_store("sqlite:///" + sys.argv[1])
    journal = RunJournal(store)
    summarizer = ScriptedChatModel(lambda messages: ai("SUMMARY"))
    middleware = TrackingSummarizationMiddleware(
        model=summarizer, trigger=("messages", 6), keep=("messages", 2)
    )
    model = ScriptedChatModel([ai("", call("add", a=i, b=i)) for i in range(3)] + [ai("done")])
    agent = create_agent(model, [add], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}, "callbacks": [journal]}
    agent.invoke({"messages": [HumanMessage("count")]}, config)
    assert journal.flush(10)
    journal.close()
    types = [e.event_type for e in store.read("t1")]
    assert "middleware:summarize" in types, types
    store.close()
    """
)


def test_a_journaled_run_with_tracking_middleware_prints_nothing(tmp_path: Path) -> None:
    """A host program journaling a summarizing create_agent run gets nothing on stdout or stderr."""
    done = subprocess.run(
        [sys.executable, "-c", HOST_PROGRAM, str(tmp_path / "host.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == ""


def test_library_logs_reach_the_hosts_stdlib_logging(caplog: pytest.LogCaptureFixture) -> None:
    """Records go to ``runjournal.*`` stdlib loggers, event name and fields on the record."""
    from journal._logging import get_logger

    log = get_logger("journal.example")
    with caplog.at_level(logging.DEBUG, logger="runjournal"):
        log.info("thing_happened", thread_id="t1", count=2)
    (record,) = [r for r in caplog.records if r.name == "runjournal.journal.example"]
    assert record.levelno == logging.INFO
    assert record.getMessage() == "thing_happened thread_id='t1' count=2"
    assert record.__dict__["event"] == "thing_happened"
    assert record.__dict__["fields"] == {"thread_id": "t1", "count": 2}


def test_library_adds_no_handler_and_ignores_structlogs_global_config() -> None:
    """Importing the packages adds no handler; structlog's global printer never sees our records."""
    code = textwrap.dedent(
        """
        import logging, structlog
        import journal, history, middleware
        from journal._logging import get_logger
        import journal.run_journal, journal.sqlite, history._replay, middleware.summarization
        assert not logging.getLogger("runjournal").handlers
        assert not logging.getLogger().handlers
        structlog.configure(processors=[structlog.processors.JSONRenderer()])
        get_logger("journal.x").warning("goes_to_stdlib_only", count=1)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # structlog's printer writes to stdout; stdlib's last resort stderr
    assert done.stderr.strip() == "goes_to_stdlib_only count=1"


def test_capture_logs_helper_sees_records_from_other_threads() -> None:
    """The test helper collects records logged on any thread while it is active."""
    import threading

    from journal._logging import get_logger

    log = get_logger("journal.example")
    with capture_logs() as logs:
        worker = threading.Thread(target=lambda: log.debug("from_worker", n=1))
        worker.start()
        worker.join()
    assert logs == [{"event": "from_worker", "log_level": "debug", "n": 1}]
