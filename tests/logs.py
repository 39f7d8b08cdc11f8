"""Capturing the library's log records in tests, as dicts like structlog's ``capture_logs``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from journal._logging import LOGGER_PREFIX


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.entries: list[dict[str, Any]] = []
        self._entries_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        entry = {
            "event": getattr(record, "event", record.getMessage()),
            "log_level": record.levelname.lower(),
            **getattr(record, "fields", {}),
        }
        with self._entries_lock:
            self.entries.append(entry)


@contextmanager
def capture_logs() -> Iterator[list[dict[str, Any]]]:
    """Every ``runjournal.*`` record (debug and up) logged inside the block, from any thread."""
    logger = logging.getLogger(LOGGER_PREFIX)
    handler = _ListHandler()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler.entries
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
