"""Goals, their trees and blockers, and goals from an agent's plan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from ...models import Goal
from ..auth import Reader, Writer
from ..schemas import BlockGoalIn, CompleteGoalIn, GoalIn, PlanIn
from . import api_router

__all__ = ["router"]

router = api_router("goals")


@router.post("/goals", status_code=201, response_model=Goal, summary="Add a goal")
async def add_goal(body: GoalIn, caller: Writer) -> Goal:
    """Store a goal (``parent_id``: SUBGOAL_OF; ``blocked_by``: BLOCKED_BY)."""
    return await caller.memory.add_goal(caller.owned(Goal, body, body.channel))


@router.get("/goals", response_model=list[Goal], summary="List goals")
async def list_goals(caller: Reader, status: str | None = None,
                     channels: Annotated[list[str] | None, Query()] = None) -> list[Goal]:
    """The user's goals (optionally of one status) in ``channels`` plus ``_global``."""
    found = await caller.memory.list_goals(caller.user_id, status, caller.read_channels(channels))
    return caller.only_visible(found)


@router.post("/goals/plan", status_code=201, response_model=list[Goal], summary="Goals from a plan")
async def goals_from_plan(body: PlanIn, caller: Writer) -> list[Goal]:
    """A parent goal and one sub-goal per step (each BLOCKED_BY the one before when ``ordered``)."""
    return await caller.memory.goals_from_plan(body.steps, parent_description=body.parent_description,
                                               channel=caller.write_channel(body.channel), user_id=caller.user_id,
                                               ordered=body.ordered)


@router.get("/goals/{goal_id}", response_model=Goal, summary="One goal")
async def get_goal(goal_id: str, caller: Reader) -> Goal:
    """A goal with its parent id and blockers."""
    return caller.shown(await caller.memory.get_goal(goal_id, caller.user_id), "goal", goal_id)


@router.post("/goals/{goal_id}/complete", response_model=Goal, summary="Finish a goal")
async def complete_goal(goal_id: str, body: CompleteGoalIn, caller: Writer) -> Goal:
    """Set a goal's status (completed, abandoned ...), completed_at and result."""
    caller.write_channel((await get_goal(goal_id, caller)).channel)
    return await caller.memory.complete_goal(goal_id, body.status, body.result, caller.user_id)


@router.post("/goals/{goal_id}/block", response_model=Goal, summary="Block a goal")
async def block_goal(goal_id: str, body: BlockGoalIn, caller: Writer) -> Goal:
    """Record that a goal is BLOCKED_BY another of the user's goals."""
    caller.write_channel((await get_goal(goal_id, caller)).channel)
    await get_goal(body.blocker_id, caller)
    return await caller.memory.block_goal(goal_id, body.blocker_id, caller.user_id)
