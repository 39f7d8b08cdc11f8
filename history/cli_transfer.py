"""Moving events in and out of a store: ``export``, ``import``, ``recover``, ``copy``.

The export format is JSON Lines: one stored event a line (every field, ``seq`` included),
in seq order. ``import`` appends the lines in batches; each batch is all-or-nothing, and
``event_id`` makes a re-import store nothing twice.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO, Any

import click
from pydantic import ValidationError

from history.cli_common import (
    UserError,
    emit_json,
    err_console,
    json_option,
    open_cli_store,
    progress_bar,
    require_thread,
    store_option,
)
from journal.encoding import dumps
from journal.events import NewEvent

__all__ = ["TRANSFER_COMMANDS", "read_batches"]

_BATCH: int = 500


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write to this file instead of stdout.",
)
@click.option("--after-seq", type=click.IntRange(min=0), default=None, help="Events above this.")
def export(thread_id: str, store_url: str, output: Path | None, after_seq: int | None) -> None:
    """Write the events of THREAD as JSON Lines (one event a line, seq order).

    'runjournal import' reads the file back; into an empty store it reproduces the events
    exactly (ids, seqs, timestamps, content).
    """
    with open_cli_store(store_url) as store:
        last = require_thread(store, thread_id)
        try:
            sink = output.open("w", encoding="utf-8") if output else nullcontext(sys.stdout)
        except OSError as e:
            raise UserError(f"cannot write {output}: {e.strerror}") from e
        # Events printed on a terminal would tear through a bar drawn on the same screen.
        shown = output is not None or not sys.stdout.isatty()
        with (
            sink as out,
            progress_bar(err_console(), "export", last - (after_seq or 0), enabled=shown) as bar,
        ):
            for event in store.iter_events(thread_id, after_seq=after_seq):
                out.write(dumps(event.model_dump(mode="json")) + "\n")
                bar.advance(bar.task_ids[0])


Batch = list[tuple[NewEvent, int | None]]


def read_batches(lines: IO[bytes], batch_size: int) -> Iterator[Batch]:
    """Parse JSON Lines (UTF-8) into batches of (event, exported seq or None).

    A line that is not a valid event raises :class:`UserError` naming its line number before
    its batch is yielded, so nothing of that batch is written. Blank lines are skipped.
    """
    batch: Batch = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"line {number}: not UTF-8 text") from None
        if not line.strip():
            continue
        batch.append(_parse_line(line, number))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _parse_line(line: str, number: int) -> tuple[NewEvent, int | None]:
    try:
        raw: Any = json.loads(line)
    except json.JSONDecodeError as e:
        raise UserError(f"line {number}: not JSON ({e.msg} at column {e.colno})") from None
    except (RecursionError, MemoryError, ValueError) as e:  # too deep, too big a number
        raise UserError(f"line {number}: not readable JSON ({type(e).__name__})") from None
    if not isinstance(raw, dict):
        raise UserError(
            f"line {number}: expected a JSON object (one event), got {type(raw).__name__}"
        )
    seq = raw.pop("seq", None)
    try:
        return NewEvent(**raw), seq if isinstance(seq, int) else None
    except ValidationError as e:
        problems = [
            f"{'.'.join(str(part) for part in err['loc']) or 'event'}: {err['msg']}"
            for err in e.errors()[:3]
        ]
        raise UserError(f"line {number}: not a valid event ({'; '.join(problems)})") from None
    except (ValueError, TypeError) as e:
        raise UserError(f"line {number}: not a valid event ({e})") from None
    except (RecursionError, MemoryError) as e:
        raise UserError(f"line {number}: not a valid event ({type(e).__name__})") from None


@click.command(name="import")
@click.argument("file", type=click.Path(allow_dash=True, path_type=Path))
@store_option
@click.option("--batch-size", type=click.IntRange(min=1), default=_BATCH, show_default=True)
@json_option
def import_(file: Path, store_url: str, batch_size: int, as_json: bool) -> None:
    """Append the events of a JSON Lines FILE ('-' for stdin) to the store.

    Batches are all-or-nothing: a malformed line is reported with its line number and
    nothing of its batch is imported (earlier batches stay; a re-run after the fix stores
    nothing twice, since event ids are the idempotency key, and counts those events as
    already present).
    """
    name = "stdin" if str(file) == "-" else str(file)
    imported = present = renumbered = 0
    with (
        _open_input(file) as lines,
        open_cli_store(store_url, create=True) as store,
        progress_bar(err_console(), "import", _size_of(file)) as bar,
    ):
        try:
            for batch in read_batches(lines, batch_size):
                # An event already stored keeps its record: its seq is at or below its
                # thread's last seq (its thread may even differ from the line's).
                last = {t: store.last_seq(t) for t in {event.thread_id for event, _ in batch}}
                stored = store.append([event for event, _ in batch])
                for s, (_, seq) in zip(stored, batch, strict=True):
                    if s.seq <= last.get(s.thread_id, s.seq):
                        present += 1
                        continue
                    imported += 1
                    renumbered += seq is not None and s.seq != seq
                bar.update(bar.task_ids[0], completed=_position(lines))
        except UserError as e:
            done = f" ({imported} events of earlier lines were imported)" if imported else ""
            raise UserError(
                f"{name}: {e.message}; nothing of its batch was imported{done}"
            ) from None
    if as_json:
        emit_json(
            {
                "source": name,
                "imported": imported,
                "already_present": present,
                "renumbered": renumbered,
            }
        )
        return
    notes = err_console()
    there = f" ({present} were already in the store)" if present else ""
    notes.print(f"imported {imported} events from {name}{there}")
    if renumbered:
        notes.print(
            f"note: {renumbered} events got another seq than in the file "
            "(their thread already had other events in this store)"
        )


@contextmanager
def _open_input(path: Path) -> Iterator[IO[bytes]]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        file = path.open("rb")
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    with file:
        yield file


def _size_of(path: Path) -> int | None:
    try:
        return None if str(path) == "-" else path.stat().st_size
    except OSError:
        return None


def _position(file: IO[bytes]) -> int | None:
    try:
        return file.tell()
    except (OSError, ValueError):
        return None


@click.command()
@click.argument("spool", type=click.Path(path_type=Path))
@store_option
@click.option("--batch-size", type=click.IntRange(min=1), default=_BATCH, show_default=True)
@click.option(
    "--remove/--no-remove",
    default=True,
    show_default=True,
    help="Delete the spool file once every event is stored.",
)
@json_option
def recover(spool: Path, store_url: str, batch_size: int, remove: bool, as_json: bool) -> None:
    """Replay a RunJournal spool file (events it could not write) into the store.

    Events keep their ids and timestamps and are stored in spool order; an event already in
    the store is not stored twice, so re-running is safe. Stored lines leave the file; a line
    that is not a spooled event (torn, too deep, invalid) is named by its number and stays,
    as do lines a running app appends meanwhile (both sides lock the file). On a store
    failure the file stays as it was; a file without any spooled event is a user error.
    """
    from journal.spool import recover_spool

    if not spool.is_file():
        raise UserError(f"no spool file at {spool}")
    with (
        open_cli_store(store_url, create=True) as store,
        progress_bar(err_console(), "recover", _spool_lines(spool)) as bar,
    ):
        done = recover_spool(
            spool,
            store,
            batch_size=batch_size,
            remove=remove,
            progress=lambda count: bar.advance(bar.task_ids[0], count),
        )
    if done.skipped_lines and not done.events:
        raise UserError(
            f"{spool}: none of its {done.skipped_lines} lines is a spooled event "
            "(is it a RunJournal spool file?); the file was kept"
        )
    if as_json:
        emit_json(
            {
                "spool": str(spool),
                "recovered": done.events,
                "skipped": done.skipped_lines,
                "bad_lines": list(done.bad_lines),
                "removed": done.removed,
            }
        )
    else:
        err_console().print(f"recovered {done.events} events from {spool}")
    if done.skipped_lines:
        numbers = ", ".join(map(str, done.bad_lines[:20])) + (
            ", ..." if len(done.bad_lines) > 20 else ""
        )
        err_console().print(
            f"note: line {numbers} of {spool} (as read) are not spooled events (torn by a "
            "crash? too deep?); they were kept in the file: look at them, then delete it"
        )


def _spool_lines(path: Path) -> int:
    """The non-blank lines of a spool file: the progress bar's total."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        return sum(1 for line in lines if line.strip())


@click.command()
@click.option("--from", "source_url", required=True, metavar="URL", help="Store to copy from.")
@click.option("--to", "target_url", required=True, metavar="URL", help="Store to copy into.")
@click.option(
    "--thread-id", "thread_ids", multiple=True, help="Copy only this thread (repeatable)."
)
@click.option("--batch-size", type=click.IntRange(min=1), default=_BATCH, show_default=True)
@json_option
def copy(
    source_url: str, target_url: str, thread_ids: tuple[str, ...], batch_size: int, as_json: bool
) -> None:
    """Copy threads from one store to another, keeping their seqs, event ids and timestamps.

    Every thread by default, or the --thread-id ones. Re-running copies nothing twice; a
    target thread that is not a prefix of its source is reported and left untouched.
    """
    from journal.copy import copy_store

    with (
        open_cli_store(source_url) as source,
        open_cli_store(target_url, create=True) as target,
    ):
        wanted = set(thread_ids)
        for thread_id in thread_ids:
            require_thread(source, thread_id)  # a mistyped id is an error, not "0 copied"
        total = sum(
            t.event_count for t in source.list_threads() if not wanted or t.thread_id in wanted
        )
        with progress_bar(err_console(), "copy", total) as bar:
            summary = copy_store(
                source,
                target,
                thread_ids=thread_ids or None,
                batch_size=batch_size,
                progress=lambda _thread, count: bar.advance(bar.task_ids[0], count),
            )
    if as_json:
        emit_json(dataclasses.asdict(summary))
        return
    err_console().print(
        f"copied {summary.copied} events of {summary.threads} threads "
        f"({summary.already_present} were already there)"
    )


TRANSFER_COMMANDS = (export, import_, recover, copy)
