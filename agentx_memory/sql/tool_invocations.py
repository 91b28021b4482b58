"""The ``tool_invocations`` repository: the durable log of tool calls, and the per-tool statistics drawn from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..models import ToolInvocation
from .conversation_log import claim_conversation
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["StoredPayload", "ToolInvocationLog"]


@dataclass(frozen=True)
class StoredPayload:
    """A call's input, output and error message as the row stores them: plaintext (``encrypted_with`` None), or each
    sealed into base64 text under the key ``encrypted_with`` (:mod:`agentx_memory.crypto`)."""

    tool_input: Any
    tool_output: Any
    error_message: str | None
    encrypted_with: str | None = None

INSERT_INVOCATION: Final[LiteralString] = (
    "INSERT INTO tool_invocations (invocation_id, user_id, conversation_id, turn_index, turn_id, timestamp,"
    " tool_name, task_type, tool_input, tool_output, success, latency_ms, error_message, channel, encrypted_with)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (invocation_id) DO NOTHING"
    " RETURNING invocation_id"
)

#: A logged invocation's owner and time, whether its plain fields are those of the call (``same_fields``), and its
#: payload as stored (sealed or not: the caller compares it, see :mod:`agentx_memory.crypto`).
STORED_INVOCATION: Final[LiteralString] = (
    "SELECT user_id, conversation_id, timestamp, tool_input, tool_output, error_message, encrypted_with,"
    " (tool_name = %(tool_name)s AND channel = %(channel)s AND turn_id IS NOT DISTINCT FROM %(turn_id)s"
    "  AND task_type IS NOT DISTINCT FROM %(task_type)s AND success IS NOT DISTINCT FROM %(success)s"
    "  AND latency_ms IS NOT DISTINCT FROM %(latency_ms)s) AS same_fields"
    " FROM tool_invocations WHERE invocation_id = %(id)s"
)

#: One conversation's logged calls of a user, in call order, with their payloads as stored.
CONVERSATION_INVOCATIONS: Final[LiteralString] = (
    "SELECT invocation_id, user_id, conversation_id, turn_index, turn_id, timestamp, tool_name, task_type,"
    " tool_input, tool_output, success, latency_ms, error_message, channel, encrypted_with, projected"
    " FROM tool_invocations WHERE user_id = %(user_id)s AND conversation_id = %(conversation_id)s"
    " ORDER BY timestamp, id LIMIT %(limit)s"
)

#: Rows whose payload is not sealed with ``key_id`` (NULL: not plaintext), after a row position: the re-encryption.
NOT_UNDER_KEY: Final[LiteralString] = (
    "SELECT id, invocation_id, user_id, tool_input, tool_output, error_message, encrypted_with FROM tool_invocations"
    " WHERE encrypted_with IS DISTINCT FROM %(key_id)s AND id > %(after)s ORDER BY id LIMIT %(limit)s"
)

#: One row's payload replaced, if it is still sealed as it was read (a concurrent re-encryption wins once).
RESEAL: Final[LiteralString] = (
    "UPDATE tool_invocations SET tool_input = %(tool_input)s, tool_output = %(tool_output)s,"
    " error_message = %(error_message)s, encrypted_with = %(key_id)s"
    " WHERE id = %(id)s AND encrypted_with IS NOT DISTINCT FROM %(was)s"
)

MARK_PROJECTED: Final[LiteralString] = (
    "UPDATE tool_invocations SET projected = TRUE WHERE invocation_id = ANY(%s) AND NOT projected"
)

#: The reconcile queue of tool calls, in log order after a row position.
UNPROJECTED: Final[LiteralString] = (
    "SELECT id, invocation_id, user_id, conversation_id, turn_index, turn_id, timestamp, tool_name, task_type,"
    " success, latency_ms, channel FROM tool_invocations WHERE NOT projected AND id > %s ORDER BY id LIMIT %s"
)

#: A page of the tool log's projected rows (every user), row position and invocation id, after a row position.
PROJECTED_AFTER: Final[LiteralString] = (
    "SELECT id, invocation_id FROM tool_invocations WHERE projected AND id > %s ORDER BY id LIMIT %s"
)

#: Back into the reconcile queue of tool calls.
UNMARK_PROJECTED: Final[LiteralString] = (
    "UPDATE tool_invocations SET projected = FALSE WHERE id = ANY(%s) AND projected"
)

TOOL_STATS: Final[LiteralString] = (
    "SELECT tool_name, count(*) AS usage_count, count(*) FILTER (WHERE success) AS success_count,"
    " round((count(*) FILTER (WHERE success))::numeric / count(*), 4)::float AS success_rate,"
    " avg(latency_ms)::float AS avg_latency_ms,"
    " percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)::float AS p95_latency_ms,"
    " max(timestamp) AS last_used"
    " FROM tool_invocations WHERE user_id = %s AND (%s::text IS NULL OR task_type = %s)"
    " AND (%s::text IS NULL OR channel = %s)"
    " GROUP BY tool_name ORDER BY success_rate DESC, usage_count DESC, tool_name"
)


class ToolInvocationLog:
    """Appends tool invocations (idempotent by invocation id) and aggregates them per tool."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def record(self, inv: ToolInvocation, payload: StoredPayload) -> bool:
        """Log the invocation with its payload as it is stored (sealed or not); ``False`` when its id was logged
        before (nothing is written then).

        The conversation must be unused or the invocation's user's (its first turn or tool call makes it theirs):
        :class:`ConflictError` otherwise, checked under the conversation's lock, the one turn appends take."""
        async with pg_errors("writing tool_invocations"), self.store.connection() as conn, conn.transaction():
            await claim_conversation(conn, inv.conversation_id, inv.user_id)
            cur = await conn.execute(INSERT_INVOCATION, (
                inv.id, inv.user_id, inv.conversation_id, inv.turn_index, inv.turn_id, inv.timestamp, inv.tool_name,
                inv.task_type, Jsonb(payload.tool_input), None if payload.tool_output is None else Jsonb(
                    payload.tool_output), inv.success, inv.latency_ms, payload.error_message, inv.channel,
                payload.encrypted_with,
            ))
            return bool(await cur.fetchall())

    async def mark_projected(self, invocation_ids: Sequence[str]) -> None:
        """Record that these invocations are in the graph (reconcile skips them from now on)."""
        await self.store.execute(MARK_PROJECTED, (list(invocation_ids),), what="marking tool invocations projected")

    async def unprojected(self, *, after: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` invocations not yet in the graph, in log order after row ``after`` (each row has its
        position ``id`` and the fields the graph holds)."""
        return await self.store.fetch(UNPROJECTED, (after, limit), what="reading unprojected tool invocations")

    async def projected_ids(self, *, after: int, limit: int) -> list[tuple[int, str]]:
        """``(row position, invocation id)`` of up to ``limit`` projected invocations of every user, in log order
        after row ``after``."""
        rows = await self.store.fetch(PROJECTED_AFTER, (after, limit), what="reading the tool log's ids")
        return [(r["id"], r["invocation_id"]) for r in rows]

    async def requeue(self, positions: Sequence[int]) -> int:
        """Put the rows at these positions back into the reconcile queue; return how many were projected."""
        return await self.store.execute(UNMARK_PROJECTED, (list(positions),), what="queueing tool calls for reconcile")

    async def stored(self, inv: ToolInvocation) -> dict[str, Any] | None:
        """The logged invocation with ``inv``'s id: its ``user_id``, ``conversation_id``, ``timestamp``, whether
        its tool, channel, turn, task type and outcome are ``inv``'s (``same_fields``) and its payload as stored
        (``tool_input``, ``tool_output``, ``error_message``, ``encrypted_with``); ``None`` when not logged."""
        rows = await self.store.fetch(STORED_INVOCATION, {
            "id": inv.id, "tool_name": inv.tool_name, "channel": inv.channel, "turn_id": inv.turn_id,
            "task_type": inv.task_type, "success": inv.success, "latency_ms": inv.latency_ms,
        }, what="reading tool_invocations")
        return rows[0] if rows else None

    async def of_conversation(self, user_id: str, conversation_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The user's logged calls of one conversation, in call order (payloads as stored)."""
        return await self.store.fetch(CONVERSATION_INVOCATIONS, {
            "user_id": user_id, "conversation_id": conversation_id, "limit": limit}, what="reading tool_invocations")

    async def not_under_key(self, key_id: str | None, *, after: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows (every user's) whose payload is not sealed with ``key_id``, after row ``after``."""
        return await self.store.fetch(NOT_UNDER_KEY, {"key_id": key_id, "after": after, "limit": limit},
                                      what="reading tool_invocations to re-encrypt")

    async def reseal(self, row_id: int, was: str | None, payload: StoredPayload) -> bool:
        """Replace one row's payload if it is still sealed with ``was``; True when it was replaced."""
        changed = await self.store.execute(RESEAL, {
            "id": row_id, "was": was, "key_id": payload.encrypted_with, "tool_input": Jsonb(payload.tool_input),
            "tool_output": None if payload.tool_output is None else Jsonb(payload.tool_output),
            "error_message": payload.error_message}, what="re-encrypting tool_invocations")
        return changed > 0

    async def stats(self, user_id: str, task_type: str | None = None,
                    channel: str | None = None) -> list[dict[str, Any]]:
        """Per tool of the user: ``tool_name``, ``usage_count``, ``success_count``, ``success_rate``,
        ``avg_latency_ms``, ``p95_latency_ms``, ``last_used``; best success rate first."""
        return await self.store.fetch(TOOL_STATS, (user_id, task_type, task_type, channel, channel),
                                      what="reading tool statistics")
