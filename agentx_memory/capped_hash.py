"""A Redis hash with one size cap over all its fields, merged atomically (spec 000's per-conversation working
memory), and the plain hash of the injection ledger. Both refresh their expiry on every read and write.

The size of a hash is the sum, over its fields, of the UTF-8 bytes of the field name and of the stored value: exact
and the same on every Redis, unlike ``MEMORY USAGE`` (an estimate that depends on the server's encoding). A merge
runs as one Lua script: it computes the size the hash would have, and either writes every field and refreshes the
expiry, or writes nothing and returns the size it would have had. So a write past the cap stores nothing (spec 000
lets it succeed and then complain; issue 19 decided for our no-half-write rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import redis.asyncio as aioredis

__all__ = ["delete_fields", "merge", "read", "read_field", "size_of"]

#: KEYS[1] the hash; ARGV[1] the cap, ARGV[2] the expiry (s), then field, value pairs. Returns {written (1/0), size}.
_MERGE: Final = """
local cap = tonumber(ARGV[1])
local incoming = {}
for i = 3, #ARGV, 2 do incoming[ARGV[i]] = ARGV[i + 1] end
local size = 0
local stored = redis.call('HGETALL', KEYS[1])
for i = 1, #stored, 2 do
  if incoming[stored[i]] == nil then size = size + #stored[i] + #stored[i + 1] end
end
for field, value in pairs(incoming) do size = size + #field + #value end
if size > cap then return {0, size} end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, size}
"""


def size_of(fields: Mapping[str, str]) -> int:
    """The size of a hash holding ``fields`` (see the module docstring)."""
    return sum(len(k.encode()) + len(v.encode()) for k, v in fields.items())


async def merge(client: aioredis.Redis, key: str, fields: Mapping[str, str], *, cap: int,
                ttl_seconds: int) -> tuple[bool, int]:
    """Set ``fields`` (field → stored text) in the hash at ``key`` unless its size would pass ``cap``; refresh its
    expiry when written. Returns (written, the size it has, or would have had)."""
    args: list[Any] = [cap, ttl_seconds]
    for name, value in fields.items():
        args += [name, value]
    written, size = await client.eval(_MERGE, 1, key, *args)
    return bool(written), int(size)


async def read(client: aioredis.Redis, key: str, *, ttl_seconds: int) -> dict[str, str]:
    """Every field of the hash at ``key`` (bytes decoded as UTF-8), refreshing its expiry when it exists."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.hgetall(key)
        pipe.expire(key, ttl_seconds)
        raw, _ = await pipe.execute()
    return {_text(k): _text(v) for k, v in raw.items()}


async def read_field(client: aioredis.Redis, key: str, field: str, *, ttl_seconds: int) -> str | None:
    """One field of the hash at ``key`` (None when absent), refreshing the hash's expiry when it exists: one field
    read, not the whole hash."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.hget(key, field)
        pipe.expire(key, ttl_seconds)
        raw, _ = await pipe.execute()
    return None if raw is None else _text(raw)


async def delete_fields(client: aioredis.Redis, key: str, fields: Sequence[str] | None, *, ttl_seconds: int) -> int:
    """Delete these fields (refreshing the hash's expiry), or the whole hash when ``fields`` is None; return how many
    fields (or hashes) went."""
    if fields is None:
        return int(await client.delete(key))
    if not fields:
        return 0
    async with client.pipeline(transaction=True) as pipe:
        pipe.hdel(key, *fields)
        pipe.expire(key, ttl_seconds)
        removed, _ = await pipe.execute()
    return int(removed)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
