"""Whether the graph answered lately: a small circuit breaker for the callers that can do without it.

PostgreSQL holds every turn, so recall can answer from its legs and a turn write is durable without the graph. When a
graph call fails because the server is unreachable, :class:`GraphHealth` remembers it for
``graph.unavailable_cooldown_seconds``: in that time recall skips its graph legs and turn writes skip the projection
(the turns stay pending for ``reconcile()``) at once, instead of each waiting for the driver's connect and retry
timeouts again. The first call after the cooldown tries the graph; a success closes the breaker.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

from ..errors import StorageUnavailableError

__all__ = ["GraphHealth"]

T = TypeVar("T")


class GraphHealth:
    """The graph's recent reachability, shared by one memory's subsystems."""

    def __init__(self, cooldown_seconds: float):
        self.cooldown_seconds = cooldown_seconds
        self._failed_at: float | None = None
        self._reason = ""

    def unavailable(self) -> str | None:
        """Why the graph is taken as down (the last unreachable error), or ``None`` when it may be tried."""
        if self._failed_at is None or time.monotonic() - self._failed_at >= self.cooldown_seconds:
            return None
        return self._reason

    def failed(self, exc: StorageUnavailableError) -> None:
        """Record that the graph was unreachable now."""
        self._failed_at = time.monotonic()
        self._reason = str(exc)

    def answered(self) -> None:
        """Record that the graph answered: the breaker closes."""
        self._failed_at = None
        self._reason = ""

    async def call(self, work: Awaitable[T]) -> T:
        """Await ``work`` (a graph call), recording the outcome; raises :class:`StorageUnavailableError` at once,
        without awaiting it, while the graph is taken as down."""
        reason = self.unavailable()
        if reason is not None:
            if hasattr(work, "close"):
                work.close()  # a coroutine never awaited would warn
            raise StorageUnavailableError(f"graph skipped (unreachable within the last "
                                          f"{self.cooldown_seconds:g} s): {reason}")
        try:
            result = await work
        except StorageUnavailableError as exc:
            self.failed(exc)
            raise
        self.answered()
        return result
