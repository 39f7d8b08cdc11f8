"""Reading journaled threads: the timeline, replay and verify (pure readers over the store).

The HTTP app (``create_app``) and the ``runjournal`` CLI have rooms of their own and load only
when used: ``create_app`` is imported on first use (PEP 562), and the pure readers import neither
FastAPI nor click (LangChain loads only when replay builds messages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Imported eagerly (they are cheap), which also keeps ``history.replay`` and ``history.verify``
# the functions rather than the submodules of the same names.
from history.errors import ThreadNotFoundError
from history.replay import ReplayView, areplay, arestore_thread, replay, restore_thread
from history.timeline import TimelineItem, TimelinePage, abuild_timeline, build_timeline
from history.verify import VerifyReport, averify, verify

if TYPE_CHECKING:
    from history.server.app import create_app

__all__ = [
    "ReplayView",
    "ThreadNotFoundError",
    "TimelineItem",
    "TimelinePage",
    "VerifyReport",
    "abuild_timeline",
    "areplay",
    "arestore_thread",
    "averify",
    "build_timeline",
    "create_app",
    "replay",
    "restore_thread",
    "verify",
]


def __getattr__(name: str) -> object:
    """``create_app`` imports the HTTP stack (FastAPI) on first use."""
    if name == "create_app":
        from history.server.app import create_app

        globals()[name] = create_app
        return create_app
    raise AttributeError(f"module 'history' has no attribute {name!r}")
