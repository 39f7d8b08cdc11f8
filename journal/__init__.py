"""runjournal's journal: the event model, the store contract and backends, and ``RunJournal``.

The names below load on first use (PEP 562): ``import journal.errors`` or opening a SQLite store
never loads LangChain or LangGraph, and ``PostgresEventStore`` loads psycopg only when asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
]

#: Where each public name lives (``PostgresEventStore`` is public but not in ``__all__``: psycopg
#: is the optional ``postgres`` extra, so ``from journal import *`` must not need it).
_HOMES: dict[str, str] = {
    "CATEGORIES": "journal.events",
    "DEFAULT_CONTENT_CAPS": "journal.truncation",
    "DEFAULT_STORE_URL": "journal.urls",
    "CopyConflictError": "journal.copy",
    "CopySummary": "journal.copy",
    "EventFilter": "journal.events",
    "JournalError": "journal.errors",
    "MemoryEventStore": "journal.memory",
    "NewEvent": "journal.events",
    "PostgresEventStore": "journal.postgres",
    "RunEvent": "journal.events",
    "RunEventStore": "journal.store",
    "RunJournal": "journal.run_journal",
    "RunSummary": "journal.events",
    "SchemaVersionError": "journal.errors",
    "SpoolReplay": "journal.spool",
    "SqliteEventStore": "journal.sqlite",
    "StoreClosedError": "journal.errors",
    "StoreCorruptError": "journal.errors",
    "StoreError": "journal.errors",
    "StoreUnavailableError": "journal.errors",
    "ThreadSummary": "journal.events",
    "ThreadUsage": "journal.events",
    "UsageTotals": "journal.events",
    "content_to_message": "journal.messages",
    "copy_store": "journal.copy",
    "dumps": "journal.encoding",
    "journal_thread_id": "journal.events",
    "loads": "journal.encoding",
    "message_to_content": "journal.messages",
    "open_store": "journal.urls",
    "recover_spool": "journal.spool",
    "replay_spool": "journal.spool",
    "to_jsonable": "journal.encoding",
}

if TYPE_CHECKING:
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
        ThreadUsage,
        UsageTotals,
        journal_thread_id,
    )
    from journal.memory import MemoryEventStore
    from journal.messages import content_to_message, message_to_content
    from journal.postgres import PostgresEventStore as PostgresEventStore
    from journal.run_journal import RunJournal
    from journal.spool import SpoolReplay, recover_spool, replay_spool
    from journal.sqlite import SqliteEventStore
    from journal.store import RunEventStore
    from journal.truncation import DEFAULT_CONTENT_CAPS
    from journal.urls import DEFAULT_STORE_URL, open_store


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'journal' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names next to what is already loaded."""
    return sorted({*globals(), *_HOMES})
