"""Each store's journals spool to a file of that store's own, named for where it lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from journal import MemoryEventStore, RunJournal, SqliteEventStore
from journal._postgres_driver import identity_of_conninfo
from journal.spool import DEFAULT_SPOOL_PATH, default_spool_path
from tests.logs import capture_logs


def test_a_sqlite_file_has_one_spool_whatever_path_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file by a relative, an absolute and a symlinked path: one spool path, in
    the working directory, named for the file; another file: another spool."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    with (
        SqliteEventStore("app.db") as relative,
        SqliteEventStore(tmp_path / "app.db") as absolute,
        SqliteEventStore(tmp_path / "link" / "app.db") as linked,
        SqliteEventStore(tmp_path / "other.db") as other,
    ):
        path = default_spool_path(relative)
        assert path == default_spool_path(absolute) == default_spool_path(linked)
        assert path.parent == tmp_path and path.name.startswith("runjournal-spool-app.db-")
        assert path.suffix == ".jsonl"
        assert default_spool_path(other) != path


def test_memory_stores_never_share_a_spool() -> None:
    """Two memory stores (events that live with their object) get two spool paths."""
    first, second = MemoryEventStore(), MemoryEventStore()
    assert default_spool_path(first) != default_spool_path(second)


def test_a_postgres_spool_is_named_for_server_database_and_options_never_the_password() -> None:
    """Password and role do not change the name; host, port, database and options do."""
    base = "postgresql://app:secret@db.example:5433/journal"
    name, place = identity_of_conninfo(base)
    assert name == "journal" and "secret" not in place and "app" not in place
    assert identity_of_conninfo("postgresql://reader:other@db.example:5433/journal") == (
        name, place,
    )  # fmt: skip
    for different in (
        "postgresql://app:secret@db2.example:5433/journal",
        "postgresql://app:secret@db.example:5432/journal",
        "postgresql://app:secret@db.example:5433/journal2",
        "postgresql://app:secret@db.example:5433/journal?options=-csearch_path%3Dtenant",
    ):
        assert identity_of_conninfo(different)[1] != place


def test_a_journal_warns_of_the_spool_every_journal_once_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``runjournal-spool.jsonl`` in the working directory (whose events may be any
    store's) is named in a warning, left as it is, and not replayed."""
    monkeypatch.chdir(tmp_path)
    Path(DEFAULT_SPOOL_PATH).write_text('{"event_id": "of some store"}\n', encoding="utf-8")
    with capture_logs() as logs, MemoryEventStore() as store:
        journal = RunJournal(store)
        journal.close()
    warned = [e for e in logs if e["event"] == "journal_spool_unclaimed"]
    assert len(warned) == 1 and warned[0]["path"] == str(tmp_path / DEFAULT_SPOOL_PATH)
    assert journal.spool.path != tmp_path / DEFAULT_SPOOL_PATH
    assert os.path.getsize(DEFAULT_SPOOL_PATH) > 0
