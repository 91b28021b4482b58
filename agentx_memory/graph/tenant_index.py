"""When one tenant's vector search should read the label's global vector index, and how deep.

A vector index covers every tenant's nodes. Its nearest ``fetch`` nodes, kept when they are the tenant's, hold the
tenant's nearest ``k`` exactly when at least ``k`` of them are kept (any nearer node of the tenant would be among the
global nearest), so a search may read the index instead of scanning the tenant's nodes whenever a fetch deep enough to
keep ``k`` costs less than the scan. How deep that is depends on the tenant's share of the label: a tenant with a
fifth of the facts keeps about a fifth of any fetch. :func:`index_fetch` turns the share into a fetch and compares the
two costs; :class:`TenantSizes` remembers the counts it needs for a minute (they only steer the choice:
:meth:`~agentx_memory.graph.port.GraphStore.read_vectors` falls back to the scan when too few rows are kept, so a
stale count costs time, never rows).

Measured on FalkorDB (384-d facts, 41k of them, docs/benchmarks.md "Graph vector legs through the index"): the scan
costs about 0.9 µs per node of the tenant, the index about 2.3 µs per fetched node plus 0.4 ms.
"""

from __future__ import annotations

import math
import time
from typing import Final

__all__ = ["FETCH_COST", "MIN_EXTRA", "SHARE_MARGIN", "SIZES_TTL", "TenantSizes", "index_fetch"]

#: How many times more a fetched index node costs than a scanned node of the tenant.
FETCH_COST: Final = 2.0
#: How many times the tenant's expected share of ``k`` the fetch asks for (its filters -- channels, superseded facts,
#: a time window -- keep fewer than its share).
SHARE_MARGIN: Final = 2.0
#: The fetch is at least ``k`` plus this many.
MIN_EXTRA: Final = 20
#: Seconds the node counts are reused.
SIZES_TTL: Final = 60.0


def index_fetch(k: int, own: int, total: int) -> int | None:
    """How many nearest nodes of the global index to read for a tenant that owns ``own`` of the label's ``total``
    nodes and wants ``k``; None when scanning the tenant's nodes costs less (a small tenant, or a small share)."""
    if k <= 0 or own <= 0 or total <= 0:
        return None
    fetch = max(k + MIN_EXTRA, math.ceil(k * SHARE_MARGIN * total / own))
    return fetch if fetch * FETCH_COST < own else None


class TenantSizes:
    """Per label, its node count, and per (label, tenant), the tenant's (a tenant: a user and the channels searched),
    each kept ``ttl`` seconds."""

    def __init__(self, ttl: float = SIZES_TTL):
        self.ttl = ttl
        self._counts: dict[tuple[str, tuple[str, ...] | None], tuple[float, int]] = {}

    def get(self, label: str, tenant: tuple[str, ...] | None) -> int | None:
        """The count of the label's nodes (``tenant`` None) or of the tenant's, when read less than ``ttl`` ago."""
        entry = self._counts.get((label, tenant))
        if entry is None or time.monotonic() - entry[0] >= self.ttl:
            return None
        return entry[1]

    def put(self, label: str, tenant: tuple[str, ...] | None, count: int) -> None:
        """Remember a count just read."""
        if len(self._counts) > 100_000:  # one entry per searching tenant and label: drop them all now and then
            self._counts.clear()
        self._counts[(label, tenant)] = (time.monotonic(), count)
