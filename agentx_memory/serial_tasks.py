"""Background work that keeps its order per key: jobs of one key run one after another, in the order they were
started, while jobs of different keys run concurrently.

Recall reinforces and audits after it has answered (:mod:`agentx_memory.retrieval.recall`). Run as independent
tasks, two recalls of one user could write their audit entries in either order; keyed by user, they are written in
the order of the calls, and one user's slow writes do not hold up another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable

__all__ = ["SerialTasks"]

log = logging.getLogger(__name__)


class SerialTasks:
    """Background jobs serialized per key (see the module docstring). A job that fails is logged and does not stop
    the jobs queued behind it."""

    def __init__(self) -> None:
        self._pending: set[asyncio.Task[None]] = set()
        self._last: dict[Hashable, asyncio.Task[None]] = {}

    def start(self, key: Hashable, job: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``job()`` in the background after every job started earlier under ``key`` has finished."""
        previous = self._last.get(key)
        task = asyncio.get_running_loop().create_task(self._run(previous, job))
        self._last[key] = task
        self._pending.add(task)
        task.add_done_callback(lambda done: self._finished(key, done))
        return task

    @staticmethod
    async def _run(previous: asyncio.Task[None] | None, job: Callable[[], Awaitable[None]]) -> None:
        if previous is not None:
            # shield: cancelling this job must not cancel the one before it; its failure was logged by its own task
            with contextlib.suppress(Exception):
                await asyncio.shield(previous)
        try:
            await job()
        except Exception:
            log.exception("background job failed")

    def _finished(self, key: Hashable, task: asyncio.Task[None]) -> None:
        self._pending.discard(task)
        if self._last.get(key) is task:  # nothing queued behind it: forget the key
            del self._last[key]

    def __len__(self) -> int:
        """The jobs started and not yet finished."""
        return len(self._pending)

    async def drain(self) -> None:
        """Wait until every job started so far, and any they start, has finished."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
