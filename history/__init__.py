"""Reading journaled threads: the timeline, replay, the HTTP app and the CLI."""

from history.app import create_app
from history.errors import ThreadNotFoundError
from history.replay import ReplayView, areplay, arestore_thread, replay, restore_thread
from history.timeline import TimelineItem, TimelinePage, abuild_timeline, build_timeline
from history.verify import VerifyReport, averify, verify

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
