"""The public names: what ARCHITECTURE.md promises is importable, and nothing drifts unnoticed."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

PUBLIC = {
    "journal": [
        "CATEGORIES",
        "DEFAULT_CONTENT_CAPS",
        "DEFAULT_STORE_URL",
        "CopyConflictError",
        "CopySummary",
        "EventFilter",
        "JournalError",
        "MemoryEventStore",
        "NewEvent",
        "RunEvent",
        "RunEventStore",
        "RunJournal",
        "RunSummary",
        "SchemaVersionError",
        "SpoolReplay",
        "SqliteEventStore",
        "StoreClosedError",
        "StoreCorruptError",
        "StoreError",
        "StoreUnavailableError",
        "ThreadSummary",
        "ThreadUsage",
        "UsageTotals",
        "content_to_message",
        "copy_store",
        "dumps",
        "journal_thread_id",
        "loads",
        "message_to_content",
        "open_store",
        "recover_spool",
        "replay_spool",
        "to_jsonable",
    ],
    "history": [
        "ReplayView",
        "RunsPage",
        "ThreadNotFoundError",
        "TimelineItem",
        "TimelinePage",
        "UsageReport",
        "VerifyReport",
        "abuild_timeline",
        "areplay",
        "arestore_thread",
        "aruns_page",
        "athread_usage",
        "averify",
        "build_timeline",
        "create_app",
        "replay",
        "restore_thread",
        "runs_page",
        "thread_usage",
        "verify",
    ],
    "middleware": ["SUMMARIZATION_EVENT", "TrackingSummarizationMiddleware"],
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_public_names_are_locked_and_importable(package: str) -> None:
    """Each package's __all__ is exactly the locked list and every name resolves."""
    module = importlib.import_module(package)
    assert module.__all__ == PUBLIC[package]
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_public_callables_have_docstrings() -> None:
    """Every public class and function documents what it guarantees."""
    for package, names in PUBLIC.items():
        module = importlib.import_module(package)
        for name in names:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{package}.{name} has no docstring"


def test_architecture_signatures_hold() -> None:
    """The signatures ARCHITECTURE.md fixes keep their parameters and defaults."""
    from history import build_timeline, create_app, replay

    timeline = inspect.signature(build_timeline).parameters
    assert list(timeline)[:2] == ["store", "thread_id"]
    assert timeline["before_seq"].default is None and timeline["limit"].default == 50
    assert timeline["include_markers"].default is True
    assert timeline["limit"].kind is inspect.Parameter.KEYWORD_ONLY
    assert set(inspect.signature(replay).parameters) >= {"store", "thread_id", "upto_seq", "view"}
    assert next(iter(inspect.signature(create_app).parameters)) == "store"


def test_postgres_backend_loads_lazily() -> None:
    """``import journal`` does not import psycopg; ``journal.PostgresEventStore`` still resolves."""
    code = (
        "import sys, journal; assert 'psycopg' not in sys.modules; "
        "assert journal.PostgresEventStore.__name__ == 'PostgresEventStore'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
