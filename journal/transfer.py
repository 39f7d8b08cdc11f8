"""Moving one thread's events out of a store and back in, as JSON Lines.

The format: one stored event a line (every field, ``seq`` included), in seq order.
:func:`export_events` writes it; :func:`import_events` appends such lines in batches, each
all-or-nothing, and ``event_id`` makes a re-import store nothing twice. ``runjournal export`` and
``runjournal import`` are thin wrappers of these two.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any, Final

import orjson
from pydantic import ValidationError

from journal._batch import Hint, KnownEvents, prepare_batch
from journal._import_lines import EXPORTED_TIME as _EXPORTED_TIME
from journal._import_lines import exported_line, exported_row
from journal._sqlite_import import FOLD_READS, ImportBatch
from journal.encoding import PLAIN, dumps_record, loads
from journal.events import NewEvent, RunEvent, construct, prepare_mapping, usual_event
from journal.sqlite import SqliteEventStore
from journal.store import RunEventStore

__all__ = ["EventLineError", "ImportSummary", "export_events", "import_events", "read_batches"]

DEFAULT_BATCH_SIZE = 500

_NO_SEQ: Final = object()  # a line without "seq" (None would be a seq of null)

#: A batch of parsed lines: each event with the seq it had in the file (``None`` if absent).
Batch = list[tuple[NewEvent, int | None]]


class EventLineError(ValueError):
    """A line of an event file is not an event; ``line`` is its 1-based number.

    From :func:`import_events`, ``imported_before`` counts the events of earlier batches,
    which stay stored.
    """

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem
        self.imported_before = 0


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_events` did: events stored, already present, stored at another seq."""

    imported: int = 0
    already_present: int = 0
    renumbered: int = 0


def export_events(
    store: RunEventStore,
    thread_id: str,
    out: IO[str],
    *,
    after_seq: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the events of ``thread_id`` above ``after_seq`` to ``out``; return how many.

    Into an empty store :func:`import_events` reproduces them exactly (ids, seqs, timestamps,
    content). ``progress(count)`` is called after each event.
    """
    written = 0
    for event in store.iter_events(thread_id, after_seq=after_seq):
        out.write(dumps_record(event.model_dump(mode="json")) + "\n")
        written += 1
        if progress is not None:
            progress(1)
    return written


def read_batches(lines: Iterable[bytes], batch_size: int) -> Iterator[Batch]:
    """Parse JSON Lines (UTF-8) into batches of (event, exported seq or None).

    A line that is not a valid event raises :class:`EventLineError` before its batch is
    yielded, so nothing of that batch is written. Blank lines are skipped.
    """
    for events, seqs in _known_batches(lines, batch_size):
        yield [(_new_event(event), seq) for event, seq in zip(events, seqs, strict=True)]


def _new_event(event: NewEvent) -> NewEvent:
    """``event`` as a ``NewEvent`` (a line read the fast way is a record, with its seq)."""
    if type(event) is not RunEvent:
        return event
    values = dict(event.__dict__)
    del values["seq"]
    return construct(NewEvent, values)


def _known_batches(
    lines: Iterable[bytes], batch_size: int
) -> Iterator[tuple[KnownEvents, list[int | None]]]:
    """:func:`read_batches`, each batch as :class:`KnownEvents` (the events, checked, with
    the canonical texts of their content and metadata for a line as export writes it — see
    :mod:`journal._import_lines` — else their kinds, so that ``append`` neither checks nor
    walks them again) and the exported seqs."""
    events, seqs = KnownEvents(handed_over=True), list[int | None]()
    keep, hint, keep_seq = events.append, events.hints.append, seqs.append
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise EventLineError(number, "not UTF-8 text") from None
        exported = exported_line(line)
        if exported is not None:  # the usual line: its texts are taken from it
            record, content, metadata, exported_seq = exported
            keep(record)  # KnownEvents.add, without a call per event
            hint((content, metadata))
            keep_seq(exported_seq)
        else:
            if not line.strip():
                continue
            event, content_kind, metadata_kind, seq = _parse_line(line, number)
            events.add(event, content_kind, metadata_kind)
            seqs.append(seq)
        if len(events) >= batch_size:
            yield events, seqs
            events, seqs = KnownEvents(handed_over=True), list[int | None]()
            keep, hint, keep_seq = events.append, events.hints.append, seqs.append
    if events:
        yield events, seqs


def import_events(
    store: RunEventStore,
    lines: Iterable[bytes],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[ImportSummary], None] | None = None,
) -> ImportSummary:
    """Append the events of JSON Lines ``lines`` to ``store`` in all-or-nothing batches.

    An event already stored (same ``event_id``, or repeated earlier in ``lines``) counts as
    already present and is not stored twice. A bad line raises :class:`EventLineError`; the
    batches before it stay stored (its ``imported_before`` attribute says how many events).
    ``progress`` gets the running summary after each batch.

    Into a built-in ``SqliteEventStore`` the lines go as rows (:mod:`journal._sqlite_import`):
    the same stored rows, runs and usage as appending their events, with no event object for
    most of them.
    """
    if type(store) is SqliteEventStore:
        counts = _stored_rows(store, lines, batch_size)
    else:
        counts = _appended(store, lines, batch_size)
    imported = present = renumbered = 0
    try:
        for stored, already, moved in counts:
            imported, present, renumbered = imported + stored, present + already, renumbered + moved
            if progress is not None:
                progress(ImportSummary(imported, present, renumbered))
    except EventLineError as e:
        e.imported_before = imported
        raise
    return ImportSummary(imported, present, renumbered)


def _appended(
    store: RunEventStore, lines: Iterable[bytes], batch_size: int
) -> Iterator[tuple[int, int, int]]:
    """Each batch of ``lines`` appended: how many were stored, already present, renumbered."""
    tells = _tells_what_it_stores(store)
    for events, seqs in _known_batches(lines, batch_size):
        imported = present = renumbered = 0
        # What a backend does not tell (or cannot: a commit in doubt): an event already
        # stored keeps its record, its seq at or below its thread's last seq read before the
        # write (its thread may even differ from the line's); exact unless a writer races.
        last = {t: store.last_seq(t) for t in {e.thread_id for e in events}}
        if tells:
            stored, new = store._append_new(events)  # events become records: not used below
        else:
            stored, new = store.append(events), None
        seen: set[str] = set()  # an id repeated in the batch is stored once
        for record, event, seq in zip(stored, events, seqs, strict=True):
            if record.event_id in seen:
                present += 1
                continue
            seen.add(record.event_id)
            if new is None:  # the event itself is its record when the store made it one
                fresh = record is event or record.seq > last.get(record.thread_id, record.seq)
            else:
                fresh = record.event_id in new
            if not fresh:
                present += 1
                continue
            imported += 1
            renumbered += seq is not None and record.seq != seq
        yield imported, present, renumbered


def _tells_what_it_stores(store: RunEventStore) -> bool:
    """Whether ``store``'s appends say which events they stored: a backend's own
    ``_append_telling``, beside the ``_append`` it tells of, and ``append`` not overridden (a
    subclass that changes either is called as any store, through ``append``)."""
    kind = type(store)
    owner = next(c for c in kind.__mro__ if "_append_telling" in c.__dict__)
    return (
        owner is not RunEventStore
        and kind.append is RunEventStore.append
        and kind._append is owner.__dict__.get("_append")
    )


def _stored_rows(
    store: SqliteEventStore, lines: Iterable[bytes], batch_size: int
) -> Iterator[tuple[int, int, int]]:
    """Each batch of ``lines`` stored as rows: how many were stored, already present,
    renumbered."""
    for batch in _row_batches(store, lines, batch_size):
        yield store._import_rows(batch)


def _row_batches(
    store: SqliteEventStore, lines: Iterable[bytes], batch_size: int
) -> Iterator[ImportBatch]:
    """``lines`` read into :class:`ImportBatch` es for ``store``: a line as export writes it
    straight into its row (:func:`journal._import_lines.exported_row`) when it is within the
    store's caps; any other read as an event and prepared exactly as ``append`` prepares it."""
    # a text this short fits every cap, whatever its UTF-8 bytes (at most 4 per character)
    short, metadata_short = min(store.content_caps.values()) // 4, store.metadata_cap // 4
    batch = ImportBatch()
    rows, keep, keep_event = batch.rows, batch.rows.append, batch.events.append
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise EventLineError(number, "not UTF-8 text") from None
        read = exported_row(line, FOLD_READS)
        if read is not None:
            row, fields = read
            content, metadata = row[6], row[7]
            if (  # its texts (no float that the rules write otherwise), within the caps
                type(content) is str
                and type(metadata) is str
                and (
                    (len(content) <= short and len(metadata) <= metadata_short)
                    or not _over_caps(store, row)
                )
            ):
                keep(row)
                keep_event(fields)
            else:
                _add_prepared(store, batch, line, number)
        elif line.strip():
            _add_prepared(store, batch, line, number)
        if len(rows) >= batch_size:
            yield batch
            batch = ImportBatch()
            rows, keep, keep_event = batch.rows, batch.rows.append, batch.events.append
    if rows:
        yield batch


def _over_caps(store: SqliteEventStore, row: list[Any]) -> bool:
    """Whether the texts of ``row`` are over ``store``'s caps: ``prepare``'s test (UTF-8
    bytes, counted only when they may matter; an ``llm.end`` is capped like messages)."""
    content, metadata, cap = row[6], row[7], store.content_caps[row[4]]
    if row[5] == "llm.end":
        cap = store.content_caps["message"]
    return (len(content) > cap // 4 and len(content.encode()) > cap) or (
        len(metadata) > store.metadata_cap // 4 and len(metadata.encode()) > store.metadata_cap
    )


def _add_prepared(store: SqliteEventStore, batch: ImportBatch, line: str, number: int) -> None:
    """Read ``line`` as an event (the fast way if export wrote it, else checked) and add it
    to ``batch`` as the store's ``prepare`` makes it (cut to the caps, its texts encoded)."""
    read: tuple[NewEvent, Hint, Hint, int | None] | None = exported_line(line)
    event, content_kind, metadata_kind, seq = read or _parse_line(line, number)
    known = KnownEvents(handed_over=True)
    known.add(event, content_kind, metadata_kind)
    prepared = prepare_batch(known, store.content_caps, store.metadata_cap, records=True)
    batch.add_event(prepared[0], prepared.texts[0], seq)


def _parse_line(line: str, number: int) -> tuple[NewEvent, int, int, int | None]:
    """The event of a line, the kinds of its content and metadata, and its exported seq."""
    text = line.strip()
    return _usual_line(text) or _checked_line(text, number)


def _usual_line(text: str) -> tuple[NewEvent, int, int, int | None] | None:
    """A line as export writes it, read by orjson alone and checked by hand; ``None`` for
    anything else (then :func:`_checked_line` reads it, and says what is wrong).

    orjson's value of JSON text differs from the json module's only in numbers (it reads an
    int beyond 64 bits as a float): with ``PLAIN`` content and metadata (no float but those
    :func:`journal.encoding.same_float_text` trusts, none of them that big) it is exact;
    otherwise it is exact when it encodes back to the very text (as
    :func:`journal.encoding.loads` checks).
    """
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(raw) is not dict:
        return None
    seq = raw.pop("seq", _NO_SEQ)
    at = raw.get("created_at")
    if not (seq is _NO_SEQ or (type(seq) is int and seq >= 1)) or type(at) is not str:
        return None
    if not _EXPORTED_TIME.match(at):
        return None
    try:
        raw["created_at"] = datetime.fromisoformat(at)
    except ValueError:
        return None
    usual = usual_event(raw)
    if usual is None:
        return None
    event, content_kind, metadata_kind = usual
    if content_kind != PLAIN or metadata_kind != PLAIN:
        raw["created_at"] = at  # the line as read, to encode back
        if seq is not _NO_SEQ:
            raw["seq"] = seq
        if orjson.dumps(raw, option=orjson.OPT_SORT_KEYS) != text.encode():
            return None
    return event, content_kind, metadata_kind, seq if type(seq) is int else None


def _checked_line(text: str, number: int) -> tuple[NewEvent, int, int, int | None]:
    """Any line: the json module's reading of it (see :func:`journal.encoding.loads`), fully
    validated, or an :class:`EventLineError` saying what is wrong."""
    try:
        raw: Any = loads(text)  # a bare line: the fast reading applies
    except json.JSONDecodeError as e:
        raise EventLineError(number, f"not JSON ({e.msg} at column {e.colno})") from None
    except (RecursionError, MemoryError, ValueError) as e:  # too deep, too big a number
        raise EventLineError(number, f"not readable JSON ({type(e).__name__})") from None
    if not isinstance(raw, dict):
        raise EventLineError(
            number, f"expected a JSON object (one event), got {type(raw).__name__}"
        )
    seq = raw.pop("seq", None)
    if seq is not None and not (type(seq) is int and seq >= 1):
        raise EventLineError(
            number, f"not a valid event (seq: a positive integer or null, got {seq!r})"
        )
    at = raw.get("created_at")
    if type(at) is str and _EXPORTED_TIME.match(at):  # what export writes: parsed here, so
        with contextlib.suppress(ValueError):  # the event takes the fast path of from_mapping
            raw["created_at"] = datetime.fromisoformat(at)
    try:
        event, content_kind, metadata_kind = prepare_mapping(raw)
    except ValidationError as e:
        problems = [
            f"{'.'.join(str(part) for part in err['loc']) or 'event'}: {err['msg']}"
            for err in e.errors()[:3]
        ]
        raise EventLineError(number, f"not a valid event ({'; '.join(problems)})") from None
    except (ValueError, TypeError) as e:
        raise EventLineError(number, f"not a valid event ({e})") from None
    except (RecursionError, MemoryError) as e:
        raise EventLineError(number, f"not a valid event ({type(e).__name__})") from None
    return event, content_kind, metadata_kind, seq
