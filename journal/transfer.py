"""Moving one thread's events out of a store and back in, as JSON Lines.

The format: one stored event a line (every field, ``seq`` included), in seq order.
:func:`export_events` writes it; :func:`import_events` appends such lines in batches, each
all-or-nothing, and ``event_id`` makes a re-import store nothing twice. ``runjournal export`` and
``runjournal import`` are thin wrappers of these two.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from pydantic import ValidationError

from journal.encoding import dumps, loads
from journal.events import NewEvent
from journal.store import RunEventStore

__all__ = ["EventLineError", "ImportSummary", "export_events", "import_events", "read_batches"]

DEFAULT_BATCH_SIZE = 500
#: ``created_at`` as :func:`export_events` writes it (UTC, ``Z``, at most microseconds): a
#: form whose ``datetime.fromisoformat`` value is exactly pydantic's.
_EXPORTED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z\Z", re.ASCII)

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
        out.write(dumps(event.model_dump(mode="json")) + "\n")
        written += 1
        if progress is not None:
            progress(1)
    return written


def read_batches(lines: Iterable[bytes], batch_size: int) -> Iterator[Batch]:
    """Parse JSON Lines (UTF-8) into batches of (event, exported seq or None).

    A line that is not a valid event raises :class:`EventLineError` before its batch is
    yielded, so nothing of that batch is written. Blank lines are skipped.
    """
    batch: Batch = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise EventLineError(number, "not UTF-8 text") from None
        if not line.strip():
            continue
        batch.append(_parse_line(line, number))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def import_events(
    store: RunEventStore,
    lines: Iterable[bytes],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[ImportSummary], None] | None = None,
) -> ImportSummary:
    """Append the events of JSON Lines ``lines`` to ``store`` in all-or-nothing batches.

    An event already stored (same ``event_id``) counts as already present and is not stored
    twice. A bad line raises :class:`EventLineError`; the batches before it stay stored (its
    ``imported_before`` attribute says how many events). ``progress`` gets the running summary
    after each batch.
    """
    imported = present = renumbered = 0
    try:
        for batch in read_batches(lines, batch_size):
            # An event already stored keeps its record: its seq is at or below its thread's
            # last seq (its thread may even differ from the line's).
            last = {t: store.last_seq(t) for t in {event.thread_id for event, _ in batch}}
            stored = store.append([event for event, _ in batch])
            for record, (_, seq) in zip(stored, batch, strict=True):
                if record.seq <= last.get(record.thread_id, record.seq):
                    present += 1
                    continue
                imported += 1
                renumbered += seq is not None and record.seq != seq
            if progress is not None:
                progress(ImportSummary(imported, present, renumbered))
    except EventLineError as e:
        e.imported_before = imported
        raise
    return ImportSummary(imported, present, renumbered)


def _parse_line(line: str, number: int) -> tuple[NewEvent, int | None]:
    try:
        raw: Any = loads(line.strip())  # a bare line: the fast reading applies
    except json.JSONDecodeError as e:
        raise EventLineError(number, f"not JSON ({e.msg} at column {e.colno})") from None
    except (RecursionError, MemoryError, ValueError) as e:  # too deep, too big a number
        raise EventLineError(number, f"not readable JSON ({type(e).__name__})") from None
    if not isinstance(raw, dict):
        raise EventLineError(
            number, f"expected a JSON object (one event), got {type(raw).__name__}"
        )
    seq = raw.pop("seq", None)
    at = raw.get("created_at")
    if type(at) is str and _EXPORTED_TIME.match(at):  # what export writes: parsed here, so
        with contextlib.suppress(ValueError):  # the event takes the fast path of from_mapping
            raw["created_at"] = datetime.fromisoformat(at)
    try:
        return NewEvent.from_mapping(raw), seq if isinstance(seq, int) else None
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
