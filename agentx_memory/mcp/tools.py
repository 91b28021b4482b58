"""The MCP tools: remember, store_turn, learn_fact, get_entity_graph, add_goal / list_goals / update_goal, forget.

Each tool's parameters are typed and described (the SDK turns the signature into the tool's JSON schema, with the
limits: lengths, ranges, enumerations); what it returns is a model of :mod:`.results` (its output schema). Every call
acts on the memory of the server's :class:`~.binding.McpBinding`: no tool takes a user id.

No ``from __future__ import annotations`` here: the parameter annotations hold limits read from the settings when the
server is built, and the SDK evaluates them from the function itself.
"""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from ..errors import NotFoundError, ValidationError
from ..memory import AsyncAgentMemory
from ..models import Entity, Fact, Goal, Turn
from ..semantic import normalize_name
from ..settings import LimitsSettings
from .binding import McpBinding
from .errors import tool_errors
from .results import (
    EntityGraphResult,
    EntityOut,
    FactOut,
    ForgetResult,
    GoalList,
    GoalOut,
    LearnFactResult,
    RememberResult,
    TurnOut,
)

__all__ = ["EntityRef", "register_tools"]

#: The most items one remember call returns, and the largest prompt block it composes.
MAX_TOP_K = 100
MAX_PROMPT_TOKENS = 32_000
#: The most entities one learn_fact call names, and the most ids one forget call takes.
MAX_FACT_ENTITIES = 50
MAX_FORGET_IDS = 1000
#: The longest id (turn, fact, entity, goal), and the longest conversation id (the columns' widths).
ID_MAX = 100
CONVERSATION_ID_MAX = 200

Channel = Annotated[str | None, Field(
    description="the channel (project) to act in: '_global' or a slug of lowercase letters, digits, '.', '_', '-' "
                "(1-100 characters); default: the server's channel", min_length=1, max_length=100)]
MemoryKind = Literal["episodic", "semantic", "procedural", "control"]
ForgetKind = Literal["episodic", "semantic", "procedural", "control", "goal"]
GoalStatus = Literal["active", "completed", "abandoned", "blocked"]


class EntityRef(BaseModel):
    """An entity a fact is about, by name: created, or merged with the user's entity of that name and type."""

    name: str = Field(description="the entity's name, e.g. 'Lisbon'", min_length=1, max_length=1000)
    type: str = Field("concept", description="its type, e.g. person, place, organization, project, concept",
                      min_length=1, max_length=100)
    description: str = Field("", description="a short description (kept when empty)", max_length=4000)


def register_tools(server: MCPServer, memory: Callable[[], AsyncAgentMemory], binding: McpBinding,
                   limits: LimitsSettings) -> None:
    """Add every tool to ``server``; ``memory()`` gives the (opened) memory a call acts on."""
    text_max = limits.max_text_bytes
    turn_max = limits.max_turn_bytes

    def channel_of(channel: str | None) -> str:
        return binding.channel if channel is None else channel

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    additive = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=read_only)
    @tool_errors
    async def remember(
        query: Annotated[str, Field(description="what to recall, in natural language (time phrases such as 'last "
                                                "week' narrow it)", min_length=1, max_length=text_max)],
        top_k: Annotated[int, Field(description="the most items of each kind to return", ge=1, le=MAX_TOP_K)] = 10,
        channel: Channel = None,
        time_window_hours: Annotated[float | None, Field(
            description="only memories of the last N hours", gt=0, le=1_000_000)] = None,
        memory_types: Annotated[list[MemoryKind] | None, Field(
            description="only these kinds of memory (default: all)", min_length=1, max_length=4)] = None,
        prompt_tokens: Annotated[int, Field(description="the token budget of the returned prompt block",
                                            ge=50, le=MAX_PROMPT_TOKENS)] = 1500,
    ) -> RememberResult:
        """Recall the memories relevant to a query: scored conversation turns, facts, entities, strategies and rules
        from the channel and _global, the user's active goals, and a prompt block to put into the system
        message. Each item has its score and the signals (vector, lexical, graph, recency...) that add up to it."""
        bundle = await memory().remember(query, channel=channel_of(channel), top_k=top_k,
                                         time_window_hours=time_window_hours, memory_types=memory_types,
                                         session_id="mcp")
        return RememberResult.of(bundle, prompt_tokens)

    @server.tool(annotations=additive)
    @tool_errors
    async def store_turn(
        conversation_id: Annotated[str, Field(description="the conversation the turn belongs to",
                                              min_length=1, max_length=CONVERSATION_ID_MAX)],
        content: Annotated[str, Field(description="what was said", min_length=1, max_length=turn_max)],
        role: Annotated[Literal["user", "assistant", "system", "tool"], Field(description="who said it")] = "user",
        timestamp: Annotated[datetime | None, Field(
            description="when it was said, ISO 8601 (default: now; without a zone: UTC)")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(
            description=f"any JSON object to keep with the turn (at most {limits.max_metadata_bytes} bytes)")] = None,
        channel: Channel = None,
    ) -> TurnOut:
        """Store one conversation turn in the user's memory (durable log, graph, working memory); it is recalled by
        remember from then on. Storing the same content at the same position again returns the stored turn."""
        me = memory()
        turn = Turn(conversation_id=conversation_id, user_id=binding.user_id, content=content, role=role,
                    metadata=metadata or {}, channel=channel_of(channel),
                    **({"timestamp": timestamp} if timestamp is not None else {}))
        return TurnOut.of(await me.store_turn(turn))

    @server.tool(annotations=additive)
    @tool_errors
    async def learn_fact(
        claim: Annotated[str, Field(description="the fact, as a sentence, e.g. 'Alice lives in Lisbon'",
                                    min_length=1, max_length=text_max)],
        entities: Annotated[list[EntityRef] | None, Field(
            description="entities the fact is about, by name (created or merged)",
            max_length=MAX_FACT_ENTITIES)] = None,
        entity_ids: Annotated[list[Annotated[str, Field(min_length=1, max_length=ID_MAX)]] | None, Field(
            description="ids of existing entities the fact is about", max_length=MAX_FACT_ENTITIES)] = None,
        confidence: Annotated[float, Field(description="how sure the fact is, 0 to 1", ge=0.0, le=1.0)] = 0.7,
        temporal: Annotated[Literal["current", "past", "future"] | None, Field(
            description="whether the fact holds now, held in the past, or will hold")] = None,
        source_turn_id: Annotated[str | None, Field(
            description="the id of the turn the fact comes from (forgetting that turn forgets the fact)",
            min_length=1, max_length=ID_MAX)] = None,
        channel: Channel = None,
    ) -> LearnFactResult:
        """Store a fact in the user's knowledge graph, linked to the entities it is about (by name, created or merged
        with existing ones, or by id) and to the turn it comes from."""
        me, where = memory(), channel_of(channel)
        # an unknown id fails here, before anything is written
        linked = {entity_id: await me.get_entity(entity_id) for entity_id in entity_ids or ()}
        for ref in entities or ():
            stored = await me.upsert_entity(Entity(user_id=binding.user_id, name=ref.name, type=ref.type,
                                                   description=ref.description), channel=where)
            linked[stored.id] = stored
        fact = await me.learn_fact(Fact(user_id=binding.user_id, claim=claim, entity_ids=list(linked),
                                        confidence=confidence, temporal=temporal, source_turn_id=source_turn_id,
                                        source="mcp"), channel=where)
        return LearnFactResult(fact=FactOut.of(fact), entities=[EntityOut.of(e) for e in linked.values()])

    @server.tool(annotations=read_only)
    @tool_errors
    async def get_entity_graph(
        entity_id: Annotated[str | None, Field(description="the entity's id (or give its name)",
                                               min_length=1, max_length=ID_MAX)] = None,
        name: Annotated[str | None, Field(description="the entity's name (or give its id); matched ignoring case",
                                          min_length=1, max_length=1000)] = None,
        type: Annotated[str | None, Field(description="with name: only an entity of this type",
                                          min_length=1, max_length=100)] = None,
        depth: Annotated[int, Field(description="how many hops around the entity", ge=1, le=3)] = 1,
        limit: Annotated[int | None, Field(description="the most neighbours (default: the engine's setting)",
                                           ge=1, le=1000)] = None,
    ) -> EntityGraphResult:
        """An entity and its neighbourhood in the user's knowledge graph: the entities within depth hops, the
        relationships among them and the facts about them."""
        me = memory()
        if (entity_id is None) == (name is None):
            raise ValidationError("entity_id", "give the entity's id or its name (exactly one of entity_id, name)")
        entity = await me.get_entity(entity_id) if entity_id is not None else await _entity_named(me, name or "",
                                                                                                  type, binding)
        graph = await me.get_entity_graph([entity.id], depth=depth, limit=limit)
        return EntityGraphResult.of(entity, graph)

    @server.tool(annotations=additive)
    @tool_errors
    async def add_goal(
        description: Annotated[str, Field(description="what the user (or agent) is after",
                                          min_length=1, max_length=text_max)],
        priority: Annotated[int, Field(description="higher comes first", ge=-1_000_000, le=1_000_000)] = 0,
        deadline: Annotated[datetime | None, Field(description="when it is due, ISO 8601")] = None,
        parent_id: Annotated[str | None, Field(description="the goal this one is a sub-goal of",
                                               min_length=1, max_length=ID_MAX)] = None,
        channel: Channel = None,
    ) -> GoalOut:
        """Create a goal (status active); remember shows active goals with every recall."""
        me = memory()
        goal = await me.add_goal(Goal(user_id=binding.user_id, description=description, priority=priority,
                                      deadline=deadline, parent_id=parent_id), channel=channel_of(channel))
        return GoalOut.of(goal)

    @server.tool(annotations=read_only)
    @tool_errors
    async def list_goals(
        status: Annotated[GoalStatus | None, Field(description="only goals of this status (null: every goal)")
                          ] = "active",
        channel: Channel = None,
    ) -> GoalList:
        """The user's goals of a status (default: the active ones) in the channel and _global, highest priority
        first."""
        goals = await memory().list_goals(status=status, channels=[channel_of(channel)])
        return GoalList(goals=[GoalOut.of(g) for g in goals])

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    @tool_errors
    async def update_goal(
        goal_id: Annotated[str, Field(description="the goal's id", min_length=1, max_length=ID_MAX)],
        status: Annotated[GoalStatus, Field(description="the new status")] = "completed",
        result: Annotated[str | None, Field(description="what came of it", min_length=1,
                                            max_length=text_max)] = None,
    ) -> GoalOut:
        """Set a goal's status: complete it (the default), abandon it, mark it blocked, or make it active again;
        with an optional result."""
        return GoalOut.of(await memory().complete_goal(goal_id, status=status, result=result))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                             open_world_hint=False))
    @tool_errors
    async def forget(
        ids: Annotated[list[Annotated[str, Field(min_length=1, max_length=CONVERSATION_ID_MAX)]] | None, Field(
            description="ids of turns, facts, entities, goals, strategies or rules, or conversation ids (all their "
                        "turns); or give a filter instead", min_length=1, max_length=MAX_FORGET_IDS)] = None,
        conversation_id: Annotated[str | None, Field(description="filter: memories of this conversation",
                                                     min_length=1, max_length=CONVERSATION_ID_MAX)] = None,
        channel: Annotated[str | None, Field(description="filter: memories of this channel",
                                             min_length=1, max_length=100)] = None,
        before: Annotated[datetime | None, Field(description="filter: memories from before this time (ISO 8601)")
                          ] = None,
        after: Annotated[datetime | None, Field(description="filter: memories from this time on (ISO 8601)")] = None,
        memory_types: Annotated[list[ForgetKind] | None, Field(description="filter: only these kinds of memory",
                                                               min_length=1, max_length=5)] = None,
        cascade: Annotated[bool, Field(description="also forget what is derived (facts whose every source turn "
                                                   "goes, summaries)")] = True,
    ) -> ForgetResult:
        """Remove memories of the user from every store, by ids or by a filter (every criterion given must hold),
        and return the receipt: the ids removed and the counts per store. Ids that name nothing of this user are
        listed in not_found. This cannot be undone."""
        receipt = await memory().forget(ids or (), conversation_id=conversation_id, channel=channel, before=before,
                                        after=after, memory_types=memory_types, cascade=cascade,
                                        requested_by="mcp")
        return ForgetResult.of(receipt)


async def _entity_named(memory: AsyncAgentMemory, name: str, type_: str | None, binding: McpBinding) -> Entity:
    """The user's entity of this name (and type): the best-scored one recall finds whose name or alias matches."""
    wanted = normalize_name(name)
    bundle = await memory.remember(name, channel=binding.channel, top_k=20, memory_types=["semantic"],
                                   session_id="mcp")
    for scored in bundle.entities:
        entity = scored.item
        names = {normalize_name(entity.name), *(normalize_name(a) for a in entity.aliases)}
        if wanted in names and (type_ is None or entity.type.casefold() == type_.strip().casefold()):
            return entity
    raise NotFoundError("entity", name)
