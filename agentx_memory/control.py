"""Control memories (seed 001): rules, constraints and error patterns — what the agent must avoid.

A :class:`~agentx_memory.models.ControlMemory` is a ``Control`` node in the graph (vector-indexed), scoped to its
user and channel; the default channel is ``_global``, so a user's rules hold in every channel (001's default
scope). Recall returns the rules closest to the question, most severe first among equals, and ``to_prompt()`` puts
them before every other memory.

System rules (scope ``system``, :mod:`agentx_memory.admin`) hold for every user: each read of a user's rules (get,
list, search) reads the system rules too, with the same statements run for the system owner
(:data:`~agentx_memory.admin.SYSTEM_USER_ID`) in ``_global``, and merges them in. Only :meth:`ControlStore.add_system`
and :meth:`ControlStore.delete_system` write them; the facade calls those on an admin view alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from .admin import SYSTEM_SCOPE, SYSTEM_USER_ID
from .agents import resolve_scope
from .context import MemoryContext
from .errors import ConflictError, NotFoundError, ValidationError
from .gathering import gather
from .graph import cypher
from .models import GLOBAL_CHANNEL, SEVERITIES, ControlMemory
from .rows import control_from_row
from .timeutil import to_ms
from .validation import (
    check_channel,
    check_channels,
    check_datetime,
    check_id,
    check_int,
    check_json,
    check_text,
    checked_copy,
)

__all__ = ["SEVERITY_WEIGHT", "ControlMatch", "ControlStore"]

#: How much a control's severity adds to its similarity when ranking (critical first among equals).
SEVERITY_WEIGHT: Final = {s: 0.05 * i for i, s in enumerate(SEVERITIES)}


class ControlMatch(ControlMemory):
    """A control memory found for a question, with its cosine similarity."""

    similarity: float = 0.0


class ControlStore:
    """Stores, reads and searches control memories."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def add(self, control: ControlMemory, channel: str | None = None) -> ControlMemory:
        """Store a rule (idempotent by id: storing it again updates its text, pattern, severity and metadata; it
        stays in its channel, another channel is a :class:`ConflictError`); return it as stored."""
        control = self._copy(control)
        if channel is not None:
            control.channel = channel
        check_id(control.user_id, "user_id")
        control.agent_id, control.scope = resolve_scope("control", control.agent_id, control.scope)
        return await self._store(control)

    async def add_system(self, control: ControlMemory) -> ControlMemory:
        """Store a system rule (every user's; the caller checked the admin key): its user, channel, agent and scope
        are the system's whatever ``control`` says. Idempotent by id like :meth:`add`."""
        control = self._copy(control)
        control.user_id, control.channel, control.agent_id = SYSTEM_USER_ID, GLOBAL_CHANNEL, None
        control.scope = SYSTEM_SCOPE
        return await self._store(control)

    @staticmethod
    def _copy(control: ControlMemory) -> ControlMemory:
        if not isinstance(control, ControlMemory):
            raise ValidationError("control", f"must be a ControlMemory, got {type(control).__name__}")
        return checked_copy(control)

    async def _store(self, control: ControlMemory) -> ControlMemory:
        started = time.perf_counter()
        system = control.scope == SYSTEM_SCOPE
        check_channel(control.channel)
        check_id(control.id, "id")
        check_text(control.content, "content", max_bytes=self.ctx.settings.limits.max_text_bytes)
        if control.severity not in SEVERITIES:  # model_copy(update=...) skips the model's own check
            raise ValidationError("severity", f"must be one of {', '.join(SEVERITIES)}, got {control.severity!r}")
        if control.error_pattern is not None:
            check_text(control.error_pattern, "error_pattern", max_bytes=200)
        if control.source_trajectory_id is not None:
            check_id(control.source_trajectory_id, "source_trajectory_id", max_len=200)
        check_datetime(control.created_at, "created_at")
        metadata = check_json(control.metadata, "metadata", max_bytes=self.ctx.settings.limits.max_metadata_bytes)
        embedding = (self.ctx.embedder.check(control.embedding) if control.embedding is not None
                     else (await self.ctx.embedder.embed_documents([control.content]))[0].tolist())
        try:
            written = await self.ctx.graph.write(cypher.STORE_CONTROL, {
                "id": control.id, "user_id": control.user_id, "channel": control.channel, "content": control.content,
                "error_pattern": control.error_pattern, "severity": control.severity,
                "source_trajectory_id": control.source_trajectory_id, "metadata": metadata,
                "created_at": to_ms(control.created_at), "embedding": embedding, "agent_id": control.agent_id,
                "scope": control.scope})
        except ConflictError as exc:
            owner = "a user's control" if system else "another user's or a system control"
            raise ConflictError(f"control id {control.id!r} is already used by {owner}") from exc
        if not written:
            raise ConflictError(f"control {control.id!r} is stored in another channel; it does not move")
        stored = await self._get_own(control.id, control.user_id, None)
        if stored is None:  # written a moment ago: only a concurrent delete gets here
            raise NotFoundError("control", control.id)
        await self.ctx.audit.log_write("store", "control", stored.channel, [stored.id],
                                       {"severity": stored.severity, "error_pattern": stored.error_pattern,
                                        **({"scope": SYSTEM_SCOPE, "admin": True} if system else {})},
                                       user_id=None if system else stored.user_id,
                                       latency_ms=int((time.perf_counter() - started) * 1000))
        return stored

    async def _get_own(self, control_id: str, owner: str, agent_id: str | None) -> ControlMemory | None:
        rows = await self.ctx.graph.read(cypher.GET_CONTROL, {"id": control_id, "user_id": owner,
                                                               "agent_id": agent_id})
        return control_from_row(rows[0]["control"]) if rows else None

    async def get(self, control_id: str, user_id: str, *, agent_id: str | None = None) -> ControlMemory:
        """One of the user's control memories (that ``agent_id`` may read, when given) or a system rule, or
        :class:`NotFoundError`."""
        check_id(control_id, "control_id")
        found = (await self._get_own(control_id, user_id, agent_id)
                 or await self._get_own(control_id, SYSTEM_USER_ID, None))
        if found is None:
            raise NotFoundError("control", control_id)
        return found

    async def list_controls(self, user_id: str, channels: Sequence[str], *, error_pattern: str | None = None,
                            limit: int = 100, agent_id: str | None = None) -> list[ControlMemory]:
        """The user's control memories in these channels (those ``agent_id`` may read, when given) and the system
        rules, newest first, optionally of one error pattern."""
        limit = check_int(limit, "limit", low=1, high=10_000)
        own = await self._list(user_id, check_channels(channels), error_pattern, limit, agent_id)
        merged = own + await self.list_system(error_pattern=error_pattern, limit=limit)
        merged.sort(key=lambda c: (-c.created_at.timestamp(), c.id))
        return merged[:limit]

    async def list_system(self, *, error_pattern: str | None = None, limit: int = 100) -> list[ControlMemory]:
        """The system rules (every user's), newest first, optionally of one error pattern."""
        return await self._list(SYSTEM_USER_ID, [GLOBAL_CHANNEL], error_pattern,
                                check_int(limit, "limit", low=1, high=10_000), None)

    async def _list(self, owner: str, channels: list[str], error_pattern: str | None, limit: int,
                    agent_id: str | None) -> list[ControlMemory]:
        rows = await self.ctx.graph.read(cypher.LIST_CONTROLS, {
            "user_id": owner, "channels": channels, "error_pattern": error_pattern, "limit": limit,
            "agent_id": agent_id})
        return [control_from_row(r["control"]) for r in rows]

    async def search(self, user_id: str, channels: Sequence[str], vector: list[float], k: int, *,
                     agent_id: str | None = None) -> list[ControlMatch]:
        """The ``k`` rules closest to ``vector`` among the user's (those ``agent_id`` may read, when given) and the
        system rules: by cosine plus :data:`SEVERITY_WEIGHT`, best first."""
        own, system = await gather(self._search(user_id, list(channels), vector, k, agent_id),
                                   self._search(SYSTEM_USER_ID, [GLOBAL_CHANNEL], vector, k, None))
        found = own + system
        found.sort(key=lambda c: (-(c.similarity + SEVERITY_WEIGHT[c.severity]), c.id))
        return found[:k]

    async def _search(self, owner: str, channels: list[str], vector: list[float], k: int,
                      agent_id: str | None) -> list[ControlMatch]:
        rows = await self.ctx.graph.read_vectors(cypher.SEARCH_CONTROLS, {
            "user_id": owner, "channels": channels, "embedding": vector,
            "k": self.ctx.settings.retrieval.candidate_pool(k), "agent_id": agent_id})
        return [ControlMatch(**control_from_row(r["control"]).model_dump(), similarity=float(r["similarity"]))
                for r in rows]

    async def delete(self, control_id: str, user_id: str) -> bool:
        """Delete one of the user's control memories (never a system rule); True when it existed."""
        check_id(control_id, "control_id")
        return await self._delete(control_id, user_id)

    async def delete_system(self, control_id: str) -> bool:
        """Delete a system rule (the caller checked the admin key); True when it existed."""
        check_id(control_id, "control_id")
        return await self._delete(control_id, SYSTEM_USER_ID)

    async def _delete(self, control_id: str, owner: str) -> bool:
        rows = await self.ctx.graph.write(cypher.DELETE_CONTROL, {"id": control_id, "user_id": owner})
        deleted = bool(rows and rows[0]["deleted"])
        if deleted:
            system = owner == SYSTEM_USER_ID
            await self.ctx.audit.log_write("delete", "control", GLOBAL_CHANNEL if system else None, [control_id],
                                           {"scope": SYSTEM_SCOPE, "admin": True} if system else None,
                                           user_id=None if system else owner)
        return deleted
