"""The README works: its two commands are the real ones, and every code sample runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli_helpers import ROOT, invoke_cli, serving

README = ROOT / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
TWO_COMMANDS = ["bash scripts/demo.sh", "bash scripts/test.sh"]


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README.read_text("utf-8")) if lang == kind]


def _needs_postgres(code: str) -> bool:
    return "postgresql://" in code or "RUNJOURNAL_PG_URL" in code


def test_readme_starts_with_exactly_the_two_commands() -> None:
    """The first code block holds exactly the demo and the test-suite commands."""
    text = README.read_text("utf-8")
    first_lang, first_body = _BLOCK.findall(text)[0]
    assert first_lang == "bash"
    assert [line.strip() for line in first_body.strip().splitlines()] == TWO_COMMANDS
    assert text.index("```") < text.index("## A short tour")


def test_ci_runs_the_readme_test_command_and_the_scripts_do_what_it_says() -> None:
    """`.ci/run` runs the README's test command; demo.sh runs `runjournal demo` in a venv."""
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert "exec bash scripts/test.sh" in ci
    setup = (ROOT / "scripts" / "_setup.sh").read_text("utf-8")
    assert "-m venv .venv" in setup and 'pip install -q -e "$1"' in setup
    demo = (ROOT / "scripts" / "demo.sh").read_text("utf-8")
    assert "ensure_venv .\n" in demo and "exec .venv/bin/runjournal demo" in demo
    test = (ROOT / "scripts" / "test.sh").read_text("utf-8")
    assert "ensure_venv '.[dev]'" in test and "exec .venv/bin/python -m pytest" in test


@pytest.mark.parametrize("stale_venv", [False, True])
def test_scripts_stop_with_one_line_when_python_is_missing_or_older_than_3_11(
    tmp_path: Path, stale_venv: bool
) -> None:
    """A too-old $PYTHON (or a .venv of one, left by an earlier try) stops with one clear line."""
    old_python = tmp_path / "python3.10"
    old_python.write_text("#!/bin/sh\necho 'Python 3.10.12'\nexit 1\n", encoding="utf-8")
    old_python.chmod(0o755)
    fake_bin = tmp_path / "bin"  # the check must come first: never reach apt-get
    fake_bin.mkdir()
    for tool in ("apt-get", "sudo"):
        (fake_bin / tool).write_text(f"#!/bin/sh\necho '{tool} was run' >&2\nexit 1\n")
        (fake_bin / tool).chmod(0o755)
    if stale_venv:
        (tmp_path / ".venv" / "bin").mkdir(parents=True)
        (tmp_path / ".venv" / "bin" / "python").symlink_to(old_python)
    for python in (str(old_python), str(tmp_path / "no-such-python")):
        done = subprocess.run(
            ["bash", "-c", f"set -euo pipefail; source {ROOT}/scripts/_setup.sh; ensure_venv ."],
            cwd=tmp_path,
            env={"PATH": f"{fake_bin}:{os.environ['PATH']}", "PYTHON": python},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"runjournal needs Python 3.11 or newer; '{python}' is missing or older: "
            "set PYTHON=/path/to/python3.11 (or newer)"
        ]
        assert not (tmp_path / ".venv").exists()


def _run_python_samples(namespace: dict[str, Any], *, postgres: bool) -> None:
    for number, code in enumerate(_blocks("python"), start=1):
        if _needs_postgres(code) and not postgres:
            continue
        exec(compile(code, f"README.md python sample {number}", "exec"), namespace)


def _shell_lines(*, postgres: bool) -> list[list[str]]:
    """The runjournal commands of the tour: those that need PostgreSQL, or the others."""
    lines = [
        shlex.split(line)
        for block in _blocks("bash")[1:]
        for line in block.strip().splitlines()
        if line.startswith("runjournal ")
    ]
    return [words for words in lines if _needs_postgres(" ".join(words)) == postgres]


def _check_serve(words: list[str], cwd: Path) -> None:
    args = [w for w in words[2:] if w not in ("--port", "8000")]  # serving() picks the port
    with serving(*args, cwd=cwd) as base:
        answer = httpx.get(f"{base}/api/threads/support-42/history")
        assert answer.status_code == 200
        assert any(i["type"] == "summary_marker" for i in answer.json()["items"])
        page = httpx.get(f"{base}/threads/support-42")  # the viewer page the README names
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def _run_shell_samples(cwd: Path, *, postgres: bool, pg_url: str | None = None) -> None:
    for words in _shell_lines(postgres=postgres):
        if words[1] == "serve":
            _check_serve(words, cwd)
            continue
        if pg_url is not None:
            words = [re.sub(r"postgresql://\S+", pg_url, w) for w in words]
        done = invoke_cli(*words[1:])
        assert done.returncode == 0, (words, done.stdout, done.stderr)


def test_readme_samples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python sample (in order, one namespace) and every runjournal command runs."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    try:
        _run_python_samples(namespace, postgres=False)
        _run_shell_samples(tmp_path, postgres=False)
    finally:
        namespace["store"].close()
    assert (tmp_path / "runjournal.db").exists()
    shown = invoke_cli("history", "support-42")
    assert "messages condensed" in shown.stdout


@pytest.mark.postgres
def test_readme_postgres_samples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The PostgreSQL samples run against a real server (with the other samples before them)."""
    pg_url: str = request.getfixturevalue("postgres_url")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNJOURNAL_PG_URL", pg_url)
    namespace: dict[str, Any] = {"__name__": "readme"}
    try:
        _run_python_samples(namespace, postgres=True)
        _run_shell_samples(tmp_path, postgres=True, pg_url=pg_url)
    finally:
        namespace["store"].close()
        if "pg" in namespace:
            namespace["pg"].delete_thread("support-42")
            namespace["pg"].close()
