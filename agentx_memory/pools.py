"""Shared memory pools (seed 002, issue 16): data the agents of one user share, under an access control list.

A pool belongs to one user (the tenant: another user's pools are never visible, whatever ids are passed) and to
the agent that created it, its **owner**. Its data is one JSON object of at most ``pools.max_data_bytes``; a user
holds at most ``pools.max_pools_per_user`` pools. The access control list is seed 002's
``{"read": [...], "write": [...], "public_read": false}``:

* the owner may read, write, grant, revoke and delete; only the owner changes the list or deletes the pool;
* a writer may also read (write implies read); ``public_read`` lets every agent of the user read;
* an ``agent_private`` pool is its owner's alone: it refuses grants to other agents and ``public_read``.

``pool_type`` (``shared``, ``agent_private``, ``team_shared``, ``task_scoped``) and ``scope`` (``global``,
``account``, ``team``, ``agent``, ``task``) are recorded as the seed names them; access is decided by the list
alone. Scope ``global`` means shared across the user's agents (issue 19): give such a pool ``public_read``.

Data is versioned (optimistic concurrency): :meth:`PoolStore.read_data` returns the data with its version, and every
write names the version it was based on. The write is one conditional statement, so of two writers that read the
same version exactly one wins; the other gets :class:`~agentx_memory.errors.StaleVersionError` and nothing of its
write is stored (read again and retry).

A pool with a TTL expires: from then on every operation treats it as absent (``NotFoundError``, and its id is free
again), and the cleanup job's sweep (:meth:`PoolStore.expire`) deletes it.

Every access decision is audited (memory type ``pool``, operation ``pool_<action>``): denials and writes at audit
level ``writes`` (the default), allowed reads at level ``reads``, as every read is. A denial raises
:class:`~agentx_memory.errors.PermissionDeniedError` after its audit entry is written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from .context import MemoryContext
from .control import ControlStore
from .errors import ConflictError, NotFoundError, PermissionDeniedError, StaleVersionError, ValidationError
from .goals import GoalMemory
from .models import GLOBAL_CHANNEL
from .procedural import ProceduralMemory
from .runs import JobReport
from .semantic import SemanticMemory
from .sql.pools import SHARED_KEY_PREFIX
from .validation import INT32_MAX, check_datetime, check_id, check_int, check_json

__all__ = [
    "LEVELS",
    "MAX_GRANTS",
    "MAX_TTL_SECONDS",
    "POOL_TYPES",
    "SCOPES",
    "SHAREABLE_TYPES",
    "SHARED_KEY_PREFIX",
    "Pool",
    "PoolStatistics",
    "PoolStore",
    "PoolSweepReport",
]

POOL_TYPES: Final = ("shared", "agent_private", "team_shared", "task_scoped")
SCOPES: Final = ("global", "account", "team", "agent", "task")
LEVELS: Final = ("read", "write")
#: The kinds of memory :meth:`PoolStore.share_memory` copies into a pool, in the order an untyped id is looked up.
SHAREABLE_TYPES: Final = ("fact", "entity", "control", "strategy", "goal")
#: The longest TTL: ten years.
MAX_TTL_SECONDS: Final = 10 * 365 * 24 * 3600
#: The most agents one pool's access control list names.
MAX_GRANTS: Final = 1000


#: The shareable kinds a memory of one agent can be private to (read through the agent's view).
_AGENT_SCOPED: Final = frozenset({"fact", "control"})


@dataclass(frozen=True)
class Pool:
    """A pool as stored, without its data (:meth:`PoolStore.read_data` reads that). ``readers`` and ``writers`` are
    the agents granted each level (the owner is in both); ``version`` is the data's version."""

    user_id: str
    pool_id: str
    pool_type: str
    scope: str
    owner_agent_id: str
    readers: tuple[str, ...]
    writers: tuple[str, ...]
    public_read: bool
    version: int
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @property
    def access_control(self) -> dict[str, Any]:
        """The access control list in seed 002's shape: ``{"read": [...], "write": [...], "public_read": bool}``."""
        return {"read": list(self.readers), "write": list(self.writers), "public_read": self.public_read}


@dataclass(frozen=True)
class PoolStatistics:
    """What a pool holds and how it is used: ``entries`` (top-level keys of its data), ``bytes`` (its data as JSON
    text), ``version``, ``reads`` and ``writes`` of its data, ``last_accessed_at``, and who may read and write."""

    pool_id: str
    entries: int
    bytes: int
    version: int
    reads: int
    writes: int
    last_accessed_at: datetime | None
    readers: tuple[str, ...]
    writers: tuple[str, ...]
    public_read: bool
    expires_at: datetime | None


@dataclass
class PoolSweepReport(JobReport):
    """What an expiry sweep deleted (``changes``: each pool's user, id, type, owner and expiry; never its data)."""

    pools_deleted: int = 0

    def counts(self) -> dict[str, Any]:
        """Pools deleted (or, in a dry run, that would be)."""
        return {"pools_deleted": self.pools_deleted}


def _pool(row: Mapping[str, Any]) -> Pool:
    acl = row["access_control"] or {}
    return Pool(user_id=row["user_id"], pool_id=row["pool_id"], pool_type=row["pool_type"], scope=row["scope"],
                owner_agent_id=row["owner_agent_id"], readers=tuple(acl.get("read") or ()),
                writers=tuple(acl.get("write") or ()), public_read=bool(acl.get("public_read")),
                version=int(row["version"]), expires_at=row["expires_at"], created_at=row["created_at"],
                updated_at=row["updated_at"])


def _may(row: Mapping[str, Any], agent_id: str, level: str) -> bool:
    """Whether the access list of ``row`` gives ``agent_id`` ``level`` (the SQL of :mod:`agentx_memory.sql.pools`
    decides the same way inside its statements)."""
    if agent_id == row["owner_agent_id"]:
        return True
    acl = row["access_control"] or {}
    writers = acl.get("write") or []
    if level == "write":
        return agent_id in writers
    return bool(acl.get("public_read")) or agent_id in (acl.get("read") or []) or agent_id in writers


def _check_choice(value: Any, field: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValidationError(field, f"must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _check_object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object: a dict with string keys and JSON values (size not checked here)."""
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict (a JSON object), got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ValidationError(field, f"keys must be strings, got {key!r}")
    check_json(value, field, max_bytes=sys.maxsize)
    return dict(value)


class PoolStore:
    """Creates, shares, reads and writes memory pools under their access control lists (see the module docstring).

    Every method takes the ``user_id`` the pool belongs to and the agent acting; every operation on a pool that does
    not exist, has expired or belongs to another user raises :class:`~agentx_memory.errors.NotFoundError` (but
    :meth:`delete_pool`, which returns False).
    """

    def __init__(self, ctx: MemoryContext, semantic: SemanticMemory, procedural: ProceduralMemory,
                 goals: GoalMemory, controls: ControlStore):
        self.ctx = ctx
        self._getters: dict[str, Callable[..., Awaitable[Any]]] = {
            "fact": semantic.get_fact, "entity": semantic.get_entity, "control": controls.get,
            "strategy": procedural.get_strategy, "goal": goals.get_goal,
        }

    # --- checks and audit ---------------------------------------------------------------------------------------

    def _check_data(self, value: Any, field: str) -> dict[str, Any]:
        """A JSON object within ``pools.max_data_bytes`` (measured as JSON text, as ``pool_statistics`` does)."""
        data = _check_object(value, field)
        self._check_size(data, field)
        return data

    def _check_size(self, data: Mapping[str, Any], field: str) -> None:
        limit = self.ctx.settings.pools.max_data_bytes
        size = len(check_json(data, field, max_bytes=sys.maxsize).encode("utf-8"))
        if size > limit:
            raise ValidationError(field, f"the pool's data would be {size} bytes as JSON; the limit is {limit} bytes "
                                         "(pools.max_data_bytes); nothing was written")

    async def _deny(self, user_id: str, pool_id: str, agent_id: str, operation: str, action: str,
                    kind: str = "pool") -> PermissionDeniedError:
        """Audit a denied access and return the error to raise."""
        error = PermissionDeniedError(agent_id, action, kind, pool_id)
        await self.ctx.audit.log_write(f"pool_{operation}", "pool", None, [pool_id],
                                       {"agent_id": agent_id, "decision": "denied"}, user_id=user_id, success=False,
                                       error_message=str(error))
        return error

    async def _allowed_read(self, user_id: str, pool_id: str, agent_id: str, operation: str, started: float,
                            result_count: int = 1, **details: Any) -> None:
        await self.ctx.audit.log_read(pool_id, [], result_count, int((time.perf_counter() - started) * 1000),
                                      user_id=user_id, memory_type="pool", operation=f"pool_{operation}",
                                      metadata={"agent_id": agent_id, "decision": "allowed", **details})

    async def _allowed_write(self, user_id: str, affected: list[str], agent_id: str, operation: str, started: float,
                             **details: Any) -> None:
        await self.ctx.audit.log_write(f"pool_{operation}", "pool", None, affected,
                                       {"agent_id": agent_id, "decision": "allowed", **details}, user_id=user_id,
                                       latency_ms=int((time.perf_counter() - started) * 1000))

    async def _live(self, user_id: str, pool_id: str, *, with_data: bool = False) -> dict[str, Any]:
        row = await self.ctx.sql.pools.get(user_id, pool_id, with_data=with_data)
        if row is None:
            raise NotFoundError("pool", pool_id)
        return row

    # --- pools --------------------------------------------------------------------------------------------------

    async def create_pool(self, user_id: str, pool_id: str, *, agent_id: str, pool_type: str = "shared",
                          scope: str = "account", ttl_seconds: int | None = None, public_read: bool = False,
                          data: Mapping[str, Any] | None = None) -> Pool:
        """Create a pool owned by ``agent_id`` (who may read, write and grant), at version 1, holding ``data``
        (default ``{}``); it expires ``ttl_seconds`` from now (never when None). An id the user already uses for a
        live pool is a :class:`ConflictError`; the ``pools.max_pools_per_user``-th pool a ValidationError."""
        started = time.perf_counter()
        check_id(user_id, "user_id")
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        _check_choice(pool_type, "pool_type", POOL_TYPES)
        _check_choice(scope, "scope", SCOPES)
        if ttl_seconds is not None:
            check_int(ttl_seconds, "ttl_seconds", low=1, high=MAX_TTL_SECONDS)
        if not isinstance(public_read, bool):
            raise ValidationError("public_read", f"must be True or False, got {type(public_read).__name__}")
        if public_read and pool_type == "agent_private":
            raise ValidationError("public_read", "an agent_private pool is only its owner's; it cannot be public_read")
        content = self._check_data({} if data is None else data, "data")
        limit = self.ctx.settings.pools.max_pools_per_user
        row, live = await self.ctx.sql.pools.create(
            user_id, pool_id, pool_type=pool_type, scope=scope, owner=agent_id,
            access={"read": [agent_id], "write": [agent_id], "public_read": public_read}, data=content,
            ttl_seconds=ttl_seconds, max_pools=limit)
        if row is None:
            if live >= limit:
                raise ValidationError("pool_id", f"user {user_id!r} holds {live} pools; the limit is {limit} "
                                                 "(pools.max_pools_per_user)")
            raise ConflictError(f"pool {pool_id!r} already exists for user {user_id!r}")
        await self._allowed_write(user_id, [pool_id], agent_id, "create", started, pool_type=pool_type, scope=scope,
                                  public_read=public_read, ttl_seconds=ttl_seconds)
        return _pool(row)

    async def get_pool(self, user_id: str, pool_id: str, *, agent_id: str) -> Pool:
        """The pool (without its data), when ``agent_id`` may read it; else PermissionDeniedError."""
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        row = await self._live(user_id, pool_id)
        if not _may(row, agent_id, "read"):
            raise await self._deny(user_id, pool_id, agent_id, "get", "read")
        await self._allowed_read(user_id, pool_id, agent_id, "get", started)
        return _pool(row)

    async def list_pools(self, user_id: str, *, agent_id: str, limit: int = 1000) -> list[Pool]:
        """The user's live pools ``agent_id`` may read (owned, granted or ``public_read``), by id; at most
        ``limit``."""
        started = time.perf_counter()
        check_id(agent_id, "agent_id")
        rows = await self.ctx.sql.pools.list_readable(user_id, agent_id,
                                                      check_int(limit, "limit", low=1, high=100_000))
        await self._allowed_read(user_id, "*", agent_id, "list", started, result_count=len(rows))
        return [_pool(row) for row in rows]

    async def accessible_by(self, user_id: str, pool_id: str, agent_id: str, level: str = "read") -> bool:
        """Whether ``agent_id`` may ``read`` or ``write`` the pool now. A question about the list, not an access:
        it reads no data and is not audited."""
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        _check_choice(level, "level", LEVELS)
        return _may(await self._live(user_id, pool_id), agent_id, level)

    async def grant_access(self, user_id: str, pool_id: str, agent_id: str, level: str, *, by_agent: str) -> Pool:
        """Set ``agent_id``'s access to ``level``: ``read``, or ``write`` (which implies read); granting ``read`` to
        a writer takes its write away. Only the owner (``by_agent``) grants; an ``agent_private`` pool refuses every
        grant. The owner's own access never changes (ValidationError). Returns the pool after."""
        return await self._set_access(user_id, pool_id, agent_id, _check_choice(level, "level", LEVELS),
                                      by_agent=by_agent)

    async def revoke_access(self, user_id: str, pool_id: str, agent_id: str, *, by_agent: str) -> Pool:
        """Take every grant of ``agent_id`` away (read and write; ``public_read`` still lets it read). Only the owner
        (``by_agent``) revokes. Returns the pool after."""
        return await self._set_access(user_id, pool_id, agent_id, None, by_agent=by_agent)

    async def _set_access(self, user_id: str, pool_id: str, agent_id: str, level: str | None, *,
                          by_agent: str) -> Pool:
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        check_id(by_agent, "by_agent")
        operation, action = ("grant", "grant access to") if level else ("revoke", "revoke access to")
        row = await self._live(user_id, pool_id)
        if by_agent != row["owner_agent_id"]:
            raise await self._deny(user_id, pool_id, by_agent, operation, action)
        if agent_id == row["owner_agent_id"]:
            raise ValidationError("agent_id", f"{agent_id!r} owns pool {pool_id!r}; the owner's access cannot change")
        if level and row["pool_type"] == "agent_private":
            raise await self._deny(user_id, pool_id, by_agent, operation, "grant another agent access to",
                                   kind="agent_private pool")
        pool = _pool(row)
        named = set(pool.readers) | set(pool.writers)
        if level and agent_id not in named and len(named) >= MAX_GRANTS:
            raise ValidationError("agent_id", f"pool {pool_id!r} names {len(named)} agents; the limit is "
                                              f"{MAX_GRANTS} per pool")
        after = await self.ctx.sql.pools.set_access(user_id, pool_id, agent_id, read=level is not None,
                                                    write=level == "write", by=by_agent)
        if after is None:  # deleted or expired since it was read
            raise NotFoundError("pool", pool_id)
        await self._allowed_write(user_id, [pool_id], by_agent, operation, started, grantee=agent_id, level=level)
        return _pool(after)

    async def delete_pool(self, user_id: str, pool_id: str, *, by_agent: str) -> bool:
        """Delete the pool and its data (its owner ``by_agent`` only); True when it did, False when there is no
        such live pool."""
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(by_agent, "by_agent")
        if await self.ctx.sql.pools.delete(user_id, pool_id, by=by_agent):
            await self._allowed_write(user_id, [pool_id], by_agent, "delete", started)
            return True
        if await self.ctx.sql.pools.get(user_id, pool_id) is None:
            return False
        raise await self._deny(user_id, pool_id, by_agent, "delete", "delete")

    # --- data ---------------------------------------------------------------------------------------------------

    async def read_data(self, user_id: str, pool_id: str, *, agent_id: str) -> tuple[dict[str, Any], int]:
        """The pool's data and its version, when ``agent_id`` may read (counted in the pool's statistics)."""
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        found = await self.ctx.sql.pools.read_data(user_id, pool_id, agent_id)
        if found is None:
            row = await self._live(user_id, pool_id)
            if not _may(row, agent_id, "read"):
                raise await self._deny(user_id, pool_id, agent_id, "read", "read")
            found = await self.ctx.sql.pools.read_data(user_id, pool_id, agent_id)  # granted in between
            if found is None:
                raise NotFoundError("pool", pool_id)
        await self._allowed_read(user_id, pool_id, agent_id, "read", started, version=found[1])
        return found

    async def write_data(self, user_id: str, pool_id: str, data: Mapping[str, Any], *, agent_id: str,
                         expected_version: int) -> int:
        """Replace the pool's data with ``data`` (a JSON object), based on ``expected_version``; return the new
        version. A stale version is :class:`StaleVersionError` and nothing is written."""
        content = self._check_data(data, "data")
        return await self._versioned_write(user_id, pool_id, agent_id, expected_version, "write", "write",
                                           lambda _current: _ready(content))

    async def merge_data(self, user_id: str, pool_id: str, patch: Mapping[str, Any], *, agent_id: str,
                         expected_version: int) -> int:
        """Merge ``patch`` into the pool's data key by key (shallow: a key's value is replaced whole), based on
        ``expected_version``; a key whose value is ``None`` is **removed**. Returns the new version; a stale version
        is :class:`StaleVersionError` and nothing is written. An empty patch is a ValidationError."""
        changes = _check_object(patch, "patch")
        if not changes:
            raise ValidationError("patch", "must name at least one key")

        async def merged(current: dict[str, Any]) -> dict[str, Any]:
            out = dict(current)
            for key, value in changes.items():
                if value is None:
                    out.pop(key, None)
                else:
                    out[key] = value
            return out

        return await self._versioned_write(user_id, pool_id, agent_id, expected_version, "merge", "write", merged,
                                           field="patch")

    async def share_memory(self, user_id: str, pool_id: str, memory_id: str, *, agent_id: str,
                           expected_version: int, memory_type: str | None = None,
                           channels: Sequence[str] | None = None) -> int:
        """Copy one of the user's memories — a fact, entity, control, strategy or goal — into the pool's data under
        ``"memory:<memory_id>"``: ``{"type", "text", "source_id", "channel", "shared_by", "shared_at"}`` (the text
        is the fact's claim, the entity's name and description, the rule, or the strategy's or goal's description).
        ``memory_type`` skips the lookup of the other kinds (else they are tried in :data:`SHAREABLE_TYPES` order).
        Sharing it again refreshes the copy. Versioned like :meth:`write_data`; returns the new version. The agent
        shares only what it may read: not another agent's private fact or rule, and with ``channels`` only a memory
        of one of them or of ``_global`` (:class:`NotFoundError` otherwise, as for a memory that is not there)."""
        check_id(memory_id, "memory_id")
        kinds = SHAREABLE_TYPES if memory_type is None else (_check_choice(memory_type, "memory_type",
                                                                           SHAREABLE_TYPES),)

        async def with_memory(current: dict[str, Any]) -> dict[str, Any]:
            entry = await self._shareable(user_id, memory_id, kinds, agent_id=agent_id, channels=channels)
            return {**current, SHARED_KEY_PREFIX + memory_id: {**entry, "shared_by": agent_id,
                                                               "shared_at": datetime.now(UTC).isoformat()}}

        return await self._versioned_write(user_id, pool_id, agent_id, expected_version, "share", "share a memory into",
                                           with_memory, details={"memory_id": memory_id})

    async def _shareable(self, user_id: str, memory_id: str, kinds: tuple[str, ...], *, agent_id: str,
                         channels: Sequence[str] | None) -> dict[str, Any]:
        """The pool entry of the user's memory ``memory_id``, of the first of ``kinds`` that has it and that
        ``agent_id`` may read (in ``channels`` or ``_global``, when given)."""
        for kind in kinds:
            try:
                found = await (self._getters[kind](memory_id, user_id, agent_id=agent_id) if kind in _AGENT_SCOPED
                               else self._getters[kind](memory_id, user_id))
            except NotFoundError:
                continue
            if channels is not None and found.channel not in (*channels, GLOBAL_CHANNEL):
                continue
            if kind == "fact":
                text = found.claim
            elif kind == "entity":
                text = f"{found.name}: {found.description}" if found.description else found.name
            elif kind == "control":
                text = found.content
            else:
                text = found.description
            return {"type": kind, "text": text, "source_id": memory_id, "channel": found.channel}
        raise NotFoundError(" or ".join(kinds), memory_id)

    async def _versioned_write(self, user_id: str, pool_id: str, agent_id: str, expected_version: int,
                               operation: str, action: str,
                               build: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]], *, field: str = "data",
                               details: dict[str, Any] | None = None) -> int:
        """The write path: the agent may write, the version is the stored one, the new data fits; then one
        conditional statement stores it (which rechecks the version and the grant, so a race loses nothing)."""
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        check_int(expected_version, "expected_version", low=1, high=INT32_MAX)
        row = await self._live(user_id, pool_id, with_data=operation != "write")
        if not _may(row, agent_id, "write"):
            raise await self._deny(user_id, pool_id, agent_id, operation, action)
        if row["version"] != expected_version:
            raise await self._stale(user_id, pool_id, agent_id, operation, expected_version, row["version"])
        data = await build(row.get("data") or {})
        self._check_size(data, field)
        version = await self.ctx.sql.pools.write_data(user_id, pool_id, agent_id, data, expected=expected_version)
        if version is None:  # something changed between the read and the write: say what
            now = await self._live(user_id, pool_id)
            if not _may(now, agent_id, "write"):
                raise await self._deny(user_id, pool_id, agent_id, operation, action)
            raise await self._stale(user_id, pool_id, agent_id, operation, expected_version, now["version"])
        await self._allowed_write(user_id, [pool_id], agent_id, operation, started, version=version,
                                  **(details or {}))
        return version

    async def _stale(self, user_id: str, pool_id: str, agent_id: str, operation: str, expected: int,
                     current: int) -> StaleVersionError:
        """Audit a write refused for its version (access was allowed) and return the error to raise."""
        error = StaleVersionError("pool", pool_id, expected=expected, current=current)
        await self.ctx.audit.log_write(f"pool_{operation}", "pool", None, [pool_id],
                                       {"agent_id": agent_id, "decision": "allowed", "stale": True,
                                        "expected_version": expected, "current_version": current},
                                       user_id=user_id, success=False, error_message=str(error))
        return error

    async def pool_statistics(self, user_id: str, pool_id: str, *, agent_id: str) -> PoolStatistics:
        """Entries, bytes, version, reads and writes of the data, last access and grants, when ``agent_id`` may
        read the pool."""
        started = time.perf_counter()
        check_id(pool_id, "pool_id")
        check_id(agent_id, "agent_id")
        row = await self.ctx.sql.pools.statistics(user_id, pool_id)
        if row is None:
            raise NotFoundError("pool", pool_id)
        if not _may(row, agent_id, "read"):
            raise await self._deny(user_id, pool_id, agent_id, "statistics", "read the statistics of")
        await self._allowed_read(user_id, pool_id, agent_id, "statistics", started)
        pool = _pool(row)
        return PoolStatistics(pool_id=pool_id, entries=int(row["entries"]), bytes=int(row["bytes"]),
                              version=pool.version, reads=int(row["read_count"]), writes=int(row["write_count"]),
                              last_accessed_at=row["last_accessed_at"], readers=pool.readers, writers=pool.writers,
                              public_read=pool.public_read, expires_at=pool.expires_at)

    # --- expiry -------------------------------------------------------------------------------------------------

    async def expire(self, report: PoolSweepReport, *, now: datetime | None = None,
                     user_id: str | None = None) -> PoolSweepReport:
        """Delete the pools expired as of ``now`` (default: the database's clock), of every user or only
        ``user_id``, each audited (operation ``expire``); a dry run lists them and deletes nothing."""
        if now is not None:
            now = check_datetime(now, "now")
        rows = (await self.ctx.sql.pools.expired(now=now, user_id=user_id) if report.dry_run
                else await self.ctx.sql.pools.sweep(now=now, user_id=user_id))
        for row in rows:
            change = {"user_id": row["user_id"], "pool_id": row["pool_id"], "pool_type": row["pool_type"],
                      "owner_agent_id": row["owner_agent_id"], "expires_at": row["expires_at"].isoformat()}
            report.pools_deleted += 1
            report.changes.append(change)
            if not report.dry_run:
                await self.ctx.audit.log_write("expire", "pool", None, [row["pool_id"]], change,
                                               user_id=row["user_id"])
        return report


async def _ready(value: dict[str, Any]) -> dict[str, Any]:
    return value
