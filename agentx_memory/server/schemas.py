"""Request and response bodies of the REST service that :mod:`agentx_memory.models` does not already give.

A request body never names the user: the API key does (:mod:`agentx_memory.server.auth`). Bodies that create a
memory take the model's own fields but ``user_id``, the store-set ones (vectors, counters, status) and with
``channel`` optional (the key's default channel). Responses are the library's models; vectors are never sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import ShortTermEntry

__all__ = [
    "AuditEntry",
    "BlockGoalIn",
    "CompleteGoalIn",
    "ControlIn",
    "Deleted",
    "EntityIn",
    "FactIn",
    "ForgetIn",
    "ForgetReceiptOut",
    "ForgetUserIn",
    "GoalIn",
    "Health",
    "InjectIn",
    "Injected",
    "InvocationIn",
    "KeyInfo",
    "LedgerMarkIn",
    "PlanIn",
    "PoolCreateIn",
    "PoolDataIn",
    "PoolDataOut",
    "PoolGrantIn",
    "PoolOut",
    "PoolPatchIn",
    "PoolShareIn",
    "PoolStatisticsOut",
    "PromoteIn",
    "Ready",
    "ReinforceIn",
    "RelationshipIn",
    "RememberIn",
    "ScratchpadIn",
    "ShortTermEntry",
    "StoreHealth",
    "StrategyIn",
    "StrategySearchIn",
    "ThoughtIn",
    "TurnIn",
    "TurnsIn",
    "ValueIn",
    "Version",
    "WorkingGoalIn",
]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnIn(_In):
    """A conversation turn to store (the user is the key's)."""

    id: str | None = Field(None, description="the turn's id (default: a new UUID); repeating it is idempotent")
    conversation_id: str
    channel: str | None = Field(None, description="default: _global, or the key's first channel")
    index: int | None = Field(None, description="position in the conversation; assigned when absent")
    timestamp: datetime | None = Field(None, description="default: now")
    role: str = "user"
    content: str
    token_count: int | None = None
    model: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["agent", "global"] | None = None


class TurnsIn(_In):
    """Many turns stored with one embedding batch and one transaction per store."""

    turns: list[TurnIn] = Field(min_length=1)


class EntityIn(_In):
    """An entity to create or merge (by normalized name + type + channel)."""

    id: str | None = None
    channel: str | None = None
    name: str
    type: str = "concept"
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    salience: float = 0.5
    properties: dict[str, Any] = Field(default_factory=dict)


class FactIn(_In):
    """A fact to learn, linked to its source turn and the entities it is about."""

    id: str | None = None
    channel: str | None = None
    claim: str
    confidence: float = 0.7
    source: str = "conversation"
    source_turn_id: str | None = None
    conversation_id: str | None = None
    entity_ids: list[str] = Field(default_factory=list)
    temporal: Literal["current", "past", "future"] | None = None
    certainty: Literal["explicit", "implied", "inferred", "uncertain"] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["agent", "global"] | None = None


class PromoteIn(_In):
    """Why a project fact becomes global."""

    reason: str


class RelationshipIn(_In):
    """An edge between two of the user's entities."""

    source_id: str
    target_id: str
    rel_type: str = Field(description="RELATED_TO, PART_OF, LOCATED_IN, WORKS_FOR, KNOWS, CREATED_BY or REFERENCES")
    properties: dict[str, Any] = Field(default_factory=dict)


class EntitiesIn(_In):
    """Many entities created or merged in a few round trips (at most ``limits.max_batch_items``); one invalid item
    refuses the whole batch before anything is written."""

    entities: list[EntityIn] = Field(min_length=1)


class FactsIn(_In):
    """Many facts learned in a few round trips (at most ``limits.max_batch_items``); one invalid item refuses the
    whole batch before anything is written."""

    facts: list[FactIn] = Field(min_length=1)


class RelationshipsIn(_In):
    """Many edges between the user's entities (at most ``limits.max_batch_items``); one invalid item or unknown
    entity refuses the whole batch before anything is written."""

    relationships: list[RelationshipIn] = Field(min_length=1)


class GoalIn(_In):
    """A goal to store (``parent_id``: SUBGOAL_OF; ``blocked_by``: BLOCKED_BY)."""

    id: str | None = None
    channel: str | None = None
    description: str
    status: str = "active"
    priority: int = 0
    deadline: datetime | None = None
    parent_id: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class CompleteGoalIn(_In):
    """How a goal ended."""

    status: str = "completed"
    result: str | None = None


class BlockGoalIn(_In):
    """The goal that blocks this one."""

    blocker_id: str


class PlanIn(_In):
    """An agent's plan: a parent goal and one sub-goal per step."""

    steps: list[str | dict[str, Any]] = Field(min_length=1)
    parent_description: str | None = None
    channel: str | None = None
    ordered: bool = True


class InvocationIn(_In):
    """A tool call to record (``invocation_id`` makes retries idempotent)."""

    conversation_id: str
    turn_id: str | None = None
    tool_name: str
    tool_input: Any = None
    tool_output: Any = None
    success: bool | None = None
    latency_ms: int | None = None
    channel: str | None = None
    task_type: str | None = None
    error_message: str | None = None
    invocation_id: str | None = None
    timestamp: datetime | None = None


class StrategyIn(_In):
    """A strategy to record (or reinforce, when the user has the same one in the channel)."""

    description: str
    context_pattern: str = ""
    tool_sequence: list[str] = Field(default_factory=list)
    from_conversation_id: str | None = None
    success: bool = True
    channel: str | None = None
    steps: list[str] = Field(default_factory=list)
    trigger_conditions: list[str] = Field(default_factory=list)
    task_type: str | None = None


class StrategySearchIn(_In):
    """A task to find strategies for."""

    task_description: str
    channels: list[str] | None = None
    top_k: int = 5
    task_type: str | None = None


class ReinforceIn(_In):
    """One use of a strategy."""

    success: bool


class ControlIn(_In):
    """A rule, constraint or error pattern."""

    id: str | None = None
    channel: str | None = None
    content: str
    error_pattern: str | None = None
    severity: Literal["low", "medium", "high", "critical"] = "medium"
    source_trajectory_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["agent", "global"] | None = None


class RememberIn(_In):
    """A recall: what to ask and how (see AsyncAgentMemory.remember)."""

    query: str
    channel: str | None = Field(None, description="the active channel (with _global); default: _global, or the "
                                                  "key's first channel")
    top_k: int = 10
    time_window_hours: float | None = None
    include_episodic: bool = True
    include_semantic: bool = True
    include_procedural: bool = True
    reference_time: datetime | None = None
    memory_types: list[str] | None = None
    session_id: str | None = None
    recall: dict[str, Any] | None = Field(None, description="RecallSettings overrides for this call")


class ValueIn(_In):
    """A working-memory context value (any JSON)."""

    value: Any = None
    ttl_seconds: int | None = None


class ThoughtIn(_In):
    """A reasoning step for the session's thought stack."""

    thought: str | dict[str, Any]


class WorkingGoalIn(_In):
    """The session's active goal."""

    goal_id: str
    goal_description: str


class ScratchpadIn(_In):
    """The session's scratchpad text."""

    content: str


class LedgerMarkIn(_In):
    """Item keys (``fact:<id>``, ``turn:<id>`` ...) to mark as already shown to the model."""

    item_keys: list[str] = Field(min_length=1)


class InjectIn(_In):
    """Recall for ``query`` and render what the session has not been shown yet (the injection ledger)."""

    query: str
    top_k: int = 10
    max_tokens: int = 1500
    include_working: bool = True


class Injected(_In):
    """The prompt block of new memories (empty when everything was shown before)."""

    prompt: str


class ForgetIn(_In):
    """Either ids or a filter (every criterion given must hold)."""

    ids: list[str] = Field(default_factory=list)
    conversation_id: str | None = None
    channel: str | None = None
    before: datetime | None = None
    after: datetime | None = None
    memory_types: list[str] | None = None
    cascade: bool = True


class ForgetUserIn(_In):
    """Confirmation that the key's user's whole memory is to go."""

    confirm: Literal[True] = Field(description="must be true")


class ForgetReceiptOut(BaseModel):
    """What forgetting removed, per store."""

    user_id: str
    graph: dict[str, int]
    postgres: dict[str, int]
    redis_keys: int
    snapshots: int
    ids: list[str]
    not_found: list[str]


class PoolCreateIn(_In):
    """A new shared pool, owned by the acting agent."""

    pool_id: str
    pool_type: str = "shared"
    scope: str = "account"
    ttl_seconds: int | None = None
    public_read: bool = False
    data: dict[str, Any] | None = None


class PoolDataIn(_In):
    """A versioned replacement of a pool's data."""

    data: dict[str, Any]
    expected_version: int


class PoolPatchIn(_In):
    """A versioned key-by-key merge (``null`` removes a key)."""

    patch: dict[str, Any]
    expected_version: int


class PoolShareIn(_In):
    """Copy one of the user's memories into the pool."""

    memory_id: str
    expected_version: int
    memory_type: str | None = None


class PoolGrantIn(_In):
    """An agent's access level to a pool."""

    agent_id: str
    level: Literal["read", "write"]


class PoolOut(BaseModel):
    """A pool without its data."""

    pool_id: str
    pool_type: str
    scope: str
    owner_agent_id: str
    readers: list[str]
    writers: list[str]
    public_read: bool
    version: int
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class PoolDataOut(BaseModel):
    """A pool's data and the version to pass to the next write."""

    data: dict[str, Any]
    version: int


class PoolStatisticsOut(BaseModel):
    """What a pool holds and how it is used."""

    pool_id: str
    entries: int
    bytes: int
    version: int
    reads: int
    writes: int
    last_accessed_at: datetime | None
    readers: list[str]
    writers: list[str]
    public_read: bool
    expires_at: datetime | None


class Version(BaseModel):
    """The version after a write."""

    version: int


class Deleted(BaseModel):
    """Whether (or how much) something was deleted."""

    deleted: int


class AuditEntry(BaseModel):
    """One audit entry (docs/audit-queries.md; the configuration snapshot is left out)."""

    id: int
    timestamp: datetime
    operation: str
    memory_type: str
    user_id: str | None
    session_id: str | None
    conversation_id: str | None
    source_channel: str | None
    target_channels: list[str] | None
    query_text: str | None
    result_count: int | None
    latency_ms: int | None
    success: bool | None
    error_message: str | None
    metadata: dict[str, Any] | None


class KeyInfo(BaseModel):
    """The API key a request came with (never its token)."""

    key_id: str
    user_id: str
    agent_id: str | None
    channels: list[str]
    name: str


class Health(BaseModel):
    """Liveness: the process answers."""

    status: Literal["ok"]


class StoreHealth(BaseModel):
    """One store's answer to the readiness probe."""

    status: Literal["up", "down"]
    latency_ms: float
    error: str | None = Field(None, description="the error class when down")


class Ready(BaseModel):
    """Readiness: every store answered (503 with the same body when one did not)."""

    status: Literal["ready", "unavailable"]
    stores: dict[str, StoreHealth]
