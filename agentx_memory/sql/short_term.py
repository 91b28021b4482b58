"""The ``short_term_memory`` repository: per-session entries with a TTL and an access count (seed 002).

Every statement takes the caller's ``now``, so expiry is decided by one clock the tests can set. A read counts itself
in one ``UPDATE ... RETURNING`` (concurrent reads never lose a count), and only an entry that has not expired is read,
touched or refreshed. The ``short_term`` job's statements re-check their condition as they delete, so an entry
refreshed or rewritten in between is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..errors import ConflictError
from ..models import ShortTermEntry
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["ShortTermRows", "entry_from_row"]

_COLUMNS: Final[LiteralString] = (
    "user_id, session_id, memory_key, agent_id, memory_value, memory_type, ttl_seconds, expires_at, access_count,"
    " last_accessed_at, created_at, updated_at")

_KEY: Final[LiteralString] = "user_id = %(user_id)s AND session_id = %(session_id)s AND memory_key = %(key)s"

#: What the agent ``%(reader)s`` may read (NULL: the user, everything): its own entries and the user's (no agent).
_SEEN: Final[LiteralString] = "(%(reader)s::text IS NULL OR agent_id IS NULL OR agent_id = %(reader)s)"

#: Serializes the writes of one session, so the entry cap holds under concurrent writers.
LOCK_SESSION: Final[LiteralString] = (
    "SELECT pg_advisory_xact_lock(hashtextextended(%(user_id)s::text || chr(31) || %(session_id)s::text, 16))")

#: The session's live entries, and whether ``key`` is one of them.
SESSION_LOAD: Final[LiteralString] = (
    "SELECT count(*) AS live, coalesce(bool_or(memory_key = %(key)s), false) AS present FROM short_term_memory"
    " WHERE user_id = %(user_id)s AND session_id = %(session_id)s AND expires_at > %(now)s")

#: Insert, or overwrite the value: a live entry keeps its access count, last access and creation time; an expired
#: one is replaced as if new. Either way the expiry starts again from ``now``.
UPSERT: Final[LiteralString] = (
    "INSERT INTO short_term_memory AS s (" + _COLUMNS + ") VALUES (%(user_id)s, %(session_id)s, %(key)s,"
    " %(agent_id)s, %(value)s, %(memory_type)s, %(ttl)s, %(now)s + make_interval(secs => %(ttl)s), 0, NULL,"
    " %(now)s, %(now)s)"
    " ON CONFLICT (user_id, session_id, memory_key) DO UPDATE SET"
    "  agent_id = EXCLUDED.agent_id, memory_value = EXCLUDED.memory_value, memory_type = EXCLUDED.memory_type,"
    "  ttl_seconds = EXCLUDED.ttl_seconds, expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at,"
    "  access_count = CASE WHEN s.expires_at > %(now)s THEN s.access_count ELSE 0 END,"
    "  last_accessed_at = CASE WHEN s.expires_at > %(now)s THEN s.last_accessed_at END,"
    "  created_at = CASE WHEN s.expires_at > %(now)s THEN s.created_at ELSE EXCLUDED.created_at END"
    # another agent's live entry under the key is not overwritten (no row comes back: the caller refuses)
    " WHERE s.expires_at <= %(now)s OR EXCLUDED.agent_id IS NULL OR s.agent_id IS NULL"
    "  OR s.agent_id = EXCLUDED.agent_id"
    " RETURNING " + _COLUMNS)

TOUCH: Final[LiteralString] = (
    "UPDATE short_term_memory SET access_count = access_count + 1, last_accessed_at = %(now)s"
    " WHERE " + _KEY + " AND " + _SEEN + " AND expires_at > %(now)s RETURNING " + _COLUMNS)

#: A live entry expires ``ttl`` seconds (default: its own TTL) from ``now``; a given TTL becomes its TTL.
REFRESH_TTL: Final[LiteralString] = (
    "UPDATE short_term_memory SET ttl_seconds = coalesce(%(ttl)s, ttl_seconds),"
    " expires_at = %(now)s + make_interval(secs => coalesce(%(ttl)s, ttl_seconds))"
    " WHERE " + _KEY + " AND " + _SEEN + " AND expires_at > %(now)s RETURNING " + _COLUMNS)

#: Removes the entry, live or expired; says whether it was live.
DELETE: Final[LiteralString] = (
    "DELETE FROM short_term_memory WHERE " + _KEY + " AND " + _SEEN + " RETURNING expires_at > %(now)s AS live")

GET: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM short_term_memory WHERE " + _KEY + " AND " + _SEEN + " AND expires_at > %(now)s")

LIST: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM short_term_memory WHERE user_id = %(user_id)s AND session_id = %(session_id)s"
    " AND " + _SEEN + " AND expires_at > %(now)s ORDER BY memory_key")

#: Per memory type: live entries, expired ones waiting for the job, accesses and value bytes of the live ones.
STATISTICS: Final[LiteralString] = (
    "SELECT memory_type, count(*) FILTER (WHERE expires_at > %(now)s) AS entries,"
    " count(*) FILTER (WHERE expires_at <= %(now)s) AS expired,"
    " coalesce(sum(access_count) FILTER (WHERE expires_at > %(now)s), 0) AS accesses,"
    " coalesce(sum(octet_length(memory_value::text)) FILTER (WHERE expires_at > %(now)s), 0) AS bytes"
    " FROM short_term_memory WHERE user_id = %(user_id)s"
    " AND (%(session_id)s::text IS NULL OR session_id = %(session_id)s) AND " + _SEEN + " GROUP BY memory_type")

_AFTER: Final[LiteralString] = (
    " AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)"
    " AND (user_id, session_id, memory_key) > (%(after_user)s, %(after_session)s, %(after_key)s)"
    " ORDER BY user_id, session_id, memory_key LIMIT %(limit)s")

#: One page of the entries read at least ``min_access`` times (through ``idx_short_term_access``), in key order.
PROMOTABLE: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM short_term_memory WHERE access_count >= %(min_access)s" + _AFTER)

#: One page of the expired entries read fewer than ``min_access`` times (through ``idx_short_term_expires``).
DROPPABLE: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM short_term_memory WHERE expires_at <= %(now)s"
    " AND access_count < %(min_access)s" + _AFTER)

#: Takes one entry out for promotion if it is still read often enough; returns it as it was when taken.
TAKE_PROMOTABLE: Final[LiteralString] = (
    "DELETE FROM short_term_memory WHERE " + _KEY + " AND access_count >= %(min_access)s RETURNING " + _COLUMNS)

#: Deletes up to ``limit`` expired, rarely read entries (the condition checked again as they go).
DROP_EXPIRED: Final[LiteralString] = (
    "DELETE FROM short_term_memory AS s USING (SELECT user_id, session_id, memory_key FROM short_term_memory"
    "  WHERE expires_at <= %(now)s AND access_count < %(min_access)s"
    "  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s) ORDER BY expires_at LIMIT %(limit)s) AS d"
    " WHERE (s.user_id, s.session_id, s.memory_key) = (d.user_id, d.session_id, d.memory_key)"
    " AND s.expires_at <= %(now)s AND s.access_count < %(min_access)s"
    " RETURNING s.user_id, s.session_id, s.memory_key, s.agent_id, s.memory_value, s.memory_type, s.ttl_seconds,"
    " s.expires_at, s.access_count, s.last_accessed_at, s.created_at, s.updated_at")

#: Puts an entry back as it was (undo); an entry written under its key since stays, and nothing is returned.
RESTORE: Final[LiteralString] = (
    "INSERT INTO short_term_memory (" + _COLUMNS + ") VALUES (%(user_id)s, %(session_id)s, %(key)s, %(agent_id)s,"
    " %(value)s, %(memory_type)s, %(ttl)s, %(expires_at)s, %(access_count)s, %(last_accessed_at)s, %(created_at)s,"
    " %(updated_at)s) ON CONFLICT (user_id, session_id, memory_key) DO NOTHING RETURNING memory_key")


def entry_from_row(row: Mapping[str, Any]) -> ShortTermEntry:
    """A :class:`ShortTermEntry` from a ``short_term_memory`` row."""
    return ShortTermEntry(
        user_id=row["user_id"], session_id=row["session_id"], key=row["memory_key"], value=row["memory_value"],
        memory_type=row["memory_type"], agent_id=row["agent_id"], ttl_seconds=row["ttl_seconds"],
        expires_at=row["expires_at"], access_count=row["access_count"], last_accessed_at=row["last_accessed_at"],
        created_at=row["created_at"], updated_at=row["updated_at"])


def _key(user_id: str, session_id: str, key: str, now: datetime, reader: str | None = None) -> dict[str, Any]:
    return {"user_id": user_id, "session_id": session_id, "key": key, "now": now, "reader": reader}


class ShortTermRows:
    """Writes, reads (counting each read) and sweeps ``short_term_memory`` rows as :class:`ShortTermEntry`."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def write(self, entry: ShortTermEntry, *, now: datetime, max_entries: int) -> ShortTermEntry | None:
        """Create or overwrite the entry (see :data:`UPSERT`), expiring ``entry.ttl_seconds`` after ``now``; return
        it as stored, or ``None`` when its key is new and the session already holds ``max_entries`` live entries."""
        params = {**_key(entry.user_id, entry.session_id, entry.key, now), "agent_id": entry.agent_id,
                  "value": Jsonb(entry.value), "memory_type": entry.memory_type, "ttl": entry.ttl_seconds}
        async with pg_errors("writing short_term_memory"), self.store.connection() as conn, conn.transaction():
            await conn.execute(LOCK_SESSION, params)
            load = await (await conn.execute(SESSION_LOAD, params)).fetchone()
            if load is not None and not load["present"] and load["live"] >= max_entries:
                return None
            row = await (await conn.execute(UPSERT, params)).fetchone()
        if row is None:
            raise ConflictError(f"key {entry.key!r} of session {entry.session_id!r} holds another agent's live entry; "
                                "it is not overwritten")
        return entry_from_row(row)

    async def get(self, user_id: str, session_id: str, key: str, *, now: datetime,
                  reader: str | None = None) -> ShortTermEntry | None:
        """The live entry, without counting a read; ``None`` when absent or expired."""
        rows = await self.store.fetch(GET, _key(user_id, session_id, key, now, reader),
                                      what="reading short_term_memory")
        return entry_from_row(rows[0]) if rows else None

    async def touch(self, user_id: str, session_id: str, key: str, *, now: datetime,
                    reader: str | None = None) -> ShortTermEntry | None:
        """Count one read of the live entry (access count + 1, last access ``now``); the entry after it, or
        ``None`` when absent or expired."""
        rows = await self.store.fetch(TOUCH, _key(user_id, session_id, key, now, reader),
                                      what="touching short_term_memory")
        return entry_from_row(rows[0]) if rows else None

    async def refresh_ttl(self, user_id: str, session_id: str, key: str, ttl_seconds: int | None, *,
                          now: datetime, reader: str | None = None) -> ShortTermEntry | None:
        """Let the live entry expire ``ttl_seconds`` (default: its own TTL) after ``now``; ``None`` when absent or
        expired."""
        rows = await self.store.fetch(REFRESH_TTL, {**_key(user_id, session_id, key, now, reader),
                                                    "ttl": ttl_seconds},
                                      what="refreshing short_term_memory")
        return entry_from_row(rows[0]) if rows else None

    async def delete(self, user_id: str, session_id: str, key: str, *, now: datetime,
                     reader: str | None = None) -> bool:
        """Remove the entry (an expired one too); True when a live entry was removed."""
        rows = await self.store.fetch(DELETE, _key(user_id, session_id, key, now, reader),
                                      what="deleting short_term_memory")
        return bool(rows and rows[0]["live"])

    async def list_session(self, user_id: str, session_id: str, *, now: datetime,
                           reader: str | None = None) -> list[ShortTermEntry]:
        """The session's live entries (those the agent ``reader`` may read, when given), by key."""
        rows = await self.store.fetch(LIST, {"user_id": user_id, "session_id": session_id, "now": now,
                                             "reader": reader},
                                      what="reading short_term_memory")
        return [entry_from_row(row) for row in rows]

    async def statistics(self, user_id: str, session_id: str | None, *, now: datetime,
                         reader: str | None = None) -> list[dict[str, Any]]:
        """Per memory type: ``entries`` (live), ``expired``, ``accesses`` and ``bytes`` (of the live ones), for one
        session or all the user's."""
        return await self.store.fetch(STATISTICS, {"user_id": user_id, "session_id": session_id, "now": now,
                                                   "reader": reader},
                                      what="reading short_term_memory")

    async def _page(self, query: LiteralString, params: dict[str, Any], after: tuple[str, str, str],
                    limit: int) -> list[ShortTermEntry]:
        rows = await self.store.fetch(query, {**params, "after_user": after[0], "after_session": after[1],
                                              "after_key": after[2], "limit": limit},
                                      what="reading short_term_memory")
        return [entry_from_row(row) for row in rows]

    async def promotable(self, *, min_access: int, user_id: str | None, after: tuple[str, str, str],
                         limit: int) -> list[ShortTermEntry]:
        """Up to ``limit`` entries read at least ``min_access`` times, after the key ``after`` (user, session,
        key) in key order; of every user, or only ``user_id``."""
        return await self._page(PROMOTABLE, {"min_access": min_access, "user_id": user_id}, after, limit)

    async def droppable(self, *, now: datetime, min_access: int, user_id: str | None, after: tuple[str, str, str],
                        limit: int) -> list[ShortTermEntry]:
        """Up to ``limit`` entries expired at ``now`` and read fewer than ``min_access`` times, after ``after``."""
        return await self._page(DROPPABLE, {"now": now, "min_access": min_access, "user_id": user_id}, after, limit)

    async def take_promotable(self, user_id: str, session_id: str, key: str, *,
                              min_access: int) -> ShortTermEntry | None:
        """Delete the entry if it is still read at least ``min_access`` times; it as it was, or ``None``."""
        rows = await self.store.fetch(TAKE_PROMOTABLE, {"user_id": user_id, "session_id": session_id, "key": key,
                                                        "min_access": min_access},
                                      what="promoting short_term_memory")
        return entry_from_row(rows[0]) if rows else None

    async def drop_expired(self, *, now: datetime, min_access: int, user_id: str | None,
                           limit: int) -> list[ShortTermEntry]:
        """Delete up to ``limit`` entries expired at ``now`` and read fewer than ``min_access`` times; them."""
        rows = await self.store.fetch(DROP_EXPIRED, {"now": now, "min_access": min_access, "user_id": user_id,
                                                     "limit": limit}, what="dropping short_term_memory")
        return [entry_from_row(row) for row in rows]

    async def restore(self, entry: ShortTermEntry) -> bool:
        """Put ``entry`` back exactly as it was; False (nothing written) when its key holds an entry again."""
        rows = await self.store.fetch(RESTORE, {
            "user_id": entry.user_id, "session_id": entry.session_id, "key": entry.key, "agent_id": entry.agent_id,
            "value": Jsonb(entry.value), "memory_type": entry.memory_type, "ttl": entry.ttl_seconds,
            "expires_at": entry.expires_at, "access_count": entry.access_count,
            "last_accessed_at": entry.last_accessed_at, "created_at": entry.created_at,
            "updated_at": entry.updated_at}, what="restoring short_term_memory")
        return bool(rows)
