"""The library's loggers: structlog call sites, records on the standard ``logging`` module.

Every module logs through ``get_logger(__name__)``: a structlog ``BoundLogger`` (so call sites
keep ``log.info("event_name", thread_id=...)``) wrapped around the stdlib logger
``runjournal.<module>``. Its processors are fixed here, so structlog's global configuration (and
its default printer) plays no part: the library never prints, never configures logging and adds
no handler. The host's ``logging`` configuration decides what appears where.

A record's message is ``event_name key=value ...``; the same data rides on the record as
``record.event`` (the stable event name) and ``record.fields`` (the key-value fields), for
hosts that format or filter structurally.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["LOGGER_PREFIX", "get_logger"]

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


_PROCESSORS: list[Any] = [structlog.stdlib.filter_by_level, _to_stdlib_call]


def get_logger(module_name: str) -> structlog.stdlib.BoundLogger:
    """The logger of ``module_name``: stdlib logger ``runjournal.<module_name>``, no handler."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(f"{LOGGER_PREFIX}.{module_name}"),
        processors=_PROCESSORS,
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        cache_logger_on_first_use=True,
    )
    return logger
