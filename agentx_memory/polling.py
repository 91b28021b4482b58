"""One way to wait for a condition: poll it until it holds or a deadline passes.

Servers, processes and indexes that come up (or go away) asynchronously are awaited with :func:`wait_until`
(blocking) or :func:`await_until` (asyncio) instead of hand-written ``while``/``sleep`` loops, so every wait has a
timeout and every timeout says what was awaited::

    pid = wait_until(lambda: server.probe().pid, timeout=30, what="FalkorDB to write its pid")
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .errors import RuntimeServerError

__all__ = ["WaitTimeoutError", "await_until", "wait_until"]

T = TypeVar("T")


class WaitTimeoutError(RuntimeServerError, TimeoutError):
    """A condition polled by :func:`wait_until` / :func:`await_until` did not hold in time.

    ``what`` names the condition, ``timeout`` is the time allowed in seconds, and ``last`` is the condition's last
    (falsy) value.
    """

    def __init__(self, what: str, timeout: float, last: object = None) -> None:
        """Record what timed out; the message reads "timed out after Ns waiting for <what>"."""
        self.what, self.timeout, self.last = what, timeout, last
        super().__init__(f"timed out after {timeout:g}s waiting for {what}")


def wait_until(predicate: Callable[[], T | None], *, timeout: float, interval: float = 0.05, what: str) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns a truthy value, and return that value.

    It is always called at least once, and once more at the deadline. Raises :class:`WaitTimeoutError` naming
    ``what`` when it is still falsy after ``timeout`` seconds; exceptions from ``predicate`` propagate at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeoutError(what, timeout, value)
        time.sleep(min(interval, left))


async def await_until(
    predicate: Callable[[], Awaitable[T | None]], *, timeout: float, interval: float = 0.05, what: str
) -> T:
    """The asyncio twin of :func:`wait_until`: awaits ``predicate()`` until it returns a truthy value."""
    import asyncio  # here, not above: the CLI's ``--help`` imports this module and never awaits

    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeoutError(what, timeout, value)
        await asyncio.sleep(min(interval, left))
