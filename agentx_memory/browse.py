"""Read-only listings of one user's memory, for browsing it (the memory explorer page, ``agentx_memory.explorer``).

Every listing is bounded (``limit``, with offset or keyset paging) and scoped to one user; on an agent's view
(:meth:`~agentx_memory.memory.AsyncAgentMemory.for_agent`) turns and facts are those the agent may read. Nothing here
writes: unlike recall, browsing does not count as an access (no access counts, no audit entry).
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from .context import MemoryContext
from .errors import NotFoundError, ValidationError
from .graph import cypher
from .models import Entity, Fact, Goal, Relationship, Turn
from .rows import entity_from_row, fact_from_row, facts_newest_first, goal_from_row
from .semantic import EntityGraph
from .validation import check_datetime, check_id, check_ids, check_int

__all__ = ["FACT_STATUSES", "MAX_OFFSET", "MAX_PAGE", "ConversationInfo", "FactRecord", "MemoryBrowser"]

#: The largest page any listing returns.
MAX_PAGE = 500
#: The largest offset of an offset-paged listing (deeper pages cost the database more than a browser needs).
MAX_OFFSET = 100_000
#: The statuses a fact can have (``Fact.status``).
FACT_STATUSES: tuple[str, ...] = typing.get_args(Fact.model_fields["status"].annotation)


class ConversationInfo(BaseModel):
    """One conversation of a user, as a list shows it."""

    conversation_id: str
    channel: str
    turns: int = Field(description="how many of its turns the reader may see")
    started_at: datetime
    last_turn_at: datetime
    archived: bool


class FactRecord(BaseModel):
    """A fact with its provenance: every turn it was derived from, and the facts it superseded (``fact.status`` and
    ``fact.superseded_by`` say whether, and by which fact, it was itself superseded)."""

    fact: Fact
    source_turn_ids: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)


def _page(limit: int, offset: int = 0) -> tuple[int, int]:
    return check_int(limit, "limit", low=1, high=MAX_PAGE), check_int(offset, "offset", low=0, high=MAX_OFFSET)


class MemoryBrowser:
    """The listings behind the facade's browsing methods (see the module docstring)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def users(self, *, after: str | None, limit: int) -> list[str]:
        """Ids of users with turns or timeline entries, in order, after ``after``."""
        check_int(limit, "limit", low=1, high=MAX_PAGE)
        return await self.ctx.sql.browse.users(after="" if after is None else check_id(after, "after"), limit=limit)

    async def overview(self, user_id: str, *, agent_id: str | None) -> dict[str, int]:
        """How many conversations, turns, tool invocations, entities, facts (active too), goals, strategies and
        control memories the user has."""
        counts = await self.ctx.sql.browse.counts(user_id, agent_id=agent_id)
        for name, statement in cypher.BROWSE_COUNTS.items():
            rows = await self.ctx.graph.read(statement, {"user_id": user_id})
            counts[name] = int(rows[0]["n"]) if rows else 0
        return counts

    async def conversations(self, user_id: str, *, limit: int, offset: int,
                            agent_id: str | None) -> list[ConversationInfo]:
        """The user's conversations, the latest first."""
        limit, offset = _page(limit, offset)
        rows = await self.ctx.sql.browse.conversations(user_id, limit=limit, offset=offset, agent_id=agent_id)
        return [ConversationInfo(**row) for row in rows]

    async def conversation_page(self, conversation_id: str, user_id: str, *, from_index: int, limit: int,
                                agent_id: str | None) -> list[Turn]:
        """Up to ``limit`` turns of a conversation from index ``from_index`` on."""
        check_id(conversation_id, "conversation_id")
        check_int(from_index, "from_index", low=0)
        check_int(limit, "limit", low=1, high=MAX_PAGE)
        return await self.ctx.sql.browse.conversation_page(conversation_id, user_id, from_index=from_index,
                                                           limit=limit, agent_id=agent_id)

    async def turns(self, turn_ids: typing.Sequence[str], user_id: str, *, agent_id: str | None) -> list[Turn]:
        """The user's turns with these ids, by conversation and index (unknown ids left out)."""
        ids = list(dict.fromkeys(check_ids(turn_ids, "turn_ids")))
        check_int(len(ids), "turn_ids", low=0, high=MAX_PAGE)
        return await self.ctx.sql.browse.turns(ids, user_id, agent_id=agent_id) if ids else []

    async def entities(self, user_id: str, *, limit: int, offset: int) -> list[Entity]:
        """A page of the user's entities, the most salient first."""
        limit, offset = _page(limit, offset)
        rows = await self.ctx.graph.read(cypher.BROWSE_ENTITIES,
                                         {"user_id": user_id, "limit": limit, "offset": offset})
        entities = [entity_from_row(r["entity"]) for r in rows]
        return sorted(entities, key=lambda e: (-e.salience, e.name, e.id))

    async def entity_map(self, user_id: str, *, limit: int) -> EntityGraph:
        """The user's ``limit`` most salient entities and the relationships among them (no facts)."""
        entities = await self.entities(user_id, limit=limit, offset=0)
        ids = [e.id for e in entities]
        edges = await self.ctx.graph.read(cypher.ENTITY_EDGES, {"ids": ids, "user_id": user_id, "limit": limit * 4})
        return EntityGraph(entities=entities, relationships=[
            Relationship(source_id=e["source_id"], target_id=e["target_id"], rel_type=e["rel_type"])
            for e in edges])

    async def facts(self, user_id: str, *, status: str | None, limit: int, offset: int,
                    agent_id: str | None) -> list[FactRecord]:
        """A page of the user's facts of every status (or of ``status``), the newest first, with provenance."""
        limit, offset = _page(limit, offset)
        if status is not None and status not in FACT_STATUSES:
            raise ValidationError("status", f"{status!r} is not one of {', '.join(FACT_STATUSES)}")
        rows = await self.ctx.graph.read(cypher.BROWSE_FACTS, {
            "user_id": user_id, "status": status, "limit": limit, "offset": offset, "agent_id": agent_id})
        return await self._with_links(user_id, facts_newest_first(rows))

    async def fact(self, fact_id: str, user_id: str, *, agent_id: str | None) -> FactRecord:
        """One of the user's facts (of any status) with its provenance; NotFoundError when there is none."""
        check_id(fact_id, "fact_id")
        rows = await self.ctx.graph.read(cypher.GET_FACT, {"id": fact_id, "user_id": user_id, "agent_id": agent_id})
        if not rows:
            raise NotFoundError("fact", fact_id)
        return (await self._with_links(user_id, [fact_from_row(rows[0]["fact"], rows[0]["entity_ids"])]))[0]

    async def _with_links(self, user_id: str, facts: list[Fact]) -> list[FactRecord]:
        if not facts:
            return []
        rows = await self.ctx.graph.read(cypher.BROWSE_FACT_LINKS, {"user_id": user_id, "ids": [f.id for f in facts]})
        links = {r["id"]: r for r in rows}
        out = []
        for fact in facts:
            link = links.get(fact.id, {})
            sources = sorted(t for t in link.get("source_turn_ids") or [] if t)
            if fact.source_turn_id in sources:  # the first source first
                sources.remove(fact.source_turn_id)
                sources.insert(0, fact.source_turn_id)
            out.append(FactRecord(fact=fact, source_turn_ids=sources,
                                  supersedes=sorted(x for x in link.get("supersedes") or [] if x)))
        return out

    async def goals(self, user_id: str, *, limit: int) -> list[Goal]:
        """The user's goals in every channel, oldest first (``parent_id`` and ``blocked_by`` make the tree)."""
        check_int(limit, "limit", low=1, high=10_000)
        rows = await self.ctx.graph.read(cypher.BROWSE_GOALS, {"user_id": user_id, "limit": limit})
        goals = [goal_from_row(r["goal"], r["parent_id"], r["blocked_by"]) for r in rows]
        return sorted(goals, key=lambda g: (g.created_at, g.id))

    async def audit_trail(self, user_id: str, *, operation: str | None, before: datetime | None,
                          before_id: int | None, limit: int) -> list[dict[str, typing.Any]]:
        """The user's audit entries, newest first, optionally of one operation, older than (``before``,
        ``before_id``) — the last entry of the previous page."""
        check_int(limit, "limit", low=1, high=MAX_PAGE)
        if operation is not None:
            check_id(operation, "operation", max_len=50)
        keyset = None
        if before is not None:
            last_id = 2**63 - 1 if before_id is None else check_int(before_id, "before_id", low=0)
            keyset = (check_datetime(before, "before"), last_id)
        return await self.ctx.sql.browse.audit_trail(user_id, operation=operation, before=keyset, limit=limit)

    async def audit_operations(self, user_id: str, *, days: int) -> list[str]:
        """The operations in the user's audit entries of the last ``days`` days."""
        check_int(days, "days", low=1, high=3650)
        return await self.ctx.sql.browse.audit_operations(user_id, since=datetime.now(UTC) - timedelta(days=days))
