"""The full reconcile's comparison of a durable log with the graph: which logged rows have no node.

A log (the conversation log, the tool log) is read in pages of ``(row position, node id)``; the graph is asked which
of each page's ids it holds (one statement answered by the label's unique id index); the rows without a node go back
into that log's reconcile queue. Used by :meth:`AsyncAgentMemory.reconcile` with ``full=True``, after the graph was
restored from a backup older than the log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import LiteralString

from .graph.port import GraphStore

__all__ = ["requeue_missing"]

#: ``(after, limit)`` → up to ``limit`` ``(row position, node id)`` of the log, in log order after row ``after``.
LogPage = Callable[[int, int], Awaitable[list[tuple[int, str]]]]


async def requeue_missing(graph: GraphStore, present: LiteralString, page: LogPage,
                          requeue: Callable[[Sequence[int]], Awaitable[int]], *, batch_size: int = 1000) -> int:
    """Queue every row of the log whose node the graph lacks (``present``: a statement returning the ``id`` of each
    of ``$ids`` it holds); return how many rows ``requeue`` queued."""
    requeued, position = 0, 0
    while rows := await page(position, batch_size):
        position = rows[-1][0]
        held = {r["id"] for r in await graph.read(present, {"ids": [node_id for _, node_id in rows]})}
        missing = [row for row, node_id in rows if node_id not in held]
        if missing:
            requeued += await requeue(missing)
    return requeued
