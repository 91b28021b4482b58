"""The tier router (seed 002 ``RouterService``): one key read from or written to the tier it belongs in.

``AsyncAgentMemory.tiers(session_id, ...)`` returns a :class:`MemoryRouter` for one user's session. Three tiers:

``working``     Redis working memory of the session's conversation (``WorkingMemory.set/get``; minutes, TTL)
``short_term``  the short-term tier (:mod:`agentx_memory.short_term`; hours, TTL, counted reads)
``long_term``   a long-term fact keyed by the session and key (:func:`agentx_memory.short_term.fact_id_for`): the
                fact the ``short_term`` job promotes the entry to, or one :meth:`MemoryRouter.write` wrote there

:meth:`MemoryRouter.read` without a tier looks in that order — working, then short-term, then long-term — and returns
the first value found: the fastest, most recent tier wins, and a key that moved on (expired from working memory,
promoted out of the short-term tier) is still found where it went. A short-term hit counts as a read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from .errors import NotFoundError, ValidationError
from .graph import cypher
from .models import ShortTermEntry
from .semantic import SemanticMemory
from .short_term import ShortTermStore, check_memory_type, fact_id_for, fact_value, promoted_fact
from .validation import check_id, check_json
from .working import WorkingMemory

__all__ = ["TIERS", "MemoryRouter"]

#: The tiers, in the order an auto-routed read tries them.
TIERS: Final[tuple[str, ...]] = ("working", "short_term", "long_term")


class MemoryRouter:
    """Reads, writes and statistics across the tiers of one user's session (see the module docstring)."""

    def __init__(self, *, working: WorkingMemory, short_term: ShortTermStore, semantic: SemanticMemory,
                 session_id: str, agent_id: str | None = None):
        self._working = working
        self._short_term = short_term
        self._semantic = semantic
        self.session_id = session_id
        self.agent_id = agent_id

    @property
    def user_id(self) -> str:
        """The session's user."""
        return self._working.user_id

    @staticmethod
    def _tier(tier: str) -> str:
        if tier not in TIERS:
            raise ValidationError("tier", f"{tier!r} is not a tier; use one of {', '.join(TIERS)} (or None to route)")
        return tier

    async def read(self, key: str, tier: str | None = None) -> Any:
        """The value of ``key`` in ``tier``, or — without a tier — in the first tier that has it: working memory,
        then short-term, then long-term. ``None`` when no tier has it (a stored ``None`` reads the same)."""
        check_id(key, "key", max_len=200)
        for name in TIERS if tier is None else (self._tier(tier),):
            value = await self._read(name, key)
            if value is not None:
                return value
        return None

    async def _read(self, tier: str, key: str) -> Any:
        if tier == "working":
            return await self._working.get(key)
        if tier == "short_term":
            entry = await self._short_term.read(self.user_id, self.session_id, key, reader=self.agent_id)
            return None if entry is None else entry.value
        try:
            fact = await self._semantic.get_fact(fact_id_for(self.user_id, self.session_id, key), self.user_id)
        except NotFoundError:
            return None
        return fact_value(fact) if fact.status == "active" else None

    async def write(self, key: str, value: Any, tier: str = "working", *, memory_type: str = "task_context",
                    ttl_seconds: int | None = None) -> None:
        """Store ``value`` under ``key`` in one tier: ``working`` (expiring after ``ttl_seconds``, default
        ``working.ttl_seconds``), ``short_term`` (an entry of ``memory_type``, default TTL
        ``short_term.default_ttl_seconds``) or ``long_term`` (a fact in the global channel, claim ``"key: value"``,
        the value and the session in its metadata, as a promotion makes it; ``ttl_seconds`` does not apply)."""
        tier = self._tier(tier)
        if tier == "working":
            await self._working.set(key, value, ttl_seconds)
        elif tier == "short_term":
            await self._short_term.write(self.user_id, self.session_id, key, value, memory_type=memory_type,
                                         ttl_seconds=ttl_seconds, agent_id=self.agent_id)
        else:
            check_id(key, "key", max_len=200)
            check_memory_type(memory_type)
            check_json(value, "value", max_bytes=self._semantic.ctx.settings.limits.max_metadata_bytes)
            entry = ShortTermEntry(user_id=self.user_id, session_id=self.session_id, key=key, value=value,
                                   memory_type=memory_type, agent_id=self.agent_id, ttl_seconds=1,
                                   expires_at=datetime.now(UTC))
            await self._semantic.learn_fact(promoted_fact(entry, ctx=self._semantic.ctx))

    async def stats(self) -> dict[str, Any]:
        """Figures per tier: ``working_memory`` (``keys``: context values, ``recent_turns``, ``bytes``: the values
        as JSON plus the conversation hash), ``short_term`` (this session's
        :meth:`~agentx_memory.short_term.ShortTermStore.statistics`), ``long_term`` (the user's ``facts``,
        ``entities`` and ``turns`` in the graph) and ``shared`` (``pools`` and ``bytes`` of the user's live shared
        pools, or of those the router's agent may read)."""
        context = await self._working.get_context()
        values = context["values"]
        working = {"keys": len(values), "recent_turns": len(context["recent_turns"]),
                   "bytes": len(json.dumps(values, default=str).encode("utf-8")) if values else 0}
        working["bytes"] += await self._working.memory_size()
        long_term = {}
        for name, statement in cypher.USER_NODE_COUNTS.items():
            rows = await self._semantic.ctx.graph.read(statement, {"user_id": self.user_id})
            long_term[name] = rows[0]["n"] if rows else 0
        return {"working_memory": working,
                "short_term": await self._short_term.statistics(self.user_id, self.session_id, reader=self.agent_id),
                "long_term": long_term,
                "shared": await self._semantic.ctx.sql.pools.totals(self.user_id, self.agent_id)}
