"""Agent-side middleware that reports what it changes to the run journal.

The names load on first use (PEP 562), so importing the package costs nothing until one is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = ["SUMMARIZATION_EVENT", "TrackingSummarizationMiddleware"]

_HOMES: dict[str, str] = {
    "SUMMARIZATION_EVENT": "middleware.summarization",
    "TrackingSummarizationMiddleware": "middleware.summarization",
}

if TYPE_CHECKING:
    from middleware.summarization import SUMMARIZATION_EVENT, TrackingSummarizationMiddleware


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'middleware' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names next to what is already loaded."""
    return sorted({*globals(), *_HOMES})
