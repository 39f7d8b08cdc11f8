"""The run commands: ``runs`` (a thread's runs, newest first, paged) and ``usage``.

Thin wrappers of :func:`history.runs_page` and :func:`history.thread_usage`; the flags carry
their keyword names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
from rich.console import Group
from rich.text import Text

from history.cli._text import shorten
from history.cli.common import (
    emit_json,
    json_option,
    open_cli_store,
    out_console,
    store_option,
    table,
)
from history.runs import MAX_RUNS_LIMIT, runs_page, thread_usage

__all__ = ["RUN_COMMANDS"]

_PREVIEW = 40
_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens")


def _duration(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return "-"
    return f"{ms / 1000:.1f}s" if ms >= 1000 else f"{ms:.0f}ms"


def _tokens(usage: Mapping[str, Any]) -> str:
    total = int(usage.get("total_tokens") or 0)
    return f"{total:,}" if total else "-"


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option("--limit", type=click.IntRange(1, MAX_RUNS_LIMIT), default=20, show_default=True)
@click.option("--before-seq", type=click.IntRange(min=1), default=None, help="Older runs.")
@json_option
def runs(thread_id: str, store_url: str, limit: int, before_seq: int | None, as_json: bool) -> None:
    """List the runs of THREAD, newest first: status, start time (UTC), duration, tokens,
    models, and the first question and last answer of each (or its error).

    --json prints the page as runs_page returns it. Follow the printed --before-seq to
    page back.

    \b
    Example:
      runjournal runs support-42 --limit 5
    """
    with open_cli_store(store_url) as store:
        page = runs_page(store, thread_id, limit=limit, before_seq=before_seq)
    if as_json:
        emit_json(page)
        return
    grid = table("run_id", "status", "started", "took", "tokens", "models", "content")
    for run in page["runs"]:
        said = f"{shorten(run.get('first_human') or '', _PREVIEW)} → "
        said += shorten(run.get("last_ai") or "", _PREVIEW)
        if run.get("error_type"):
            said = f"{run['error_type']}: {shorten(run.get('error') or '', 60)} ({said})"
        grid.add_row(
            Text(run["run_id"]),
            Text(run["status"], style="red" if run["status"] == "error" else ""),
            str(run["started_at"])[11:19],
            _duration(run.get("duration_ms")),
            _tokens(run.get("usage") or {}),
            Text(", ".join(run.get("models") or ()) or "-"),
            Text(said, style="red" if run.get("error_type") else ""),
        )
    parts: list[Any] = [grid]
    if page["has_more"]:
        parts.append(Text(f"older runs: --before-seq {page['next_before_seq']}", style="dim"))
    out_console().print(Group(*parts))


def _bucket_table(title: str, buckets: Mapping[str, Mapping[str, int]]) -> Any:
    grid = table(title, "calls", *(k.removesuffix("_tokens") for k in _TOKEN_KEYS))
    for name, bucket in sorted(buckets.items(), key=lambda kv: -int(kv[1].get("total_tokens", 0))):
        grid.add_row(
            Text(name),
            str(bucket.get("calls", 0)),
            *(f"{int(bucket.get(k, 0)):,}" for k in _TOKEN_KEYS),
        )
    return grid


@click.command()
@click.argument("thread_id", metavar="THREAD")
@store_option
@click.option(
    "--run-limit",
    type=click.IntRange(0, MAX_RUNS_LIMIT),
    default=5,
    show_default=True,
    help="How many of the newest runs to show.",
)
@json_option
def usage(thread_id: str, store_url: str, run_limit: int, as_json: bool) -> None:
    """Show what the model calls of THREAD cost: tokens in total, by model (as the provider's
    response names it), by caller (agent, middleware, subagent) and for the newest runs.

    \b
    Example:
      runjournal usage support-42 --json
    """
    with open_cli_store(store_url) as store:
        report = thread_usage(store, thread_id, run_limit=run_limit)
    if as_json:
        emit_json(report)
        return
    totals = report["totals"]
    head = Text(
        f"{report['run_count']} runs, {totals.get('calls', 0)} model calls, "
        f"{int(totals.get('total_tokens', 0)):,} tokens "
        f"({int(totals.get('input_tokens', 0)):,} in, {int(totals.get('output_tokens', 0)):,} "
        f"out, {int(totals.get('cache_read_tokens', 0)):,} cache read)"
    )
    parts: list[Any] = [head, _bucket_table("model", report["by_model"])]
    parts.append(_bucket_table("caller", report["by_caller"]))
    if report["by_run"]:
        grid = table("run_id", "status", "models", "calls", "tokens")
        for run in report["by_run"]:
            grid.add_row(
                Text(run["run_id"]),
                run["status"],
                Text(", ".join(run["models"]) or "-"),
                str(run["llm_calls"]),
                _tokens(run["usage"]),
            )
        parts.append(grid)
    active = report["active_run"]
    if active is not None:
        parts.append(
            Text(f"running: {active['run_id']} ({_tokens(active['usage'])} tokens so far)")
        )
    out_console().print(Group(*parts))


RUN_COMMANDS = (runs, usage)
