"""How ``PostgresEventStore`` reaches the server: pools, dead connections, transactions, retries.

``PostgresConnections`` owns the store's pools (or borrows the application's), hands out only
live connections (a server restart or a killed backend is noticed before use, without a round
trip for a healthy connection), runs an operation generator (:mod:`journal._postgres_ops`) in
its transaction with up to ``MAX_ATTEMPTS`` attempts for retryable failures, and keeps the
async pool on a private event loop thread (:mod:`journal._driver_loop`). psycopg errors are
translated here (:func:`journal._postgres_driver.translate`) and never leak.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from journal._driver_loop import DriverLoop, DriverLoopStopped
from journal._logging import get_logger
from journal._postgres_driver import (
    adrive,
    drive,
    identity_of_conninfo,
    maybe_dead,
    retryable,
    translate,
    where_of_conninfo,
)
from journal._postgres_ops import Op
from journal._postgres_setup import SET_LOCAL_SESSION, own_connection_kwargs
from journal.errors import StoreClosedError

__all__ = ["MAX_ATTEMPTS", "PostgresConnections"]

log = get_logger("journal.postgres")  # the store's logger: one name for the whole backend

T = TypeVar("T")

MAX_ATTEMPTS: Final = 5


class PostgresConnections:
    """The pools of one store and the drivers that run operations on them (see the module)."""

    def __init__(self, *, connect_timeout: float, statement_ms: str) -> None:
        self._timeout = connect_timeout
        self._statement_ms = statement_ms
        self._driver: DriverLoop | None = None  # async pool's home, made on first async use
        self._apool: AsyncConnectionPool[Any] | None = None
        self._driver_lock = threading.Lock()
        self._host_pool = False
        self._closing = False
        #: ``postgresql://host:port/db`` for messages (never the password).
        self.where = "postgresql://"
        #: The database's name and place (:func:`identity_of_conninfo`).
        self.identity = ("postgresql", "postgresql://")

    def open_own(self, url: str | None, min_size: int, max_size: int, first: Op[T]) -> T:
        """Build our own pools for ``url`` after running ``first`` on a direct connection."""
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError("pool sizes need 0 <= min_size <= max_size and max_size >= 1")
        self.where, self._kwargs = own_connection_kwargs(url, self._timeout, self._statement_ms)
        assert isinstance(url, str)
        self._url: str | None = url  # may hold a password: never logged, only where is
        self.identity = identity_of_conninfo(url)
        self._sizes = (min_size, max_size)
        # check: a pooled connection a server restart killed is replaced before use, so
        # the first operation after a restart does not fail
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url, kwargs=self._kwargs, min_size=min_size, max_size=max_size,
            timeout=self._timeout, open=False, name="runjournal", check=self._check_pooled,
        )  # fmt: skip
        try:  # a direct connection first: its error says why (refused, no such database…)
            with psycopg.connect(url, **self._kwargs) as conn:
                result = drive(conn, first)
        except psycopg.Error as e:
            raise translate(e, self.where) from e
        self._pool.open(wait=False)
        return result

    def open_host(
        self,
        pool: ConnectionPool[Any],
        apool: AsyncConnectionPool[Any] | None,
        first: Callable[[], Op[T]],
    ) -> T:
        """Borrow the application's pools, then run ``first`` on them."""
        if not isinstance(pool, ConnectionPool):
            raise TypeError(f"pool= must be a psycopg_pool.ConnectionPool, got {type(pool)!r}")
        if apool is not None and not isinstance(apool, AsyncConnectionPool):
            raise TypeError(
                f"apool= must be a psycopg_pool.AsyncConnectionPool, got {type(apool)!r}"
            )
        self._url = None
        conninfo = pool.conninfo if isinstance(pool.conninfo, str) else ""
        self.where = where_of_conninfo(conninfo)
        self.identity = identity_of_conninfo(conninfo)
        self._pool = pool
        self._apool = apool
        self._host_pool = True
        return self.run(first)

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
            log.info("postgres_dead_connection_replaced", where=self.where)
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
            log.info("postgres_dead_connection_replaced", where=self.where)
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

    def run(self, make_op: Callable[[], Op[T]]) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._connection() as conn:
                    return drive(conn, make_op())
            except (psycopg.Error, PoolTimeout) as e:
                self._give_up_unless_retryable(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def arun(self, make_op: Callable[[], Op[T]]) -> T:
        if self._host_pool:  # on the caller's loop: the host's async pool lives there
            if self._apool is None:
                return await asyncio.to_thread(self.run, make_op)
            return await self._arun_on_pool(self._apool, make_op)
        driver, pool = self._async_driver()
        try:
            return await driver.run(self._arun_on_driver(pool, make_op))
        except DriverLoopStopped:
            raise StoreClosedError(f"{self.where}: the store was closed during the call") from None

    async def _arun_on_driver(
        self, pool: AsyncConnectionPool[Any], make_op: Callable[[], Op[T]]
    ) -> T:
        try:
            await pool.open(wait=False)
            return await self._arun_on_pool(pool, make_op)
        except asyncio.CancelledError:
            if self._closing:  # close() cancelled the call after its grace period
                raise StoreClosedError(
                    f"{self.where}: the store was closed during the call"
                ) from None
            raise

    async def _arun_on_pool(
        self, pool: AsyncConnectionPool[Any], make_op: Callable[[], Op[T]]
    ) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                async with self._aconnection(pool) as conn:
                    return await adrive(conn, make_op())
            except (psycopg.Error, PoolTimeout) as e:
                self._give_up_unless_retryable(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _give_up_unless_retryable(self, error: Exception, attempt: int) -> None:
        if not (retryable(error) and attempt < MAX_ATTEMPTS):
            raise translate(error, self.where) from error
        log.info("postgres_transaction_retry", attempt=attempt, error=type(error).__name__)

    def _async_driver(
        self,
    ) -> tuple[DriverLoop, AsyncConnectionPool[Any]]:
        with self._driver_lock:
            if self._closing:
                raise StoreClosedError(f"{self.where} is closed")
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

    # -- closing -------------------------------------------------------------------------------

    def close(self, grace: float) -> None:
        """Close our own pools (a host's stay open); async calls get ``grace`` s to finish."""
        self._closing = True
        if self._host_pool:  # the application's pools: theirs to close
            return
        self._pool.close()
        with self._driver_lock:
            driver, pool, self._driver, self._apool = self._driver, self._apool, None, None
        if driver is not None and pool is not None:
            driver.call(pool.close(), timeout=15)  # new calls fail; running ones keep their conn
            driver.stop(grace=grace)
