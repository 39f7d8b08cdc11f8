"""The PostgreSQL driver layer: run an operation on a connection, translate and retry errors.

:func:`drive` and :func:`adrive` run one I/O-free operation generator (:mod:`journal._postgres_ops`)
on a sync or async connection; :func:`translate` is the one place psycopg errors become
``journal.errors``; :func:`retryable` says which failures are safe to run again;
:func:`maybe_dead` spots an idle pooled connection the server closed without a round trip.
"""

from __future__ import annotations

import select
from contextlib import AsyncExitStack, ExitStack
from typing import TypeVar
from urllib.parse import urlsplit

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from psycopg_pool import PoolClosed, PoolTimeout

from journal._postgres_ops import BEGIN, Op, Row
from journal.errors import StoreClosedError, StoreCorruptError, StoreError, StoreUnavailableError

__all__ = [
    "adrive",
    "drive",
    "maybe_dead",
    "retryable",
    "translate",
    "where_of",
    "where_of_conninfo",
]

T = TypeVar("T")


def translate(error: Exception, where: str) -> StoreError:
    """The one place psycopg errors become ``journal.errors`` (never a password in text)."""
    if isinstance(error, PoolClosed):
        return StoreClosedError(f"{where}: the store was closed during the call")
    if isinstance(error, PoolTimeout | psycopg.OperationalError):
        if isinstance(error, psycopg.errors.QueryCanceled):
            return StoreUnavailableError(f"{where}: statement timed out ({error})")
        return StoreUnavailableError(f"{where}: cannot connect to PostgreSQL ({error})")
    if isinstance(
        error,
        psycopg.errors.UndefinedTable
        | psycopg.errors.UndefinedColumn
        | psycopg.errors.DuplicateTable
        | psycopg.errors.DuplicateFunction,
    ):
        return StoreCorruptError(f"{where}: not a runjournal schema ({error})")
    return StoreError(f"{where}: {type(error).__name__}: {error}")


def retryable(error: Exception) -> bool:
    """Whether running the operation again is safe and may succeed.

    A lost connection (server restart, killed backend), a deadlock or a serialization
    failure is: appends are idempotent and the other operations read, or delete a thread.
    A statement timeout and a pool timeout are not: retrying would multiply the wait.
    """
    if isinstance(error, psycopg.errors.QueryCanceled | PoolTimeout | PoolClosed):
        return False
    if isinstance(error, psycopg.OperationalError):
        return True
    return (
        isinstance(error, psycopg.errors.UniqueViolation)
        and error.diag.constraint_name == "runjournal_events_event_id"
    )


def where_of(url: str) -> str:
    """``host:port/db`` of ``url``, without credentials, for messages."""
    parts = urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError as e:  # the message must not echo the URL: it may hold a password
        raise ValueError(
            f"malformed PostgreSQL URL ({e}); expected postgresql://user:password@host:port/db"
        ) from None
    return f"postgresql://{parts.hostname or ''}:{port}{parts.path}"


def drive(conn: psycopg.Connection[Row], op: Op[T]) -> T:
    """Run ``op`` on ``conn``: execute each query it yields and send back the rows."""
    with ExitStack() as stack:
        query = next(op)
        if query is BEGIN:
            stack.enter_context(conn.transaction())
            query = next(op)
        while True:
            cursor = conn.cursor(row_factory=tuple_row)
            cursor.execute(*query)
            rows = cursor.fetchall() if cursor.description else []
            try:
                query = op.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result


async def adrive(conn: psycopg.AsyncConnection[Row], op: Op[T]) -> T:
    """Async :func:`drive`."""
    async with AsyncExitStack() as stack:
        query = next(op)
        if query is BEGIN:
            await stack.enter_async_context(conn.transaction())
            query = next(op)
        while True:
            acursor = conn.cursor(row_factory=tuple_row)
            await acursor.execute(*query)
            rows = await acursor.fetchall() if acursor.description else []
            try:
                query = op.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result


def maybe_dead(conn: psycopg.Connection[Row] | psycopg.AsyncConnection[Row]) -> bool:
    """Whether an idle pooled connection needs a round trip to prove it is alive.

    An idle connection has nothing to read unless the server sent something: typically the
    notice and end of file of a server shutting down or of a terminated backend.
    """
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


def identity_of_conninfo(conninfo: str) -> tuple[str, str]:
    """The database's name and what tells it apart (host, port, name and ``options``, where
    a ``search_path`` may choose another schema; never the password nor the role), of a URL
    or ``key=value`` conninfo: a store's :meth:`journal.store.RunEventStore._spool_identity`."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        params = {}
    name, options = params.get("dbname") or "postgresql", params.get("options") or ""
    return str(name), f"{where_of_conninfo(conninfo)} options={options}"


def where_of_conninfo(conninfo: str) -> str:
    """``host:port/db`` of a pool's conninfo (URL or ``key=value`` form), for messages."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "postgresql://(host pool)"
    host, port, db = params.get("host") or "", params.get("port") or 5432, params.get("dbname")
    return f"postgresql://{host}:{port}/{db or ''}"
