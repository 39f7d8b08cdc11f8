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
* **Runs and usage in the append's statement.** The statement that bumps a thread's head
  and inserts its events also merges the batch into the thread's runs and usage rows
  (:mod:`journal._postgres_runs`): a single-thread append stays one round trip, and pages
  of runs, lookups by run id and a thread's usage read a few indexed rows.
* **Fails fast.** ``connect_timeout`` bounds connecting and waiting for a pooled connection,
  ``statement_timeout`` any one statement; a down server raises ``StoreUnavailableError``
  (with the driver's reason, e.g. refused or unknown database) instead of hanging. psycopg
  errors never leak: they are translated in one place
  (:func:`journal._postgres_driver.translate`).
* **Native async.** ``aappend``/``aread`` run on psycopg's ``AsyncConnectionPool``, kept on a
  private event loop thread (:mod:`journal._driver_loop`) so that callers on any loop, or
  on several loops one after the other, share it and ``asyncio.run`` never inherits its
  background tasks; the other async methods run the sync ones in a worker thread. Sync
  methods use a ``ConnectionPool``. Both drivers run the same operation generators, so the
  SQL and the row mapping exist once. ``close`` gives async calls already running a few
  seconds to finish, then cancels them: they raise ``StoreClosedError``, none waits forever.
  (Pools, liveness checks, transactions and retries live in :mod:`journal._postgres_pools`;
  this module is the contract's hooks on the operations of :mod:`journal._postgres_ops`.)
* **Exact round trip.** ``content``/``metadata`` are stored as canonical JSON text in
  ``json`` columns (see :mod:`journal._postgres_schema` for why not ``jsonb``).

The schema is created and upgraded on open by versioned migrations (see
:mod:`journal._postgres_schema`) under an advisory lock, so concurrent first opens are safe; or,
with ``migrate=False``, only checked (no DDL), for an application role that may not change it,
while ``setup()`` / ``runjournal migrate`` runs the migrations at deploy time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from journal._logging import get_logger
from journal._postgres_ops import (
    Op,
    StoredIds,
    append_attempts,
    count_op,
    delete_thread_op,
    get_run_op,
    last_seq_op,
    list_runs_page_op,
    list_threads_op,
    message_marks_op,
    migrate_op,
    read_op,
    read_usage_op,
    thread_ids_after_op,
)
from journal._postgres_pools import PostgresConnections
from journal._postgres_setup import check_schema_op
from journal.errors import StoreError
from journal.events import NewEvent, RunEvent, RunSummary, ThreadSummary, ThreadUsage
from journal.store import MessageMark, ReadQuery, RunEventStore
from journal.truncation import DEFAULT_METADATA_CAP

__all__ = ["PostgresEventStore"]

log = get_logger(__name__)

#: Seconds ``close`` lets async calls already running finish before cancelling them.
_CLOSE_GRACE: Final = 5.0


def _checked() -> Op[int]:
    """The schema check as an open step that applied no migrations."""
    yield from check_schema_op()
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

    _takes_records = True

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
        self._db = PostgresConnections(
            connect_timeout=float(connect_timeout),
            statement_ms=str(int(statement_timeout * 1000)),
        )
        first = migrate_op if migrate else _checked
        if pool is not None:
            if url is not None:
                raise ValueError("pass a URL or pool=, not both")
            applied = self._db.open_host(pool, apool, first)
        else:
            if apool is not None:
                raise ValueError("apool= needs pool= too: pass the application's pools, or a URL")
            applied = self._db.open_own(url, min_size, max_size, first())
        self._where = self._db.where
        #: How many migrations opening this store applied (0 with ``migrate=False``).
        self.migrations_applied = applied
        log.info("postgres_store_opened", where=self._where, migrations_applied=applied)

    def setup(self) -> int:
        """Create or upgrade the schema to this library's version; return migrations applied.

        The deploy-time step (``runjournal migrate --store URL`` runs it): call it as the
        role that owns the schema; app servers then open the store with ``migrate=False``.
        Safe to run again and from several processes at once (an advisory lock serialises).
        """
        self._check_open()
        applied = self._db.run(migrate_op)
        log.info("postgres_schema_migrated", where=self._where, migrations_applied=applied)
        return applied

    # -- sync hooks ---------------------------------------------------------------------------

    def _append(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return self._db.run(append_attempts(events))

    def _append_telling(self, events: Sequence[NewEvent]) -> tuple[list[RunEvent], set[str] | None]:
        stored = StoredIds()
        records = self._db.run(append_attempts(events, stored))
        return records, stored.ids if stored.certain else None  # a lost commit: cannot tell

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        return self._db.run(partial(read_op, query))

    def _message_marks(
        self, thread_id: str, event_types: Sequence[str], after_seq: int | None = None
    ) -> list[MessageMark] | None:
        # three short columns a row instead of each event's content and metadata decoded
        query = self._marks_query(_OWN_READ, thread_id, event_types, after_seq)
        types = None if query is None else query.filter.event_type
        if query is None or types is None:
            return None
        if query.matches_nothing:  # no type asked
            return []
        try:
            marks = partial(message_marks_op, query.thread_id, sorted(types), query.after_seq)
            return self._db.run(marks)
        except StoreError as e:
            if isinstance(e.__cause__, psycopg.DataError):  # e.g. a \u0000 the JSON operators
                return None  # cannot give as text: the events' own reads then
            raise

    def _last_seq(self, thread_id: str) -> int:
        return self._db.run(partial(last_seq_op, thread_id))

    def _count(self, query: ReadQuery) -> int:
        return self._db.run(partial(count_op, query))

    def _list_threads(self, limit: int | None, offset: int) -> list[ThreadSummary]:
        return self._db.run(partial(list_threads_op, limit, offset))

    def _thread_ids_after(self, after: str | None, limit: int) -> list[str] | None:
        return self._db.run(partial(thread_ids_after_op, after, limit))

    def _list_runs_page(self, query: ReadQuery) -> list[RunSummary]:
        return self._db.run(partial(list_runs_page_op, query))

    def _get_run(self, run_id: str, thread_id: str | None) -> RunSummary | None:
        return self._db.run(partial(get_run_op, run_id, thread_id))

    def _read_usage(self, thread_id: str) -> ThreadUsage:
        return self._db.run(partial(read_usage_op, thread_id))

    def _delete_thread(self, thread_id: str) -> int:
        count = self._db.run(partial(delete_thread_op, thread_id))
        log.info("thread_deleted", thread_id=thread_id, count=count)
        return count

    # -- async hooks (native driver) -----------------------------------------------------------

    async def _aappend(self, events: Sequence[NewEvent]) -> list[RunEvent]:
        return await self._db.arun(append_attempts(events))

    async def _aread(self, query: ReadQuery) -> list[RunEvent]:
        return await self._db.arun(partial(read_op, query))

    # -- closing -------------------------------------------------------------------------------

    def _spool_identity(self) -> tuple[str, str]:
        return self._db.identity

    def _close(self) -> None:
        self._db.close(grace=_CLOSE_GRACE)
        log.info("postgres_store_closed", where=self._where)


#: The read as this module defines it, taken when it loads: a store whose class has another
#: (a subclass's, or a patch set on the class later) is read through its own.
_OWN_READ: Final = PostgresEventStore._read
