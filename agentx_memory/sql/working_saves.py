"""The ``working_memory_saves`` repository: a session's working memory saved to PostgreSQL (seed 002's
``persist_to_database`` / ``load_from_database``).

One row per (user, channel, conversation); a save replaces the row (``saved_at`` is the time of the last save). The
saved ``entries`` are opaque here: :meth:`agentx_memory.working.WorkingMemory.persist` makes them and
:meth:`~agentx_memory.working.WorkingMemory.load` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from .postgres import Connection, PostgresStore

__all__ = ["WorkingSaves", "scrub_memories"]

SAVE: Final[LiteralString] = (
    "INSERT INTO working_memory_saves (user_id, channel, conversation_id, entries, saved_at)"
    " VALUES (%(user_id)s, %(channel)s, %(conversation_id)s, %(entries)s, NOW())"
    " ON CONFLICT (user_id, channel, conversation_id) DO UPDATE SET entries = EXCLUDED.entries,"
    " saved_at = EXCLUDED.saved_at RETURNING saved_at")

LOAD: Final[LiteralString] = (
    "SELECT entries, saved_at FROM working_memory_saves"
    " WHERE user_id = %(user_id)s AND channel = %(channel)s AND conversation_id = %(conversation_id)s")

DELETE: Final[LiteralString] = (
    "DELETE FROM working_memory_saves"
    " WHERE user_id = %(user_id)s AND channel = %(channel)s AND conversation_id = %(conversation_id)s")

#: The user's saves whose text names one of ``ids`` (a cheap first pass; :func:`scrub_memories` checks each entry).
SAVES_NAMING: Final[LiteralString] = (
    "SELECT channel, conversation_id, entries FROM working_memory_saves WHERE user_id = %(user_id)s"
    " AND EXISTS (SELECT 1 FROM unnest(%(ids)s::text[]) AS i WHERE strpos(entries::text, i) > 0) FOR UPDATE")

SET_ENTRIES: Final[LiteralString] = (
    "UPDATE working_memory_saves SET entries = %(entries)s"
    " WHERE user_id = %(user_id)s AND channel = %(channel)s AND conversation_id = %(conversation_id)s")


def _without(entries: list[dict[str, Any]], wanted: set[str]) -> tuple[list[dict[str, Any]], int]:
    """``entries`` without the cached turns whose id is wanted and the ledger fields (``kind:id``) naming one, as
    :meth:`agentx_memory.working.WorkingStore.forget_items` removes them from Redis; and how many went."""
    removed, out = 0, []
    for entry in entries:
        value = entry.get("value")
        if entry.get("suffix") == "turns" and isinstance(value, list):
            kept = []
            for item in value:
                try:
                    cached = json.loads(item)
                except (TypeError, ValueError):
                    cached = None
                if isinstance(cached, dict) and cached.get("id") in wanted:
                    removed += 1
                else:
                    kept.append(item)
            entry = {**entry, "value": kept}
        elif entry.get("suffix") == "ledger" and isinstance(value, dict):
            kept_fields = {k: v for k, v in value.items() if k.partition(":")[2] not in wanted}
            removed += len(value) - len(kept_fields)
            entry = {**entry, "value": kept_fields}
        out.append(entry)
    return out, removed


async def scrub_memories(conn: Connection, user_id: str, ids: Sequence[str]) -> int:
    """Cut the memories ``ids`` out of the user's saved working memories, on ``conn`` (the caller's transaction):
    cached turns with one of those ids and injection-ledger entries naming one. Returns how many entries went."""
    if not ids:
        return 0
    cur = await conn.execute(SAVES_NAMING, {"user_id": user_id, "ids": list(ids)})
    removed = 0
    for row in await cur.fetchall():
        entries, gone = _without(list(row["entries"]), set(ids))
        if gone:
            removed += gone
            await conn.execute(SET_ENTRIES, {"entries": Jsonb(entries), "user_id": user_id,
                                             "channel": row["channel"], "conversation_id": row["conversation_id"]})
    return removed


class WorkingSaves:
    """Saves, reads and deletes the saved working memory of one (user, channel, conversation)."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def save(self, user_id: str, channel: str, conversation_id: str,
                   entries: Sequence[Mapping[str, Any]]) -> datetime:
        """Replace the session's saved working memory with ``entries``; return the time it was saved."""
        rows = await self.store.fetch(SAVE, {"user_id": user_id, "channel": channel,
                                             "conversation_id": conversation_id,
                                             "entries": Jsonb([dict(e) for e in entries])},
                                      what="saving working memory")
        saved_at: datetime = rows[0]["saved_at"]
        return saved_at

    async def load(self, user_id: str, channel: str,
                   conversation_id: str) -> tuple[list[dict[str, Any]], datetime] | None:
        """The session's saved entries and when they were saved, or None when it was never saved."""
        rows = await self.store.fetch(LOAD, {"user_id": user_id, "channel": channel,
                                             "conversation_id": conversation_id}, what="loading working memory")
        if not rows:
            return None
        return list(rows[0]["entries"]), rows[0]["saved_at"]

    async def delete(self, user_id: str, channel: str, conversation_id: str) -> bool:
        """Delete the session's saved working memory; True when there was one."""
        return bool(await self.store.execute(DELETE, {"user_id": user_id, "channel": channel,
                                                      "conversation_id": conversation_id},
                                             what="deleting saved working memory"))
