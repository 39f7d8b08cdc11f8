"""The library's loggers: structlog-style call sites, records on the standard ``logging`` module.

Every module logs through ``get_logger(__name__)``, keeping call sites as
``log.info("event_name", thread_id=...)``, onto the stdlib logger ``runjournal.<module>``
through structlog's stdlib integration with processors fixed here: structlog's global
configuration (and its default printer) plays no part. The library never prints, never
configures logging and adds no handler; the host's ``logging`` configuration decides what
appears where.

A record's message is ``event_name key=value ...``; the same data rides on the record as
``record.event`` (the stable event name) and ``record.fields`` (the key-value fields), for
hosts that format or filter structurally.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

__all__ = ["LOGGER_PREFIX", "Logger", "get_logger"]

LOGGER_PREFIX = "runjournal"


def _to_stdlib_call(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The last processor: the positional and keyword arguments of the stdlib logging call."""
    event = str(event_dict.pop("event", ""))
    exc_info = event_dict.pop("exc_info", None)
    event_dict.pop("positional_args", None)
    fields = dict(event_dict)
    message = " ".join([event, *(f"{key}={value!r}" for key, value in fields.items())])
    kwargs: dict[str, Any] = {"extra": {"event": event, "fields": fields}}
    if exc_info:
        kwargs["exc_info"] = exc_info
    # The message is the format string with no arguments: a "%" in a field stays as it is.
    return (message,), kwargs


def _bound_logger(stdlib_logger: logging.Logger) -> Any:
    import structlog

    return structlog.wrap_logger(
        stdlib_logger,
        processors=[structlog.stdlib.filter_by_level, _to_stdlib_call],
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        cache_logger_on_first_use=True,
    )


class Logger:
    """A module's logger: ``log.info("event_name", key=value, ...)`` onto a stdlib logger.

    The level is checked on the stdlib logger first, so a disabled call costs one check, and
    structlog (with the rich tracebacks it loads) is imported only when a record is emitted.
    """

    __slots__ = ("_bound", "stdlib")

    def __init__(self, name: str) -> None:
        self.stdlib = logging.getLogger(name)
        self._bound: Any = None

    def _emit(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if not self.stdlib.isEnabledFor(level):
            return
        if self._bound is None:
            self._bound = _bound_logger(self.stdlib)
        getattr(self._bound, method)(event, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        """Log ``event`` at DEBUG."""
        self._emit(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log ``event`` at INFO."""
        self._emit(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log ``event`` at WARNING."""
        self._emit(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log ``event`` at ERROR."""
        self._emit(logging.ERROR, "error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log ``event`` at ERROR with the exception being handled."""
        self._emit(logging.ERROR, "exception", event, fields)


def get_logger(module_name: str) -> Logger:
    """The logger of ``module_name``: stdlib logger ``runjournal.<module_name>``, no handler."""
    return Logger(f"{LOGGER_PREFIX}.{module_name}")
