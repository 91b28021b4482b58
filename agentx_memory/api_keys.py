"""API keys of the REST service: a key acts for one user, optionally as one agent of the user and only in some
channels (issue 18).

A token reads ``axm_<key_id>_<secret>``: ``key_id`` (16 hex characters) is public and finds the key's row, ``secret``
is 32 random bytes (URL-safe base64). Only the SHA-256 of the whole token is stored (migration 0015,
:mod:`agentx_memory.sql.api_keys`); :meth:`ApiKeyStore.resolve` hashes what it is given and compares the hashes with
:func:`hmac.compare_digest`, so neither the stored value nor the comparison's timing gives the token away. A token
is shown once, when :meth:`ApiKeyStore.create` makes it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from .agents import check_agent
from .errors import ValidationError
from .sql.api_keys import ApiKeyRows
from .sql.postgres import PostgresStore
from .validation import check_channel, check_id, check_int, check_text

__all__ = ["TOKEN_PREFIX", "ApiKey", "ApiKeyStore", "NewApiKey", "hash_token"]

#: What every token starts with (so a leaked one is easy to recognise, e.g. by secret scanners).
TOKEN_PREFIX: Final = "axm_"
_TOKEN: Final = re.compile(r"^axm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
#: The most channels one key may be limited to.
MAX_KEY_CHANNELS: Final = 100


class ApiKey(BaseModel):
    """A stored API key (never its token): who it acts for and since when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: str = Field(description="the public part of the token; names the key in `keys list` and `keys revoke`")
    user_id: str = Field(description="the user every request made with the key acts for")
    agent_id: str | None = Field(None, description="the agent of the user the key acts as (None: the user)")
    channels: list[str] = Field(default_factory=list,
                                description="the channels the key may use (empty: every channel)")
    name: str = Field("", description="a label for people")
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        """True once the key was revoked."""
        return self.revoked_at is not None


class NewApiKey(BaseModel):
    """A key just made: its record and the token, which is not stored and cannot be shown again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: ApiKey
    token: str


def hash_token(token: str) -> str:
    """The stored form of a token: SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def _key(row: Mapping[str, Any]) -> ApiKey:
    return ApiKey(key_id=row["key_id"], user_id=row["user_id"], agent_id=row["agent_id"],
                  channels=list(row["channels"] or ()), name=row["name"], created_at=row["created_at"],
                  revoked_at=row["revoked_at"])


class ApiKeyStore:
    """Makes, finds, lists and revokes API keys in PostgreSQL."""

    def __init__(self, postgres: PostgresStore):
        self.rows = ApiKeyRows(postgres)

    async def create(self, user_id: str, *, agent_id: str | None = None, channels: Sequence[str] = (),
                     name: str = "") -> NewApiKey:
        """Make a key for ``user_id`` (as ``agent_id``, limited to ``channels`` when given); return it with its
        token."""
        user = check_id(user_id, "user_id")
        agent = check_agent(agent_id)
        if isinstance(channels, str):
            raise ValidationError("channels", "must be a list of channels, not one string")
        wanted = list(dict.fromkeys(check_channel(c, "channels") for c in channels))
        check_int(len(wanted), "channels", low=0, high=MAX_KEY_CHANNELS)
        label = check_text(name, "name", max_bytes=200) if name else ""
        key_id = secrets.token_hex(8)
        token = f"{TOKEN_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        row = await self.rows.insert(key_id=key_id, key_hash=hash_token(token), user_id=user, agent_id=agent,
                                     channels=wanted, name=label)
        return NewApiKey(key=_key(row), token=token)

    async def resolve(self, token: str) -> ApiKey | None:
        """The live key ``token`` is, or None (malformed, unknown, revoked, or a wrong secret)."""
        found = _TOKEN.match(token) if isinstance(token, str) else None
        if found is None:
            return None
        row = await self.rows.get(found.group(1))
        # compare even when there is no row, so an unknown key id costs what a wrong secret costs
        stored = row["key_hash"] if row is not None else hash_token("")
        if not hmac.compare_digest(stored, hash_token(token)) or row is None or row["revoked_at"] is not None:
            return None
        return _key(row)

    async def list(self, user_id: str | None = None, *, include_revoked: bool = False,
                   limit: int = 1000) -> list[ApiKey]:
        """Keys of ``user_id`` (None: of every user), oldest first."""
        user = None if user_id is None else check_id(user_id, "user_id")
        rows = await self.rows.list(user, with_revoked=bool(include_revoked),
                                    limit=check_int(limit, "limit", low=1, high=100_000))
        return [_key(row) for row in rows]

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key: requests made with it are refused from now on. True when it was live."""
        return await self.rows.revoke(check_id(key_id, "key_id"))
