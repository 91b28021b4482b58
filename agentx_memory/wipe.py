"""Removing everything of one user from the graph, PostgreSQL and Redis, with the counts per store.

The shared step of :func:`~agentx_memory.forget.forget_user` (which adds the kept snapshots and the audit entry)
and of restoring a snapshot (:mod:`agentx_memory.snapshots`, which wipes before loading and after a failed load).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from .context import MemoryContext
from .graph import cypher

__all__ = ["Wiped", "wipe_user"]

PAGE: Final = 1000


@dataclass
class Wiped:
    """What :func:`wipe_user` removed: graph nodes by label, PostgreSQL rows by table, Redis keys."""

    graph: dict[str, int] = field(default_factory=dict)
    postgres: dict[str, int] = field(default_factory=dict)
    redis_keys: int = 0


async def wipe_user(ctx: MemoryContext, user_id: str) -> Wiped:
    """Delete the user's nodes (in pages) and ``User`` node, their rows of every table (their audit entries
    stripped of content) and their working-memory keys."""
    wiped = Wiped()
    for label, statement in cypher.FORGET_NODES.items():
        deleted = 0
        while True:
            rows = await ctx.graph.write(statement, {"user_id": user_id, "limit": PAGE})
            page = rows[0]["deleted"] if rows else 0
            deleted += page
            if page < PAGE:
                break
        wiped.graph[label] = deleted
    rows = await ctx.graph.write(cypher.FORGET_USER_NODE, {"user_id": user_id})
    wiped.graph["User"] = rows[0]["deleted"] if rows else 0
    wiped.postgres = await ctx.sql.users.forget(user_id)
    wiped.redis_keys = await ctx.working.forget_user(user_id)
    return wiped
