"""The ``memory_pools`` repository: shared pools of one user, their data, access control list and statistics.

Every statement names the user (the pool's tenant), so one user's pools are never read or written through another's
id. Every statement also treats a pool past ``expires_at`` as absent (:data:`LIVE`), by the server's clock.
Writes that depend on a decision are single statements carrying the decision in their ``WHERE``: a versioned write
applies only at the version the writer read and only while the agent may write; a change of the access list only
by the owner. When such a statement matches no row, the caller reads the pool again to say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["SHARED_KEY_PREFIX", "PoolRows"]

#: A memory shared into a pool is stored under ``"memory:<its id>"`` in the pool's data (forgetting it cuts that out).
SHARED_KEY_PREFIX: Final = "memory:"

#: Not expired (by the database's clock).
LIVE: Final[LiteralString] = "(p.expires_at IS NULL OR p.expires_at > NOW())"

#: The agent ``%(agent)s`` may read: the owner, a reader, a writer, or anyone of the user when ``public_read``.
CAN_READ: Final[LiteralString] = (
    "(p.owner_agent_id = %(agent)s::text OR coalesce((p.access_control->>'public_read')::boolean, false)"
    " OR coalesce(p.access_control->'read', '[]'::jsonb) ? %(agent)s::text"
    " OR coalesce(p.access_control->'write', '[]'::jsonb) ? %(agent)s::text)"
)

#: The agent ``%(agent)s`` may write: the owner or a writer.
CAN_WRITE: Final[LiteralString] = (
    "(p.owner_agent_id = %(agent)s::text OR coalesce(p.access_control->'write', '[]'::jsonb) ? %(agent)s::text)"
)

_COLUMNS: Final[LiteralString] = (
    "p.user_id, p.pool_id, p.pool_type, p.scope, p.owner_agent_id, p.access_control, p.version, p.expires_at,"
    " p.created_at, p.updated_at, p.read_count, p.write_count, p.last_accessed_at"
)

_KEY: Final[LiteralString] = "p.user_id = %(user_id)s AND p.pool_id = %(pool_id)s"

#: Serializes pool creation per user (the pool count limit): two keys, class "pool" and the user's hash.
LOCK_USER: Final[LiteralString] = "SELECT pg_advisory_xact_lock(1886351212, hashtext(%(user_id)s::text))"

#: How many live pools of the user (those ``%(agent)s`` may read, when it is not NULL) and the bytes of their data.
TOTALS: Final[LiteralString] = (
    "SELECT count(*) AS pools, coalesce(sum(octet_length(p.data::text)), 0) AS bytes FROM memory_pools AS p"
    " WHERE p.user_id = %(user_id)s AND " + LIVE + " AND (%(agent)s::text IS NULL OR " + CAN_READ + ")"
)

COUNT_LIVE: Final[LiteralString] = (
    "SELECT count(*) AS n FROM memory_pools AS p WHERE p.user_id = %(user_id)s AND " + LIVE
)

#: A new pool; an expired pool of the same id is replaced whole (it counts as absent), a live one is kept (no row).
CREATE: Final[LiteralString] = (
    "INSERT INTO memory_pools AS p (user_id, pool_id, pool_type, scope, owner_agent_id, data, access_control,"
    " expires_at)"
    " VALUES (%(user_id)s, %(pool_id)s, %(pool_type)s, %(scope)s, %(owner)s, %(data)s, %(access)s,"
    " NOW() + make_interval(secs => %(ttl)s::integer))"
    " ON CONFLICT (user_id, pool_id) DO UPDATE SET pool_type = EXCLUDED.pool_type, scope = EXCLUDED.scope,"
    " owner_agent_id = EXCLUDED.owner_agent_id, data = EXCLUDED.data, access_control = EXCLUDED.access_control,"
    " expires_at = EXCLUDED.expires_at, version = 1, created_at = NOW(), updated_at = NOW(), read_count = 0,"
    " write_count = 0, last_accessed_at = NULL"
    " WHERE p.expires_at IS NOT NULL AND p.expires_at <= NOW()"
    " RETURNING " + _COLUMNS
)

GET: Final[LiteralString] = "SELECT " + _COLUMNS + " FROM memory_pools AS p WHERE " + _KEY + " AND " + LIVE

GET_WITH_DATA: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", p.data FROM memory_pools AS p WHERE " + _KEY + " AND " + LIVE
)

#: The pool with the size of its data: top-level keys and bytes of its JSON text.
STATISTICS: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", (SELECT count(*) FROM jsonb_object_keys(p.data)) AS entries,"
    " octet_length(p.data::text) AS bytes FROM memory_pools AS p WHERE " + _KEY + " AND " + LIVE
)

#: The pools the agent may read, by id.
LIST_READABLE: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM memory_pools AS p WHERE p.user_id = %(user_id)s AND " + LIVE + " AND " + CAN_READ
    + " ORDER BY p.pool_id LIMIT %(limit)s"
)

#: A read of the data, counted, when the agent may read.
READ_DATA: Final[LiteralString] = (
    "UPDATE memory_pools AS p SET read_count = p.read_count + 1, last_accessed_at = NOW()"
    " WHERE " + _KEY + " AND " + LIVE + " AND " + CAN_READ + " RETURNING p.data, p.version"
)

#: The versioned write: new data, one version up, only at the version read and only while the agent may write.
WRITE_DATA: Final[LiteralString] = (
    "UPDATE memory_pools AS p SET data = %(data)s, version = p.version + 1, write_count = p.write_count + 1,"
    " last_accessed_at = NOW(), updated_at = NOW()"
    " WHERE " + _KEY + " AND " + LIVE + " AND p.version = %(expected)s AND " + CAN_WRITE + " RETURNING p.version"
)

#: The agent's access set to ``%(read)s`` / ``%(write)s`` (``[agent]`` or ``[]`` each), by the owner only. One
#: statement, so two grants at once both stay.
SET_ACCESS: Final[LiteralString] = (
    "UPDATE memory_pools AS p SET access_control = jsonb_build_object("
    "'read', (coalesce(p.access_control->'read', '[]'::jsonb) - %(agent)s::text) || %(read)s,"
    " 'write', (coalesce(p.access_control->'write', '[]'::jsonb) - %(agent)s::text) || %(write)s,"
    " 'public_read', coalesce(p.access_control->'public_read', 'false'::jsonb)), updated_at = NOW()"
    " WHERE " + _KEY + " AND " + LIVE + " AND p.owner_agent_id = %(by)s::text RETURNING " + _COLUMNS
)

DELETE: Final[LiteralString] = (
    "DELETE FROM memory_pools AS p WHERE " + _KEY + " AND " + LIVE + " AND p.owner_agent_id = %(by)s::text"
    " RETURNING p.pool_id"
)

_EXPIRED: Final[LiteralString] = (
    "p.expires_at <= coalesce(%(now)s::timestamptz, NOW())"
    " AND (%(user_id)s::text IS NULL OR p.user_id = %(user_id)s::text)"
)

_EXPIRED_COLUMNS: Final[LiteralString] = "p.user_id, p.pool_id, p.pool_type, p.owner_agent_id, p.expires_at"

EXPIRED: Final[LiteralString] = (
    "SELECT " + _EXPIRED_COLUMNS + " FROM memory_pools AS p WHERE " + _EXPIRED + " ORDER BY p.user_id, p.pool_id"
)

#: One page of expired pools deleted (rows another sweep holds are skipped, not waited for).
SWEEP_PAGE: Final[LiteralString] = (
    "DELETE FROM memory_pools AS p WHERE (p.user_id, p.pool_id) IN (SELECT p.user_id, p.pool_id FROM memory_pools"
    " AS p WHERE " + _EXPIRED + " LIMIT %(limit)s FOR UPDATE SKIP LOCKED) RETURNING " + _EXPIRED_COLUMNS
)

_SWEEP_PAGE_SIZE: Final = 500


class PoolRows:
    """Reads and writes ``memory_pools`` rows (plain dicts; the pool module makes them models)."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def create(self, user_id: str, pool_id: str, *, pool_type: str, scope: str, owner: str,
                     access: Mapping[str, Any], data: Mapping[str, Any], ttl_seconds: int | None,
                     max_pools: int) -> tuple[dict[str, Any] | None, int]:
        """Create a pool unless the user holds ``max_pools`` live pools already, in one transaction under the user's
        lock. Returns (the row, or None when nothing was created, and the user's live pools before): no row and a
        count under ``max_pools`` means the id is taken by a live pool."""
        params = {"user_id": user_id, "pool_id": pool_id, "pool_type": pool_type, "scope": scope, "owner": owner,
                  "access": Jsonb(dict(access)), "data": Jsonb(dict(data)), "ttl": ttl_seconds}
        async with pg_errors("creating a memory pool"), self.store.connection() as conn, conn.transaction():
            await conn.execute(LOCK_USER, params)
            counted = await (await conn.execute(COUNT_LIVE, params)).fetchone()
            live = int(counted["n"]) if counted else 0
            if live >= max_pools:
                return None, live
            return await (await conn.execute(CREATE, params)).fetchone(), live

    async def get(self, user_id: str, pool_id: str, *, with_data: bool = False) -> dict[str, Any] | None:
        """The live pool (with its ``data`` when asked), or None."""
        rows = await self.store.fetch(GET_WITH_DATA if with_data else GET, {"user_id": user_id, "pool_id": pool_id},
                                      what="reading memory_pools")
        return rows[0] if rows else None

    async def statistics(self, user_id: str, pool_id: str) -> dict[str, Any] | None:
        """The live pool with ``entries`` and ``bytes`` of its data, or None."""
        rows = await self.store.fetch(STATISTICS, {"user_id": user_id, "pool_id": pool_id},
                                      what="reading memory_pools")
        return rows[0] if rows else None

    async def totals(self, user_id: str, agent_id: str | None = None) -> dict[str, int]:
        """``pools`` and ``bytes`` (of their data as JSON text) of the user's live pools, or of those ``agent_id``
        may read."""
        rows = await self.store.fetch(TOTALS, {"user_id": user_id, "agent": agent_id}, what="reading memory_pools")
        return {"pools": int(rows[0]["pools"]), "bytes": int(rows[0]["bytes"])}

    async def list_readable(self, user_id: str, agent_id: str, limit: int) -> list[dict[str, Any]]:
        """The user's live pools the agent may read, by id."""
        return await self.store.fetch(LIST_READABLE, {"user_id": user_id, "agent": agent_id, "limit": limit},
                                      what="reading memory_pools")

    async def read_data(self, user_id: str, pool_id: str, agent_id: str) -> tuple[dict[str, Any], int] | None:
        """(data, version) of a live pool the agent may read, counting the read; None otherwise."""
        rows = await self.store.fetch(READ_DATA, {"user_id": user_id, "pool_id": pool_id, "agent": agent_id},
                                      what="reading memory_pools")
        return (rows[0]["data"], rows[0]["version"]) if rows else None

    async def write_data(self, user_id: str, pool_id: str, agent_id: str, data: Mapping[str, Any], *,
                         expected: int) -> int | None:
        """Replace the data at version ``expected`` if the agent may write; the new version, or None when the pool
        is gone, the version moved on or the agent may not write."""
        rows = await self.store.fetch(WRITE_DATA, {"user_id": user_id, "pool_id": pool_id, "agent": agent_id,
                                                   "data": Jsonb(dict(data)), "expected": expected},
                                      what="writing memory_pools")
        return int(rows[0]["version"]) if rows else None

    async def set_access(self, user_id: str, pool_id: str, agent_id: str, *, read: bool, write: bool,
                         by: str) -> dict[str, Any] | None:
        """Set one agent's access (by the owner ``by`` only); the pool after, or None when it is gone or ``by`` is
        not its owner."""
        rows = await self.store.fetch(SET_ACCESS, {
            "user_id": user_id, "pool_id": pool_id, "agent": agent_id, "by": by,
            "read": Jsonb([agent_id] if read else []), "write": Jsonb([agent_id] if write else []),
        }, what="writing memory_pools")
        return rows[0] if rows else None

    async def delete(self, user_id: str, pool_id: str, *, by: str) -> bool:
        """Delete a live pool of the owner ``by``; True when it did."""
        rows = await self.store.fetch(DELETE, {"user_id": user_id, "pool_id": pool_id, "by": by},
                                      what="deleting from memory_pools")
        return bool(rows)

    async def expired(self, *, now: datetime | None, user_id: str | None) -> list[dict[str, Any]]:
        """The pools expired as of ``now`` (default: the database's clock), of every user or one."""
        return await self.store.fetch(EXPIRED, {"now": now, "user_id": user_id}, what="reading memory_pools")

    async def sweep(self, *, now: datetime | None, user_id: str | None) -> list[dict[str, Any]]:
        """Delete the pools expired as of ``now`` (default: the database's clock), of every user or one, in pages;
        return what was deleted (ids, type, owner, expiry; never data)."""
        return await self.store.fetch_pages(SWEEP_PAGE, {"now": now, "user_id": user_id},
                                            page_size=_SWEEP_PAGE_SIZE, what="deleting expired memory_pools")

