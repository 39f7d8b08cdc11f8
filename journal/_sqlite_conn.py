"""SQLite connections for ``SqliteEventStore``: a small pool, write transactions, retries, errors.

* Every connection is in driver autocommit mode (``isolation_level=None``) so transactions are
  explicit: a write transaction starts with ``BEGIN IMMEDIATE`` and so takes the write lock up
  front; it never upgrades a read lock half-way (the cause of un-retryable ``SQLITE_BUSY``).
* ``busy_timeout`` makes SQLite wait for the lock; on top of it :func:`retry_busy` retries the
  whole transaction with jittered backoff until a deadline, so concurrent writers do not see
  "database is locked".
* :func:`translate` is the one place where ``sqlite3`` errors become ``StoreError`` subclasses.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, TypeVar

from journal._logging import get_logger
from journal.errors import StoreClosedError, StoreCorruptError, StoreError, StoreUnavailableError

__all__ = ["ConnectionPool", "is_busy", "retry_busy", "transaction", "translate"]

log = get_logger(__name__)

T = TypeVar("T")

_BUSY_CODES: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_CORRUPT_CODES: Final = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_UNAVAILABLE_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_AUTH,
    }
)


def _primary_code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF  # extended codes keep the primary low byte


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's "database is locked/busy" (worth retrying)."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    if _primary_code(error) in _BUSY_CODES:
        return True
    text = str(error)
    return "database is locked" in text or "database table is locked" in text


def translate(error: sqlite3.Error, path: Path, action: str) -> StoreError:
    """The ``StoreError`` that stands for ``error`` (raise it ``from error``)."""
    code = _primary_code(error)
    text = str(error)
    where = f"SQLite store {str(path)!r}"
    if code in _CORRUPT_CODES or "not a database" in text or "malformed" in text:
        return StoreCorruptError(
            f"{where} is not a runjournal database or is damaged ({text}) while trying to {action}"
        )
    if code in _UNAVAILABLE_CODES or code in _BUSY_CODES or "unable to open" in text:
        hint = ""
        if not path.parent.is_dir():
            hint = f"; the directory {str(path.parent)!r} does not exist"
        return StoreUnavailableError(f"{where} cannot be used to {action} ({text}){hint}")
    return StoreError(f"{where} failed to {action} ({text})")


def retry_busy(func: Callable[[], T], *, deadline_s: float, started: float | None = None) -> T:
    """Call ``func`` until it does not fail with SQLITE_BUSY, or until ``deadline_s`` elapsed
    (since ``started``, a ``time.monotonic()`` reading of a first attempt made already; else
    since now)."""
    start = time.monotonic() if started is None else started
    delay = 0.002
    attempt = 0
    while True:
        try:
            return func()
        except sqlite3.OperationalError as e:
            if not is_busy(e) or time.monotonic() - start + delay > deadline_s:
                raise
            attempt += 1
            log.debug("sqlite_busy_retry", attempt=attempt, delay_s=round(delay, 4))
            time.sleep(delay * (0.5 + random.random()))  # jitter breaks lock-step retries
            delay = min(delay * 2, 0.25)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that holds the write lock from its first statement."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class ConnectionPool:
    """Connections to one SQLite file, each used by one thread at a time.

    A thread takes an idle connection (or opens one, and runs ``prepare`` on it: e.g. to
    register SQL functions) for the duration of one operation and gives it back; at most
    ``max_idle`` idle connections are kept. ``close`` closes the idle ones at once and every
    busy one when it is given back.
    """

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float,
        synchronous: str,
        max_idle: int = 8,
        prepare: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.path = path
        self._prepare = prepare
        self._busy_timeout_s = busy_timeout_s
        self._synchronous = synchronous
        self._max_idle = max_idle
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def open(self) -> sqlite3.Connection:
        """A new configured connection (raises ``sqlite3.Error``)."""
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")  # validated enum value
            conn.execute("PRAGMA foreign_keys = ON")
            if self._prepare is not None:
                self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def take(self) -> sqlite3.Connection:
        """Lend a connection to the calling thread for one operation (give it back with
        :meth:`give`; raises ``StoreClosedError`` when closed, ``sqlite3.Error`` when a new
        connection cannot be opened)."""
        with self._lock:
            if self._closed:
                raise StoreClosedError("the SQLite store is closed")
            conn = self._idle.pop() if self._idle else None
        return self.open() if conn is None else conn

    def give(self, conn: sqlite3.Connection) -> None:
        """Take back a connection lent by :meth:`take` (closed if the pool is closed or full)."""
        if conn.in_transaction:  # an interrupted operation must not leak its transaction
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        with self._lock:
            keep = not self._closed and len(self._idle) < self._max_idle
            if keep:
                self._idle.append(conn)
        if not keep:
            conn.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """Lend a connection to the calling thread for one operation."""
        conn = self.take()
        try:
            yield conn
        finally:
            self.give(conn)

    def close(self) -> None:
        """Close the idle connections; busy ones close when given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
