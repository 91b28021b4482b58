"""Read-only listings across the memory tables, for browsing one user's memory (the explorer page).

Every statement is bounded (a ``LIMIT``, keyset or offset paging) and, but for :data:`USERS`, scoped to one user.
Nothing here writes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, LiteralString

from ..models import Turn
from ..rows import turn_from_row
from .conversation_log import TURN_COLUMNS, seen_by_agent
from .postgres import PostgresStore

__all__ = ["BrowseRows"]


def _distinct_users(table: LiteralString) -> LiteralString:
    # A loose index scan: each step jumps to the next user id through the index that starts with user_id, so the
    # cost is one index probe per user listed, not a scan of the table.
    return (
        "(WITH RECURSIVE u(user_id) AS ("
        " (SELECT user_id FROM " + table + " WHERE user_id > %(after)s ORDER BY user_id LIMIT 1)"
        " UNION ALL SELECT (SELECT t.user_id FROM " + table + " t WHERE t.user_id > u.user_id"
        " ORDER BY t.user_id LIMIT 1) FROM u WHERE u.user_id IS NOT NULL)"
        " SELECT user_id FROM u WHERE user_id IS NOT NULL LIMIT %(limit)s)"
    )


#: Users with turns or timeline entries (facts, entities, goals), by id, after a keyset position.
USERS: Final[LiteralString] = (
    "SELECT user_id FROM (" + _distinct_users("conversation_logs") + " UNION "
    + _distinct_users("memory_timeline") + ") AS users ORDER BY user_id LIMIT %(limit)s"
)

#: One user's conversations (those the agent may read), the latest first.
CONVERSATIONS: Final[LiteralString] = (
    "SELECT conversation_id, min(channel) AS channel, count(*) AS turns, min(timestamp) AS started_at,"
    " max(timestamp) AS last_turn_at, bool_and(archived) AS archived"
    " FROM conversation_logs WHERE user_id = %(user_id)s AND " + seen_by_agent()
    + " GROUP BY conversation_id ORDER BY max(timestamp) DESC, conversation_id"
    " LIMIT %(limit)s OFFSET %(offset)s"
)

#: A page of one conversation's turns from an index on.
CONVERSATION_PAGE: Final[LiteralString] = (
    "SELECT " + TURN_COLUMNS + " FROM conversation_logs"
    " WHERE conversation_id = %(conversation_id)s AND user_id = %(user_id)s AND turn_index >= %(from_index)s"
    " AND " + seen_by_agent() + " ORDER BY turn_index LIMIT %(limit)s"
)

TURNS_BY_ID: Final[LiteralString] = (
    "SELECT " + TURN_COLUMNS + " FROM conversation_logs WHERE turn_id = ANY(%(ids)s) AND user_id = %(user_id)s"
    " AND " + seen_by_agent() + " ORDER BY conversation_id, turn_index"
)

#: The user's numbers in PostgreSQL: conversations, turns, tool calls.
COUNTS: Final[LiteralString] = (
    "SELECT (SELECT count(DISTINCT conversation_id) FROM conversation_logs WHERE user_id = %(user_id)s"
    "  AND " + seen_by_agent() + ") AS conversations,"
    " (SELECT count(*) FROM conversation_logs WHERE user_id = %(user_id)s AND " + seen_by_agent() + ") AS turns,"
    " (SELECT count(*) FROM tool_invocations WHERE user_id = %(user_id)s) AS tool_invocations"
)

#: One user's audit entries, newest first, optionally of one operation, before a keyset position.
AUDIT_TRAIL: Final[LiteralString] = (
    "SELECT id, timestamp, operation, memory_type, session_id, conversation_id, source_channel, target_channels,"
    " query_text, result_count, latency_ms, success, error_message,"
    " metadata->'affected_ids' AS affected_ids, metadata->'result_ids' AS result_ids"
    " FROM memory_audit_log WHERE user_id = %(user_id)s"
    " AND (%(operation)s::text IS NULL OR operation = %(operation)s)"
    " AND (%(before_time)s::timestamptz IS NULL OR (timestamp, id) < (%(before_time)s, %(before_id)s))"
    " ORDER BY timestamp DESC, id DESC LIMIT %(limit)s"
)

#: The operations one user's audit entries of a recent window hold.
AUDIT_OPERATIONS: Final[LiteralString] = (
    "SELECT DISTINCT operation FROM memory_audit_log WHERE user_id = %(user_id)s AND timestamp >= %(since)s"
    " ORDER BY operation"
)


class BrowseRows:
    """The read-only listings of :mod:`agentx_memory.browse`: users, conversations, turn pages, counts, audit."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def users(self, *, after: str, limit: int) -> list[str]:
        """Up to ``limit`` ids of users with turns or timeline entries, in order, after ``after``."""
        rows = await self.store.fetch(USERS, {"after": after, "limit": limit}, what="listing users")
        return [r["user_id"] for r in rows]

    async def conversations(self, user_id: str, *, limit: int, offset: int,
                            agent_id: str | None) -> list[dict[str, Any]]:
        """The user's conversations, latest first: id, channel, turns, started_at, last_turn_at, archived."""
        return await self.store.fetch(CONVERSATIONS, {
            "user_id": user_id, "limit": limit, "offset": offset, "agent_id": agent_id},
            what="listing conversations")

    async def conversation_page(self, conversation_id: str, user_id: str, *, from_index: int, limit: int,
                                agent_id: str | None) -> list[Turn]:
        """Up to ``limit`` turns of the user's conversation with an index from ``from_index`` on, in order."""
        rows = await self.store.fetch(CONVERSATION_PAGE, {
            "conversation_id": conversation_id, "user_id": user_id, "from_index": from_index, "limit": limit,
            "agent_id": agent_id}, what="reading a page of a conversation")
        return [turn_from_row(r) for r in rows]

    async def turns(self, turn_ids: list[str], user_id: str, *, agent_id: str | None) -> list[Turn]:
        """The user's turns with these ids (unknown ones left out)."""
        rows = await self.store.fetch(TURNS_BY_ID, {"ids": turn_ids, "user_id": user_id, "agent_id": agent_id},
                                      what="reading turns")
        return [turn_from_row(r) for r in rows]

    async def counts(self, user_id: str, *, agent_id: str | None) -> dict[str, int]:
        """How many conversations, turns and tool invocations the user has."""
        rows = await self.store.fetch(COUNTS, {"user_id": user_id, "agent_id": agent_id}, what="counting memories")
        return {k: int(v) for k, v in rows[0].items()}

    async def audit_trail(self, user_id: str, *, operation: str | None, before: tuple[datetime, int] | None,
                          limit: int) -> list[dict[str, Any]]:
        """The user's audit entries, newest first, before ``before`` (the last entry's ``(timestamp, id)``)."""
        before_time, before_id = before if before else (None, 0)
        return await self.store.fetch(AUDIT_TRAIL, {
            "user_id": user_id, "operation": operation, "before_time": before_time, "before_id": before_id,
            "limit": limit}, what="reading the audit trail")

    async def audit_operations(self, user_id: str, *, since: datetime) -> list[str]:
        """The operations of the user's audit entries since ``since``."""
        rows = await self.store.fetch(AUDIT_OPERATIONS, {"user_id": user_id, "since": since},
                                      what="reading audit operations")
        return [r["operation"] for r in rows]
