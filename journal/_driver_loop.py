"""A private event loop in a daemon thread, owning a backend's async driver objects.

Async driver objects (an ``AsyncConnectionPool`` and its background tasks) belong to the loop
that created them, and a pool left open when its loop ends can hang ``asyncio.run``'s
shutdown. A backend therefore keeps them on one ``DriverLoop`` that lives as long as the store:
callers on any event loop (or several, one after the other) await :meth:`DriverLoop.run`,
which never blocks their loop, and cancelling the caller cancels the work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["DriverLoop"]

T = TypeVar("T")


class DriverLoop:
    """An event loop running in its own daemon thread until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the driver loop and await its result from the caller's loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the driver loop from sync code (never from the driver loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        """Stop the loop, wait for its thread and close it. Call once."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
