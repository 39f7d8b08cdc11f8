"""runjournal's journal: the event model, the store contract and backends, and ``RunJournal``."""

from typing import TYPE_CHECKING

from journal.copy import CopyConflictError, CopySummary, copy_store
from journal.encoding import dumps, loads, to_jsonable
from journal.errors import (
    JournalError,
    SchemaVersionError,
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
)
from journal.events import (
    CATEGORIES,
    EventFilter,
    NewEvent,
    RunEvent,
    RunSummary,
    ThreadSummary,
    journal_thread_id,
)
from journal.memory import MemoryEventStore
from journal.messages import content_to_message, message_to_content
from journal.run_journal import RunJournal
from journal.spool import SpoolReplay, recover_spool, replay_spool
from journal.sqlite import SqliteEventStore
from journal.store import RunEventStore
from journal.truncation import DEFAULT_CONTENT_CAPS
from journal.urls import DEFAULT_STORE_URL, open_store

__all__ = [
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
]

if TYPE_CHECKING:  # at run time __getattr__ imports it on first use
    from journal.postgres import PostgresEventStore as PostgresEventStore


def __getattr__(name: str) -> object:
    """``PostgresEventStore`` loads on first use: psycopg is the optional ``postgres`` extra."""
    if name == "PostgresEventStore":
        from journal.postgres import PostgresEventStore

        return PostgresEventStore
    raise AttributeError(f"module 'journal' has no attribute {name!r}")
