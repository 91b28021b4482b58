"""The ``tool_invocations`` repository: the durable log of tool calls, and the per-tool statistics drawn from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..models import ToolInvocation
from .conversation_log import claim_conversation
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["ToolInvocationLog"]

INSERT_INVOCATION: Final[LiteralString] = (
    "INSERT INTO tool_invocations (invocation_id, user_id, conversation_id, turn_index, turn_id, timestamp,"
    " tool_name, task_type, tool_input, tool_output, success, latency_ms, error_message, channel)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (invocation_id) DO NOTHING"
    " RETURNING invocation_id"
)

#: A logged invocation's owner and time, and whether it holds the same call (JSONB compares numbers by value).
STORED_INVOCATION: Final[LiteralString] = (
    "SELECT user_id, conversation_id, timestamp,"
    " (tool_name = %(tool_name)s AND channel = %(channel)s AND turn_id IS NOT DISTINCT FROM %(turn_id)s"
    "  AND task_type IS NOT DISTINCT FROM %(task_type)s AND tool_input = %(tool_input)s"
    "  AND tool_output IS NOT DISTINCT FROM %(tool_output)s AND success IS NOT DISTINCT FROM %(success)s"
    "  AND latency_ms IS NOT DISTINCT FROM %(latency_ms)s"
    "  AND error_message IS NOT DISTINCT FROM %(error_message)s) AS same"
    " FROM tool_invocations WHERE invocation_id = %(id)s"
)

MARK_PROJECTED: Final[LiteralString] = (
    "UPDATE tool_invocations SET projected = TRUE WHERE invocation_id = ANY(%s) AND NOT projected"
)

#: The reconcile queue of tool calls, in log order after a row position.
UNPROJECTED: Final[LiteralString] = (
    "SELECT id, invocation_id, user_id, conversation_id, turn_index, turn_id, timestamp, tool_name, task_type,"
    " success, latency_ms, channel FROM tool_invocations WHERE NOT projected AND id > %s ORDER BY id LIMIT %s"
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

    async def record(self, inv: ToolInvocation) -> bool:
        """Log the invocation; ``False`` when its id was logged before (nothing is written then).

        The conversation must be unused or the invocation's user's (its first turn or tool call makes it theirs):
        :class:`ConflictError` otherwise, checked under the conversation's lock, the one turn appends take."""
        async with pg_errors("writing tool_invocations"), self.store.connection() as conn, conn.transaction():
            await claim_conversation(conn, inv.conversation_id, inv.user_id)
            cur = await conn.execute(INSERT_INVOCATION, (
                inv.id, inv.user_id, inv.conversation_id, inv.turn_index, inv.turn_id, inv.timestamp, inv.tool_name,
                inv.task_type, Jsonb(inv.tool_input), Jsonb(inv.tool_output), inv.success, inv.latency_ms,
                inv.error_message, inv.channel,
            ))
            return bool(await cur.fetchall())

    async def mark_projected(self, invocation_ids: Sequence[str]) -> None:
        """Record that these invocations are in the graph (reconcile skips them from now on)."""
        await self.store.execute(MARK_PROJECTED, (list(invocation_ids),), what="marking tool invocations projected")

    async def unprojected(self, *, after: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` invocations not yet in the graph, in log order after row ``after`` (each row has its
        position ``id`` and the fields the graph holds)."""
        return await self.store.fetch(UNPROJECTED, (after, limit), what="reading unprojected tool invocations")

    async def stored(self, inv: ToolInvocation) -> dict[str, Any] | None:
        """The logged invocation with ``inv``'s id: its ``user_id``, ``conversation_id``, ``timestamp`` and whether
        it is the ``same`` call (tool, channel, turn, task type, input, output, outcome); ``None`` when not logged."""
        rows = await self.store.fetch(STORED_INVOCATION, {
            "id": inv.id, "tool_name": inv.tool_name, "channel": inv.channel, "turn_id": inv.turn_id,
            "task_type": inv.task_type, "tool_input": Jsonb(inv.tool_input), "tool_output": Jsonb(inv.tool_output),
            "success": inv.success, "latency_ms": inv.latency_ms, "error_message": inv.error_message,
        }, what="reading tool_invocations")
        return rows[0] if rows else None

    async def stats(self, user_id: str, task_type: str | None = None,
                    channel: str | None = None) -> list[dict[str, Any]]:
        """Per tool of the user: ``tool_name``, ``usage_count``, ``success_count``, ``success_rate``,
        ``avg_latency_ms``, ``p95_latency_ms``, ``last_used``; best success rate first."""
        return await self.store.fetch(TOOL_STATS, (user_id, task_type, task_type, channel, channel),
                                      what="reading tool statistics")
