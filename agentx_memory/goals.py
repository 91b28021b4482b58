"""Goal memory: what the user or agent is after, with subgoals and blockers (spec 003 "Goal Lifecycle").

``(:User)-[:HAS_GOAL]->(:Goal)``, ``(:Goal)-[:SUBGOAL_OF]->(:Goal)``, ``(:Goal)-[:BLOCKED_BY]->(:Goal)``. Statuses:
active, completed, abandoned, blocked. ``complete_goal`` sets ``completed_at`` and the result.

**Goals from agent plans** (issue 19): :meth:`GoalMemory.goals_from_plan` turns a plan (its steps, in order) into a
parent goal with one sub-goal per step (SUBGOAL_OF the parent; when ``ordered``, each BLOCKED_BY the step before), and
:meth:`GoalMemory.complete_goals_from_run` sets their statuses from what a run of the plan returned; once every step
of a plan is completed, so is the plan's goal. Both go through :meth:`~GoalMemory.add_goal` and
:meth:`~GoalMemory.complete_goal`: nothing else writes goals.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .context import MemoryContext
from .errors import ConflictError, NotFoundError, StorageError, ValidationError
from .graph import cypher
from .models import GOAL_STATUSES, Goal, utcnow
from .rows import goal_from_row
from .sql.timeline import TimelineEntry
from .timeutil import to_ms
from .validation import (
    check_channel,
    check_channels,
    check_datetime,
    check_id,
    check_ids,
    check_int,
    check_json,
    check_text,
    checked_copy,
    first_bytes,
)

__all__ = ["MAX_PLAN_STEPS", "PLAN_STEP_FIELDS", "GoalMemory"]

log = logging.getLogger(__name__)

#: The most steps one plan may have (``goals_from_plan``).
MAX_PLAN_STEPS = 200

#: The keys a plan step given as a mapping may have (``description`` is required).
PLAN_STEP_FIELDS = frozenset({"id", "description", "priority", "deadline", "metadata"})

#: Where a plan's goal lists its steps' ids, in its metadata (``complete_goals_from_run`` reads it).
_PLAN_KEY = "plan_steps"


class GoalMemory:
    """Goals and their lifecycle."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def add_goal(self, goal: Goal, channel: str | None = None) -> Goal:
        """Store a goal (idempotent by id: adding it again updates it in place); its parent and blockers must be
        goals of the same user. A goal keeps its channel: the same id in another channel is a
        :class:`~agentx_memory.errors.ConflictError`, with nothing written.

        Write order: the graph (one statement) is the write; the timeline row and the audit entry follow it. A raised
        error means the graph was not written. Once it succeeded the goal is returned even when PostgreSQL then
        fails: the missing timeline row or audit entry is logged (WARNING) and not repaired by ``reconcile``."""
        if not isinstance(goal, Goal):
            raise ValidationError("goal", f"must be a Goal, got {type(goal).__name__}")
        goal = checked_copy(goal)

        if channel is not None:
            goal.channel = channel
        check_channel(goal.channel)
        check_id(goal.user_id, "user_id")
        check_id(goal.id, "id")
        if goal.parent_id is not None:
            check_id(goal.parent_id, "parent_id")
        check_ids(goal.blocked_by, "blocked_by")
        check_int(goal.priority, "priority")  # the graph stores 64-bit integers (a larger one was clamped)
        check_datetime(goal.created_at, "created_at")
        if goal.deadline is not None:
            check_datetime(goal.deadline, "deadline")
        check_text(goal.description, "description", max_bytes=self.ctx.settings.limits.max_text_bytes)
        if goal.status not in GOAL_STATUSES:
            raise ValidationError("status", f"{goal.status!r} is not one of {', '.join(GOAL_STATUSES)}")
        metadata = check_json(goal.metadata, "metadata", max_bytes=self.ctx.settings.limits.max_metadata_bytes)
        linked = [i for i in [goal.parent_id, *goal.blocked_by] if i]
        if linked:
            rows = await self.ctx.graph.read(cypher.GOAL_IDS_OF_USER, {"ids": linked, "user_id": goal.user_id})
            known = {r["id"] for r in rows}
            for goal_id in linked:
                if goal_id not in known:
                    raise NotFoundError("goal", goal_id)
        if goal.embedding is None:
            goal.embedding = (await self.ctx.embedder.embed_documents([goal.description]))[0].tolist()
        else:
            goal.embedding = self.ctx.embedder.check(goal.embedding)
        try:
            written = await self.ctx.graph.write(cypher.ADD_GOAL, {
                "id": goal.id, "user_id": goal.user_id, "channel": goal.channel, "description": goal.description,
                "status": goal.status, "priority": goal.priority, "created_at": to_ms(goal.created_at),
                "deadline": to_ms(goal.deadline), "metadata": metadata, "embedding": goal.embedding,
                "parent_id": goal.parent_id, "blocked_by": list(goal.blocked_by),
            })
        except ConflictError as exc:  # MERGE is keyed by (id, user_id): the id is another user's goal
            raise ConflictError(f"goal id {goal.id!r} is already used by another user's goal") from exc
        if not written:  # the goal exists in another channel: it does not move
            stored = await self.get_goal(goal.id, goal.user_id)
            raise ConflictError(f"goal id {goal.id!r} is already stored in channel {stored.channel!r}, not "
                                f"{goal.channel!r}; a goal keeps its channel")
        try:  # the graph write is acknowledged: a PostgreSQL failure from here on is logged, not raised
            await self.ctx.sql.timeline.write([TimelineEntry(
                memory_type="goal", node_id=goal.id, user_id=goal.user_id, channel=goal.channel,
                event_time=goal.created_at, summary=goal.description, importance=0.5, embedding=goal.embedding,
            )])
        except StorageError:
            log.warning("timeline row of goal %r (user %r) could not be written; the goal is stored in the graph",
                        goal.id, goal.user_id, exc_info=True)
        await self.ctx.audit.log_write("store", "goal", goal.channel, [goal.id], user_id=goal.user_id)
        return await self.get_goal(goal.id, goal.user_id)

    async def get_goals(self, user_id: str, goal_ids: Sequence[str]) -> list[Goal]:
        """The user's goals with these ids (unknown ids left out)."""
        rows = await self.ctx.graph.read(cypher.GET_GOALS, {"ids": list(goal_ids), "user_id": user_id})
        return [goal_from_row(r["goal"], r["parent_id"], r["blocked_by"]) for r in rows]

    async def get_goal(self, goal_id: str, user_id: str) -> Goal:
        """One goal with its parent id and blockers, or NotFoundError."""
        check_id(goal_id, "goal_id")
        found = await self.get_goals(user_id, [goal_id])
        if not found:
            raise NotFoundError("goal", goal_id)
        return found[0]

    async def complete_goal(self, goal_id: str, status: str = "completed", result: str | None = None, *,
                            user_id: str) -> Goal:
        """Set a goal's status (completed, abandoned, blocked or active again) and result."""
        check_id(goal_id, "goal_id")
        check_id(user_id, "user_id")
        if status not in GOAL_STATUSES:
            raise ValidationError("status", f"{status!r} is not one of {', '.join(GOAL_STATUSES)}")
        if result is not None:
            check_text(result, "result", max_bytes=self.ctx.settings.limits.max_text_bytes)
        completed_at = to_ms(utcnow()) if status in ("completed", "abandoned") else None
        rows = await self.ctx.graph.write(cypher.COMPLETE_GOAL, {
            "id": goal_id, "user_id": user_id, "status": status, "result": result, "completed_at": completed_at,
        })
        if not rows:
            raise NotFoundError("goal", goal_id)
        await self.ctx.audit.log_write("update", "goal", None, [goal_id], {"status": status}, user_id=user_id)
        return await self.get_goal(goal_id, user_id)

    async def block_goal(self, goal_id: str, blocker_id: str, *, user_id: str) -> Goal:
        """Record that ``goal_id`` is BLOCKED_BY ``blocker_id`` (both the user's goals). The status is unchanged."""
        check_id(goal_id, "goal_id")
        check_id(blocker_id, "blocker_id")
        check_id(user_id, "user_id")
        if goal_id == blocker_id:
            raise ValidationError("blocker_id", f"a goal cannot block itself ({goal_id!r})")
        rows = await self.ctx.graph.write(cypher.BLOCK_GOAL,
                                          {"id": goal_id, "blocker_id": blocker_id, "user_id": user_id})
        if not rows:
            known = {g.id for g in await self.get_goals(user_id, [goal_id, blocker_id])}
            raise NotFoundError("goal", goal_id if goal_id not in known else blocker_id)
        await self.ctx.audit.log_write("update", "goal", None, [goal_id, blocker_id], {"blocked_by": blocker_id},
                                       user_id=user_id)
        return await self.get_goal(goal_id, user_id)

    async def list_goals(self, user_id: str, status: str | None = None, channels: Sequence[str] | str | None = None,
                         limit: int = 100) -> list[Goal]:
        """The user's goals in ``channels`` (plus ``_global``), optionally of one status; highest priority first."""
        check_id(user_id, "user_id")
        if status is not None and status not in GOAL_STATUSES:
            raise ValidationError("status", f"{status!r} is not one of {', '.join(GOAL_STATUSES)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not (1 <= limit <= 10_000):
            raise ValidationError("limit", f"must be between 1 and 10000, got {limit!r}")
        rows = await self.ctx.graph.read(cypher.LIST_GOALS, {
            "user_id": user_id, "channels": check_channels(channels), "status": status, "limit": limit,
        })
        goals = [goal_from_row(r["goal"], r["parent_id"], r["blocked_by"]) for r in rows]
        # the aggregation of blockers does not keep the statement's order: sort here
        return sorted(goals, key=lambda g: (-g.priority, g.created_at, g.id))

    # --- goals from agent plans ---------------------------------------------------------------------------------

    async def goals_from_plan(self, plan_steps: Sequence[str | Mapping[str, Any]], *, user_id: str,
                              parent_description: str | None = None, channel: str | None = None,
                              ordered: bool = True) -> list[Goal]:
        """Store an agent's plan as goals: a parent goal (``parent_description``, by default ``"Plan: "`` and the
        steps joined by ``"; "``) and one sub-goal per step, SUBGOAL_OF the parent; with ``ordered`` (the default)
        each step is BLOCKED_BY the one before it. A step is its description, or a mapping with ``description`` and
        optionally ``id``, ``priority``, ``deadline`` and ``metadata``. The parent's metadata lists the steps' ids
        (``plan_steps``), each step's metadata its position (``plan_step``, from 0).

        Every step is checked before anything is written (a :class:`~agentx_memory.errors.ValidationError` naming
        ``plan_steps`` and the limit otherwise: 1 to :data:`MAX_PLAN_STEPS` steps); the descriptions are embedded in
        one call. The goals are then added in order through :meth:`add_goal`: a failure part way leaves the goals
        added before it. Returns ``[parent, *steps]`` as stored."""
        if isinstance(plan_steps, (str, bytes, Mapping)) or not isinstance(plan_steps, Sequence):
            raise ValidationError("plan_steps", "must be a list of steps (strings or mappings)")
        if not 1 <= len(plan_steps) <= MAX_PLAN_STEPS:
            raise ValidationError("plan_steps", f"must hold 1 to {MAX_PLAN_STEPS} steps, got {len(plan_steps)}")
        check_id(user_id, "user_id")
        if channel is not None:
            check_channel(channel)
        max_text = self.ctx.settings.limits.max_text_bytes
        steps: list[Goal] = []
        for position, step in enumerate(plan_steps):
            fields: dict[str, Any]
            if isinstance(step, str):
                fields = {"description": step}
            elif isinstance(step, Mapping):
                unknown = sorted(set(map(str, step)) - PLAN_STEP_FIELDS)
                if unknown or "description" not in step:
                    raise ValidationError("plan_steps", f"step {position} must have a description and only "
                                                        f"{sorted(PLAN_STEP_FIELDS)}; got {sorted(map(str, step))}")
                fields = dict(step)
            else:
                raise ValidationError("plan_steps", f"step {position} must be a string or a mapping, got "
                                                    f"{type(step).__name__}")
            check_text(fields["description"], "plan_steps", max_bytes=max_text)
            metadata = fields.get("metadata") or {}
            if not isinstance(metadata, Mapping):
                raise ValidationError("plan_steps", f"step {position}: metadata must be a mapping")
            fields["metadata"] = {**metadata, "plan_step": position}
            steps.append(Goal(user_id=user_id, **fields))
        if len({g.id for g in steps}) < len(steps):
            raise ValidationError("plan_steps", "two steps have the same id")
        description = parent_description if parent_description is not None else (
            "Plan: " + "; ".join(g.description for g in steps))
        if parent_description is None:
            description = first_bytes(description, max_text)
        check_text(description, "parent_description", max_bytes=max_text)
        parent = Goal(user_id=user_id, description=description, metadata={_PLAN_KEY: [g.id for g in steps]})
        if parent.id in {g.id for g in steps}:
            raise ValidationError("plan_steps", f"a step has the plan goal's id {parent.id!r}")
        vectors = await self.ctx.embedder.embed_documents([parent.description, *(g.description for g in steps)])
        parent.embedding = vectors[0].tolist()
        stored = [await self.add_goal(parent, channel)]
        previous: str | None = None
        for goal, vector in zip(steps, vectors[1:], strict=True):
            goal.parent_id = parent.id
            goal.blocked_by = [previous] if (ordered and previous) else []
            goal.embedding = vector.tolist()
            stored.append(await self.add_goal(goal, channel))
            previous = goal.id
        return stored

    async def complete_goals_from_run(self, results: Mapping[str, str | Mapping[str, Any] | None], *, user_id: str,
                                      status: str = "completed") -> list[Goal]:
        """Set the goals of a run's steps from its results: goal id → the step's result (text, or None), each goal
        taking ``status``; or goal id → ``{"status": ..., "result": ...}`` for a step with its own status (a failed
        step ``"abandoned"``, or ``"blocked"``). Statuses are those of :meth:`complete_goal`.

        Every id and status is checked, and every goal looked up, before anything is written (unknown ids:
        :class:`~agentx_memory.errors.NotFoundError`). Then each goal is set through :meth:`complete_goal`, in the
        mapping's order; and a plan goal made by :meth:`goals_from_plan` whose steps are now all completed is
        completed too (result: how many steps). Returns the goals set, as stored, the plan goals completed last."""
        if not isinstance(results, Mapping) or not results:
            raise ValidationError("goal_ids_or_results", "must be a non-empty mapping of goal ids to results")
        if status not in GOAL_STATUSES:
            raise ValidationError("status", f"{status!r} is not one of {', '.join(GOAL_STATUSES)}")
        check_id(user_id, "user_id")
        max_text = self.ctx.settings.limits.max_text_bytes
        planned: list[tuple[str, str, str | None]] = []
        for goal_id, outcome in results.items():
            check_id(goal_id, "goal_ids_or_results")
            step_status, result = status, outcome
            if isinstance(outcome, Mapping):
                unknown = sorted(set(map(str, outcome)) - {"status", "result"})
                if unknown:
                    raise ValidationError("goal_ids_or_results", f"goal {goal_id!r}: unknown keys {unknown}; a "
                                                                 "step's outcome has only status and result")
                step_status, result = outcome.get("status", status), outcome.get("result")
                if step_status not in GOAL_STATUSES:
                    raise ValidationError("goal_ids_or_results", f"goal {goal_id!r}: status {step_status!r} is not "
                                                                 f"one of {', '.join(GOAL_STATUSES)}")
            if result is not None:
                check_text(result, "goal_ids_or_results", max_bytes=max_text)
            planned.append((goal_id, str(step_status), result if isinstance(result, str) else None))
        found = {g.id: g for g in await self.get_goals(user_id, list(results))}
        for goal_id in results:
            if goal_id not in found:
                raise NotFoundError("goal", goal_id)
        done = [await self.complete_goal(goal_id, step_status, result, user_id=user_id)
                for goal_id, step_status, result in planned]
        parents = list(dict.fromkeys(g.parent_id for g in done if g.parent_id))
        for plan in await self.get_goals(user_id, parents) if parents else []:
            step_ids = plan.metadata.get(_PLAN_KEY)
            if plan.status == "completed" or not isinstance(step_ids, list) or not step_ids:
                continue
            steps = await self.get_goals(user_id, [str(i) for i in step_ids])
            if len(steps) == len(step_ids) and all(g.status == "completed" for g in steps):
                done.append(await self.complete_goal(plan.id, "completed", f"all {len(steps)} steps completed",
                                                     user_id=user_id))
        return done
