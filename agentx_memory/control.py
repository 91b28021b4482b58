"""Control memories (seed 001): rules, constraints and error patterns — what the agent must avoid.

A :class:`~agentx_memory.models.ControlMemory` is a ``Control`` node in the graph (vector-indexed), scoped to its
user and channel; the default channel is ``_global``, so a user's rules hold in every channel (001's default
scope). Recall returns the rules closest to the question, most severe first among equals, and ``to_prompt()`` puts
them before every other memory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from .agents import resolve_scope
from .context import MemoryContext
from .errors import ConflictError, NotFoundError, ValidationError
from .graph import cypher
from .models import SEVERITIES, ControlMemory
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
        started = time.perf_counter()
        if not isinstance(control, ControlMemory):
            raise ValidationError("control", f"must be a ControlMemory, got {type(control).__name__}")
        control = checked_copy(control)
        if channel is not None:
            control.channel = channel
        check_channel(control.channel)
        check_id(control.user_id, "user_id")
        check_id(control.id, "id")
        check_text(control.content, "content", max_bytes=self.ctx.settings.limits.max_text_bytes)
        if control.severity not in SEVERITIES:  # model_copy(update=...) skips the model's own check
            raise ValidationError("severity", f"must be one of {', '.join(SEVERITIES)}, got {control.severity!r}")
        if control.error_pattern is not None:
            check_text(control.error_pattern, "error_pattern", max_bytes=200)
        if control.source_trajectory_id is not None:
            check_id(control.source_trajectory_id, "source_trajectory_id", max_len=200)
        check_datetime(control.created_at, "created_at")
        control.agent_id, control.scope = resolve_scope("control", control.agent_id, control.scope)
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
            raise ConflictError(f"control id {control.id!r} is already used by another user's control") from exc
        if not written:
            raise ConflictError(f"control {control.id!r} is stored in another channel; it does not move")
        stored = await self.get(control.id, control.user_id)
        await self.ctx.audit.log_write("store", "control", stored.channel, [stored.id],
                                       {"severity": stored.severity, "error_pattern": stored.error_pattern},
                                       user_id=stored.user_id, latency_ms=int((time.perf_counter() - started) * 1000))
        return stored

    async def get(self, control_id: str, user_id: str, *, agent_id: str | None = None) -> ControlMemory:
        """One of the user's control memories (that ``agent_id`` may read, when given), or :class:`NotFoundError`."""
        check_id(control_id, "control_id")
        rows = await self.ctx.graph.read(cypher.GET_CONTROL, {"id": control_id, "user_id": user_id,
                                                               "agent_id": agent_id})
        if not rows:
            raise NotFoundError("control", control_id)
        return control_from_row(rows[0]["control"])

    async def list_controls(self, user_id: str, channels: Sequence[str], *, error_pattern: str | None = None,
                            limit: int = 100, agent_id: str | None = None) -> list[ControlMemory]:
        """The user's control memories in these channels (those ``agent_id`` may read, when given), newest first,
        optionally of one error pattern."""
        rows = await self.ctx.graph.read(cypher.LIST_CONTROLS, {
            "user_id": user_id, "channels": check_channels(channels), "error_pattern": error_pattern,
            "limit": check_int(limit, "limit", low=1, high=10_000), "agent_id": agent_id})
        return [control_from_row(r["control"]) for r in rows]

    async def search(self, user_id: str, channels: Sequence[str], vector: list[float], k: int, *,
                     agent_id: str | None = None) -> list[ControlMatch]:
        """The ``k`` rules closest to ``vector`` (among those ``agent_id`` may read, when given): by cosine plus
        :data:`SEVERITY_WEIGHT`, best first."""
        rows = await self.ctx.graph.read_vectors(cypher.SEARCH_CONTROLS, {
            "user_id": user_id, "channels": list(channels), "embedding": vector,
            "k": self.ctx.settings.retrieval.candidate_pool(k), "agent_id": agent_id})
        found = [ControlMatch(**control_from_row(r["control"]).model_dump(), similarity=float(r["similarity"]))
                 for r in rows]
        found.sort(key=lambda c: (-(c.similarity + SEVERITY_WEIGHT[c.severity]), c.id))
        return found[:k]

    async def delete(self, control_id: str, user_id: str) -> bool:
        """Delete one of the user's control memories; True when it existed."""
        check_id(control_id, "control_id")
        rows = await self.ctx.graph.write(cypher.DELETE_CONTROL, {"id": control_id, "user_id": user_id})
        deleted = bool(rows and rows[0]["deleted"])
        if deleted:
            await self.ctx.audit.log_write("delete", "control", None, [control_id], user_id=user_id)
        return deleted
