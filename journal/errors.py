"""The exception tree of runjournal.

::

    JournalError                   every error this library raises on purpose
    └── StoreError                 a store could not do what was asked (driver errors wrapped here)
        ├── StoreUnavailableError  the store cannot be reached or opened (down, unwritable path)
        ├── StoreCorruptError      the file or schema is not a runjournal store, or is damaged
        ├── SchemaVersionError     schema newer than this runjournal, or missing or behind
        └── StoreClosedError       the store was used after ``close()``
    └── CopyConflictError          ``copy_store``: a target thread diverges from its source

``history.errors.ThreadNotFoundError`` (also a ``LookupError``) extends this tree for readers.

Caller mistakes (a malformed id, an unknown category, a bad URL) raise ``ValueError`` or
``TypeError`` with a message that names the field and says what to do. Driver exceptions
(sqlite3, psycopg) never leak past ``journal``: each backend translates them at one place.
"""

from __future__ import annotations


class JournalError(Exception):
    """Base class of every error runjournal raises on purpose."""


class StoreError(JournalError):
    """A store operation failed; the store is unchanged (batches are all-or-nothing)."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached or opened: a down server, an unwritable path."""


class StoreCorruptError(StoreError):
    """The database is not a runjournal store or is damaged."""


class SchemaVersionError(StoreError):
    """The store's schema is newer than this runjournal understands, or, opened with
    ``migrate=False``, missing or behind (``runjournal migrate --store URL`` brings it up)."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class CopyConflictError(JournalError):
    """A target thread holds events that are not a prefix of the source thread."""
