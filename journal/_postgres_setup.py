"""Deploy-time pieces of the PostgreSQL backend: the schema check and a host pool's sessions.

* :func:`check_schema_op` is what ``PostgresEventStore(..., migrate=False)`` runs instead of the
  migrations: reads only, so a role without DDL rights can open a migrated database, and a
  schema that is missing or behind fails at once with the command that fixes it.
* :data:`SET_LOCAL_SESSION` sets, for one transaction only, what our own pools set per
  connection (UTC timestamps, the statement timeout): a pool the host application passes in is
  used without changing its connections' session state.
"""

from __future__ import annotations

from typing import Final

from journal import _postgres_schema as sql
from journal._postgres_ops import Op
from journal.errors import SchemaVersionError, StoreCorruptError

__all__ = ["SET_LOCAL_SESSION", "check_schema_op"]

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
