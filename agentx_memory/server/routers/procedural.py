"""Tool invocations and their statistics, strategies and rules (procedural and control memory)."""

from __future__ import annotations

from typing import Any

from ...control import ControlMatch
from ...models import ControlMemory, Strategy, ToolInvocation
from ...procedural import StrategyMatch
from ..auth import KeyScopeError, Reader, Writer
from ..schemas import ControlIn, InvocationIn, ReinforceIn, StrategyIn, StrategySearchIn
from . import api_router

__all__ = ["router"]

router = api_router("tools and strategies")


@router.post("/tool-invocations", status_code=201, response_model=ToolInvocation, summary="Record a tool call")
async def record_invocation(body: InvocationIn, caller: Writer) -> ToolInvocation:
    """Record a tool call (durable log + graph); ``invocation_id`` makes retries idempotent."""
    return await caller.memory.record_invocation(
        body.conversation_id, body.turn_id, body.tool_name, body.tool_input, body.tool_output, body.success,
        body.latency_ms, caller.write_channel(body.channel), user_id=caller.user_id, task_type=body.task_type,
        error_message=body.error_message, invocation_id=body.invocation_id, timestamp=body.timestamp)


@router.get("/tools/stats", response_model=list[dict[str, Any]], summary="Per-tool statistics")
async def tool_stats(caller: Reader, task_type: str | None = None, channel: str | None = None) -> list[dict[str, Any]]:
    """Per-tool usage, success rate and latency (optionally of one task type / channel)."""
    if channel is None and caller.key.channels:
        channel = caller.key.channels[0]
    return await caller.memory.get_tool_stats(task_type, None if channel is None else caller.read_channel(channel),
                                              caller.user_id)


@router.post("/strategies", status_code=201, response_model=Strategy, summary="Learn a strategy")
async def learn_strategy(body: StrategyIn, caller: Writer) -> Strategy:
    """Record a strategy, or reinforce the user's same one in the channel."""
    return await caller.memory.learn_strategy(
        body.description, body.context_pattern, body.tool_sequence, body.from_conversation_id, body.success,
        caller.write_channel(body.channel), caller.user_id, steps=body.steps,
        trigger_conditions=body.trigger_conditions, task_type=body.task_type)


@router.post("/strategies/search", response_model=list[StrategyMatch], summary="Find strategies for a task")
async def find_strategies(body: StrategySearchIn, caller: Reader) -> list[StrategyMatch]:
    """Strategies for a task, ranked by similarity and success rate (a read)."""
    found = await caller.memory.find_strategies(body.task_description, caller.read_channels(body.channels),
                                                body.top_k, caller.user_id, task_type=body.task_type)
    return caller.only_visible(found)


@router.post("/strategies/{strategy_id}/reinforce", response_model=Strategy, summary="Count a strategy's use")
async def reinforce_strategy(strategy_id: str, body: ReinforceIn, caller: Writer) -> Strategy:
    """Count a success or failure of one of the user's strategies."""
    if caller.key.channels:  # there is no read of a strategy by id to check its channel with
        raise KeyScopeError(caller.key.key_id, "reinforcing a strategy needs a key of every channel")
    return await caller.memory.reinforce_strategy(strategy_id, body.success, caller.user_id)


@router.post("/controls", status_code=201, response_model=ControlMemory, summary="Add a rule")
async def add_control(body: ControlIn, caller: Writer) -> ControlMemory:
    """Store a rule, constraint or error pattern (default scope ``_global``)."""
    return await caller.memory.add_control(caller.owned(ControlMemory, body, body.channel))


@router.get("/controls", response_model=list[ControlMemory], summary="List rules")
async def list_controls(caller: Reader, channel: str | None = None, error_pattern: str | None = None,
                        limit: int = 100) -> list[ControlMemory]:
    """The user's rules in ``channel`` and ``_global``, newest first."""
    return await caller.memory.list_controls(caller.user_id, caller.read_channel(channel),
                                             error_pattern=error_pattern, limit=limit)


@router.get("/controls/search", response_model=list[ControlMatch], summary="Rules closest to a query")
async def find_controls(query: str, caller: Reader, channel: str | None = None, top_k: int = 5) -> list[ControlMatch]:
    """The rules closest to ``query``, with their similarity."""
    return await caller.memory.find_controls(query, caller.user_id, caller.read_channel(channel), top_k)
