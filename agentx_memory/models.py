"""The memory models (pydantic): what agents store and what recall returns.

Field names follow spec 003's graph schema. Timestamps are timezone-aware ``datetime`` in Python and epoch
milliseconds in the graph. ``metadata`` (and ``properties``) round-trip unchanged through storage and retrieval.
Models check only types; limits that depend on settings (content size, embedding dimension, channel names) are
checked when the model is stored, and raise :class:`~agentx_memory.errors.ValidationError`. Every id (``id``,
``user_id``, ``conversation_id``, ``source_turn_id``, ``entity_ids``, ``parent_id``, ``blocked_by``, tool names …)
follows one rule, :func:`agentx_memory.validation.check_id`: 1-100 characters (conversation ids 1-200), no leading or
trailing whitespace, no control characters, lone surrogates or line separators.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "GLOBAL_CHANNEL",
    "GOAL_STATUSES",
    "RELATIONSHIP_TYPES",
    "SEVERITIES",
    "SHORT_TERM_TYPES",
    "TITLE_CHARS",
    "ControlMemory",
    "Entity",
    "EpisodicSummary",
    "Fact",
    "Goal",
    "Relationship",
    "ShortTermEntry",
    "StoredItem",
    "Strategy",
    "ToolInvocation",
    "Turn",
    "UserProfile",
    "new_id",
    "summary_title",
    "utcnow",
]

GLOBAL_CHANNEL = "_global"

#: Relationship types between entities that ``create_relationship`` accepts (spec 003 "Key Relationships").
RELATIONSHIP_TYPES: tuple[str, ...] = (
    "RELATED_TO", "PART_OF", "LOCATED_IN", "WORKS_FOR", "KNOWS", "CREATED_BY", "REFERENCES",
)

GOAL_STATUSES: tuple[str, ...] = ("active", "completed", "abandoned", "blocked")


def new_id() -> str:
    """A new random id (UUID4 text)."""
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="after")
    @classmethod
    def _aware(cls, value: Any) -> Any:
        # Naive datetimes are taken as UTC so that epoch-millisecond storage is unambiguous.
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Turn(_Model):
    """One conversation turn (episodic memory)."""

    id: str = Field(default_factory=new_id)
    conversation_id: str
    user_id: str
    channel: str = GLOBAL_CHANNEL
    index: int | None = Field(None, description="position in the conversation; assigned when absent")
    timestamp: datetime = Field(default_factory=utcnow)
    role: str = "user"
    content: str
    token_count: int | None = None
    model: str | None = Field(None, description="the LLM that produced an assistant turn, if any")
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None
    agent_id: str | None = Field(None, description="the agent of the user that wrote it (None: the user, no agent)")
    scope: Literal["agent", "global"] | None = Field(
        None, description="agent: only agent_id reads it; global: every agent of the user; None: the kind's default "
        "(seed 001: a turn an agent writes is private to it, every other memory global)")
    pending_projection: bool = Field(
        False, description="set by the store: durable in the log, not yet in the graph (it was unreachable); "
        "reconcile() projects it. Ignored on input",
    )


class Entity(_Model):
    """A person, place, thing or concept (semantic memory)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    channel: str = GLOBAL_CHANNEL
    name: str
    type: str = "concept"
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    salience: float = 0.5
    first_seen: datetime = Field(default_factory=utcnow)
    last_accessed: datetime | None = None
    access_count: int = 0
    properties: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None


class Fact(_Model):
    """A claim the agent holds to be true, with its confidence and provenance (semantic memory)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    channel: str = GLOBAL_CHANNEL
    claim: str
    confidence: float = 0.7
    source: str = "conversation"
    source_turn_id: str | None = None
    conversation_id: str | None = None
    entity_ids: list[str] = Field(default_factory=list, description="entities the fact is ABOUT")
    temporal: Literal["current", "past", "future"] | None = None
    certainty: Literal["explicit", "implied", "inferred", "uncertain"] | None = Field(
        None, description="how the fact is known (extraction's label); the decay job lowers inferred facts' confidence")
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed: datetime | None = None
    access_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None
    agent_id: str | None = Field(None, description="the agent of the user that wrote it (None: the user, no agent)")
    scope: Literal["agent", "global"] | None = Field(
        None, description="agent: only agent_id reads it; global: every agent of the user; None: the kind's default "
        "(seed 001: a turn an agent writes is private to it, every other memory global)")
    status: Literal["active", "superseded", "rejected", "review", "duplicate", "expired", "archived"] = Field(
        "active", description="set by the store, never by a write: superseded (a newer fact or a correction replaced "
        "it), rejected (an older fact it contradicts was kept), duplicate (dedup merged it into superseded_by), "
        "expired (past retention.fact_days unused) and archived (stale: the context_rot job) are left out of recall; "
        "review: it contradicts another fact and both wait for a person (extraction.contradiction_policy)")
    superseded_by: str | None = Field(None, description="set by the store: the fact that superseded this one")


#: Severities of a control memory, lowest first.
SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")


class ControlMemory(_Model):
    """A rule, constraint or error pattern: what the agent must avoid (seed 001's control memory). Default scope:
    ``_global`` (the user's rules hold in every channel)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    channel: str = GLOBAL_CHANNEL
    content: str = Field(description="the rule, e.g. 'Never use range() for unknown-length pagination'")
    error_pattern: str | None = Field(None, description="the kind of error the rule guards against")
    severity: Literal["low", "medium", "high", "critical"] = "medium"
    source_trajectory_id: str | None = Field(None, description="the conversation or run that taught the rule")
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed: datetime | None = None
    access_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_id: str | None = Field(None, description="the agent of the user that wrote it (None: the user, no agent)")
    scope: Literal["agent", "global", "system"] | None = Field(
        None, description="agent: only agent_id reads it; global: every agent of the user; system: every user of "
        "the installation (written with the admin key: AgentMemory.as_admin); None: global")
    embedding: list[float] | None = None


class EpisodicSummary(_Model):
    """A conversation summarized (spec 000's episodic memory): what it was about, what was decided, who and what it
    mentioned and which tools it called. ``method`` says who wrote it: ``llm`` or ``extractive``."""

    user_id: str
    conversation_id: str
    channel: str = GLOBAL_CHANNEL
    summary: str
    key_decisions: list[str] = Field(default_factory=list)
    entities_mentioned: list[dict[str, Any]] = Field(default_factory=list)
    tools_called: list[str] = Field(default_factory=list)
    turn_count: int = 0
    method: Literal["llm", "extractive"] = "extractive"
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def title(self) -> str:
        """A short title derived from the summary (spec 003's ``Conversation.title``, which summarizing sets): its
        first sentence without the closing period, cut at a word to at most :data:`TITLE_CHARS` characters
        (``…`` marks a cut)."""
        return summary_title(self.summary)


#: The longest conversation title (characters), see :attr:`EpisodicSummary.title`.
TITLE_CHARS = 80
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def summary_title(summary: str) -> str:
    """The title of a conversation from its summary text: the first sentence, whitespace collapsed, without a
    closing period, at most :data:`TITLE_CHARS` characters (cut at a word boundary, ending in ``…``); empty for an
    empty summary."""
    text = " ".join(summary.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".")
    if len(first) <= TITLE_CHARS:
        return first
    cut = first[: TITLE_CHARS - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


class Goal(_Model):
    """Something the user or agent is after (goal memory)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    channel: str = GLOBAL_CHANNEL
    description: str
    status: str = "active"
    priority: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    result: str | None = None
    deadline: datetime | None = None
    parent_id: str | None = Field(None, description="the goal this one is a SUBGOAL_OF")
    blocked_by: list[str] = Field(default_factory=list, description="goals this one is BLOCKED_BY")
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None


class Strategy(_Model):
    """A way of doing a task that worked (or did not), with its tool sequence (procedural memory)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    channel: str = GLOBAL_CHANNEL
    description: str
    context_pattern: str = ""
    tool_sequence: list[str] = Field(default_factory=list)
    success_count: int = 0
    failure_count: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    last_used: datetime | None = None
    from_conversation_id: str | None = None
    steps: list[str] = Field(default_factory=list, description="the procedure's ordered steps (seed 001)")
    trigger_conditions: list[str] = Field(
        default_factory=list, description="when to apply it (seed 001); part of its vector, so a situation finds it")
    task_type: str | None = Field(
        None, description="the kind of task it is for (spec 003: strategies linked to task types); None: not given")
    embedding: list[float] | None = None

    @property
    def success_rate(self) -> float:
        """Laplace-smoothed success rate: (successes + 1) / (uses + 2)."""
        return (self.success_count + 1) / (self.success_count + self.failure_count + 2)


class ToolInvocation(_Model):
    """One call of a tool by the agent (procedural memory)."""

    id: str = Field(default_factory=new_id)
    user_id: str
    conversation_id: str
    turn_id: str | None = None
    turn_index: int = 0
    channel: str = GLOBAL_CHANNEL
    tool_name: str
    task_type: str | None = None
    tool_input: Any = Field(default_factory=dict)
    tool_output: Any = None
    success: bool | None = None
    latency_ms: int | None = None
    error_message: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)
    pending_projection: bool = Field(
        False, description="set by the store: durable in the log, not yet in the graph (it was unreachable); "
        "reconcile() projects it. Ignored on input",
    )


class Relationship(_Model):
    """A typed edge between two entities."""

    source_id: str
    target_id: str
    rel_type: str
    properties: dict[str, Any] = Field(default_factory=dict)
    user_id: str | None = Field(None, description="the user both entities belong to (None in create_relationships: "
                                "the call's user)")


class UserProfile(_Model):
    """A user's profile (PostgreSQL ``user_profiles``)."""

    user_id: str
    preferences: dict[str, Any] = Field(default_factory=dict)
    expertise_areas: list[Any] = Field(default_factory=list)
    communication_style: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


#: The kinds of short-term entry (seed 002's ``AgentShortTermMemory::MEMORY_TYPES``).
SHORT_TERM_TYPES: tuple[str, ...] = ("task_context", "conversation", "tool_result", "reflection", "observation")


class ShortTermEntry(_Model):
    """One entry of the short-term tier (PostgreSQL ``short_term_memory``): a JSON value under a key of a user's
    session, with its expiry and how often it was read (:mod:`agentx_memory.short_term`)."""

    user_id: str
    session_id: str
    key: str
    value: Any = None
    memory_type: Literal["task_context", "conversation", "tool_result", "reflection", "observation"]
    agent_id: str | None = None
    ttl_seconds: int
    expires_at: datetime
    access_count: int = 0
    last_accessed_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the entry had expired at ``now`` (default: the current time); an expired entry reads as absent."""
        return self.expires_at <= (now or utcnow())


class StoredItem(_Model):
    """A JSON document under a key of a namespace path of one user's item store (PostgreSQL ``store_items``;
    :mod:`agentx_memory.items`, and the LangGraph store of :mod:`agentx_memory.integrations.langgraph`)."""

    user_id: str
    namespace: tuple[str, ...] = Field(description="the path below the user, e.g. ('memories', 'food'); may be ()")
    key: str
    value: dict[str, Any]
    agent_id: str | None = Field(None, description="the agent it belongs to (None: the user's, every agent reads it)")
    channel: str = GLOBAL_CHANNEL
    searchable: bool = Field(False, description="whether it has a text embedded for search by meaning")
    ttl_minutes: float | None = Field(None, description="it expires this long after its last write or refreshing "
                                                        "read (None: never)")
    expires_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    score: float | None = Field(None, description="set by a search by meaning: the cosine similarity to the query "
                                                  "(None: not ranked, or not searchable)")
