"""``PostgresEventStore``: the store contract on PostgreSQL, shared by processes and machines.

Guarantees beyond the contract in :mod:`journal.store`:

* **Across machines.** The per-thread seq comes from a head row bumped and locked inside the
  write transaction (``INSERT … ON CONFLICT … DO UPDATE … RETURNING``, never ``max(seq)``),
  so any number of writers on any number of hosts get gap-free seqs; a batch that fails or
  whose writer dies is rolled back whole, head bump included.
* **Idempotent under races.** An append first tries the batch optimistically (one statement
  per thread: bump the head, insert the rows); if an ``event_id`` is already stored, the
  unique index rejects it whole (no seq taken) and the append is retried in a transaction
  that looks stored ids up first and returns their original records. Two writers racing
  with the same new ``event_id`` end the same way: the loser retries and gets the winner's
  record. Deadlocks, serialization failures and lost connections are retried too (up to 5
  attempts).
* **Survives a server restart.** A pooled connection the server closed (a restart, a killed
  backend) is noticed before it is handed out, without a round trip for a healthy one, and
  every dead idle connection is then replaced at once, so the first operation after a restart
  succeeds.
* **History no role rewrites.** Only whole threads are deleted, through a ``SECURITY
  DEFINER`` function; single events and thread heads are protected by triggers against any
  role (see :mod:`journal._postgres_schema`).
* **Fails fast.** ``connect_timeout`` bounds connecting and waiting for a pooled connection,
  ``statement_timeout`` any one statement; a down server raises ``StoreUnavailableError``
  (with the driver's reason, e.g. refused or unknown database) instead of hanging. psycopg
  errors never leak: they are translated in :func:`_translate`.
* **Native async.** ``aappend``/``aread`` run on psycopg's ``AsyncConnectionPool``, kept on a
  private event loop thread (:mod:`journal._driver_loop`) so that callers on any loop, or
  on several loops one after the other, share it and ``asyncio.run`` never inherits its
  background tasks; the other async methods run the sync ones in a worker thread. Sync
  methods use a ``ConnectionPool``. Both drivers run the same operation generators, so the
  SQL and the row mapping exist once. ``close`` gives async calls already running a few
  seconds to finish, then cancels them: they raise ``StoreClosedError``, none waits forever.
* **Exact round trip.** ``content``/``metadata`` are stored as canonical JSON text in
  ``json`` columns (see :mod:`journal._postgres_schema` for why not ``jsonb``).

The schema is created and upgraded on open by versioned migrations (see
:mod:`journal._postgres_schema`) under an advisory lock, so concurrent first opens are safe.
"""

from __future__ import annotations

import asyncio
import select
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack
from functools import partial
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout

from journal._driver_loop import DriverLoop, DriverLoopStopped
from journal._logging import get_logger
from journal._postgres_ops import (
    BEGIN,
    Op,
    Row,
    append_attempts,
    count_op,
    delete_thread_op,
    last_seq_op,
    list_runs_op,
    list_threads_op,
    migrate_op,
    read_op,
)
from journal.errors import (
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
)
from journal.events import EventFilter, NewEvent, RunEvent, RunSummary, ThreadSummary
from journal.store import RunEventStore
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["PostgresEventStore"]

log = get_logger(__name__)

T = TypeVar("T")

_MAX_ATTEMPTS: Final = 5
#: Seconds ``close`` lets async calls already running finish before cancelling them.
_CLOSE_GRACE: Final = 5.0


def _translate(error: Exception, where: str) -> StoreError:
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


def _retryable(error: Exception) -> bool:
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


def _where(url: str) -> str:
    """``host:port/db`` of ``url``, without credentials, for messages."""
    parts = urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError as e:  # the message must not echo the URL: it may hold a password
        raise ValueError(
            f"malformed PostgreSQL URL ({e}); expected postgresql://user:password@host:port/db"
        ) from None
    return f"postgresql://{parts.hostname or ''}:{port}{parts.path}"


def _drive(conn: psycopg.Connection[Row], op: Op[T]) -> T:
    """Run ``op`` on ``conn``: execute each query it yields and send back the rows."""
    with ExitStack() as stack:
        query = next(op)
        if query is BEGIN:
            stack.enter_context(conn.transaction())
            query = next(op)
        while True:
            cursor = conn.execute(*query)
            rows = cursor.fetchall() if cursor.description else []
            try:
                query = op.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result


async def _adrive(conn: psycopg.AsyncConnection[Row], op: Op[T]) -> T:
    """Async :func:`_drive`."""
    async with AsyncExitStack() as stack:
        query = next(op)
        if query is BEGIN:
            await stack.enter_async_context(conn.transaction())
            query = next(op)
        while True:
            cursor = await conn.execute(*query)
            rows = await cursor.fetchall() if cursor.description else []
            try:
                query = op.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result


def _maybe_dead(conn: psycopg.Connection[Row] | psycopg.AsyncConnection[Row]) -> bool:
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


# -- the store -----------------------------------------------------------------------------


class PostgresEventStore(RunEventStore):
    """A ``RunEventStore`` on PostgreSQL (psycopg 3 with connection pools).

    ``url`` is a libpq URL (``postgresql://user:password@host:port/db``; its query parameters,
    ``options`` included, are kept). ``connect_timeout``
    (seconds) bounds getting a connection, ``statement_timeout`` (seconds) any one statement;
    ``min_size``/``max_size`` size each pool. Opening creates or upgrades the schema and raises
    ``StoreUnavailableError`` when the server cannot be reached, ``SchemaVersionError`` when
    the schema is newer than this library. Connections are not shared across ``fork``: open
    the store in each process (after a pre-forking server forks its workers).
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 5.0,
        statement_timeout: float = 30.0,
        min_size: int = 1,
        max_size: int = 8,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        super().__init__(content_caps=content_caps, metadata_cap=metadata_cap)
        if not isinstance(url, str) or urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise ValueError(
                "PostgresEventStore needs a postgresql://user:password@host:port/db URL"
            )
        for name, value in (("connect_timeout", connect_timeout),
                            ("statement_timeout", statement_timeout)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError("pool sizes need 0 <= min_size <= max_size and max_size >= 1")
        self._url = url  # may hold a password: never logged, only _where is
        self._where = _where(url)
        try:  # the URL's own options (e.g. -c search_path=...) are kept, ours come after
            url_options = str(conninfo_to_dict(url).get("options") or "")
        except psycopg.Error as e:  # its message names the parameter, never the password
            raise ValueError(
                f"malformed PostgreSQL URL ({e}); expected postgresql://user:password@host:port/db"
            ) from None
        self._timeout = float(connect_timeout)
        self._sizes = (min_size, max_size)
        own_options = f"-c statement_timeout={int(statement_timeout * 1000)} -c TimeZone=UTC"
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(connect_timeout)),
            "options": f"{url_options} {own_options}".strip(),
            "application_name": "runjournal",
        }
        # check: a pooled connection a server restart killed is replaced before use, so
        # the first operation after a restart does not fail
        self._pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            url, kwargs=self._kwargs, min_size=min_size, max_size=max_size,
            timeout=self._timeout, open=False, name="runjournal", check=self._check_pooled,
        )  # fmt: skip
        self._driver: DriverLoop | None = None  # async pool's home, made on first async use
        self._apool: AsyncConnectionPool[psycopg.AsyncConnection[Row]] | None = None
        self._driver_lock = threading.Lock()
        try:  # a direct connection first: its error says why (refused, no such database…)
            with psycopg.connect(url, **self._kwargs) as conn:
                applied = _drive(conn, migrate_op())
        except psycopg.Error as e:
            raise _translate(e, self._where) from e
        self._pool.open(wait=False)
        log.info("postgres_store_opened", where=self._where, migrations_applied=applied)

    # -- pooled connections: dead ones never reach an operation -----------------------------

    def _check_pooled(self, conn: psycopg.Connection[Row]) -> None:
        """Before use: if ``conn`` may be dead, replace every dead idle one, then fail it.

        A server restart (or a killed backend) makes the server close the connection, which
        leaves it readable; an idle connection with nothing to read is handed out without a
        round trip. psycopg_pool retries a failed check with a growing delay (1 s, 2 s…), so
        discarding dead connections one by one would outlast ``connect_timeout``: checking
        the whole pool on the first failure makes the next attempt get a new connection.
        """
        if not _maybe_dead(conn):
            return
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            log.info("postgres_dead_connection_replaced", where=self._where)
            self._pool.check()
            raise

    async def _acheck_pooled(self, conn: psycopg.AsyncConnection[Row]) -> None:
        """Async :meth:`_check_pooled`."""
        if not _maybe_dead(conn):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except psycopg.Error:
            log.info("postgres_dead_connection_replaced", where=self._where)
            if self._apool is not None:
                await self._apool.check()
            raise

    # -- drivers: pool, transaction and retry around an operation ----------------------------

    def _run(self, make_op: Callable[[], Op[T]]) -> T:
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                with self._pool.connection() as conn:
                    return _drive(conn, make_op())
            except (psycopg.Error, PoolTimeout) as e:
                self._give_up_unless_retryable(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _arun(self, make_op: Callable[[], Op[T]]) -> T:
        driver, pool = self._async_driver()
        try:
            return await driver.run(self._arun_on_driver(pool, make_op))
        except DriverLoopStopped:
            raise StoreClosedError(f"{self._where}: the store was closed during the call") from None

    async def _arun_on_driver(
        self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]], make_op: Callable[[], Op[T]]
    ) -> T:
        try:
            await pool.open(wait=False)
            for attempt in range(1, _MAX_ATTEMPTS + 1):
                try:
                    async with pool.connection() as conn:
                        return await _adrive(conn, make_op())
                except (psycopg.Error, PoolTimeout) as e:
                    self._give_up_unless_retryable(e, attempt)
        except asyncio.CancelledError:
            if self._closed:  # close() cancelled the call after its grace period
                raise StoreClosedError(
                    f"{self._where}: the store was closed during the call"
                ) from None
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _give_up_unless_retryable(self, error: Exception, attempt: int) -> None:
        if not (_retryable(error) and attempt < _MAX_ATTEMPTS):
            raise _translate(error, self._where) from error
        log.info("postgres_transaction_retry", attempt=attempt, error=type(error).__name__)

    def _async_driver(
        self,
    ) -> tuple[DriverLoop, AsyncConnectionPool[psycopg.AsyncConnection[Row]]]:
        with self._driver_lock:
            self._check_open()
            if self._driver is None:
                self._driver = DriverLoop("runjournal-postgres-async")
                self._apool = AsyncConnectionPool(
                    self._url, kwargs=self._kwargs, min_size=self._sizes[0],
                    max_size=self._sizes[1], timeout=self._timeout, open=False,
                    name="runjournal-async", check=self._acheck_pooled,
                )  # fmt: skip
            assert self._apool is not None
            return self._driver, self._apool

    # -- sync hooks ---------------------------------------------------------------------------

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return self._run(append_attempts(events))

    def _read(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        return self._run(partial(read_op, thread_id, after_seq, before_seq, limit, flt))

    def _last_seq(self, thread_id: str) -> int:
        return self._run(partial(last_seq_op, thread_id))

    def _count(self, thread_id: str, flt: EventFilter) -> int:
        return self._run(partial(count_op, thread_id, flt))

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        return self._run(partial(list_threads_op, limit, offset))

    def _list_runs(self, thread_id: str) -> list[RunSummary]:
        return self._run(partial(list_runs_op, thread_id))

    def _delete_thread(self, thread_id: str) -> int:
        count = self._run(partial(delete_thread_op, thread_id))
        log.info("thread_deleted", thread_id=thread_id, count=count)
        return count

    # -- async hooks (native driver) -----------------------------------------------------------

    async def _aappend(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return await self._arun(append_attempts(events))

    async def _aread(
        self,
        thread_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int | None,
        flt: EventFilter,
    ) -> list[RunEvent]:
        return await self._arun(partial(read_op, thread_id, after_seq, before_seq, limit, flt))

    # -- closing -------------------------------------------------------------------------------

    def _close(self) -> None:
        self._pool.close()
        with self._driver_lock:
            driver, pool, self._driver, self._apool = self._driver, self._apool, None, None
        if driver is not None and pool is not None:
            driver.call(pool.close(), timeout=15)  # new calls fail; running ones keep their conn
            driver.stop(grace=_CLOSE_GRACE)
        log.info("postgres_store_closed", where=self._where)
