"""A private event loop in a daemon thread, owning a backend's async driver objects.

Async driver objects (an ``AsyncConnectionPool`` and its background tasks) belong to the loop
that created them, and a pool left open when its loop ends can hang ``asyncio.run``'s
shutdown. A backend therefore keeps them on one ``DriverLoop`` that lives as long as the store:
callers on any event loop (or several, one after the other) await :meth:`DriverLoop.run`,
which never blocks their loop, and cancelling the caller cancels the work. Stopping the loop
never strands a caller: work already running gets a grace period, then is cancelled, and
later calls raise :class:`DriverLoopStopped`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["DriverLoop", "DriverLoopStopped"]

T = TypeVar("T")


class DriverLoopStopped(RuntimeError):
    """The driver loop is stopping or stopped: it takes no new work."""


class DriverLoop:
    """An event loop running in its own daemon thread until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._stopped = False
        self._tasks: set[asyncio.Task[Any]] = set()  # work from run(); touched on the loop only
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the driver loop and await its result from the caller's loop.

        Raises :class:`DriverLoopStopped` (without running ``coro``) once :meth:`stop` began.
        """
        with self._lock:  # stop() drains only what was submitted before it took the lock
            if self._stopped:
                coro.close()
                raise DriverLoopStopped("the driver loop is stopped")
            future = asyncio.run_coroutine_threadsafe(self._tracked(coro), self.loop)
        return await asyncio.wrap_future(future)

    async def _tracked(self, coro: Coroutine[Any, Any, T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            return await coro
        finally:
            self._tasks.discard(task)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the driver loop from sync code (never from the driver loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self, grace: float = 5.0) -> None:
        """Stop the loop, wait for its thread and close it. Call once.

        Work started by :meth:`run` gets ``grace`` seconds to finish, then is cancelled (its
        caller sees the cancellation, or whatever the work turns it into), so no caller waits
        forever on a loop that no longer runs.
        """
        with self._lock:
            self._stopped = True
        self.call(self._drain(grace), timeout=2 * grace + 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()

    async def _drain(self, grace: float) -> None:
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=grace)
