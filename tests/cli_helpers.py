"""Running the ``runjournal`` command line through its real entry point, in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: no inherited store, a fixed terminal width."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNJOURNAL_")}
    env.update({"COLUMNS": "120", "PYTHONPATH": str(ROOT), **extra})
    return env


def run_cli(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m history.cli ARGS`` and return the finished process (never raises)."""
    return subprocess.run(
        [sys.executable, "-m", "history.cli", *map(str, args)],
        cwd=cwd or ROOT,
        env=env or cli_env(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_json(*args: str | Path, **kwargs: Any) -> Any:
    """Run a command with ``--json``; assert it succeeded and return its parsed output."""
    done = run_cli(*args, "--json", **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_user_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """Assert a one-line ``runjournal: error:`` on stderr, exit status 1, no traceback."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("runjournal: error: "), lines[0]
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def invoke_cli(
    *args: str | Path, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command line in this process (fast, for variations); same result shape.

    The process-wide logging setup the CLI does is undone afterwards.
    """
    import structlog
    from click.testing import CliRunner

    from history.cli.main import cli

    saved = structlog.get_config()
    try:
        result = CliRunner().invoke(
            cli,
            [str(a) for a in args],
            input=input,
            env={"RUNJOURNAL_STORE": None, "COLUMNS": "120", **(env or {})},
        )
    finally:
        structlog.configure(**saved)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def invoke_json(*args: str | Path, **kwargs: Any) -> Any:
    """:func:`invoke_cli` with ``--json``; assert success and return the parsed output."""
    done = invoke_cli(*args, "--json", **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(*args: str, cwd: Path | None = None) -> Iterator[str]:
    """Run ``runjournal serve ARGS --port <free>`` in a subprocess; yield its base URL.

    Waits until the server answers; stops it with SIGINT (Ctrl-C) afterwards.
    """
    port = free_port()
    command = ["serve", *args, "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(
        [sys.executable, "-m", "history.cli", *command],
        cwd=cwd or ROOT,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/api/threads")
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    error = server.stderr.read() if server.stderr else ""
                    raise AssertionError(f"serve did not start: {error}") from None
                time.sleep(0.1)
        yield base
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=20)  # raises if Ctrl-C does not stop it


def run_script(script: str, *args: str | Path) -> list[str]:
    """Run Python ``script`` with ``args`` in a new process of this tree; its output lines
    (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()
