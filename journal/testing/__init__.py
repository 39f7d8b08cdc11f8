"""The ``RunEventStore`` contract suite, for every backend (ours and third parties').

A backend's test module subclasses :class:`StoreContract` and implements ``create_store``::

    from journal.testing import StoreContract

    class TestMyStore(StoreContract):
        def create_store(self, **options: Any) -> RunEventStore:
            return MyEventStore(**options)

Every test gets a fresh, empty store from the ``store`` fixture (closed afterwards). ``options``
are constructor keyword arguments the suite needs (only ``content_caps``). ``self.tmp_path`` is a
per-test temporary directory a backend may put its files in. Async tests are plain ``async def``
methods: run them with pytest-asyncio in auto mode. The suite needs the ``testing`` extra
(``pip install 'runjournal[testing]'``: pytest, pytest-asyncio, blockbuster); for pytest's
detailed assertion messages call ``pytest.register_assert_rewrite("journal.testing")`` in your
``conftest.py`` before importing it.

The suite is in parts (write, read, manage, runs and usage, async, concurrency), each a class a
backend may also use alone; :class:`ProcessContract` (writers in separate processes) is for
backends that processes can share.
Tests added to the contract later exercise only the public ``RunEventStore`` API, and methods
added to that API later come with a default implementation on the base class, so a third-party
backend that passed keeps passing.

The hooks a backend implements (the public methods validate their arguments first, so a hook
only ever sees valid input; ``journal.memory`` is a complete example in ~150 lines)::

    _append(events: Sequence[NewEvent]) -> list[RunEvent]    # one all-or-nothing batch
    _read(query: ReadQuery) -> list[RunEvent]                # query.window() applies the rule
    _count(query: ReadQuery) -> int                          # thread_id and filter only
    _last_seq(thread_id: str) -> int
    _list_threads(limit: int | None, offset: int) -> list[ThreadSummary]
    _delete_thread(thread_id: str) -> int
    _close() -> None

``ReadQuery`` (``journal.store.ReadQuery``) is frozen: ``thread_id``, ``after_seq``,
``before_seq``, ``limit`` and ``filter`` (an ``EventFilter``), plus ``newest_first`` and
``window(items, seq, keep)``. Hooks written in the form they had before it (``_read(thread_id,
after_seq, before_seq, limit, flt)``, ``_aread`` alike, ``_count(thread_id, flt)``) are still
called that way: the base class adapts them when the backend's class is created. Optional
async hooks (``_aappend``, ``_aread``) default to the sync ones in a worker thread.

Runs and usage have default hooks that fold the thread's events (read through ``_read``) with
the one projection of :mod:`journal._runs`: a backend passes without them, and may override
them with kept aggregates (``_list_runs_page(query) -> list[RunSummary]``, ``_get_run(run_id,
thread_id | None) -> RunSummary | None``, ``_read_usage(thread_id) -> ThreadUsage``; merge a
batch's :func:`journal._runs.project` into stored :class:`journal._runs.RunFold` s as the
built-in backends do). ``_list_runs(thread_id)``, a hook of earlier versions, is no longer
called.
"""

from __future__ import annotations

from journal.testing._async import AsyncContract
from journal.testing._base import ContractBase
from journal.testing._concurrency import ConcurrencyContract, ProcessContract
from journal.testing._helpers import T0, ev, many, seqs
from journal.testing._manage import ManageContract
from journal.testing._read import ReadContract
from journal.testing._runs import RunsContract
from journal.testing._write import WriteContract

__all__ = [
    "T0",
    "AsyncContract",
    "ConcurrencyContract",
    "ContractBase",
    "ManageContract",
    "ProcessContract",
    "ReadContract",
    "RunsContract",
    "StoreContract",
    "WriteContract",
    "ev",
    "many",
    "seqs",
]


class StoreContract(
    WriteContract, ReadContract, ManageContract, RunsContract, AsyncContract, ConcurrencyContract
):
    """The behaviour every ``RunEventStore`` backend must show (see ``journal.store``).

    A backend that several processes can share adds :class:`ProcessContract` (and its
    ``store_url`` hook) to run writers in separate processes too.
    """
