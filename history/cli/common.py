"""What every ``runjournal`` command shares: options, opening the store, output, user errors.

A user error (unknown thread, bad store URL, unreadable file, a store failure) is raised as a
:class:`UserError`; the entry point prints it as one line on stderr and exits 1, with no
traceback.

What the commands print on stdout carries stored text (messages, tool outputs, errors, model
names), which may come from anywhere a tool read: :func:`out_console` drops the characters a
terminal would obey instead of show (escape sequences, other controls, bidirectional
overrides), so stored text can never retitle, clear or recolour the reader's terminal.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click
from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment

from journal._logging import LOGGER_PREFIX
from journal.store import RunEventStore
from journal.urls import DEFAULT_STORE_URL, open_store

if TYPE_CHECKING:
    from rich.progress import Progress
    from rich.table import Table

__all__ = [
    "STORE_ENV",
    "UserError",
    "emit_json",
    "err_console",
    "json_option",
    "open_cli_store",
    "out_console",
    "progress_bar",
    "require_thread",
    "setup_logging",
    "store_option",
    "table",
]

#: The environment variable that names the default store.
STORE_ENV: Final = "RUNJOURNAL_STORE"

F = TypeVar("F", bound=Callable[..., Any])


class UserError(click.ClickException):
    """A mistake the user can fix; printed as one line on stderr, exit status 1."""

    def show(self, file: Any = None) -> None:
        """Print ``runjournal: error: <message>`` on stderr."""
        click.echo(f"runjournal: error: {self.format_message()}", err=True)


def store_option(func: F) -> F:
    """The ``--store URL`` option (default ``$RUNJOURNAL_STORE``, else the library default)."""
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        envvar=STORE_ENV,
        default=DEFAULT_STORE_URL,
        show_default=True,
        show_envvar=True,
        help="The store: sqlite:///path.db, postgresql://user@host:port/db or memory://.",
    )(func)


def json_option(func: F) -> F:
    """The ``--json`` flag: machine-readable output on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


#: What a terminal would act on rather than show: C0 controls but newline and tab, DEL, C1
#: controls, and the bidirectional overrides and isolates that reorder what is shown.
_UNSHOWN: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class _Shown:
    """``inner`` drawn as rich draws it, without the :data:`_UNSHOWN` characters of its text.

    Rich measures those characters as zero cells wide, so dropping them after the layout
    keeps every column aligned; rich's own control segments pass unchanged.
    """

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control is None and _UNSHOWN.search(segment.text):
                yield Segment(_UNSHOWN.sub("", segment.text), segment.style)
            else:
                yield segment


class _DropControls(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Shown(renderable) for renderable in renderables]


def out_console() -> Console:
    """The console of normal output (stdout); markup, emoji codes and highlighting are off.

    Printed strings carry thread ids, store URLs and file names: shown as typed, never parsed;
    stored text is shown without the characters a terminal would obey (module docstring).
    """
    console = Console(highlight=False, markup=False, emoji=False)
    console.push_render_hook(_DropControls())
    return console


def err_console() -> Console:
    """The console of notes and progress bars (stderr); plain text as :func:`out_console`."""
    return Console(stderr=True, highlight=False, markup=False, emoji=False)


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def setup_logging(verbose: bool) -> None:
    """Send logs to stderr: runjournal's warnings and drivers' errors, or all info (verbose).

    The library logs on the standard ``runjournal.*`` loggers and adds no handler; this composition
    root is where their output gets a place and a format.
    """
    # Drivers (psycopg's pool, uvicorn) warn on every retry; the user gets our one-line error.
    driver_level = logging.INFO if verbose else logging.ERROR
    logging.basicConfig(
        level=driver_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger(LOGGER_PREFIX).setLevel(logging.INFO if verbose else logging.WARNING)


def _sqlite_file(url: str) -> Path | None:
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() == "sqlite" and rest.startswith("/") and rest != "/":
        return Path(rest[1:])
    return None


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _foreign_sqlite(path: Path) -> bool:
    """Whether ``path`` is a SQLite database with tables but no runjournal schema (a file
    that is no SQLite database is left to the store, which says so)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(names) and "schema_version" not in names


@contextmanager
def open_cli_store(url: str, *, create: bool = False) -> Iterator[RunEventStore]:
    """Open the store ``url`` names and close it afterwards.

    Without ``create``, a SQLite file that does not exist (or is empty) is a user error
    (reading must not leave an empty database behind), and so is a database of other tables
    only (reading must not write runjournal's tables into it). Bad URLs and store failures become
    :class:`UserError`.
    """
    path = _sqlite_file(url)
    if path is not None and not create and (not path.exists() or _empty_file(path)):
        raise UserError(
            f"no store at {path} ({url}); run `runjournal demo` to make one, "
            f"or pass --store / set ${STORE_ENV}"
        )
    if path is not None and not create and _foreign_sqlite(path):
        raise UserError(
            f"{path} is a SQLite database without runjournal's tables: not a runjournal store"
        )
    try:
        store = open_store(url)
    except ValueError as e:
        raise UserError(f"bad store URL: {e}") from e
    try:
        yield store
    finally:
        store.close()


def require_thread(store: RunEventStore, thread_id: str) -> int:
    """The thread's last seq; a :class:`UserError` if the store has no event for it."""
    last = store.last_seq(thread_id)
    if last == 0:
        raise UserError(
            f"thread {thread_id!r} has no events in this store; `runjournal threads` lists them"
        )
    return last


def progress_bar(
    console: Console, description: str, total: int | None, *, enabled: bool = True
) -> Progress:
    """A progress bar on ``console``, drawn only when ``enabled`` and it is a terminal."""
    from rich.progress import (  # only the transfer commands draw one
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not (enabled and console.is_terminal),
        transient=True,
    )
    progress.add_task(description, total=total)
    return progress


#: Columns that fold on a narrow terminal (ids and texts); the others never wrap.
_FOLDING: Final = frozenset(
    {"thread_id", "run_id", "run", "event_type", "content", "model", "models", "problems"}
)


def table(*columns: str) -> Table:
    """A table whose ids and contents fold on a narrow terminal; numbers and times never do."""
    from rich.table import Table

    made = Table(show_edge=False, header_style="bold")
    for column in columns:
        if column in _FOLDING:
            made.add_column(column, overflow="fold")
        else:
            made.add_column(column, no_wrap=True)
    return made
