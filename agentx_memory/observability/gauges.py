"""The gauges of memory size and consolidation lag, read from the latest ``memory_stats()`` of each open memory.

A gauge callback runs when metrics are collected, on whatever thread collects them (an exporter's thread, a
Prometheus scrape inside an event loop), so it never queries a store: it reads the :class:`StatsSource` of each open
memory. A source keeps the latest :class:`~agentx_memory.stats.MemoryStats` (every ``memory_stats()`` call through a
traced memory updates it) and, when that is older than ``observability.stats_refresh_seconds``, starts a
``memory_stats()`` on the memory's own event loop in the background; the collection after it sees the new figures.

Observations carry a ``store`` attribute (``<graph name or database>/<PostgreSQL schema>``) so two memories on
different stores in one process report apart; memories on the same stores share one source.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from opentelemetry.metrics import CallbackOptions, Observation

from ..errors import AgentXMemoryError

if TYPE_CHECKING:
    from ..memory import AsyncAgentMemory
    from ..settings import Settings
    from ..stats import MemoryStats

__all__ = [
    "StatsSource", "consolidation_lag", "consolidation_pending", "graph_nodes", "graph_relationships",
    "postgres_rows", "redis_used_memory", "register", "source_for", "store_of", "unregister",
]

log = logging.getLogger(__name__)


def store_of(settings: Settings) -> str:
    """The ``store`` attribute of a memory's gauges: its graph (FalkorDB graph name, or Neo4j database when a URI
    is set) and its PostgreSQL schema."""
    graph = (settings.graph.database or "neo4j") if settings.graph.uri else settings.graph.name
    return f"{graph}/{settings.postgres.db_schema}"


class StatsSource:
    """The cached ``memory_stats()`` of one open memory, refreshed in the background when it is too old."""

    def __init__(self, memory: AsyncAgentMemory, loop: asyncio.AbstractEventLoop | None):
        self.store = store_of(memory.settings)
        self.refresh_seconds = memory.settings.observability.stats_refresh_seconds
        self._memory = weakref.ref(memory)
        self._loop = loop
        self._refreshing = False
        self._task: asyncio.Task[None] | None = None
        self._taken = float("-inf")  # time.monotonic() of the stats held
        #: The latest figures (None until the first ``memory_stats()`` returned).
        self.stats: MemoryStats | None = None

    def owned_by(self, memory: AsyncAgentMemory) -> bool:
        """True when this source refreshes through ``memory``."""
        return self._memory() is memory

    def update(self, stats: MemoryStats) -> None:
        """Keep ``stats`` as the latest figures (called on the memory's loop, which refreshes are then run on if the
        memory was made outside a running loop)."""
        self.stats, self._taken = stats, time.monotonic()
        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_running_loop()

    def current(self) -> MemoryStats | None:
        """The latest figures; starts a refresh when they are older than the refresh interval."""
        if time.monotonic() - self._taken >= self.refresh_seconds:
            self._start_refresh()
        return self.stats

    def _start_refresh(self) -> None:
        memory, loop = self._memory(), self._loop
        if self._refreshing or memory is None or memory.closed or loop is None or loop.is_closed():
            return
        self._refreshing = True
        try:
            loop.call_soon_threadsafe(self._spawn, memory)
        except RuntimeError:  # the loop closed meanwhile
            self._refreshing = False

    def _spawn(self, memory: AsyncAgentMemory) -> None:
        """(On the memory's loop.) Run the refresh as a task that :meth:`stop` can cancel."""
        self._task = asyncio.get_running_loop().create_task(self._refresh(memory))

    async def _refresh(self, memory: AsyncAgentMemory) -> None:
        try:
            await memory.memory_stats()  # the traced method hands its result to update()
        except AgentXMemoryError as exc:  # a store down, or the memory closed meanwhile: keep the old figures
            log.warning("observability: memory_stats() for %s failed: %s", self.store, exc)
        finally:
            self._refreshing = False

    async def stop(self) -> None:
        """(On the memory's loop, before it closes.) Cancel a refresh under way and wait for it to end."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


_lock = threading.Lock()
_sources: dict[str, StatsSource] = {}


def register(memory: AsyncAgentMemory) -> StatsSource:
    """The source of ``memory``'s store, made (or taken over from a closed memory) for it."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    store = store_of(memory.settings)
    with _lock:
        source = _sources.get(store)
        owner = source._memory() if source is not None else None
        if source is None or owner is None or owner.closed:
            source = _sources[store] = StatsSource(memory, loop)
        return source


def source_for(memory: AsyncAgentMemory) -> StatsSource | None:
    """The source of ``memory``'s store, if one is registered."""
    return _sources.get(store_of(memory.settings))


def unregister(memory: AsyncAgentMemory) -> None:
    """Forget the source of ``memory``'s store if ``memory`` owns it (it was closed): its gauges stop."""
    store = store_of(memory.settings)
    with _lock:
        source = _sources.get(store)
        if source is not None and source.owned_by(memory):
            del _sources[store]


def _latest() -> list[tuple[str, MemoryStats]]:
    with _lock:
        sources = list(_sources.values())
    return [(source.store, stats) for source in sources if (stats := source.current()) is not None]


def graph_nodes(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.graph.nodes``: nodes per label."""
    return [Observation(n, {"store": store, "label": label})
            for store, stats in _latest() for label, n in stats.graph_nodes.items()]


def graph_relationships(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.graph.relationships``: relationships per type."""
    return [Observation(n, {"store": store, "type": rel})
            for store, stats in _latest() for rel, n in stats.graph_relationships.items()]


def postgres_rows(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.postgres.rows``: live rows per table."""
    return [Observation(n, {"store": store, "table": table})
            for store, stats in _latest() for table, n in stats.postgres_rows.items()]


def redis_used_memory(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.redis.used_memory``: the Redis server's memory in bytes."""
    return [Observation(stats.redis_used_memory_bytes, {"store": store}) for store, stats in _latest()]


def consolidation_pending(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.consolidation.pending``: conversations waiting for consolidation."""
    return [Observation(stats.unconsolidated_conversations, {"store": store}) for store, stats in _latest()]


def consolidation_lag(options: CallbackOptions) -> Iterable[Observation]:
    """``agentx_memory.consolidation.lag``: seconds the oldest unconsolidated conversation has waited since its last
    turn, as of now (it grows between two refreshes of the figures)."""
    now = datetime.now(UTC)
    return [Observation(0.0 if stats.oldest_unconsolidated_turn_at is None
                        else max(0.0, (now - stats.oldest_unconsolidated_turn_at).total_seconds()), {"store": store})
            for store, stats in _latest()]
