"""Procedural memory: tool invocations, tool statistics and learned strategies (spec 003 "Procedural Memory").

Tool invocations are logged in PostgreSQL (``tool_invocations``, the durable log that ``get_tool_stats`` aggregates
per user) and projected into the graph as ``(Conversation)-[:USED_TOOL]->(ToolInvocation)-[:INVOKED]->(Tool)``.
Strategies merge by (user, channel, normalized description): learning the same strategy again reinforces it.
``find_strategies`` ranks by ``0.7 * similarity + 0.3 * success_rate`` (Laplace-smoothed).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from .context import MemoryContext
from .crypto import ColumnCipher
from .errors import ConflictError, NotFoundError, StorageError, StorageUnavailableError, ValidationError
from .graph import cypher
from .missing_nodes import requeue_missing
from .models import Strategy, ToolInvocation
from .rows import strategy_from_row
from .semantic import normalize_name
from .timeutil import now_ms, to_ms
from .tool_payloads import open_payload, same_payload, seal_payload
from .validation import (
    INT32_MAX,
    check_channel,
    check_channels,
    check_datetime,
    check_id,
    check_ids,
    check_int,
    check_json,
    check_text,
    checked_copy,
)

log = logging.getLogger(__name__)

__all__ = ["ProceduralMemory", "StrategyMatch", "strategy_text"]

#: The share of cosine similarity in a strategy's score; the Laplace-smoothed success rate has the rest.
SIMILARITY_SHARE = 0.7


class StrategyMatch(Strategy):
    """A strategy found by :meth:`ProceduralMemory.find_strategies`, with its similarity and ranking score."""

    similarity: float = 0.0
    score: float = 0.0


class ProceduralMemory:
    """Tool usage and strategies."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def record_invocation(self, invocation: ToolInvocation) -> ToolInvocation:
        """Log a tool call durably and project it into the graph (idempotent by invocation id: repeating the same
        call re-projects it, counts it once, audits it once and returns it as logged; the id with other fields is a
        :class:`~agentx_memory.errors.ConflictError`)."""
        inv = checked_copy(invocation)
        check_channel(inv.channel)
        check_id(inv.user_id, "user_id")
        check_id(inv.conversation_id, "conversation_id", max_len=200)
        check_id(inv.tool_name, "tool_name")
        check_id(inv.id, "invocation_id")
        check_datetime(inv.timestamp, "timestamp")
        if inv.turn_id is not None:
            check_id(inv.turn_id, "turn_id")
        if inv.task_type is not None:
            check_id(inv.task_type, "task_type")  # a label in a VARCHAR(100) column, held to the id rule
        limit = self.ctx.settings.limits.max_text_bytes
        check_json(inv.tool_input, "tool_input", max_bytes=limit)
        check_json(inv.tool_output, "tool_output", max_bytes=limit)
        if inv.error_message:
            check_text(inv.error_message, "error_message", max_bytes=limit)
        if inv.latency_ms is not None:
            check_int(inv.latency_ms, "latency_ms", low=0, high=INT32_MAX)  # tool_invocations.latency_ms
        if inv.turn_id:
            place = await self.ctx.sql.conversations.turn_place(inv.turn_id, inv.user_id)
            if place is None:
                raise NotFoundError("turn", inv.turn_id)
            if place[0] != inv.conversation_id:  # a call made during a turn belongs to that turn's conversation
                raise ValidationError("turn_id", f"turn {inv.turn_id!r} is in another conversation than "
                                                 f"{inv.conversation_id!r}")
            inv.turn_index = place[1]
        await self._check_conversation_owner(inv.conversation_id, inv.user_id)
        cipher = ColumnCipher(self.ctx.settings.security)
        inserted = await self.ctx.sql.tools.record(inv, seal_payload(
            cipher, inv.id, inv.user_id, inv.tool_input, inv.tool_output, inv.error_message))
        if not inserted:  # recorded before: idempotent for the same call, which comes back as logged
            stored = await self.ctx.sql.tools.stored(inv)
            if stored and (stored["user_id"], stored["conversation_id"]) != (inv.user_id, inv.conversation_id):
                raise ConflictError(f"invocation id {inv.id!r} is already recorded for another conversation or user")
            if stored and not (stored["same_fields"] and same_payload(cipher, stored, inv)):
                raise ConflictError(f"invocation id {inv.id!r} is already recorded with other fields (tool, "
                                    "channel, input, output or outcome); nothing was written")
            if stored:
                inv.timestamp = stored["timestamp"]
        try:
            await self.ctx.graph_health.call(self.ctx.graph.write(cypher.RECORD_INVOCATION, _graph_params(
                inv.model_dump(include={"user_id", "channel", "conversation_id", "turn_id", "tool_name", "task_type",
                                        "success", "latency_ms", "timestamp"}) | {"invocation_id": inv.id})))
            await self.ctx.sql.tools.mark_projected([inv.id])
        except StorageUnavailableError as exc:  # durable in the log: reconcile() projects it
            log.warning("graph unreachable: tool invocation %s is durable in the log, pending projection (%s)",
                        inv.id, exc)
            inv.pending_projection = True
        if inserted:  # a repeated call re-projects (the graph may have missed it) but is not a new operation
            secret = {"tool_input", "tool_output", "error_message"} if cipher.enabled else set()
            await self.ctx.audit.log_write("store", "procedural", inv.channel, [inv.id], {"tool_name": inv.tool_name},
                                           user_id=inv.user_id, conversation_id=inv.conversation_id,
                                           payload=inv.model_dump(mode="json", exclude=secret))
        return inv

    async def invocations(self, user_id: str, conversation_id: str, *, limit: int = 1000) -> list[ToolInvocation]:
        """The user's logged tool calls of one conversation, in call order, with their input, output and error
        message decrypted (:class:`~agentx_memory.errors.EncryptionKeyError` when a row's key is missing or
        wrong)."""
        check_id(conversation_id, "conversation_id", max_len=200)
        rows = await self.ctx.sql.tools.of_conversation(user_id, conversation_id,
                                                        limit=check_int(limit, "limit", low=1, high=100_000))
        cipher = ColumnCipher(self.ctx.settings.security)
        out = []
        for row in rows:
            tool_input, tool_output, error = open_payload(cipher, row, row["invocation_id"], row["user_id"])
            out.append(ToolInvocation(
                id=row["invocation_id"], user_id=row["user_id"], conversation_id=row["conversation_id"],
                turn_id=row["turn_id"], turn_index=row["turn_index"], timestamp=row["timestamp"],
                tool_name=row["tool_name"], task_type=row["task_type"], tool_input=tool_input, tool_output=tool_output,
                success=row["success"], latency_ms=row["latency_ms"], error_message=error, channel=row["channel"],
                pending_projection=not row["projected"]))
        return out

    async def _check_conversation_owner(self, conversation_id: str, user_id: str) -> None:
        """ConflictError when the conversation id belongs to another user (in the durable log or the graph)."""
        logged = await self.ctx.sql.conversations.conversation_owner(conversation_id)
        owners = {logged} if logged else set()
        try:
            projected = await self.ctx.graph_health.call(
                self.ctx.graph.read(cypher.CONVERSATION_OWNER, {"id": conversation_id}))
        except StorageUnavailableError:  # the log's owner decides alone (checked again under lock when logging)
            projected = []
        owners.update(r["user_id"] for r in projected)
        if owners - {user_id}:
            raise ConflictError(f"conversation_id {conversation_id!r} belongs to another user")

    async def requeue_missing_invocations(self, batch_size: int = 1000) -> int:
        """Queue for :meth:`reconcile_invocations` every logged tool invocation, of any user, whose ToolInvocation
        node the graph does not have; return how many were queued (the graph's side of a full reconcile)."""
        tools = self.ctx.sql.tools
        return await requeue_missing(self.ctx.graph, cypher.PRESENT_INVOCATIONS,
                                     lambda after, limit: tools.projected_ids(after=after, limit=limit),
                                     tools.requeue, batch_size=batch_size)

    async def reconcile_invocations(self, batch_size: int = 500) -> int:
        """Project every logged tool invocation the graph is missing (idempotent); return how many were projected.

        An unreachable graph raises :class:`~agentx_memory.errors.StorageUnavailableError`; a row the graph refuses
        is logged and left in the queue (the next run tries it again) without blocking the others."""
        projected, position = 0, 0
        while rows := await self.ctx.sql.tools.unprojected(after=position, limit=batch_size):
            position = rows[-1]["id"]
            done: list[str] = []
            for row in rows:
                try:
                    await self.ctx.graph.write(cypher.RECORD_INVOCATION, _graph_params(row))
                except StorageUnavailableError:
                    raise
                except StorageError as exc:
                    log.error("reconcile: tool invocation %s not projected: %s", row["invocation_id"], exc)
                    continue
                done.append(row["invocation_id"])
            await self.ctx.sql.tools.mark_projected(done)
            projected += len(done)
        return projected

    async def get_tool_stats(self, user_id: str, task_type: str | None = None,
                             channel: str | None = None) -> list[dict[str, Any]]:
        """Per tool: uses, successes, success rate, average and p95 latency (from the durable log), best first."""
        check_id(user_id, "user_id")
        if task_type is not None:
            check_id(task_type, "task_type")
        if channel is not None:

            check_channel(channel)
        return await self.ctx.sql.tools.stats(user_id, task_type, channel)

    async def learn_strategy(self, description: str, context_pattern: str = "", tool_sequence: Sequence[str] = (),
                             from_conversation_id: str | None = None, success: bool = True, channel: str = "_global",
                             *, user_id: str, steps: Sequence[str] = (),
                             trigger_conditions: Sequence[str] = (), task_type: str | None = None) -> Strategy:
        """Record a strategy (or reinforce the same one learned before); return it as stored.

        Learning the same strategy again (same user, channel and description) counts one more success or failure;
        a non-empty ``context_pattern``, ``tool_sequence``, ``steps`` or ``trigger_conditions`` replaces the stored
        one (the tools' USES_TOOL edges too), an empty one keeps it. The vector is made from the description, the
        context pattern and the trigger conditions, so a situation like a trigger finds the strategy.

        ``task_type`` links the strategy to a kind of task (spec 003; a label held to the id rule, like a tool
        invocation's): ``find_strategies(task_type=...)`` filters by it. None keeps the stored one (a strategy
        learned before task types existed has none)."""
        check_channel(channel)
        check_id(user_id, "user_id")
        if from_conversation_id is not None:
            check_id(from_conversation_id, "from_conversation_id", max_len=200)
        check_text(description, "description", max_bytes=self.ctx.settings.limits.max_text_bytes)
        if context_pattern != "":  # "" means "keep the stored one"; anything else must be storable text
            check_text(context_pattern, "context_pattern", max_bytes=self.ctx.settings.limits.max_text_bytes)
        tools = check_ids(tool_sequence, "tool_sequence")
        if task_type is not None:
            check_id(task_type, "task_type")
        step_list = _check_lines(steps, "steps")
        triggers = _check_lines(trigger_conditions, "trigger_conditions")
        key_raw = "\x1f".join([user_id, channel, normalize_name(description)])
        text = strategy_text(description, context_pattern, triggers)
        embedding = (await self.ctx.embedder.embed_documents([text]))[0].tolist()
        rows = await self.ctx.graph.write(cypher.UPSERT_STRATEGY, {
            "key": hashlib.sha256(key_raw.encode()).hexdigest(),
            "id": Strategy(user_id=user_id, description=description).id,
            "user_id": user_id, "channel": channel, "description": description, "context_pattern": context_pattern,
            "tool_sequence": tools, "steps": step_list, "trigger_conditions": triggers,
            "embedding": embedding, "now": now_ms(), "success": bool(success),
            "conversation_id": from_conversation_id, "task_type": task_type,
        })
        strategy = strategy_from_row(rows[0]["strategy"])
        # the audit names the conversation (the session) only when it is the user's: another user's conversation id
        # is accepted (the strategy is not linked to it) but is not theirs to have in their audit trail
        own = from_conversation_id is not None and (
            await self.ctx.sql.conversations.conversation_owner(from_conversation_id)) == user_id
        await self.ctx.audit.log_write("store", "procedural", channel, [strategy.id], {"kind": "strategy"},
                                       user_id=user_id, conversation_id=from_conversation_id if own else None)
        return strategy

    async def get_strategy(self, strategy_id: str, user_id: str) -> Strategy:
        """One strategy of the user, or NotFoundError."""
        check_id(strategy_id, "strategy_id")
        rows = await self.ctx.graph.read(cypher.GET_STRATEGY, {"id": strategy_id, "user_id": user_id})
        if not rows:
            raise NotFoundError("strategy", strategy_id)
        return strategy_from_row(rows[0]["strategy"])

    async def reinforce_strategy(self, strategy_id: str, success: bool, *, user_id: str) -> Strategy:
        """Count one more success or failure of a strategy."""
        check_id(strategy_id, "strategy_id")
        check_id(user_id, "user_id")
        rows = await self.ctx.graph.write(cypher.REINFORCE_STRATEGY, {
            "id": strategy_id, "user_id": user_id, "success": bool(success), "now": now_ms(),
        })
        if not rows:
            raise NotFoundError("strategy", strategy_id)
        strategy = strategy_from_row(rows[0]["strategy"])
        await self.ctx.audit.log_write("reinforce", "procedural", strategy.channel, [strategy_id],
                                       {"kind": "strategy", "success": bool(success)}, user_id=user_id)
        return strategy

    async def find_strategies(self, task_description: str, channels: Sequence[str] | str | None = None, top_k: int = 5,
                              *, user_id: str, embedding: Sequence[float] | None = None,
                              task_type: str | None = None) -> list[StrategyMatch]:
        """Strategies of the user similar to the task, ranked by similarity and success rate; ``task_type`` keeps
        only the strategies learned for that task type (None: every strategy, with or without one)."""
        started = time.perf_counter()
        check_text(task_description, "task_description", max_bytes=self.ctx.settings.limits.max_text_bytes)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not (1 <= top_k <= 1000):
            raise ValidationError("top_k", f"must be between 1 and 1000, got {top_k}")
        if task_type is not None:
            check_id(task_type, "task_type")
        if embedding is not None:
            vector = list(embedding)
        else:
            vector = (await self.ctx.embedder.embed_query(task_description)).tolist()
        overfetch = self.ctx.settings.retrieval.candidate_pool(top_k)
        searched = check_channels(channels)
        rows = await self.ctx.graph.read_vectors(cypher.SEARCH_STRATEGIES, {
            "user_id": user_id, "channels": searched, "embedding": vector, "k": overfetch, "task_type": task_type,
        })
        found = []
        for row in rows:
            strategy = strategy_from_row(row["strategy"])
            similarity = float(row["similarity"])
            score = SIMILARITY_SHARE * similarity + (1 - SIMILARITY_SHARE) * strategy.success_rate
            found.append(StrategyMatch(**strategy.model_dump(), similarity=similarity, score=score))
        found.sort(key=lambda s: s.score, reverse=True)
        found = found[:top_k]
        await self.ctx.audit.log_read(
            task_description, searched, len(found), int((time.perf_counter() - started) * 1000), user_id=user_id,
            source_channel=searched[0], memory_type="procedural", operation="find_strategies",
            metadata={"result_ids": [s.id for s in found], "result_channels": sorted({s.channel for s in found}),
                      "task_type": task_type},
            trace=[{"id": s.id, "similarity": s.similarity, "success_rate": s.success_rate, "score": s.score}
                   for s in found],
        )
        return found


def _graph_params(row: dict[str, Any]) -> dict[str, Any]:
    """The parameters of ``RECORD_INVOCATION`` for one logged invocation (a tool_invocations row or a model dump)."""
    return {
        "id": row["invocation_id"], "user_id": row["user_id"], "channel": row["channel"],
        "conversation_id": row["conversation_id"], "turn_id": row["turn_id"], "tool_name": row["tool_name"],
        "task_type": row["task_type"], "success": row["success"], "latency_ms": row["latency_ms"],
        "timestamp": to_ms(row["timestamp"]),
    }


#: Most steps or trigger conditions a strategy holds, and the longest one (UTF-8 bytes).
MAX_LINES = 50
MAX_LINE_BYTES = 1000


def _check_lines(values: Sequence[str], field: str) -> list[str]:
    """A list of non-empty strings (steps, trigger conditions), at most :data:`MAX_LINES` of at most
    :data:`MAX_LINE_BYTES` each."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValidationError(field, f"must be a list of strings, got {type(values).__name__}")
    if len(values) > MAX_LINES:
        raise ValidationError(field, f"at most {MAX_LINES} entries, got {len(values)}")
    for value in values:
        check_text(value, field, max_bytes=MAX_LINE_BYTES)
    return list(values)


def strategy_text(description: str, context_pattern: str | None, trigger_conditions: Sequence[str] | None) -> str:
    """The text a strategy's vector is made of: description, context pattern and trigger conditions, one a line, so
    a situation like a trigger finds the strategy."""
    return "\n".join(part for part in (description, context_pattern or "", "; ".join(trigger_conditions or ())) if part)
