"""Moving events in and out of a store: ``export``, ``import``, ``recover``, ``copy``.

Each command wraps one library function: :func:`journal.transfer.export_events` and
:func:`~journal.transfer.import_events` (JSON Lines, one stored event a line, batches
all-or-nothing, ``event_id`` the idempotency key), :func:`journal.spool.recover_spool` and
:func:`journal.copy.copy_store`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO

import click

from history.cli.common import (
    UserError,
    emit_json,
    err_console,
    json_option,
    open_cli_store,
    progress_bar,
    require_thread,
    store_option,
)
from journal.transfer import DEFAULT_BATCH_SIZE, EventLineError, export_events, import_events

__all__ = ["TRANSFER_COMMANDS"]

_BATCH: int = DEFAULT_BATCH_SIZE


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

    \b
    Example:
      runjournal export support-42 -o support-42.jsonl
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
            export_events(
                store,
                thread_id,
                out,
                after_seq=after_seq,
                progress=lambda count: bar.advance(bar.task_ids[0], count),
            )


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

    \b
    Example:
      runjournal import support-42.jsonl --store postgresql://app@db/runjournal
    """
    name = "stdin" if str(file) == "-" else str(file)
    with (
        _open_input(file) as lines,
        open_cli_store(store_url, create=True) as store,
        progress_bar(err_console(), "import", _size_of(file)) as bar,
    ):
        try:
            summary = import_events(
                store,
                lines,
                batch_size=batch_size,
                progress=lambda _: bar.update(bar.task_ids[0], completed=_position(lines)),
            )
        except EventLineError as e:
            done = f" ({e.imported_before} events of earlier lines were imported)"
            raise UserError(
                f"{name}: {e}; nothing of its batch was imported{done if e.imported_before else ''}"
            ) from None
    imported, present, renumbered = summary.imported, summary.already_present, summary.renumbered
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
    failure the file stays as it was. A file whose lines hold no spooled event is a user
    error; an empty file recovers nothing and is left as it is.

    \b
    Example:
      runjournal recover runjournal-spool-app.db-0123456789ab.jsonl
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

    \b
    Example:
      runjournal copy --from sqlite:///runjournal.db --to postgresql://app@db/runjournal
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
