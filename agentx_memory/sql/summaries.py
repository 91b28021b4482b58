"""The ``episodic_summaries`` repository: one summary per conversation, and the search for similar ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..models import EpisodicSummary
from .postgres import PostgresStore

__all__ = ["SummaryRows"]

_COLUMNS: Final[LiteralString] = (
    "user_id, conversation_id, channel, summary, key_decisions, entities_mentioned, tools_called, turn_count, method,"
    " created_at, updated_at")

UPSERT: Final[LiteralString] = (
    "INSERT INTO episodic_summaries (user_id, conversation_id, channel, summary, key_decisions, entities_mentioned,"
    " tools_called, turn_count, method, embedding)"
    " VALUES (%(user_id)s, %(conversation_id)s, %(channel)s, %(summary)s, %(key_decisions)s, %(entities)s,"
    " %(tools)s, %(turn_count)s, %(method)s, %(embedding)s)"
    " ON CONFLICT (user_id, conversation_id) DO UPDATE SET channel = EXCLUDED.channel, summary = EXCLUDED.summary,"
    " key_decisions = EXCLUDED.key_decisions, entities_mentioned = EXCLUDED.entities_mentioned,"
    " tools_called = EXCLUDED.tools_called, turn_count = EXCLUDED.turn_count, method = EXCLUDED.method,"
    " embedding = EXCLUDED.embedding, updated_at = NOW()"
    " RETURNING " + _COLUMNS)

#: An agent reads a summary only when the conversation holds no other agent's private turn (a summary is made of
#: every turn, so it would tell what those turns say); ``agent_id`` NULL (the user) reads every summary.
_READABLE: Final[LiteralString] = (
    " AND (%(agent_id)s::text IS NULL OR NOT EXISTS (SELECT 1 FROM conversation_logs c"
    " WHERE c.user_id = episodic_summaries.user_id AND c.conversation_id = episodic_summaries.conversation_id"
    " AND c.scope = 'agent' AND c.agent_id <> %(agent_id)s))")

GET: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM episodic_summaries WHERE user_id = %(user_id)s"
    " AND conversation_id = %(conversation_id)s" + _READABLE)

#: The user's summaries in these channels nearest to a vector (exact within the user: its rows through the primary
#: key, then ordered), excluding some conversations.
SEARCH: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", 1 - (embedding <=> %(embedding)s) AS similarity FROM episodic_summaries"
    " WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND embedding IS NOT NULL"
    " AND NOT (conversation_id = ANY(%(exclude)s))" + _READABLE +
    " ORDER BY (embedding <=> %(embedding)s) + 0, conversation_id LIMIT %(k)s")


def _summary(row: dict[str, Any]) -> EpisodicSummary:
    return EpisodicSummary(**{k: v for k, v in row.items() if k != "similarity"})


class SummaryRows:
    """Writes, reads and searches ``episodic_summaries`` rows as :class:`~agentx_memory.models.EpisodicSummary`."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def upsert(self, summary: EpisodicSummary, embedding: Any) -> EpisodicSummary:
        """Store the conversation's summary (replacing an earlier one); return it as stored."""
        rows = await self.store.fetch(UPSERT, {
            "user_id": summary.user_id, "conversation_id": summary.conversation_id, "channel": summary.channel,
            "summary": summary.summary, "key_decisions": Jsonb(summary.key_decisions),
            "entities": Jsonb(summary.entities_mentioned), "tools": Jsonb(summary.tools_called),
            "turn_count": summary.turn_count, "method": summary.method, "embedding": embedding,
        }, what="writing episodic_summaries")
        return _summary(rows[0])

    async def get(self, user_id: str, conversation_id: str, *, agent_id: str | None = None) -> EpisodicSummary | None:
        """The conversation's summary (when ``agent_id`` may read it, if given), or ``None``."""
        rows = await self.store.fetch(GET, {"user_id": user_id, "conversation_id": conversation_id,
                                            "agent_id": agent_id}, what="reading episodic_summaries")
        return _summary(rows[0]) if rows else None

    async def search(self, user_id: str, channels: Sequence[str], embedding: Any, k: int,
                     exclude: Sequence[str] = (), *,
                     agent_id: str | None = None) -> list[tuple[EpisodicSummary, float]]:
        """The ``k`` summaries nearest to ``embedding`` (that ``agent_id`` may read, if given), best first, with
        their cosine similarity."""
        rows = await self.store.fetch(SEARCH, {"user_id": user_id, "channels": list(channels), "embedding": embedding,
                                               "k": k, "exclude": list(exclude), "agent_id": agent_id},
                                      what="searching episodic_summaries")
        return [(_summary(r), float(r["similarity"])) for r in rows]
