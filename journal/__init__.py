"""runjournal's journal: the event model, the store contract and backends, and ``RunJournal``."""

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
)
from journal.memory import MemoryEventStore
from journal.messages import content_to_message, message_to_content
from journal.store import RunEventStore
from journal.truncation import DEFAULT_CONTENT_CAPS
from journal.urls import DEFAULT_STORE_URL, open_store

__all__ = [
    "CATEGORIES",
    "DEFAULT_CONTENT_CAPS",
    "DEFAULT_STORE_URL",
    "EventFilter",
    "JournalError",
    "MemoryEventStore",
    "NewEvent",
    "RunEvent",
    "RunEventStore",
    "RunSummary",
    "SchemaVersionError",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreError",
    "StoreUnavailableError",
    "ThreadSummary",
    "content_to_message",
    "dumps",
    "loads",
    "message_to_content",
    "open_store",
    "to_jsonable",
]
