"""The reading commands: ``threads``, ``history``, ``events``, ``replay``, ``verify``.

Each is a thin wrapper of a library call; its flags carry the call's keyword names.
"""

from __future__ import annotations

from typing import Any, cast

import click
from rich.table import Table
from rich.text import Text

from history.cli._text import shorten
from history.cli.common import (
    emit_json,
    json_option,
    open_cli_store,
    out_console,
    require_thread,
    store_option,
    table,
)
from history.cli.render import content_text, render_messages, render_timeline
from history.timeline import MAX_PAGE_LIMIT, build_timeline
from journal.encoding import to_jsonable
from journal.events import CATEGORIES, RunEvent

__all__ = ["READ_COMMANDS"]

_PREVIEW: int = 60


@click.command()
@store_option
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most this many.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@json_option
def threads(store_url: str, limit: int | None, offset: int, as_json: bool) -> None:
    """List the threads of the store, most recently active first.

    \b
    Example:
      runjournal threads --limit 20 --store sqlite:///runjournal.db
    """
    with open_cli_store(store_url) as store:
        found = store.list_threads(limit=limit, offset=offset)
    if as_json:
        emit_json([t.model_dump(mode="json") for t in found])
        return
    grid = table("thread_id", "events", "runs", "last_seq", "last event at")
    for t in found:
        grid.add_row(
            Text(t.thread_id),
            str(t.event_count),
            str(t.run_count),
            str(t.last_seq),
            t.last_event_at.isoformat(timespec="seconds"),
        )
    out_console().print(grid if found else Text("no threads in this store"))


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option("--before-seq", type=click.IntRange(min=1), default=None, help="Items below this.")
@click.option("--limit", type=click.IntRange(1, MAX_PAGE_LIMIT), default=50, show_default=True)
@click.option(
    "--include-markers/--no-include-markers",
    default=True,
    show_default=True,
    help="Show where a summarization condensed the context.",
)
@click.option(
    "--include-hidden/--no-include-hidden",
    default=False,
    show_default=True,
    help="Also show messages added with hide_from_ui (injected context), marked hidden.",
)
@click.option("--run-id", default=None, help="Only the items of this run.")
@json_option
def history(
    thread_id: str,
    store_url: str,
    before_seq: int | None,
    limit: int,
    include_markers: bool,
    include_hidden: bool,
    run_id: str | None,
    as_json: bool,
) -> None:
    """Show the conversation of THREAD: messages, folded tool calls, condensed blocks.

    Without --before-seq, the newest --limit items; follow the printed --before-seq to page
    back. Hidden context (hide_from_ui) is left out unless --include-hidden. --json prints
    the page as build_timeline returns it.

    \b
    Example:
      runjournal history support-42 --limit 100 --include-hidden
    """
    with open_cli_store(store_url) as store:
        page = build_timeline(
            store,
            thread_id,
            before_seq=before_seq,
            limit=limit,
            include_markers=include_markers,
            include_hidden=include_hidden,
            run_id=run_id,
        )
    if as_json:
        emit_json(page)
        return
    out_console().print(render_timeline(page))


def _preview(event: RunEvent) -> str:
    """One line of an event's content: a message's text, else compact JSON."""
    content = event.content
    if event.category == "message" and isinstance(content, dict):
        content = content.get("data", {}).get("content", content)
    return shorten(content_text(content), _PREVIEW)


def _event_row(table: Table, event: RunEvent) -> None:
    table.add_row(
        str(event.seq),
        event.created_at.strftime("%H:%M:%S.%f")[:-3],
        Text(event.run_id[:8]),
        # one line each, their columns shrinking first on a narrow terminal (a middleware's
        # event type is long): the seq and the run stay whole
        Text(event.event_type, no_wrap=True, overflow="ellipsis"),
        Text(_preview(event), no_wrap=True, overflow="ellipsis"),
    )


def _filter(values: tuple[str, ...]) -> tuple[str, ...] | None:
    return values or None


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option("--after-seq", type=click.IntRange(min=0), default=None, help="Events above this.")
@click.option("--before-seq", type=click.IntRange(min=0), default=None, help="Events below this.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option(
    "--category",
    multiple=True,
    type=click.Choice(sorted(CATEGORIES)),
    help="Keep this category (repeatable).",
)
@click.option("--event-type", multiple=True, help="Keep this event type (repeatable).")
@click.option("--run-id", multiple=True, help="Keep this run (repeatable).")
@json_option
def events(
    thread_id: str,
    store_url: str,
    after_seq: int | None,
    before_seq: int | None,
    limit: int | None,
    category: tuple[str, ...],
    event_type: tuple[str, ...],
    run_id: tuple[str, ...],
    as_json: bool,
) -> None:
    """List the raw events of THREAD in seq order, with cursors and filters.

    With --before-seq, --limit keeps the last events below it (the page just below).

    \b
    Example:
      runjournal events support-42 --category middleware --json
    """
    with open_cli_store(store_url) as store:
        require_thread(store, thread_id)
        found = store.read(
            thread_id,
            after_seq=after_seq,
            before_seq=before_seq,
            limit=limit,
            category=_filter(category),
            event_type=_filter(event_type),
            run_id=_filter(run_id),
        )
    if as_json:
        emit_json([e.model_dump(mode="json") for e in found])
        return
    grid = table("seq", "time (UTC)", "run", "event_type", "content")
    for event in found:
        _event_row(grid, event)
    out_console().print(grid if found else Text("no event matches"))


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option("--upto-seq", type=click.IntRange(min=1), default=None, help="Replay up to this seq.")
@click.option(
    "--view",
    type=click.Choice(["full", "state", "model"]),
    default="full",
    show_default=True,
    help="full: every message ever added; state: the thread state's messages; model: the "
    "input of the last agent model call.",
)
@json_option
def replay(thread_id: str, store_url: str, upto_seq: int | None, view: str, as_json: bool) -> None:
    """Rebuild the messages of THREAD from its events.

    --view model shows exactly what the last agent model call at or before --upto-seq
    received (system message and request-only edits included); --view state the thread
    state's messages there (the summary message in place of what it condensed); --view full
    every message ever added. --json prints the messages in LangChain's dict form.

    \b
    Example:
      runjournal replay support-42 --view model --upto-seq 120
    """
    from history._replay import ReplayView
    from history._replay import replay as replay_thread

    with open_cli_store(store_url) as store:
        messages = replay_thread(store, thread_id, upto_seq=upto_seq, view=cast("ReplayView", view))
    if as_json:
        from journal.messages import message_to_content

        payload: list[Any] = [to_jsonable(message_to_content(m)) for m in messages]
        emit_json(payload)
        return
    out_console().print(render_messages(messages))


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@json_option
def verify(thread_id: str, store_url: str, as_json: bool) -> None:
    """Check that replay rebuilds every agent model call of THREAD exactly.

    Compares each call's rebuilt input with the digests recorded when it was made, and names
    every message that diverges, and every message the thread's last state names but no event
    holds. Exits 1 if any call diverged or the state misses a message.

    \b
    Example:
      runjournal verify support-42 --json
    """
    from history._verify import verify as verify_thread

    with open_cli_store(store_url) as store:
        report = verify_thread(store, thread_id)
    if as_json:
        emit_json(report)
    else:
        console = out_console()
        grid = table("seq", "run_id", "model", "messages", "status", "problems")
        for call in report["results"]:
            problems = "; ".join(
                f"#{p['index']} {p['message_id'] or '-'}: {p['reason']}" for p in call["problems"]
            )
            grid.add_row(
                str(call["seq"]),
                call["run_id"],
                str(call["model"] or ""),
                str(call["message_count"]),
                call["status"],
                shorten(problems, 80),
            )
        console.print(grid)
        console.print(
            f"{report['calls']} agent model calls: {report['exact']} exact, "
            f"{report['diverged']} diverged, {report['unrecorded']} without a record"
        )
        if report["state_missing"]:
            missing = ", ".join(report["state_missing"])
            console.print(shorten(f"state messages never journaled: {missing}", 80))
    if not report["ok"]:
        raise SystemExit(1)


READ_COMMANDS = (threads, history, events, replay, verify)
