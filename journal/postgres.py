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
:mod:`journal._postgres_schema`) under an advisory lock, so concurrent first opens are safe; or,
with ``migrate=False``, only checked (no DDL), for an application role that may not change it,
while ``setup()`` / ``runjournal migrate`` runs the migrations at deploy time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any, Final, TypeVar

import psycopg
import psycopg.errors
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from journal._driver_loop import DriverLoop, DriverLoopStopped
from journal._logging import get_logger
from journal._postgres_driver import (
    adrive,
    drive,
    maybe_dead,
    retryable,
    translate,
    where_of_conninfo,
)
from journal._postgres_ops import (
    Op,
    append_attempts,
    count_op,
    delete_thread_op,
    last_seq_op,
    list_runs_op,
    list_threads_op,
    migrate_op,
    read_op,
)
from journal._postgres_setup import SET_LOCAL_SESSION, check_schema_op, own_connection_kwargs
from journal.errors import StoreClosedError
from journal.events import EventFilter, NewEvent, RunEvent, RunSummary, ThreadSummary
from journal.store import RunEventStore
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["PostgresEventStore"]

log = get_logger(__name__)

T = TypeVar("T")

_MAX_ATTEMPTS: Final = 5
#: Seconds ``close`` lets async calls already running finish before cancelling them.
_CLOSE_GRACE: Final = 5.0


def _checked(check: Op[int]) -> Op[int]:
    """The schema check ``check`` as an open step that applied no migrations."""
    yield from check
    return 0


# -- the store -----------------------------------------------------------------------------


class PostgresEventStore(RunEventStore):
    """A ``RunEventStore`` on PostgreSQL (psycopg 3 with connection pools).

    ``url`` is a libpq URL (``postgresql://user:password@host:port/db``; its query parameters,
    ``options`` included, are kept): the store builds its own pools, sized by
    ``min_size``/``max_size``. Or pass the application's own ``pool=``
    (``psycopg_pool.ConnectionPool``) and optionally ``apool=`` (an ``AsyncConnectionPool``
    opened on the loop that calls the async methods; without it they run the sync ones in a
    worker thread): the store borrows their connections, sets UTC and its statement timeout
    per transaction only (``SET LOCAL``), replaces dead connections as in its own pools, and
    never closes them. ``connect_timeout`` (seconds) bounds getting a connection,
    ``statement_timeout`` (seconds) any one statement.

    Opening creates or upgrades the schema (``migrate=True``, the default); with
    ``migrate=False`` it only checks it (no DDL) and raises ``SchemaVersionError`` if it is
    missing or behind: migrate at deploy time with :meth:`setup` or ``runjournal migrate
    --store URL`` as the schema's owner, and open with ``migrate=False`` as a role that may
    only append, read and delete threads (README: least privilege). Raises
    ``StoreUnavailableError`` when the server cannot be reached, ``SchemaVersionError`` when
    the schema is newer than this library. Connections are not shared across ``fork``: open
    the store in each process (after a pre-forking server forks its workers).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        apool: AsyncConnectionPool[Any] | None = None,
        migrate: bool = True,
        connect_timeout: float = 5.0,
        statement_timeout: float = 30.0,
        min_size: int = 1,
        max_size: int = 8,
        content_caps: Mapping[str, int] | None = None,
        metadata_cap: int = DEFAULT_METADATA_CAP,
    ) -> None:
        super().__init__(content_caps=content_caps, metadata_cap=metadata_cap)
        for name, value in (("connect_timeout", connect_timeout),
                            ("statement_timeout", statement_timeout)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
        self._timeout = float(connect_timeout)
        self._statement_ms = str(int(statement_timeout * 1000))
        self._driver: DriverLoop | None = None  # async pool's home, made on first async use
        self._apool: AsyncConnectionPool[Any] | None = None
        self._driver_lock = threading.Lock()
        self._host_pool = pool is not None
        if pool is not None:
            applied = self._open_host_pools(url, pool, apool, migrate)
        else:
            if apool is not None:
                raise ValueError("apool= needs pool= too: pass the application's pools, or a URL")
            applied = self._open_own_pool(url, min_size, max_size, migrate)
        #: How many migrations opening this store applied (0 with ``migrate=False``).
        self.migrations_applied = applied
        log.info("postgres_store_opened", where=self._where, migrations_applied=applied)

    def _open_own_pool(self, url: str | None, min_size: int, max_size: int, migrate: bool) -> int:
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError("pool sizes need 0 <= min_size <= max_size and max_size >= 1")
        self._where, self._kwargs = own_connection_kwargs(url, self._timeout, self._statement_ms)
        assert isinstance(url, str)
        self._url: str | None = url  # may hold a password: never logged, only _where is
        self._sizes = (min_size, max_size)
        # check: a pooled connection a server restart killed is replaced before use, so
        # the first operation after a restart does not fail
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url, kwargs=self._kwargs, min_size=min_size, max_size=max_size,
            timeout=self._timeout, open=False, name="runjournal", check=self._check_pooled,
        )  # fmt: skip
        try:  # a direct connection first: its error says why (refused, no such database…)
            with psycopg.connect(url, **self._kwargs) as conn:
                applied = drive(conn, migrate_op() if migrate else _checked(check_schema_op()))
        except psycopg.Error as e:
            raise translate(e, self._where) from e
        self._pool.open(wait=False)
        return applied

    def _open_host_pools(
        self,
        url: str | None,
        pool: ConnectionPool[Any],
        apool: AsyncConnectionPool[Any] | None,
        migrate: bool,
    ) -> int:
        if url is not None:
            raise ValueError("pass a URL or pool=, not both")
        if not isinstance(pool, ConnectionPool):
            raise TypeError(f"pool= must be a psycopg_pool.ConnectionPool, got {type(pool)!r}")
        if apool is not None and not isinstance(apool, AsyncConnectionPool):
            raise TypeError(
                f"apool= must be a psycopg_pool.AsyncConnectionPool, got {type(apool)!r}"
            )
        self._url = None
        self._where = where_of_conninfo(pool.conninfo if isinstance(pool.conninfo, str) else "")
        self._pool = pool
        self._apool = apool
        return self._run(migrate_op if migrate else lambda: _checked(check_schema_op()))

    def setup(self) -> int:
        """Create or upgrade the schema to this library's version; return migrations applied.

        The deploy-time step (``runjournal migrate --store URL`` runs it): call it as the
        role that owns the schema; app servers then open the store with ``migrate=False``.
        Safe to run again and from several processes at once (an advisory lock serialises).
        """
        self._check_open()
        applied = self._run(migrate_op)
        log.info("postgres_schema_migrated", where=self._where, migrations_applied=applied)
        return applied

    # -- pooled connections: dead ones never reach an operation -----------------------------

    def _check_pooled(self, conn: psycopg.Connection[Any]) -> None:
        """Before use: if ``conn`` may be dead, replace every dead idle one, then fail it.

        A server restart (or a killed backend) makes the server close the connection, which
        leaves it readable; an idle connection with nothing to read is handed out without a
        round trip. psycopg_pool retries a failed check with a growing delay (1 s, 2 s…), so
        discarding dead connections one by one would outlast ``connect_timeout``: checking
        the whole pool on the first failure makes the next attempt get a new connection.
        """
        if not self._alive(conn):
            raise psycopg.OperationalError("the server closed the connection")

    def _alive(self, conn: psycopg.Connection[Any]) -> bool:
        if not maybe_dead(conn):
            return True
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            log.info("postgres_dead_connection_replaced", where=self._where)
            self._pool.check()
            return False
        return True

    async def _acheck_pooled(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Async :meth:`_check_pooled`."""
        if not await self._aalive(conn):
            raise psycopg.OperationalError("the server closed the connection")

    async def _aalive(self, conn: psycopg.AsyncConnection[Any]) -> bool:
        if not maybe_dead(conn):
            return True
        try:
            await AsyncConnectionPool.check_connection(conn)
        except psycopg.Error:
            log.info("postgres_dead_connection_replaced", where=self._where)
            if self._apool is not None:
                await self._apool.check()
            return False
        return True

    # -- drivers: pool, transaction and retry around an operation ----------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A live pooled connection; a host pool's runs the operation in a transaction of ours.

        Our own pools check connections as they hand them out; a host pool may check
        differently or not at all, so its connections are checked here the same way, and a
        dead one is swapped for a live one before the operation starts (not retried after).
        """
        if not self._host_pool:
            with self._pool.connection() as conn:
                yield conn
            return
        for _ in range(self._pool.max_size + 1):
            with self._pool.connection() as conn:
                if not self._alive(conn):
                    continue  # a broken connection goes back to be discarded
                with conn.transaction():
                    conn.execute(SET_LOCAL_SESSION, (self._statement_ms,))
                    yield conn
                return
        raise psycopg.OperationalError("no live connection in the pool")

    @asynccontextmanager
    async def _aconnection(
        self, pool: AsyncConnectionPool[Any]
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """Async :meth:`_connection`."""
        if not self._host_pool:
            async with pool.connection() as conn:
                yield conn
            return
        for _ in range(pool.max_size + 1):
            async with pool.connection() as conn:
                if not await self._aalive(conn):
                    continue
                async with conn.transaction():
                    await conn.execute(SET_LOCAL_SESSION, (self._statement_ms,))
                    yield conn
                return
        raise psycopg.OperationalError("no live connection in the pool")

    def _run(self, make_op: Callable[[], Op[T]]) -> T:
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                with self._connection() as conn:
                    return drive(conn, make_op())
            except (psycopg.Error, PoolTimeout) as e:
                self._give_up_unless_retryable(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _arun(self, make_op: Callable[[], Op[T]]) -> T:
        if self._host_pool:  # on the caller's loop: the host's async pool lives there
            if self._apool is None:
                return await self._in_thread(self._run, make_op)
            return await self._arun_on_pool(self._apool, make_op)
        driver, pool = self._async_driver()
        try:
            return await driver.run(self._arun_on_driver(pool, make_op))
        except DriverLoopStopped:
            raise StoreClosedError(f"{self._where}: the store was closed during the call") from None

    async def _arun_on_driver(
        self, pool: AsyncConnectionPool[Any], make_op: Callable[[], Op[T]]
    ) -> T:
        try:
            await pool.open(wait=False)
            return await self._arun_on_pool(pool, make_op)
        except asyncio.CancelledError:
            if self._closed:  # close() cancelled the call after its grace period
                raise StoreClosedError(
                    f"{self._where}: the store was closed during the call"
                ) from None
            raise

    async def _arun_on_pool(
        self, pool: AsyncConnectionPool[Any], make_op: Callable[[], Op[T]]
    ) -> T:
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                async with self._aconnection(pool) as conn:
                    return await adrive(conn, make_op())
            except (psycopg.Error, PoolTimeout) as e:
                self._give_up_unless_retryable(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _give_up_unless_retryable(self, error: Exception, attempt: int) -> None:
        if not (retryable(error) and attempt < _MAX_ATTEMPTS):
            raise translate(error, self._where) from error
        log.info("postgres_transaction_retry", attempt=attempt, error=type(error).__name__)

    def _async_driver(
        self,
    ) -> tuple[DriverLoop, AsyncConnectionPool[Any]]:
        with self._driver_lock:
            self._check_open()
            if self._driver is None:
                assert self._url is not None  # only stores with their own pools get here
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
        if self._host_pool:  # the application's pools: theirs to close
            log.info("postgres_store_closed", where=self._where)
            return
        self._pool.close()
        with self._driver_lock:
            driver, pool, self._driver, self._apool = self._driver, self._apool, None, None
        if driver is not None and pool is not None:
            driver.call(pool.close(), timeout=15)  # new calls fail; running ones keep their conn
            driver.stop(grace=_CLOSE_GRACE)
        log.info("postgres_store_closed", where=self._where)
