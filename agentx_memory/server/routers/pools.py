"""Shared memory pools of the user's agents (seed 002).

The agent acting is the key's agent; a key of the whole user names it with the ``agent_id`` query parameter.
"""

from __future__ import annotations

from dataclasses import asdict

from ...pools import Pool, PoolStatistics
from ..auth import Reader, Writer
from ..schemas import (
    Deleted,
    PoolCreateIn,
    PoolDataIn,
    PoolDataOut,
    PoolGrantIn,
    PoolOut,
    PoolPatchIn,
    PoolShareIn,
    PoolStatisticsOut,
    Version,
)
from . import api_router

__all__ = ["router"]

router = api_router("pools")


def _out(pool: Pool) -> PoolOut:
    fields = asdict(pool)
    fields.pop("user_id")
    return PoolOut(**fields)


def _stats(stats: PoolStatistics) -> PoolStatisticsOut:
    return PoolStatisticsOut(**asdict(stats))


@router.post("/pools", status_code=201, response_model=PoolOut, summary="Create a pool")
async def create_pool(body: PoolCreateIn, caller: Writer, agent_id: str | None = None) -> PoolOut:
    """Create a pool owned by the acting agent, at version 1; an id in use is 409."""
    return _out(await caller.memory.create_pool(
        body.pool_id, agent_id=agent_id, pool_type=body.pool_type, scope=body.scope, ttl_seconds=body.ttl_seconds,
        public_read=body.public_read, data=body.data, user_id=caller.user_id))


@router.get("/pools", response_model=list[PoolOut], summary="Pools the agent may read")
async def list_pools(caller: Reader, agent_id: str | None = None, limit: int = 1000) -> list[PoolOut]:
    """The user's live pools the acting agent may read (owned, granted or public_read), by id."""
    return [_out(p) for p in await caller.memory.list_pools(agent_id=agent_id, user_id=caller.user_id, limit=limit)]


@router.get("/pools/{pool_id}", response_model=PoolOut, summary="One pool")
async def get_pool(pool_id: str, caller: Reader, agent_id: str | None = None) -> PoolOut:
    """The pool (without its data) when the acting agent may read it."""
    return _out(await caller.memory.get_pool(pool_id, agent_id=agent_id, user_id=caller.user_id))


@router.get("/pools/{pool_id}/data", response_model=PoolDataOut, summary="A pool's data")
async def read_data(pool_id: str, caller: Reader, agent_id: str | None = None) -> PoolDataOut:
    """The pool's data and version (pass the version to the next write)."""
    data, version = await caller.memory.read_pool_data(pool_id, agent_id=agent_id, user_id=caller.user_id)
    return PoolDataOut(data=data, version=version)


@router.put("/pools/{pool_id}/data", response_model=Version, summary="Replace a pool's data")
async def write_data(pool_id: str, body: PoolDataIn, caller: Writer, agent_id: str | None = None) -> Version:
    """Replace the data when the pool is still at ``expected_version`` (409 otherwise); returns the new version."""
    return Version(version=await caller.memory.write_pool_data(
        pool_id, body.data, expected_version=body.expected_version, agent_id=agent_id, user_id=caller.user_id))


@router.patch("/pools/{pool_id}/data", response_model=Version, summary="Merge into a pool's data")
async def merge_data(pool_id: str, body: PoolPatchIn, caller: Writer, agent_id: str | None = None) -> Version:
    """Merge ``patch`` key by key (``null`` removes a key), versioned like a replacement."""
    return Version(version=await caller.memory.merge_pool_data(
        pool_id, body.patch, expected_version=body.expected_version, agent_id=agent_id, user_id=caller.user_id))


@router.post("/pools/{pool_id}/share", response_model=Version, summary="Share a memory into a pool")
async def share_memory(pool_id: str, body: PoolShareIn, caller: Writer, agent_id: str | None = None) -> Version:
    """Copy one of the user's facts, entities, rules, strategies or goals into the pool's data."""
    return Version(version=await caller.memory.share_memory(
        pool_id, body.memory_id, expected_version=body.expected_version, agent_id=agent_id,
        memory_type=body.memory_type, user_id=caller.user_id, channels=caller.read_channels(None)))


@router.post("/pools/{pool_id}/grants", response_model=PoolOut, summary="Grant an agent access")
async def grant(pool_id: str, body: PoolGrantIn, caller: Writer, agent_id: str | None = None) -> PoolOut:
    """Set an agent's access to ``read`` or ``write`` (the owner only)."""
    return _out(await caller.memory.grant_pool_access(pool_id, body.agent_id, body.level, by_agent=agent_id,
                                                      user_id=caller.user_id))


@router.delete("/pools/{pool_id}/grants/{grantee}", response_model=PoolOut, summary="Revoke an agent's access")
async def revoke(pool_id: str, grantee: str, caller: Writer, agent_id: str | None = None) -> PoolOut:
    """Take an agent's read and write grants away (the owner only)."""
    return _out(await caller.memory.revoke_pool_access(pool_id, grantee, by_agent=agent_id, user_id=caller.user_id))


@router.get("/pools/{pool_id}/statistics", response_model=PoolStatisticsOut, summary="A pool's statistics")
async def statistics(pool_id: str, caller: Reader, agent_id: str | None = None) -> PoolStatisticsOut:
    """Entries, bytes, version, reads, writes, last access and grants of the pool."""
    return _stats(await caller.memory.pool_statistics(pool_id, agent_id=agent_id, user_id=caller.user_id))


@router.delete("/pools/{pool_id}", response_model=Deleted, summary="Delete a pool")
async def delete_pool(pool_id: str, caller: Writer, agent_id: str | None = None) -> Deleted:
    """Delete the pool (its owner only); ``deleted``: 1 when it did."""
    return Deleted(deleted=int(await caller.memory.delete_pool(pool_id, by_agent=agent_id, user_id=caller.user_id)))
