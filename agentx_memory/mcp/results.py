"""What the MCP tools return: compact, JSON-safe views of the engine's models (no embeddings), each a pydantic
model so the SDK publishes it as the tool's output schema."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..forget import ForgetReceipt
from ..models import ControlMemory, Entity, Fact, Goal, Relationship, Turn
from ..retrieval.bundle import MemoryBundle, Scored
from ..semantic import EntityGraph

__all__ = [
    "EntityGraphResult",
    "EntityOut",
    "FactOut",
    "ForgetResult",
    "GoalList",
    "GoalOut",
    "LearnFactResult",
    "RecalledItem",
    "RelationshipOut",
    "RememberResult",
    "TurnOut",
]


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or infinity (a stored zero vector gives a NaN cosine)."""
    return value if value is None or math.isfinite(value) else None


class TurnOut(BaseModel):
    """A stored conversation turn."""

    id: str
    conversation_id: str
    index: int | None = Field(None, description="position in the conversation")
    role: str
    content: str
    channel: str
    timestamp: datetime
    agent_id: str | None = Field(None, description="the agent that wrote it (null: the user)")

    @classmethod
    def of(cls, turn: Turn) -> TurnOut:
        """The view of a stored turn."""
        return cls(id=turn.id, conversation_id=turn.conversation_id, index=turn.index, role=turn.role,
                   content=turn.content, channel=turn.channel, timestamp=turn.timestamp, agent_id=turn.agent_id)


class EntityOut(BaseModel):
    """An entity of the user's knowledge graph."""

    id: str
    name: str
    type: str
    channel: str
    description: str = ""
    aliases: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, entity: Entity) -> EntityOut:
        """The view of a stored entity."""
        return cls(id=entity.id, name=entity.name, type=entity.type, channel=entity.channel,
                   description=entity.description, aliases=list(entity.aliases))


class FactOut(BaseModel):
    """A fact the memory holds."""

    id: str
    claim: str
    confidence: float
    channel: str
    status: str = Field(description="active, superseded, rejected, review, duplicate or expired")
    temporal: str | None = Field(None, description="current, past or future")
    entity_ids: list[str] = Field(default_factory=list, description="the entities the fact is about")
    source_turn_id: str | None = None
    created_at: datetime

    @classmethod
    def of(cls, fact: Fact) -> FactOut:
        """The view of a stored fact."""
        return cls(id=fact.id, claim=fact.claim, confidence=_finite(fact.confidence) or 0.0, channel=fact.channel,
                   status=fact.status, temporal=fact.temporal, entity_ids=list(fact.entity_ids),
                   source_turn_id=fact.source_turn_id, created_at=fact.created_at)


class RelationshipOut(BaseModel):
    """An edge between two entities."""

    source_id: str
    target_id: str
    type: str

    @classmethod
    def of(cls, rel: Relationship) -> RelationshipOut:
        """The view of a relationship."""
        return cls(source_id=rel.source_id, target_id=rel.target_id, type=rel.rel_type)


class GoalOut(BaseModel):
    """One of the user's goals."""

    id: str
    description: str
    status: str = Field(description="active, completed, abandoned or blocked")
    priority: int
    channel: str
    created_at: datetime
    completed_at: datetime | None = None
    result: str | None = None
    deadline: datetime | None = None
    parent_id: str | None = Field(None, description="the goal this one is a sub-goal of")
    blocked_by: list[str] = Field(default_factory=list, description="goals that block this one")

    @classmethod
    def of(cls, goal: Goal) -> GoalOut:
        """The view of a stored goal."""
        return cls(id=goal.id, description=goal.description, status=goal.status, priority=goal.priority,
                   channel=goal.channel, created_at=goal.created_at, completed_at=goal.completed_at,
                   result=goal.result, deadline=goal.deadline, parent_id=goal.parent_id,
                   blocked_by=list(goal.blocked_by))


class GoalList(BaseModel):
    """Goals, highest priority first."""

    goals: list[GoalOut]


class RecalledItem(BaseModel):
    """One recalled memory with its score and the signals that made it (score = the sum of the contributions)."""

    kind: Literal["control", "turn", "fact", "entity", "strategy"]
    id: str
    score: float | None
    text: str = Field(description="the turn's content, the fact's claim, the entity's name, the rule or strategy")
    channel: str
    signals: dict[str, float | None] = Field(description="each signal's contribution to the score")
    details: dict[str, Any] = Field(default_factory=dict, description="kind-specific fields (conversation, role, "
                                    "time of a turn; confidence of a fact; type and linked entities of an entity)")

    @classmethod
    def of(cls, kind: Literal["control", "turn", "fact", "entity", "strategy"], scored: Scored) -> RecalledItem:
        """The view of a scored item of a bundle."""
        item = scored.item
        details: dict[str, Any] = {}
        if isinstance(item, Turn):
            text = item.content
            details = {"conversation_id": item.conversation_id, "role": item.role,
                       "timestamp": item.timestamp.isoformat()}
        elif isinstance(item, Fact):
            text = item.claim
            details = {"confidence": _finite(item.confidence), "temporal": item.temporal,
                       "entity_ids": list(item.entity_ids)}
        elif isinstance(item, Entity):
            text = item.name + (f": {item.description}" if item.description else "")
            details = {"type": item.type, "related": list(getattr(scored, "related", []))}
        elif isinstance(item, ControlMemory):
            text = item.content
        else:
            text = item.description
        return cls(kind=kind, id=item.id, score=_finite(scored.score), text=text, channel=item.channel,
                   signals={name: _finite(sig.contribution) for name, sig in scored.signals.items()},
                   details=details)


class RememberResult(BaseModel):
    """What recall found for a query: the items best first, the active goals, and the prompt block an agent would
    put into its system message."""

    query: str
    channels: list[str] = Field(description="the channels searched (always with _global)")
    items: list[RecalledItem] = Field(description="every recalled item, best first")
    goals: list[GoalOut] = Field(description="the user's active goals")
    prompt: str = Field(description="the memories as a system-message block that fits prompt_tokens")
    complete: bool = Field(description="false when a store was unreachable and recall answered without it")
    skipped: dict[str, str] = Field(default_factory=dict, description="parts of recall left out, and why")

    @classmethod
    def of(cls, bundle: MemoryBundle, prompt_tokens: int) -> RememberResult:
        """The view of a recalled bundle."""
        kinds = {id(s): kind for kind, items in (("control", bundle.controls), ("turn", bundle.turns),
                                                 ("fact", bundle.facts), ("entity", bundle.entities),
                                                 ("strategy", bundle.strategies)) for s in items}
        return cls(query=bundle.query, channels=list(bundle.channels),
                   items=[RecalledItem.of(kinds[id(s)], s) for s in bundle.all_scored()],  # type: ignore[arg-type]
                   goals=[GoalOut.of(g) for g in bundle.goals], prompt=bundle.to_prompt(prompt_tokens),
                   complete=bundle.complete, skipped=dict(bundle.metrics.skipped))


class LearnFactResult(BaseModel):
    """The stored fact and the entities it is about."""

    fact: FactOut
    entities: list[EntityOut] = Field(description="the entities the fact is about, as stored (created or merged)")


class EntityGraphResult(BaseModel):
    """An entity and its neighbourhood: the entities within ``depth`` hops, the edges among them, the facts about
    them."""

    entity: EntityOut
    entities: list[EntityOut]
    relationships: list[RelationshipOut]
    facts: list[FactOut]

    @classmethod
    def of(cls, entity: Entity, graph: EntityGraph) -> EntityGraphResult:
        """The view of an entity graph around ``entity``."""
        return cls(entity=EntityOut.of(entity), entities=[EntityOut.of(e) for e in graph.entities],
                   relationships=[RelationshipOut.of(r) for r in graph.relationships],
                   facts=[FactOut.of(f) for f in graph.facts])


class ForgetResult(BaseModel):
    """The receipt of a forget: what was removed from every store."""

    ids: list[str] = Field(description="the ids removed, derived memories (facts of forgotten turns) included")
    not_found: list[str] = Field(description="asked-for ids that name nothing of this user")
    graph: dict[str, int] = Field(description="graph nodes removed, by label")
    postgres: dict[str, int] = Field(description="PostgreSQL rows removed or scrubbed, by table")
    redis_keys: int = Field(description="working-memory keys removed")
    total: int = Field(description="everything removed or scrubbed")

    @classmethod
    def of(cls, receipt: ForgetReceipt) -> ForgetResult:
        """The view of a forget receipt."""
        return cls(ids=list(receipt.ids), not_found=list(receipt.not_found), graph=dict(receipt.graph),
                   postgres=dict(receipt.postgres), redis_keys=receipt.redis_keys, total=receipt.total)
