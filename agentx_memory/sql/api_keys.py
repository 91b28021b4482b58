"""The ``api_keys`` repository: the REST service's keys, kept as hashes (migration 0015).

A row holds the key's public id, the SHA-256 of the whole token, the user it acts for, optionally one agent of the
user and the channels it may use, and when it was made and revoked. The token itself is never stored; finding a key
by its id and comparing the hash is :mod:`agentx_memory.api_keys`'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, LiteralString

from .postgres import PostgresStore

__all__ = ["ApiKeyRows"]

_COLUMNS: Final[LiteralString] = "key_id, key_hash, user_id, agent_id, channels, name, created_at, revoked_at"

INSERT_KEY: Final[LiteralString] = (
    "INSERT INTO api_keys (key_id, key_hash, user_id, agent_id, channels, name)"
    " VALUES (%(key_id)s, %(key_hash)s, %(user_id)s, %(agent_id)s, %(channels)s, %(name)s)"
    " RETURNING " + _COLUMNS
)

GET_KEY: Final[LiteralString] = "SELECT " + _COLUMNS + " FROM api_keys WHERE key_id = %(key_id)s"

LIST_KEYS: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM api_keys WHERE (%(user_id)s::text IS NULL OR user_id = %(user_id)s::text)"
    " AND (%(with_revoked)s OR revoked_at IS NULL) ORDER BY created_at, key_id LIMIT %(limit)s"
)

REVOKE_KEY: Final[LiteralString] = (
    "UPDATE api_keys SET revoked_at = NOW() WHERE key_id = %(key_id)s AND revoked_at IS NULL RETURNING key_id"
)


class ApiKeyRows:
    """Reads and writes ``api_keys`` rows (plain dicts: the columns of :data:`_COLUMNS`)."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def insert(self, *, key_id: str, key_hash: str, user_id: str, agent_id: str | None,
                     channels: Sequence[str], name: str) -> dict[str, Any]:
        """Store a new key; return its row (a key id in use is a ConflictError)."""
        rows = await self.store.fetch(INSERT_KEY, {"key_id": key_id, "key_hash": key_hash, "user_id": user_id,
                                                   "agent_id": agent_id, "channels": list(channels), "name": name},
                                      what="writing api_keys")
        return rows[0]

    async def get(self, key_id: str) -> dict[str, Any] | None:
        """The key's row (revoked or not), or None."""
        rows = await self.store.fetch(GET_KEY, {"key_id": key_id}, what="reading api_keys")
        return rows[0] if rows else None

    async def list(self, user_id: str | None, *, with_revoked: bool, limit: int) -> list[dict[str, Any]]:
        """Keys of one user (None: every user), oldest first."""
        return await self.store.fetch(LIST_KEYS, {"user_id": user_id, "with_revoked": with_revoked, "limit": limit},
                                      what="reading api_keys")

    async def revoke(self, key_id: str) -> bool:
        """Mark the key revoked; True when it was live."""
        return bool(await self.store.fetch(REVOKE_KEY, {"key_id": key_id}, what="revoking an api key"))
