"""Forgetting a user (issue 16, "forget, provably"): their data leaves every store, and a receipt says what went.

:func:`forget_user` removes, for one user:

* **graph**: every node carrying their ``user_id`` (turns, conversations, entities and their redirects, facts,
  goals, strategies, tool invocations, control memories) with its edges, in pages, and their ``User`` node;
* **PostgreSQL**: their rows of the conversation log, the timeline, the tool log, the profile, the episodic
  summaries, the short-term tier and the run records, and their entries in the change records of runs over every user
  (:mod:`agentx_memory.sql.forget`); their audit entries lose every content field;
* **Redis**: every working-memory key of theirs (session keys, the conversation hash, the ledger).

Then one audit entry (operation ``forget``) records that it happened, who asked (``requested_by``) and the counts,
with no content. The engine keeps no other copy: there is no embedding cache outside these stores (the benchmarks'
disk cache is theirs), and snapshots and pools do not exist yet. Forgetting is idempotent: a second call removes
nothing and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from .context import MemoryContext
from .graph import cypher

__all__ = ["ForgetReceipt", "forget_user"]

PAGE: Final = 1000


@dataclass
class ForgetReceipt:
    """What forgetting a user removed, per store: graph nodes by label, PostgreSQL rows by table, Redis keys."""

    user_id: str
    graph: dict[str, int] = field(default_factory=dict)
    postgres: dict[str, int] = field(default_factory=dict)
    redis_keys: int = 0

    @property
    def total(self) -> int:
        """Everything removed or scrubbed."""
        return sum(self.graph.values()) + sum(self.postgres.values()) + self.redis_keys

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for the audit entry and the CLI)."""
        return {"user_id": self.user_id, "graph": self.graph, "postgres": self.postgres,
                "redis_keys": self.redis_keys}


async def forget_user(ctx: MemoryContext, user_id: str, *, requested_by: str) -> ForgetReceipt:
    """Remove the user's data from every store (see the module docstring) and return the receipt."""
    receipt = ForgetReceipt(user_id=user_id)
    for label, statement in cypher.FORGET_NODES.items():
        deleted = 0
        while True:
            rows = await ctx.graph.write(statement, {"user_id": user_id, "limit": PAGE})
            page = rows[0]["deleted"] if rows else 0
            deleted += page
            if page < PAGE:
                break
        receipt.graph[label] = deleted
    rows = await ctx.graph.write(cypher.FORGET_USER_NODE, {"user_id": user_id})
    receipt.graph["User"] = rows[0]["deleted"] if rows else 0
    receipt.postgres = await ctx.sql.users.forget(user_id)
    receipt.redis_keys = await ctx.working.forget_user(user_id)
    await ctx.audit.log_write("forget", "user", None, [user_id],
                              {"requested_by": requested_by, **receipt.as_dict()}, user_id=user_id)
    return receipt
