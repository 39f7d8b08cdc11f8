"""``open_store(url)``: the one place that maps a store URL to a backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from journal.store import RunEventStore

__all__ = ["DEFAULT_STORE_URL", "open_store"]

DEFAULT_STORE_URL = "sqlite:///runjournal.db"


def open_store(url: str, *, migrate: bool = True, **options: Any) -> RunEventStore:
    """Open the store a URL names; ``options`` go to the backend's constructor.

    * ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` — ``SqliteEventStore``;
    * ``memory://`` — a fresh ``MemoryEventStore``;
    * ``postgresql://user@host:port/db`` — ``PostgresEventStore`` (needs the ``postgres`` extra).

    ``migrate=False`` opens a PostgreSQL store without running migrations (no DDL, for a role
    that may not change the schema) and raises ``SchemaVersionError`` when its schema is
    missing or behind; migrate at deploy time with ``runjournal migrate --store URL``. A SQLite
    file has no roles: whoever opens it brings it up to date, and a memory store has no schema.

    Raises ``ValueError`` for a malformed or unknown URL.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("store URL must be a non-empty string such as sqlite:///runjournal.db")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ValueError(
            f"store URL {url!r} has no scheme; use sqlite:///path.db, memory:// or postgresql://..."
        )
    if scheme == "memory":
        if rest not in ("", "/"):
            raise ValueError(f"memory store URL takes no path: use memory://, not {url!r}")
        from journal.memory import MemoryEventStore

        return MemoryEventStore(**options)
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ValueError(
                f"SQLite store URL {url!r} needs a path: sqlite:///relative.db or "
                "sqlite:////absolute/path.db"
            )
        if "?" in rest:
            raise ValueError(
                f"SQLite store URL {url!r} has a query string; SQLite URLs take a path only: "
                "pass options as keyword arguments, e.g. open_store(url, synchronous='FULL')"
            )
        from journal.sqlite import SqliteEventStore

        return SqliteEventStore(Path(rest[1:]), **options)
    if scheme in ("postgresql", "postgres"):
        urlsplit(url)  # raises ValueError for a malformed netloc
        try:
            from journal.postgres import PostgresEventStore
        except ImportError as e:
            raise ValueError(
                "postgresql:// stores need the postgres extra: pip install 'runjournal[postgres]'"
                f" ({e})"
            ) from e
        return PostgresEventStore(url, migrate=migrate, **options)
    raise ValueError(
        f"store URL scheme {scheme!r} is not supported; use sqlite:///path.db, memory:// or "
        "postgresql://user@host:port/db"
    )
