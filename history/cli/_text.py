"""Small text helpers shared by the terminal view and the demo models."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(text: str, max_chars: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``max_chars`` with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…"
