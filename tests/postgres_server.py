"""A throw-away PostgreSQL 15 cluster for tests and benchmarks.

``PostgresServer`` runs ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/15/bin`` (or
``$RUNJOURNAL_PG_BIN``) in a fresh temporary directory, listening on 127.0.0.1 only on a free
port with ``trust`` authentication and ``fsync=off`` (test data only). When the process runs as
root, the server runs as the ``postgres`` OS user, which owns the temporary directory.
``stop()`` shuts the server down and removes the directory. ``PostgresServerError`` says why a
cluster could not start.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Self

import psycopg

__all__ = [
    "PG_BIN",
    "PostgresServer",
    "PostgresServerError",
    "fresh_database_url",
    "wait_for_lock_waiters",
]

PG_BIN = Path(os.environ.get("RUNJOURNAL_PG_BIN", "/usr/lib/postgresql/15/bin"))
_START_TIMEOUT = 30


class PostgresServerError(RuntimeError):
    """The throw-away cluster could not be created or started."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """One throw-away cluster; use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, *, bin_dir: Path = PG_BIN, max_connections: int = 100) -> None:
        self.bin_dir = bin_dir
        self.max_connections = max_connections
        self.port = 0
        self.tmp: Path | None = None
        self._user: str | None = None

    @property
    def url(self) -> str:
        """The ``postgresql://`` URL of the ``postgres`` database on this cluster."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        try:
            return subprocess.run(
                command, capture_output=True, text=True, timeout=_START_TIMEOUT, check=True
            )
        except (OSError, subprocess.SubprocessError) as e:
            output = getattr(e, "stderr", "") or getattr(e, "stdout", "") or ""
            raise PostgresServerError(f"{' '.join(args[:2])} failed: {e} {output}") from e

    def start(self) -> Self:
        """Create and start the cluster; raise ``PostgresServerError`` if it cannot."""
        initdb = self.bin_dir / "initdb"
        if not initdb.exists():
            raise PostgresServerError(f"PostgreSQL binaries not found in {self.bin_dir}")
        self.tmp = Path(tempfile.mkdtemp(prefix="runjournal-pg-"))
        try:
            if os.geteuid() == 0:
                self._user = "postgres"
                entry = pwd.getpwnam(self._user)
                os.chown(self.tmp, entry.pw_uid, entry.pw_gid)
            data = self.tmp / "data"
            self._run(str(initdb), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
            self._start_on_a_free_port(data)
        except (PostgresServerError, KeyError, OSError) as e:
            self.stop()
            raise PostgresServerError(f"cannot start a PostgreSQL cluster: {e}") from e
        return self

    def _start_on_a_free_port(self, data: Path) -> None:
        log = data.parent / "server.log"
        for _ in range(3):  # another cluster may take the port between probe and start
            self.port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {data.parent} -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off "
                f"-c max_connections={self.max_connections}"
            )
            try:
                self._run(
                    str(self.bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log),
                    "-o", options, "-w", "-t", str(_START_TIMEOUT), "start",
                )  # fmt: skip
                return
            except PostgresServerError as e:
                error = e
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise PostgresServerError(f"{error}\n{detail}")

    def restart(self) -> None:
        """Restart the server (fast shutdown) on the same port: every open connection dies."""
        self.stop_server()
        self.start_again()

    def stop_server(self) -> None:
        """Stop the server but keep its data: :meth:`start_again` brings it back."""
        assert self.tmp is not None, "start() the cluster first"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.tmp / "data"), "-m", "fast", "stop")

    def start_again(self) -> None:
        """Start a server stopped by :meth:`stop_server` on the same port and data."""
        assert self.tmp is not None, "start() the cluster first"
        data = self.tmp / "data"
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.tmp} -c fsync=off "
            f"-c synchronous_commit=off -c full_page_writes=off "
            f"-c max_connections={self.max_connections}"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(data), "-l", str(self.tmp / "server.log"),
            "-o", options, "-w", "-t", str(_START_TIMEOUT), "start",
        )  # fmt: skip

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory. Idempotent."""
        if self.tmp is None:
            return
        data = self.tmp / "data"
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(PostgresServerError):  # removing the dir is what is left
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop")
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def fresh_database_url(url: str) -> str:
    """Create an empty database on the cluster of ``url``; return its URL."""
    name = f"rj_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a generated name: no injection possible
    return url.rsplit("/", 1)[0] + "/" + name


def wait_for_lock_waiters(url: str, count: int = 1, timeout: float = 60) -> None:
    """Return once ``count`` sessions of the database of ``url`` wait on a lock.

    A test that needs a writer blocked on a lock waits for it here, not for a fixed sleep
    that a loaded machine can outlast.
    """
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            waiting = row[0] if row else 0
            if waiting >= count:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{waiting} sessions wait on a lock, not {count}")
            time.sleep(0.01)
