"""Reading journaled threads: timeline, runs, usage, replay and verify (pure readers of the store).

The names below are the promise (replay and verify live in private modules, ``_replay`` and
``_verify``). They load on first use (PEP 562), so ``import history`` costs almost nothing,
and the pure readers import neither FastAPI nor click (LangChain loads only when replay builds
messages). The HTTP app (``create_app``, in :mod:`history.server`) and the ``runjournal`` CLI
(:mod:`history.cli`) have rooms of their own and load only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from history._replay import ReplayView, areplay, arestore_thread, replay, restore_thread
    from history._verify import VerifyReport, averify, verify
    from history.errors import ThreadNotFoundError
    from history.runs import (
        RunsPage,
        UsageReport,
        aruns_page,
        athread_usage,
        runs_page,
        thread_usage,
    )
    from history.server.app import create_app
    from history.timeline import TimelineItem, TimelinePage, abuild_timeline, build_timeline

__all__ = [
    "ReplayView",
    "RunsPage",
    "ThreadNotFoundError",
    "TimelineItem",
    "TimelinePage",
    "UsageReport",
    "VerifyReport",
    "abuild_timeline",
    "areplay",
    "arestore_thread",
    "aruns_page",
    "athread_usage",
    "averify",
    "build_timeline",
    "create_app",
    "replay",
    "restore_thread",
    "runs_page",
    "thread_usage",
    "verify",
]

_HOMES: dict[str, str] = {
    "ReplayView": "history._replay",
    "RunsPage": "history.runs",
    "UsageReport": "history.runs",
    "aruns_page": "history.runs",
    "athread_usage": "history.runs",
    "runs_page": "history.runs",
    "thread_usage": "history.runs",
    "ThreadNotFoundError": "history.errors",
    "TimelineItem": "history.timeline",
    "TimelinePage": "history.timeline",
    "VerifyReport": "history._verify",
    "abuild_timeline": "history.timeline",
    "areplay": "history._replay",
    "arestore_thread": "history._replay",
    "averify": "history._verify",
    "build_timeline": "history.timeline",
    "create_app": "history.server.app",
    "replay": "history._replay",
    "restore_thread": "history._replay",
    "verify": "history._verify",
}


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'history' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names next to what is already loaded."""
    return sorted({*globals(), *_HOMES})
