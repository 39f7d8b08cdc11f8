"""Deploy-time pieces of the PostgreSQL backend: the schema check and a host pool's sessions.

* :func:`check_schema_op` is what ``PostgresEventStore(..., migrate=False)`` runs instead of the
  migrations: reads only, so a role without DDL rights can open a migrated database, and a
  schema that is missing or behind fails at once with the command that fixes it.
* :data:`SET_LOCAL_SESSION` sets, for one transaction only, what our own pools set per
  connection (UTC timestamps, the statement timeout): a pool the host application passes in is
  used without changing its connections' session state.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from journal import _postgres_schema as sql
from journal._postgres_driver import where_of
from journal._postgres_ops import Op
from journal.errors import SchemaVersionError, StoreCorruptError

__all__ = ["SET_LOCAL_SESSION", "check_schema_op", "own_connection_kwargs"]

SET_LOCAL_SESSION: Final = (
    "SELECT set_config('TimeZone', 'UTC', true), set_config('statement_timeout', %s, true)"
)

_MIGRATE_HINT: Final = (
    "run `runjournal migrate --store URL` (or PostgresEventStore(...).setup()) as the schema "
    "owner, or open it with migrate=True"
)


def check_schema_op() -> Op[int]:
    """Check that the schema is exactly this library's version (no DDL); return it."""
    [(has_table,)] = yield sql.HAS_VERSION_TABLE, None
    if not has_table:
        [(has_events,)] = yield "SELECT to_regclass('runjournal_events') IS NOT NULL", None
        if has_events:
            raise StoreCorruptError("a runjournal_events table without a schema version")
        raise SchemaVersionError(f"the database has no runjournal schema yet: {_MIGRATE_HINT}")
    [(version,)] = yield sql.SELECT_VERSION, None
    if version > sql.SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has runjournal schema version {version}; this runjournal knows "
            f"up to {sql.SCHEMA_VERSION}: upgrade runjournal"
        )
    if version < sql.SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has runjournal schema version {version}, behind this runjournal's "
            f"{sql.SCHEMA_VERSION}: {_MIGRATE_HINT}"
        )
    return int(version)


def own_connection_kwargs(
    url: object, connect_timeout: float, statement_ms: str
) -> tuple[str, dict[str, Any]]:
    """For the store's own pools: ``url``'s place for messages, and the connection settings.

    The URL's own ``options`` (e.g. ``-c search_path=...``) are kept, ours come after. Raises
    ``ValueError`` for anything but a well-formed ``postgresql://`` URL, without echoing it
    (it may hold a password).
    """
    if not isinstance(url, str) or urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise ValueError(
            "PostgresEventStore needs a postgresql://user:password@host:port/db URL "
            "(or pool=, the application's psycopg ConnectionPool)"
        )
    where = where_of(url)
    try:
        url_options = str(conninfo_to_dict(url).get("options") or "")
    except psycopg.Error as e:  # its message names the parameter, never the password
        raise ValueError(
            f"malformed PostgreSQL URL ({e}); expected postgresql://user:password@host:port/db"
        ) from None
    own_options = f"-c statement_timeout={statement_ms} -c TimeZone=UTC"
    return where, {
        "autocommit": True,
        "connect_timeout": max(1, round(connect_timeout)),
        "options": f"{url_options} {own_options}".strip(),
        "application_name": "runjournal",
    }
