"""The local spool: events a ``RunJournal`` could not write to its store, kept on disk.

When a batch still fails after the retry budget, the journal appends it to a spool file (one
JSON object per line, each a prepared ``NewEvent`` with its ``event_id`` and ``created_at``), so
nothing is lost while the store is down. :func:`replay_spool` writes a spool into a store in
file order. Replay is idempotent: the store skips an ``event_id`` it already holds, so a replay
that is interrupted, or run twice, never duplicates an event.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from journal._known_inputs import message_id_of
from journal.encoding import dumps
from journal.events import NewEvent
from journal.store import RunEventStore

__all__ = [
    "DEFAULT_SPOOL_PATH",
    "Spool",
    "SpoolReplay",
    "areplay_spool",
    "read_spool",
    "recover_spool",
    "replay_spool",
]

#: Where a ``RunJournal`` spools by default (relative to the working directory).
DEFAULT_SPOOL_PATH = "runjournal-spool.jsonl"

_log = structlog.get_logger(__name__)
_path_locks: dict[str, threading.Lock] = {}
_path_locks_guard = threading.Lock()


def _path_lock(path: str | os.PathLike[str]) -> threading.Lock:
    """The lock every spool of this process holds while it writes or replays the file."""
    key = os.path.abspath(path)
    with _path_locks_guard:
        return _path_locks.setdefault(key, threading.Lock())


class Spool:
    """An append-only JSONL file of prepared events; safe to share between threads.

    Spools of one process on the same file (journals keeping the default path) share one
    lock, so a replay never deletes events another journal appended meanwhile.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(self, events: Sequence[NewEvent | Mapping[str, Any]]) -> None:
        """Append ``events`` as one write; raise ``OSError`` if the file cannot be written.

        An event that is not valid is written anyway; :func:`read_spool` skips and logs it.
        """
        text = "".join(
            dumps(e.model_dump(mode="json") if isinstance(e, NewEvent) else e) + "\n"
            for e in events
        )
        with _path_lock(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())

    def replay(self, store: RunEventStore, *, batch_size: int = 500) -> int:
        """Replay this spool into ``store`` (see :func:`replay_spool`)."""
        return replay_spool(self.path, store, batch_size=batch_size)


def read_spool(path: str | os.PathLike[str]) -> list[NewEvent]:
    """The events of a spool file in file order; unreadable lines are skipped and logged.

    A missing file is an empty spool.
    """
    return _read(path)[0]


def _read(path: str | os.PathLike[str]) -> tuple[list[NewEvent], int]:
    """The events of a spool file and the count of non-blank lines that are not events."""
    events: list[NewEvent] = []
    bad = 0
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    events.append(NewEvent(**json.loads(line)))
                except (ValueError, TypeError):  # a torn last line after a crash
                    bad += 1
    except FileNotFoundError:
        return [], 0
    if bad:
        _log.warning("spool_lines_skipped", path=str(path), count=bad)
    return events, bad


@dataclass(frozen=True)
class SpoolReplay:
    """What :func:`recover_spool` did with a spool file."""

    events: int
    """Events the spool held (each now in the store, stored before or by this replay)."""
    skipped_lines: int
    """Non-blank lines that were not events (a line torn by a crash, or not a spool at all)."""
    removed: bool
    """Whether the file was deleted."""


def recover_spool(
    path: str | os.PathLike[str],
    store: RunEventStore,
    *,
    batch_size: int = 500,
    remove: bool = True,
    progress: Callable[[int], None] | None = None,
) -> SpoolReplay:
    """Write every event of the spool at ``path`` into ``store``, in order, and report.

    Guarantees: events keep their ``event_id`` and ``created_at`` and are appended in spool order
    (so their seqs follow the order they happened in); an event already in the store is not
    stored twice, so replaying again is harmless; nor is a ``message.human`` whose message the
    thread already holds (a history resent while the store was down). With ``remove=True`` the
    file is deleted once every event is stored, unless some line was not an event (the file is
    then kept for a person to look at). ``progress`` is called with the number of events each
    appended batch held. A ``StoreError`` propagates and leaves the file in place.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    with _path_lock(path):  # no spool of this process appends between the read and the unlink
        events, skipped = _read(path)
        todo = _without_stored_inputs(store, events)
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            store.append(batch)
            if progress is not None:
                progress(len(batch))
        removed = remove and not skipped and Path(path).exists()
        if removed:
            Path(path).unlink(missing_ok=True)
    if events:
        _log.info("spool_replayed", path=str(path), count=len(events), skipped=skipped)
    return SpoolReplay(events=len(events), skipped_lines=skipped, removed=removed)


def replay_spool(
    path: str | os.PathLike[str],
    store: RunEventStore,
    *,
    batch_size: int = 500,
    remove: bool = True,
) -> int:
    """Write every event of the spool at ``path`` into ``store``; return how many it held.

    :func:`recover_spool` with its guarantees, for callers that only need the count.
    """
    return recover_spool(path, store, batch_size=batch_size, remove=remove).events


def _without_stored_inputs(store: RunEventStore, events: list[NewEvent]) -> list[NewEvent]:
    """``events`` minus each ``message.human`` whose message its thread already holds.

    A journal restarted while the store was down cannot tell which inputs of a resent history
    are stored, so it spools them all; the store tells at replay time.
    """
    stored: dict[str, dict[str, str]] = {}  # thread -> message id -> event id
    out: list[NewEvent] = []
    for event in events:
        if event.event_type == "message.human" and not event.metadata.get("replacement"):
            if event.thread_id not in stored:
                held = store.read(event.thread_id, event_type="message.human")
                stored[event.thread_id] = {
                    mid: e.event_id for e in held if (mid := message_id_of(e.content)) is not None
                }
            known = stored[event.thread_id]
            mid = message_id_of(event.content)
            if mid is not None and known.setdefault(mid, event.event_id) != event.event_id:
                continue  # the same input under another event: a repeat
        out.append(event)
    return out


async def areplay_spool(
    path: str | os.PathLike[str],
    store: RunEventStore,
    *,
    batch_size: int = 500,
    remove: bool = True,
) -> int:
    """Async :func:`replay_spool` (runs in a worker thread, never blocks the event loop)."""
    return await asyncio.to_thread(replay_spool, path, store, batch_size=batch_size, remove=remove)
