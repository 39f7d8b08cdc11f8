"""A fresh clone of the committed tree runs the README's demo command from nothing."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from journal import SqliteEventStore
from tests.cli_helpers import ROOT


@pytest.mark.slow
def test_fresh_clone_runs_the_readme_demo_command(tmp_path: Path) -> None:
    """`git clone` + the README's first command: own venv, install, demo with compactions."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    first_block = re.search(r"```bash\n(.*?)```", (clone / "README.md").read_text("utf-8"), re.S)
    assert first_block is not None
    demo_command = first_block.group(1).strip().splitlines()[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNJOURNAL_", "VIRTUAL_ENV"))}
    # PYTHON picks the interpreter the script makes its venv from (the script's own default
    # is python3); the venv, the install and the demo are the script's.
    env["PYTHON"] = os.environ.get("PYTHON", sys.executable)
    done = subprocess.run(
        shlex.split(demo_command),
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (clone / ".venv" / "bin" / "runjournal").exists()
    assert "messages condensed" in done.stdout
    with SqliteEventStore(clone / "runjournal.db") as store:
        (thread,) = store.list_threads()
        assert thread.run_count >= 3
        markers = store.read(thread.thread_id, event_type="middleware:summarize")
        assert len(markers) >= 2
