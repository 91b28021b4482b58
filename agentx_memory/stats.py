"""How big the memory is and how far consolidation lags (spec 003's monitoring list), read cheaply.

:func:`gather_stats` is what :meth:`AsyncAgentMemory.memory_stats` returns: graph nodes per label and relationships
per type (answered from the databases' own counters), PostgreSQL live rows per table (its statistics counters, see
:mod:`agentx_memory.sql.stats`), the Redis server's memory, and the consolidation backlog (conversations with turns
not consolidated yet and when the oldest one's last turn was). The observability package turns it into gauges.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from .context import MemoryContext
from .graph import cypher
from .timeutil import from_ms

__all__ = ["MemoryStats", "gather_stats"]


class MemoryStats(BaseModel):
    """The size of every store and the consolidation backlog, at ``taken_at`` (every user's, the whole store)."""

    taken_at: datetime
    graph_nodes: dict[str, int] = Field(default_factory=dict, description="nodes per label")
    graph_relationships: dict[str, int] = Field(default_factory=dict, description="relationships per type")
    postgres_rows: dict[str, int] = Field(
        default_factory=dict, description="live rows per table (PostgreSQL's counters, within a second of a commit)")
    redis_used_memory_bytes: int = Field(0, description="the Redis server's used_memory (INFO memory)")
    unconsolidated_conversations: int = Field(
        0, description="conversations (not archived) with turns newer than their last consolidation")
    oldest_unconsolidated_turn_at: datetime | None = Field(
        None, description="the last turn of the unconsolidated conversation that has waited longest (None: none)")

    @property
    def consolidation_lag_seconds(self) -> float:
        """How long the oldest unconsolidated conversation has waited since its last turn, as of ``taken_at``
        (0 when every conversation is consolidated)."""
        if self.oldest_unconsolidated_turn_at is None:
            return 0.0
        return max(0.0, (self.taken_at - self.oldest_unconsolidated_turn_at).total_seconds())


async def gather_stats(ctx: MemoryContext) -> MemoryStats:
    """Read :class:`MemoryStats` from the memory's stores (four graph and SQL round trips and one Redis call)."""
    taken_at = datetime.now(UTC)
    # a label or type the graph has not held (yet) gives no row on either database: it counts 0
    nodes = {row["name"]: int(row["n"]) for row in await ctx.graph.read(cypher.STATS_NODE_COUNTS)}
    relationships = {row["name"]: int(row["n"]) for row in await ctx.graph.read(cypher.STATS_RELATIONSHIP_COUNTS)}
    backlog = await ctx.graph.read(cypher.STATS_CONSOLIDATION_BACKLOG)
    oldest = backlog[0]["oldest_last_turn_at"] if backlog else None
    return MemoryStats(
        taken_at=taken_at,
        graph_nodes={label: nodes.get(label, 0) for label in cypher.STATS_NODE_LABELS},
        graph_relationships={rel: relationships.get(rel, 0) for rel in cypher.STATS_RELATIONSHIP_TYPES},
        postgres_rows=await ctx.sql.stats.rows_per_table(),
        redis_used_memory_bytes=await ctx.working.used_memory(),
        unconsolidated_conversations=int(backlog[0]["pending"]) if backlog else 0,
        oldest_unconsolidated_turn_at=from_ms(oldest) if oldest is not None else None,
    )
