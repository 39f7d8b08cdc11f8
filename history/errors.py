"""Errors raised by the history readers.

::

    JournalError (journal.errors)
    ├── ThreadNotFoundError   also a LookupError: the store has no event for the thread
    └── RunNotFoundError      also a LookupError: no run of the store has the run id

The HTTP layer maps both to 404 and ``ValueError``/``TypeError`` (a bad
``limit``, ``before_seq``, ``upto_seq`` or ``view``) to 422. Store failures arrive as
``journal.errors.StoreError``.
"""

from __future__ import annotations

from journal.errors import JournalError

__all__ = ["RunNotFoundError", "ThreadNotFoundError"]


class ThreadNotFoundError(JournalError, LookupError):
    """The store has no event for ``thread_id`` (never written, or deleted)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id!r} has no events in this store")
        self.thread_id = thread_id


class RunNotFoundError(JournalError, LookupError):
    """No run of the store has ``run_id``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run with id {run_id!r} in this store")
        self.run_id = run_id
