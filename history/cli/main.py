"""``runjournal``: the command line of the run journal (a composition root).

Every command takes ``--store URL`` (default ``$RUNJOURNAL_STORE``, else
``sqlite:///runjournal.db``); flags carry the library's keyword names; ``--json`` prints
machine-readable output. This module alone reads the environment, configures logging and
picks the backend (through ``journal.open_store``). A user error — an unknown thread, a bad
store URL, an unreadable file, a store failure — prints one line on stderr and exits 1,
without a traceback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from typing import Any, Final
from urllib.parse import quote

import click

from history.cli.common import (
    UserError,
    err_console,
    open_cli_store,
    out_console,
    setup_logging,
    store_option,
)
from history.cli.read import READ_COMMANDS
from history.cli.runs import RUN_COMMANDS
from history.cli.transfer import TRANSFER_COMMANDS
from journal.errors import JournalError
from journal.urls import DEFAULT_STORE_URL

__all__ = ["cli", "main"]

#: What a command may raise that is the user's to fix, not a bug.
_USER_ERRORS: Final = (JournalError, ValueError, LookupError, OSError)
_DEMO_PAGE: Final = 1000


class _Cli(click.Group):
    """A group that turns library errors into one-line user errors (unless --verbose)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, BrokenPipeError):
            raise
        except _USER_ERRORS as e:
            if ctx.params.get("verbose"):
                raise  # --verbose: the whole story, traceback included
            raise UserError(_one_line(e)) from e


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return lines[0] if len(lines) == 1 else f"{lines[0]} {' '.join(lines[1:3])}"


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--verbose", "-v", is_flag=True, help="Log info on stderr; show tracebacks of errors."
)
def cli(verbose: bool) -> None:
    """Read, replay and move the events that RunJournal recorded for LangGraph agents.

    \b
    Example:
      runjournal demo && runjournal history demo-trip
    """
    setup_logging(verbose)


for _command in (*READ_COMMANDS, *RUN_COMMANDS, *TRANSFER_COMMANDS):
    cli.add_command(_command)


@cli.command()
@store_option
@click.option("--thread-id", default="demo-trip", show_default=True, help="Thread to write.")
def demo(store_url: str, thread_id: str) -> None:
    """Run the offline demo agent, journal it into the store and print its timeline.

    A real create_agent travel assistant with two tools, a scripted model and
    TrackingSummarizationMiddleware (an extractive summarizer, low trigger): 4 runs, 3
    compactions. No network, no API key; an earlier thread of the same id is replaced.

    \b
    Example:
      runjournal demo --store sqlite:///demo.db
    """
    from history.cli.demo import DEMO_TURNS, run_demo
    from history.cli.render import render_timeline
    from history.timeline import build_timeline

    notes = err_console()
    notes.print(f"running the demo agent ({len(DEMO_TURNS)} turns) into {store_url} …")
    with open_cli_store(store_url, create=True) as store:
        result = run_demo(store, thread_id=thread_id)
        page = build_timeline(store, thread_id, limit=_DEMO_PAGE)
        markers = sum(1 for item in page["items"] if item["type"] == "summary_marker")
        events = store.last_seq(thread_id)
    if result.spooled:
        notes.print(
            f"{result.spooled} events could not be stored and wait in {result.spool_path}; "
            f"`runjournal recover {result.spool_path}` stores them"
        )
    out = out_console()
    out.rule(f"thread {thread_id}")
    out.print(render_timeline(page))
    out.rule()
    if store_url.lower().startswith("memory:"):
        out.print(
            f"{len(result.run_ids)} runs, {events} events, {markers} compactions journaled "
            "into memory://, which is gone now: pass a sqlite:/// --store to look again.",
            soft_wrap=True,
        )
        return
    me, thread = command_name(), shlex.quote(thread_id)
    store_flag = "" if store_url == DEFAULT_STORE_URL else f" --store {shlex.quote(store_url)}"
    out.print(
        f"{len(result.run_ids)} runs, {events} events, {markers} compactions journaled.\n"
        f"Look again:   {me} history {thread}{store_flag}\n"
        f"Replay:       {me} replay {thread} --view model{store_flag}\n"
        f"In a browser: {me} serve{store_flag}  then open "
        f"http://127.0.0.1:8000/threads/{quote(thread_id, safe='')}",
        soft_wrap=True,
    )


@cli.command()
@store_option
def migrate(store_url: str) -> None:
    """Create or upgrade the store's schema to this runjournal's version (deploy time).

    Run it as the role that owns the schema; app servers then open the store with
    open_store(url, migrate=False) and need no right to change it. Safe to run again and
    from several machines at once: it applies only what is missing. (A SQLite file is
    brought up to date by whoever opens it; this creates it if it is missing.)

    \b
    Example:
      runjournal migrate --store postgresql://runjournal_owner@db.internal/runjournal
    """
    with open_cli_store(store_url, create=True) as store:
        applied = int(getattr(store, "migrations_applied", 0))
        setup = getattr(store, "setup", None)
        if callable(setup):
            applied += int(setup())
            from journal._postgres_schema import SCHEMA_VERSION

            version = f"version {SCHEMA_VERSION}"
        else:
            version = "this runjournal's version"
    plural = "" if applied == 1 else "s"
    out_console().print(f"schema at {version}: {applied} migration{plural} applied")


def command_name(argv0: str | None = None) -> str:
    """How to run this program again from a shell: ``runjournal`` if PATH finds this very
    program, else the path it was started by (``.venv/bin/runjournal`` after scripts/demo.sh).
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) != "runjournal":
        return "runjournal"  # python -m history.cli, or a test runner
    found = shutil.which("runjournal")
    if found is not None and os.path.realpath(found) == os.path.realpath(argv0):
        return "runjournal"
    return shlex.quote(argv0)


@cli.command()
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--token",
    envvar="RUNJOURNAL_TOKEN",
    show_envvar=True,
    default=None,
    help="Require this bearer token on every request.",
)
@click.option(
    "--cors-origins", multiple=True, help="Origin allowed to call the API (repeatable; * = any)."
)
@click.option("--log-level", default="info", show_default=True, help="uvicorn's log level.")
def serve(
    store_url: str,
    host: str,
    port: int,
    token: str | None,
    cors_origins: tuple[str, ...],
    log_level: str,
) -> None:
    """Serve the HTTP API and the web viewer of the store until Ctrl-C.

    The viewer lists threads at / and shows one at /threads/THREAD; the JSON API is under
    /api (OpenAPI at /docs).

    \b
    Example:
      runjournal serve --port 8000 --token "$RUNJOURNAL_TOKEN"
    """
    from history.server.app import create_app
    from history.server.run import bind_socket, make_server

    # The app and the socket first: a bad token or a port in use is one line, nothing served.
    with open_cli_store(store_url) as store:
        app = create_app(store, token=token, cors_origins=cors_origins)
        with bind_socket(host, port) as sock:
            bound = sock.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL
            err_console().print(f"serving {store_url} on http://{shown}:{bound}/ (Ctrl-C stops)")
            make_server(app, host=host, port=bound, log_level=log_level).run(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    """The console script: run the command line, exit with its status."""
    try:
        cli.main(args=argv, prog_name="runjournal")
    except BrokenPipeError:
        # The reader of our output went away (`runjournal export T | head`): stop quietly,
        # and keep Python from complaining again while it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover - `python -m history.cli`
    main()
