"""The local spool: events a ``RunJournal`` could not write to its store, kept on disk.

When a batch still fails after the retry budget, the journal appends it to a spool file (one
JSON object per line, each a prepared ``NewEvent`` with its ``event_id`` and ``created_at``), so
nothing is lost while the store is down. :func:`recover_spool` writes a spool into a store in
file order. Replay is idempotent: the store skips an ``event_id`` it already holds, so a replay
that is interrupted, or run twice, never duplicates an event.

Guarantees for writers and readers in any number of threads and OS processes:

* Every append and every change of the file by a recovery happens under an exclusive
  ``flock`` on the sidecar file ``<spool>.lock`` (created next to the spool and never
  deleted: deleting it would let two processes lock two different files). A recovery reads
  the file under the lock, stores its events without holding it, and then, under the lock
  again, removes only the bytes it read: lines appended meanwhile stay for the next recovery,
  and a file that no longer starts with those bytes (another recovery stored and deleted it,
  and a journal spooled to the path anew, perhaps on the same inode) is left as it is.
* An append starts on a fresh line even after a torn last line (a crash or a full disk
  mid-write), so a torn fragment is one bad line and never swallows the next event.
* An append that fails (disk full, file-size limit) is undone: the file is cut back to its
  size before the append, so an event is either wholly spooled or reported as not spooled.
* A line that is not an event (torn, not JSON, too deeply nested to parse, invalid) is named
  by its line number, never stored, and kept in the file; the good lines around it are stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from journal._known_inputs import (
    HISTORY_TYPES,
    MESSAGE_TYPES,
    Versions,
    as_edit,
    is_input,
    message_id_of,
    versions,
)
from journal._logging import get_logger
from journal.catalog import REMOVE_EVENT_TYPE
from journal.digests import stored_digest
from journal.encoding import dumps, dumps_record
from journal.events import NewEvent, RunEvent
from journal.store import RunEventStore

__all__ = [
    "DEFAULT_SPOOL_PATH",
    "Spool",
    "SpoolReplay",
    "areplay_spool",
    "default_spool_path",
    "lock_path",
    "read_spool",
    "recover_spool",
    "replay_spool",
    "spooled_threads",
]

#: The one spool file every ``RunJournal`` of a working directory shared by default before
#: each store had its own (:func:`default_spool_path`): a journal that finds one there warns
#: (``journal_spool_unclaimed``), for its events may be any store's (``runjournal recover``).
DEFAULT_SPOOL_PATH = "runjournal-spool.jsonl"
_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_MAX: Final = 40

_log = get_logger(__name__)
_SEQ: Final = {"seq"}
_path_locks: dict[str, threading.Lock] = {}
_path_locks_guard = threading.Lock()


def _path_lock(path: str | os.PathLike[str]) -> threading.Lock:
    """The lock every spool of this process holds while it changes the file."""
    key = os.path.abspath(path)
    with _path_locks_guard:
        return _path_locks.setdefault(key, threading.Lock())


def default_spool_path(store: RunEventStore) -> Path:
    """Where a ``RunJournal`` on ``store`` spools unless told otherwise: in the working
    directory, ``runjournal-spool-<name>-<key>.jsonl``, named for the store (its file's or
    database's name, and a digest of where its events live: a SQLite file's real path, a
    PostgreSQL server, database and options), so that journals of different stores never
    share a spool, and a journal started again on the same store finds the one it left.

    A memory store's spool is its own object's. A backend of another kind shares one spool
    among its instances: give its journals a ``spool_path`` each.
    """
    name, place = store._spool_identity()
    key = hashlib.sha256(place.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    label = _NAME_CHARS.sub("-", name)[:_NAME_MAX].strip("-.") or "store"
    return Path.cwd() / f"runjournal-spool-{label}-{key}.jsonl"


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar file whose ``flock`` guards the spool at ``path``."""
    spool = Path(path)
    return spool.with_name(spool.name + ".lock")


@contextlib.contextmanager
def _locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the spool's lock against this process's threads and every other process."""
    with _path_lock(path):
        sidecar = lock_path(path)
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(sidecar, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Spool:
    """An append-only JSONL file of prepared events; safe to share between threads and processes.

    See the module docstring for what an append guarantees.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(self, events: Sequence[NewEvent | Mapping[str, Any]]) -> None:
        """Append ``events`` whole, or raise ``OSError`` having written none of them.

        An event that is not valid is written anyway; recovery names and keeps its line.
        """
        data = "".join(  # a record's seq stays out: it is no part of the event to store
            (
                dumps_record(e.model_dump(mode="json", exclude=_SEQ))
                if isinstance(e, NewEvent)
                else dumps(e)
            )
            + "\n"
            for e in events
        ).encode("utf-8")
        with _locked(self.path):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # after a torn line: start a line of our own
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                except OSError:
                    with contextlib.suppress(OSError):  # undo a partial write
                        os.ftruncate(fd, size)
                    raise
            finally:
                os.close(fd)

    def replay(self, store: RunEventStore, *, batch_size: int = 500) -> int:
        """Replay this spool into ``store`` (see :func:`recover_spool`)."""
        return recover_spool(self.path, store, batch_size=batch_size).events


@dataclass(frozen=True)
class _Line:
    number: int
    raw: bytes
    event: NewEvent | None


def _parse(raw: bytes) -> NewEvent | None:
    try:
        value = json.loads(raw.decode("utf-8", errors="replace"))
        return NewEvent(**value) if isinstance(value, dict) else None
    except (ValueError, TypeError, RecursionError, MemoryError):
        return None  # torn, not JSON, too deep to parse, or not an event


def _split(data: bytes) -> list[_Line]:
    """The non-blank lines of a spool's bytes, each parsed (``event`` None: a bad line)."""
    lines: list[_Line] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            lines.append(_Line(number, raw, _parse(raw)))
    return lines


def _snapshot(path: str | os.PathLike[str]) -> bytes | None:
    """The spool's bytes, read under its lock; ``None`` for a missing file."""
    with _locked(path):
        try:
            return Path(path).read_bytes()
        except FileNotFoundError:
            return None


def read_spool(path: str | os.PathLike[str]) -> list[NewEvent]:
    """The events of a spool file in file order; lines that are not events are skipped.

    A missing file is an empty spool.
    """
    return [line.event for line in _split(_snapshot(path) or b"") if line.event is not None]


def spooled_threads(path: str | os.PathLike[str]) -> set[str]:
    """The thread ids the spool at ``path`` holds events of (empty for a missing file)."""
    return {event.thread_id for event in read_spool(path)}


@dataclass(frozen=True)
class SpoolReplay:
    """What :func:`recover_spool` did with a spool file."""

    events: int
    """Events the spool held (each now in the store, stored before or by this replay)."""
    skipped_lines: int
    """Non-blank lines that were not events (a line torn by a crash, or not a spool at all)."""
    removed: bool
    """Whether the file was deleted."""
    bad_lines: tuple[int, ...] = field(default=())
    """The line numbers (1-based, in the file as read) of the lines that were not events."""


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
    thread already holds (a history resent while the store was down). Safe against writers
    appending to the file meanwhile, in this process or another (see the module docstring).
    With ``remove=True`` the lines stored are removed from the file (the file is deleted when
    nothing else is left): lines that are not events stay, named in ``bad_lines``, and so do
    lines appended during the recovery. ``progress`` is called with the number of events each
    appended batch held. A ``StoreError`` propagates and leaves the file as it was.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    data = _snapshot(path)
    lines = _split(data or b"")
    bad = [line for line in lines if line.event is None]
    events = [line.event for line in lines if line.event is not None]
    todo = _without_stored_inputs(store, events)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        store.append(batch)
        if progress is not None:
            progress(len(batch))
    removed = False
    if remove and data is not None and events:  # a file of no event is not ours
        removed = _remove_read_part(Path(path), data, bad)
    if bad:
        _log.warning(
            "spool_lines_skipped",
            path=str(path),
            count=len(bad),
            lines=[line.number for line in bad][:20],
        )
    if events:
        _log.info("spool_replayed", path=str(path), count=len(events), skipped=len(bad))
    return SpoolReplay(
        events=len(events),
        skipped_lines=len(bad),
        removed=removed,
        bad_lines=tuple(line.number for line in bad),
    )


def _remove_read_part(path: Path, data: bytes, bad: list[_Line]) -> bool:
    """Drop the bytes read, ``data`` (stored), but the bad lines; True if the file is gone.

    Only from a file that still starts with ``data``: one another recovery rewrote or deleted
    (and a journal spooled to anew, perhaps on the same inode) is left as it is.
    """
    with _locked(path):
        try:
            with path.open("rb") as f:
                if f.read(len(data)) != data:
                    return False  # not the file read: its lines are another recovery's business
                tail = f.read()
        except FileNotFoundError:
            return False
        keep = b"".join(line.raw + b"\n" for line in bad) + tail.lstrip(b"\n")
        if not keep:
            path.unlink()
            return True
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        return False


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
    """``events`` minus each input event (:func:`journal._known_inputs.is_input`) whose
    message its thread already holds (stored, or earlier in the spool).

    A journal restarted while the store was down cannot tell which inputs of a resent history
    are stored, so it spools them all; the store tells at replay time.
    """
    # thread -> (message id -> the event id it was first stored or spooled under, versions,
    # the ids whose latest stored version is another journal's copy of a node's message)
    stored: dict[str, tuple[dict[str, str], Versions, set[str]]] = {}
    out: list[NewEvent] = []
    for event in events:
        removal = event.event_type == REMOVE_EVENT_TYPE
        mid = message_id_of(event.content) if event.event_type in MESSAGE_TYPES else None
        if (mid is not None or removal) and event.thread_id not in stored:
            held = store.read(event.thread_id, event_type=[*MESSAGE_TYPES, REMOVE_EVENT_TYPE])
            first = {m: e.event_id for e in held if (m := message_id_of(e.content)) is not None}
            stored[event.thread_id] = first, versions(held), _copies(held)
        if removal:
            _removed(stored[event.thread_id][2], event)  # a re-add after it is needed
        if mid is not None:
            ids, known, copies = stored[event.thread_id]
            if ids.setdefault(mid, event.event_id) == event.event_id:
                known.setdefault(mid, stored_digest(event.content, event.metadata))
            elif is_input(event):  # under another event: a repeat, or an edit
                edit = as_edit(event, known)
                if edit is None:
                    continue
                event = edit
            else:  # a node's message or an edit: the latest version
                digest = stored_digest(event.content, event.metadata)
                if mid in copies and known.get(mid) == digest:
                    # another journal found it in the state while this one spooled it (a run
                    # of the thread in another process) and stored it: not a second time
                    continue
                copies.discard(mid)
                known[mid] = digest
        out.append(event)
    return out


def _copies(held: list[RunEvent]) -> set[str]:
    """The ids whose latest version in ``held`` (a thread's stored ``message.*`` events, in
    seq order) is an answer or a tool result journaled as input (a journal that found it in
    the state) and still in the state (no removal since)."""
    copies: set[str] = set()
    for event in held:
        if event.event_type == REMOVE_EVENT_TYPE:
            _removed(copies, event)
            continue
        mid = message_id_of(event.content)
        if mid is None:
            continue
        if event.event_type in HISTORY_TYPES and is_input(event):
            copies.add(mid)
        else:
            copies.discard(mid)
    return copies


def _removed(copies: set[str], event: NewEvent) -> None:
    """Take out of ``copies`` the ids a ``message.remove`` event names as removed (its order
    alone says nothing: a spooled one was written before events the store holds)."""
    content = event.content if isinstance(event.content, dict) else {}
    removed = content.get("removed_message_ids")
    if isinstance(removed, list):
        copies.difference_update(m for m in removed if isinstance(m, str))


async def areplay_spool(
    path: str | os.PathLike[str],
    store: RunEventStore,
    *,
    batch_size: int = 500,
    remove: bool = True,
) -> int:
    """Async :func:`replay_spool` (runs in a worker thread, never blocks the event loop)."""
    return await asyncio.to_thread(replay_spool, path, store, batch_size=batch_size, remove=remove)
